// fusebox live page: polls the JSON API of the same listener and draws
// every chart as SVG. No library, no network beyond this origin.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const REFRESH_MS = 2000;
const W = 560, H = 190, M = { l: 62, r: 12, t: 10, b: 26 };

// fmt prints a number for a human; never "NaN".
function fmt(x) {
  if (typeof x !== "number" || !isFinite(x)) return "–";
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 1) return x.toPrecision(4).replace(/\.?0+$/, "");
  if (a === 0) return "0";
  return x.toPrecision(3);
}

function fmtTime(ms) {
  const d = new Date(ms);
  return d.toISOString().slice(11, 16);
}

function keyText(k) {
  const parts = [k.tenant, k.service, k.model];
  if (k.variant) parts.push(k.variant);
  return parts.map((p) => p || "∅").join("/");
}

function keyQuery(k) {
  const q = new URLSearchParams();
  q.set("tenant", k.tenant); q.set("service", k.service); q.set("model", k.model); q.set("variant", k.variant);
  return q.toString();
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function empty(text) { return el("p", { class: "empty" }, text); }

// niceTicks returns about n round values spanning [lo, hi].
function niceTicks(lo, hi, n) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((s) => s * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

function extent(vals, pad) {
  const fin = vals.filter((v) => typeof v === "number" && isFinite(v));
  if (fin.length === 0) return [0, 1];
  let lo = Math.min(...fin), hi = Math.max(...fin);
  if (hi === lo) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
  const p = (hi - lo) * (pad || 0.05);
  return [lo - p, hi + p];
}

// frame makes an SVG with axes for x in [x0, x1], y in [y0, y1] and
// returns it with its scale functions.
function frame(x0, x1, y0, y1, xfmt, attrs, ylog) {
  const s = sv("svg", Object.assign({ width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "data-ylog": !!ylog }, attrs));
  const X = (x) => M.l + ((x - x0) / (x1 - x0)) * (W - M.l - M.r);
  const f = ylog ? Math.log10 : (y) => y;
  const Y = (y) => H - M.b - ((f(y) - f(y0)) / (f(y1) - f(y0))) * (H - M.t - M.b);
  for (const t of ylog ? logTicks(y0, y1) : niceTicks(y0, y1, 4)) {
    s.appendChild(sv("line", { class: "gridline", x1: M.l, x2: W - M.r, y1: Y(t), y2: Y(t) }));
    s.appendChild(sv("text", { x: M.l - 4, y: Y(t) + 3, "text-anchor": "end" }, fmt(t)));
  }
  const xt = xfmt === fmtTime ? timeTicks(x0, x1) : niceTicks(x0, x1, 5);
  for (const t of xt) {
    s.appendChild(sv("text", { x: X(t), y: H - M.b + 14, "text-anchor": "middle" }, xfmt(t)));
  }
  s.appendChild(sv("line", { class: "axis", x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b }));
  s.appendChild(sv("line", { class: "axis", x1: M.l, x2: M.l, y1: M.t, y2: H - M.b }));
  return { s, X, Y };
}

// logTicks returns 1, 2, 5 × 10^k in [lo, hi] (only the powers of ten
// when that makes more than 6).
function logTicks(lo, hi) {
  const out = [], ones = [];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
    for (const m of [1, 2, 5]) {
      const v = m * Math.pow(10, k);
      if (v >= lo && v <= hi) { out.push(v); if (m === 1) ones.push(v); }
    }
  }
  return out.length > 6 && ones.length > 1 ? ones : out;
}

function timeTicks(t0, t1) {
  const span = t1 - t0, min = 60000;
  const step = [1, 2, 5, 10, 15, 30, 60, 120, 360, 720, 1440].map((m) => m * min).find((s) => span / s <= 6) || 1440 * min;
  const out = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) out.push(t);
  return out;
}

function figure(caption, note, svg) {
  const f = el("figure");
  const c = el("figcaption", {}, caption);
  if (note) { c.appendChild(document.createTextNode(" ")); c.appendChild(el("span", { class: "note" }, note)); }
  f.appendChild(c);
  f.appendChild(svg);
  return f;
}

function hasValue(p) { return p.status !== "insufficient_data"; }

// timeChart draws a series' values over event time: the interval as a
// band, the threshold (budget, limit, factor) as a dashed line, one dot
// per evaluation coloured by status; insufficient_data evaluations are
// hollow dots on the x axis (they have no value).
function timeChart(se, kind) {
  const pts = se.points;
  const valued = pts.filter(hasValue);
  const band = valued.filter((p) => p.hi > p.lo);
  let t0 = Math.min(...pts.map((p) => p.t)), t1 = Math.max(...pts.map((p) => p.t));
  if (t1 === t0) { t0 -= 60000; t1 += 60000; }
  // The threshold line follows the evaluations that were judged (an
  // insufficient_data verdict may carry no threshold).
  const judged = valued.length ? valued : pts;
  const core = valued.map((p) => p.v).concat(band.map((p) => p.lo), judged.map((p) => p.thr));
  let [c0, c1] = extent(core, 0.08);
  let [y0, y1] = extent(core.concat(band.map((p) => p.hi)), 0.08);
  // Latency quantiles span decades in an incident: a log axis keeps the
  // budget readable when the values are positive and spread wide.
  const ylog = kind === "tail" && core.length > 0 && core.every((v) => v > 0) && Math.max(...core) / Math.min(...core) > 30;
  if (ylog) {
    c0 = Math.min(...core) / 1.25; c1 = Math.max(...core) * 1.25;
    y0 = c0; y1 = Math.max(c1, ...band.map((p) => p.hi * 1.1));
  }
  // An upper bound far above everything else (the data do not bound the
  // quantile above) would flatten the chart: the band is clipped instead.
  const clipped = ylog ? y1 > c1 * 10 : y1 > c1 + 1.5 * (c1 - c0);
  if (clipped) y1 = ylog ? c1 * 10 : c1 + 0.5 * (c1 - c0);
  const budget = se.latest.thr;
  const { s, X, Y } = frame(t0, t1, y0, y1, fmtTime, {
    class: "chart", "data-chart": kind, "data-slo": se.slo, "data-metric": se.metric, "data-processor": se.processor,
    "data-points": pts.length, "data-valued": valued.length, "data-budget": budget, "data-clipped": clipped,
  }, ylog);
  if (band.length > 1) {
    const up = band.map((p) => `${X(p.t)},${Y(Math.min(p.hi, y1))}`), down = band.slice().reverse().map((p) => `${X(p.t)},${Y(Math.max(p.lo, y0))}`);
    s.appendChild(sv("polygon", { class: "band", points: up.concat(down).join(" "), "data-points": band.length }));
  }
  if (clipped) s.appendChild(sv("text", { class: "legend", x: W - M.r - 4, y: M.t + 10, "text-anchor": "end" }, "band clipped at the top"));
  if (ylog) s.appendChild(sv("text", { class: "legend", x: M.l + 4, y: M.t + 10 }, "log scale"));
  if (valued.length > 1) {
    s.appendChild(sv("polyline", { class: "line", points: valued.map((p) => `${X(p.t)},${Y(p.v)}`).join(" ") }));
  }
  const thr = judged.map((p) => `${X(p.t)},${Y(p.thr)}`);
  if (judged.length === 1) thr.push(`${X(t1)},${Y(judged[0].thr)}`), thr.unshift(`${X(t0)},${Y(judged[0].thr)}`);
  s.appendChild(sv("polyline", { class: "budget", points: thr.join(" "), "data-value": budget }));
  for (const p of pts) {
    const c = sv("circle", { class: `pt ${p.status}`, cx: X(p.t), cy: hasValue(p) && !(ylog && p.v <= 0) ? Y(p.v) : H - M.b, r: 2.8, "data-t": p.t, "data-v": p.v });
    c.appendChild(sv("title", {}, `${fmtTime(p.t)}  ${fmt(p.v)} [${fmt(p.lo)}, ${fmt(p.hi)}]  ${p.status} (${p.method}, n=${p.n})`));
    s.appendChild(c);
  }
  return s;
}

function latestNote(se, label) {
  const l = se.latest;
  // A tail SLO whose calls carry none of its metric (method no_samples):
  // it is blind there, not waiting for traffic.
  if (l.method === "no_samples") return `latest ${fmtTime(l.t)}: no samples of ${se.metric} — ${fmt(detail(l, "calls"))} calls matched in the window, none carried it, ${fmt(detail(l, "evaluations"))} evaluations in a row (do the spans carry it?)`;
  if (!hasValue(l)) return `latest ${fmtTime(l.t)}: insufficient data (n=${l.n})`;
  const ci = l.hi > l.lo ? ` [${fmt(l.lo)}, ${fmt(l.hi)}] ${Math.round(l.level * 100)}%` : "";
  return `latest ${fmtTime(l.t)}: ${fmt(l.v)}${ci} · ${l.status} · ${l.method} · ${label} ${fmt(l.thr)}`;
}

function detail(l, name) {
  const d = (l.details || []).find((d) => d.name === name);
  return d ? d.value : undefined;
}

// ecdfChart draws the latest drift verdict's two ECDFs (thinned to at
// most 64 points each by the processor) and marks the KS distance D (the
// verdict's value) where it is attained.
function ecdfChart(se) {
  const l = se.latest, ev = l.evidence;
  const cur = ev.current, ref = ev.reference;
  const [x0, x1] = extent(cur.x.concat(ref.x, [ev.ks_at]), 0.03);
  const { s, X, Y } = frame(x0, x1, 0, 1, fmt, {
    class: "chart", "data-chart": "ecdf", "data-slo": se.slo, "data-metric": se.metric,
    "data-ks": l.v, "data-ks-at": ev.ks_at, "data-current": cur.x.length, "data-reference": ref.x.length,
  });
  const step = (pp, cls, n) => {
    let d = `M${X(x0)},${Y(0)} L${X(pp.x[0])},${Y(0)}`;
    let prev = 0;
    for (let i = 0; i < pp.x.length; i++) { d += ` L${X(pp.x[i])},${Y(prev)} L${X(pp.x[i])},${Y(pp.p[i])}`; prev = pp.p[i]; }
    d += ` L${X(x1)},${Y(prev)}`;
    s.appendChild(sv("path", { class: cls, d, "data-points": pp.x.length, "data-n": n }));
  };
  step(ref, "ecdf-reference", ref.n);
  step(cur, "ecdf-current", cur.n);
  const kx = X(ev.ks_at);
  s.appendChild(sv("line", { class: "ks", x1: kx, x2: kx, y1: Y(0), y2: Y(1) }));
  s.appendChild(sv("text", { class: "ks-label", x: Math.min(kx + 4, W - 80), y: M.t + 12, "data-ks": l.v }, `D = ${fmt(l.v)}`));
  s.appendChild(sv("text", { class: "legend", x: W - M.r - 4, y: H - M.b - 22, "text-anchor": "end" }, `— current/canary (n=${cur.n})`));
  s.appendChild(sv("text", { class: "legend", x: W - M.r - 4, y: H - M.b - 10, "text-anchor": "end" }, `— reference/baseline (n=${ref.n})`));
  return s;
}

// gpdQuantile is the GPD(xi, sigma) quantile at p: sigma/xi·((1−p)^−xi − 1),
// −sigma·ln(1−p) for xi = 0.
function gpdQuantile(p, xi, sigma) {
  if (Math.abs(xi) < 1e-12) return -sigma * Math.log1p(-p);
  return (sigma / xi) * (Math.pow(1 - p, -xi) - 1);
}

// qqChart draws the latest GPD fit's exceedances (excess over u, sorted,
// with plotting positions) against the fitted GPD's quantiles.
function qqChart(se) {
  const l = se.latest, ex = l.evidence.exceedances;
  const xi = detail(l, "xi"), sigma = detail(l, "sigma");
  const q = ex.p.map((p) => gpdQuantile(p, xi, sigma));
  const [lo, hi] = extent(q.concat(ex.x), 0.05);
  const { s, X, Y } = frame(lo, hi, lo, hi, fmt, {
    class: "chart", "data-chart": "qq", "data-slo": se.slo, "data-metric": se.metric,
    "data-points": ex.x.length, "data-n": ex.n, "data-xi": xi, "data-sigma": sigma,
  });
  s.appendChild(sv("line", { class: "diag", x1: X(lo), y1: Y(lo), x2: X(hi), y2: Y(hi) }));
  for (let i = 0; i < ex.x.length; i++) {
    if (!isFinite(q[i])) continue;
    const c = sv("circle", { class: "qq", cx: X(q[i]), cy: Y(ex.x[i]), r: 2.4 });
    c.appendChild(sv("title", {}, `model ${fmt(q[i])}, sample ${fmt(ex.x[i])}`));
    s.appendChild(c);
  }
  s.appendChild(sv("text", { class: "legend", x: M.l + 6, y: M.t + 10 }, "sample excess (y) vs GPD quantile (x)"));
  return s;
}

// fuseChart draws one row per target: the breaker state between commands
// as coloured segments, each command as a marker.
// covers reports whether fuse target t applies to key k ("*" matches all).
function covers(t, k) {
  return !!k && ["tenant", "service", "model", "variant"].every((d) => t[d] === "*" || t[d] === k[d]);
}

function fuseChart(targets, t0, t1, sel) {
  const rowH = 20, left = 250, w = 1100;
  const h = targets.length * rowH + 42;
  const s = sv("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`, class: "chart", "data-chart": "fuse", "data-targets": targets.length, role: "img" });
  if (t1 <= t0) { t0 -= 60000; t1 += 60000; }
  const X = (t) => left + ((t - t0) / (t1 - t0)) * (w - left - 10);
  targets.forEach((tg, i) => {
    const y = 4 + i * rowH;
    const mine = covers(tg.target, sel);
    const g = sv("g", { class: mine ? "target covers" : "target", "data-target": keyText(tg.target), "data-commands": tg.commands.length });
    g.appendChild(sv("text", { class: "tlabel", x: 4, y: y + 13 }, keyText(tg.target)));
    tg.commands.forEach((c, j) => {
      const end = j + 1 < tg.commands.length ? tg.commands[j + 1].t : t1;
      g.appendChild(sv("rect", { class: `seg ${c.state}`, x: X(c.t), y: y + 2, width: Math.max(1, X(end) - X(c.t)), height: rowH - 6 }));
    });
    tg.commands.forEach((c) => {
      const m = sv("circle", { class: `cmd ${c.action}`, cx: X(c.t), cy: y + rowH / 2 - 1, r: 4, "data-action": c.action, "data-version": c.version, "data-t": c.t });
      m.appendChild(sv("title", {}, `${fmtTime(c.t)} ${c.action} → ${c.state} (v${c.version})${c.fallback ? " fallback " + c.fallback : ""}${c.reason ? ": " + c.reason : ""}`));
      g.appendChild(m);
    });
    s.appendChild(g);
  });
  for (const t of timeTicks(t0, t1)) s.appendChild(sv("text", { x: X(t), y: h - 30, "text-anchor": "middle" }, fmtTime(t)));
  s.appendChild(sv("text", { class: "legend", x: 4, y: h - 20 }, "bars: green closed · red open · amber half-open"));
  s.appendChild(sv("text", { class: "legend", x: 4, y: h - 8 }, "dots: red trip/rollback · orange degrade/throttle/scale_out · amber half_open · green close"));
  return s;
}

function pct(x) { return typeof x === "number" && isFinite(x) ? `${(100 * x).toPrecision(4).replace(/\.?0+$/, "")}%` : "–"; }

function plural(n, word) { return `${n} ${word}${n === 1 ? "" : "s"}`; }

// tenantMatrix draws the tenant SLO health matrix (GET /api/ui/tenants): a
// row per tenant, a column per SLO; each cell the compliance, coloured by
// the error budget left (green from half left, amber above none, red
// overspent), then minutes out, breach episodes and incidents.
function tenantMatrix(m) {
  const slos = [...new Set(m.rows.map((r) => r.slo))].sort();
  const tenants = [...new Set(m.rows.map((r) => r.tenant))].sort();
  const byPair = new Map(m.rows.map((r) => [`${r.tenant}\u0000${r.slo}`, r]));
  const f = el("figure", { class: "matrix" });
  f.appendChild(el("figcaption", {}, `${tenants.length} tenants × ${slos.length} SLOs, evaluations ${fmtTime(m.from)}–${fmtTime(m.to)} UTC, objective ${pct(m.objective)} of the minutes`));
  const table = el("table", { "data-chart": "tenants", "data-rows": m.rows.length });
  const head = el("tr");
  head.appendChild(el("th", {}, "tenant"));
  for (const slo of slos) head.appendChild(el("th", {}, slo));
  table.appendChild(head);
  for (const tenant of tenants) {
    const tr = el("tr");
    tr.appendChild(el("th", { class: "tenant" }, tenant));
    for (const slo of slos) {
      const r = byPair.get(`${tenant}\u0000${slo}`);
      if (!r) { tr.appendChild(el("td", { class: "none" }, "–")); continue; }
      const level = r.budget_remaining >= 0.5 ? "ok" : r.budget_remaining >= 0 ? "warn" : "breach";
      const td = el("td", {
        class: `cell budget-${level}`, "data-tenant": tenant, "data-slo": slo, "data-compliance": r.compliance,
        "data-budget-remaining": r.budget_remaining, "data-minutes-out": r.minutes_out, "data-breach-episodes": r.breach_episodes,
        "data-incidents": r.incidents,
        title: `${fmt(r.evaluated_minutes)} minutes evaluated (every ${r.step_s} s), ${fmt(r.minutes_out)} out of objective; budget ${fmt(r.budget_minutes)} minutes, ${fmt(r.budget_minutes_left)} left; ${plural(r.breach_evaluations, "breach verdict")}; ${plural(r.fuse_commands, "fuse command")}`,
      }, pct(r.compliance));
      td.appendChild(el("span", { class: "note" }, `budget ${pct(r.budget_remaining)} left · ${fmt(r.minutes_out)} min out · ${plural(r.breach_episodes, "episode")} · ${plural(r.incidents, "incident")}`));
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  f.appendChild(table);
  return f;
}

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store" });
  if (r.status === 404) return null;
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

function selectedKey(keys) {
  const q = new URLSearchParams(location.search);
  if (q.has("tenant")) {
    return { tenant: q.get("tenant") || "", service: q.get("service") || "", model: q.get("model") || "", variant: q.get("variant") || "" };
  }
  const withTail = keys.find((k) => k.processors.includes("tail"));
  return (withTail || keys[0] || {}).key || null;
}

function fill(id, nodes, none) {
  const box = document.querySelector(`#${id} .charts`);
  box.replaceChildren(...(nodes.length ? nodes : [empty(none)]));
}

async function refresh() {
  try {
    const keys = await getJSON("/api/ui/keys");
    const fuse = await getJSON("/api/ui/fuse");
    document.getElementById("summary").textContent =
      `${keys.verdicts} verdicts · ${keys.commands} fuse commands · ${keys.keys.length} keys, ${keys.series} series (max ${keys.limits.max_series} × ${keys.limits.max_points} points) · ${keys.targets} targets` +
      (keys.dropped_series || keys.dropped_targets ? ` · evicted ${keys.dropped_series} series, ${keys.dropped_targets} targets` : "");
    const sel = selectedKey(keys.keys);
    const nav = document.getElementById("keys");
    if (keys.keys.length === 0) {
      nav.replaceChildren(empty("no data yet: waiting for the first verdict"));
    } else {
      nav.replaceChildren(...keys.keys.map((k) => {
        const a = el("a", { href: `?${keyQuery(k.key)}`, class: `key status-${k.status}`, title: `${k.status}: ${k.processors.join(", ")}` }, keyText(k.key));
        if (sel && keyText(sel) === keyText(k.key) && sel.variant === k.key.variant) a.classList.add("selected");
        return a;
      }));
    }
    const objective = new URLSearchParams(location.search).get("objective");
    const tenants = await getJSON("/api/ui/tenants" + (objective ? `?objective=${encodeURIComponent(objective)}` : ""));
    fill("tenants", [tenants.rows.length ? tenantMatrix(tenants) :
      el("p", { class: "empty", "data-empty": "tenants" }, "no data yet: no SLO verdicts, the matrix fills with the first evaluations")]);
    const detailResp = sel ? await getJSON(`/api/ui/key?${keyQuery(sel)}`) : null;
    const incidents = await getJSON("/api/ui/incidents");
    renderIncidents(incidents ? incidents.incidents : []);
    render(sel, detailResp, fuse);
    document.body.dataset.state = "ready";
    document.body.dataset.verdicts = keys.verdicts;
  } catch (e) {
    document.getElementById("summary").textContent = `error: ${e.message} (retrying)`;
    document.body.dataset.state = "error";
  }
  setTimeout(refresh, REFRESH_MS);
}

// renderIncidents lists the incidents, newest opened first: the level,
// its status, the keys counted and the test's p-value.
function renderIncidents(list) {
  fill("incidents", list.map((i) => {
    const p = i.dimension === "key" ? "per-key breaker" : `p = ${fmt(i.p_value)}`;
    const merged = i.merged_into ? ` · merged into ${i.merged_into.slice(0, 8)}` : "";
    return el("p", { class: `incident status-${i.status}`, "data-incident": i.id, "data-dimension": i.dimension, "data-value": i.value, "data-status": i.status },
      `${i.slo} · ${i.dimension} = ${i.value} · ${i.status} · ${i.breaching} of ${i.keys} keys breach (others ${i.other_breaching} of ${i.others}) · ${p} · since ${fmtTime(i.first)}, last ${fmtTime(i.last)}${merged}`);
  }), "no incidents");
}

function render(sel, kr, fuse) {
  document.getElementById("keytitle").textContent = sel ? keyText(sel) : "no data yet";
  const series = kr ? kr.series : [];
  const none = sel ? "no data yet for this key" : "no data yet: waiting for the first verdict";
  const tail = series.filter((s) => s.processor === "tail");
  fill("tail", tail.map((se) => figure(`${se.slo} · ${se.metric}`, latestNote(se, "budget"), timeChart(se, "tail"))), `${none} (no tail verdicts)`);
  const drift = series.filter((s) => s.processor === "drift");
  fill("drift", drift.map((se) => {
    const ev = se.latest.evidence;
    if (!ev || !ev.current || !ev.reference) {
      return el("p", { class: "empty", "data-empty": "ecdf" }, `${se.slo} · ${se.metric}: no ECDF yet (latest: ${se.latest.status}, n=${se.latest.n})`);
    }
    return figure(`${se.slo} · ${se.metric}`, `D = ${fmt(se.latest.v)}, p = ${fmt(detail(se.latest, "p_value"))} · ${se.latest.status}`, ecdfChart(se));
  }), `${none} (no drift verdicts)`);
  fill("qq", tail.map((se) => {
    const ev = se.latest.evidence;
    if (!ev || !ev.exceedances) {
      return el("p", { class: "empty", "data-empty": "qq" }, `${se.slo} · ${se.metric}: no GPD fit in the latest verdict (${se.latest.method})`);
    }
    return figure(`${se.slo} · ${se.metric}`, `ξ = ${fmt(detail(se.latest, "xi"))}, σ = ${fmt(detail(se.latest, "sigma"))}, u = ${fmt(detail(se.latest, "threshold_u"))}, ${ev.exceedances.n} exceedances`, qqChart(se));
  }), `${none} (no tail verdicts)`);
  const burn = series.filter((s) => s.processor === "burnrate");
  fill("burn", burn.map((se) => {
    const parts = (se.latest.details || []).filter((d) => d.name.startsWith("burn_")).map((d) => `${d.name.slice(5)} ${fmt(d.value)}`);
    return figure(`${se.slo} · ${se.metric}`, `${latestNote(se, "factor")}${parts.length ? " · " + parts.join(", ") : ""}`, timeChart(se, "burn"));
  }), `${none} (no burn-rate verdicts)`);
  const other = series.filter((s) => !["tail", "drift", "burnrate"].includes(s.processor));
  fill("other", other.map((se) => figure(`${se.processor} · ${se.slo} · ${se.metric}`, latestNote(se, "threshold"), timeChart(se, "other"))), `${none} (no other verdicts)`);
  const targets = fuse ? fuse.targets : [];
  const ts = targets.flatMap((t) => t.commands.map((c) => c.t)).concat(series.flatMap((s) => s.points.map((p) => p.t)));
  fill("fuse", targets.length ? [fuseChart(targets, Math.min(...ts), Math.max(...ts), sel)] : [], "no fuse commands yet");
}

refresh();
