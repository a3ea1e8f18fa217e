"""Reading the stream files: the bytes Go writes (study.WriteCalls; Go's
TestStreamFileFormat writes testdata/three.bin's calls and compares the
bytes) are the values Python reads."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from fusebox_driftpeers.streams import read_calls, read_manifest

DATA = Path(__file__).parent / "testdata"


def test_reads_the_go_format_exactly() -> None:
    t, x = read_calls(DATA / "three.bin")
    assert list(t) == [0.0, 1.5, 60.0]
    assert list(x) == [0.5, 0.8125, 0.1]  # bit-exact doubles, not rounded text


def test_rejects_a_torn_file(tmp_path: Path) -> None:
    p = tmp_path / "torn.bin"
    p.write_bytes((DATA / "three.bin").read_bytes()[:-3])
    with pytest.raises(ValueError, match="whole number"):
        read_calls(p)


def test_rejects_times_out_of_order(tmp_path: Path) -> None:
    p = tmp_path / "backwards.bin"
    p.write_bytes(struct.pack("<qd", 2_000_000_000, 0.5) + struct.pack("<qd", 1_000_000_000, 0.5))
    with pytest.raises(ValueError, match="before call 0"):
        read_calls(p)


def test_manifest(tmp_path: Path) -> None:
    m = {"version": 1, "detect_within_s": 1800, "streams": [
        {"name": "a", "kind": "shift-0.05", "rate_per_minute": 200, "seed": 1, "change_at_s": 7200,
         "count_from_s": 0, "duration_s": 10800, "file": "a.bin", "calls": 3},
        {"name": "b", "kind": "stationary", "rate_per_minute": 20, "seed": 1, "change_at_s": -1,
         "count_from_s": 3600, "duration_s": 90000, "file": "b.bin", "calls": 3}]}
    (tmp_path / "streams.json").write_text(json.dumps(m))
    got = read_manifest(tmp_path)
    assert [s.clean for s in got.streams] == [False, True]
    assert got.detect_within_s == 1800
    m["version"] = 2
    (tmp_path / "streams.json").write_text(json.dumps(m))
    with pytest.raises(ValueError, match="version 2"):
        read_manifest(tmp_path)
