"""File targets on S3 (moto): exactly once without atomic rename, what a plain reader sees, and
``bookmark reset --remove-output`` (Python and the CLI, whose own Spark session gets its s3a
settings from ``spark-defaults.conf`` as any spark-submit would)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkmark import Bookmarks, Job

from conftest import FakeClock

EN = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000
SPARKMARK = str(Path(sys.executable).with_name("sparkmark"))


@pytest.fixture(scope="module")
def spark(any_spark):
    return any_spark


@pytest.fixture
def now_clock() -> FakeClock:
    return FakeClock(start=int(time.time() * 1000))


def add_batch(s3, k: int) -> None:
    s3.put(f"in/b{k}.json", "".join(json.dumps({"id": 10 * k + i}) + "\n" for i in (1, 2)))


def run_job(spark, url, clock, s3) -> str:
    clock.now = max(clock.now + MIN, int(time.time() * 1000) + 2000)
    job = Job(spark, state=url, clock=clock).init("orders", EN)
    df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
    job.write(df, s3.url("out"), transformation_ctx="sink")
    job.commit()
    return job.run_id


def target_ids(spark, s3) -> list[int]:
    if not [k for k in s3.keys("out/") if not k.split("/")[-1].startswith(("_", "."))]:
        return []
    return sorted(r.id for r in spark.read.parquet(s3.url("out")).select("id").collect())


def test_writes_are_exactly_once_and_leave_nothing_staged(spark, s3, sqlite_url, now_clock):
    for k in range(3):
        add_batch(s3, k)
        run_job(spark, sqlite_url, now_clock, s3)
    assert target_ids(spark, s3) == [1, 2, 11, 12, 21, 22]
    keys = s3.keys("out/")
    assert not [k for k in keys if "_sparkmark_staging" in k or "_temporary" in k], keys
    assert all(k.split("/")[-1].startswith("sm-") for k in keys if k.endswith(".parquet"))


def test_a_plain_reader_never_sees_a_run_that_did_not_commit(spark, s3, sqlite_url, now_clock):
    """Staged objects live under ``_sparkmark_staging/`` (Spark's readers skip ``_`` paths): a
    run that wrote but did not commit adds nothing a reader sees, and the next run removes it."""
    add_batch(s3, 0)
    run_job(spark, sqlite_url, now_clock, s3)
    add_batch(s3, 1)
    now_clock.advance(MIN)
    job = Job(spark, state=sqlite_url, clock=now_clock).init("orders", EN)
    df = job.read.files(s3.url("in"), format="json", transformation_ctx="src")
    job.write(df, s3.url("out"), transformation_ctx="sink")
    assert [k for k in s3.keys("out/") if "_sparkmark_staging" in k]  # staged...
    assert target_ids(spark, s3) == [1, 2]  # ...but invisible
    job.fail("interrupted on purpose")
    assert not [k for k in s3.keys("out/") if "_sparkmark_staging" in k]
    run_job(spark, sqlite_url, now_clock, s3)
    assert target_ids(spark, s3) == [1, 2, 11, 12]


def test_reset_remove_output_on_s3_then_rerun_is_exactly_once(spark, s3, sqlite_url, now_clock):
    ids = []
    for k in range(3):
        add_batch(s3, k)
        ids.append(run_job(spark, sqlite_url, now_clock, s3))
    r1, r2, r3 = ids
    bm = Bookmarks(sqlite_url, clock=now_clock)
    plan = bm.reset("orders", run_id=r1, remove_output=True, spark=spark)
    assert plan.run_ids == [r2, r3]
    assert not [k for k in s3.keys("out/") if f"sm-{r2}-" in k or f"sm-{r3}-" in k]
    assert target_ids(spark, s3) == [1, 2]
    run_job(spark, sqlite_url, now_clock, s3)
    assert target_ids(spark, s3) == [1, 2, 11, 12, 21, 22]


def why(out: subprocess.CompletedProcess) -> str:
    """What a failed command said about why: the lines naming an error, then the end of its
    output (Spark's log and the traces of its shutdown would otherwise fill the message)."""
    text = out.stdout + out.stderr
    said = [line for line in text.splitlines() if not line.lstrip().startswith("at ")
            and any(w in line for w in ("Error", "error", "Exception", "refused", "denied"))]
    return f"exit {out.returncode}\n" + "\n".join(said[:25]) + "\n...\n" + text[-1200:]


def test_cli_reset_remove_output_reads_s3a_settings_from_spark_defaults(
        spark, s3, s3_server, sqlite_url, now_clock, tmp_path):
    from sparkmark.engine.compat import is_connect
    from sparkmark.devtools.s3 import s3a_session_conf
    if is_connect(spark):
        pytest.skip("the CLI starts its own classic session: once is enough")
    classic_spark = spark
    for k in range(2):
        add_batch(s3, k)
        run_job(classic_spark, sqlite_url, now_clock, s3)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    settings = {**s3a_session_conf(), **s3_server.spark_conf()}
    (conf_dir / "spark-defaults.conf").write_text(
        "".join(f"{k} {v}\n" for k, v in settings.items()))
    env = {**os.environ, "SPARK_CONF_DIR": str(conf_dir), "SPARK_LOCAL_IP": "127.0.0.1"}
    bm = Bookmarks(sqlite_url)
    [first, second] = [r["RunId"] for r in bm.history("orders")[-2:]]
    out = subprocess.run([SPARKMARK, "--state", sqlite_url, "bookmark", "reset", "orders",
                          "--run-id", first, "--remove-output"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, why(out)
    assert not [k for k in s3.keys("out/") if f"sm-{second}-" in k]
    assert target_ids(classic_spark, s3) == [1, 2]
    assert s3_server.secret_key not in out.stdout + out.stderr or s3_server.secret_key == "testing"


def test_pipeline_rollback_on_s3_then_reload_is_exactly_once(spark, s3, sqlite_url, now_clock):
    """A pipeline module with a bookmarked S3 source and an S3 target: a rollback deletes the
    rolled-back runs' objects and rewinds the source, the reload reads those objects again."""
    from sparkmark import Pipeline
    day = time.strftime("%Y-%m-%d", time.gmtime(now_clock.now / 1000 - 86_400))
    p = Pipeline("s3p", spark, state=sqlite_url, primordial_date=day, clock=now_clock)

    @p.module(id=1, name="Orders", layer="bronze", target=s3.url("pout"))
    def orders(ctx):
        return ctx.job.read.files(s3.url("in"), format="json", transformation_ctx="src")

    def ids() -> list[int]:
        return sorted(r.id for r in spark.read.parquet(s3.url("pout")).select("id").collect())

    summaries = []
    for k in range(3):
        add_batch(s3, k)
        now_clock.now = max(now_clock.now + MIN, int(time.time() * 1000) + 2000)
        summaries.append(p.run())
    runs = [s.results[0] for s in summaries]
    assert [r.records_written for r in runs] == [2, 2, 2]
    assert ids() == [1, 2, 11, 12, 21, 22]
    plan = p.rollback([1], run_id=summaries[1].run_id)
    assert sorted(plan.run_ids) == sorted([runs[1].run_id, runs[2].run_id])
    assert ids() == [1, 2]
    assert not [k for k in s3.keys("pout/") if runs[2].run_id in k or runs[1].run_id in k]
    now_clock.now = max(now_clock.now + MIN, int(time.time() * 1000) + 2000)
    again = p.run().results[0]
    assert again.records_written == 4
    assert ids() == [1, 2, 11, 12, 21, 22]


def test_purge_s3_path_on_s3_deletes_by_age_and_spares_staged_runs(spark, s3):
    """``purge_s3_path`` on a bucket: objects older than the retention go (age = upload time on
    S3), younger ones and a run's staged objects stay; a bucket root is refused. Classic and
    over Spark Connect."""
    from sparkmark.core.errors import ConfigError
    from sparkmark.glue.context import GlueContext
    # over Spark Connect the client lists and deletes through pyarrow, with the server's
    # endpoint and keys
    glue = GlueContext(spark if is_connect_session(spark) else spark.sparkContext)
    for key in ("tmp/a.json", "tmp/sub/b.json", "tmp/_sparkmark_staging/r1/part-0.json",
                "keep/c.json"):
        s3.put(key, '{"id": 1}\n')
    assert glue.purge_s3_path(s3.url("tmp/", scheme="s3"), {"retentionPeriod": 1}) == []
    time.sleep(1.1)  # LastModified has whole seconds: make every object older than 0 hours
    deleted = glue.purge_s3_path(s3.url("tmp/", scheme="s3"), {"retentionPeriod": 0})
    assert sorted(d.rsplit("/", 2)[-2] + "/" + d.rsplit("/", 1)[-1] for d in deleted) == \
        ["sub/b.json", "tmp/a.json"]
    left = [k for k in s3.keys() if not k.endswith("/")]
    assert sorted(left) == ["keep/c.json", "tmp/_sparkmark_staging/r1/part-0.json"]
    with pytest.raises(ConfigError):
        glue.purge_s3_path(s3.url(scheme="s3") + "/", {"retentionPeriod": 0})
    assert "keep/c.json" in s3.keys()


def is_connect_session(spark) -> bool:
    from sparkmark.engine.compat import is_connect
    return is_connect(spark)
