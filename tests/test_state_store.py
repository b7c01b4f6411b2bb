"""State store errors: unreachable servers, malformed URLs, newer schemas, no leaked secrets."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import StateStoreError, UnknownJobError
from sparkmark.state import DEFAULT_STATE_URL, open_store, resolve_state_url
from sparkmark.state.schema import SCHEMA_VERSION


def test_unreachable_postgres_is_one_clear_error_without_password():
    url = "postgresql+psycopg://alice:s3cr3t-pw@127.0.0.1:1/state"
    with pytest.raises(StateStoreError) as e:
        open_store(url)
    msg = str(e.value)
    assert "s3cr3t-pw" not in msg and "***" in msg
    assert "unreachable" in msg and "SPARKMARK_STATE" in msg


@pytest.mark.parametrize("url", ["not a url", "://nothing", "mysql+nodriver://x/y"])
def test_malformed_or_unsupported_url(url):
    with pytest.raises(StateStoreError) as e:
        open_store(url)
    assert "sqlite:///" in str(e.value)  # says what a good URL looks like


def test_plain_postgresql_url_uses_psycopg3(pg_server):
    url = pg_server.create_database("plainurl").replace("postgresql+psycopg://", "postgresql://")
    store = open_store(url)
    assert store.engine.url.get_driver_name() == "psycopg"


def test_a_postgres_scheme_url_is_postgresql(pg_server):
    """``postgres://`` (libpq's and many platforms' spelling) opens the same store as
    ``postgresql://``."""
    url = pg_server.create_database("pgscheme").replace("postgresql+psycopg://", "postgres://")
    store = open_store(url)
    assert store.engine.url.get_backend_name() == "postgresql"
    assert store.engine.url.get_driver_name() == "psycopg"


def test_an_unparseable_url_is_named_in_the_error():
    with pytest.raises(StateStoreError) as e:
        open_store("foo:bar")
    assert "'foo:bar'" in str(e.value) and "sqlite:///" in str(e.value)


def test_resolution_order(monkeypatch, tmp_path):
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    assert resolve_state_url(None) == DEFAULT_STATE_URL
    monkeypatch.setenv("SPARKMARK_STATE", f"sqlite:///{tmp_path}/env.db")
    assert resolve_state_url(None).endswith("env.db")
    assert resolve_state_url("sqlite:///x.db") == "sqlite:///x.db"


def test_default_store_lives_under_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    monkeypatch.chdir(tmp_path)
    Job(None).init("here", {}).commit()
    assert (tmp_path / ".sparkmark" / "state.db").is_file()


def test_schema_is_versioned_and_a_newer_schema_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path}/v.db"
    open_store(url)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        assert conn.execute(sa.text("SELECT value FROM sm_meta WHERE key='schema_version'")
                            ).scalar() == str(SCHEMA_VERSION)
        conn.execute(sa.text("UPDATE sm_meta SET value='999' WHERE key='schema_version'"))
    engine.dispose()
    from sparkmark.state import store_base
    store_base._ENGINES.pop(url, None)
    with pytest.raises(StateStoreError, match="newer than this sparkmark"):
        open_store(url)


def test_unknown_job(state_url):
    with pytest.raises(UnknownJobError, match="no job named 'ghost'"):
        Bookmarks(state_url).get("ghost")


def test_a_deleted_sqlite_file_is_not_served_from_the_engine_cache(tmp_path):
    url = f"sqlite:///{tmp_path}/gone/state.db"
    Job(None, state=url).init("was-here", {}).commit()
    import shutil
    shutil.rmtree(tmp_path / "gone")  # e.g. rm -r .sparkmark between two runs in one notebook
    with pytest.raises(UnknownJobError):
        Bookmarks(url).get("was-here")
    assert (tmp_path / "gone" / "state.db").is_file()


def test_reopening_a_sqlite_store_in_one_process_needs_no_transaction(tmp_path):
    """Every Job opens its store; a SQLite file this process opened before (still the same
    file) gives its store id from the engine cache without a transaction, and a run's own
    transactions still check it (issue 22/26: one transaction less per run).  A file replaced
    since is opened afresh."""
    url = f"sqlite:///{tmp_path}/s.db"
    first = open_store(url)
    began: list[int] = []

    def count(conn):
        began.append(1)

    sa.event.listen(first.engine, "begin", count)
    try:
        again = open_store(url)
        assert began == [] and again.engine is first.engine
        assert again.store_id == first.store_id is not None
        Job(None, state=url).init("j", {}).commit()
        assert len(began) >= 2  # begin_run and commit_run, each checking the store id
    finally:
        sa.event.remove(first.engine, "begin", count)
    other = f"sqlite:///{tmp_path}/other.db"
    open_store(other)
    from sparkmark.state import store_base
    store_base._ENGINES.pop(other)[0].dispose()  # closed: its WAL checkpointed into the file
    (tmp_path / "s.db").unlink()
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"s.db{suffix}").unlink(missing_ok=True)
    (tmp_path / "other.db").rename(tmp_path / "s.db")
    replaced = open_store(url)
    assert replaced.engine is not first.engine and replaced.store_id != first.store_id


def test_begin_run_hands_over_the_runs_to_recover_read_in_its_transaction(tmp_path):
    url = f"sqlite:///{tmp_path}/r.db"
    store = open_store(url)
    start = store.begin_run("j", run_id="a" * 32, option="job-bookmark-enable", now=1,
                            snapshot_ts=1, lease_ms=60_000, pid=1)
    assert start.to_recover == []
    store.commit_run("j", "a" * 32, start_version=start.start_version, new_state={"x": 1},
                     status="SUCCEEDED", now=2)
    store.update_run("a" * 32, publish_state="pending")
    start = store.begin_run("j", run_id="b" * 32, option="job-bookmark-enable", now=3,
                            snapshot_ts=3, lease_ms=60_000, pid=1)
    assert [r["run_id"] for r in start.to_recover] == ["a" * 32]
    assert start.to_recover == store.runs_to_recover("j")


def _staged_run(store, job: str, n: int, target: str | None) -> list[str]:
    """A run of ``job`` that stages output for ``target`` (none: a read-only run) and commits;
    the other jobs that wrote the target, as the write saw them."""
    import os
    run_id = f"{n:032x}"
    start = store.begin_run(job, run_id=run_id, option="job-bookmark-enable", now=n,
                            snapshot_ts=n, lease_ms=60_000, pid=os.getpid())
    others = []
    if target is not None:
        outputs = f'[{{"kind": "files", "target": "{target}", "staging": "_s/{run_id}"}}]'
        others = store.record_staged(job, run_id, outputs=outputs, target=target)
    store.commit_run(job, run_id, start_version=start.start_version, new_state={"c": n},
                     status="SUCCEEDED", now=n + 1)
    return others


def test_jobs_writing_a_target_are_an_index_lookup_that_an_upgrade_fills(state_url):
    """Schema 3's sm_targets: a write learns which other jobs wrote its target in its own
    ledger transaction; a schema-2 store gets the table filled from its runs' outputs (and the
    index an init's recovery lookup uses)."""
    from sparkmark.state import store_base
    store = open_store(state_url)
    assert _staged_run(store, "a", 1, "file:/out/x") == []
    assert _staged_run(store, "a", 2, "file:/out/x") == []       # its own earlier run: no one
    assert _staged_run(store, "b", 3, "file:/out/x") == ["a"]
    assert _staged_run(store, "b", 4, "file:/out/y") == []
    assert _staged_run(store, "c", 5, None) == []
    assert store.jobs_writing("file:/out/x", besides="c") == ["a", "b"]
    assert store.jobs_writing("file:/out/x", besides="a") == ["b"]
    assert store.jobs_writing("file:/out/z", besides="a") == []
    with store.tx("rows") as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM sm_targets").scalar() == 3
        conn.exec_driver_sql("DROP TABLE sm_targets")  # what sparkmark with schema 2 left
        conn.exec_driver_sql("DROP INDEX ix_sm_runs_publish")
        conn.exec_driver_sql("UPDATE sm_meta SET value = '2' WHERE key = 'schema_version'")
        # a malformed outputs value is skipped by the upgrade, not fatal
        conn.exec_driver_sql("UPDATE sm_runs SET outputs = 'not json' WHERE run_id = "
                             f"'{4:032x}'")
    store_base._ENGINES.clear()  # a new process: the upgrade runs on first use
    again = open_store(state_url)
    with again.tx("check") as conn:
        assert conn.exec_driver_sql("SELECT value FROM sm_meta WHERE key = 'schema_version'"
                                    ).scalar() == str(SCHEMA_VERSION)
        rows = sorted(tuple(r) for r in conn.exec_driver_sql(
            "SELECT job_name, target, first_run_id FROM sm_targets"))
        assert "ix_sm_runs_publish" in {ix["name"] for ix in sa.inspect(conn).get_indexes(
            "sm_runs")}
    assert rows == [("a", "file:/out/x", f"{1:032x}"), ("b", "file:/out/x", f"{3:032x}")]
    assert _staged_run(again, "d", 6, "file:/out/x") == ["a", "b"]
    assert _staged_run(again, "b", 7, "file:/out/y") == []


@pytest.mark.parametrize("sort_from", [None, 0])
def test_a_commits_file_audit_rows_read_back_as_written(state_url, sort_from, monkeypatch):
    """The audit rows go in through the driver's own executemany (one bind style per backend):
    on SQLite and PostgreSQL every row reads back with its values and its path's hash, a path
    with quotes, a percent sign and non-ASCII letters included, in path-hash order, and a later
    lookup finds each by its hash.  ``sort_from=0``: as in an audit table already large
    (``AUDIT_SORT_TABLE``), the rows go in in path-hash order."""
    from sparkmark.planning.bands import path_hash
    from sparkmark.core.run import FileRead
    from sparkmark.state import audit as audit_module
    if sort_from is not None:
        monkeypatch.setattr(audit_module, "AUDIT_SORT_TABLE", sort_from)
    store = open_store(state_url)
    start = store.begin_run("j", run_id="c" * 32, option="job-bookmark-enable", now=1,
                            snapshot_ts=1, lease_ms=60_000, pid=1)
    odd = "file:/in/it's 100% \"ünïcode\" ?.json"
    read = [FileRead(f"file:/in/{i:05d}.json", i, 1_000 + i, "new") for i in range(25_000)]
    read.append(FileRead(odd, None, None, "late"))
    store.commit_run("j", "c" * 32, start_version=start.start_version, new_state={"x": 1},
                     status="SUCCEEDED", now=2, files_read=[("src", read), (None, read[:3])])
    with store.tx("rows") as conn:
        rows = conn.exec_driver_sql(
            "SELECT ctx, path, path_hash, size, mtime, kind, run_id, read_ts, job_name "
            "FROM sm_files").all()
    assert len(rows) == 25_004
    assert all(r.path_hash == path_hash(r.path) for r in rows)
    if state_url.startswith("sqlite"):  # in path-hash order: the index fills page by page
        with store.tx("order") as conn:
            order = [h for (h,) in conn.exec_driver_sql(
                "SELECT path_hash FROM sm_files WHERE ctx = 'src' ORDER BY rowid")]
        assert len(order) == 25_001
        assert (order == sorted(order)) is (sort_from == 0)  # an empty table: as read
    by_ctx = {(r.ctx, r.path): r for r in rows}
    assert by_ctx[("src", odd)][2:] == (path_hash(odd), None, None, "late", "c" * 32, 2, "j")
    assert by_ctx[("src", "file:/in/24999.json")][2:6] == (
        path_hash("file:/in/24999.json"), 24_999, 25_999, "new")
    assert sorted(p for c, p in by_ctx if c == "") == [f"file:/in/{i:05d}.json" for i in range(3)]
    found = store.files_read_before("j", "src", [odd, "file:/in/00007.json", "file:/in/x.json"])
    assert found == {odd: {(None, None)}, "file:/in/00007.json": {(1_007, 7)}}


def test_a_writing_sqlite_store_has_a_page_cache_for_large_audits(tmp_path):
    """A writing SQLite store's connections get a 32 MB page cache (SQLite's default is 2 MB,
    which a first run's audit index outgrows); a read-only one keeps SQLite's default."""
    from sparkmark.state.store_base import SQLITE_CACHE_KIB
    url = f"sqlite:///{tmp_path}/c.db"
    store = open_store(url)
    with store.tx("cache") as conn:
        assert conn.exec_driver_sql("PRAGMA cache_size").scalar() == -SQLITE_CACHE_KIB
    store.begin_run("j", run_id="d" * 32, option="job-bookmark-enable", now=1, snapshot_ts=1,
                    lease_ms=60_000, pid=1)
    reader = open_store(url, create=False)
    with reader.tx("cache") as conn:
        assert conn.exec_driver_sql("PRAGMA cache_size").scalar() == -2000


@pytest.mark.parametrize("paramstyle", ["qmark", "named"])
def test_insert_rows_same_rows_through_the_driver_and_through_sqlalchemy(tmp_path, paramstyle):
    """``_insert_rows`` hands qmark/format drivers one driver-level executemany and any other
    bind style (SQLite set to ``named``: a real driver, a style it has no placeholder for) to
    SQLAlchemy; both paths store the same rows under names that need quoting, and an empty
    list inserts nothing."""
    from sparkmark.state.audit import _PLACEHOLDER, _insert_rows
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'rows.db'}", paramstyle=paramstyle)
    meta = sa.MetaData()
    table = sa.Table("odd table", meta, sa.Column("order", sa.Integer),
                     sa.Column("path name", sa.String))
    meta.create_all(engine)
    rows = [(i, f"s3a://b/k {i}") for i in range(5)]
    with engine.begin() as conn:
        assert conn.dialect.paramstyle == paramstyle
        assert (paramstyle in _PLACEHOLDER) == (paramstyle == "qmark")  # both paths taken
        _insert_rows(conn, table, ("order", "path name"), [])
        _insert_rows(conn, table, ("order", "path name"), rows)
    with engine.connect() as conn:
        got = [tuple(r) for r in conn.execute(sa.select(table).order_by(table.c.order))]
    engine.dispose()
    assert got == rows


def test_ledger_filters_and_limit_are_in_the_sql(state_url, clock):
    """``list_runs`` / ``count_runs`` put the status, start-time and limit into the query: the
    database returns only the rows asked for (a long history is not read into Python)."""
    from sparkmark.state.schema import runs
    for i in range(3):
        job = Job(None, state=state_url, clock=clock).init("orders", {})
        job.commit() if i != 1 else job.fail("boom")
        clock.advance(1000)
    store = open_store(state_url)
    t0 = store.list_runs(job_name="orders", last=3)[0]["run_start_ts"]
    seen: list[str] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if "sm_runs" in statement:
            seen.append(statement)
    sa.event.listen(store.engine, "before_cursor_execute", capture)
    try:
        got = store.list_runs(job_name="orders", statuses=("SUCCEEDED",), started_from=t0 + 1,
                              last=1)
        n = store.count_runs(job_name="orders", statuses=("FAILED", "SUCCEEDED"),
                             started_from=t0 + 1)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", capture)
    assert [r["status"] for r in got] == ["SUCCEEDED"] and got[0]["run_start_ts"] == t0 + 2000
    assert n == 2
    listed, counted = seen
    for sql in (listed, counted):
        assert "sm_runs.status IN" in sql and "sm_runs.run_start_ts >=" in sql, sql
    assert "LIMIT" in listed and "count(*)" in counted.lower()
    assert store.count_runs() == 3 and runs.name == "sm_runs"


def test_history_last_reads_only_the_newest_versions(sqlite_url, clock):
    for i in range(4):
        job = Job(None, state=sqlite_url, clock=clock).init("orders", {"job_bookmark_option":
                                                                      "job-bookmark-enable"})
        job.bookmark("src")
        job.record_read("src", {"high": i}, {"new_input": True})
        job.commit()
        clock.advance(1000)
    store = open_store(sqlite_url)
    assert [v.version for v in store.history("orders")] == [0, 1, 2, 3, 4]
    assert [v.version for v in store.history("orders", last=2)] == [3, 4]
    assert [v.version for v in store.history("orders", last=5)] == [0, 1, 2, 3, 4]
    assert [v.version for v in store.history("orders", last=9)] == [0, 1, 2, 3, 4]
    assert store.history("orders", last=1)[0].state == {"src": {"high": 3}}


def _dump(path) -> dict[str, list[tuple]]:
    """Every row of every table of a SQLite file, read with plain sqlite3."""
    import sqlite3
    with sqlite3.connect(path) as db:
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: sorted(map(tuple, db.execute(f'SELECT * FROM "{n}"'))) for n in names}


@pytest.mark.parametrize("bad", ["DONE", "succeeded", "", "ZZZ", "ROLLEDBACK", "RUNNING ",
                                 "FAILED\n", "A"])
def test_a_ledger_row_with_an_unknown_status_stops_the_next_run(tmp_path, clock, bad):
    """Someone wrote a status sparkmark does not know into sm_runs: the job's next run does
    not start (one StateCorruptError naming the job, the run, the status and what to do), and
    the store is left exactly as it was; other jobs still run."""
    import sqlite3

    from sparkmark.core.errors import StateCorruptError
    path = tmp_path / "state.db"
    url = f"sqlite:///{path}"
    ids = []
    for i in range(3):
        job = Job(None, state=url, clock=clock).init("orders", {"job_bookmark_option":
                                                                "job-bookmark-enable"})
        job.bookmark("src")
        job.record_read("src", {"high": i}, {"new_input": True})
        job.commit()
        ids.append(job.run_id)
        clock.advance(1000)
    with sqlite3.connect(path) as db:  # plain SQL, as a person at a SQL prompt would
        db.execute("UPDATE sm_runs SET status = ? WHERE run_id = ?", (bad, ids[1]))
    before = _dump(path)

    job = Job(None, state=url, clock=clock)
    with pytest.raises(StateCorruptError) as e:
        job.init("orders", {"job_bookmark_option": "job-bookmark-enable"})
    msg = str(e.value)
    assert f"job 'orders': run {ids[1]} has status {bad!r} in the ledger" in msg, msg
    assert ("which sparkmark does not know (not one of RUNNING, SUCCEEDED, EMPTY, FAILED, "
            "SKIPPED, ROLLED_BACK; edited in the store?)") in msg
    assert "nothing was read or changed" in msg and "Set that row's status back" in msg
    assert not job.active
    assert _dump(path) == before  # no run row, no lease, no counter moved

    other = Job(None, state=url, clock=clock).init("invoices", {})  # other jobs: unaffected
    other.commit()
    with sqlite3.connect(path) as db:  # repaired by hand: the job runs again
        db.execute("UPDATE sm_runs SET status = 'SUCCEEDED' WHERE run_id = ?", (ids[1],))
    job = Job(None, state=url, clock=clock).init("orders", {"job_bookmark_option":
                                                           "job-bookmark-enable"})
    assert job.bookmark("src").previous == {"high": 2}
    job.commit()


def test_the_unknown_status_check_is_index_lookups_and_an_upgrade_adds_its_index(tmp_path):
    """The begin's check costs a few lookups in ix_sm_runs_status, not a walk over the job's
    history; a schema-3 store gets the index on first use."""
    import sqlite3

    from sparkmark.state import store_base
    from sparkmark.state.run_rows import _Q_BEGIN_JOB
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    store = open_store(url)
    _staged_run(store, "a", 1, None)
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX ix_sm_runs_status")
        db.execute("UPDATE sm_meta SET value = '3' WHERE key = 'schema_version'")
    store_base._ENGINES.clear()  # a new process: the upgrade runs on first use
    store = open_store(url)
    _staged_run(store, "a", 2, None)
    with store.tx("check") as conn:
        assert conn.exec_driver_sql("SELECT value FROM sm_meta WHERE key = 'schema_version'"
                                    ).scalar() == str(SCHEMA_VERSION)
        sql = str(_Q_BEGIN_JOB.compile(store.engine))
        plan = [r[-1] for r in conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN " + sql, ("store_id", "RUNNING", "a"))]
    status_lookups = [p for p in plan if "ix_sm_runs_status" in p]
    assert len(status_lookups) == 7, plan  # one per gap between the six known statuses
    assert all(p.startswith("SEARCH") and "status" in p for p in status_lookups), plan
    assert not any(p.startswith("SCAN sm_runs") for p in plan), plan


def test_unknown_statuses_are_found_on_every_backend_and_known_ones_never(state_url):
    """The check compares in the database's own collation (PostgreSQL's may not be byte
    order): every known status passes, a near miss of each is refused."""
    from sparkmark.core.errors import StateCorruptError
    from sparkmark.core.status import RunStatus
    store = open_store(state_url)
    _staged_run(store, "a", 1, None)
    rid = f"{1:032x}"
    near = ["succeeded", "ROLLEDBACK", "ROLLED-BACK", "RUNNING ", " EMPTY", "DONE", "", "Z",
            "SKIPPEDX", "FAILE"]
    for n, status in enumerate([s.value for s in RunStatus] + near):
        with store.tx("corrupt") as conn:
            conn.execute(sa.text("UPDATE sm_runs SET status = :s WHERE run_id = :r"),
                         {"s": status, "r": rid})
        run_id = f"{100 + n:032x}"
        if status in RunStatus.__members__:
            store.begin_run("a", run_id=run_id, option="job-bookmark-enable", now=10 + n,
                            snapshot_ts=10 + n, lease_ms=60_000, pid=1)
            store.fail_run("a", run_id, error="x", now=11 + n)
            continue
        with pytest.raises(StateCorruptError, match=f"run {rid} has status {status!r}"):
            store.begin_run("a", run_id=run_id, option="job-bookmark-enable", now=10 + n,
                            snapshot_ts=10 + n, lease_ms=60_000, pid=1)


def test_a_process_that_opens_many_stores_keeps_a_bounded_number_of_files_open(tmp_path):
    """Each store's engine is cached per URL; beyond MAX_ENGINES the least recently used are
    disposed.  Before, a process that opened a store per job (a test worker, a scheduler)
    kept every SQLite file (and its -wal, -shm) open and passed 1,024 descriptors, where
    py4j's callback server (select()) failed."""
    import os

    from sparkmark.state import store_base

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    store_base._ENGINES.clear()
    before = open_fds()
    n = store_base.MAX_ENGINES * 3
    for i in range(n):
        Job(None, state=f"sqlite:///{tmp_path}/s{i}.db").init(f"j{i}", {}).commit()
    assert len(store_base._ENGINES) == store_base.MAX_ENGINES
    grown = open_fds() - before
    assert grown <= 3 * store_base.MAX_ENGINES + 8, grown  # not ~3 per store opened
    # a store whose engine was pushed out (and disposed) still works, reading what it wrote
    assert Bookmarks(f"sqlite:///{tmp_path}/s0.db").store.list_runs(job_name="j0")[0][
        "status"] == "SUCCEEDED"
    Job(None, state=f"sqlite:///{tmp_path}/s0.db").init("j0", {}).commit()
    assert len(Bookmarks(f"sqlite:///{tmp_path}/s0.db").store.list_runs(job_name="j0")) == 2
