"""Hostile inputs (issue 16): each case loses nothing, duplicates nothing, leaks nothing.

Real local Spark, real files, real state stores (SQLite and PostgreSQL where a store is
involved); only the clock is faked.  docs/reliability.md lists the cases and the behaviour.
"""
from __future__ import annotations

import json
import os

import pytest

from sparkmark import Job

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000


def set_mtime(path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def write_json(path: str, ids: list[int], mtime: int) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(json.dumps({"id": i}) + "\n" for i in ids)
    set_mtime(path, mtime)
    return path


def new_job(spark, url, clock, args=ENABLE, name="orders"):
    return Job(spark, state=url, clock=clock).init(name, args)


# ---------------------------------------------------------------------- 1. glob characters
GLOB_NAMES = ["a*.json", "c[1].json", "d{1,2}.json", "report[final].json", "q?.json",
              "back\\slash.json"]


def test_glob_characters_in_file_names_are_read_literally_exactly_once(spark, state_url,
                                                                       clock, tmp_path):
    src = str(tmp_path / "in")
    # neighbours the patterns would also match
    write_json(f"{src}/ab.json", [1], clock.now - 30 * MIN)
    write_json(f"{src}/c1.json", [2], clock.now - 30 * MIN)
    write_json(f"{src}/d1.json", [3], clock.now - 30 * MIN)
    write_json(f"{src}/reportf.json", [4], clock.now - 30 * MIN)
    write_json(f"{src}/qq.json", [5], clock.now - 30 * MIN)
    job = new_job(spark, state_url, clock)
    df = job.read.files(src, transformation_ctx="src")
    assert sorted(r.id for r in df.collect()) == [1, 2, 3, 4, 5]
    job.commit()

    clock.advance(30 * MIN)
    for k, name in enumerate(GLOB_NAMES):
        write_json(f"{src}/{name}", [100 + k], clock.now - 5 * MIN)
    job = new_job(spark, state_url, clock)
    df = job.read.files(src, transformation_ctx="src")
    assert sorted(r.id for r in df.collect()) == [100, 101, 102, 103, 104, 105]
    job.commit()

    clock.advance(30 * MIN)
    job = new_job(spark, state_url, clock)
    assert job.read.files(src, transformation_ctx="src").count() == 0
    job.commit()


def test_glob_characters_in_partition_folder_names(spark, sqlite_url, clock, tmp_path):
    src = str(tmp_path / "in")
    write_json(f"{src}/p=x*/a.json", [1], clock.now - MIN)
    write_json(f"{src}/p=xy/b.json", [2], clock.now - MIN)
    job = new_job(spark, sqlite_url, clock)
    df = job.read.files(src, transformation_ctx="src")
    assert sorted((r.id, r.p) for r in df.collect()) == [(1, "x*"), (2, "xy")]
    job.commit()


# ---------------------------------------------------------------------- 2. JDBC staging names
PG_JAR = "/usr/share/java/postgresql.jar"


@pytest.fixture
def pg_target(pg_server):
    if not os.path.exists(PG_JAR):
        pytest.skip(f"PostgreSQL JDBC driver missing: apt-get install libpostgresql-jdbc-java "
                    f"({PG_JAR})")
    name = f"hostile{os.getpid()}_{id(object())}"
    url = pg_server.create_database(name)
    return url, f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}", {"user": "postgres"}


def pg_rows(url, sql):
    import sqlalchemy as sa
    engine = sa.create_engine(url)
    with engine.connect() as c:
        out = c.execute(sa.text(sql)).all()
    engine.dispose()
    return out


def test_jdbc_target_name_near_the_identifier_limit(spark, state_url, clock, pg_target):
    sa_url, jdbc, props = pg_target
    table = "t" * 60  # PostgreSQL keeps 63 characters; '<table>__sm_stage' would be 70
    df = spark.createDataFrame([(i,) for i in range(5)], "k INT")
    job = new_job(spark, state_url, clock, name="wide")
    assert job.write_jdbc(df, jdbc, table, properties=props) == 5
    job.commit()
    assert pg_rows(sa_url, f"SELECT count(*) FROM {table}")[0][0] == 5
    run = job.store.get_run(job.run_id)
    assert run["status"] == "SUCCEEDED" and run["publish_state"] == "done"
    stage = json.loads(run["outputs"])[0]["staging_table"]
    assert len(stage) <= 30 and stage.endswith("__sm_stage")


def test_jdbc_publish_without_its_staging_table_fails_loudly(spark, state_url, clock,
                                                             pg_target):
    from sparkmark.errors import SinkError
    sa_url, jdbc, props = pg_target
    job = new_job(spark, state_url, clock, name="lost")
    job.write_jdbc(spark.range(3), jdbc, "dest", properties=props)
    import sqlalchemy as sa
    engine = sa.create_engine(sa_url)
    with engine.begin() as c:
        c.execute(sa.text("DROP TABLE dest__sm_stage"))
    engine.dispose()
    with pytest.raises(SinkError, match="staging table dest__sm_stage is missing"):
        job.commit()
    run = job.store.get_run(job.run_id)
    assert run["publish_state"] != "done"


# ---------------------------------------------------------------------- 6. misspelled arguments
@pytest.mark.parametrize("key,right", [
    ("--job-bookmark-options", "--job-bookmark-option"),
    ("--job_bookmark-option", "--job-bookmark-option"),
    ("JOB_BOOKMARK_OPTION", "--job-bookmark-option"),
    ("jobBookmarkOption", "--job-bookmark-option"),
    ("--job-bookmark-fromm", "--job-bookmark-from"),
])
def test_misspelled_bookmark_argument_is_an_error_naming_the_right_spelling(key, right):
    from sparkmark.errors import ConfigError
    from sparkmark.options import parse_job_args
    with pytest.raises(ConfigError, match=f"unknown job argument '{key}': did you mean {right}"):
        parse_job_args({key: "job-bookmark-enable"})
    with pytest.raises(ConfigError, match="did you mean"):
        parse_job_args([key if key.startswith("--") else "--" + key, "job-bookmark-enable"])
    # the right spellings and unrelated Glue arguments still pass
    assert parse_job_args({"job_bookmark_option": "job-bookmark-enable",
                           "--TempDir": "s3://t"}).option == "job-bookmark-enable"


# ---------------------------------------------------------------------- 5. modified during read
def test_file_appended_while_a_run_reads_it_fails_the_run_and_the_retry_reads_it_once(
        spark, state_url, clock, tmp_path):
    from sparkmark.errors import SourceError
    src = str(tmp_path / "in")
    path = write_json(f"{src}/a.json", [1, 2], clock.now - 2 * MIN)
    job = new_job(spark, state_url, clock)
    df = job.read.files(src, transformation_ctx="src")
    assert sorted(r.id for r in df.collect()) == [1, 2]
    with open(path, "a") as f:  # upstream appends while the run is going
        f.write(json.dumps({"id": 3}) + "\n")
    set_mtime(path, clock.now - MIN)
    with pytest.raises(SourceError, match=r"input file file:/\S*/in/a.json of source 'src' "
                                          r"changed"):
        job.commit()
    runs = job.store.list_runs(job_name="orders")
    assert runs[-1]["status"] == "FAILED" and "a.json" in runs[-1]["error"]
    assert job.store.bookmark_entry("orders")["JobBookmark"] == {}

    clock.advance(MIN)
    job = new_job(spark, state_url, clock)
    assert sorted(r.id for r in job.read.files(src, transformation_ctx="src").collect()) == [
        1, 2, 3]
    job.commit()
    clock.advance(30 * MIN)
    job = new_job(spark, state_url, clock)
    assert job.read.files(src, transformation_ctx="src").count() == 0
    job.commit()


def test_file_rewritten_with_the_same_mtime_but_another_size_fails_the_run(
        spark, sqlite_url, clock, tmp_path):
    from sparkmark.errors import SourceError
    src = str(tmp_path / "in")
    path = write_json(f"{src}/a.json", [1, 2], clock.now - 2 * MIN)
    job = new_job(spark, sqlite_url, clock)
    job.read.files(src, transformation_ctx="src").collect()
    write_json(path, [1, 2, 3, 4], clock.now - 2 * MIN)
    with pytest.raises(SourceError, match="a.json of source 'src' changed"):
        job.commit()
