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
    from sparkmark.core.errors import SinkError
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
    from sparkmark.core.errors import ConfigError
    from sparkmark.core.options import parse_job_args
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
    from sparkmark.core.errors import SourceError
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
    from sparkmark.core.errors import SourceError
    src = str(tmp_path / "in")
    path = write_json(f"{src}/a.json", [1, 2], clock.now - 2 * MIN)
    job = new_job(spark, sqlite_url, clock)
    job.read.files(src, transformation_ctx="src").collect()
    write_json(path, [1, 2, 3, 4], clock.now - 2 * MIN)
    with pytest.raises(SourceError, match="a.json of source 'src' changed"):
        job.commit()


def test_files_changed_among_many_fail_the_run_while_the_audit_goes_in(spark, state_url, clock,
                                                                       tmp_path):
    """Over 1,000 local files the commit's check stats them in the driver JVM, on a thread,
    while the audit rows are inserted: two files changed after the read (one appended to,
    one only touched) fail the run, a deleted one does not, and nothing is committed (no
    bookmark, no audit row), on SQLite and PostgreSQL stores."""
    from sparkmark.core.errors import SourceError
    src = tmp_path / "in"
    src.mkdir()
    for i in range(1_200):
        (src / f"f{i:04d}.json").write_text(json.dumps({"id": i}) + "\n")
        set_mtime(str(src / f"f{i:04d}.json"), clock.now - 2 * MIN)
    job = new_job(spark, state_url, clock)
    assert job.read.files(str(src), transformation_ctx="src").count() == 1_200
    with open(src / "f0007.json", "a") as f:
        f.write(json.dumps({"id": 7_000}) + "\n")
    set_mtime(str(src / "f0007.json"), clock.now - 2 * MIN)  # same mtime, another size
    set_mtime(str(src / "f1100.json"), clock.now - MIN)       # same size, another mtime
    (src / "f0500.json").unlink()                              # gone: not counted
    with pytest.raises(SourceError, match=r"input file file:/\S*/in/f0007.json \(and 1 more\) "
                                          r"of source 'src' changed"):
        job.commit()
    runs = job.store.list_runs(job_name="orders")
    assert runs[-1]["status"] == "FAILED" and "f0007.json" in runs[-1]["error"]
    assert job.store.bookmark_entry("orders")["JobBookmark"] == {}
    assert job.store.file_audit("orders")[1] == 0


def test_the_jvms_check_of_local_files_finds_what_pythons_finds(spark, tmp_path):
    """``changed_files`` with a classic session (the JVM stats, 1,000 files or more) and
    without one (Python stats each) name the same files: changed sizes and mtimes, a time
    before 1970, names with a tab, spaces and non-ASCII letters, a file gone, a directory
    gone, and a path with a newline (that chunk is stat'ed by Python)."""
    from sparkmark.planning.listing import FileEntry
    from sparkmark.sources.file_listing import _changed_in_jvm, changed_files
    src = tmp_path / "in"
    src.mkdir()
    names = [f"f{i:04d}.json" for i in range(1_100)] + [
        "tab\there.json", "spa ce.json", "ünï cødé.json", "new\nline.json", "old.json"]
    entries = []
    for name in names:
        p = src / name
        p.write_text("x\n")
        ms = -1_234_567 if name == "old.json" else 1_700_000_000_123
        os.utime(p, ns=(ms * 1_000_000 + 456_789, ms * 1_000_000 + 456_789))
        st = p.stat()
        entries.append(FileEntry(st.st_mtime_ns // 1_000_000, f"file:{p}", st.st_size))
    assert entries[-1].mtime == -1_234_567
    entries.append(FileEntry(5, f"file:{tmp_path}/gone/x.json", 1))  # its directory is gone
    (src / "f0003.json").write_text("xy\n")  # size
    os.utime(src / "f0009.json", ns=(1_700_000_000_124_000_000,) * 2)  # mtime, 1 ms later
    (src / "ünï cødé.json").write_text("longer\n")
    (src / "tab\there.json").write_text("longer\n")
    (src / "f0010.json").unlink()  # gone
    want = {f"file:{src}/{n}" for n in ("f0003.json", "f0009.json", "ünï cødé.json",
                                        "tab\there.json")}
    assert set(changed_files(None, entries)) == want
    assert set(changed_files(spark, entries)) == want
    assert changed_files(spark, [e for e in entries if e.path not in want]) == []
    # the JVM answered for every local file but the chunk with a newline in a path
    local = [e for e in entries if e.path.startswith("file:/") and "\n" not in e.path]
    changed, unchecked = _changed_in_jvm(spark, local)
    assert set(changed) == want and unchecked == []
    changed, unchecked = _changed_in_jvm(spark, [e for e in entries if e.path.startswith("file:/")])
    assert changed == [] and len(unchecked) == len(entries)  # one chunk: Python stats it all


# ---------------------------------------------------------------------- 3. the state file
def sqlite_path(url: str) -> str:
    return url[len("sqlite:///"):]


def first_run(spark, url, clock, src):
    write_json(f"{src}/a.json", [1], clock.now - 30 * MIN)
    job = new_job(spark, url, clock)
    assert job.read.files(src, transformation_ctx="src").count() == 1
    job.commit()
    clock.advance(30 * MIN)


def test_state_file_truncated_between_runs_is_refused_not_reset(spark, sqlite_url, clock,
                                                                tmp_path):
    from sparkmark.core.errors import StateStoreError
    src = str(tmp_path / "in")
    first_run(spark, sqlite_url, clock, src)
    path = sqlite_path(sqlite_url)
    for extra in ("-wal", "-shm"):
        if os.path.exists(path + extra):
            os.remove(path + extra)
    open(path, "w").close()  # truncated to 0 bytes
    with pytest.raises(StateStoreError, match="exists but is empty"):
        new_job(spark, sqlite_url, clock)
    assert os.path.getsize(path) == 0  # no schema was created in it


@pytest.mark.parametrize("how", ["delete", "replace"])
def test_state_file_deleted_or_replaced_mid_run_refuses_the_commit(spark, sqlite_url, clock,
                                                                   tmp_path, how):
    from sparkmark.core.errors import StateStoreError
    src = str(tmp_path / "in")
    first_run(spark, sqlite_url, clock, src)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    Job(spark, state=other, clock=clock)  # a second, valid store
    write_json(f"{src}/b.json", [2], clock.now - MIN)
    job = new_job(spark, sqlite_url, clock)
    assert job.read.files(src, transformation_ctx="src").count() == 1
    path = sqlite_path(sqlite_url)
    if how == "delete":
        os.remove(path)
    else:
        os.replace(tmp_path / "other.db", path)
    with pytest.raises(StateStoreError, match="was (deleted|replaced)"):
        job.commit()


def test_store_replaced_mid_run_refuses_the_commit(spark, state_url, clock, tmp_path):
    """The store's identity (a random id in sm_meta) is checked at commit."""
    import sqlalchemy as sa
    from sparkmark.core.errors import StateStoreError
    src = str(tmp_path / "in")
    first_run(spark, state_url, clock, src)
    job = new_job(spark, state_url, clock)
    engine = sa.create_engine(state_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as c:  # as if the database had been recreated from another store
        c.execute(sa.text("UPDATE sm_meta SET value = 'someotherstore' WHERE key = 'store_id'"))
    engine.dispose()
    with pytest.raises(StateStoreError, match="replaced by another store"):
        job.commit()
    assert job.store.list_runs(job_name="orders")[-1]["status"] == "FAILED"


def test_a_new_state_file_is_created_only_where_none_exists(spark, tmp_path, clock):
    url = f"sqlite:///{tmp_path / 'fresh' / 'state.db'}"
    job = Job(spark, state=url, clock=clock)
    assert os.path.getsize(sqlite_path(url)) > 0 and job.store.store_id


# ---------------------------------------------------------------------- 4. the clock
def test_driver_clock_an_hour_ahead_for_one_run_loses_no_file(spark, state_url, clock,
                                                              tmp_path):
    src = str(tmp_path / "in")
    true_now = clock.now
    write_json(f"{src}/a.json", [1], true_now - 30 * MIN)
    clock.now = true_now + 60 * MIN  # the driver's clock runs an hour ahead for this run
    job = new_job(spark, state_url, clock)
    assert [r.id for r in job.read.files(src, transformation_ctx="src").collect()] == [1]
    job.commit()
    # written after that run, stamped by the storage's (right) clock
    write_json(f"{src}/b.json", [2], true_now + 10 * MIN)
    clock.now = true_now + 20 * MIN  # the clock is right again
    job = new_job(spark, state_url, clock)
    assert [r.id for r in job.read.files(src, transformation_ctx="src").collect()] == [2]
    job.commit()


def test_driver_clock_a_day_behind_loses_no_file(spark, sqlite_url, clock, tmp_path):
    src = str(tmp_path / "in")
    true_now = clock.now
    write_json(f"{src}/a.json", [1], true_now - MIN)
    job = new_job(spark, sqlite_url, clock)
    assert job.read.files(src, transformation_ctx="src").count() == 1
    job.commit()
    write_json(f"{src}/b.json", [2], true_now + 5 * MIN)
    clock.now = true_now - 24 * 60 * MIN  # jumps back a day
    job = new_job(spark, sqlite_url, clock)
    assert job.read.files(src, transformation_ctx="src").count() == 0  # b is "in the future"
    job.commit()
    clock.now = true_now + 10 * MIN
    job = new_job(spark, sqlite_url, clock)
    assert [r.id for r in job.read.files(src, transformation_ctx="src").collect()] == [2]
    job.commit()


def test_empty_input_with_a_clock_ahead_settles_nothing(spark, sqlite_url, clock, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    true_now = clock.now
    clock.now = true_now + 60 * MIN
    job = new_job(spark, sqlite_url, clock)
    assert job.read.files(str(src), transformation_ctx="src").count() == 0
    job.commit()
    write_json(f"{src}/a.json", [1], true_now + MIN)
    clock.now = true_now + 2 * MIN
    job = new_job(spark, sqlite_url, clock)
    assert [r.id for r in job.read.files(str(src), transformation_ctx="src").collect()] == [1]
    job.commit()


@pytest.mark.parametrize("bad,msg", [
    (lambda: 1_700_000_000, "looks like epoch seconds"),
    (lambda: 1_700_000_000_000_000_000, "looks like epoch nanoseconds"),
    (lambda: 1_700_000_000_000.5, "returned a float"),
    ("datetime", r"returned a datetime \(e.g. datetime.now\)"),
])
def test_clock_of_the_wrong_type_or_unit_is_a_clear_error_at_init(spark, sqlite_url, bad, msg):
    import datetime as dt
    from sparkmark.core.errors import ConfigError
    if bad == "datetime":
        bad = dt.datetime.now
    job = Job(spark, state=sqlite_url, clock=bad)
    with pytest.raises(ConfigError, match=msg):
        job.init("orders", ENABLE)
    assert job.store.job_row("orders") is None  # nothing was started


# ---------------------------------------------------------------------- 8-9. secrets
def test_state_url_password_in_the_query_is_masked_in_every_error(spark, pg_server):
    from sparkmark import Bookmarks
    from sparkmark.core.errors import StateStoreError, UnknownJobError
    good = pg_server.create_database(f"sec{os.getpid()}") + "?password=s3cr3tpw"
    with pytest.raises(UnknownJobError) as e:
        Bookmarks(good).get("nope")
    assert "s3cr3tpw" not in str(e.value) and "password=***" in str(e.value)
    down = "postgresql+psycopg://postgres@127.0.0.1:1/x?password=s3cr3tpw"
    with pytest.raises(StateStoreError) as e:
        Bookmarks(down)
    assert "s3cr3tpw" not in str(e.value) and "unreachable" in str(e.value)
    from sparkmark.state.store import redact
    assert redact("sqlite:///x.db?pwd=s3cr3tpw") == "sqlite:///x.db?pwd=***"


def test_jdbc_properties_are_stored_by_allowlist_and_secrets_scrubbed_from_errors(
        spark, state_url, clock, pg_target):
    sa_url, jdbc, props = pg_target
    props = {**props, "passwd": "hunter2pw", "sslpassword": "k3y", "tcpKeepAlive": "true",
             "ApplicationName": "app-xyz"}
    with pytest.raises(ValueError):
        with Job(spark, state=state_url, clock=clock).run("sec", ENABLE) as job:
            job.write_jdbc(spark.range(2), jdbc, "dest", properties=props)
            raise ValueError(f"could not log in with hunter2pw to {jdbc}?password=other1")
    run = job.store.list_runs(job_name="sec")[-1]
    assert run["status"] == "FAILED"
    assert "hunter2pw" not in run["error"] and "other1" not in run["error"]
    assert "could not log in with ***" in run["error"]
    stored = json.loads(run["outputs"])[0]["properties"]
    assert stored == {"user": "postgres", "driver": "org.postgresql.Driver"}  # which driver
    everything = json.dumps({k: str(v) for k, v in run.items()})
    assert "hunter2pw" not in everything and "app-xyz" not in everything and "k3y" not in everything


# ---------------------------------------------------------------------- 7. files beside partitions
def test_file_beside_partition_folders_is_an_error_never_processed_unread(spark, state_url,
                                                                          clock, tmp_path):
    from sparkmark.core.errors import SourceError
    src = str(tmp_path / "in")
    write_json(f"{src}/p=1/a.json", [1], clock.now - MIN)
    write_json(f"{src}/x.json", [2], clock.now - MIN)
    job = new_job(spark, state_url, clock)
    with pytest.raises(SourceError, match=r"input file \S*/in/x.json lies beside partition "
                                          r"folders such as p=1/"):
        job.read.files(src, transformation_ctx="src")
    job.fail("refused")
    assert job.store.bookmark_entry("orders")["JobBookmark"] == {}
    # the way out the message names
    job = new_job(spark, state_url, clock)
    df = job.read.files(src, transformation_ctx="src", options={"exclusions": '["x.json"]'})
    assert [r.id for r in df.collect()] == [1]
    job.commit()


# ---------------------------------------------------------------------- 10. release
def test_a_run_that_never_finishes_can_be_released_from_outside(state_url, clock):
    from sparkmark import Bookmarks
    from sparkmark.core.errors import BookmarkConflictError, ConcurrentRunError
    stuck = Job(None, state=state_url, clock=clock).init("nb", ENABLE)  # a notebook mid-way
    with pytest.raises(ConcurrentRunError, match="sparkmark bookmark release nb"):
        Job(None, state=state_url, clock=clock).init("nb", ENABLE)
    with pytest.raises(ConcurrentRunError, match=f"sparkmark bookmark release nb --run-id "
                                                 f"{stuck.run_id}"):
        Bookmarks(state_url, clock=clock).reset("nb")
    with pytest.raises(Exception, match="is not the active run"):
        Bookmarks(state_url, clock=clock).release("nb", "f" * 32)
    assert Bookmarks(state_url, clock=clock).release("nb", stuck.run_id) == stuck.run_id
    run = stuck.store.get_run(stuck.run_id)
    assert run["status"] == "FAILED" and "released" in run["error"]
    nxt = Job(None, state=state_url, clock=clock).init("nb", ENABLE)
    assert nxt.attempt == 1
    nxt.commit()
    with pytest.raises(BookmarkConflictError):  # the stuck cell, if it ever goes on
        stuck.commit()


def test_release_from_the_command_line(state_url, clock):
    from typer.testing import CliRunner
    from sparkmark.ops.cli import app
    stuck = Job(None, state=state_url, clock=clock).init("nb", ENABLE)
    res = CliRunner().invoke(app, ["--state", state_url, "bookmark", "release", "nb"])
    assert res.exit_code == 0, res.output
    assert f"run {stuck.run_id} of nb released" in res.output
    res = CliRunner().invoke(app, ["--state", state_url, "bookmark", "release", "nb"])
    assert res.exit_code == 2 and "has no active run" in res.output


def test_heartbeat_stops_once_the_job_object_is_gone(state_url):
    import gc
    import time as _t
    from sparkmark.core.clock import system_clock
    job = Job(None, state=state_url, clock=system_clock, lease_ms=300).init("gone", ENABLE)
    store = job.store
    _t.sleep(0.5)
    first = store.job_row("gone")["lease_expires_ts"]
    _t.sleep(0.5)
    assert store.job_row("gone")["lease_expires_ts"] > first  # renewed while the Job lives
    del job
    gc.collect()
    _t.sleep(0.5)
    stopped = store.job_row("gone")["lease_expires_ts"]
    _t.sleep(0.6)
    assert store.job_row("gone")["lease_expires_ts"] == stopped


# ---------------------------------------------------------------------- 11. lease identity
def test_live_run_in_another_pid_namespace_is_never_taken_over(state_url, clock):
    from sparkmark.core.errors import ConcurrentRunError
    from sparkmark.state.lease import this_host
    from sparkmark.state.schema import jobs
    job = Job(None, state=state_url, clock=clock).init("ctr", ENABLE)
    # another container: same host name, same boot, another PID namespace, a pid we cannot see
    with job.store.engine.begin() as conn:
        conn.execute(jobs.update().values(lease_host=f"{this_host()}#aaaa.4026530000.12345",
                                          lease_pid=4_000_000))
    with pytest.raises(ConcurrentRunError, match="already has an active run"):
        Job(None, state=state_url, clock=clock).init("ctr", ENABLE)
    assert job.store.job_row("ctr")["active_run_id"] == job.run_id


def test_recycled_pid_of_a_dead_holder_is_not_mistaken_for_it(state_url, clock):
    from sparkmark.state.lease import lease_token, this_host
    from sparkmark.state.schema import jobs
    job = Job(None, state=state_url, clock=clock).init("pid", ENABLE)
    token = lease_token(this_host(), os.getpid())
    stale = token.rsplit(".", 1)[0] + ".1"  # same namespace and pid, another start time
    with job.store.engine.begin() as conn:
        conn.execute(jobs.update().values(lease_host=stale, lease_pid=os.getpid()))
    nxt = Job(None, state=state_url, clock=clock).init("pid", ENABLE)  # taken over at once
    assert nxt.attempt == 1
    nxt.commit()


HOLDER = """
import sys, time
from sparkmark import Job
job = Job(None, state=sys.argv[1]).init("ctr", {"job_bookmark_option": "job-bookmark-enable"})
print("ready", flush=True)
time.sleep(120)
"""


def test_live_run_in_a_real_other_pid_namespace_is_never_taken_over(state_url, tmp_path):
    """A container that shares our host name: its pid (3999999) does not exist here."""
    import shutil
    import subprocess
    import sys
    from sparkmark.core.errors import ConcurrentRunError
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare and root to start a process in a new PID namespace")
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    cmd = ["unshare", "-p", "-f", "--kill-child", "--mount-proc", "sh", "-c",
           'echo 3999998 > /proc/sys/kernel/ns_last_pid && "$0" "$1" "$2"',
           sys.executable, str(script), state_url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        line = proc.stdout.readline()
        if line.strip() != "ready":
            pytest.skip(f"could not start the holder in a new PID namespace: "
                        f"{proc.stderr.read()[-300:]}")
        row = Job(None, state=state_url).store.job_row("ctr")
        assert row["lease_pid"] == 3_999_999
        with pytest.raises(ConcurrentRunError, match="already has an active run"):
            Job(None, state=state_url).init("ctr", ENABLE)
    finally:  # the holder is unshare's child, in its own namespace: end the whole group
        import signal
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


# ---------------------------------------------------------------------- 12. error wording
def test_read_only_commands_never_create_a_store(tmp_path):
    from sparkmark.core.errors import StateStoreError
    from sparkmark.state import open_store
    typo = tmp_path / "no" / "such" / "state.db"
    with pytest.raises(StateStoreError, match="there is no state store at"):
        open_store(f"sqlite:///{typo}", create=False)
    assert not (tmp_path / "no").exists()


def test_read_only_commands_open_the_store_read_only(state_url, clock):
    """`bookmark get`, `history` and `report` open the store read-only (SQLite mode=ro,
    PostgreSQL READ ONLY transactions): they cannot change it, even by mistake."""
    import sqlalchemy as sa
    from sparkmark.state import open_store
    writer = open_store(state_url)
    with writer.tx("seed") as conn:
        conn.exec_driver_sql("INSERT INTO sm_meta (key, value) VALUES ('probe', 'before')")
    reader = open_store(state_url, create=False)
    assert reader.store_id == writer.store_id
    with pytest.raises(sa.exc.DBAPIError, match="(?i)read.?only"):
        with reader.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE sm_meta SET value = 'after' WHERE key = 'probe'")
    with writer.tx("check") as conn:
        assert conn.exec_driver_sql(
            "SELECT value FROM sm_meta WHERE key = 'probe'").scalar() == "before"


def test_read_only_commands_do_not_upgrade_an_older_store(state_url, clock):
    from sparkmark.core.errors import StateStoreError
    from sparkmark.state import open_store
    writer = open_store(state_url)
    with writer.tx("age it") as conn:
        conn.exec_driver_sql("UPDATE sm_meta SET value = '0' WHERE key = 'schema_version'")
    with pytest.raises(StateStoreError, match="older than this sparkmark's .*only reads"):
        open_store(state_url, create=False)
    with writer.tx("check") as conn:
        assert conn.exec_driver_sql(
            "SELECT value FROM sm_meta WHERE key = 'schema_version'").scalar() == "0"


def test_state_lock_held_too_long_has_its_own_message(tmp_path, clock):
    import sqlite3
    from sparkmark.core.errors import StateStoreError
    from sparkmark.state import open_store
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = open_store(url)
    holder = sqlite3.connect(str(tmp_path / "s.db"), timeout=1)
    holder.execute("BEGIN IMMEDIATE")
    store.engine.dispose()
    fast = __import__("sqlalchemy").create_engine(url, connect_args={"timeout": 0.2})
    store.engine = fast  # the same store, with a short busy timeout so the test is quick
    try:
        with pytest.raises(StateStoreError, match="stayed locked by another process"):
            store.update_run("x" * 32, status="FAILED")
    finally:
        holder.rollback()
        holder.close()
        fast.dispose()


def test_read_only_state_file_has_its_own_message(tmp_path, clock):
    from sparkmark.core.errors import StateStoreError
    if os.geteuid() == 0:
        pytest.skip("root writes to read-only files")
    url = f"sqlite:///{tmp_path / 's.db'}"
    Job(None, state=url, clock=clock)
    os.chmod(tmp_path / "s.db", 0o444)
    with pytest.raises(StateStoreError, match="read-only"):
        Job(None, state=url, clock=clock).init("x", ENABLE)


def test_unwritable_working_folder_is_one_line_exit_2(tmp_path):
    import subprocess
    import sys
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / ".sparkmark").write_text("a file where the state folder should be")
    res = subprocess.run([sys.executable, "-m", "sparkmark.ops.cli", "bookmark", "reset", "x"],
                         cwd=ro, capture_output=True, text=True,
                         env={**os.environ, "SPARKMARK_STATE": ""})
    assert res.returncode == 2, res.stderr
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    # an admin command creates no store (issue 28): it says there is none, in one line
    assert len(lines) == 1 and lines[0].startswith("error: there is no state store"), lines


@pytest.mark.parametrize("name", [" orders", "orders ", "or\x00ders", "or\nders"])
def test_job_names_with_whitespace_or_control_characters_are_refused(sqlite_url, clock, name):
    from sparkmark.core.errors import ConfigError
    job = Job(None, state=sqlite_url, clock=clock)
    with pytest.raises(ConfigError, match="leading/trailing whitespace or a control character"):
        job.init(name, ENABLE)
    assert job.store.job_names() == []


def test_echoed_values_are_capped(sqlite_url, clock):
    from sparkmark import Bookmarks
    from sparkmark.core.errors import UnknownRunError
    Job(None, state=sqlite_url, clock=clock).init("orders", ENABLE).commit()
    with pytest.raises(UnknownRunError) as e:
        Bookmarks(sqlite_url).get("orders", "r" * 10_000)
    assert len(str(e.value)) < 400
