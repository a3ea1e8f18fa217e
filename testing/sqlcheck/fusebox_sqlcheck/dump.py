"""The JSON file the Go side writes (see sql/reports/sqlcheck_dump_test.go)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    min_server: str
    applied_on_dump_server: bool
    statements: list[str]  # {db} and {days} still in them


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[Any]]


@dataclass(frozen=True)
class ReportResult:
    name: str
    sql: str  # with @from, @to, ... parameters
    columns: list[str]
    types: list[str]
    rows: list[list[Any]]


@dataclass(frozen=True)
class Dump:
    server: str
    default_retention_days: int
    migrations: list[Migration]
    tables: dict[str, Table]
    order: list[str]
    params: dict[str, Any]
    reports: list[ReportResult]
    # tenant_slo_health and sla_credit over the hand fixture
    # (sql/reports/tenant_reports_test.go), each with its parameters
    hand_params: list[dict[str, Any]]
    hand_reports: list[ReportResult]


def load_dump(path: Path) -> Dump:
    """Reads the dump; a missing or incomplete file raises with what to run."""
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no dump of the 18.16 results; run the Go part first "
            "(FUSEBOX_SQLCHECK_DUMP=... go test ./sql/reports -run TestDumpForCurrentEngine, which scripts/test does)"
        )
    d = json.loads(path.read_text())
    return Dump(
        server=d["server"],
        default_retention_days=int(d["default_retention_days"]),
        migrations=[
            Migration(m["version"], m["name"], m["min_server"], m["applied_here"], list(m["statements"]))
            for m in d["migrations"]
        ],
        tables={k: Table(list(v["columns"]), v["rows"]) for k, v in d["tables"].items()},
        order=list(d["order"]),
        params=dict(d["params"]),
        reports=[ReportResult(r["name"], r["sql"], r["columns"], r["types"], r["rows"]) for r in d["reports"]],
        hand_params=[dict(p) for p in d["hand_params"]],
        hand_reports=[ReportResult(r["name"], r["sql"], r["columns"], r["types"], r["rows"]) for r in d["hand_reports"]],
    )
