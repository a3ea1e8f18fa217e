"""The delay and false-alarm accounting on hand-made streams whose answers
are worked out by hand (the same streams as Go's TestTabulate)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from fusebox_driftpeers.accounting import count_from, first_after, median, poisson_upper
from fusebox_driftpeers.streams import Manifest, Stream
from fusebox_driftpeers.table import DetectorResult, StreamResult, print_table, read_results, tabulate, write_results


def _change(seed: int) -> Stream:
    return Stream(f"shift-{seed}", "shift-0.05", 200, seed, 7200, 0, 10800, f"s{seed}.bin", 36000)


def _manifest() -> Manifest:
    clean = Stream("clean", "stationary", 200, 1, -1, 3600, 3600 + 2 * 86400, "c.bin", 576000)
    return Manifest(Path("."), 1800, [_change(1), _change(2), _change(3), clean])


def test_first_after_skips_alarms_before_the_change() -> None:
    assert first_after([100, 7300, 7400], 7200) == (100, True)
    assert first_after([7200], 7200) == (0, False)  # at the change counts
    assert first_after([100], 7200) == (math.inf, True)


def test_count_from() -> None:
    assert count_from([1000, 3600, 5000], 3600) == 2


def test_median_counts_misses_as_infinite() -> None:
    assert median([60, 2000, math.inf]) == 2000
    assert median([60, math.inf]) == math.inf
    assert median([60, 120]) == 90
    assert math.isnan(median([]))


def test_poisson_upper_is_garwood() -> None:
    # chi2(0.975; 2)/2 = 3.6889, chi2(0.975; 6)/2 = 7.2247
    assert poisson_upper(0, 1) == pytest.approx(3.6889, abs=1e-4)
    assert poisson_upper(0, 40) == pytest.approx(0.0922, abs=1e-4)
    assert poisson_upper(2, 2) == pytest.approx(3.6124, abs=1e-4)


def test_tabulate() -> None:
    m = _manifest()
    det = DetectorResult("d", [
        StreamResult([7260.0], 3_600_000),  # 1 min after the change
        StreamResult([100.0, 9200.0], 3_600_000),  # an early alarm, then 2,000 s: not within 30 min
        StreamResult([], 3_600_000),  # a miss
        StreamResult([1000.0, 5000.0, 90000.0], 576_000_000),  # 1,000 s is in the warm-up
    ])
    shift, clean = tabulate(m, [det])
    assert (shift.seeds, shift.within, shift.within_horizon, shift.pre_change) == (3, 1, 2, 1)
    assert shift.median_delay_s == 2000
    assert shift.cpu_ns_per_call == pytest.approx(100)
    assert (clean.false_alarms, clean.key_days, clean.per_day) == (2, 2, 1)
    assert clean.per_day_upper == pytest.approx(3.6124, abs=1e-4)
    assert clean.cpu_ns_per_call == pytest.approx(1000)
    out = io.StringIO()
    print_table([shift, clean], out)
    assert "1/3" in out.getvalue() and "33.3" in out.getvalue() and "1.000 [3.612]" in out.getvalue()


def test_skipped_streams_leave_the_sample(tmp_path: Path) -> None:
    m = _manifest()
    det = DetectorResult("slow", [StreamResult([7260.0]), None, None, None])
    write_results(tmp_path / "r.json", [det])
    (back,) = read_results(tmp_path / "r.json")
    assert back.streams[1] is None
    (shift,) = tabulate(m, [back])
    assert (shift.seeds, shift.within) == (1, 1)


def test_a_result_per_stream_is_required() -> None:
    with pytest.raises(ValueError, match="3 stream results for 4 streams"):
        tabulate(_manifest(), [DetectorResult("d", [StreamResult()] * 3)])


def test_limits_pick_the_first_streams_of_each_cell() -> None:
    from fusebox_driftpeers.__main__ import _selected

    m = _manifest()  # three change streams of one cell, one clean stream
    assert _selected(m, ["adwin", "cvm"], {"cvm": 2}, {}) == [["adwin", "cvm"], ["adwin", "cvm"], ["adwin"], ["adwin", "cvm"]]
    assert _selected(m, ["cvm"], {"cvm": 1}, {"cvm": 0}) == [["cvm"], [], [], []]


def test_markdown_has_a_column_per_detector() -> None:
    m = _manifest()
    a = DetectorResult("a", [*[StreamResult([7260.0], 3_600_000)] * 3, StreamResult([], 576_000_000)])
    b = DetectorResult("b", [*[StreamResult([], 0)] * 3, StreamResult([5000.0], 0)])
    out = io.StringIO()
    from fusebox_driftpeers.table import print_markdown

    print_markdown(tabulate(m, [a, b]), ["a", "b"], out)
    text = out.getvalue()
    assert "| shift-0.05 | 200 | 3/3 · 1.0 | 0/3 · miss |" in text
    assert "| stationary | 200 | 0 in 2 · 1.844 | 1 in 2 · 2.786 |" in text
