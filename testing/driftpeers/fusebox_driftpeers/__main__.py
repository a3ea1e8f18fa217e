"""python -m fusebox_driftpeers: run the peers on the streams of --dir and
print the table, fusebox's rows (every --dir/fusebox*.json) beside theirs.

  --dir D         the streams (``fusebox bench drift-peers --dir D`` wrote them)
  --peers LIST    comma-separated: adwin, kswin, pagehinkley, ksdrift, cvm (default all)
  --limit K=N     run peer K on only the first N streams of each (kind, rate),
                  repeatable (the slow ones; the table's sample sizes say so)
  --jobs N        streams at once (processes; default 2)
  --out NAME      the results file in D (default peers.json)
  --table-only    print the table from every D/fusebox*.json and D/peers*.json
  --markdown      print it as docs/drift-peers.md's tables: one column per detector
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .streams import Manifest, Stream, read_calls, read_manifest
from .table import DetectorResult, StreamResult, print_markdown, print_table, read_results, tabulate, write_results


def _run_stream(args: tuple[Path, Stream, list[str]]) -> dict[str, StreamResult]:
    from .peers import PEERS, run_peer

    directory, s, keys = args
    if not keys:
        return {}
    t, x = read_calls(directory / s.file)
    return {p.key: run_peer(p, s, t, x) for p in PEERS if p.key in keys}


def _selected(m: Manifest, keys: list[str], limits: dict[str, int], clean: dict[str, int]) -> list[list[str]]:
    """Per stream, the peers to run on it: peer k on the first limits[k]
    change streams and clean[k] clean streams of each (kind, rate), all of
    them when k has no limit."""
    seen: dict[tuple[str, str, float], int] = {}
    out: list[list[str]] = []
    for s in m.streams:
        run = []
        for k in keys:
            cell = (k, s.kind, s.rate_per_minute)
            seen[cell] = seen.get(cell, 0) + 1
            lim = clean.get(k, limits.get(k)) if s.clean else limits.get(k)
            if lim is None or seen[cell] <= lim:
                run.append(k)
        out.append(run)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fusebox_driftpeers")
    ap.add_argument("--dir", type=Path, default=Path(".cache/drift-peers"))
    ap.add_argument("--peers", default="adwin,kswin,pagehinkley,ksdrift,cvm")
    ap.add_argument("--limit", action="append", default=[])
    ap.add_argument("--clean-limit", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="peers.json")
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    m = read_manifest(a.dir)
    if not a.table_only:
        from .peers import PEERS

        names = {p.key: p.name for p in PEERS}
        keys = [k.strip() for k in a.peers.split(",") if k.strip()]
        for k in keys:
            if k not in names:
                ap.error(f"--peers: unknown peer {k!r} (known: {', '.join(names)})")
        limits: dict[str, int] = {}
        clean: dict[str, int] = {}
        for flag, dst in (("limit", limits), ("clean-limit", clean)):
            for lim in getattr(a, flag.replace("-", "_")):
                k, _, n = lim.partition("=")
                if k not in names or not n.isdigit():
                    ap.error(f"--{flag}: want PEER=N, got {lim!r}")
                dst[k] = int(n)
        todo = _selected(m, keys, limits, clean)
        res: dict[str, list[StreamResult | None]] = {k: [None] * len(m.streams) for k in keys}
        with ProcessPoolExecutor(max_workers=a.jobs) as ex:
            for i, got in enumerate(ex.map(_run_stream, [(a.dir, s, todo[i]) for i, s in enumerate(m.streams)])):
                for k, r in got.items():
                    res[k][i] = r
                if (i + 1) % 50 == 0 or i + 1 == len(m.streams):
                    print(f"fusebox_driftpeers: {i + 1} of {len(m.streams)} streams", file=sys.stderr, flush=True)
        write_results(a.dir / a.out, [DetectorResult(names[k], res[k]) for k in keys])
    dets: list[DetectorResult] = []
    for f in [*sorted(a.dir.glob("fusebox*.json")), *sorted(a.dir.glob("peers*.json"))]:
        if f.exists():
            dets += read_results(f)
    rows = tabulate(m, dets)
    if a.markdown:
        print_markdown(rows, [d.detector for d in dets], sys.stdout)
    else:
        print_table(rows, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
