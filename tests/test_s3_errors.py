"""Object-store failures on a real server that checks credentials and persists (SeaweedFS):
a missing bucket, refused credentials, an endpoint that stops mid-way and comes back.  Each is
one clear message, nothing is committed, nothing is lost, and no credential reaches the ledger
or the message."""
from __future__ import annotations

import json
import time

import pytest

from sparkmark import Job
from sparkmark.core.errors import SinkError, SourceError

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
WRONG_SECRET = "wrong-secret-value-1234"


@pytest.fixture(scope="module")
def weed(s3_server, tmp_path_factory):
    """A SeaweedFS server (its own credentials) serving buckets ``wlake`` and ``wbad``; the
    classic session reaches them through per-bucket s3a settings."""
    from sparkmark.devtools.s3 import Bucket, start_seaweedfs
    server = start_seaweedfs(str(tmp_path_factory.mktemp("weed")))
    Bucket(server, "wlake")
    Bucket(server, "wbad")
    yield server
    server.stop()


@pytest.fixture
def spark(classic_spark, weed):
    conf = classic_spark.sparkContext._jsc.hadoopConfiguration()
    for bucket in ("wlake", "wbad", "wnone"):
        for k, v in weed.hadoop_conf(bucket).items():
            conf.set(k, v)
    conf.set("fs.s3a.bucket.wbad.secret.key", WRONG_SECRET)
    return classic_spark


def put(server, key: str, ids: list[int]) -> None:
    server.client().put_object(Bucket="wlake", Key=key, Body="".join(
        json.dumps({"id": i}) + "\n" for i in ids).encode())


def run_once(spark, url, src, name="errs") -> list[int]:
    with Job(spark, state=url).run(name, ENABLE) as job:
        df = job.read.files(src, transformation_ctx="src")
        return sorted(r.id for r in df.collect())


def readable(server, key: str, timeout: float = 30.0) -> None:
    """Wait until a restarted server serves ``key`` again: S3 answering is not enough, its
    volume server may still be coming up (a GET then fails inside a Spark task)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            server.client().get_object(Bucket="wlake", Key=key)["Body"].read()
            return
        except Exception:  # noqa: BLE001 - not up yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def ledger_texts(url: str, name: str) -> str:
    from sparkmark.state.store import open_store
    store = open_store(url)
    return json.dumps(store.list_runs(job_name=name), default=str)


def test_missing_bucket_is_one_clear_error_and_nothing_is_committed(spark, sqlite_url):
    with pytest.raises(SourceError) as e:
        run_once(spark, sqlite_url, "s3a://wnone/in", name="nobucket")
    msg = str(e.value)
    assert "bucket 'wnone' does not exist" in msg and "Request ID" not in msg
    runs = json.loads(ledger_texts(sqlite_url, "nobucket"))
    assert [r["status"] for r in runs] == ["FAILED"]
    with pytest.raises(SinkError, match="bucket 'wnone' does not exist"):
        with Job(spark, state=sqlite_url).run("nobucket-sink", ENABLE) as job:
            job.write(spark.range(3), "s3a://wnone/out", transformation_ctx="sink")


def test_refused_credentials_are_named_and_no_secret_reaches_the_ledger(spark, weed, sqlite_url):
    with pytest.raises(SourceError) as e:
        run_once(spark, sqlite_url, "s3a://wbad/in", name="badkeys")
    msg = str(e.value)
    assert "refused the credentials for bucket 'wbad'" in msg
    assert "fs.s3a.bucket.wbad" in msg
    texts = ledger_texts(sqlite_url, "badkeys")
    assert "refused the credentials" in texts
    for secret in (WRONG_SECRET, weed.secret_key):
        assert secret not in msg and secret not in texts


def test_an_endpoint_that_stops_and_comes_back_loses_nothing(spark, weed, sqlite_url):
    put(weed, "in/a.json", [1, 2])
    assert run_once(spark, sqlite_url, "s3a://wlake/in") == [1, 2]
    put(weed, "in/b.json", [3])
    weed.stop_server()
    try:
        with pytest.raises(SourceError) as e:
            run_once(spark, sqlite_url, "s3a://wlake/in")
        assert "does not answer" in str(e.value) and "fs.s3a.bucket.wlake.endpoint" in str(
            e.value)
    finally:
        weed.start()
    readable(weed, "in/b.json")
    assert run_once(spark, sqlite_url, "s3a://wlake/in") == [3]  # the same input, once
    assert run_once(spark, sqlite_url, "s3a://wlake/in") == []
    statuses = [r["status"] for r in json.loads(ledger_texts(sqlite_url, "errs"))]
    assert statuses == ["SUCCEEDED", "FAILED", "SUCCEEDED", "EMPTY"]
    assert weed.secret_key not in ledger_texts(sqlite_url, "errs")


def test_an_endpoint_gone_during_the_publish_is_one_clear_error_and_the_next_run_publishes(
        spark, weed, sqlite_url):
    """The state commits, then the publish (a rename on S3) meets a stopped endpoint: one
    SinkError naming the endpoint and the retry (not py4j's bare 'error occurred while
    calling oNNN.exists'), the run SUCCEEDED with its publish pending, and the next run
    publishes the rows once."""
    from pyspark.sql import functions as F
    put(weed, "pub/in/a.json", [1, 2, 3])
    job = Job(spark, state=sqlite_url)
    job.init("pub-errs", ENABLE)
    df = job.read.files("s3a://wlake/pub/in", transformation_ctx="src")
    assert job.write(df.select(F.col("id")), "s3a://wlake/pub/out", transformation_ctx="sink") == 3
    weed.stop_server()
    try:
        with pytest.raises(SinkError) as e:
            job.commit()
    finally:
        weed.start()
    msg = str(e.value)
    assert "does not answer" in msg and "retried by the next run" in msg, msg
    assert "Py4JJavaError" not in msg and "error occurred while calling" not in msg
    assert weed.secret_key not in msg
    runs = json.loads(ledger_texts(sqlite_url, "pub-errs"))
    assert [(r["status"], r["publish_state"]) for r in runs] == [("SUCCEEDED", "pending")]
    readable(weed, "pub/in/a.json")
    with Job(spark, state=sqlite_url).run("pub-errs", ENABLE) as job2:  # recovers, reads nothing
        assert job2.read.files("s3a://wlake/pub/in", transformation_ctx="src").count() == 0
    ids = sorted(r.id for r in spark.read.parquet("s3a://wlake/pub/out").collect())
    assert ids == [1, 2, 3]
    runs = json.loads(ledger_texts(sqlite_url, "pub-errs"))
    assert [(r["status"], r["publish_state"]) for r in runs][0] == ("SUCCEEDED", "done")
