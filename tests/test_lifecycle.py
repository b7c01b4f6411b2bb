"""Job lifecycle on both real state stores: numbers, modes, failures, version checks."""
from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from sparkmark.core.run import ReadMode
from sparkmark import Bookmarks, Job
from sparkmark.core.errors import (BookmarkConflictError, ConfigError, JobStateError,
                              StateCorruptError, UnknownJobError, UnknownRunError)
from sparkmark.core.options import DISABLE, ENABLE, PAUSE

EN = {"job_bookmark_option": ENABLE}


def _run(url, clock, args=EN, elements=None, fail=False, name="orders"):
    """One run that uses the given contexts: {ctx: element-to-stage}."""
    job = Job(None, state=url, clock=clock)
    job.init(name, args)
    seen = {}
    for ctx, element in (elements or {}).items():
        seen[ctx] = job.bookmark(ctx)
        job.record_read(ctx, element, {"new_input": True})
    if fail:
        job.fail(RuntimeError("boom in transform"))
    else:
        job.commit()
    clock.advance(60_000)
    return job, seen


def _ledger(url, name="orders"):
    return Job(None, state=url).store.list_runs(job_name=name)


def test_numbers_across_success_failure_retry(state_url, clock):
    job1, seen = _run(state_url, clock, elements={"src": {"high": 1}})
    assert seen["src"].previous is None and seen["src"].save
    e = Bookmarks(state_url).get("orders")
    assert (e["Version"], e["Run"], e["Attempt"], e["RunId"]) == (1, 1, 0, job1.run_id)
    assert e["JobBookmark"] == {"src": {"high": 1}}

    job2, seen = _run(state_url, clock, elements={"src": {"high": 2}}, fail=True)
    assert seen["src"].previous == {"high": 1}
    assert (job2.run_number, job2.attempt) == (2, 0)
    e = Bookmarks(state_url).get("orders")
    assert (e["Version"], e["Run"], e["Attempt"]) == (1, 1, 1)  # failed: state untouched
    assert e["JobBookmark"] == {"src": {"high": 1}}

    job3, seen = _run(state_url, clock, elements={"src": {"high": 3}})
    assert seen["src"].previous == {"high": 1}  # the failed run's input is read again
    assert (job3.run_number, job3.attempt) == (2, 1)
    e = Bookmarks(state_url).get("orders")
    # the seed: the attempt number "is only incremented when there is a run after a failed
    # attempt": the committed retry is Run 2, Attempt 1 (issue 16, case 13)
    assert (e["Version"], e["Run"], e["Attempt"], e["PreviousRunId"]) == (2, 2, 1, job1.run_id)

    job4, seen = _run(state_url, clock, elements={"src": {"high": 4}})
    assert (job4.run_number, job4.attempt) == (3, 0)
    e = Bookmarks(state_url).get("orders")
    assert (e["Version"], e["Run"], e["Attempt"]) == (3, 3, 0)  # a clean run: back to 0
    rows = _ledger(state_url)[:3]
    assert [r["status"] for r in rows] == ["SUCCEEDED", "FAILED", "SUCCEEDED"]
    assert [(r["run_number"], r["attempt"]) for r in rows] == [(1, 0), (2, 0), (2, 1)]
    assert "RuntimeError: boom in transform" in rows[1]["error"]
    assert rows[0]["end_version"] == 1 and rows[1]["end_version"] is None


def test_unused_context_keeps_its_element(state_url, clock):
    _run(state_url, clock, elements={"a": {"x": 1}, "b": {"y": 1}})
    _run(state_url, clock, elements={"a": {"x": 2}})
    assert Bookmarks(state_url).get("orders")["JobBookmark"] == {"a": {"x": 2}, "b": {"y": 1}}


def test_disable_reads_everything_and_writes_no_state(state_url, clock):
    _run(state_url, clock, elements={"src": {"high": 1}})
    _, seen = _run(state_url, clock, args={"job_bookmark_option": DISABLE},
                   elements={"src": {"high": 9}})
    assert seen["src"].mode is ReadMode.ALL and seen["src"].previous is None
    e = Bookmarks(state_url).get("orders")
    assert e["Version"] == 1 and e["JobBookmark"] == {"src": {"high": 1}}
    assert _ledger(state_url)[-1]["bookmark_option"] == DISABLE


def _off_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "sparkmark.lifecycle.job" and r.levelname == "WARNING"
            and "bookmarks disabled" in r.getMessage()]


@pytest.mark.parametrize("args", [None, {}, {"job_bookmark_option": DISABLE},
                                  ["--job-bookmark-option", "job-bookmark-disable"]])
def test_a_bookmarked_read_with_bookmarks_off_warns_once_per_run(sqlite_url, clock, caplog, args):
    caplog.set_level("WARNING", logger="sparkmark.lifecycle.job")
    job = Job(None, state=sqlite_url, clock=clock).init("orders", args)
    assert _off_warnings(caplog) == []  # nothing read yet
    job.bookmark(None)  # a read without transformation_ctx reads everything on purpose
    assert _off_warnings(caplog) == []
    for ctx in ("src", "emp", "more"):  # however many reads: once
        assert job.bookmark(ctx).mode is ReadMode.ALL
        job.record_read(ctx, {"high": 1}, {"new_input": True})
    job.commit()
    [text] = _off_warnings(caplog)
    assert "job 'orders' reads transformation_ctx 'src' with bookmarks disabled" in text
    assert "every run of this job re-reads all of its input" in text
    assert "--job-bookmark-option job-bookmark-enable" in text
    assert "'job_bookmark_option': 'job-bookmark-enable'" in text
    # the next run warns again (once)
    job.init("orders", args)
    job.bookmark("src")
    job.bookmark("emp")
    job.commit()
    assert len(_off_warnings(caplog)) == 2


@pytest.mark.parametrize("option", [ENABLE, PAUSE])
def test_bookmarks_on_or_paused_do_not_warn(sqlite_url, clock, caplog, option):
    caplog.set_level("WARNING", logger="sparkmark.lifecycle.job")
    _run(sqlite_url, clock, elements={"src": {"high": 1}})
    _run(sqlite_url, clock, args={"job_bookmark_option": option}, elements={"src": {"high": 2}})
    assert _off_warnings(caplog) == []


def test_pause_reads_since_last_state_without_saving(state_url, clock):
    _run(state_url, clock, elements={"src": {"high": 1}})
    _, seen = _run(state_url, clock, args={"job_bookmark_option": PAUSE},
                   elements={"src": {"high": 2}})
    assert seen["src"].previous == {"high": 1} and seen["src"].upper is None
    assert seen["src"].mode is ReadMode.INCREMENTAL and not seen["src"].save
    assert Bookmarks(state_url).get("orders")["JobBookmark"] == {"src": {"high": 1}}


def test_pause_from_to_hands_both_elements(state_url, clock):
    r1, _ = _run(state_url, clock, elements={"src": {"high": 1}})
    _run(state_url, clock, elements={"src": {"high": 2}})
    r3, _ = _run(state_url, clock, elements={"src": {"high": 3}})
    _, seen = _run(state_url, clock, args={"job_bookmark_option": PAUSE,
                                           "job_bookmark_from": r1.run_id,
                                           "job_bookmark_to": r3.run_id},
                   elements={"src": {"high": 99}})
    assert seen["src"].previous == {"high": 1} and seen["src"].upper == {"high": 3}
    assert seen["src"].mode is ReadMode.REPLAY
    assert Bookmarks(state_url).get("orders")["Version"] == 3


def test_pause_with_unknown_or_reversed_runs_changes_nothing(state_url, clock):
    r1, _ = _run(state_url, clock, elements={"src": {"high": 1}})
    r2, _ = _run(state_url, clock, elements={"src": {"high": 2}})
    before = _ledger(state_url)
    job = Job(None, state=state_url, clock=clock)
    with pytest.raises(UnknownRunError, match="no such run of this job"):
        job.init("orders", {"job_bookmark_option": PAUSE, "job_bookmark_from": r1.run_id,
                            "job_bookmark_to": "nope"})
    with pytest.raises(ConfigError, match="committed before"):
        job.init("orders", {"job_bookmark_option": PAUSE, "job_bookmark_from": r2.run_id,
                            "job_bookmark_to": r1.run_id})
    with pytest.raises(UnknownJobError):
        job.init("never-ran", {"job_bookmark_option": PAUSE, "job_bookmark_from": "a",
                               "job_bookmark_to": "b"})
    with pytest.raises(ConfigError, match="unknown --job-bookmark-option"):
        job.init("orders", {"job_bookmark_option": "job-bookmark-sometimes"})
    assert _ledger(state_url) == before
    assert Bookmarks(state_url).get("orders")["Version"] == 2


def test_run_context_manager_commits_or_records_failure(state_url, clock):
    with Job(None, state=state_url, clock=clock).run("cm", EN) as job:
        job.bookmark("src")
        job.record_read("src", {"n": 1}, {"new_input": True})
    with pytest.raises(ZeroDivisionError):
        with Job(None, state=state_url, clock=clock).run("cm", EN) as job:
            job.bookmark("src")
            job.record_read("src", {"n": 2}, {"new_input": True})
            raise ZeroDivisionError("boom")
    rows = _ledger(state_url, "cm")
    assert [r["status"] for r in rows] == ["SUCCEEDED", "FAILED"]
    assert "ZeroDivisionError" in rows[1]["error"]
    assert Bookmarks(state_url).get("cm")["JobBookmark"] == {"src": {"n": 1}}


def test_empty_status_when_no_source_found_new_input(state_url, clock):
    job = Job(None, state=state_url, clock=clock).init("quiet", EN)
    job.bookmark("src")
    job.record_read("src", {"n": 1}, {"new_input": False})
    job.commit()
    assert _ledger(state_url, "quiet")[-1]["status"] == "EMPTY"


def test_wrong_order_and_bad_contexts(state_url, clock):
    job = Job(None, state=state_url, clock=clock)
    with pytest.raises(JobStateError, match="call job.init"):
        job.commit()
    with pytest.raises(ConfigError, match="job name is required"):
        job.init(None, EN)
    job.init("o", EN)
    with pytest.raises(JobStateError, match="already has run"):
        job.init("o", EN)
    job.bookmark("src")
    job.record_read("src", {"n": 1}, {"new_input": True})
    with pytest.raises(ConfigError, match="used twice"):
        job.bookmark("src")
    job.commit()
    with pytest.raises(JobStateError):
        job.commit()


def test_commit_checks_the_version_it_started_from(state_url, clock):
    _run(state_url, clock, elements={"src": {"high": 1}})
    job = Job(None, state=state_url, clock=clock).init("orders", EN)
    job.bookmark("src")
    job.record_read("src", {"high": 2}, {"new_input": True})
    # An operator resets the bookmark while the run is away (its lease looks expired to them).
    Bookmarks(state_url, clock=lambda: clock.now + 10**9).reset("orders")
    with pytest.raises(BookmarkConflictError, match="changed while run"):
        job.commit()
    e = Bookmarks(state_url).get("orders")
    assert e["Version"] == 2 and e["JobBookmark"] == {}  # the reset, not the run's state
    assert _ledger(state_url)[-1]["status"] == "FAILED"


def test_reset_and_rewind_keep_history(state_url, clock):
    r1, _ = _run(state_url, clock, elements={"src": {"high": 1}})
    _run(state_url, clock, elements={"src": {"high": 2}})
    bm = Bookmarks(state_url)
    assert bm.reset("orders", run_id=r1.run_id) == 3
    assert bm.get("orders")["JobBookmark"] == {"src": {"high": 1}}
    _, seen = _run(state_url, clock, elements={"src": {"high": 5}})
    assert seen["src"].previous == {"high": 1}
    assert bm.reset("orders") == 5
    assert bm.get("orders")["JobBookmark"] == {}
    kinds = [h["Kind"] for h in bm.history("orders")]
    assert kinds == ["initial", "commit", "commit", "rewind", "commit", "reset"]
    assert bm.get("orders", run_id=r1.run_id)["JobBookmark"] == {"src": {"high": 1}}
    with pytest.raises(UnknownRunError):
        bm.reset("orders", run_id="0" * 32)
    with pytest.raises(UnknownJobError):
        bm.reset("nobody")
    assert len(bm.history("orders")) == 6  # the failed calls changed nothing


def test_corrupt_state_row_names_job_and_version(state_url, clock):
    _run(state_url, clock, elements={"src": {"high": 1}})
    engine = sa.create_engine(state_url.replace("postgresql+psycopg", "postgresql+psycopg"))
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE sm_bookmark_versions SET state = '{not json' "
                             "WHERE job_name = 'orders' AND version = 1"))
    engine.dispose()
    with pytest.raises(StateCorruptError, match=r"job 'orders' version 1 is corrupt"):
        Bookmarks(state_url).get("orders")
    before = len(_ledger(state_url))
    with pytest.raises(StateCorruptError):
        Job(None, state=state_url, clock=clock).init("orders", EN)
    assert len(_ledger(state_url)) == before  # no ledger row, no lease taken
    assert Bookmarks(state_url).reset("orders") == 2  # and the way out works
    Job(None, state=state_url, clock=clock).init("orders", EN).commit()


def test_a_missing_current_version_names_job_and_version(state_url, clock):
    """The run's start reads the job row and its current version in one statement (issue 26);
    a version row that is gone is still one clear error, and nothing starts."""
    _run(state_url, clock, elements={"src": {"high": 1}})
    engine = sa.create_engine(state_url)
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM sm_bookmark_versions WHERE job_name = 'orders'"))
    engine.dispose()
    before = len(_ledger(state_url))
    with pytest.raises(StateCorruptError, match=r"job 'orders' points at bookmark version 1, "
                                                r"which is missing; reset the bookmark"):
        Job(None, state=state_url, clock=clock).init("orders", EN)
    assert len(_ledger(state_url)) == before  # no ledger row, no lease taken
    assert Bookmarks(state_url).reset("orders") == 2  # and the way out works
    _, seen = _run(state_url, clock, elements={"src": {"high": 2}})
    assert seen["src"].previous is None  # the reset bookmark: read from the start


@pytest.mark.parametrize("table", ["sm_meta", "sm_jobs"])
def test_a_store_emptied_between_runs_is_refused_at_the_start(state_url, clock, table):
    """The store's identity comes with the job row (issue 26): a table of it dropped since this
    process opened the store still stops the next run with the store's message."""
    from sparkmark.core.errors import StateStoreError
    _run(state_url, clock, elements={"src": {"high": 1}})
    job = Job(None, state=state_url, clock=clock)  # opened before the tables were dropped
    with job.store.engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE {table}"))
    with pytest.raises(StateStoreError, match="was emptied or truncated after this run opened"):
        job.init("orders", EN)


def test_every_version_is_kept_as_json(state_url, clock):
    for i in range(5):
        _run(state_url, clock, elements={"src": {"high": i}})
    hist = Bookmarks(state_url).history("orders")
    assert [h["Version"] for h in hist] == list(range(6))
    assert [h["JobBookmark"].get("src") for h in hist[1:]] == [{"high": i} for i in range(5)]
    json.dumps(hist)


def test_the_default_state_file_is_refused_on_a_cluster_mode_driver(spark, sqlite_url, tmp_path,
                                                                    monkeypatch):
    """A cluster-mode driver's working directory is thrown away with its container: the default
    ./.sparkmark/state.db there would make every run a first run.  A real local session whose
    spark.submit.deployMode says cluster (a session of its own: the shared one is untouched)."""
    from sparkmark import Pipeline
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    monkeypatch.chdir(tmp_path)
    session = spark.newSession()
    session.conf.set("spark.sql.legacy.setCommandRejectsSparkCoreConfs", "false")
    session.conf.set("spark.submit.deployMode", "cluster")
    for make in (lambda: Job(session), lambda: Job(session, state=""),
                 lambda: Pipeline("p", session)):
        with pytest.raises(ConfigError) as e:
            make()
        text = str(e.value)
        assert "spark.submit.deployMode=cluster" in text and "every run would be a first" in text
        assert "state=" in text and "env SPARKMARK_STATE" in text
        assert "spark.yarn.appMasterEnv.SPARKMARK_STATE" in text
        assert "spark.kubernetes.driverEnv.SPARKMARK_STATE" in text
    assert not (tmp_path / ".sparkmark").exists()  # nothing was created
    # the ways out: a given state (even a SQLite one), or the env var
    Job(session, state=sqlite_url).init("orders", EN).commit()
    monkeypatch.setenv("SPARKMARK_STATE", sqlite_url)
    Job(session).init("orders", EN).commit()
    assert len(_ledger(sqlite_url)) == 2
    # client mode (and the shared local session) keep the default
    monkeypatch.delenv("SPARKMARK_STATE")
    session.conf.set("spark.submit.deployMode", "client")
    Job(session)
    assert (tmp_path / ".sparkmark" / "state.db").exists()
    Job(spark)
