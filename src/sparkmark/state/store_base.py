"""The state store's base: its engine (one per URL and process), transactions, and the checks
that the store is still the one it opened; the mixins of :class:`~sparkmark.state.StateStore`
(``bookmark_rows``, ``run_rows``, ``run_reads``, ``lease_rows``, ``audit``) build on it.

    with store.tx("reading the ledger") as conn:   # one transaction, errors as StateStoreError
        conn.execute(...)
"""
from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, NoReturn

import sqlalchemy as sa
from sqlalchemy import bindparam, event, select
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from sparkmark.core.errors import StateStoreError, UnknownJobError
from sparkmark.state import schema
from sparkmark.state.schema import jobs

# Statements every run executes (begin, commit, ledger updates), built once: building a Core
# statement and its cache key costs ~70 us of Python per execution, more than SQLite takes to
# run it (13 statements a run).  Parameters are named ``b_*`` so that they never clash
# with the column names an UPDATE's SET takes from the parameters.
_Q_JOB = select(jobs).where(jobs.c.job_name == bindparam("b_job"))
_Q_JOB_LOCKED = _Q_JOB.with_for_update()
#: SQLite page cache of a writing store, in KiB
SQLITE_CACHE_KIB = 32_768


#: one engine per URL and process: (engine, the SQLite file's identity, its store id), the
#: most recently used last.  At most MAX_ENGINES: a pooled SQLite connection holds 1-3 file
#: descriptors (the file, its -wal and -shm), and a process that opens many stores (a
#: scheduler's worker, a test run: a store per test) would otherwise keep every one open until
#: it passes 1,024 descriptors, where py4j's callback server (select()) stops working.  An
#: engine pushed out is disposed (its pooled connections closed); a store still holding it
#: opens a new connection when it next needs one.
_ENGINES: "OrderedDict[str, tuple[Engine, Any, str | None]]" = OrderedDict()
_ENGINES_LOCK = threading.Lock()
MAX_ENGINES = 32


def _keep_engine(key: str, entry: tuple[Engine, Any, str | None]) -> None:
    """Cache ``entry`` as the most recently used (under ``_ENGINES_LOCK``), disposing the least
    recently used engines beyond :data:`MAX_ENGINES`."""
    _ENGINES[key] = entry
    _ENGINES.move_to_end(key)
    while len(_ENGINES) > MAX_ENGINES:
        _, (old, _, _) = _ENGINES.popitem(last=False)
        if old is not entry[0]:
            old.dispose()


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


@functools.lru_cache(maxsize=64)
def _url(url: str) -> Any:
    """``make_url(url)``, parsed once per process (a ``URL`` is immutable; unparsed,
    every ``Job()`` parsed its state URL twice, ~40 us)."""
    return make_url(url)


@functools.lru_cache(maxsize=64)
def redact(url: str) -> str:
    """The URL with any password masked, for messages."""
    from sparkmark.core.secrets import mask_url
    try:
        return mask_url(_url(url).render_as_string(hide_password=True))
    except Exception:  # not a URL at all: shown masked as text, so the user sees the typo
        return mask_url(url) if "@" not in url else "<unparseable URL>"


class StoreBase:
    """The engine, transactions and job-row look-ups every part of the store uses."""

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
                    _keep_engine(key, (self.engine, self.file_identity, self.store_id))

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
                    _ENGINES.move_to_end(key)
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
            _keep_engine(key, (engine, _sqlite_identity(engine), None))
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

    def _job_row(self, conn: Connection, job_name: str, *, lock: bool = False) -> Any:
        return conn.execute(_Q_JOB_LOCKED if lock else _Q_JOB, {"b_job": job_name}).first()

    def _require_job(self, conn: Connection, job_name: str, *, lock: bool = False) -> Any:
        row = self._job_row(conn, job_name, lock=lock)
        if row is None:
            raise UnknownJobError(
                f"no job named {cap(job_name)!r} in state store {self.display_url}; "
                "'sparkmark report' lists the jobs that have run")
        return row
