"""The peers: River's ADWIN, KSWIN, PageHinkley and alibi-detect's KSDrift
and CVMDriftOnline, each at the settings documented on its factory, run
over one stream's calls and returning its alarm times.

Needs the pinned requirements.txt (river, alibi-detect, numpy); imported
only by the full run, never by the harness's tests.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .streams import Stream
from .table import StreamResult

# The per-minute KS's significance level: a day's 1,440 tests at a
# Bonferroni-corrected 5% (the issue's "per-minute KS with a
# Bonferroni-corrected p-value").
KS_P_VAL = 0.05 / 1440
# The windows of the sliding KS, as fusebox's defaults: the last 5 minutes
# against the hour before them, tested every minute, both sides at least 50
# values (fusebox's min_samples).
KS_WINDOW_S, KS_REFERENCE_S, KS_EVERY_S, KS_MIN = 300.0, 3600.0, 60.0, 50
# CVMDriftOnline: the reference is the last CVM_REFERENCE_N calls of the
# stream's first hour (its threshold configuration bootstraps over the
# reference: 40 s of CPU for 1,200 values and 20,000 bootstraps); the
# expected run time (calls between false alarms) is what n_bootstraps
# (alibi's default, 10,000) can configure — alibi-detect asks for
# n_bootstraps an order of magnitude above ert, so a key-day's worth of
# calls (288,000 at 200/min) is out of reach: at 200 calls/min an ert of
# 5,000 calls is a false alarm every 25 minutes by design.
CVM_REFERENCE_S = 3600.0
CVM_REFERENCE_N = 1000
CVM_WINDOW_SIZES = [60]
CVM_N_BOOTSTRAPS = 10000
CVM_ERT = 5000


def _river(factory: Callable[[int], object]) -> Callable[[Stream, array[float], array[float]], list[float]]:
    def run(s: Stream, t: array[float], x: array[float]) -> list[float]:
        d = factory(s.seed)
        update = d.update  # type: ignore[attr-defined]
        alarms: list[float] = []
        for ti, xi in zip(t, x):
            update(xi)
            if d.drift_detected:  # type: ignore[attr-defined]
                alarms.append(ti)
        return alarms

    return run


def _adwin(seed: int) -> object:
    from river import drift

    # Through Any: River's ADWIN is untyped (a Cython class), and the test
    # command's venv type-checks this file without River installed.
    adwin: Any = drift.ADWIN
    return adwin()


def _kswin(seed: int) -> object:
    from river import drift

    return drift.KSWIN(seed=seed)


def _page_hinkley(seed: int) -> object:
    from river import drift

    return drift.PageHinkley()


def _ks_sliding(s: Stream, t: array[float], x: array[float]) -> list[float]:
    """alibi-detect's KSDrift on sliding windows: at every minute m, a new
    KSDrift on the reference [m-65min, m-5min) predicts the window
    [m-5min, m); an alarm is a drifting minute after one that was not."""
    from alibi_detect.cd import KSDrift

    tt = np.frombuffer(t, dtype=np.float64)
    xx = np.frombuffer(x, dtype=np.float64).reshape(-1, 1)
    alarms: list[float] = []
    last = False
    m = KS_EVERY_S
    while m <= s.duration_s:
        a, b, c = np.searchsorted(tt, [m - KS_WINDOW_S - KS_REFERENCE_S, m - KS_WINDOW_S, m])
        drift = False
        if b - a >= KS_MIN and c - b >= KS_MIN:
            cd = KSDrift(xx[a:b], p_val=KS_P_VAL)
            drift = bool(cd.predict(xx[b:c])["data"]["is_drift"])
        if drift and not last:
            alarms.append(m)
        last = drift
        m += KS_EVERY_S
    return alarms


def _cvm_online(s: Stream, t: array[float], x: array[float]) -> list[float]:
    """alibi-detect's CVMDriftOnline: reference the end of the first hour, then every
    later call through predict; an alarm resets it (alibi's own reset), as
    a deployment would after acting on one."""
    from alibi_detect.cd import CVMDriftOnline

    tt = np.frombuffer(t, dtype=np.float64)
    xx = np.frombuffer(x, dtype=np.float64)
    start = int(np.searchsorted(tt, CVM_REFERENCE_S))
    cd = CVMDriftOnline(xx[max(0, start - CVM_REFERENCE_N) : start].reshape(-1, 1), ert=CVM_ERT, window_sizes=CVM_WINDOW_SIZES,
                        n_bootstraps=CVM_N_BOOTSTRAPS, verbose=False)
    alarms: list[float] = []
    for i in range(start, len(xx)):
        if cd.predict(xx[i : i + 1])["data"]["is_drift"]:
            alarms.append(float(tt[i]))
            cd.reset_state()
    return alarms


@dataclass(frozen=True)
class Peer:
    name: str  # the table's detector column
    key: str  # --peers
    run: Callable[[Stream, array[float], array[float]], list[float]]


PEERS = [
    Peer("river ADWIN (defaults, delta 0.002)", "adwin", _river(_adwin)),
    Peer("river KSWIN (defaults, alpha 0.005, window 100)", "kswin", _river(_kswin)),
    Peer("river PageHinkley (defaults, threshold 50)", "pagehinkley", _river(_page_hinkley)),
    Peer("alibi KSDrift 5m vs 1h every min, p < 3.5e-5", "ksdrift", _ks_sliding),
    Peer(f"alibi CVMDriftOnline (ert {CVM_ERT}, window {CVM_WINDOW_SIZES[0]})", "cvm", _cvm_online),
]


def run_peer(p: Peer, s: Stream, t: array[float], x: array[float]) -> StreamResult:
    """Runs p over one stream, timing it by the process's CPU clock."""
    c0 = time.process_time_ns()
    alarms = p.run(s, t, x)
    return StreamResult(alarms_s=alarms, cpu_ns=time.process_time_ns() - c0)
