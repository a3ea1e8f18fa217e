"""fusebox_sqlcheck: fusebox's ClickHouse SQL on a current engine.

The Go test ``TestDumpForCurrentEngine`` (sql/reports) writes, from the
ClickHouse 18.16 server the Go suite runs, the migrations, the sample rows
and every report's result to a JSON file (FUSEBOX_SQLCHECK_DUMP).
:func:`fusebox_sqlcheck.engine.replay` runs the same migrations - including
the steps 18.16 skips (the TTL) - and reports on chDB, an in-process
ClickHouse 26.x, and :func:`fusebox_sqlcheck.compare.compare_tables` checks
the results are equal.
"""

from fusebox_sqlcheck.dump import Dump, load_dump
from fusebox_sqlcheck.engine import Engine, Replay, replay
from fusebox_sqlcheck.compare import compare_tables

__all__ = ["Dump", "load_dump", "Engine", "Replay", "replay", "compare_tables"]
