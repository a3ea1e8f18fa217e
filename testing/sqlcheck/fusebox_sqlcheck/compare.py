"""Cell-by-cell comparison of report results."""

from __future__ import annotations

import math
from typing import Any

# Relative tolerance for floats: the same data through the same functions
# differs only in the last bits between engine versions (summation order).
REL_TOL = 1e-9


def _equal(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return got == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(float(got), float(want), rel_tol=REL_TOL, abs_tol=1e-12)
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(_equal(g, w) for g, w in zip(got, want))
    return bool(got == want)


def compare_tables(
    name: str, got_cols: list[str], got: list[list[Any]], want_cols: list[str], want: list[list[Any]]
) -> list[str]:
    """Returns the differences (empty when equal): columns, row count, then up to 10 cells."""
    diffs: list[str] = []
    if got_cols != want_cols:
        return [f"{name}: columns {got_cols}, want {want_cols}"]
    if len(got) != len(want):
        diffs.append(f"{name}: {len(got)} rows, want {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        for c, (gv, wv) in enumerate(zip(g, w)):
            if not _equal(gv, wv):
                diffs.append(f"{name} row {i} column {got_cols[c]}: {gv!r}, want {wv!r}")
                if len(diffs) >= 10:
                    return diffs
    return diffs
