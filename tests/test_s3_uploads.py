"""The no-copy publish of S3 file targets (``options={"publish": "uploads"}``) on moto's S3
server, with real Spark: Spark's write leaves multipart uploads pending (S3A magic paths and
sparkmark's do-nothing committer), the publish completes them after the state commit.

Exactly once over runs; a plain reader sees nothing of a run before its state commit, nor of
one that failed; a failure between the state commit and the completion (and after it, before
the cleanup) is rolled forward by the next run; no multipart upload is left behind; a rollback
removes a no-copy run's objects; the option refuses what it cannot do with one ConfigError."""
from __future__ import annotations

import json
import time

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError, SinkError

from conftest import FakeClock

EN = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000
UPLOADS = {"publish": "uploads"}


@pytest.fixture(scope="module")
def spark(classic_spark):
    return classic_spark


@pytest.fixture
def now_clock() -> FakeClock:
    return FakeClock(start=int(time.time() * 1000))


def add_batch(s3, k: int) -> None:
    s3.put(f"in/b{k}.json", "".join(json.dumps({"id": 10 * k + i, "p": i % 2}) + "\n"
                                    for i in (1, 2)))


def start(spark, url, clock) -> Job:
    clock.now = max(clock.now + MIN, int(time.time() * 1000) + 2000)
    return Job(spark, state=url, clock=clock).init("orders", EN)


def run_job(spark, url, clock, s3, **write) -> str:
    job = start(spark, url, clock)
    df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
    job.write(df, s3.url("out"), transformation_ctx="sink", options=UPLOADS, **write)
    job.commit()
    return job.run_id


def visible(s3) -> list[str]:
    """The data objects a plain reader of ``out`` reads (no ``_``/``.`` path element)."""
    return [k for k in s3.keys("out/")
            if not any(p.startswith(("_", ".")) for p in k[len("out/"):].split("/"))]


def target_ids(spark, s3) -> list[int]:
    if not visible(s3):
        return []
    return sorted(r.id for r in spark.read.parquet(s3.url("out")).select("id").collect())


def uploads(s3) -> list[str]:
    got = s3.server.client().list_multipart_uploads(Bucket=s3.name)
    return [u["Key"] for u in got.get("Uploads", [])]


def test_exactly_once_over_runs_without_a_copy(spark, s3, s3_server, sqlite_url, now_clock):
    copies = len(s3_server.copies)
    for k in range(3):
        add_batch(s3, k)
        run_job(spark, sqlite_url, now_clock, s3)
    assert target_ids(spark, s3) == [1, 2, 11, 12, 21, 22]
    assert not [k for k in s3.keys("out/") if "/__magic" in k], s3.keys("out/")
    assert uploads(s3) == []
    # the publish made no copy: no CopyObject / UploadPartCopy request reached the server
    assert s3_server.copies[copies:] == []


def test_partitioned_output_lands_in_its_partition_folders(spark, s3, sqlite_url, now_clock):
    add_batch(s3, 0)
    run_job(spark, sqlite_url, now_clock, s3, partition_by=["p"])
    assert sorted({k.split("/")[1] for k in visible(s3)}) == ["p=0", "p=1"]
    assert target_ids(spark, s3) == [1, 2]
    assert uploads(s3) == []


def test_a_plain_reader_sees_nothing_before_the_state_commit(spark, s3, sqlite_url, now_clock):
    add_batch(s3, 0)
    run_job(spark, sqlite_url, now_clock, s3)
    add_batch(s3, 1)
    job = start(spark, sqlite_url, now_clock)
    df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
    assert job.write(df, s3.url("out"), transformation_ctx="sink", options=UPLOADS) == 2
    assert uploads(s3)  # written, as uploads not completed...
    assert target_ids(spark, s3) == [1, 2]  # ...so not there for a reader
    job.commit()
    assert target_ids(spark, s3) == [1, 2, 11, 12]
    assert uploads(s3) == []


def test_a_failed_run_leaves_no_upload_and_nothing_visible(spark, s3, sqlite_url, now_clock):
    add_batch(s3, 0)
    run_job(spark, sqlite_url, now_clock, s3)
    add_batch(s3, 1)
    job = start(spark, sqlite_url, now_clock)
    df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
    job.write(df, s3.url("out"), transformation_ctx="sink", options=UPLOADS)
    job.fail("interrupted on purpose")
    assert uploads(s3) == []
    assert not [k for k in s3.keys("out/") if "/__magic" in k]
    assert target_ids(spark, s3) == [1, 2]
    run_job(spark, sqlite_url, now_clock, s3)
    assert target_ids(spark, s3) == [1, 2, 11, 12]


def test_a_run_that_died_before_its_commit_is_discarded_by_the_next(spark, s3, sqlite_url,
                                                                    now_clock):
    """No fail() at all (the process died after the write): the next init aborts the uploads
    the ledger's record leads to, and reads the same input again."""
    add_batch(s3, 0)
    job = start(spark, sqlite_url, now_clock)
    df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
    job.write(df, s3.url("out"), transformation_ctx="sink", options=UPLOADS)
    assert uploads(s3)
    now_clock.advance(24 * 60 * MIN)  # past the dead run's lease
    run_job(spark, sqlite_url, now_clock, s3)
    assert target_ids(spark, s3) == [1, 2]
    assert uploads(s3) == []
    assert not [k for k in s3.keys("out/") if "/__magic" in k]


@pytest.mark.parametrize("where", ["between completions", "before the cleanup"])
def test_a_failure_in_the_publish_window_is_rolled_forward(spark, s3, sqlite_url, now_clock,
                                                           monkeypatch, where):
    """The state is committed, then the publish stops: after one completed upload of two, or
    after every completion but before the magic folder is deleted.  The next run's init
    completes what is left (an upload completed already is recognised by its object): every
    record once, no upload left."""
    from sparkmark.sinks import uploads as up
    add_batch(s3, 0)
    add_batch(s3, 1)
    if where == "between completions":
        real = up._Ops.commit
        done: list[int] = []

        def commit_once(self, commit):
            if done:
                raise RuntimeError("the driver died here")
            real(self, commit)
            done.append(1)
        monkeypatch.setattr(up._Ops, "commit", commit_once)
    else:
        def die(fs, out):
            raise RuntimeError("the driver died here")
        monkeypatch.setattr(up, "_remove_staging", die)
    job = start(spark, sqlite_url, now_clock)
    df = job.read.files(s3.url("in"), format="json", transformation_ctx="src") \
        .repartition(2)  # two files: two uploads
    job.write(df, s3.url("out"), transformation_ctx="sink", options=UPLOADS)
    with pytest.raises(SinkError, match="committed"):
        job.commit()
    monkeypatch.undo()
    # the state commit happened: a bookmark version names the run
    assert job.run_id in [r["RunId"] for r in Bookmarks(sqlite_url).history("orders")]
    if where == "between completions":
        assert len(uploads(s3)) == 1
        assert len(target_ids(spark, s3)) in (1, 2, 3)  # a committed run, partly visible
    add_batch(s3, 2)
    run_job(spark, sqlite_url, now_clock, s3)
    assert target_ids(spark, s3) == [1, 2, 11, 12, 21, 22]
    assert uploads(s3) == []
    assert not [k for k in s3.keys("out/") if "/__magic" in k]


def test_reset_remove_output_removes_a_no_copy_run(spark, s3, sqlite_url, now_clock):
    ids = []
    for k in range(3):
        add_batch(s3, k)
        ids.append(run_job(spark, sqlite_url, now_clock, s3))
    r1, r2, r3 = ids
    bm = Bookmarks(sqlite_url, clock=now_clock)
    plan = bm.reset("orders", run_id=r1, remove_output=True, spark=spark)
    assert plan.run_ids == [r2, r3]
    assert target_ids(spark, s3) == [1, 2]
    run_job(spark, sqlite_url, now_clock, s3)
    assert target_ids(spark, s3) == [1, 2, 11, 12, 21, 22]


def test_the_option_refuses_what_it_cannot_do(spark, s3, sqlite_url, now_clock, tmp_path):
    add_batch(s3, 0)
    job = start(spark, sqlite_url, now_clock)
    df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
    with pytest.raises(ConfigError, match="not an s3a:// path"):
        job.write(df, str(tmp_path / "out"), transformation_ctx="sink", options=UPLOADS)
    with pytest.raises(ConfigError, match="publish='sometimes'"):
        job.write(df, s3.url("out"), transformation_ctx="sink",
                  options={"publish": "sometimes"})
    assert not (tmp_path / "out").exists()
    assert job.commit() >= 0  # the refusals changed nothing: the run commits (nothing written)
    assert s3.keys("out/") == []


def test_magic_paths_turned_off_is_one_config_error(spark, s3, sqlite_url, now_clock):
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    key = f"fs.s3a.bucket.{s3.name}.committer.magic.enabled"
    conf.set(key, "false")
    try:
        add_batch(s3, 0)
        job = start(spark, sqlite_url, now_clock)
        df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
        with pytest.raises(ConfigError, match="magic"):
            job.write(df, s3.url("out2"), transformation_ctx="sink", options=UPLOADS)
        job.fail("done")
    finally:
        conf.unset(key)



def test_on_seaweedfs_exactly_once_and_no_upload_left(classic_spark, s3_server,
                                                      tmp_path_factory, sqlite_url, now_clock):
    """The same protocol on SeaweedFS (a real server process with its data on disk): a run
    that fails leaves no upload, committed runs land once, nothing pending at the end."""
    from sparkmark.devtools.s3 import Bucket, start_seaweedfs
    server = start_seaweedfs(str(tmp_path_factory.mktemp("weed-up")))
    try:
        s3 = Bucket(server, "wup")
        conf = classic_spark.sparkContext._jsc.hadoopConfiguration()
        for k, v in server.hadoop_conf("wup").items():
            conf.set(k, v)
        add_batch(s3, 0)
        run_job(classic_spark, sqlite_url, now_clock, s3)
        add_batch(s3, 1)
        job = start(classic_spark, sqlite_url, now_clock)
        df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
        job.write(df, s3.url("out"), transformation_ctx="sink", options=UPLOADS)
        assert uploads(s3)  # pending on the server...
        assert target_ids(classic_spark, s3) == [1, 2]  # ...not visible
        job.fail("interrupted on purpose")
        assert uploads(s3) == []
        run_job(classic_spark, sqlite_url, now_clock, s3)
        assert target_ids(classic_spark, s3) == [1, 2, 11, 12]
        assert uploads(s3) == []
        assert not [k for k in s3.keys("out/") if "/__magic" in k]
    finally:
        server.stop()
