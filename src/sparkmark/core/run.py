"""The run-context seam: what a source or a sink may ask of the run it is part of.

Sources and sinks never see :class:`~sparkmark.lifecycle.job.Job` itself; they take a :class:`RunContext`
(``Job`` implements it).  The data flows *list → plan → read → transform → write → commit*, and
this protocol is the whole of what the I/O steps need::

    def read_my_source(run: RunContext, ctx: str | None) -> DataFrame:
        bm = run.bookmark(ctx)                 # the run decides: read all, new input, or replay
        if bm.mode is ReadMode.ALL:
            df, element = read_everything(run.spark), None
        else:
            df, element = read_after(run.spark, bm.previous, upto=bm.upper)
        run.record_read(ctx, element, {"files": 3, "new_input": True})
        return df

A sink records where it staged output *before* writing it (so a crash can always be cleaned
up), then counts what it wrote::

    run.stage_output(FileOutput(target=..., staging=..., format="parquet"))
    run.add_written(n)

Staged outputs are immutable records (:class:`FileOutput`, :class:`JdbcOutput`,
:class:`TableOutput`, :class:`DeltaOutput`); the ledger
keeps their JSON form, and a JDBC output's credentials stay in memory only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import (TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Protocol, Sequence,
                    Union, runtime_checkable)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class ReadMode(str, Enum):
    """How a bookmarked source reads in this run (decided by the run, from its options).

    ``ALL``: everything (bookmarks disabled, or no ``transformation_ctx``);
    ``INCREMENTAL``: only input past ``previous`` (enable, or pause without from/to);
    ``REPLAY``: exactly the input between ``previous`` and ``upper`` (pause with from/to).

    Example: ``if run.bookmark(ctx).mode is ReadMode.ALL: ...``
    """

    ALL = "all"
    INCREMENTAL = "incremental"
    REPLAY = "replay"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class SourceBookmark:
    """What a bookmarked source needs to plan its read.

    ``previous``: the element to continue from (``None``: nothing processed yet, read all).
    ``upper``: for ``REPLAY``, the element committed by the ``to`` run (read no further).
    ``listing_ts``: the run's listing time T in epoch ms.
    ``save``: whether ``commit()`` will save the element the source records.

    Example::

        bm = run.bookmark("orders_src")
        if bm.mode is ReadMode.INCREMENTAL:
            plan = plan_band(listing, BandState.from_element(bm.previous), bm.listing_ts, opts)
    """

    ctx: str | None
    mode: ReadMode
    previous: Mapping[str, Any] | None = None
    upper: Mapping[str, Any] | None = None
    listing_ts: int | None = None
    save: bool = False


class FileRead(NamedTuple):
    """One file a source read, for the per-file audit (``sparkmark files``): ``kind`` is
    ``new``, ``late`` (read after its band had passed: ``lateFiles=read``, a backfill) or
    ``rewrite`` (read before by this job in another version; see ``onModified``).

    Example: ``FileRead("file:/in/a.json", 120, 1716000000000, "new")``
    """

    path: str
    size: int
    mtime: int
    kind: str = "new"


@dataclass(frozen=True)
class FileOutput:
    """Output staged under a file target, published by renaming into it at commit.

    Example: ``FileOutput(target="file:/data/out", staging="file:/data/out/_sparkmark_staging/R/0",
    format="parquet")``
    """

    target: str
    staging: str
    format: str
    ctx: str | None = None
    partition_by: tuple[str, ...] = ()
    kind: str = field(default="files", init=False)

    def to_record(self) -> dict[str, Any]:
        """The JSON-able form kept in the ledger (``sm_runs.outputs``)."""
        return {"kind": self.kind, "target": self.target, "staging": self.staging,
                "format": self.format, "ctx": self.ctx, "partition_by": list(self.partition_by)}


@dataclass(frozen=True)
class JdbcOutput:
    """Rows staged in a staging table, moved into ``target`` in one DB transaction at commit.

    ``url`` is ``None`` when the URL itself carries a password; ``properties`` holds only the
    properties safe to store.  ``credentials`` (the connection properties as given, with the
    URL) live in memory for this run only and are never written anywhere.

    Example: ``JdbcOutput(target="orders", staging_table="orders__sm_stage", columns=(...),
    url="jdbc:postgresql://db/shop", properties={"user": "etl"}, run_id=R)``
    """

    target: str
    staging_table: str
    columns: tuple[str, ...]
    url: str | None
    properties: Mapping[str, str]
    run_id: str | None = None
    ctx: str | None = None
    credentials: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    kind: str = field(default="jdbc", init=False)

    def to_record(self) -> dict[str, Any]:
        """The JSON-able form kept in the ledger; never includes ``credentials``."""
        return {"kind": self.kind, "target": self.target, "staging_table": self.staging_table,
                "columns": list(self.columns), "url": self.url,
                "properties": dict(self.properties), "ctx": self.ctx, "run_id": self.run_id}


@dataclass(frozen=True)
class TableOutput:
    """A snapshot staged in an Apache Iceberg table (write-audit-publish), made current by
    cherry-picking it at commit.  ``wap_id`` is the staged snapshot's ``wap.id``: unique per
    write, so a publish can tell whether it already happened by walking the table's ancestry.

    Example: ``TableOutput(target="local.db.orders", wap_id=R + "-1f2e3d4c", run_id=R,
    ctx="sink")``
    """

    target: str
    wap_id: str
    run_id: str | None = None
    ctx: str | None = None
    format: str = "iceberg"
    kind: str = field(default="iceberg", init=False)

    def to_record(self) -> dict[str, Any]:
        """The JSON-able form kept in the ledger (``sm_runs.outputs``)."""
        return {"kind": self.kind, "target": self.target, "wap_id": self.wap_id,
                "run_id": self.run_id, "ctx": self.ctx, "format": self.format}


@dataclass(frozen=True)
class DeltaOutput:
    """Rows appended to a Delta Lake table in one commit *during* the run (Delta has no
    unpublished commits): ``write_id`` names this write; the commit carries the Delta
    transaction ``(app_id, txn_version)`` (``txn_version``: ``before + 1``) and a
    ``userMetadata`` naming job, run and ``write_id``.  ``location`` is the table's directory;
    ``before`` the table version before the write (-1: no table yet), so the commit is found in
    the versions after it; ``version`` the version written (``None`` until the sink knows it:
    a crash in between is found by the transaction).  ``stamped``: the rows carry
    ``sm_run_id``.

    Example: ``DeltaOutput(target="/data/orders", location="file:/data/orders",
    write_id=R + "-1f2e3d4c", app_id="sparkmark-ab12...", txn_version=42, before=41,
    run_id=R, version=42)``
    """

    target: str
    location: str
    write_id: str
    app_id: str
    txn_version: int
    before: int
    run_id: str | None = None
    ctx: str | None = None
    stamped: bool = True
    version: int | None = None
    format: str = "delta"
    kind: str = field(default="delta", init=False)

    def to_record(self) -> dict[str, Any]:
        """The JSON-able form kept in the ledger (``sm_runs.outputs``)."""
        return {"kind": self.kind, "target": self.target, "location": self.location,
                "write_id": self.write_id, "app_id": self.app_id,
                "txn_version": self.txn_version, "before": self.before, "run_id": self.run_id,
                "ctx": self.ctx, "stamped": self.stamped, "version": self.version,
                "format": self.format}


StagedOutput = Union[FileOutput, JdbcOutput, TableOutput, DeltaOutput]


def _files_from(record: Mapping[str, Any]) -> FileOutput:
    return FileOutput(target=record["target"], staging=record["staging"],
                      format=record.get("format", "parquet"), ctx=record.get("ctx"),
                      partition_by=tuple(record.get("partition_by") or ()))


def _jdbc_from(record: Mapping[str, Any]) -> JdbcOutput:
    return JdbcOutput(target=record["target"], staging_table=record["staging_table"],
                      columns=tuple(record.get("columns") or ()), url=record.get("url"),
                      properties=dict(record.get("properties") or {}),
                      run_id=record.get("run_id"), ctx=record.get("ctx"))


def _iceberg_from(record: Mapping[str, Any]) -> TableOutput:
    return TableOutput(target=record["target"], wap_id=record["wap_id"],
                       run_id=record.get("run_id"), ctx=record.get("ctx"),
                       format=record.get("format", "iceberg"))


def _delta_from(record: Mapping[str, Any]) -> DeltaOutput:
    version = record.get("version")
    return DeltaOutput(target=record["target"], location=record["location"],
                       write_id=record["write_id"], app_id=record["app_id"],
                       txn_version=int(record["txn_version"]), before=int(record["before"]),
                       run_id=record.get("run_id"), ctx=record.get("ctx"),
                       stamped=bool(record.get("stamped", True)),
                       version=None if version is None else int(version))


#: each output kind's ``kind`` -> how its ledger record is read back
_FROM_RECORD: "dict[str, Callable[[Mapping[str, Any]], StagedOutput]]" = {
    "files": _files_from, "jdbc": _jdbc_from, "iceberg": _iceberg_from, "delta": _delta_from}


def output_from_record(record: Mapping[str, Any]) -> StagedOutput:
    """A staged output back from its ledger record (no credentials: they were never stored).

    Example: ``[output_from_record(r) for r in json.loads(row["outputs"] or "[]")]``
    """
    kind = record.get("kind")
    read = _FROM_RECORD.get(str(kind))
    if read is None:
        raise ValueError(f"unknown staged output kind {kind!r} in the ledger")
    return read(record)


@runtime_checkable
class RunContext(Protocol):
    """The narrow, public seam between a run and its sources and sinks.

    :class:`~sparkmark.lifecycle.job.Job` implements it; a test or a new source can implement it too.
    One more method is optional (a run context without it still is one): ``add_after_commit``
    (work after the state commit, never after a failure; see :func:`add_after_commit`).
    Example of a source written against it::

        def read_numbers(run: RunContext, ctx: str) -> DataFrame:
            bm = run.bookmark(ctx)
            last = (bm.previous or {}).get("last", 0) if bm.mode is not ReadMode.ALL else 0
            df = run.spark.range(last + 1, last + 11)
            run.record_read(ctx, {"last": last + 10}, {"records": 10, "new_input": True})
            return df
    """

    @property
    def spark(self) -> "SparkSession": ...

    @property
    def run_id(self) -> str | None: ...

    @property
    def job_name(self) -> str | None: ...

    @property
    def snapshot_ts(self) -> int | None: ...

    def bookmark(self, ctx: str | None) -> SourceBookmark:
        """The bookmark a source plans with; its ``mode`` says how to read."""
        ...

    def record_read(self, ctx: str | None, element: Mapping[str, Any] | None,
                    report: Mapping[str, Any]) -> None:
        """What a source read: ``element`` is the state to commit for ``ctx`` (``None``: keep
        the committed one), ``report`` goes into the ledger config under ``sources[ctx]``."""
        ...

    def record_files(self, ctx: str | None, files: Sequence[FileRead]) -> None:
        """The files a source read (:class:`FileRead`), kept in the per-file audit if the run
        commits.  A source may record them before it builds its read (a large read's rows are
        then written meanwhile); they count once its :meth:`record_read` for the same ``ctx``
        follows, so a read that fails in between leaves none."""
        ...

    def files_read_before(self, ctx: str | None, paths: Sequence[str]
                          ) -> Mapping[str, set[tuple[int | None, int | None]]]:
        """Which of ``paths`` committed runs of this job read for ``ctx``:
        ``{path: {(mtime, size), ...}}`` (the per-file audit, within its retention)."""
        ...

    def stage_output(self, output: StagedOutput) -> None:
        """Record staged output in the ledger *before* it is written.  Recording an output
        again with the same ``write_id`` (a Delta write that learnt its version) replaces
        the earlier record."""
        ...

    def add_written(self, n: int) -> None:
        """Count rows written to a target (the ledger's ``records_written``)."""
        ...

    def add_commit_check(self, check: Callable[[], None], *, concurrent: bool = False) -> None:
        """Run ``check()`` at commit, before anything is saved; an exception from it fails the
        run (e.g. a selected file changed while the run read it).  ``concurrent=True``: it
        only verifies, so it may run while the commit's transaction is written (which then
        commits only once it passed)."""
        ...

    def add_secrets(self, properties: Mapping[str, Any] | None = None,
                    url: str | None = None) -> None:
        """Secret values this run was given (connection properties, a URL's password): they
        are scrubbed from any text the run writes to the ledger."""
        ...


def has_new_input(run: RunContext) -> bool | None:
    """Whether the run's bookmarked sources found new input so far: ``True``, ``False`` (each
    read nothing new) or ``None`` (no bookmarked source yet, or a run context that does not
    say: its optional ``new_input()``).  A sink may skip work on ``False`` only after it has
    checked that its own DataFrame is empty (a DataFrame may hold rows of other inputs).

    Example: ``if has_new_input(run) is False and df.isEmpty(): return 0``
    """
    ask = getattr(run, "new_input", None)
    return ask() if callable(ask) else None


def add_verifying_check(run: RunContext, check: Callable[[], None]) -> None:
    """Register ``check``, which only verifies, with ``run``: as ``concurrent=True`` when the
    run context takes that keyword, else as any commit check (a run context written before
    the keyword was added runs it before the commit, one check after the other: the same
    guarantee, without the overlap).

    Example: ``add_verifying_check(run, lambda: check_unchanged(spark, files, "source 'src'"))``
    """
    import inspect
    try:
        params = inspect.signature(run.add_commit_check).parameters.values()
    except (TypeError, ValueError):  # no signature to read: the plain call
        params = None
    if params is not None and any(p.name == "concurrent" or p.kind is p.VAR_KEYWORD
                                  for p in params):
        run.add_commit_check(check, concurrent=True)
    else:
        run.add_commit_check(check)


def add_after_commit(run: RunContext, action: Callable[[], None]) -> bool:
    """Have ``run`` call ``action()`` after its state commit (never after a failure), where the
    run context offers that (``add_after_commit``, as :class:`~sparkmark.lifecycle.job.Job`
    does); returns whether it will.  A run context without it never runs the action: what it
    does must then be safe to leave to a later run (an event message not deleted comes back
    and reads nothing).

    Example: ``add_after_commit(run, lambda: queue.delete(ids))``
    """
    hook = getattr(run, "add_after_commit", None)
    if not callable(hook):
        return False
    hook(action)
    return True
