"""A pipeline run plans from at most one ledger row per module (``StateStore.module_marks``),
not from its whole ledger: a property test against the full read on a real SQLite store."""
from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkmark.lifecycle.pipeline.windows import ledger_run
from sparkmark.planning.windows import module_start
from sparkmark.state.schema import runs as runs_table
from sparkmark.state.store import open_store
from sparkmark.core.status import RunStatus

_ids = itertools.count()
STATUSES = [s.value for s in RunStatus]
JOBS = ["p.1", "p.2"]
PIPELINES = ["p", "q", None]

row = st.fixed_dictionaries({
    "job_name": st.sampled_from(JOBS),
    "pipeline": st.sampled_from(PIPELINES),
    "run_number": st.integers(1, 4),          # ties on purpose
    "attempt": st.integers(0, 1),
    "status": st.sampled_from(STATUSES + [RunStatus.ROLLED_BACK.value] * 3),  # rollbacks often
    "run_start_ts": st.integers(0, 5),        # ties on purpose
    "from_ts": st.one_of(st.none(), st.integers(0, 50)),
    "until_ts": st.one_of(st.none(), st.integers(0, 50)),
})


def _insert(store, rows):
    full = [dict(r, run_id=f"{next(_ids):032x}", bookmark_option="job-bookmark-enable",
                 start_version=0, snapshot_ts=r["run_start_ts"]) for r in rows]
    with store.tx("seed") as conn:
        conn.execute(runs_table.delete())
        if full:
            conn.execute(runs_table.insert(), full)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
# (job, run number, attempt) is unique in a ledger: a run takes the job's committed count + 1 and
# its failed attempts so far, and a rollback never lowers the count (two rows equal in all of
# job, number, attempt, start and status have no order to pick the "first" from)
@given(rows=st.lists(row, max_size=12,
                     unique_by=lambda r: (r["job_name"], r["run_number"], r["attempt"])))
def test_module_marks_give_module_start_what_the_whole_ledger_gives(tmp_path, rows):
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    _insert(store, rows)
    for pipeline in ("p", None):  # a module's own rows; a taken-over job's rows (any pipeline)
        marks = store.module_marks(JOBS, pipeline=pipeline)
        assert set(marks) == set(JOBS)
        for job in JOBS:
            everything = [ledger_run(r) for r in store.list_runs(job_name=job)
                          if pipeline is None or r["pipeline"] == pipeline]
            assert len(marks[job]) <= 1
            assert module_start([ledger_run(r) for r in marks[job]]) == \
                module_start(everything), (job, pipeline, rows)


def test_module_marks_pick_the_highest_run_number_else_the_earliest_rollback(tmp_path):
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    base = {"job_name": "p.1", "pipeline": "p", "attempt": 0}
    _insert(store, [
        dict(base, run_number=1, status="ROLLED_BACK", run_start_ts=1, from_ts=30, until_ts=40),
        dict(base, run_number=2, status="ROLLED_BACK", run_start_ts=2, from_ts=10, until_ts=20),
        dict(base, run_number=3, status="FAILED", run_start_ts=3, from_ts=5, until_ts=None)])
    assert [r["from_ts"] for r in store.module_marks(["p.1"], pipeline="p")["p.1"]] == [10]
    _insert(store, [
        dict(base, run_number=2, status="SUCCEEDED", run_start_ts=5, from_ts=0, until_ts=20),
        dict(base, run_number=1, status="SUCCEEDED", run_start_ts=9, from_ts=20, until_ts=30),
        dict(base, run_number=2, status="EMPTY", run_start_ts=7, from_ts=0, until_ts=25)])
    got = store.module_marks(["p.1"], pipeline="p")["p.1"]
    assert [(r["run_number"], r["until_ts"]) for r in got] == [(2, 20)]  # first of equals
    assert module_start([ledger_run(r) for r in got]) == 20


def test_module_marks_of_an_unknown_job_are_empty(tmp_path):
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    assert store.module_marks(["nobody"], pipeline="p") == {"nobody": []}
    assert store.module_marks([]) == {}
