"""The benchmark's table: the same rows and columns as Go's PeersTable."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .accounting import count_from, first_after, median, poisson_upper
from .streams import Manifest


@dataclass
class StreamResult:
    """One detector on one stream: its alarm times (s) and CPU (ns)."""

    alarms_s: list[float] = field(default_factory=list)
    cpu_ns: int = 0


@dataclass
class DetectorResult:
    detector: str
    # In the manifest's order; None: the detector was not run on the stream
    # (a subsample, see __main__'s --limit): left out of its counts.
    streams: list[StreamResult | None]


@dataclass
class Row:
    detector: str
    kind: str
    rate: float
    seeds: int = 0
    within: int = 0  # first alarm after the change within detect_within_s
    within_horizon: int = 0  # within the stream (1 h after the change)
    pre_change: int = 0
    median_delay_s: float = math.nan
    false_alarms: int = 0
    key_days: float = 0.0
    per_day: float = 0.0
    per_day_upper: float = 0.0
    cpu_ns_per_call: float = 0.0


def read_results(path: Path) -> list[DetectorResult]:
    """Reads a results file (fusebox.json, peers.json)."""
    raw = json.loads(path.read_text())
    return [
        DetectorResult(
            detector=d["detector"],
            streams=[
                None if s is None else StreamResult(list(s.get("alarms_s") or []), int(s.get("cpu_ns", 0)))
                for s in d["streams"]
            ],
        )
        for d in raw["detectors"]
    ]


def write_results(path: Path, results: list[DetectorResult]) -> None:
    out = {
        "detectors": [
            {
                "detector": d.detector,
                "streams": [None if s is None else {"alarms_s": s.alarms_s, "cpu_ns": s.cpu_ns} for s in d.streams],
            }
            for d in results
        ]
    }
    path.write_text(json.dumps(out) + "\n")


def tabulate(m: Manifest, dets: list[DetectorResult]) -> list[Row]:
    """Rows per (kind, rate) in the manifest's order, detectors in the given
    order; a detector that skipped a stream (None in its list) leaves it out
    of its own counts (its sample size says so)."""
    cells: list[tuple[str, float]] = []
    for s in m.streams:
        if (s.kind, s.rate_per_minute) not in cells:
            cells.append((s.kind, s.rate_per_minute))
    rows: list[Row] = []
    for kind, rate in cells:
        for d in dets:
            if len(d.streams) != len(m.streams):
                raise ValueError(f"{d.detector}: {len(d.streams)} stream results for {len(m.streams)} streams")
            r = Row(d.detector, kind, rate)
            delays: list[float] = []
            cpu = 0
            calls = 0
            for s, res in zip(m.streams, d.streams):
                if s.kind != kind or s.rate_per_minute != rate or res is None:
                    continue
                cpu += res.cpu_ns
                calls += s.calls
                if s.clean:
                    r.key_days += (s.duration_s - s.count_from_s) / 86400
                    r.false_alarms += count_from(res.alarms_s, s.count_from_s)
                    continue
                r.seeds += 1
                delay, pre = first_after(res.alarms_s, s.change_at_s)
                r.pre_change += pre
                r.within += delay <= m.detect_within_s
                r.within_horizon += not math.isinf(delay)
                delays.append(delay)
            if calls:
                r.cpu_ns_per_call = cpu / calls
            if r.key_days > 0:
                r.per_day = r.false_alarms / r.key_days
                r.per_day_upper = poisson_upper(r.false_alarms, r.key_days)
            r.median_delay_s = median(delays)
            if r.seeds or r.key_days:
                rows.append(r)
    return rows


def _minutes(s: float) -> str:
    if math.isnan(s):
        return "-"
    if math.isinf(s):
        return "miss"
    return f"{s / 60:.1f}"


def print_table(rows: list[Row], out: TextIO) -> None:
    """Prints the change rows then the clean rows, aligned."""
    change = [
        [r.kind, f"{r.rate:g}", r.detector, f"{r.within}/{r.seeds}", f"{r.within_horizon}/{r.seeds}",
         _minutes(r.median_delay_s), f"{r.pre_change}/{r.seeds}", f"{r.cpu_ns_per_call:.0f}"]
        for r in rows if r.seeds
    ]
    clean = [
        [r.kind, f"{r.rate:g}", r.detector, str(r.false_alarms), f"{r.key_days:.0f}",
         f"{r.per_day:.3f} [{r.per_day_upper:.3f}]", f"{r.cpu_ns_per_call:.0f}"]
        for r in rows if r.key_days
    ]
    _aligned(["change", "calls/min", "detector", "detected <= 30 min", "within 60 min", "median delay (min)",
              "alarm before change", "cpu ns/call"], change, out)
    out.write("\n")
    _aligned(["clean stream", "calls/min", "detector", "false alarms", "key-days", "per key-day [95% upper]",
              "cpu ns/call"], clean, out)


def _aligned(head: list[str], body: list[list[str]], out: TextIO) -> None:
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    for line in [head, *body]:
        out.write("  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() + "\n")


def print_markdown(rows: list[Row], detectors: list[str], out: TextIO) -> None:
    """Prints three Markdown tables with one column per detector: detection
    (seeds caught within 30 min of seeds, and the median delay in minutes)
    per change kind and rate; false alarms (count in key-days, the 95%
    upper bound per key-day) per clean kind and rate; CPU ns per call per
    rate (over every stream of the rate the detector ran on)."""
    by = {(r.kind, r.rate, r.detector): r for r in rows}
    cells: list[tuple[str, float]] = []
    for r in rows:
        if (r.kind, r.rate) not in cells:
            cells.append((r.kind, r.rate))
    head = "| | calls/min | " + " | ".join(detectors) + " |\n|---|---|" + "---|" * len(detectors) + "\n"
    out.write(head.replace("| |", "| change |", 1))
    for kind, rate in cells:
        line = []
        for d in detectors:
            c = by.get((kind, rate, d))
            line.append(f"{c.within}/{c.seeds} · {_minutes(c.median_delay_s)}" if c and c.seeds else "")
        if any(line):
            out.write(f"| {kind} | {rate:g} | " + " | ".join(line) + " |\n")
    out.write("\n" + head.replace("| |", "| clean |", 1))
    for kind, rate in cells:
        line = []
        for d in detectors:
            c = by.get((kind, rate, d))
            line.append(f"{c.false_alarms} in {c.key_days:.0f} · {c.per_day_upper:.3f}" if c and c.key_days else "")
        if any(line):
            out.write(f"| {kind} | {rate:g} | " + " | ".join(line) + " |\n")
    out.write("\n" + head.replace("| |", "| CPU ns/call |", 1))
    for rate in sorted({r.rate for r in rows}, reverse=True):
        line = []
        for d in detectors:
            cpu = [r.cpu_ns_per_call for r in rows if r.rate == rate and r.detector == d and r.cpu_ns_per_call > 0]
            line.append(f"{median(cpu):.0f}" if cpu else "")
        out.write(f"| all | {rate:g} | " + " | ".join(line) + " |\n")
