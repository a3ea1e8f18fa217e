"""Replays the dump on chDB: migrations, rows, reports."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from chdb import session as chs

from fusebox_sqlcheck.dump import Dump

# Settings of every query: 64-bit integers as JSON numbers (the Go dump has
# numbers), DateTime input in any ISO-like form (the dump's times carry no
# zone and, for DateTime64, a fraction).
_SETTINGS = "SETTINGS output_format_json_quote_64bit_integers = 0, date_time_input_format = 'best_effort'"

_PARAM = re.compile(r"@(from|to|objective|limit|target|credit_base|credit_exponent|credit_cap)\b")


class Engine:
    """One chDB session (an in-process ClickHouse) in a temporary directory."""

    def __init__(self, path: str | None = None) -> None:
        self._s = chs.Session(path) if path else chs.Session()

    def version(self) -> str:
        return str(self._s.query("SELECT version()", "TabSeparated")).strip()

    def execute(self, sql: str) -> None:
        self._s.query(sql)

    def rows(self, sql: str) -> tuple[list[str], list[str], list[list[Any]]]:
        """Runs a SELECT; returns column names, types and rows (JSONCompact)."""
        out = str(self._s.query(sql.rstrip().rstrip(";") + "\n" + _SETTINGS, "JSONCompact"))
        d = json.loads(out)
        return [m["name"] for m in d["meta"]], [m["type"] for m in d["meta"]], d["data"]

    def insert(self, table: str, columns: list[str], rows: list[list[Any]]) -> None:
        lines = "\n".join(json.dumps(dict(zip(columns, r))) for r in rows)
        self._s.query(f"INSERT INTO {table} {_SETTINGS} FORMAT JSONEachRow\n{lines}")


def bind(sql: str, params: dict[str, Any]) -> str:
    """Renders @name parameters as literals, as clickhouse-go's client-side binding does."""

    def lit(m: re.Match[str]) -> str:
        v = params[m.group(1)]
        if isinstance(v, str):
            return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return repr(v)

    # Comments mention the parameters too; binding them there is harmless.
    return _PARAM.sub(lit, sql)


@dataclass
class Replay:
    """What replay did: the engine version, the statements run per migration, each report's result."""

    version: str
    statements: dict[str, list[str]] = field(default_factory=dict)
    reports: dict[str, tuple[list[str], list[str], list[list[Any]]]] = field(default_factory=dict)


def replay(dump: Dump, engine: Engine, db: str = "fusebox", retention_days: int | None = None) -> Replay:
    """Migrates db with every step (a current engine takes the TTL step too,
    with retention_days, default the dump's default), inserts the dump's
    rows (rollups through span_rollups_input and its materialized view, as
    fusebox does), and runs every report in db.

    chDB is one engine per process: give each replay its own db."""
    days = dump.default_retention_days if retention_days is None else retention_days
    r = Replay(version=engine.version())
    engine.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    for m in dump.migrations:
        stmts = [s.replace("{db}", db).replace("{days}", str(days)) for s in m.statements]
        for s in stmts:
            engine.execute(s)
        r.statements[m.name] = stmts
    for name in dump.order:
        t = dump.tables[name]
        engine.insert(f"{db}.{name}", t.columns, t.rows)
    engine.execute(f"USE {db}")
    for rep in dump.reports:
        r.reports[rep.name] = engine.rows(bind(rep.sql, dump.params))
    return r
