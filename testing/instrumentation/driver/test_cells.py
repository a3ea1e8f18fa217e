"""cells.join and the duration cell on spans a few ms off the app's clock
(the shape a Node process with a skewed performance.timeOrigin wrote in
CI: every span starting about 3 ms before its call)."""

from __future__ import annotations

from typing import Any

import cells
from otlpwire import RawSpan

MS = 1_000_000


def _calls(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """n back-to-back calls of 20 ms, 1 ms apart, starting at 1 s."""
    calls = [{"id": f"c{i:03d}", "model": "m", "operation": "chat"} for i in range(n)]
    ms = []
    for i, c in enumerate(calls):
        start = 1_000 * MS + i * 21 * MS
        ms.append({"id": c["id"], "model": "m", "operation": "chat", "stream": False, "error": False,
                   "start_ns": start, "end_ns": start + 20 * MS})
    return calls, ms


def _span(start: int, end: int) -> RawSpan:
    return RawSpan("scope", "chat m", start, end, 0, {"service.name": "s"}, {"gen_ai.request.model": "m"})


def _fb(start: int, end: int) -> dict[str, Any]:
    return {"start_unix_nano": start, "end_unix_nano": end, "duration_ms": (end - start) / MS}


def test_a_span_3ms_early_joins_its_call_and_fails_the_duration_cell_by_name() -> None:
    calls, ms = _calls(3)
    raws = [_span(m["start_ns"] - 3 * MS, m["end_ns"] - 4 * MS) for m in ms]
    fbs = [_fb(r.start_unix_nano, r.end_unix_nano) for r in raws]
    joined = cells.join(ms, calls, raws, fbs)
    assert [j.raw is raws[i] for i, j in enumerate(joined)] == [True, True, True]
    assert [j.fb is fbs[i] for i, j in enumerate(joined)] == [True, True, True]
    assert not [p for j in joined for p in j.problems]
    assert cells.cell("duration", joined).startswith("✗ span outside the app's call")


def test_spans_inside_their_calls_join_one_each_and_pass() -> None:
    calls, ms = _calls(4)
    raws = [_span(m["start_ns"] + MS // 2, m["end_ns"] - MS // 2) for m in ms]
    fbs = [_fb(r.start_unix_nano, r.end_unix_nano) for r in raws]
    joined = cells.join(ms, calls, raws, fbs)
    assert [j.raw for j in joined] == raws
    assert cells.cell("duration", joined) == "✓"


def test_two_spans_in_one_call_is_a_problem_and_a_far_span_joins_nothing() -> None:
    calls, ms = _calls(2)
    first = ms[0]
    raws = [_span(first["start_ns"] + MS, first["start_ns"] + 5 * MS),
            _span(first["start_ns"] + 6 * MS, first["start_ns"] + 9 * MS),
            _span(ms[-1]["end_ns"] + 10 * MS, ms[-1]["end_ns"] + 12 * MS)]
    joined = cells.join(ms, calls, raws, [])
    assert joined[0].raw is None and joined[0].problems == ["2 LLM spans joined to call c000"]
    assert joined[1].raw is None and joined[1].problems == []
