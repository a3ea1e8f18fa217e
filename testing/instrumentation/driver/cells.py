"""The library x field table: each call's measurements (the app's own), its
raw span (what the library wrote, otlpwire) and what fusebox read of it
(`fusebox spans`), compared field by field.

A cell is
- "✓" when every call the field applies to matches, within the tolerances
  below;
- "✓ (not on K)" when it matches on some kinds of call and the library
  writes no form of it on the calls of kinds K (plain, streamed,
  embeddings, failed);
- "not emitted" when the library writes no form of it on any call (and
  fusebox shows none: a library that starts writing it changes the table);
- "✗ why" when the library wrote it and fusebox did not read it, or read
  something else than the app measured. A ✗ cell fails the suite.

Tolerances (the span's clock is the app's machine clock, so they are tight):
- duration: fusebox's duration_ms equals the raw span's end - start within
  0.001 ms, and the span lies inside the app's call, 1 ms slack each side
  (calls and spans are joined by the most overlap, so a span outside its
  call fails this cell by name, it does not look lost);
- TTFT: fusebox's ttft_ms equals the span's own figure (attribute, or the
  first chunk event minus the span start) within 0.001 ms, and is not
  later than the app's (its TTFT less the time from its call start to the
  span start) by more than 1 ms: the library sees the first chunk before
  the app does. How much earlier varies with the machine's load (median
  0.2 ms, up to 30 ms on a loaded 2-core machine; openlit's clock starts
  at the response, tens of ms later under load — not noted in the cell,
  which must not depend on the machine's load: docs/instrumentation.md's
  notes say it). From below: on a call the fake server holds 200 ms or more
  before its first chunk, the TTFT is at least that hold less 100 ms (the
  server's headers come before the hold, so every clock sees it);
- TPOT: derived, fusebox's (duration - TTFT) / (output tokens - 1) within
  0.001 ms, and the app's (end - first chunk) / (tokens - 1) within the
  two gaps (span end to call end, library's first chunk to the app's)
  over tokens - 1; a library's own attribute (openlit) is read as is;
- tokens, model, operation, provider, tenant, variant, error, finish
  reason: equal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from otlpwire import RawSpan

FIELDS = ["model", "operation", "streaming", "duration", "ttft", "tpot", "input tokens", "output tokens",
          "error", "finish reason", "provider", "tenant", "variant"]
KINDS = ["plain", "streamed", "embeddings", "failed"]
SLACK_NS = 1_000_000  # 1 ms
EXACT_MS = 0.001  # fusebox's reading of a value the span carries
# A library whose TTFT is, in the median, more than this under the app's
# (both from the span start) starts its clock later than the request: the
# cell says so.
# A call the fake server holds at least this long before its first chunk
# (the incident's slow stretch) must show a TTFT of at least that hold
# less LOWER_SLACK_MS: the server sends its headers, then waits, so any
# clock that starts at the request or at the response sees the wait. The
# slack covers a library that starts its clock a little after the
# headers arrive on a loaded machine; it catches a TTFT read as ~0.
LOWER_CHECK_MS = 200.0
LOWER_SLACK_MS = 100.0

MODEL_ATTRS = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name", "embedding.model_name")
OPERATION_ATTRS = ("gen_ai.operation.name", "openinference.span.kind")
STREAM_ATTRS = ("gen_ai.request.stream", "gen_ai.is_streaming", "llm.is_streaming")
TTFT_ATTRS = ("gen_ai.response.time_to_first_chunk", "gen_ai.response.time_to_first_token",
              "gen_ai.server.time_to_first_token")
TTFT_EVENTS = ("gen_ai.content.completion.chunk", "First Token Stream Event")
TPOT_ATTRS = ("gen_ai.server.time_per_output_token",)
INPUT_ATTRS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
OUTPUT_ATTRS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion")
FINISH_ATTRS = ("gen_ai.response.finish_reasons", "llm.finish_reason")
PROVIDER_ATTRS = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
VARIANT_ATTR = "deployment.variant"
TENANT_ATTR = "tenant.id"


def kind(m: dict[str, Any]) -> str:
    if m["error"]:
        return "failed"
    if m["operation"] == "embeddings":
        return "embeddings"
    return "streamed" if m["stream"] else "plain"


def looks_llm(r: RawSpan) -> bool:
    return any(k.startswith(("gen_ai.", "llm.", "embedding.", "openinference.")) for k in r.attributes)


def _inside(start: int, end: int, m: dict[str, Any]) -> bool:
    return bool(start >= m["start_ns"] - SLACK_NS and end <= m["end_ns"] + SLACK_NS)


def _invocation_stream(r: RawSpan) -> bool | None:
    raw = r.attributes.get("llm.invocation_parameters")
    if isinstance(raw, str):
        try:
            p = json.loads(raw)
        except json.JSONDecodeError:
            return None
        if isinstance(p, dict) and isinstance(p.get("stream"), bool):
            return bool(p["stream"])
    return None


def _has(r: RawSpan, names: Iterable[str]) -> bool:
    return any(n in r.attributes for n in names)


def emitted(f: str, r: RawSpan) -> bool:
    """Whether the raw span carries any form of field f that fusebox could read."""
    if f == "model":
        return _has(r, MODEL_ATTRS) or "model" in str(r.attributes.get("llm.invocation_parameters", ""))
    if f == "operation":
        return _has(r, OPERATION_ATTRS)
    if f == "streaming":
        return _has(r, STREAM_ATTRS) or _invocation_stream(r) is not None
    if f == "duration" or f == "error":
        return True
    if f == "ttft":
        return _has(r, TTFT_ATTRS) or any(e.name in TTFT_EVENTS for e in r.events)
    if f == "tpot":
        return _has(r, TPOT_ATTRS) or (emitted("ttft", r) and _has(r, OUTPUT_ATTRS))
    if f == "input tokens":
        return _has(r, INPUT_ATTRS)
    if f == "output tokens":
        return _has(r, OUTPUT_ATTRS)
    if f == "finish reason":
        return _has(r, FINISH_ATTRS)
    if f == "provider":
        return _has(r, PROVIDER_ATTRS)
    if f == "tenant":
        return TENANT_ATTR in r.resource or TENANT_ATTR in r.attributes
    if f == "variant":
        return VARIANT_ATTR in r.attributes or VARIANT_ATTR in r.resource
    raise KeyError(f)


def applies(f: str, m: dict[str, Any], call: dict[str, Any]) -> bool:
    k = kind(m)
    if f in ("ttft", "tpot"):
        return k == "streamed"
    if f in ("output tokens", "finish reason"):
        return k in ("plain", "streamed")
    if f == "input tokens":
        return k in ("plain", "streamed", "embeddings")
    if f == "streaming":
        return bool(m["operation"] == "chat")
    if f == "variant":
        return bool(call.get("variant"))
    return True


@dataclass
class Outcome:
    result: str  # "ok", "absent" or "wrong"
    why: str = ""
    dev: float | None = None  # TTFT: the app's minus the library's, ms
    own: bool = False  # TPOT: the library's own attribute, not derived


def library_ttft_ms(r: RawSpan) -> float | None:
    """The TTFT the raw span carries, in ms: an attribute (seconds), else
    the first chunk event's time minus the span start."""
    for a in TTFT_ATTRS:
        v = r.attributes.get(a)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v) * 1000
    ev = [e.time_unix_nano for e in r.events if e.name in TTFT_EVENTS]
    return (min(ev) - r.start_unix_nano) / 1e6 if ev else None


def check(f: str, m: dict[str, Any], call: dict[str, Any], r: RawSpan | None, fb: dict[str, Any] | None) -> Outcome:
    """One field of one call."""
    if r is None:
        # The library wrote no span for this call (OpenInference JS: none
        # for failed calls): every field is absent on it, which the cell
        # states; test_conformance wants spans for the successful calls.
        return Outcome("absent")
    if not emitted(f, r):
        if fb is not None and f in ("ttft", "tpot") and fb.get(f + "_ms") is not None:
            return Outcome("wrong", f"fusebox shows {f} {fb[f + '_ms']} the span does not carry")
        return Outcome("absent")
    if fb is None:
        return Outcome("wrong", "span not read by fusebox (skipped: no model)")
    if fb.get("invalid"):
        return Outcome("wrong", f"fusebox: invalid: {fb['invalid']}")
    if f == "model":
        return Outcome("ok") if fb["model"] == m["model"] else Outcome("wrong", f"model {fb['model']!r}")
    if f == "operation":
        return Outcome("ok") if fb["operation"] == m["operation"] else Outcome("wrong", f"operation {fb['operation']!r}")
    if f == "streaming":
        if fb["stream"] is None:
            return Outcome("wrong", "stream not read")
        return Outcome("ok") if fb["stream"] == m["stream"] else Outcome("wrong", f"stream {fb['stream']}")
    if f == "duration":
        raw_ms = (r.end_unix_nano - r.start_unix_nano) / 1e6
        if abs(fb["duration_ms"] - raw_ms) > 0.001:
            return Outcome("wrong", f"duration {fb['duration_ms']} ms, span says {raw_ms}")
        if not _inside(r.start_unix_nano, r.end_unix_nano, m):
            return Outcome("wrong", "span outside the app's call")
        return Outcome("ok")
    if f == "ttft":
        if fb["ttft_ms"] is None:
            return Outcome("wrong", "TTFT not read")
        if m["ttft_ms"] is None:
            return Outcome("wrong", "app measured no TTFT")
        own = library_ttft_ms(r)
        if own is not None and abs(fb["ttft_ms"] - own) > EXACT_MS:
            return Outcome("wrong", f"TTFT {fb['ttft_ms']:.3f} ms, the span says {own:.3f}")
        hold = float(call.get("ttft_ms") or 0.0)
        if hold >= LOWER_CHECK_MS and fb["ttft_ms"] < hold - LOWER_SLACK_MS:
            return Outcome("wrong", f"TTFT {fb['ttft_ms']:.1f} ms, the server held the first chunk {hold:.0f} ms")
        if fb["ttft_ms"] <= 0:
            return Outcome("wrong", f"TTFT {fb['ttft_ms']} ms, not positive")
        want = m["ttft_ms"] - (r.start_unix_nano - m["start_ns"]) / 1e6
        if fb["ttft_ms"] > want + SLACK_NS / 1e6:
            return Outcome("wrong", f"TTFT {fb['ttft_ms']:.1f} ms, after the app saw the first chunk ({want:.1f})")
        return Outcome("ok", dev=want - fb["ttft_ms"])
    if f == "tpot":
        if fb["tpot_ms"] is None:
            return Outcome("wrong", "TPOT not derived")
        n = m["output_tokens"]
        if not n or n < 2 or m["ttft_ms"] is None:
            return Outcome("wrong", "app measured no TPOT")
        own = r.attributes.get(TPOT_ATTRS[0])
        if isinstance(own, (int, float)) and not isinstance(own, bool):
            # The library's own figure (openlit: seconds), read as is.
            if abs(fb["tpot_ms"] - own * 1000) > EXACT_MS:
                return Outcome("wrong", f"TPOT {fb['tpot_ms']:.3f} ms/token, the span says {own * 1000:.3f}")
            return Outcome("ok", dev=0.0, own=True)
        if fb["ttft_ms"] is None or fb["output_tokens"] is None:
            return Outcome("wrong", "TPOT without TTFT or output tokens")
        derived = (fb["duration_ms"] - fb["ttft_ms"]) / (fb["output_tokens"] - 1)
        if abs(fb["tpot_ms"] - derived) > EXACT_MS:
            return Outcome("wrong", f"TPOT {fb['tpot_ms']:.3f} ms/token, (duration - TTFT)/(tokens - 1) is {derived:.3f}")
        # Against the app: the app's TPOT counts from the first chunk it saw
        # to its end; fusebox's from the library's first chunk to the span's
        # end. They differ by those two gaps over (n - 1).
        app_first = m["start_ns"] + m["ttft_ms"] * 1e6
        app_tpot = (m["end_ns"] - app_first) / 1e6 / (n - 1)
        lib_first = r.start_unix_nano + fb["ttft_ms"] * 1e6
        tol = (abs(m["end_ns"] - r.end_unix_nano) + abs(app_first - lib_first)) / 1e6 / (n - 1) + EXACT_MS
        if abs(fb["tpot_ms"] - app_tpot) > tol:
            return Outcome("wrong", f"TPOT {fb['tpot_ms']:.2f} ms/token, app {app_tpot:.2f}")
        return Outcome("ok", dev=0.0)
    if f in ("input tokens", "output tokens"):
        key = f.replace(" ", "_")
        if fb[key] != m[key]:
            return Outcome("wrong", f"{f} {fb[key]}, app {m[key]}")
        return Outcome("ok")
    if f == "error":
        return Outcome("ok") if fb["error"] == m["error"] else Outcome("wrong", f"error {fb['error']}")
    if f == "finish reason":
        ok = fb["finish_reason"] == m["finish_reason"]
        return Outcome("ok") if ok else Outcome("wrong", f"finish reason {fb['finish_reason']!r}, app {m['finish_reason']!r}")
    if f == "provider":
        return Outcome("ok") if fb["provider"] == "openai" else Outcome("wrong", f"provider {fb['provider']!r}")
    if f == "tenant":
        want_t = r.resource.get(TENANT_ATTR, r.attributes.get(TENANT_ATTR))
        return Outcome("ok") if fb["tenant"] == want_t else Outcome("wrong", f"tenant {fb['tenant']!r}")
    if f == "variant":
        ok = fb["variant"] == call["variant"]
        return Outcome("ok") if ok else Outcome("wrong", f"variant {fb['variant']!r}")
    raise KeyError(f)


@dataclass
class Joined:
    """One call: the app's measurement, the scenario entry, the raw span and
    fusebox's reading of it (None when missing)."""

    m: dict[str, Any]
    call: dict[str, Any]
    raw: RawSpan | None
    fb: dict[str, Any] | None
    problems: list[str] = field(default_factory=list)


def _overlap_ns(start: int, end: int, m: dict[str, Any]) -> int:
    return min(end, int(m["end_ns"])) - max(start, int(m["start_ns"]))


def _owner(start: int, end: int, measurements: list[dict[str, Any]]) -> int | None:
    """The index of the call whose interval overlaps [start, end] the most
    (a span shorter than the slack and just outside every call still goes
    to the nearest one), None when it is more than SLACK_NS from every
    call."""
    best, best_ov = None, -SLACK_NS
    for i, m in enumerate(measurements):
        ov = _overlap_ns(start, end, m)
        if ov > best_ov:
            best, best_ov = i, ov
    return best


def join(measurements: list[dict[str, Any]], calls: list[dict[str, Any]], raws: list[RawSpan],
         fbs: list[dict[str, Any]]) -> list[Joined]:
    """Matches each call with the one LLM-looking raw span and the one
    fusebox span of its service that overlap it most (calls are made one
    at a time, so their intervals do not overlap). By overlap and not by
    "lies inside": a span a few ms off the app's clock still joins its
    call, and the duration cell then says how far off it is, instead of
    the call looking as if the library had exported nothing."""
    by_id = {c["id"]: c for c in calls}
    rs: list[list[RawSpan]] = [[] for _ in measurements]
    fs: list[list[dict[str, Any]]] = [[] for _ in measurements]
    for r in raws:
        if looks_llm(r):
            i = _owner(r.start_unix_nano, r.end_unix_nano, measurements)
            if i is not None:
                rs[i].append(r)
    for f in fbs:
        i = _owner(f["start_unix_nano"], f["end_unix_nano"], measurements)
        if i is not None:
            fs[i].append(f)
    out: list[Joined] = []
    for i, m in enumerate(measurements):
        j = Joined(m, by_id[m["id"]], rs[i][0] if len(rs[i]) == 1 else None, fs[i][0] if len(fs[i]) == 1 else None)
        if len(rs[i]) > 1:
            j.problems.append(f"{len(rs[i])} LLM spans joined to call {m['id']}")
        if len(fs[i]) > 1:
            j.problems.append(f"{len(fs[i])} fusebox spans joined to call {m['id']}")
        out.append(j)
    return out


def cell(f: str, joined: list[Joined]) -> str:
    ok: set[str] = set()
    absent: set[str] = set()
    own = False
    for j in joined:
        if not applies(f, j.m, j.call):
            # A baseline call must not get a variant from nowhere.
            if f == "variant" and j.fb is not None and j.fb["variant"]:
                return f"✗ variant {j.fb['variant']!r} on a baseline call"
            continue
        o = check(f, j.m, j.call, j.raw, j.fb)
        if o.result == "wrong":
            return f"✗ {o.why} ({kind(j.m)})"
        (ok if o.result == "ok" else absent).add(kind(j.m))
        own = own or o.own
    if not ok:
        return "not emitted"
    notes = []
    only_absent = [k for k in KINDS if k in absent and k not in ok]
    if only_absent:
        notes.append(f"not on {', '.join(only_absent)}")
    if f == "tpot" and own:
        notes.append("the library's own figure")
    return "✓" + (f" ({'; '.join(notes)})" if notes else "")


def row(joined: list[Joined]) -> dict[str, str]:
    return {f: cell(f, joined) for f in FIELDS}


def table_md(rows: dict[str, dict[str, str]]) -> str:
    """The table as markdown: one row per library, one column per field."""
    lines = ["| library | " + " | ".join(FIELDS) + " |", "|---|" + "---|" * len(FIELDS)]
    for lib in sorted(rows):
        lines.append(f"| {lib} | " + " | ".join(rows[lib][f] for f in FIELDS) + " |")
    return "\n".join(lines) + "\n"
