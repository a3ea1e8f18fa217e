"""fusebox's migrations and reports on a current ClickHouse engine (chDB)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fusebox_sqlcheck import Engine, Replay, compare_tables, load_dump, replay
from fusebox_sqlcheck.dump import Dump
from fusebox_sqlcheck.engine import bind

ROOT = Path(__file__).resolve().parents[3]
DUMP = Path(os.environ.get("FUSEBOX_SQLCHECK_DUMP", ROOT / ".cache" / "sqlcheck" / "clickhouse-18.16.json"))


@pytest.fixture(scope="module")
def dump() -> Dump:
    return load_dump(DUMP)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return Engine(str(tmp_path_factory.mktemp("chdb")))


# The fixtures are from March 2025; a server with TTL drops rows older
# than the retention on insert, so the comparison runs with a retention that
# keeps them (test_default_ttl_drops_old_rollups shows the default's effect).
KEEP_DAYS = 36500


@pytest.fixture(scope="module")
def result(dump: Dump, engine: Engine) -> Replay:
    return replay(dump, engine, db="fusebox", retention_days=KEEP_DAYS)


def test_default_ttl_drops_old_rollups(dump: Dump, engine: Engine, result: Replay) -> None:
    # 18.16 has no TTL and keeps every rollup; a current server with the
    # default 90-day TTL drops the (older) fixture rollups as they arrive,
    # and the reports over them come back empty. Verdicts have no TTL.
    replay(dump, engine, db="fusebox_default_ttl")
    _, _, rows = engine.rows("SELECT count() FROM fusebox_default_ttl.span_rollups")
    assert rows[0][0] == 0
    _, _, rows = engine.rows("SELECT count() FROM fusebox_default_ttl.verdicts")
    assert rows[0][0] > 0


def test_engine_is_current(result: Replay) -> None:
    major = int(result.version.split(".")[0])
    assert major >= 24, f"chDB runs ClickHouse {result.version}; want 24 or newer"


def test_every_migration_step_runs(dump: Dump, result: Replay) -> None:
    # Every step ran, including those the dump's server (18.16) skipped.
    assert [m.name for m in dump.migrations] == list(result.statements)
    skipped = [m.name for m in dump.migrations if not m.applied_on_dump_server]
    assert skipped, "the dump's server skipped no step: nothing newer-only was exercised"


def test_ttl_branch_took_effect(engine: Engine, result: Replay) -> None:
    _, _, rows = engine.rows("SELECT create_table_query FROM system.tables WHERE database = 'fusebox' AND name = 'span_rollups'")
    ddl = rows[0][0]
    assert re.search(rf"\bTTL minute \+ (toIntervalDay\({KEEP_DAYS}\)|INTERVAL {KEEP_DAYS} DAY)", ddl), f"span_rollups lacks the TTL:\n{ddl}"


def test_rollups_reached_the_view(engine: Engine, dump: Dump, result: Replay) -> None:
    # The materialized view turned the input rows into aggregate states.
    # Every input row was inserted twice (a replay): FINAL keeps one.
    _, _, rows = engine.rows("SELECT count() FROM fusebox.span_rollups FINAL")
    assert rows[0][0] * 2 == len(dump.tables["span_rollups_input"].rows)


@pytest.mark.parametrize(
    "name",
    [
        "tail_p999_hourly",
        "slo_compliance_daily",
        "error_budget",
        "fuse_timeline",
        "drift_top",
        "correction_rate_by_variant",
        "tenant_slo_health",
        "sla_credit",
    ],
)
def test_report_equals_18_16(dump: Dump, result: Replay, name: str) -> None:
    want = next(r for r in dump.reports if r.name == name)
    cols, _types, rows = result.reports[name]
    diffs = compare_tables(name, cols, rows, want.columns, want.rows)
    assert not diffs, "\n".join(diffs)


# tenant_slo_health and sla_credit over the hand fixture of
# sql/reports/tenant_reports_test.go (its comment lists the rows): the values
# below are computed by hand there, not by either engine, so a wrong formula
# fails here on chDB as it fails the Go test on 18.16.
HAND_HEALTH_COLUMNS = ["tenant", "slo", "step_s", "evaluated_minutes", "minutes_out", "compliance", "budget_minutes",
                       "budget_minutes_left", "budget_remaining", "breach_evaluations", "breach_episodes", "incidents",
                       "fuse_commands"]  # fmt: skip
# objective 0.9
HAND_HEALTH = [
    ["acme", "availability", 60, 1, 1, 0, 0.1, -0.9, -9, 1, 1, 0, 0],
    ["acme", "latency", 60, 9, 4, 5 / 9, 0.9, 0.9 - 4, 1 - 4 / 0.9, 5, 3, 3, 5],
    ["acme", "quality", 300, 60, 10, 10 / 12, 6, -4, 1 - 10 / 6, 2, 1, 1, 1],
    ["beta", "corrections", 60, 4, 1, 0.75, 0.4, -0.6, -1.5, 1, 1, 0, 0],
    ["beta", "latency", 60, 10, 2, 0.8, 1, -1, -1, 2, 1, 1, 1],
]
HAND_CREDIT_COLUMNS = ["tenant", "slo", "step_s", "evaluated_minutes", "minutes_out", "minutes_out_unpriced", "hours_out",
                       "max_overrun_ratio", "credit_uncapped", "credit"]  # fmt: skip
# base 10, exponent 2, no cap: credit = 10 × Σ ratio² × step_s / 3600
HAND_CREDIT = [
    ["acme", "quality", 300, 60, 10, 0, 10 / 60, 1, 10 * (0.5**2 + 1**2) * 300 / 3600, 10 * 1.25 * 300 / 3600],
    ["acme", "latency", 60, 9, 4, 0, 4 / 60, 2, 10 * (0.5**2 + 2**2 + 0.2**2 + 0.1**2) / 60, 10 * 4.3 / 60],
    ["acme", "availability", 60, 1, 1, 0, 1 / 60, 1, 10 / 60, 10 / 60],
    ["beta", "latency", 60, 10, 2, 0, 2 / 60, 0.5, 10 * 0.5 / 60, 10 * 0.5 / 60],
    ["beta", "corrections", 60, 4, 1, 1, 1 / 60, 0, 0, 0],
]
# base 10, exponent 1, cap 0.4
HAND_CREDIT_LINEAR_CAPPED = [
    ["acme", "latency", 60, 9, 4, 0, 4 / 60, 2, 10 * (0.5 + 2 + 0.2 + 0.1) / 60, 0.4],
    ["acme", "quality", 300, 60, 10, 0, 10 / 60, 1, 10 * 1.5 * 300 / 3600, 0.4],
    ["acme", "availability", 60, 1, 1, 0, 1 / 60, 1, 10 / 60, 10 / 60],
    ["beta", "latency", 60, 10, 2, 0, 2 / 60, 0.5, 10 / 60, 10 / 60],
    ["beta", "corrections", 60, 4, 1, 1, 1 / 60, 0, 0, 0],
]


def _hand_expected(name: str, params: dict[str, object]) -> tuple[list[str], list[list[object]]]:
    if name == "tenant_slo_health":
        assert params["objective"] == 0.9
        return HAND_HEALTH_COLUMNS, HAND_HEALTH
    assert (params["credit_base"], params["credit_cap"]) in ((10, 0), (10, 0.4))
    if params["credit_exponent"] == 2:
        return HAND_CREDIT_COLUMNS, HAND_CREDIT
    assert params["credit_exponent"] == 1 and params["credit_cap"] == 0.4
    return HAND_CREDIT_COLUMNS, HAND_CREDIT_LINEAR_CAPPED


def test_tenant_reports_hand_computed(dump: Dump, engine: Engine, result: Replay) -> None:
    engine.execute("USE fusebox")
    assert {r.name for r in dump.hand_reports} == {"tenant_slo_health", "sla_credit"}
    assert len(dump.hand_reports) == 4
    for params, rep in zip(dump.hand_params, dump.hand_reports):
        cols, _types, rows = engine.rows(bind(rep.sql, params))
        # equal to 18.16's result ...
        diffs = compare_tables(f"{rep.name} vs 18.16", cols, rows, rep.columns, rep.rows)
        # ... and to the values computed by hand
        want_cols, want = _hand_expected(rep.name, params)
        diffs += compare_tables(f"{rep.name} by hand", cols, rows, want_cols, want)
        assert not diffs, "\n".join(diffs)


# The Grafana dashboard (deploy/grafana/fusebox.json) on the current engine
# — the ClickHouse release docker-compose runs it against. deploy's Go test
# TestGrafanaDashboardQueries runs the same queries on 18.16 and checks
# their columns and values; here each must run, return rows for the report
# fixtures and give finite numbers, a time series leading with a DateTime.
DASHBOARD = ROOT / "deploy" / "grafana" / "fusebox.json"
_TIME_FILTER = re.compile(r"\$__timeFilter\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand_grafana(sql: str, frm: int, to: int, interval_s: int, variables: dict[str, str]) -> str:
    """The data source plugin's macros (v4, pkg/macros) and Grafana's variables, as in deploy/grafana_test.go."""
    sql = _TIME_FILTER.sub(lambda m: f"{m[1]} >= toDateTime({frm}) AND {m[1]} <= toDateTime({to})", sql)
    sql = sql.replace("$__fromTime", f"toDateTime({frm})").replace("$__toTime", f"toDateTime({to})")
    sql = sql.replace("$__interval_s", str(max(interval_s, 1)))
    assert "$__" not in sql, f"macro not known to the test in:\n{sql}"
    return _VAR.sub(lambda m: variables[m[1] or m[2]], sql)


def _dashboard_queries() -> list[tuple[str, str, bool]]:
    import json

    d = json.loads(DASHBOARD.read_text())
    out = [(f"${v['name']}", v["query"], False) for v in d["templating"]["list"] if v["type"] == "query"]
    for p in d["panels"]:
        for q in p["targets"]:
            out.append((f"{p['title']} {q['refId']}", q["rawSql"], q["queryType"] == "timeSeries"))
    return out


def test_grafana_dashboard_queries(dump: Dump, engine: Engine, result: Replay) -> None:
    import json
    import math

    engine.execute("USE fusebox")
    frm, to = int(dump.params["from"]), int(dump.params["to"])
    d = json.loads(DASHBOARD.read_text())
    variables: dict[str, str] = {}
    for v in d["templating"]["list"]:
        if v["type"] == "custom":
            variables[v["name"]] = v["current"]["value"]
        else:
            _, _, rows = engine.rows(expand_grafana(v["query"], frm, to, 3600, variables))
            assert rows, f"variable {v['name']}: no values"
            variables[v["name"]] = str(rows[0][0])
    queries = _dashboard_queries()
    assert len(queries) >= 10
    for name, raw, timeseries in queries:
        sql = expand_grafana(raw, frm, to, 3600, variables)
        cols, types, rows = engine.rows(sql)
        assert rows, f"{name}: no rows on {result.version}\n{sql}"
        for row in rows:
            for c, v in zip(cols, row):
                assert not (isinstance(v, float) and not math.isfinite(v)), f"{name}: {c} = {v} in {row}"
        if timeseries:
            assert cols[0] == "time" and types[0].startswith("DateTime"), f"{name}: first column {cols[0]} {types[0]}"
