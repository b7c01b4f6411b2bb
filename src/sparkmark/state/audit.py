"""The per-file audit (``sm_files``): the rows a run's file sources read, written at its commit
or ahead of it in batches (:meth:`AuditRows.stage_files`), and the readers that count only
committed runs' rows.  A mixin of :class:`~sparkmark.state.StateStore`.

Example: ``rows, total = store.file_audit("orders", path_like="%2024-06%", limit=50)``
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator

import sqlalchemy as sa
from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from sparkmark.core.status import RunStatus
from sparkmark.planning.bands import path_hash
from sparkmark.state.schema import files, runs
from sparkmark.state.store_base import StoreBase

#: the per-file audit past its retention, deleted at a commit that finds some
_D_OLD_FILES = files.delete().where(files.c.job_name == bindparam("b_job"),
                                    files.c.read_ts < bindparam("b_before"))
_FILE_COLUMNS = ("job_name", "run_id", "read_ts", "ctx", "path", "path_hash", "size", "mtime",
                 "kind")
_PLACEHOLDER = {"qmark": "?", "format": "%s", "pyformat": "%s"}


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


class AuditRows(StoreBase):
    """Writing and reading the per-file audit."""

    @staticmethod
    def _expire_files(conn: Connection, job_name: str, before: int) -> None:
        """Delete the job's audit rows read before ``before`` (epoch ms), in the commit's
        transaction."""
        conn.execute(_D_OLD_FILES, {"b_job": job_name, "b_before": before})

    @staticmethod
    def _record_files(conn: Connection, job_name: str, run_id: str, now: int,
                      files_read: Any) -> None:
        """Insert the audit rows of a committing run (``(ctx, read)`` pairs), in its
        transaction; in path-hash order into a large table (:func:`_hash_order`)."""
        large: bool | None = None
        for ctx, read in files_read or ():
            if large is None and len(read) >= AUDIT_SORT_READ:
                large = _audit_is_large(conn)
            for rows in _audit_batches(job_name, run_id, now, ctx, read, bool(large)):
                _insert_rows(conn, files, _FILE_COLUMNS, rows)

    def stage_files(self, job_name: str, run_id: str, ctx: str | None, read: Any, *,
                    now: int, stop: Callable[[], bool] | None = None) -> None:
        """The per-file audit rows of one source's files read (``read``: ``FileRead``-like
        entries), written ahead of the run's commit, a bounded batch per short transaction (a
        large first run's rows go in while Spark builds its read).  They count only
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
