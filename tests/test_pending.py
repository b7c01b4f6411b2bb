"""``sparkmark.ops.pending``: is there new input past the bookmark, answered without Spark (the
schedulers' sensors use it). Checked against what the job's next real run reads: local files,
objects on a real S3 API (moto), rows of a real PostgreSQL table; bad input is one clear error
that changes nothing."""
from __future__ import annotations

import json
import os
import time

import pytest
import sqlalchemy as sa

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.state.ledger import ledger_rows
from sparkmark.ops.pending import pending_files, pending_rows

from conftest import FakeClock

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
PG_JAR = "/usr/share/java/postgresql.jar"


def _file(folder, name: str, ids: list[int], mtime_ms: int) -> str:
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("".join(json.dumps({"id": i}) + "\n" for i in ids))
    os.utime(path, (mtime_ms / 1000, mtime_ms / 1000))
    return path


def _run_files(spark, state, clock, path, options=None) -> list[str]:
    """One real run; returns the names of the files its ledger says it read."""
    with Job(spark, state=state, clock=clock).run("orders", ENABLE) as job:
        df = job.read.files(path, format="json", transformation_ctx="src",
                            options=options or {})
        job.write(df, path + "_out", format="parquet", transformation_ctx="sink")
    cfg = json.loads(ledger_rows(state, job="orders")[-1]["config"])
    return sorted(cfg["sources"]["src"]["sample"])


def test_pending_files_names_exactly_what_the_next_run_reads(spark, state_url, tmp_path):
    clock = FakeClock()
    inp = str(tmp_path / "in")
    t0 = clock.now - 3_600_000
    _file(inp, "a.json", [1, 2], t0)
    _file(inp, "x/b.json", [3], t0 + 1000)
    _file(inp, "c.tmp", [9], t0 + 2000)            # excluded by the job's options
    opts = {"exclusions": ["**.tmp"], "recurse": True}

    before = pending_files("orders", inp, transformation_ctx="src", state=state_url,
                           options=opts, clock=clock)
    assert before.new_input and before.bookmark_version is None
    assert sorted(before.sample) == ["a.json", "b.json"] and before.listed == 2
    assert _run_files(spark, state_url, clock, inp, opts) == sorted(before.sample)

    clock.advance(60_000)
    none = pending_files("orders", inp, transformation_ctx="src", state=state_url,
                         options=opts, clock=clock)
    assert not none.new_input and none.files == 0 and none.bookmark_version == 1

    _file(inp, "y/d.json", [4, 5], clock.now - 30_000)
    _file(inp, "e.tmp", [9], clock.now - 30_000)
    clock.advance(1000)
    after = pending_files("orders", inp, transformation_ctx="src", state=state_url,
                          options=opts, clock=clock)
    assert after.new_input and after.sample == ("d.json",) and after.bytes > 0
    assert after.as_dict()["files"] == 1
    assert _run_files(spark, state_url, clock, inp, opts) == ["d.json"]
    # nothing in the store changed by asking: versions moved only with the two runs
    assert Bookmarks(state_url).get("orders")["Version"] == 2


def test_pending_files_on_s3_with_the_jobs_s3a_settings(spark, s3, s3_server, sqlite_url):
    s3.put("in/a.json", '{"id": 1}\n')
    # the run's T at or past the object's stamp (a clock read before the upload can fall in
    # the second before it on a loaded machine, and the run then rightly leaves it for later)
    clock = FakeClock(start=max(int(time.time() * 1000), s3.mtime("in/a.json") + 1_000))
    root = s3.url("in")
    conf = s3_server.hadoop_conf()
    with Job(spark, state=sqlite_url, clock=clock).run("orders", ENABLE) as job:
        job.read.files(root, format="json", transformation_ctx="src").count()
    clock.advance(5_000)
    assert not pending_files("orders", root, transformation_ctx="src", state=sqlite_url,
                             storage_options=conf, clock=clock).new_input
    s3.put("in/dt=2/new file.json", '{"id": 2}\n')
    clock.now = max(clock.now, s3.mtime("in/dt=2/new file.json") + 2_000)
    found = pending_files("orders", root, transformation_ctx="src", state=sqlite_url,
                          storage_options=conf, clock=clock)
    assert found.new_input and found.sample == ("new file.json",)


def test_pending_rows_asks_postgresql_for_keys_past_the_bookmark(spark, pg_server, sqlite_url):
    if PG_JAR not in (spark.conf.get("spark.jars", "") or ""):
        pytest.skip(f"PostgreSQL JDBC driver not on Spark's classpath ({PG_JAR})")
    name = f"pend{os.getpid()}"
    engine = sa.create_engine(pg_server.create_database(name))
    url = f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}"
    props = {"user": "postgres"}
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE emp (empno int PRIMARY KEY, name text)"))
        c.execute(sa.text("INSERT INTO emp VALUES (1, 'a'), (2, 'b')"))
    first = pending_rows("emp_sync", url, "emp", transformation_ctx="emp_src",
                         state=sqlite_url, properties=props)
    assert first.new_input and first.lower is None and first.upper == [2]
    with Job(spark, state=sqlite_url).run("emp_sync", ENABLE) as job:
        assert job.read.jdbc(url, table="emp", transformation_ctx="emp_src",
                             properties=props).count() == 2
    caught_up = pending_rows("emp_sync", url, "emp", transformation_ctx="emp_src",
                             state=sqlite_url, properties=props)
    assert not caught_up.new_input and caught_up.lower == [2]
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO emp VALUES (3, 'c')"))
    more = pending_rows("emp_sync", url, "emp", transformation_ctx="emp_src",
                        state=sqlite_url, properties=props)
    assert more.new_input and (more.lower, more.upper) == ([2], [3])
    engine.dispose()


def test_bad_questions_are_one_clear_error_each(tmp_path, sqlite_url):
    inp = tmp_path / "in"
    inp.mkdir()
    with pytest.raises(ConfigError, match="transformation_ctx must name"):
        pending_files("orders", str(inp), transformation_ctx="", state=sqlite_url)
    with pytest.raises(SourceError, match="does not exist"):
        pending_files("orders", str(tmp_path / "missing"), transformation_ctx="src",
                      state=sqlite_url)
    with pytest.raises(ConfigError, match="boundedFiles"):
        pending_files("orders", str(inp), transformation_ctx="src", state=sqlite_url,
                      options={"boundedFiles": "many"})
    with pytest.raises(SourceError, match="Python driver.*schedule the job itself"):
        pending_rows("j", "jdbc:derby:memory:db", "emp", transformation_ctx="src",
                     state=sqlite_url)
    assert ledger_rows(sqlite_url) == []
