"""The stream files written by ``fusebox bench drift-peers``.

streams.json lists the streams; each stream file holds its calls as
16-byte little-endian records: an int64 event time in ns from the stream's
start (ascending) and a float64 score. Binary, so that Python reads
exactly the doubles Go generated (a decimal text form would round them).
"""

from __future__ import annotations

import json
import struct
from array import array
from dataclasses import dataclass
from pathlib import Path
import sys

RECORD = struct.Struct("<qd")


@dataclass(frozen=True)
class Stream:
    """One stream of the manifest (Go's study.StreamSpec)."""

    name: str
    kind: str
    rate_per_minute: float
    seed: int
    change_at_s: float  # -1: a clean stream
    count_from_s: float
    duration_s: float
    file: str
    calls: int

    @property
    def clean(self) -> bool:
        return self.change_at_s < 0


@dataclass(frozen=True)
class Manifest:
    directory: Path
    detect_within_s: float
    streams: list[Stream]


def read_manifest(directory: Path) -> Manifest:
    """Reads directory/streams.json; ValueError on a version other than 1."""
    raw = json.loads((directory / "streams.json").read_text())
    if raw.get("version") != 1:
        raise ValueError(f"{directory}/streams.json: version {raw.get('version')}, want 1")
    streams = [
        Stream(
            name=s["name"],
            kind=s["kind"],
            rate_per_minute=float(s["rate_per_minute"]),
            seed=int(s["seed"]),
            change_at_s=float(s["change_at_s"]),
            count_from_s=float(s.get("count_from_s", 0)),
            duration_s=float(s["duration_s"]),
            file=s["file"],
            calls=int(s["calls"]),
        )
        for s in raw["streams"]
    ]
    return Manifest(directory=directory, detect_within_s=float(raw["detect_within_s"]), streams=streams)


def read_calls(path: Path) -> tuple[array[float], array[float]]:
    """Returns a stream file's times (s from the stream's start) and scores.

    ValueError when the file is not a whole number of records or its times
    are not ascending.
    """
    b = path.read_bytes()
    if len(b) % RECORD.size:
        raise ValueError(f"{path}: {len(b)} bytes is not a whole number of {RECORD.size}-byte calls")
    ns = array("q")
    ns.frombytes(b)
    if sys.byteorder != "little":
        ns.byteswap()
    t = array("d", (x / 1e9 for x in ns[0::2]))
    scores = array("d")
    scores.frombytes(ns[1::2].tobytes())
    for i in range(1, len(t)):
        if t[i] < t[i - 1]:
            raise ValueError(f"{path}: call {i} at {t[i]} s is before call {i - 1} at {t[i - 1]} s")
    return t, scores
