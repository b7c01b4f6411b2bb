"""Bookmark administration in Python — the same calls as ``sparkmark bookmark ...``.

    from sparkmark import Bookmarks
    bm = Bookmarks()                    # state: URL, env SPARKMARK_STATE, or the default
    bm.get("orders")                    # Glue's JobBookmarkEntry shape, as a dict
    bm.get("orders", run_id=R)          # the bookmark that run R committed
    bm.history("orders")                # every version, oldest first
    bm.reset("orders")                  # next enabled run reprocesses everything
    bm.reset("orders", run_id=R)        # rewind: next run reprocesses only what came after R
    bm.reset("orders", run_id=R, remove_output=True)  # ... and delete later runs' output
    bm.release("orders")                # end an active run that will never finish
    bm.files("orders", path="a.json")   # which run read that file (the per-file audit)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from sparkmark.core.clock import Clock, system_clock
from sparkmark.state import StateStore, open_store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sparkmark.sinks.rollback import ResetPlan

__all__ = ["Bookmarks", "ResetPlan", "path_pattern"]

#: The per-file audit's columns, in the order ``sparkmark files`` shows them.
FILE_COLUMNS = ("path", "size", "mtime", "ctx", "run_id", "run_status", "kind", "read_ts")


def path_pattern(glob: str) -> str:
    """A ``--path`` glob as a SQL LIKE pattern: ``*`` any characters, ``?`` one; a glob
    without a scheme (``file:``, ``s3a:``) matches the end of a path after a ``/``, so a file
    name or a folder-relative path is enough.

    >>> path_pattern("dt=2024-05-01/*.json")
    '%/dt=2024-05-01/%.json'
    """
    like = "".join({"*": "%", "?": "_", "%": "\\%", "_": "\\_", "\\": "\\\\"}.get(c, c)
                   for c in glob)
    scheme = ":" in glob.split("/", 1)[0]
    if scheme:
        return like
    return "%" + like if glob.startswith("/") else "%/" + like


#: the newest versions ``sparkmark bookmark history`` shows when given neither ``--limit`` nor
#: ``--all``, per output (JSON: every version)
HISTORY_LIMITS = {"table": 100}


def history_limit(fmt: str, limit: int | None = None, every: bool = False) -> int | None:
    """How many of the newest versions ``sparkmark bookmark history --format fmt`` shows:
    ``limit`` when given, all with ``every`` (``--all``), else :data:`HISTORY_LIMITS`.

    >>> history_limit("table"), history_limit("json"), history_limit("table", 5)
    (100, None, 5)
    """
    from sparkmark.core.errors import ConfigError
    if every and limit is not None:
        raise ConfigError("give --limit N or --all, not both")
    return None if every else limit if limit is not None else HISTORY_LIMITS.get(fmt)


#: the newest reads ``sparkmark files`` shows when given neither ``--limit`` nor ``--all``, per
#: output (JSON and CSV: every row)
FILES_LIMITS = {"table": 100}


def files_limit(fmt: str, limit: int | None = None, every: bool = False) -> int | None:
    """How many of the newest reads ``sparkmark files --format fmt`` shows: ``limit`` when
    given, all with ``every`` (``--all``), else :data:`FILES_LIMITS`.

    >>> files_limit("table"), files_limit("csv"), files_limit("table", every=True)
    (100, None, None)
    """
    from sparkmark.core.errors import ConfigError
    if every and limit is not None:
        raise ConfigError("give --limit N or --all, not both")
    return None if every else limit if limit is not None else FILES_LIMITS.get(fmt)


class Bookmarks:
    """Bookmark administration: the Python side of ``sparkmark bookmark ...``.

    Example::

        bm = Bookmarks("sqlite:///.sparkmark/state.db")
        bm.get("orders")["JobBookmark"]       # the state elements by transformation_ctx
        bm.reset("orders", run_id=R)          # rewind: the next run reprocesses after R
    """

    def __init__(self, state: str | StateStore | None = None, clock: Clock | None = None):
        self.store = state if isinstance(state, StateStore) else open_store(state)
        self.clock = clock or system_clock

    def get(self, job_name: str, run_id: str | None = None) -> dict[str, Any]:
        """The job's bookmark (or the one run ``run_id`` committed) shaped like Glue's
        ``JobBookmarkEntry``: ``JobName, Version, Run, Attempt, PreviousRunId, RunId,
        JobBookmark``.  Example: ``Bookmarks().get("orders")["Version"]``"""
        return self.store.bookmark_entry(job_name, run_id)

    def history(self, job_name: str, last: int | None = None) -> list[dict[str, Any]]:
        """Every bookmark version of the job, oldest first, each with ``Kind`` (commit, reset,
        rewind, ...), ``CreatedTs`` and ``RewoundToRunId``; ``last``: only the newest N (read
        with a LIMIT).

        Example: ``[h["Kind"] for h in Bookmarks().history("orders", last=10)]``
        """
        from sparkmark.core.errors import ConfigError
        if last is not None and (isinstance(last, bool) or not isinstance(last, int)
                                 or last < 1):
            raise ConfigError(f"the number of versions to show (--limit, last=) must be a "
                              f"positive number of versions, not {last!r}")
        out = []
        for v in self.store.history(job_name, last=last):
            entry = v.as_entry()
            entry.update(Kind=v.kind, CreatedTs=v.created_ts, RewoundToRunId=v.source_run_id)
            out.append(entry)
        return out

    def reset(self, job_name: str, run_id: str | None = None, *, remove_output: bool = False,
              dry_run: bool = False, spark: "SparkSession | None" = None,
              properties: dict[str, dict[str, Any]] | None = None) -> Any:
        """Reset (or rewind to run ``run_id``) as a new version; history is kept.

        Plain call: returns the new version number (an ``int``)::

            bm.reset("orders", run_id=R)                       # -> 7

        ``remove_output=True`` also removes the output of every later SUCCEEDED/EMPTY run of
        the job from its file targets (files ``sm-<run_id>-*``), JDBC targets (rows by
        ``sm_run_id``) and Iceberg targets (the run's data files, one commit per run; ``spark``
        must know the table's catalog) and marks those runs ROLLED_BACK, so a re-run writes each record once.
        ``dry_run=True`` changes nothing and shows what would go. Both return a
        :class:`ResetPlan`::

            plan = bm.reset("orders", run_id=R, remove_output=True, dry_run=True)
            print(plan.run_ids, plan.removed)

        JDBC targets need credentials the ledger does not keep:
        ``properties={"public.orders_out": {"user": "u", "password": "p", "url": "jdbc:..."}}``.
        A crash during removal is finished by calling reset again or by the job's next run.
        """
        if not remove_output and not dry_run:
            return self.store.reset(job_name, run_id, now=self.clock())
        from sparkmark.sinks.rollback import reset_with_output
        return reset_with_output(self.store, job_name, run_id, remove_output=remove_output,
                                 dry_run=dry_run, spark=spark, properties=properties,
                                 now=self.clock)

    def set(self, job_name: str, ctx: str, *, after: Any = None,
            processed: Sequence[str] | None = None, after_key: Sequence[Any] | None = None,
            spark: "SparkSession | None" = None, snapshot: int | str | None = None,
            new_ctx: bool = False) -> int:
        """Move one context's element on purpose; returns the new version (kind ``set``).

        File sources: ``after`` (ISO time: every file modified up to then counts as processed)
        or ``processed`` (files to treat as already read). JDBC sources: ``after_key`` (one
        value per bookmark key: the next run reads the rows after it). Table sources:
        ``snapshot`` (the next run reads what was committed after that snapshot)::

            bm.set("orders", "src", after="2024-05-01T00:00:00Z")
            bm.set("orders_db", "orders", after_key=["1000"])
            bm.set("orders_ice", "src", snapshot=4711)

        ``ctx`` must be a context the job's bookmark knows; ``new_ctx=True`` seeds one no run
        has read yet. A job that has never run in this store (a cut-over from Glue) is created
        with this one element, and its first run starts from it::

            bm.set("orders", "new_src", after="2024-05-01T00:00:00Z", new_ctx=True)

        Bad input raises a clear error and changes nothing; history is kept.
        """
        from sparkmark.ops.bookmark_edit import set_bookmark
        return set_bookmark(self.store, job_name, ctx, now=self.clock(), after=after,
                            processed=processed, after_key=after_key, spark=spark,
                            snapshot=snapshot, new_ctx=new_ctx)

    def files(self, job_name: str, *, ctx: str | None = None, run_id: str | None = None,
              path: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """The per-file audit: which committed run read which file, newest reads first.

        Each row has ``path, size, mtime`` (epoch ms), ``ctx``, ``run_id``, ``run_status``
        (``SUCCEEDED``, ``EMPTY``, or ``ROLLED_BACK`` once a rollback removed the run's
        output), ``kind`` (``new``, ``late``, ``rewrite``) and ``read_ts`` (the commit time;
        for a read of 100,000 files or more, written ahead of the commit, the time of the read).
        ``path`` is a glob (see :func:`path_pattern`).  Rows are kept for the job's
        ``files_retention_days`` (default 30)::

            [r["run_id"] for r in Bookmarks().files("orders", path="2024-05-01.json")]

        An unknown job is a clear error.
        """
        return self.files_page(job_name, ctx=ctx, run_id=run_id, path=path, limit=limit)[0]

    def files_page(self, job_name: str, *, ctx: str | None = None, run_id: str | None = None,
                   path: str | None = None, limit: int | None = None
                   ) -> tuple[list[dict[str, Any]], int]:
        """:meth:`files` and the number of rows in all (beyond ``limit``):
        ``rows, total = Bookmarks().files_page("orders", limit=100)``."""
        from sparkmark.core.errors import ConfigError
        if limit is not None and limit < 1:
            raise ConfigError(f"limit={limit!r} must be a positive number of rows")
        self.store.current_version(job_name)  # an unknown job: one clear error
        rows, total = self.store.file_audit(job_name, ctx=ctx, run_id=run_id,
                                            path_like=path_pattern(path) if path else None,
                                            limit=limit)
        return [{"path": r["path"], "size": r["size"], "mtime": r["mtime"], "ctx": r["ctx"] or None,
                 "run_id": r["run_id"], "run_status": r["status"], "kind": r["kind"],
                 "read_ts": r["read_ts"]} for r in rows], total

    def files_dataframe(self, spark: "SparkSession", job_name: str, **filters: Any
                        ) -> "DataFrame":
        """:meth:`files` as a Spark DataFrame (same filters, same columns)::

            Bookmarks().files_dataframe(spark, "orders").groupBy("run_id").count().show()
        """
        from pyspark.sql.types import LongType, StringType, StructField, StructType
        types = {"size": LongType(), "mtime": LongType(), "read_ts": LongType()}
        schema = StructType([StructField(c, types.get(c, StringType())) for c in FILE_COLUMNS])
        rows = self.files(job_name, **filters)
        return spark.createDataFrame([tuple(r[c] for c in FILE_COLUMNS) for r in rows], schema)

    def release(self, job_name: str, run_id: str | None = None) -> str:
        """End the run holding the job's lease that will never finish (its process hung or its
        host is gone): the run is recorded FAILED, the lease freed, the bookmark untouched.
        Returns the released run id::

            bm.release("orders")              # whatever run holds the lease
            bm.release("orders", run_id=R)    # only if R holds it

        If that run was still alive after all, its commit is refused (it lost the lease).
        """
        return self.store.release(job_name, run_id, now=self.clock(),
                                  error="released by an operator (sparkmark bookmark release)")


def __getattr__(name: str) -> Any:
    """``ResetPlan`` from :mod:`sparkmark.sinks.rollback`, imported on first use (CLI start-up)."""
    if name == "ResetPlan":
        from sparkmark.sinks.rollback import ResetPlan
        return ResetPlan
    raise AttributeError(name)
