"""The conformance suite of the instrumentation libraries (README.md): every
app under python/ and node/ runs its scenario against the fake OpenAI
server, its spans go through the receiver to otlp_spans on kfake, and
`fusebox run` judges them while `fusebox spans` shows what it read. Per
library: it installs (or docs/instrumentation.md names it withdrawn), it
made every call, every field it emits is read right (cells.py), and a TTFT
tail SLO trips on the TTFT incident when the library carries TTFT. The
library x field table must equal the one in docs/instrumentation.md:
FUSEBOX_UPDATE_TABLE=1 rewrites it there.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import cells
import harness
import otlpwire
from fakeopenai import FakeOpenAI, Running
from receiver import Receiver

APPS = harness.discover()
DOC = harness.ROOT / "docs" / "instrumentation.md"
TABLE_BEGIN, TABLE_END = "<!-- conformance table: begin -->", "<!-- conformance table: end -->"


@dataclass
class Suite:
    runs: dict[str, harness.AppRun]
    joined: dict[str, list[cells.Joined]]
    rows: dict[str, dict[str, str]]
    verdicts: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)


def _wait_verdicts(run: harness.Run, runs: dict[str, harness.AppRun], timeout: float) -> None:
    """Waits until, for every app that made its calls and whose calls
    fusebox judges at all, the duration tail has judged a window ending
    after its last incident call: the incident is then wholly judged. A
    service with no verdict at all 10 s after the apps ended is not waited
    for (fusebox does not read its spans: the field tests say so)."""
    want: dict[str, int] = {}
    for name, ar in runs.items():
        slow = [m for m, c in zip(ar.measurements, ar.calls) if c.get("phase") == "slow"]
        if slow and ar.returncode == 0:
            want[ar.app.service] = max(m["end_ns"] for m in slow) + 1_000_000_000
    t0 = time.monotonic()
    while want and time.monotonic() < t0 + timeout:
        seen: dict[str, int] = {}
        judged: set[str] = set()
        for v in run.verdicts():
            judged.add(v["key"]["service"])
            if v["slo"] == "duration-tail":
                s = v["key"]["service"]
                seen[s] = max(seen.get(s, 0), int(v["window_end_unix_nano"]))
        waiting = [s for s, t in want.items() if seen.get(s, 0) < t]
        if not waiting or (time.monotonic() > t0 + 10 and not judged.intersection(waiting)):
            return
        time.sleep(0.5)


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    t0 = time.monotonic()
    timings: dict[str, float] = {}
    work = tmp_path_factory.mktemp("conformance")
    with ThreadPoolExecutor(max_workers=len(APPS) + 1) as pool:
        bins = pool.submit(harness.build_binaries, work / "bin")
        envs = {a.name: pool.submit(harness.prepare, a) for a in APPS}
        bin_dir = bins.result()
        prepared = {n: f.result() for n, f in envs.items()}
    timings["setup (venvs, npm ci, go build)"] = time.monotonic() - t0
    for n, e in prepared.items():
        print(f"{n}: {'cached' if e.cached else f'installed in {e.took_s:.0f}s'}{' ERROR ' + e.error[:200] if e.error else ''}")
    fake = FakeOpenAI()
    scenarios = {a.name: harness.scenario(a) for a in APPS}
    for calls in scenarios.values():
        fake.add(calls)
    server = Running(fake)
    with harness.kfake(bin_dir, work) as bootstrap, harness.fusebox_run(bin_dir, bootstrap, work) as run:
        sink = harness.KafkaSink(bootstrap)
        rcv = Receiver(sink)
        t1 = time.monotonic()
        with ThreadPoolExecutor(max_workers=max(1, len(APPS))) as pool:
            futs = {a.name: pool.submit(harness.run_app, a, prepared[a.name], scenarios[a.name], server.base_url,
                                        rcv.traces_endpoint, work) for a in APPS}
            runs = {n: f.result() for n, f in futs.items()}
        timings["apps"] = time.monotonic() - t1
        t2 = time.monotonic()
        _wait_verdicts(run, runs, 30)
        timings["verdicts after the last call"] = time.monotonic() - t2
        fbs = harness.fusebox_spans(bin_dir, bootstrap)
        verdicts = run.verdicts()
        rcv.stop()
    server.stop()
    raws = [r for b in sink.bodies for r in otlpwire.decode(b)]
    # What the suite saw, for a look after a failure: the bodies as the
    # receiver wrote them, fusebox's reading, its verdicts (work/).
    (work / "otlp").mkdir()
    for i, b in enumerate(sink.bodies):
        (work / "otlp" / f"{i:04d}.pb").write_bytes(b)
    (work / "fusebox-spans.jsonl").write_text("".join(json.dumps(f) + "\n" for f in fbs))
    print(f"conformance artifacts: {work}")
    joined: dict[str, list[cells.Joined]] = {}
    rows: dict[str, dict[str, str]] = {}
    for a in APPS:
        ar = runs[a.name]
        if ar.env.error or ar.returncode != 0:
            continue
        svc_raw = [r for r in raws if r.resource.get("service.name") == a.service]
        svc_fb = [f for f in fbs if f["service"] == a.service]
        joined[a.name] = cells.join(ar.measurements, ar.calls, svc_raw, svc_fb)
        rows[a.name] = cells.row(joined[a.name])
    timings["total"] = time.monotonic() - t0
    table = cells.table_md(rows)
    (harness.CACHE).mkdir(parents=True, exist_ok=True)
    (harness.CACHE / "table.md").write_text(table)
    print("\n" + table)
    for k, v in timings.items():
        print(f"conformance {k}: {v:.1f}s")
    yield Suite(runs, joined, rows, verdicts, timings)


@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_installs_and_makes_every_call(suite: Suite, app: harness.App) -> None:
    ar = suite.runs[app.name]
    if ar.env.error:
        why = harness.withdrawn().get(app.name)
        if why is not None:
            pytest.skip(f"{app.name} is withdrawn (docs/instrumentation.md): {why}")
        pytest.fail(f"{app.name} does not install: {ar.env.error}")
    assert ar.returncode == 0, f"{app.name} exited {ar.returncode}: {ar.log}"
    assert [m["id"] for m in ar.measurements] == [c["id"] for c in ar.calls], "the app did not make every call in order"
    for m, c in zip(ar.measurements, ar.calls):
        assert m["http_status"] == c.get("status", 200), m
        assert m["error"] == (c.get("status", 200) != 200), m


@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_fusebox_reads_every_field_the_library_emits(suite: Suite, app: harness.App) -> None:
    if app.name not in suite.rows:
        pytest.fail(f"{app.name} did not run (see test_installs_and_makes_every_call)")
    problems = [p for j in suite.joined[app.name] for p in j.problems]
    assert not problems, problems
    lost = [j.m["id"] for j in suite.joined[app.name] if j.raw is None and not j.m["error"]]
    assert not lost, f"{app.name} exported no span for the successful calls {lost}"
    wrong = {f: c for f, c in suite.rows[app.name].items() if c.startswith("✗")}
    assert not wrong, f"{app.name}: fusebox misreads {wrong}"


def _key_verdicts(suite: Suite, app: harness.App, slo: str) -> list[dict[str, Any]]:
    return [v for v in suite.verdicts if v["slo"] == slo and v["key"] == {
        "tenant": harness.TENANT, "service": app.service, "model": "gpt-4o-mini", "variant": ""}]


@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_ttft_tail_slo_trips_on_the_ttft_incident(suite: Suite, app: harness.App) -> None:
    if app.name not in suite.rows:
        pytest.fail(f"{app.name} did not run")
    ar = suite.runs[app.name]
    vs = _key_verdicts(suite, app, "ttft-tail")
    if not suite.rows[app.name]["ttft"].startswith("✓"):
        # No TTFT: the SLO has nothing to judge; it must not breach on nothing.
        assert not [v for v in vs if v["status"] == "breach"], vs
        return
    slow = [m for m, c in zip(ar.measurements, ar.calls) if c.get("phase") == "slow"]
    first_slow, last_slow = min(m["start_ns"] for m in slow), max(m["end_ns"] for m in slow)
    breaches = [v for v in vs if v["status"] == "breach"]
    assert breaches, f"no ttft-tail breach for {app.service}: {[(v['status'], v['n']) for v in vs]}"
    inside = [v for v in breaches if v["window_end_unix_nano"] > first_slow
              and v["window_start_unix_nano"] < last_slow + 1_000_000_000]
    assert inside, "the ttft-tail breaches are not in the incident's windows"
    before = [v for v in breaches if v["window_end_unix_nano"] <= first_slow]
    assert not before, f"ttft-tail breached before the incident: {before[:2]}"


@pytest.mark.parametrize("app", APPS, ids=[a.name for a in APPS])
def test_slo_verdicts_of_every_library(suite: Suite, app: harness.App) -> None:
    if app.name not in suite.rows:
        pytest.fail(f"{app.name} did not run")
    row = suite.rows[app.name]
    for slo, needs in (("duration-tail", "duration"), ("availability", "error"), ("tpot-tail", "tpot")):
        if not row[needs].startswith("✓"):
            continue
        vs = [v for v in _key_verdicts(suite, app, slo) if v["n"] > 0]
        assert vs, f"no {slo} verdict with samples for {app.service}"


def _doc_table() -> str:
    text = DOC.read_text()
    m = re.search(re.escape(TABLE_BEGIN) + r"\n(.*?)" + re.escape(TABLE_END), text, re.S)
    assert m, f"{DOC} has no {TABLE_BEGIN} ... {TABLE_END} section"
    return m.group(1)


def test_docs_table_is_the_suites(suite: Suite) -> None:
    table = cells.table_md(suite.rows)
    if os.environ.get("FUSEBOX_UPDATE_TABLE") == "1":
        text = DOC.read_text()
        new = re.sub(re.escape(TABLE_BEGIN) + r"\n.*?" + re.escape(TABLE_END),
                     lambda _: TABLE_BEGIN + "\n" + table + TABLE_END, text, flags=re.S)
        Path(DOC).write_text(new)
    assert _doc_table() == table, (
        "docs/instrumentation.md's table is not the suite's: rerun with FUSEBOX_UPDATE_TABLE=1 and review the diff\n"
        + table)
