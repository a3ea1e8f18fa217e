"""Alarm accounting, the same as Go's (cmd/fusebox/internal/study).

A detector's result on a stream is the list of its alarm times (s from the
stream's start). On a change stream the detection is the first alarm at or
after the change (alarms before it are counted apart); on a clean stream
every alarm from count_from_s on is false.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def first_after(times: Sequence[float], change: float) -> tuple[float, bool]:
    """The delay from change to the first alarm at or after it (inf: none)
    and whether an alarm came before the change."""
    pre = False
    for t in times:
        if t < change:
            pre = True
            continue
        return t - change, pre
    return math.inf, pre


def count_from(times: Sequence[float], start: float) -> int:
    """The number of alarms at or after start."""
    return sum(1 for t in times if t >= start)


def median(xs: Sequence[float]) -> float:
    """The median (inf sorts last; an even count averages the middle two,
    inf if either is); nan for no values."""
    if not xs:
        return math.nan
    s = sorted(xs)
    n = len(s)
    if n % 2:
        return s[n // 2]
    return (s[n // 2 - 1] + s[n // 2]) / 2


def poisson_upper(k: int, exposure: float, level: float = 0.975) -> float:
    """The exact (Garwood) one-sided upper bound of a Poisson rate: the mean
    mu with P(X <= k; mu) = 1 - level, over exposure (3.689/exposure for
    k = 0 at level 0.975) — chi2(level; 2k+2)/2/exposure, solved by
    bisection on the Poisson CDF (no scipy needed)."""
    if exposure <= 0:
        raise ValueError("exposure must be positive")
    target = 1 - level

    def cdf(mu: float) -> float:
        term = math.exp(-mu)
        total = term
        for i in range(1, k + 1):
            term *= mu / i
            total += term
        return total

    lo, hi = 0.0, max(10.0, 4.0 * (k + 1))
    while cdf(hi) > target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if cdf(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi / exposure
