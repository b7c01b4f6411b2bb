"""The state store: one interface over SQLite and PostgreSQL (SQLAlchemy 2 Core).

Everything that changes committed state happens in one transaction: a commit writes the new
bookmark version, moves the job's pointer and counters, releases the lease and finishes the ledger
row together.  Rows are locked with ``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite every write
transaction starts with ``BEGIN IMMEDIATE`` so that writers queue instead of deadlocking.
"""
from __future__ import annotations

import functools
import itertools
import json
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn

import sqlalchemy as sa
from sqlalchemy import bindparam, event, select
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError

from sparkmark.core.errors import (BookmarkConflictError, ConcurrentRunError, StateCorruptError,
                      StateStoreError, UnknownJobError, UnknownRunError)
from sparkmark.state import schema
from sparkmark.planning.bands import path_hash
from sparkmark.state.lease import host_name, lease_is_alive, lease_token, this_host
from sparkmark.state.schema import files, jobs, runs, targets, versions
from sparkmark.core.status import PublishState, RunStatus, plain

# Statements every run executes (begin, commit, ledger updates), built once: building a Core
# statement and its cache key costs ~70 us of Python per execution, more than SQLite takes to
# run it (issue 26: 13 statements a run).  Parameters are named ``b_*`` so that they never clash
# with the column names an UPDATE's SET takes from the parameters.
_Q_JOB = select(jobs).where(jobs.c.job_name == bindparam("b_job"))
_Q_JOB_LOCKED = _Q_JOB.with_for_update()
_Q_JOB_NOWAIT = _Q_JOB.with_for_update(nowait=True)
_Q_VERSION = select(versions).where(versions.c.job_name == bindparam("b_job"),
                                    versions.c.version == bindparam("b_version"))
#: the job row (locked) with the store's id; for begin, its current bookmark's state and
#: whether a run's output waits to be recovered; for commit, whether audit rows are past their
#: retention: the store identity check, the version read, the recovery query and the retention
#: DELETE cost no statement of their own when there is nothing for them (issue 26; at begin
#: three statements of Python and SQLite, at commit two)
_STORE_ID_COLUMN = schema.STORE_ID_QUERY.scalar_subquery().label("sm_store_id")
_RECOVERABLE: list[Any] = [sa.literal_column(f"'{PublishState(s).value}'") for s in (
    PublishState.PENDING, PublishState.STAGED, PublishState.REMOVING)]
# no ORDER BY: with one, SQLite walks the job's whole history in ix_sm_runs_job's order instead
# of looking the few runs up in ix_sm_runs_publish (21 ms at 50,000 runs); sorted in Python.
# The states are written into the SQL: an IN of bound values is expanded anew at every
# execution (~80 us of Python at every run's begin, issue 26)
_Q_TO_RECOVER = select(runs).where(
    runs.c.job_name == bindparam("b_job"),
    runs.c.publish_state.in_(_RECOVERABLE),
    runs.c.status != RunStatus.RUNNING)

_Q_COMMIT_JOB = select(jobs, _STORE_ID_COLUMN, sa.exists().where(
    files.c.job_name == jobs.c.job_name, files.c.read_ts < bindparam("b_before")).label(
    "sm_files_expired")).where(jobs.c.job_name == bindparam("b_job")).with_for_update()
_Q_BEGIN_JOB = select(jobs, _STORE_ID_COLUMN, select(versions.c.state).where(
    versions.c.job_name == jobs.c.job_name,
    versions.c.version == jobs.c.current_version).scalar_subquery().label(
    "sm_version_state"), sa.exists().where(
    runs.c.job_name == jobs.c.job_name, runs.c.publish_state.in_(_RECOVERABLE),
    runs.c.status != RunStatus.RUNNING).label("sm_to_recover")).where(
    jobs.c.job_name == bindparam("b_job")).with_for_update()
_U_JOB = jobs.update().where(jobs.c.job_name == bindparam("b_job"))
_U_RUN = runs.update().where(runs.c.run_id == bindparam("b_run"))
_I_RUN = runs.insert()
#: the per-file audit past its retention, deleted at a commit that finds some
_D_OLD_FILES = files.delete().where(files.c.job_name == bindparam("b_job"),
                                    files.c.read_ts < bindparam("b_before"))
_I_VERSION = versions.insert()
#: SQLite page cache of a writing store, in KiB
SQLITE_CACHE_KIB = 32_768
_FILE_COLUMNS = ("job_name", "run_id", "read_ts", "ctx", "path", "path_hash", "size", "mtime",
                 "kind")
_PLACEHOLDER = {"qmark": "?", "format": "%s", "pyformat": "%s"}
_Q_TARGET = select(targets.c.job_name, targets.c.target).where(
    targets.c.target_hash == bindparam("b_hash"))
_I_TARGET = targets.insert()
_RUN_COLUMNS = frozenset(runs.c.keys())


def _insert_rows(conn: Connection, table: sa.Table, columns: tuple[str, ...],
                 rows: list[tuple[Any, ...]]) -> None:
    """Insert many rows of plain values in one driver-level ``executemany`` (SQLite, psycopg):
    SQLAlchemy's own executemany builds and processes a dict per row, which doubled the cost of
    a large run's audit (0.9 s against 0.5 s per 100,000 rows on SQLite).  Other drivers' bind
    styles take SQLAlchemy's path."""
    if not rows:
        return
    mark = _PLACEHOLDER.get(conn.dialect.paramstyle)
    if mark is None:
        conn.execute(table.insert(), [dict(zip(columns, r)) for r in rows])
        return
    quote = conn.dialect.identifier_preparer
    conn.exec_driver_sql(
        f"INSERT INTO {quote.format_table(table)} ({', '.join(map(quote.quote, columns))}) "
        f"VALUES ({', '.join([mark] * len(columns))})", rows)


#: a commit sorts its audit rows by path hash when it records at least this many files ...
AUDIT_SORT_READ = 10_000
#: ... and the audit table already holds about this many rows (below, the index's pages stay
#: in the store's cache and sorting costs more than it saves: SQLite, 100,000 more rows after
#: 250,000 took 0.70 s sorted against 0.63 s, after 500,000 0.76 against 0.76)
AUDIT_SORT_TABLE = 1_000_000


def _audit_is_large(conn: Connection) -> bool:
    """Whether ``sm_files`` holds :data:`AUDIT_SORT_TABLE` rows or more, by a cheap estimate:
    SQLite's largest rowid, PostgreSQL's planner count (``reltuples``); other databases: yes."""
    table = conn.dialect.identifier_preparer.format_table(files)
    if conn.dialect.name == "sqlite":
        n = conn.exec_driver_sql(f"SELECT max(rowid) FROM {table}").scalar()
    elif conn.dialect.name == "postgresql":
        n = conn.execute(sa.text("SELECT reltuples FROM pg_catalog.pg_class "
                                 "WHERE oid = to_regclass(:name)"), {"name": table}).scalar()
    else:
        return True
    return float(n or 0) >= AUDIT_SORT_TABLE


def _hash_order(read: Any) -> tuple[Any, Any]:
    """The path hashes of ``read`` (``(path, ...)`` entries) as 64-bit integers, and the order
    that sorts them: in a large audit table (:data:`AUDIT_SORT_TABLE`) the rows then go in in
    path-hash order, so the ``(job_name, path_hash)`` index takes its entries page by page
    instead of at random pages (SQLite, 32 MB cache: 1,000,000 more rows after 1,000,000 in
    6.1 s against 9.0 s; 100,000 after 2,000,000 in 1.07 s against 1.40 s).  8 bytes a file
    and its index, not a string each.

    >>> hashes, order = _hash_order([("file:/a", 0, 0, "new"), ("file:/b", 0, 0, "new")])
    >>> [f"{k:016x}" for k in hashes[order].tolist()] == sorted(
    ...     path_hash(p) for p in ("file:/a", "file:/b"))
    True
    """
    import hashlib

    import numpy as np
    sha1, from_bytes = hashlib.sha1, int.from_bytes  # path_hash's 16 hex digits, as a number
    known = _path_keys(read)
    if known is not None:  # hashed by the run already (a first run's listing)
        hashes = np.frombuffer(known, dtype=np.uint64)
        return hashes, np.argsort(hashes, kind="stable")
    paths = getattr(read, "paths", None)  # the files source's: no row made for a hash
    hashes = np.fromiter((from_bytes(sha1(p.encode("utf-8")).digest()[:8], "big")
                          for p in (paths() if paths is not None else
                                    (entry[0] for entry in read))),
                         dtype=np.uint64, count=len(read))
    return hashes, np.argsort(hashes, kind="stable")


def _path_keys(read: Any) -> Any:
    """The 64-bit path hashes of ``read``'s rows in order (an ``array("Q")``) when its maker
    computed them (the files source's first run), else None."""
    keys = getattr(read, "path_keys", None)
    known = keys() if keys is not None else None
    if known is not None and len(known) != len(read):
        raise ValueError(f"{len(known)} path hashes for {len(read)} audit rows")
    return known


#: audit rows made and inserted at a time
_AUDIT_BATCH = 20_000
#: audit batches per transaction when written ahead of a commit (StateStore.stage_files)
_STAGE_BATCHES = 5


def _rows_at(read: Any, indices: list[int]) -> list[Any]:
    """The entries of ``read`` at ``indices``: through its ``take`` when it has one (the
    files source's rows, made when asked: one Python call per row otherwise)."""
    take = getattr(read, "take", None)
    return take(indices) if take is not None else [read[j] for j in indices]


def _audit_batches(job_name: str, run_id: str, now: int, ctx: str | None, read: Any,
                   large: bool) -> Iterator[list[tuple[Any, ...]]]:
    """The audit rows of one source's files read (``(path, size, mtime, kind)`` entries), in
    bounded batches; in path-hash order when the table is ``large`` and the read is too
    (:func:`_hash_order`)."""
    if large and len(read) >= AUDIT_SORT_READ:
        hashes, order = _hash_order(read)
        for i in range(0, len(read), _AUDIT_BATCH):
            batch = order[i:i + _AUDIT_BATCH]
            yield [(job_name, run_id, now, ctx or "", path, f"{key:016x}", size, mtime, kind)
                   for (path, size, mtime, kind), key in zip(
                       _rows_at(read, batch.tolist()), hashes[batch].tolist())]
        return
    known = _path_keys(read)
    for i in range(0, len(read), _AUDIT_BATCH):
        yield ([(job_name, run_id, now, ctx or "", path, path_hash(path), size, mtime, kind)
                for path, size, mtime, kind in read[i:i + _AUDIT_BATCH]]
               if known is None else
               [(job_name, run_id, now, ctx or "", path, f"{key:016x}", size, mtime, kind)
                for (path, size, mtime, kind), key in zip(
                    read[i:i + _AUDIT_BATCH], known[i:i + _AUDIT_BATCH])])


#: the run statuses whose audit rows count: a committed run's (SUCCEEDED, EMPTY, and ROLLED_BACK
#: later), or a run whose row is gone; rows of a run still RUNNING were written ahead of its
#: commit (:meth:`StateStore.stage_files`) and those of a FAILED or SKIPPED run never committed
_AUDIT_COUNTS = (RunStatus.SUCCEEDED, RunStatus.EMPTY, RunStatus.ROLLED_BACK)


def _audit_counts() -> Any:
    return sa.or_(runs.c.status.is_(None), runs.c.status.in_(_AUDIT_COUNTS))


def _run_fields(fields: dict[str, Any] | None) -> dict[str, Any]:
    """Ledger fields as statement parameters: plain values, and only columns of ``sm_runs``
    (a prebuilt statement would silently ignore a key that is not a column, where
    ``.values()`` raised)."""
    fields = fields or {}
    unknown = fields.keys() - _RUN_COLUMNS
    if unknown:
        raise ValueError(f"not columns of sm_runs: {sorted(unknown)}")
    return {k: plain(v) for k, v in fields.items()}


DEFAULT_STATE_URL = "sqlite:///.sparkmark/state.db"
ENV_VAR = "SPARKMARK_STATE"



def resolve_state_url(state: str | None = None) -> str:
    """``state=`` argument, else env ``SPARKMARK_STATE``, else the SQLite default."""
    return state or os.environ.get(ENV_VAR) or DEFAULT_STATE_URL


@dataclass
class RunStart:
    """What ``begin_run`` hands back to a job."""

    run_id: str
    job_name: str
    run_number: int
    attempt: int
    start_version: int
    state: dict[str, Any]
    previous_run_id: str | None
    taken_over: list[dict[str, Any]] = field(default_factory=list)
    #: the job's finished runs with output to publish or remove (``runs_to_recover``), read in
    #: the same transaction
    to_recover: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BookmarkVersion:
    job_name: str
    version: int
    kind: str
    run_id: str | None
    previous_run_id: str | None
    source_run_id: str | None
    run_number: int
    attempt: int
    created_ts: int
    state: dict[str, Any]

    def as_entry(self, *, run: int | None = None, attempt: int | None = None) -> dict[str, Any]:
        """Shaped like Glue's ``JobBookmarkEntry``."""
        return {
            "JobName": self.job_name,
            "Version": self.version,
            "Run": self.run_number if run is None else run,
            "Attempt": self.attempt if attempt is None else attempt,
            "PreviousRunId": self.previous_run_id,
            "RunId": self.run_id,
            "JobBookmark": self.state,
        }


class _FirstRunRaced(Exception):
    """Two first runs of a new job raced: the job's row appeared while ours was being made
    (``begin_run`` tries again, and then sees the other run's lease)."""


#: one engine per URL and process: (engine, the SQLite file's identity, its store id)
_ENGINES: dict[str, tuple[Engine, Any, str | None]] = {}
_ENGINES_LOCK = threading.Lock()


def _missing_table(error: DBAPIError) -> bool:
    """Whether the database said a table does not exist (SQLite, PostgreSQL)."""
    orig = getattr(error, "orig", None)
    code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return code == "42P01" or "no such table" in str(orig).lower()


def _sqlite_identity(engine: Engine) -> Any:
    """(device, inode) of a SQLite database file; None for other databases."""
    if engine.url.get_backend_name() != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return None
    path = engine.url.database
    if path.startswith("file:"):  # a read-only store's URI (file:/path, mode=ro in the query)
        path = path[len("file:"):]
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return (st.st_dev, st.st_ino)


def _sqlite_path(url: Any) -> Path | None:
    """The file of a SQLite URL (a SQLAlchemy ``URL``); None for other databases, in-memory
    ones and ``uri=true`` URLs."""
    if (url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:")
            or url.query.get("uri")):
        return None
    return Path(url.database).expanduser()


def _new_sqlite_file_whole(engine: Engine) -> None:
    """Make a state file that does not exist yet appear whole: in WAL mode, its header written.

    ``sqlite3.connect`` leaves a 0-byte file until its first write, and another process that
    opens the store at that moment takes it for a truncated store and refuses it
    (``_refuse_empty_file``; two jobs starting at once on a new store, seen under load in
    ``tests/test_concurrency.py``).  So the file is made beside its place and hard-linked into
    it; when another process got there first, the link fails and its file is used.  Where this
    cannot be done (no hard links, a folder that is not writable) the engine creates the file
    in place as before, and reports its own errors."""
    import secrets
    import sqlite3
    path = _sqlite_path(engine.url)
    if path is None or os.path.lexists(path):
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.new")
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
        os.link(tmp, path)
    except (sqlite3.Error, OSError):
        pass  # FileExistsError: another process's file is there now; else created in place
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(f"{tmp}{suffix}")
            except OSError:
                pass


def cap(value: Any, limit: int = 80) -> str:
    """A user-given value shortened for echoing in a message.

    >>> cap("x" * 100, 10)
    'xxxxxxxxx…'
    """
    text = str(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _switch_to_wal(cur: Any) -> None:
    """``PRAGMA journal_mode=WAL`` without a lock-order deadlock on a brand-new file.

    Switching a new database to WAL needs an exclusive lock.  When another process is creating
    the schema at the same moment (it holds RESERVED and waits for our SHARED lock to go while
    we wait for its lock), both busy handlers would wait out the whole 60 s timeout.  So the
    switch uses a short busy timeout and retries, letting go of its lock in between; once the
    file is in WAL mode (a persistent setting) the pragma needs no lock at all.
    """
    import sqlite3
    import time
    cur.execute("PRAGMA busy_timeout=100")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                cur.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    finally:
        cur.execute("PRAGMA busy_timeout=60000")


def open_store(state: str | None = None, *, create: bool = True) -> "StateStore":
    """The state store at ``state`` (URL, env ``SPARKMARK_STATE``, or the default).
    ``create=False`` (read-only commands) refuses a missing store instead of creating one.

        store = open_store("sqlite:///.sparkmark/state.db", create=False)
    """
    return StateStore(resolve_state_url(state), create=create)


@functools.lru_cache(maxsize=64)
def _url(url: str) -> Any:
    """``make_url(url)``, parsed once per process (a ``URL`` is immutable; issue 26: every
    ``Job()`` parsed its state URL twice, ~40 us)."""
    return make_url(url)


@functools.lru_cache(maxsize=64)
def redact(url: str) -> str:
    """The URL with any password masked, for messages."""
    from sparkmark.core.secrets import mask_url
    try:
        return mask_url(_url(url).render_as_string(hide_password=True))
    except Exception:  # not a URL at all: shown masked as text, so the user sees the typo
        return mask_url(url) if "@" not in url else "<unparseable URL>"


class StateStore:
    """Bookmarks (all versions) and the ledger for every job, behind one small interface."""

    def __init__(self, url: str, *, create: bool = True):
        self.url = url
        self.display_url = redact(url)
        self._password: str | None = None
        self.create = create
        self.engine, known_id = self._engine()
        self.file_identity = _sqlite_identity(self.engine)
        if known_id is not None:
            # a SQLite file this process opened before and that is still the same file (its
            # identity is checked in _engine): its store id cannot have changed, and the
            # begin and commit checks read it again anyway (no transaction just to open)
            self.store_id: str | None = known_id
            return
        with self.tx("open") as conn:
            self.store_id = schema.store_id(conn)
        if self.file_identity not in (None, "missing") and self.store_id is not None:
            with _ENGINES_LOCK:
                key = self._engine_key()
                cached = _ENGINES.get(key)
                if cached is not None and cached[0] is self.engine and \
                        cached[1] == self.file_identity:
                    _ENGINES[key] = (self.engine, self.file_identity, self.store_id)

    def check_same_store(self, conn: Connection) -> None:
        """Refuse to go on when the store is no longer the one this object opened: its SQLite
        file was deleted, truncated or replaced (or the database recreated) since."""
        self._check_same_file()
        try:  # no sm_meta table (emptied store): the driver's error, as None
            found = schema.read_store_id(conn)
        except DBAPIError:
            found = None
        self._check_store_id(found)

    def _check_same_file(self) -> None:
        if self.file_identity is not None:
            now = _sqlite_identity(self.engine)
            if now == "missing":
                self._refuse_changed("was deleted")
            elif now != self.file_identity:
                self._refuse_changed("was replaced by another file")

    def _check_store_id(self, found: str | None) -> None:
        if found != self.store_id:
            self._refuse_changed("was emptied or truncated" if found is None
                                 else "was replaced by another store")

    def _refuse_changed(self, what: str) -> NoReturn:
        raise StateStoreError(
            f"the state store {self.display_url} {what} after this run opened it; nothing "
            "was committed. Restore it from a backup, or start the job again with a new "
            "Job object to use the store that is there now (a new, empty store reads "
            "everything again)")

    def _checked_job(self, conn: Connection, job_name: str, query: Any, **params: Any) -> Any:
        """The job row under its lock (``_Q_BEGIN_JOB`` or ``_Q_COMMIT_JOB``), ``None`` when
        there is none, once :meth:`check_same_store` holds, in one statement: the store's id
        comes with the row, and only a store without the job asks for it on its own."""
        self._check_same_file()
        try:
            job = conn.execute(query, {"b_job": job_name, **params}).first()
        except DBAPIError as e:
            if _missing_table(e):  # sm_meta or sm_jobs dropped: the store was emptied
                self._refuse_changed("was emptied or truncated")
            raise
        if job is None:
            self.check_same_store(conn)
        else:
            self._check_store_id(job.sm_store_id)
        return job

    # ------------------------------------------------------------------ engine & errors
    def _engine_key(self) -> str:
        return self.url if self.create else f"{self.url}#read-only"

    def _engine(self) -> tuple[Engine, str | None]:
        """One engine per URL and process, and the store id this process read through it
        (SQLite files only, else ``None``).  A SQLite file that was deleted or replaced since
        (``rm -r .sparkmark``) gets a new engine: pooled connections would still see the old
        file."""
        with _ENGINES_LOCK:
            self._refuse_empty_file()
            key = self._engine_key()
            cached = _ENGINES.get(key)
            if cached is not None:
                engine, identity, known_id = cached
                if identity == _sqlite_identity(engine):
                    self._password = engine.url.password
                    return engine, known_id
                engine.dispose()
            engine = self._create_engine()
            if self.create:
                _new_sqlite_file_whole(engine)
            with self._errors("open"):
                with engine.begin() as conn:
                    if self.create:
                        schema.ensure_schema(conn)
                    else:
                        schema.check_readable(conn, self.display_url)
            _ENGINES[key] = (engine, _sqlite_identity(engine), None)
            return engine, None

    def _refuse_empty_file(self) -> None:
        """A state file that exists but is empty was truncated (or created by something else):
        creating a schema in it would silently restart every bookmark from nothing."""
        try:
            path = _sqlite_path(_url(self.url))
        except ArgumentError:
            return
        if path is None:
            return
        try:
            empty = path.is_file() and path.stat().st_size == 0
        except OSError:
            return
        if empty:
            raise StateStoreError(
                f"the state file {path} exists but is empty (0 bytes, e.g. truncated); "
                "sparkmark will not start a new store in it, which would read every input "
                "again. Restore the file from a backup, or delete it to start over on purpose")

    def _create_engine(self) -> Engine:
        hint = ("use e.g. sqlite:///path/to/state.db or "
                "postgresql+psycopg://user:password@host:5432/dbname")
        try:
            url = make_url(self.url)
        except ArgumentError:
            raise StateStoreError(f"malformed state URL {self.display_url!r}: {hint}") from None
        self._password = url.password
        if url.drivername.split("+")[0] == "postgres":  # libpq's and Heroku's spelling
            url = url.set(drivername="postgresql" + url.drivername[len("postgres"):])
        backend = url.get_backend_name()
        if backend == "postgresql" and url.get_driver_name() in ("psycopg2", ""):
            # psycopg (3) is what we ship with; psycopg2 only if it is installed.
            try:
                import psycopg2  # noqa: F401
            except ImportError:
                url = url.set(drivername="postgresql+psycopg")
        kwargs: dict[str, Any] = {"future": True}
        if backend == "sqlite":
            if url.database and url.database != ":memory:":
                path = Path(url.database).expanduser()
                if not self.create:
                    if not path.exists():
                        raise StateStoreError(
                            f"there is no state store at {path}; check --state / "
                            "SPARKMARK_STATE (this command only reads and creates nothing)")
                    # read-only commands open the file read-only: they cannot change it
                    url = url.set(database=f"file:{path.resolve()}",
                                  query={"uri": "true", "mode": "ro"})
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise StateStoreError(
                        f"cannot create the folder {path.parent} for the state file "
                        f"({e.strerror}); run from a writable working folder or give "
                        "--state / SPARKMARK_STATE") from None
            kwargs["connect_args"] = {"timeout": 60, "check_same_thread": False}
        elif backend == "postgresql":
            kwargs["pool_pre_ping"] = True
            kwargs["connect_args"] = {"connect_timeout": 10}
            if not self.create:  # read-only commands: every transaction is READ ONLY
                kwargs["connect_args"]["options"] = "-c default_transaction_read_only=on"
        else:
            raise StateStoreError(
                f"unsupported state URL scheme {backend!r} in {self.display_url!r}: {hint}")
        try:
            engine = sa.create_engine(url, **kwargs)
        except (ArgumentError, NoSuchModuleError, ImportError) as e:
            raise StateStoreError(f"cannot use state URL {self.display_url!r} ({e}); {hint}") \
                from None
        if backend == "sqlite":
            writable = self.create

            @event.listens_for(engine, "connect")
            def _sqlite_connect(dbapi_conn, _record):  # noqa: ANN001
                dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
                cur = dbapi_conn.cursor()
                if writable:
                    _switch_to_wal(cur)
                    cur.execute("PRAGMA synchronous=NORMAL")
                    # a page cache that holds a large audit's index (2 MB by default): a
                    # first run's 1,000,000 audit rows went in in 5.0 s instead of 7.3 s; the
                    # cache grows only as far as pages are used
                    cur.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
                cur.close()

            @event.listens_for(engine, "begin")
            def _sqlite_begin(conn):  # noqa: ANN001
                # writers take the write lock up front; a read-only store only reads
                conn.exec_driver_sql("BEGIN IMMEDIATE" if writable else "BEGIN")
        return engine

    def _scrub(self, text: str) -> str:
        from sparkmark.core.secrets import SecretSet
        secrets = SecretSet([str(self._password)] if self._password else [])
        secrets.add_url(self.url)
        return secrets.scrub(text)

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except DBAPIError as e:
            reason = str(getattr(e, "orig", e)).strip().splitlines()
            reason_text = self._scrub(reason[0] if reason else type(e).__name__)
            low = reason_text.lower()
            if "database is locked" in low:
                raise StateStoreError(
                    f"state store {self.display_url} stayed locked by another process for 60 s "
                    f"during {what}; another run or command holds a write transaction on it. "
                    "Retry when it is done, or find the process that holds the file open.") \
                    from None
            if "readonly database" in low or "read-only" in low:
                raise StateStoreError(
                    f"state store {self.display_url} is read-only ({reason_text}) during "
                    f"{what}; give this user write access to the file and its folder, or use "
                    "another --state / SPARKMARK_STATE.") from None
            if "unable to open database file" in low:
                raise StateStoreError(
                    f"cannot open the state file of {self.display_url} ({reason_text}) during "
                    f"{what}; check that its folder exists and is writable, or use another "
                    "--state / SPARKMARK_STATE.") from None
            raise StateStoreError(
                f"state store {self.display_url} is unreachable or failed during {what}: "
                f"{reason_text}. Check the URL (--state / SPARKMARK_STATE) and that the "
                "database is running.") from None

    @contextmanager
    def tx(self, what: str = "a transaction") -> Iterator[Connection]:
        with self._errors(what):
            with self.engine.begin() as conn:
                yield conn

    # ------------------------------------------------------------------ decoding
    @staticmethod
    def _state(job_name: str, version: int, text: Any) -> dict[str, Any]:
        """A bookmark version's state, decoded; a clear error when it is not a JSON object."""
        try:
            state = json.loads(text)
            if not isinstance(state, dict):
                raise ValueError("not a JSON object")
        except (ValueError, TypeError) as e:
            raise StateCorruptError(
                f"bookmark of job {job_name!r} version {version} is corrupt ({e}); "
                f"rewind with 'sparkmark bookmark reset {job_name} --run-id RUN' to an "
                "earlier run, or reset it") from None
        return state

    def _version_from_row(self, row: Any) -> BookmarkVersion:
        state = self._state(row.job_name, row.version, row.state)
        return BookmarkVersion(
            job_name=row.job_name, version=row.version, kind=row.kind, run_id=row.run_id,
            previous_run_id=row.previous_run_id, source_run_id=row.source_run_id,
            run_number=row.run_number, attempt=row.attempt, created_ts=row.created_ts,
            state=state)

    @staticmethod
    def _empty_version(job: Any) -> BookmarkVersion:
        return BookmarkVersion(job_name=job.job_name, version=0, kind="initial", run_id=None,
                               previous_run_id=None, source_run_id=None, run_number=0,
                               attempt=0, created_ts=job.created_ts, state={})

    def _job_row(self, conn: Connection, job_name: str, *, lock: bool = False) -> Any:
        return conn.execute(_Q_JOB_LOCKED if lock else _Q_JOB, {"b_job": job_name}).first()

    def _require_job(self, conn: Connection, job_name: str, *, lock: bool = False) -> Any:
        row = self._job_row(conn, job_name, lock=lock)
        if row is None:
            raise UnknownJobError(
                f"no job named {cap(job_name)!r} in state store {self.display_url}; "
                "'sparkmark report' lists the jobs that have run")
        return row

    def _version(self, conn: Connection, job: Any, version: int) -> BookmarkVersion:
        if version == 0:
            return self._empty_version(job)
        row = conn.execute(_Q_VERSION, {"b_job": job.job_name, "b_version": version}).first()
        if row is None:
            self._refuse_missing_version(job.job_name, version)
        return self._version_from_row(row)

    @staticmethod
    def _refuse_missing_version(job_name: str, version: int) -> NoReturn:
        raise StateCorruptError(
            f"job {job_name!r} points at bookmark version {version}, which is missing; "
            f"reset the bookmark ('sparkmark bookmark reset {job_name}')")

    def _version_of_run(self, conn: Connection, job_name: str, run_id: str) -> BookmarkVersion:
        row = conn.execute(select(versions).where(
            versions.c.job_name == job_name, versions.c.run_id == run_id,
            versions.c.kind == "commit")).first()
        if row is None:
            known = conn.execute(select(runs.c.status).where(
                runs.c.run_id == run_id, runs.c.job_name == job_name)).scalar()
            why = (f"it ended {known} without committing a bookmark" if known
                   else "no such run of this job")
            raise UnknownRunError(
                f"run {cap(run_id)!r} of job {cap(job_name)!r} has no committed bookmark ({why}); "
                f"'sparkmark bookmark history {job_name}' lists the runs that committed one")
        return self._version_from_row(row)

    # ------------------------------------------------------------------ run lifecycle
    def validate_runs(self, job_name: str, run_ids: list[str]) -> list[BookmarkVersion]:
        """The versions committed by these runs (pause from/to); clear error if unknown."""
        with self.tx("reading bookmarks") as conn:
            self._require_job(conn, job_name)
            return [self._version_of_run(conn, job_name, r) for r in run_ids]

    def begin_run(self, job_name: str, *, run_id: str, option: str, now: int,
                  snapshot_ts: int, lease_ms: int, pid: int, host: str | None = None,
                  ledger: dict[str, Any] | None = None) -> RunStart:
        """Take the job's lease (or fail naming the active run) and open its ledger row."""
        host = host or this_host()
        for attempt in range(3):
            with self._errors("begin run"):
                try:
                    return self._begin_run(job_name, run_id=run_id, option=option, now=now,
                                           snapshot_ts=snapshot_ts, lease_ms=lease_ms, pid=pid,
                                           host=host, ledger=ledger or {})
                except (IntegrityError, _FirstRunRaced):
                    if attempt == 2:  # two first runs of a new job raced on its row
                        raise
        raise AssertionError("unreachable")

    def _begin_run(self, job_name: str, *, run_id: str, option: str, now: int,
                   snapshot_ts: int, lease_ms: int, pid: int, host: str,
                   ledger: dict[str, Any]) -> RunStart:
        with self.engine.begin() as conn:
            job = self._checked_job(conn, job_name, _Q_BEGIN_JOB)
            if job is None:
                self._refuse_orphans(conn, job_name)
                conn.execute(jobs.insert().values(
                    job_name=job_name, current_version=0, run_number=0, attempt=0,
                    created_ts=now))
                job = conn.execute(_Q_BEGIN_JOB, {"b_job": job_name}).first()
            taken_over: list[dict[str, Any]] = []
            attempt = job.attempt
            if job.active_run_id is not None:
                if lease_is_alive(host=job.lease_host, pid=job.lease_pid,
                                  expires_ts=job.lease_expires_ts, now=now, my_host=host):
                    raise ConcurrentRunError(
                        f"job {job_name!r} already has an active run {job.active_run_id} "
                        f"(host {host_name(job.lease_host)}, pid {job.lease_pid}); wait for it "
                        "to finish. Its lease is taken over automatically once that process is "
                        "gone (same host) or its lease expires (another host); to end a run "
                        "that will never finish (e.g. a notebook left mid-way), run "
                        f"'sparkmark bookmark release {job_name}'.")
                old = conn.execute(select(runs).where(runs.c.run_id == job.active_run_id)).first()
                reason = (f"taken over by run {run_id}: its process (host "
                          f"{host_name(job.lease_host)}, "
                          f"pid {job.lease_pid}) is gone or its lease expired")
                conn.execute(runs.update().where(runs.c.run_id == job.active_run_id,
                                                 runs.c.status == RunStatus.RUNNING)
                             .values(status=RunStatus.FAILED, error=reason, run_end_ts=now))
                if old is not None:
                    taken_over.append(dict(old._mapping))
                attempt += 1
            state: dict[str, Any] = {}
            if job.current_version:  # its state came with the job row
                if job.sm_version_state is None:
                    self._refuse_missing_version(job_name, job.current_version)
                state = self._state(job_name, job.current_version, job.sm_version_state)
            conn.execute(_U_JOB, {
                "b_job": job_name, "active_run_id": run_id,
                "lease_host": lease_token(host, pid), "lease_pid": pid,
                "lease_expires_ts": now + lease_ms, "attempt": attempt})
            conn.execute(_I_RUN, {
                "run_id": run_id, "job_name": job_name, "run_number": job.run_number + 1,
                "attempt": attempt, "status": RunStatus.RUNNING, "bookmark_option": option,
                "start_version": job.current_version, "run_start_ts": now,
                "snapshot_ts": snapshot_ts, "host": host, "pid": pid, **_run_fields(ledger)})
            # a run taken over just now was RUNNING when the job row was read
            to_recover = (self._runs_to_recover(conn, job_name)
                          if job.sm_to_recover or taken_over else [])
            return RunStart(run_id=run_id, job_name=job_name, run_number=job.run_number + 1,
                            attempt=attempt, start_version=job.current_version,
                            state=state, previous_run_id=job.last_run_id,
                            taken_over=taken_over, to_recover=to_recover)

    def heartbeat(self, job_name: str, run_id: str, now: int, lease_ms: int) -> bool:
        """Renew the lease; False when this run no longer holds it."""
        with self.tx("heartbeat") as conn:
            res = conn.execute(jobs.update().where(
                jobs.c.job_name == job_name, jobs.c.active_run_id == run_id).values(
                lease_expires_ts=now + lease_ms))
            return res.rowcount == 1

    def commit_run(self, job_name: str, run_id: str, *, start_version: int,
                   new_state: dict[str, Any] | None, status: str, now: int,
                   fields: dict[str, Any] | None = None,
                   files_read: list[tuple[str | None, Any]] | None = None,
                   files_keep_ms: int | None = None,
                   before_commit: Callable[[], None] | None = None) -> int:
        """One transaction: bookmark version (if ``new_state``), counters, lease, ledger row,
        and the per-file audit (``files_read``: ``(ctx, [FileRead(path, size, mtime, kind)])``
        pairs; rows older than ``files_keep_ms`` are deleted for this job in the same
        transaction).  ``before_commit()`` is called last, inside the transaction: an exception
        from it rolls everything back and is raised as it is.

        Returns the job's bookmark version after the commit.
        """
        if status not in RunStatus.progress():
            raise ValueError(f"commit_run takes SUCCEEDED or EMPTY, not {status!r}")
        status = RunStatus(status).value
        with self.tx("commit") as conn:
            job = self._checked_job(conn, job_name, _Q_COMMIT_JOB, b_before=(
                None if files_keep_ms is None else now - files_keep_ms))
            if job is None:
                self._require_job(conn, job_name)  # raises UnknownJobError
            if job.active_run_id != run_id:
                raise BookmarkConflictError(
                    f"run {run_id} of job {job_name!r} no longer holds the job's lease "
                    f"(active run: {job.active_run_id or 'none'}); it was taken over. "
                    "Nothing was committed; run the job again.")
            version = job.current_version
            if new_state is not None:
                if job.current_version != start_version:
                    raise BookmarkConflictError(
                        f"the bookmark of job {job_name!r} changed while run {run_id} was "
                        f"running (version {start_version} -> {job.current_version}, e.g. a "
                        "reset or rewind). Nothing was committed; run the job again.")
                version = job.current_version + 1
                conn.execute(_I_VERSION, {
                    "job_name": job_name, "version": version, "kind": "commit",
                    "run_id": run_id, "previous_run_id": job.last_run_id,
                    "run_number": job.run_number + 1, "attempt": job.attempt,
                    "created_ts": now, "state": json.dumps(new_state, sort_keys=True)})
            conn.execute(_U_JOB, {
                "b_job": job_name, "current_version": version,
                "run_number": job.run_number + 1, "attempt": 0, "last_run_id": run_id,
                "active_run_id": None, "lease_host": None, "lease_pid": None,
                "lease_expires_ts": None})
            conn.execute(_U_RUN, {
                "b_run": run_id, "status": status, "run_end_ts": now, "end_version": version,
                **_run_fields(fields)})
            if files_keep_ms is not None and job.sm_files_expired:
                conn.execute(_D_OLD_FILES, {"b_job": job_name, "b_before": now - files_keep_ms})
            large: bool | None = None
            for ctx, read in files_read or ():
                if large is None and len(read) >= AUDIT_SORT_READ:
                    large = _audit_is_large(conn)
                for rows in _audit_batches(job_name, run_id, now, ctx, read, bool(large)):
                    _insert_rows(conn, files, _FILE_COLUMNS, rows)
            if before_commit is not None:
                before_commit()
            return version

    def stage_files(self, job_name: str, run_id: str, ctx: str | None, read: Any, *,
                    now: int, stop: Callable[[], bool] | None = None) -> None:
        """The per-file audit rows of one source's files read (``read``: ``FileRead``-like
        entries), written ahead of the run's commit, a bounded batch per short transaction (a
        large first run's rows go in while Spark builds its read: issue 26).  They count only
        once the run commits: every reader of the audit takes the rows of committed runs
        (SUCCEEDED, EMPTY, later ROLLED_BACK) and of runs whose row is gone; a run that fails
        has them deleted (:meth:`fail_run`), a run that dies leaves them to the retention.
        ``stop()`` is asked before each batch (a run that ends meanwhile).

        Example: ``store.stage_files("orders", run_id, "src", reads, now=clock())``
        """
        with self._errors("writing the file audit"), self.engine.connect() as conn:
            sqlite = conn.dialect.name == "sqlite"
            if sqlite:  # no WAL checkpoint after each transaction, one after the last: a
                # million rows in 50 transactions took 9.1 s checkpointed, 6.4 s not (5.8 in one)
                conn.exec_driver_sql("PRAGMA wal_autocheckpoint=0")
                conn.commit()
            try:
                with conn.begin():
                    large = len(read) >= AUDIT_SORT_READ and _audit_is_large(conn)
                batches = _audit_batches(job_name, run_id, now, ctx, read, large)
                while not (stop is not None and stop()):
                    with conn.begin():  # a transaction per _STAGE_BATCHES batches
                        taken = 0
                        for rows in itertools.islice(batches, _STAGE_BATCHES):
                            _insert_rows(conn, files, _FILE_COLUMNS, rows)
                            taken += 1
                    if taken < _STAGE_BATCHES:
                        return
            finally:
                if sqlite:
                    conn.exec_driver_sql("PRAGMA wal_autocheckpoint=1000")  # SQLite's default
                    conn.commit()

    def unstage_files(self, job_name: str, run_id: str, ctx: str | None) -> None:
        """Delete the audit rows :meth:`stage_files` wrote for a run's source ``ctx`` (a read
        that failed after its files were recorded).

        Example: ``store.unstage_files("orders", run_id, "src")``
        """
        with self.tx("writing the file audit") as conn:
            conn.execute(files.delete().where(files.c.job_name == job_name,
                                              files.c.run_id == run_id,
                                              files.c.ctx == (ctx or "")))

    def fail_run(self, job_name: str, run_id: str, *, error: str, now: int,
                 status: RunStatus | str = RunStatus.FAILED,
                 fields: dict[str, Any] | None = None) -> None:
        """Record a failed (or skipped) run; the bookmark is untouched, the attempt goes up."""
        status = RunStatus(status).value
        with self.tx("recording a failure") as conn:
            job = self._job_row(conn, job_name, lock=True)
            ended = conn.execute(runs.update().where(runs.c.run_id == run_id,
                                                     runs.c.status == RunStatus.RUNNING).values(
                status=status, error=error, run_end_ts=now,
                **{k: plain(v) for k, v in (fields or {}).items()}))
            if ended.rowcount:  # audit rows it wrote ahead of a commit that never came
                conn.execute(files.delete().where(files.c.run_id == run_id))
            if job is not None and job.active_run_id == run_id:
                conn.execute(jobs.update().where(jobs.c.job_name == job_name).values(
                    attempt=job.attempt + (1 if status == RunStatus.FAILED else 0),
                    active_run_id=None, lease_host=None,
                    lease_pid=None, lease_expires_ts=None))

    def release(self, job_name: str, run_id: str | None = None, *, now: int,
                error: str | None = None) -> str:
        """End a job's active run from outside (``sparkmark bookmark release``): record it
        FAILED and break its lease, so the next run or a reset can go ahead.  The run's own
        process, if it is still alive, then fails at commit (it lost the lease).  Returns the
        released run's id."""
        from sparkmark.core.errors import JobStateError
        with self.tx("releasing a run") as conn:
            job = self._require_job(conn, job_name, lock=True)
            active = job.active_run_id
            if active is None:
                raise JobStateError(f"job {job_name!r} has no active run; nothing to release")
            if run_id is not None and run_id != active:
                raise UnknownRunError(
                    f"run {cap(run_id)!r} is not the active run of job {job_name!r} (that is "
                    f"{active}); give --run-id {active} or leave --run-id out")
            conn.execute(runs.update().where(runs.c.run_id == active,
                                             runs.c.status == RunStatus.RUNNING).values(
                status=RunStatus.FAILED, run_end_ts=now,
                error=(error or "released with 'sparkmark bookmark release'") + ": the run "
                      f"never finished (host {host_name(job.lease_host)}, pid {job.lease_pid})"))
            conn.execute(jobs.update().where(jobs.c.job_name == job_name).values(
                attempt=job.attempt + 1, active_run_id=None, lease_host=None, lease_pid=None,
                lease_expires_ts=None))
            return str(active)

    def update_run(self, run_id: str, **fields: Any) -> None:
        with self.tx("updating the ledger") as conn:
            conn.execute(_U_RUN, {"b_run": run_id, **_run_fields(fields)})

    # ------------------------------------------------------------------ bookmark admin
    def bookmark_entry(self, job_name: str, run_id: str | None = None) -> dict[str, Any]:
        """Glue's ``JobBookmarkEntry`` for the current bookmark, or the one run R committed."""
        with self.tx("reading bookmarks") as conn:
            job = self._require_job(conn, job_name)
            if run_id is None:
                v = self._version(conn, job, job.current_version)
                return v.as_entry(run=job.run_number, attempt=self._shown_attempt(conn, job))
            return self._version_of_run(conn, job_name, run_id).as_entry()

    @staticmethod
    def _shown_attempt(conn: Connection, job: Any) -> int:
        """Glue's Attempt: the failed attempts since the last success while there are any,
        else the attempt number of the run that last succeeded (1 for a committed retry
        after one failure; 0 again after a clean run)."""
        if job.attempt or job.last_run_id is None:
            return int(job.attempt)
        last = conn.execute(select(runs.c.attempt).where(
            runs.c.run_id == job.last_run_id)).scalar()
        return int(last or 0)

    def current_version(self, job_name: str) -> BookmarkVersion:
        with self.tx("reading bookmarks") as conn:
            job = self._require_job(conn, job_name)
            return self._version(conn, job, job.current_version)

    def history(self, job_name: str) -> list[BookmarkVersion]:
        with self.tx("reading bookmarks") as conn:
            job = self._require_job(conn, job_name)
            rows = conn.execute(select(versions).where(versions.c.job_name == job_name)
                                .order_by(versions.c.version)).all()
            return [self._empty_version(job)] + [self._version_from_row(r) for r in rows]

    def reset(self, job_name: str, run_id: str | None = None, *, now: int) -> int:
        """Reset (empty state) or rewind (state committed by ``run_id``) as a new version."""
        with self.tx("resetting a bookmark") as conn:
            return self._rewind(conn, job_name, run_id, now=now,
                                kind="rewind" if run_id else "reset", action="reset its bookmark")

    def rollback_runs(self, cuts: list[tuple[str, list[str], str | None]], *, now: int) -> None:
        """Pipeline rollback, one transaction for every module: for each
        ``(job_name, run_ids, keep_run_id)`` mark those SUCCEEDED/EMPTY runs ``ROLLED_BACK``
        (``publish_state='removing'`` until their output is deleted) and rewind the job's
        bookmark to what ``keep_run_id`` committed (``{}`` when None) as a new version of kind
        ``rollback``.  Refused (nothing changed) if any of the jobs has an active run."""
        with self.tx("rolling back runs") as conn:
            for job_name, run_ids, keep_run_id in cuts:
                self._rewind(conn, job_name, keep_run_id, now=now, kind="rollback",
                             action="roll back")
                if run_ids:
                    conn.execute(runs.update().where(
                        runs.c.job_name == job_name, runs.c.run_id.in_(list(run_ids)),
                        runs.c.status.in_((RunStatus.SUCCEEDED, RunStatus.EMPTY))).values(
                        status=RunStatus.ROLLED_BACK, publish_state=PublishState.REMOVING))

    def reset_with_rollback(self, job_name: str, run_id: str | None, run_ids: list[str], *,
                            now: int) -> int:
        """``reset`` plus marking ``run_ids`` (the job's SUCCEEDED/EMPTY runs after ``run_id``)
        ``ROLLED_BACK`` / ``publish_state='removing'``, in one transaction. Refused, nothing
        changed, if those runs are no longer exactly the runs after ``run_id`` (a run committed
        since they were listed)."""
        with self.tx("resetting a bookmark") as conn:
            version = self._rewind(conn, job_name, run_id, now=now,
                                   kind="rewind" if run_id else "reset",
                                   action="reset its bookmark")
            after = 0 if run_id is None else conn.execute(select(runs.c.run_number).where(
                runs.c.run_id == run_id)).scalar() or 0
            now_later = set(conn.execute(select(runs.c.run_id).where(
                runs.c.job_name == job_name, runs.c.run_number > after,
                runs.c.status.in_(RunStatus.progress()))).scalars())
            if now_later != set(run_ids):
                raise BookmarkConflictError(
                    f"the runs of job {job_name!r} changed while the reset was planned; nothing "
                    "was changed. Run the reset again.")
            if run_ids:
                conn.execute(runs.update().where(runs.c.run_id.in_(list(run_ids))).values(
                    status=RunStatus.ROLLED_BACK, publish_state=PublishState.REMOVING))
            return version

    def set_element(self, job_name: str, ctx: str, element: Any, *, now: int,
                    expect_version: int) -> int:
        """A new version (kind ``set``) equal to the current one with ``ctx``'s element replaced;
        refused (nothing changed) while a run is live or if the bookmark moved since
        ``expect_version`` was read."""
        with self.tx("setting a bookmark") as conn:
            job = self._require_job(conn, job_name, lock=True)
            self._refuse_live_run(job, now, "set its bookmark")
            if job.current_version != expect_version:
                raise BookmarkConflictError(
                    f"the bookmark of job {job_name!r} changed while it was being set (version "
                    f"{expect_version} -> {job.current_version}); nothing was changed, try again")
            state = dict(self._version(conn, job, job.current_version).state)
            state[ctx] = element
            return self._admin_version(conn, job, state, kind="set", source_run_id=None, now=now)

    def _rewind(self, conn: Connection, job_name: str, run_id: str | None, *, now: int,
                kind: str, action: str) -> int:
        """Add a version holding the state ``run_id`` committed (``{}`` when None) and point
        the job at it; refused while the job has a live run."""
        job = self._require_job(conn, job_name, lock=True)
        self._refuse_live_run(job, now, action)
        if run_id is not None:
            self.refuse_rolled_back(conn, job_name, run_id)
        state = {} if run_id is None else self._version_of_run(conn, job_name, run_id).state
        return self._admin_version(conn, job, state, kind=kind, source_run_id=run_id, now=now)

    @staticmethod
    def _refuse_orphans(conn: Connection, job_name: str) -> None:
        """A job with bookmark versions or runs but no job row lost its row (deleted in the
        store): starting it afresh would read every input again, then fail at commit."""
        n_versions = conn.execute(select(sa.func.count()).select_from(versions).where(
            versions.c.job_name == job_name)).scalar() or 0
        n_runs = conn.execute(select(sa.func.count()).select_from(runs).where(
            runs.c.job_name == job_name)).scalar() or 0
        if (n_versions or n_runs) and conn.execute(
                select(jobs.c.job_name).where(jobs.c.job_name == job_name)).first() is not None:
            # not lost: another driver created the job between our two reads (the first runs of
            # a new job raced; READ COMMITTED shows its commit to our later statements)
            raise _FirstRunRaced(job_name)
        if n_versions or n_runs:
            raise StateCorruptError(
                f"job {cap(job_name)!r} has {n_versions} bookmark version(s) and {n_runs} run(s) "
                "in the state store but no job row (deleted by hand?); nothing was read or "
                "changed. Restore the store from a backup, or delete the job's rows from "
                "sm_bookmark_versions and sm_runs too to start it over on purpose")

    @staticmethod
    def refuse_rolled_back(conn: Connection, job_name: str, run_id: str) -> None:
        """Rewinding to a ``ROLLED_BACK`` run is refused: its output was removed (or is being
        removed), so the state it committed would skip records no target holds, and the runs
        after it would lose their output too.

            store.refuse_rolled_back(conn, "orders", run_id)   # raises for a rolled-back run
        """
        status = conn.execute(select(runs.c.status).where(
            runs.c.run_id == run_id, runs.c.job_name == job_name)).scalar()
        if status == RunStatus.ROLLED_BACK:
            raise UnknownRunError(
                f"run {cap(run_id)!r} of job {cap(job_name)!r} was rolled back (an earlier reset "
                "or rollback removed its output), so rewinding to it would skip records no "
                "target holds; nothing was changed. Rewind to a run that is not ROLLED_BACK: "
                f"'sparkmark report --job {job_name}' shows each run's status, "
                f"'sparkmark bookmark history {job_name}' the bookmark versions")

    @staticmethod
    def _refuse_live_run(job: Any, now: int, action: str) -> None:
        """An administrative change waits for the job's live run (it names the way out)."""
        if job.active_run_id is not None and lease_is_alive(
                host=job.lease_host, pid=job.lease_pid, expires_ts=job.lease_expires_ts,
                now=now, my_host=this_host()):
            raise ConcurrentRunError(
                f"job {job.job_name!r} has an active run {job.active_run_id}; {action} after "
                "that run ends, or end it first with "
                f"'sparkmark bookmark release {job.job_name} --run-id {job.active_run_id}'")

    def _admin_version(self, conn: Connection, job: Any, state: dict[str, Any], *, kind: str,
                       source_run_id: str | None, now: int) -> int:
        """Add a bookmark version made by an operator (reset, rewind, set) and point the job
        at it; history is kept."""
        version = job.current_version + 1
        conn.execute(versions.insert().values(
            job_name=job.job_name, version=version, kind=kind, run_id=None,
            previous_run_id=job.last_run_id, source_run_id=source_run_id,
            run_number=job.run_number, attempt=job.attempt, created_ts=now,
            state=json.dumps(state, sort_keys=True)))
        conn.execute(jobs.update().where(jobs.c.job_name == job.job_name)
                     .values(current_version=version))
        return version

    @property
    def answers_can_be_lost(self) -> bool:
        """Whether a transaction can land without this process hearing so: a database server
        across a connection can carry out a ``COMMIT`` whose answer never arrives; SQLite's
        commit is a call into a local library that either happened or raised.

        Example: ``store.answers_can_be_lost  # False for sqlite:///state.db``
        """
        return self.engine.dialect.name != "sqlite"

    def run_outcome(self, job_name: str, run_id: str) -> dict[str, Any] | None:
        """Run ``run_id``'s ledger row read under the job row's lock, taken without waiting
        (``FOR UPDATE NOWAIT``): ``None`` while another transaction holds it.  Every
        transaction that ends a run (its commit, a failure, a take-over) locks that row first,
        so a row read here is final: a commit whose answer was lost is either in it or will
        never be.  (SQLite has no row locks: a transaction there is over when its call
        returns.)

        Example: ``(store.run_outcome("orders", run_id) or {}).get("status")``
        """
        with self.tx("reading the outcome of a commit") as conn:
            try:
                conn.execute(_Q_JOB_NOWAIT, {"b_job": job_name}).first()
            except DBAPIError as e:
                code = getattr(getattr(e, "orig", None), "sqlstate", None)
                if code == "55P03" or "could not obtain lock" in str(e).lower():
                    return None  # held: that transaction is not over (the rollback ends ours)
                raise
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).first()
        if row is None:
            raise UnknownRunError(f"no run with id {cap(run_id)!r} in {self.display_url}")
        return dict(row._mapping)

    # ------------------------------------------------------------------ ledger
    def get_run(self, run_id: str) -> dict[str, Any]:
        with self.tx("reading the ledger") as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).first()
        if row is None:
            raise UnknownRunError(f"no run with id {cap(run_id)!r} in {self.display_url}")
        return dict(row._mapping)

    def list_runs(self, *, job_name: str | None = None, pipeline: str | None = None,
                  module_id: int | list[int] | None = None, last: int | None = None,
                  statuses: tuple[str, ...] | None = None,
                  pipeline_run_id: str | None = None,
                  started_from: int | None = None,
                  columns: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        """Ledger rows, oldest first (``last`` keeps the newest N; ``started_from``: runs that
        started at or after this epoch ms; ``columns``: only these fields of each row)."""
        q = select(*(runs.c[c] for c in columns)) if columns else select(runs)
        if started_from is not None:
            q = q.where(runs.c.run_start_ts >= started_from)
        if job_name is not None:
            q = q.where(runs.c.job_name == job_name)
        if pipeline is not None:
            q = q.where(runs.c.pipeline == pipeline)
        if isinstance(module_id, list):  # several modules
            q = q.where(runs.c.module_id.in_(module_id))
        elif module_id is not None:
            q = q.where(runs.c.module_id == module_id)
        if statuses:
            q = q.where(runs.c.status.in_(statuses))
        if pipeline_run_id is not None:
            q = q.where(runs.c.pipeline_run_id == pipeline_run_id)
        q = q.order_by(runs.c.run_start_ts.desc(), runs.c.job_name.desc(),
                       runs.c.run_number.desc(), runs.c.attempt.desc())
        if last is not None:
            q = q.limit(last)
        with self.tx("reading the ledger") as conn:
            rows = [dict(r._mapping) for r in conn.execute(q)]
        return rows[::-1]

    def module_marks(self, job_names: list[str], pipeline: str | None = None
                     ) -> dict[str, list[dict[str, Any]]]:
        """What :func:`~sparkmark.planning.windows.module_start` reads of each job's ledger rows
        (of ``pipeline``'s runs when given), in at most one row per job: its SUCCEEDED/EMPTY
        run with a window and the highest run number (the first of those to start, as the
        planner picks among equal numbers), else its ROLLED_BACK run with the earliest window
        start, else none.  ``module_start`` of these rows equals ``module_start`` of all the
        job's rows; a pipeline run asks this instead of reading its whole ledger.

        Example: ``module_start([LedgerRun(**r) for r in store.module_marks(["p.1"])["p.1"]])``
        """
        cols = (runs.c.run_id, runs.c.pipeline_run_id, runs.c.run_number, runs.c.status,
                runs.c.from_ts, runs.c.until_ts)
        out: dict[str, list[dict[str, Any]]] = {}
        with self.tx("reading the ledger") as conn:
            for job in job_names:
                mine = runs.c.job_name == job
                if pipeline is not None:
                    mine = sa.and_(mine, runs.c.pipeline == pipeline)
                row = conn.execute(
                    select(*cols).where(mine, runs.c.status.in_(RunStatus.progress()),
                                        runs.c.from_ts.is_not(None),
                                        runs.c.until_ts.is_not(None))
                    .order_by(runs.c.run_number.desc(), runs.c.run_start_ts,
                              runs.c.attempt).limit(1)).first()
                if row is None:
                    row = conn.execute(
                        select(*cols).where(mine, runs.c.status == RunStatus.ROLLED_BACK,
                                            runs.c.from_ts.is_not(None))
                        .order_by(runs.c.from_ts).limit(1)).first()
                out[job] = [] if row is None else [dict(row._mapping)]
        return out

    def runs_to_recover(self, job_name: str) -> list[dict[str, Any]]:
        """Finished runs of a job whose output is still staged, not yet published, or rolled
        back but not yet removed (``begin_run`` reads them too, as ``RunStart.to_recover``)."""
        with self.tx("reading the ledger") as conn:
            return self._runs_to_recover(conn, job_name)

    @staticmethod
    def _runs_to_recover(conn: Connection, job_name: str) -> list[dict[str, Any]]:
        rows = [dict(r._mapping) for r in conn.execute(_Q_TO_RECOVER, {"b_job": job_name})]
        return sorted(rows, key=lambda r: r["run_start_ts"])

    def record_staged(self, job_name: str, run_id: str, *, outputs: str | None, target: str
                      ) -> list[str]:
        """One transaction for a run that staged output for ``target``: its ledger row's
        ``outputs`` (the JSON records) and ``publish_state`` STAGED, and the (target, job)
        pair in ``sm_targets`` if new.  Returns the other jobs that wrote ``target`` (see
        :meth:`jobs_writing`), read in the same transaction.

        Example: ``others = store.record_staged("orders", run_id, outputs=records,
        target="file:/out")``
        """
        with self.tx("recording staged output") as conn:
            conn.execute(_U_RUN, {"b_run": run_id, "outputs": outputs,
                                  "publish_state": PublishState.STAGED})
            writers = self._writers(conn, target)
            if job_name not in writers:
                conn.execute(_I_TARGET, {"target_hash": path_hash(target), "job_name": job_name,
                                         "target": target, "first_run_id": run_id})
            return sorted(writers - {job_name})

    def jobs_writing(self, target: str, *, besides: str) -> list[str]:
        """Other jobs (not ``besides``) whose runs staged output for ``target`` (a file target's
        qualified path, a JDBC or Iceberg table), from ``sm_targets`` (an index lookup, however
        long the ledger): ``store.jobs_writing("file:/out", besides="orders") == ["Orders"]``."""
        with self.tx("reading the ledger") as conn:
            return sorted(self._writers(conn, target) - {besides})

    @staticmethod
    def _writers(conn: Connection, target: str) -> set[str]:
        """The jobs ``sm_targets`` has for ``target`` (looked up by its hash, then compared)."""
        return {name for name, t in conn.execute(_Q_TARGET, {"b_hash": path_hash(target)})
                if t == target}

    def files_read_before(self, job_name: str, ctx: str | None,
                          paths: list[str]) -> dict[str, set[tuple[int | None, int | None]]]:
        """Which of ``paths`` a committed run of the job read for ``ctx`` (within the audit's
        retention), with the ``(mtime, size)`` versions it read: ``{path: {(mtime, size)}}``.
        Reads of runs rolled back since (``ROLLED_BACK``: their output was removed) do not
        count: what they read is as good as unread."""
        found: dict[str, set[tuple[int | None, int | None]]] = {}
        if not paths:
            return found
        wanted = set(paths)
        hashes = sorted({path_hash(p) for p in wanted})
        with self.tx("reading the file audit") as conn:
            for i in range(0, len(hashes), 500):
                q = select(files.c.path, files.c.mtime, files.c.size).select_from(
                    files.outerjoin(runs, runs.c.run_id == files.c.run_id)).where(
                    files.c.job_name == job_name, files.c.ctx == (ctx or ""),
                    files.c.path_hash.in_(hashes[i:i + 500]), _audit_counts(),
                    sa.or_(runs.c.status.is_(None), runs.c.status != RunStatus.ROLLED_BACK))
                for path, mtime, size in conn.execute(q):
                    if path in wanted:  # a hash shared by two paths: compare the path itself
                        found.setdefault(path, set()).add((mtime, size))
        return found

    def file_audit(self, job_name: str, *, ctx: str | None = None, run_id: str | None = None,
                   path_like: str | None = None, limit: int | None = None
                   ) -> tuple[list[dict[str, Any]], int]:
        """The per-file audit of a job, newest reads first, joined with each run's status:
        ``(rows, total)``; ``path_like`` is a SQL LIKE pattern (``%`` and ``_``)."""
        where = [files.c.job_name == job_name, _audit_counts()]
        if ctx is not None:
            where.append(files.c.ctx == ctx)
        if run_id is not None:
            where.append(files.c.run_id == run_id)
        if path_like is not None:
            where.append(files.c.path.like(path_like, escape="\\"))
        q = (select(files.c.path, files.c.size, files.c.mtime, files.c.ctx, files.c.run_id,
                    runs.c.status, files.c.kind, files.c.read_ts)
             .select_from(files.outerjoin(runs, runs.c.run_id == files.c.run_id))
             .where(*where).order_by(files.c.read_ts.desc(), files.c.path))
        if limit is not None:
            q = q.limit(limit)
        with self.tx("reading the file audit") as conn:
            rows = [dict(r._mapping) for r in conn.execute(q)]
            total = (len(rows) if limit is None or len(rows) < limit else
                     int(conn.execute(select(sa.func.count()).select_from(
                         files.outerjoin(runs, runs.c.run_id == files.c.run_id))
                                      .where(*where)).scalar() or 0))
        return rows, total

    def run_files(self, run_ids: list[str], *, per_run: int = 100
                  ) -> dict[str, tuple[int, list[tuple[str, int | None, str]]]]:
        """For each run with audit rows: ``(files in all, first per_run (path, size, kind))``."""
        out: dict[str, tuple[int, list[tuple[str, int | None, str]]]] = {}
        with self.tx("reading the file audit") as conn:
            for i in range(0, len(run_ids), 500):
                q = (select(files.c.run_id, sa.func.count()).select_from(
                    files.outerjoin(runs, runs.c.run_id == files.c.run_id)).where(
                    files.c.run_id.in_(run_ids[i:i + 500]), _audit_counts())
                    .group_by(files.c.run_id))
                for rid, n in conn.execute(q):
                    out[rid] = (int(n), [])
            for rid in out:
                q = (select(files.c.path, files.c.size, files.c.kind)
                     .where(files.c.run_id == rid).order_by(files.c.path).limit(per_run))
                out[rid][1].extend((p, sz, k) for p, sz, k in conn.execute(q))
        return out

    def job_names(self) -> list[str]:
        with self.tx("reading the ledger") as conn:
            return [r[0] for r in conn.execute(select(jobs.c.job_name).order_by(jobs.c.job_name))]

    def job_row(self, job_name: str) -> dict[str, Any] | None:
        with self.tx("reading a job") as conn:
            row = self._job_row(conn, job_name)
            return dict(row._mapping) if row is not None else None
