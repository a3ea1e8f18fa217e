"""fusebox's migrations and reports on a current ClickHouse engine (chDB)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fusebox_sqlcheck import Engine, Replay, compare_tables, load_dump, replay
from fusebox_sqlcheck.dump import Dump

ROOT = Path(__file__).resolve().parents[2]
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


@pytest.mark.parametrize("name", ["tail_p999_hourly", "slo_compliance_daily", "error_budget", "fuse_timeline", "drift_top", "correction_rate_by_variant"])
def test_report_equals_18_16(dump: Dump, result: Replay, name: str) -> None:
    want = next(r for r in dump.reports if r.name == name)
    cols, _types, rows = result.reports[name]
    diffs = compare_tables(name, cols, rows, want.columns, want.rows)
    assert not diffs, "\n".join(diffs)
