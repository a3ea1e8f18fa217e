"""The conformance suite's moving parts: the apps it discovers, their
environments (one venv per Python library, npm ci once for Node), the
scenario, kfake through `fusebox broker`, the receiver's Kafka sink and
`fusebox run`. The assertions are in cells.py and test_conformance.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
SUITE = HERE.parent  # testing/instrumentation
ROOT = SUITE.parents[1]
CACHE = ROOT / ".cache" / "instrumentation"
sys.path.insert(0, str(SUITE))

TENANT = "acme"
SPANS_TOPIC = "otlp_spans"
APP_TIMEOUT = 240.0  # s per app: the whole suite's CI budget is ~5 minutes
INSTALL_TIMEOUT = 900.0  # s per venv: a cold pip install on a loaded 2-core machine

# The TTFT incident every app produces: streamed calls with a normal time
# to first chunk, a stretch with a slow one, then normal ones again for
# long enough (25 x 80 ms and more: over 2 s) that the incident's windows
# close while the apps still send: the watermark lags the newest event by
# allowed_lateness (1 s), and an all-idle source does not move it.
NORMAL_TTFT_MS = 20.0
SLOW_TTFT_MS = 600.0
AFTER_TTFT_MS = 80.0
N_BEFORE, N_SLOW, N_AFTER = 15, 12, 25


@dataclass(frozen=True)
class App:
    """One library's app: a Python app.py with its requirements, or a Node app.mjs."""

    lang: str  # "python" or "node"
    library: str
    path: Path

    @property
    def name(self) -> str:
        return f"{self.lang}/{self.library}"

    @property
    def service(self) -> str:
        return f"conf-{self.lang}-{self.library}"


def discover() -> list[App]:
    """The apps under python/*/app.py and node/*/app.mjs, sorted."""
    apps = [App("python", p.parent.name, p) for p in sorted((SUITE / "python").glob("*/app.py"))]
    apps += [App("node", p.parent.name, p) for p in sorted((SUITE / "node").glob("*/app.mjs"))]
    return apps


def withdrawn() -> dict[str, str]:
    """Libraries docs/instrumentation.md names as withdrawn ("python/x" ->
    reason), from the lines "- withdrawn: python/x: reason"; such a
    library that does not install does not fail the suite."""
    out: dict[str, str] = {}
    doc = ROOT / "docs" / "instrumentation.md"
    if doc.exists():
        for line in doc.read_text().splitlines():
            if line.startswith("- withdrawn: "):
                name, _, why = line.removeprefix("- withdrawn: ").partition(": ")
                out[name.strip("`")] = why
    return out


def _sha(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    h.update(sys.version.encode())
    return h.hexdigest()


@dataclass
class Env:
    """How to run an app, or why it cannot run."""

    argv: list[str]
    cwd: Path
    error: str = ""
    took_s: float = 0.0
    cached: bool = False


def python_env(app: App) -> Env:
    """The app's venv in .cache/instrumentation/venv-<library>, rebuilt
    when its requirements.txt (or the Python) changes."""
    req = app.path.parent / "requirements.txt"
    venv = CACHE / f"venv-{app.library}"
    py = venv / "bin" / "python"
    stamp = venv / ".requirements.sha256"
    env = Env([str(py), str(app.path)], app.path.parent)
    if not req.exists():
        env.error = f"{req.relative_to(ROOT)} is missing"
        return env
    want = _sha(req)
    if py.exists() and stamp.exists() and stamp.read_text() == want:
        env.cached = True
        return env
    t0 = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log = venv.parent / f"venv-{app.library}.log"
    with open(log, "w") as lf:
        r = subprocess.run([sys.executable, "-m", "venv", str(venv)], stdout=lf, stderr=subprocess.STDOUT)
        if r.returncode == 0:
            r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                                "-r", str(req)], stdout=lf, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT)
    env.took_s = time.monotonic() - t0
    if r.returncode != 0:
        env.error = f"pip install -r {req.relative_to(ROOT)} failed: {log.read_text()[-1500:]}"
        return env
    stamp.write_text(want)
    return env


_npm_lock = threading.Lock()
_npm_result: dict[str, str] = {}


def node_env(app: App) -> Env:
    """node app.mjs, after npm ci in testing/instrumentation/node (once per
    package-lock.json: node_modules/.fusebox-lock.sha256 stamps it)."""
    node_dir = SUITE / "node"
    env = Env(["node", str(app.path)], app.path.parent)
    lock = node_dir / "package-lock.json"
    if not lock.exists():
        env.error = "testing/instrumentation/node/package-lock.json is missing"
        return env
    with _npm_lock:
        if "done" not in _npm_result:
            stamp = node_dir / "node_modules" / ".fusebox-lock.sha256"
            want = _sha(lock, node_dir / "package.json")
            if stamp.exists() and stamp.read_text() == want:
                _npm_result["done"] = ""
                _npm_result["cached"] = "1"
            else:
                t0 = time.monotonic()
                r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=node_dir, capture_output=True,
                                   text=True, timeout=INSTALL_TIMEOUT)
                _npm_result["took"] = f"{time.monotonic() - t0:.1f}"
                if r.returncode != 0:
                    _npm_result["done"] = f"npm ci failed: {(r.stdout + r.stderr)[-1500:]}"
                else:
                    stamp.write_text(want)
                    _npm_result["done"] = ""
        env.error = _npm_result["done"]
        env.cached = _npm_result.get("cached") == "1"
        env.took_s = float(_npm_result.get("took", "0"))
    return env


def prepare(app: App) -> Env:
    return python_env(app) if app.lang == "python" else node_env(app)


def scenario(app: App) -> list[dict[str, Any]]:
    """The calls of one app: every kind of call once (plain, streamed,
    embeddings, 429, 500, the finish reasons length and content_filter, a
    canary variant), then the TTFT incident."""
    calls: list[dict[str, Any]] = []

    def add(**kw: Any) -> None:
        c: dict[str, Any] = {"id": f"{app.name}:c{len(calls) + 1:03d}", "model": "gpt-4o-mini",
                             "operation": "chat", "stream": False, "variant": "", "max_tokens": 16}
        c.update(kw)
        calls.append(c)

    add()
    add(stream=True)
    add(operation="embeddings", model="text-embedding-3-small")
    add(status=429)
    add(status=500, stream=True)
    add(finish_reason="length", output_tokens=16)
    add(stream=True, finish_reason="content_filter", output_tokens=3)
    add(variant="canary")
    add(variant="canary", stream=True)
    for _ in range(N_BEFORE):
        add(stream=True, ttft_ms=NORMAL_TTFT_MS, phase="before")
    for _ in range(N_SLOW):
        add(stream=True, ttft_ms=SLOW_TTFT_MS, phase="slow")
    for _ in range(N_AFTER):
        add(stream=True, ttft_ms=AFTER_TTFT_MS, phase="after")
    return calls


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Lines:
    """Reads a child's output lines on a thread, so reads can time out."""

    def __init__(self, stream: IO[str]) -> None:
        self.q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def next(self, timeout: float) -> str | None:
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no line within {timeout}s") from None


def stop(p: subprocess.Popen[Any]) -> None:
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def build_binaries(out: Path) -> Path:
    """fusebox, built from the repository (FUSEBOX_PYHARNESS_BIN_DIR: prebuilt)."""
    pre = os.environ.get("FUSEBOX_PYHARNESS_BIN_DIR")
    if pre:
        return Path(pre)
    subprocess.run(["go", "build", "-o", str(out) + "/", "./cmd/fusebox"], cwd=ROOT, check=True, timeout=900)
    return out


@contextmanager
def kfake(bin_dir: Path, logdir: Path) -> Iterator[str]:
    """kfake through `fusebox broker`; yields its bootstrap address."""
    log = open(logdir / "broker.log", "w")
    p = subprocess.Popen([str(bin_dir / "fusebox"), "broker", "--listen", "127.0.0.1:0", "--partitions", "3"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT)
    assert p.stdout is not None
    line = Lines(p.stdout).next(60)
    assert line and line.startswith("listening on "), f"fusebox broker said {line!r}"
    try:
        yield line.removeprefix("listening on ")
    finally:
        if p.stdin:
            p.stdin.close()
        stop(p)
        log.close()


class KafkaSink:
    """The receiver's sink: each OTLP body, unchanged, as one record of
    otlp_spans (no key, as the Collector's kafka exporter writes by
    default), flushed before the receiver answers."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer

        self.p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "acks": "all"})
        self.lock = threading.Lock()
        self.bodies: list[bytes] = []

    def __call__(self, body: bytes) -> None:
        errs: list[str] = []

        def done(err: Any, _msg: Any) -> None:
            if err is not None:
                errs.append(str(err))

        with self.lock:
            self.p.produce(SPANS_TOPIC, value=body, on_delivery=done)
            left = self.p.flush(30)
            if left or errs:
                raise RuntimeError(f"produce to {SPANS_TOPIC}: {errs or f'{left} records unflushed'}")
            self.bodies.append(body)


SLO_FILE = """\
kafka: {{brokers: ["{bootstrap}"], group: conformance}}
time: {{allowed_lateness: 1s, idle_source_timeout: 2s, checkpoint_every: 1s}}
slos:
  - name: ttft-tail
    match: {{operation: [chat]}}
    tail: {{metric: ttft_ms, p: 0.9, budget: {ttft_budget}, window: 4s, every: 1s, min_samples: 5, min_exceedances: 10, threshold_quantile: 0.5}}
  - name: tpot-tail
    match: {{operation: [chat]}}
    tail: {{metric: tpot_ms, p: 0.9, budget: 1000, window: 4s, every: 1s, min_samples: 5, min_exceedances: 10, threshold_quantile: 0.5}}
  - name: duration-tail
    tail: {{metric: duration_ms, p: 0.9, budget: 10000, window: 4s, every: 1s, min_samples: 5, min_exceedances: 10, threshold_quantile: 0.5}}
  - name: availability
    burnrate:
      target: 0.99
      every: 1s
      page: [{{long: 20s, short: 2s, factor: 2}}]
      ticket: [{{long: 40s, short: 4s, factor: 1}}]
      min_events: 5
      min_bad_events: 1
sinks:
  jsonl: {{path: "{jsonl}"}}
http: {{listen: "127.0.0.1:{http_port}"}}
log: {{level: info, format: json}}
"""
TTFT_BUDGET_MS = 250.0


@dataclass
class Run:
    """`fusebox run` on the SLO file above; verdicts() reads its JSONL sink."""

    proc: subprocess.Popen[Any]
    jsonl: Path
    http: str
    log: Path

    def verdicts(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.jsonl.exists():
            for line in self.jsonl.read_text().splitlines():
                if line.strip():
                    v = json.loads(line).get("verdict")  # the sink's lines: {"verdict": ...} or {"command": ...}
                    if isinstance(v, dict) and "slo" in v and "window_end_unix_nano" in v:
                        out.append(v)
        return out


@contextmanager
def fusebox_run(bin_dir: Path, bootstrap: str, workdir: Path) -> Iterator[Run]:
    port = free_port()
    jsonl = workdir / "verdicts.jsonl"
    cfg = workdir / "slo.yaml"
    cfg.write_text(SLO_FILE.format(bootstrap=bootstrap, jsonl=jsonl, http_port=port, ttft_budget=TTFT_BUDGET_MS))
    keys = workdir / "fuse.keys"
    keys.write_text("conf1:" + "ab" * 32 + " active\n")
    logp = workdir / "fusebox-run.log"
    log = open(logp, "w")
    p = subprocess.Popen([str(bin_dir / "fusebox"), "run", "--config", str(cfg), "--fuse-keys", str(keys)],
                         stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    run = Run(p, jsonl, f"http://127.0.0.1:{port}", logp)
    deadline = time.monotonic() + 120
    while True:
        if p.poll() is not None:
            raise RuntimeError(f"fusebox run exited {p.returncode}: {logp.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(run.http + "/readyz", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop(p)
            raise RuntimeError(f"fusebox run not ready in 120s: {logp.read_text()[-3000:]}")
        time.sleep(0.2)
    try:
        yield run
    finally:
        stop(p)
        log.close()


def fusebox_spans(bin_dir: Path, bootstrap: str) -> list[dict[str, Any]]:
    """`fusebox spans`: what fusebox reads of every span on otlp_spans."""
    r = subprocess.run([str(bin_dir / "fusebox"), "spans", "--brokers", bootstrap, "--topic", SPANS_TOPIC],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"fusebox spans exited {r.returncode}: {r.stderr[-2000:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


@dataclass
class AppRun:
    app: App
    env: Env
    calls: list[dict[str, Any]]
    measurements: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None
    log: str = ""
    took_s: float = 0.0


def run_app(app: App, env: Env, calls: list[dict[str, Any]], base_url: str, traces_endpoint: str,
            workdir: Path) -> AppRun:
    """Runs one app to the contract (testing/instrumentation/README.md)."""
    ar = AppRun(app, env, calls)
    if env.error:
        return ar
    d = workdir / app.name.replace("/", "-")
    d.mkdir(parents=True, exist_ok=True)
    sc, meas = d / "scenario.json", d / "measurements.jsonl"
    sc.write_text(json.dumps({"calls": calls}))
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "TRACELOOP_", "OPENLIT_"))}
    e.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="test", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=traces_endpoint,
             OTEL_SERVICE_NAME=app.service, OTEL_RESOURCE_ATTRIBUTES=f"tenant.id={TENANT}",
             FUSEBOX_SCENARIO=str(sc), FUSEBOX_MEASUREMENTS=str(meas))
    t0 = time.monotonic()
    try:
        r = subprocess.run(env.argv, cwd=env.cwd, env=e, capture_output=True, text=True, timeout=APP_TIMEOUT)
        ar.returncode, ar.log = r.returncode, (r.stdout + r.stderr)[-4000:]
    except subprocess.TimeoutExpired as te:
        ar.returncode, ar.log = -1, f"timed out after {APP_TIMEOUT}s: {str(te.stderr)[-2000:]}"
    ar.took_s = time.monotonic() - t0
    if meas.exists():
        ar.measurements = [json.loads(line) for line in meas.read_text().splitlines() if line.strip()]
    return ar
