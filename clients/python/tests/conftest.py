"""Brokers for the Python suite, the same as the Go suite's: kfake (the
fusebox binary's `broker` command) and Apache Kafka (the Go harness's
launcher, through internal/testharness/cmd/pyharness); and a publisher of
commands signed by Go's package fuse.

Binaries are built once per session with `go build` from the repository
(FUSEBOX_PYHARNESS_BIN_DIR: use prebuilt fusebox and pyharness from there).
The Apache Kafka tests skip when Java or the jars are missing, and fail
instead under FUSEBOX_REQUIRE_APACHE_KAFKA=1.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
REQUIRE_APACHE = os.environ.get("FUSEBOX_REQUIRE_APACHE_KAFKA", "").lower() in ("1", "true", "yes")
START_TIMEOUT = 180.0  # seconds: a JVM's first start on a loaded 2-core machine


@pytest.fixture(scope="session")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pre = os.environ.get("FUSEBOX_PYHARNESS_BIN_DIR")
    if pre:
        return Path(pre)
    out = tmp_path_factory.mktemp("bin")
    subprocess.run(["go", "build", "-o", str(out) + "/", "./cmd/fusebox", "./internal/testharness/cmd/pyharness"],
                   cwd=ROOT, check=True, timeout=900)
    return out


class _Lines:
    """Reads a child's stdout lines on a thread, so reads can time out."""

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


@dataclass
class Broker:
    kind: str
    bootstrap: str


def _stop(p: subprocess.Popen[str]) -> None:
    if p.poll() is None:
        if p.stdin:
            p.stdin.close()
        p.terminate()
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture(scope="session")
def kfake_broker(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    log = open(tmp_path_factory.mktemp("kfake") / "broker.log", "w")
    p = subprocess.Popen([str(bin_dir / "fusebox"), "broker", "--listen", "127.0.0.1:0", "--partitions", "3"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT)
    assert p.stdout is not None
    lines = _Lines(p.stdout)
    line = lines.next(60)
    assert line and line.startswith("listening on "), f"fusebox broker said {line!r}"
    yield Broker("kfake", line.removeprefix("listening on "))
    _stop(p)
    log.close()


@pytest.fixture(scope="session")
def apache_broker(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    logpath = tmp_path_factory.mktemp("apache") / "pyharness.log"
    log = open(logpath, "w")
    p = subprocess.Popen([str(bin_dir / "pyharness"), "apache"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=log, text=True, cwd=ROOT)
    assert p.stdout is not None
    lines = _Lines(p.stdout)
    line = lines.next(START_TIMEOUT)
    if line is None or not line.startswith("listening on "):
        p.wait(30)
        log.close()
        reason = line or f"exited {p.returncode}: {logpath.read_text()[-2000:]}"
        if line and line.startswith("unavailable: ") and not REQUIRE_APACHE:
            pytest.skip(f"Apache Kafka: {reason} (set FUSEBOX_REQUIRE_APACHE_KAFKA=1 to make this a failure)")
        pytest.fail(f"Apache Kafka did not start: {reason}")
    yield Broker("apache", line.removeprefix("listening on "))
    _stop(p)
    log.close()


@pytest.fixture(params=["kfake", "apache"])
def broker(request: pytest.FixtureRequest) -> Broker:
    b: Broker = request.getfixturevalue(request.param + "_broker")
    return b


@pytest.fixture
def topic() -> str:
    return "fusebox.fuse.py-" + uuid.uuid4().hex[:10]


class Publisher:
    """pyharness publish: commands signed by Go's fuse.Keyring.Sign, produced by franz-go."""

    def __init__(self, bin_dir: Path, broker: Broker, topic: str, keys: Path, partitions: int = 3) -> None:
        self.p = subprocess.Popen(
            [str(bin_dir / "pyharness"), "publish", "--brokers", broker.bootstrap, "--topic", topic,
             "--keys", str(keys), "--partitions", str(partitions)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.p.stdout is not None
        self.lines = _Lines(self.p.stdout)

    def _send(self, obj: dict[str, Any]) -> tuple[int, int, bytes]:
        assert self.p.stdin is not None
        self.p.stdin.write(json.dumps(obj) + "\n")
        self.p.stdin.flush()
        line = self.lines.next(60)
        assert line is not None and line.startswith("ok "), f"publisher: {line!r}"
        _, part, off, vhex = (line.split(" ") + [""])[:4]
        return int(part), int(off), bytes.fromhex(vhex)

    def command(self, fields: dict[str, Any], key: str = "") -> bytes:
        """Signs and publishes a command (keyed by its target, or by key);
        returns the record value Go wrote."""
        return self._send({"command": fields, "key": key} if key else fields)[2]

    def raw(self, key: str, value: bytes) -> None:
        self._send({"raw_hex": value.hex(), "key": key})

    def tombstone(self, key: str) -> None:
        self._send({"tombstone": key})

    def close(self) -> None:
        _stop(self.p)


@pytest.fixture
def publishers(bin_dir: Path) -> Iterator[Any]:
    made: list[Publisher] = []

    def make(broker: Broker, topic: str, keys: Path, partitions: int = 3) -> Publisher:
        p = Publisher(bin_dir, broker, topic, keys, partitions)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def wait_for(cond: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")
