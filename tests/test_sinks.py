"""Exactly-once file sinks: stamping, staging invisible to readers, publish, recovery, errors."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError, SinkError
from sparkmark.core.options import ENABLE

EN = {"job_bookmark_option": ENABLE}


@pytest.fixture(scope="module")
def spark(any_spark):
    """Every test here runs on a classic session and over Spark Connect."""
    return any_spark


def data_files(target) -> list[str]:
    out = []
    for root, dirs, files in os.walk(target):
        dirs[:] = [d for d in dirs if not d.startswith("_")]
        out += [os.path.join(root, f) for f in files if not f.startswith((".", "_"))]
    return sorted(out)


def test_rows_are_stamped_counted_and_published_only_at_commit(spark, sqlite_url, clock,
                                                              tmp_path):
    target = str(tmp_path / "out")
    job = Job(spark, state=sqlite_url, clock=clock).init("s", EN)
    n = job.write(spark.range(25).withColumnRenamed("id", "k"), target, format="parquet",
                  transformation_ctx="sink")
    assert n == 25
    assert data_files(target) == []  # staged only: a reader sees nothing yet
    assert os.path.isdir(os.path.join(target, "_sparkmark_staging", job.run_id))
    job.commit()
    files = data_files(target)
    assert files and all(Path(f).name.startswith(f"sm-{job.run_id}-") for f in files)
    assert not os.path.exists(os.path.join(target, "_sparkmark_staging"))
    df = spark.read.parquet(target)
    assert df.count() == 25
    rows = df.select("sm_run_id", "sm_snapshot_ts").distinct().collect()
    assert len(rows) == 1 and rows[0].sm_run_id == job.run_id
    assert int(rows[0].sm_snapshot_ts.timestamp() * 1000) == clock.now
    led = job.store.get_run(job.run_id)
    assert led["records_written"] == 25 and led["publish_state"] == "done"


@pytest.mark.parametrize("fmt", ["parquet", "orc", "json", "csv"])
def test_formats_and_partitions(spark, sqlite_url, clock, tmp_path, fmt):
    target = str(tmp_path / fmt)
    df = spark.createDataFrame([(i, f"d{i % 3}") for i in range(9)], "k INT, day STRING")
    job = Job(spark, state=sqlite_url, clock=clock).init("f", EN)
    job.write(df, target, format=fmt, transformation_ctx="sink", partition_by=["day"],
              options={"header": "true"} if fmt == "csv" else None)
    job.commit()
    assert sorted(os.listdir(target)) == ["day=d0", "day=d1", "day=d2"]
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true")
    back = reader.load(target)
    assert sorted(r.k for r in back.select("k").collect()) == [str(i) if fmt == "csv" else i
                                                                for i in range(9)] or \
        sorted(int(r.k) for r in back.select("k").collect()) == list(range(9))
    assert {r.day for r in back.select("day").collect()} == {"d0", "d1", "d2"}


def test_failed_run_leaves_no_output(spark, sqlite_url, clock, tmp_path):
    target = str(tmp_path / "out")
    with pytest.raises(RuntimeError):
        with Job(spark, state=sqlite_url, clock=clock).run("s", EN) as job:
            job.write(spark.range(5), target, transformation_ctx="sink")
            raise RuntimeError("transform blew up after the write")
    assert data_files(target) == []
    assert not os.path.exists(os.path.join(target, "_sparkmark_staging"))
    assert job.store.get_run(job.run_id)["status"] == "FAILED"


def test_crash_after_state_commit_is_rolled_forward(spark, sqlite_url, clock, tmp_path):
    """The process dies between the state commit and the publish: the next init publishes."""
    target = str(tmp_path / "out")
    job = Job(spark, state=sqlite_url, clock=clock).init("s", EN)
    job.write(spark.range(7), target, transformation_ctx="sink")
    # exactly the state-store half of job.commit(), then "crash" (no publish)
    job.store.commit_run("s", job.run_id, start_version=job.start_version, new_state={},
                         status="SUCCEEDED", now=clock(),
                         fields={"outputs": job.store.get_run(job.run_id)["outputs"],
                                 "publish_state": "pending", "records_written": 7})
    assert data_files(target) == []
    nxt = Job(spark, state=sqlite_url, clock=clock).init("s", EN)
    assert spark.read.parquet(target).count() == 7  # rolled forward at init
    assert nxt.store.get_run(job.run_id)["publish_state"] == "done"
    nxt.commit()


def test_abandoned_run_output_is_removed_by_the_next_run(spark, sqlite_url, clock, tmp_path):
    """A run that staged output and vanished (lease expired) never publishes it."""
    target = str(tmp_path / "out")
    job = Job(spark, state=sqlite_url, clock=clock, lease_ms=1000).init("s", EN)
    job.write(spark.range(3), target, transformation_ctx="sink")
    job._heartbeat.stop()
    from sparkmark.state.schema import jobs
    with job.store.tx() as conn:  # as if it ran on a host that is gone
        conn.execute(jobs.update().values(lease_host="gone-host"))
    clock.advance(5000)
    nxt = Job(spark, state=sqlite_url, clock=clock).init("s", EN)
    assert not os.path.exists(os.path.join(target, "_sparkmark_staging"))
    nxt.write(spark.range(3, 5), target, transformation_ctx="sink")
    nxt.commit()
    assert sorted(r.id for r in spark.read.parquet(target).collect()) == [3, 4]
    runs = {r["run_id"]: r for r in nxt.store.list_runs(job_name="s")}
    assert runs[job.run_id]["status"] == "FAILED"
    assert runs[job.run_id]["publish_state"] == "discarded"


def test_a_zombie_runs_late_staging_is_swept_by_the_next_publish(spark, sqlite_url, clock,
                                                                tmp_path):
    """A run stalled past its lease can go on writing after a takeover discarded its staging
    (then die before its commit, which the lease check refuses): the next publish to the
    target sweeps the staging of runs the ledger discarded, and only theirs."""
    target = str(tmp_path / "out")
    zombie = Job(spark, state=sqlite_url, clock=clock, lease_ms=1000).init("z", EN)
    zombie.write(spark.range(3), target, transformation_ctx="sink")
    zombie._heartbeat.stop()
    from sparkmark.state.schema import jobs
    with zombie.store.tx() as conn:
        conn.execute(jobs.update().values(lease_host="gone-host"))
    clock.advance(5000)
    nxt = Job(spark, state=sqlite_url, clock=clock).init("z", EN)  # discards the staging
    staging = os.path.join(target, "_sparkmark_staging")
    assert not os.path.exists(staging)
    # the zombie's tasks still running write into its folder; a folder no run of this ledger
    # knows (another state store's run) must stay
    spark.range(7, 9).write.parquet(os.path.join(staging, zombie.run_id, "0"))
    spark.range(1).write.parquet(os.path.join(staging, "not-a-run-of-this-ledger", "0"))
    nxt.write(spark.range(3, 5), target, transformation_ctx="sink")
    nxt.commit()
    assert sorted(os.listdir(staging)) == ["not-a-run-of-this-ledger"]
    assert sorted(r.id for r in spark.read.parquet(target).collect()) == [3, 4]


def test_bad_targets_are_clear_errors_and_change_nothing(spark, sqlite_url, clock, tmp_path):
    Job(spark, state=sqlite_url, clock=clock).init("s", EN).commit()
    before = Bookmarks(sqlite_url).get("s")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    existing = str(tmp_path / "typed")
    first = Job(spark, state=sqlite_url, clock=clock).init("typed", EN)
    first.write(spark.range(3), existing, transformation_ctx="sink")
    first.commit()

    cases = [
        (str(a_file), {}, SinkError, "is a file"),
        (existing, {"df": spark.range(2).selectExpr("cast(id as string) as id")}, SinkError,
         "incompatible schema"),
        ("/proc/sparkmark-cannot-write-here/out", {}, SinkError, "cannot write to target"),
        (str(tmp_path / "x"), {"format": "avro"}, ConfigError, "unknown sink format"),
        (str(tmp_path / "x"), {"mode": "overwrite"}, ConfigError, "not supported"),
        (str(tmp_path / "x"), {"partition_by": ["nope"]}, ConfigError, "not in the DataFrame"),
    ]
    for target, kw, err, needle in cases:
        job = Job(spark, state=sqlite_url, clock=clock).init("s", EN)
        df = kw.pop("df", spark.range(2))
        with pytest.raises(err, match=needle):
            job.write(df, target, **{"transformation_ctx": "sink", **kw})
        job.fail("bad target")
        assert Bookmarks(sqlite_url).get("s")["Version"] == before["Version"]
    assert a_file.read_text() == "x"
    assert spark.read.parquet(existing).count() == 3
    assert not os.path.exists(os.path.join(existing, "_sparkmark_staging"))
