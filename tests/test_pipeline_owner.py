"""A pipeline run finds each target's owner from the target's first committed write and one
look-up per hand-off (``sm_runs.target_key`` / ``take_over_from``, schema 5), not by parsing
the config of every run: the answers equal the full scan's over random ledgers, on a real
SQLite file and a real PostgreSQL database; an upgraded store answers the same; and the
queries a run plans with are index searches, never a scan of the ledger."""
from __future__ import annotations

import itertools
import json

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkmark.core.status import RunStatus
from sparkmark.lifecycle.pipeline.windows import target_owner_in
from sparkmark.planning.windows import (PROGRESS_STATUSES, TargetWrite, normalize_target,
                                        target_owner)
from sparkmark.state.schema import SCHEMA_VERSION, pipeline_write
from sparkmark.state.schema import runs as runs_table
from sparkmark.state.store import open_store

_ids = itertools.count()
JOBS = ["p.1", "p.2", "p.3"]
TARGETS = ["/t", "/t/", "file:/t", "/u"]

write = st.fixed_dictionaries({
    "job_name": st.sampled_from(JOBS),
    "pipeline": st.sampled_from(["p", "p", "p", "q", None]),   # None: a plain job's run
    "run_number": st.integers(1, 6),
    "attempt": st.integers(0, 1),
    "status": st.sampled_from([s.value for s in RunStatus] + ["SUCCEEDED"] * 3),
    "run_start_ts": st.integers(0, 4),        # ties on purpose, between jobs too
    "target": st.sampled_from(TARGETS),
    "take_over_from": st.sampled_from([None, None, "p.1", "p.2", "p.3"]),
})


def _row(w: dict) -> dict:
    """A ledger row as a pipeline module run writes it (config, and the columns begin_run
    fills from the same values); a plain job's run has neither."""
    config = None if w["pipeline"] is None else json.dumps({"pipeline": {
        "name": w["pipeline"], "target": w["target"], "take_over_from": w["take_over_from"]}})
    key, tof = pipeline_write(config)
    return {"run_id": f"{next(_ids):032x}", "job_name": w["job_name"],
            "pipeline": w["pipeline"], "run_number": w["run_number"], "attempt": w["attempt"],
            "status": w["status"], "run_start_ts": w["run_start_ts"],
            "bookmark_option": "job-bookmark-enable", "start_version": 0,
            "snapshot_ts": w["run_start_ts"], "config": config, "target_key": key,
            "take_over_from": tof}


def _insert(store, rows) -> None:
    with store.tx("seed") as conn:
        conn.execute(runs_table.delete())
        if rows:
            conn.execute(runs_table.insert(), rows)


def _full_scan_owner(store, pipeline: str, target: str) -> str | None:
    """The owner as a run found it before schema 5: every committed run of the pipeline read,
    its config parsed, the writes ordered by (start, run number) in the ledger's order."""
    writes = []
    for r in store.list_runs(pipeline=pipeline, statuses=PROGRESS_STATUSES):
        try:
            cfg = json.loads(r.get("config") or "{}").get("pipeline") or {}
        except ValueError:  # a malformed config names no target
            continue
        if cfg.get("target"):
            writes.append(TargetWrite((r["run_start_ts"], r["run_number"]), r["job_name"],
                                      normalize_target(cfg["target"]), cfg.get("take_over_from")))
    return target_owner(writes, target)


# (job, run number) is unique among a job's committed runs (each commit counts one up, a
# rollback never lowers the count); rows equal in start, number and job have no order to keep
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ws=st.lists(write, max_size=14,
                   unique_by=lambda w: (w["job_name"], w["run_number"])))
def test_the_owner_from_hand_offs_is_the_full_scans_owner(state_url, ws):
    store = open_store(state_url)
    _insert(store, [_row(w) for w in ws])
    for pipeline in ("p", "q"):
        for target in ("/t", "/u", "/v"):
            assert target_owner_in(store, pipeline, target) == \
                _full_scan_owner(store, pipeline, target), (pipeline, target, ws)


def test_rollbacks_and_take_overs_hand_the_target_on_and_back(sqlite_url):
    """p.1 writes, p.2 takes over, p.3 takes over from p.2; rolling back p.3's runs gives the
    target back to p.2, rolling back p.2's too gives it back to p.1 (the ledger rows as
    ``rollback_runs`` marks them)."""
    store = open_store(sqlite_url)
    rows = [_row({"job_name": j, "pipeline": "p", "run_number": n, "attempt": 0,
                  "status": "SUCCEEDED", "run_start_ts": t, "target": "/t",
                  "take_over_from": tof})
            for j, n, t, tof in [("p.1", 1, 1, None), ("p.1", 2, 2, None), ("p.2", 1, 3, "p.1"),
                                 ("p.2", 2, 4, "p.1"), ("p.3", 1, 5, "p.2"), ("p.1", 3, 6, None)]]
    _insert(store, rows)
    assert target_owner_in(store, "p", "/t") == "p.3"   # p.1's last run took nothing back

    def roll_back(job):
        with store.tx("rollback") as conn:
            conn.execute(runs_table.update().where(runs_table.c.job_name == job).values(
                status=RunStatus.ROLLED_BACK))
    roll_back("p.3")
    assert target_owner_in(store, "p", "/t") == "p.2" == _full_scan_owner(store, "p", "/t")
    roll_back("p.2")
    assert target_owner_in(store, "p", "/t") == "p.1" == _full_scan_owner(store, "p", "/t")
    roll_back("p.1")
    assert target_owner_in(store, "p", "/t") is None


def test_a_schema_4_store_gets_the_columns_filled_from_its_configs(state_url):
    """The upgrade to schema 5 adds target_key and take_over_from to every pipeline run from
    its config (a malformed config is skipped), and the owner read afterwards is the full
    scan's."""
    from sparkmark.state import store_base
    store = open_store(state_url)
    rows = [_row({"job_name": j, "pipeline": "p", "run_number": n, "attempt": 0,
                  "status": s, "run_start_ts": n, "target": "/t", "take_over_from": tof})
            for j, n, s, tof in [("p.1", 1, "SUCCEEDED", None), ("p.2", 2, "FAILED", "p.1"),
                                 ("p.2", 3, "EMPTY", "p.1"), ("p.3", 4, "SUCCEEDED", None)]]
    rows.append(dict(_row({"job_name": "p.3", "pipeline": "p", "run_number": 5, "attempt": 0,
                           "status": "SUCCEEDED", "run_start_ts": 0, "target": "/t",
                           "take_over_from": None}), config="not json"))
    _insert(store, rows)
    with store.tx("back to schema 4") as conn:  # what sparkmark with schema 4 left
        for ix in ("ix_sm_runs_target", "ix_sm_runs_takeover", "ix_sm_runs_status"):
            conn.exec_driver_sql(f"DROP INDEX {ix}")
        for column in ("target_key", "take_over_from"):
            conn.exec_driver_sql(f"ALTER TABLE sm_runs DROP COLUMN {column}")
        conn.exec_driver_sql("CREATE INDEX ix_sm_runs_status ON sm_runs (job_name, status)")
        conn.exec_driver_sql("UPDATE sm_meta SET value = '4' WHERE key = 'schema_version'")
    store_base._ENGINES.clear()  # a new process: the upgrade runs on first use
    again = open_store(state_url)
    with again.tx("check") as conn:
        assert conn.exec_driver_sql("SELECT value FROM sm_meta WHERE key = 'schema_version'"
                                    ).scalar() == str(SCHEMA_VERSION) == "5"
        got = {r.run_number: (r.target_key, r.take_over_from) for r in conn.execute(
            sa.select(runs_table.c.run_number, runs_table.c.target_key,
                      runs_table.c.take_over_from))}
        indexes = {ix["name"]: ix["column_names"] for ix in sa.inspect(conn).get_indexes(
            "sm_runs")}
    assert got == {r["run_number"]: (r["target_key"], r["take_over_from"]) for r in rows[:4]} \
        | {5: (None, None)}
    assert indexes["ix_sm_runs_status"][:2] == ["job_name", "status"]
    assert {"ix_sm_runs_target", "ix_sm_runs_takeover"} <= set(indexes)
    assert target_owner_in(again, "p", "/t") == "p.2" == _full_scan_owner(again, "p", "/t")


def test_planning_queries_are_index_searches_whatever_the_history(tmp_path):
    """Every statement a run's planning and ownership check send (module marks, a taken-over
    job's marks, the target's first write and hand-offs, the removals left) is an index search
    on SQLite: no scan of sm_runs and no sort of its rows."""
    from sqlalchemy import event

    from sparkmark.lifecycle.pipeline.declaring import Module
    from sparkmark.lifecycle.pipeline.windows import check_ownership, module_progress
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    rows = [dict(_row({"job_name": f"p.{m}", "pipeline": "p", "run_number": n, "attempt": 0,
                       "status": "SUCCEEDED" if n % 7 else "ROLLED_BACK", "run_start_ts": n,
                       "target": f"/t{m}", "take_over_from": None}),
                 from_ts=n * 10, until_ts=n * 10 + 10)
            for m in (1, 2) for n in range(1, 200)]
    _insert(store, rows)
    modules = {1: Module(1, "a", "bronze", "/t1", (), "parquet", lambda ctx: None),
               2: Module(2, "b", "bronze", "/t2", (1,), "parquet", lambda ctx: None,
                         take_over_from="p.1")}
    sent: list[tuple[str, tuple]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if "sm_runs" in statement:
            sent.append((statement, parameters))
    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        module_progress(store, "p", modules)
        check_ownership(store, "p", {1: modules[1]}, [1])
        store.removals_left("p")
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    assert len(sent) >= 6, sent
    with store.engine.connect() as conn:
        for statement, parameters in sent:
            plan = [r[-1] for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement,
                                                        parameters)]
            assert not any(p.startswith("SCAN sm_runs") or "TEMP B-TREE" in p and
                           "RIGHT PART" not in p for p in plan), (statement, plan)
            assert any(p.startswith("SEARCH sm_runs USING") for p in plan), (statement, plan)


@pytest.mark.parametrize("n", [1, 3])
def test_removals_left_are_the_rolled_back_runs_still_removing(sqlite_url, n):
    """Only rows of the pipeline's jobs that are ROLLED_BACK and still ``removing``."""
    store = open_store(sqlite_url)
    from sparkmark import Job
    for job in ("p.1", "p.2", "pq.1"):
        Job(None, state=sqlite_url).init(job, {"job_bookmark_option":
                                              "job-bookmark-enable"}).commit()
    rows = []
    for i in range(n):
        for job, pipeline, status, publish in [
                ("p.1", "p", "ROLLED_BACK", "removing"), ("p.1", "p", "ROLLED_BACK", "removed"),
                ("p.2", "p", "SUCCEEDED", "removing"), ("pq.1", "pq", "ROLLED_BACK", "removing"),
                ("p.2", "p", "ROLLED_BACK", "removing")]:
            rows.append(dict(_row({"job_name": job, "pipeline": pipeline, "run_number": 10 + i,
                                   "attempt": 0, "status": status, "run_start_ts": i,
                                   "target": "/t", "take_over_from": None}),
                             publish_state=publish))
    with store.tx("seed") as conn:
        conn.execute(runs_table.insert(), rows)
    got = store.removals_left("p")
    assert [(r["job_name"], r["status"], r["publish_state"]) for r in got] == \
        [(j, "ROLLED_BACK", "removing") for _ in range(n) for j in ("p.1", "p.2")]
