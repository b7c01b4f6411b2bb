"""Overwatch-style pipelines: modules with time windows, dependency gating, a ledger, rollback.

    from sparkmark import Pipeline

    p = Pipeline("overwatch", spark, primordial_date="2024-01-01", max_days_to_load=5)

    @p.module(id=1004, name="Bronze_AuditLogs", layer="bronze", target="data/bronze/audit_log")
    def audit_logs(ctx):
        return ctx.job.read.files("landing/audit", format="json", transformation_ctx="audit")

    @p.module(id=2010, name="Silver_JobsStatus", layer="silver", target="data/silver/jobs",
              depends_on=[1004])
    def jobs_status(ctx):            # the bronze rows loaded in my window, late ones included
        return ctx.window(ctx.spark.read.parquet("data/bronze/audit_log"))

    summary = p.run()            # all modules, in dependency order
    p.report().show()            # the ledger as a Spark DataFrame
    p.rollback(modules=[2010], since="2024-01-03")

How a pipeline maps onto jobs
    Every module run *is* a job run of the job named ``"<pipeline>.<module_id>"`` (bookmarks
    enabled), so bookmarked sources inside a module (``ctx.job.read.files(...)``) work and commit
    in the same transaction as the module's output and its ledger row.  Each module run has its
    own ``run_id`` (the ledger's key); the pipeline run's id is in the ledger column
    ``pipeline_run_id`` and is ``ctx.run_id``.  Rows written by a module are stamped with
    ``sm_run_id`` = the *module* run id (so a rollback deletes exactly that run's output),
    ``sm_snapshot_ts`` = the pipeline snapshot, and ``sm_pipeline_run_id`` = the pipeline run id.

Windows, gating and rollback cuts are planned by the pure functions in
:mod:`sparkmark.planning.windows`.
"""
from __future__ import annotations

import json
import runpy
import sys
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone as dt_timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from sparkmark.core.clock import Clock, format_ts, system_clock
from sparkmark.core.errors import ConcurrentRunError, PipelineError, SparkmarkError
from sparkmark.core.formats import WRITE_FORMATS
from sparkmark.lifecycle.job import Job
from sparkmark.state.ledger import run_markers
from sparkmark.core.options import ENABLE
from sparkmark.sinks import remove_run_output
from sparkmark.planning.windows import (DAY_MS, EMPTY, FAILED, NO_PROGRESS, PROGRESS_STATUSES,
                               ROLLED_BACK, SKIP, SKIPPED, SUCCEEDED, LedgerRun, RunPlanner,
                               TargetWrite, Window, after_rollback, get_zone,
                               module_start, normalize_target, ownership_conflict,
                               parse_duration, parse_time, primordial_start, rollback_cut,
                               select_modules, topo_order)
from sparkmark.state import StateStore, open_store
from sparkmark.state.lease import host_name, lease_is_alive, this_host
from sparkmark.core.status import PublishState

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PIPELINE_RUN_ID_COL = "sm_pipeline_run_id"
SNAPSHOT_COL = "sm_snapshot_ts"       # the load stamp every module's output carries
RUN_ID_COL = "sm_run_id"
OUTPUT_CTX = "sm_module_output"
LAYER_RANK = {"bronze": 0, "silver": 1, "gold": 2, "presentation": 3, "platinum": 3}
FILE_FORMATS = WRITE_FORMATS
#: a module whose format is this writes to an Apache Iceberg table (its target is a table name)
TABLE_FORMAT = "iceberg"
#: what ``@p.module(format=...)`` accepts
MODULE_FORMATS: tuple[str, ...] = (*WRITE_FORMATS, TABLE_FORMAT)


# ---------------------------------------------------------------------- module definition
@dataclass(frozen=True)
class Module:
    """One module of a pipeline, as ``@p.module(...)`` declared it (SPEC §8).

    Example: ``p.modules[1004].target`` is the folder the module's output is published to.
    """

    id: int
    name: str
    layer: str
    target: str
    depends_on: tuple[int, ...]
    format: str
    fn: Callable[["ModuleContext"], "DataFrame"]
    partition_by: tuple[str, ...] = ()
    take_over_from: str | None = None   # the job whose target (and window) this module took


@dataclass
class ModuleContext:
    """What a module function gets.  Example::

        @p.module(id=2010, name="Silver_Jobs", layer="silver", target="silver/jobs",
                  depends_on=[1004])
        def jobs(ctx: ModuleContext):
            return ctx.window(ctx.spark.read.parquet("bronze/audit"))

    ``from_ts``/``until_ts``: the module's window ``[from, until)`` in epoch ms UTC;
    ``run_id``: the pipeline run id; ``module_run_id``: this module run's id (``job.run_id``);
    ``snapshot_ts``: the pipeline snapshot (epoch ms); ``job``: the module's running
    :class:`~sparkmark.lifecycle.job.Job` (bookmarked reads: ``ctx.job.read.files(...)``).
    """

    spark: "SparkSession"
    from_ts: int
    until_ts: int
    run_id: str
    snapshot_ts: int
    job: Job
    module: Module
    pipeline: str
    timezone: str

    @property
    def module_run_id(self) -> str:
        """This module run's id (the ledger's ``run_id``; stamped as ``sm_run_id``)."""
        return self.job.run_identity()[1]

    @property
    def from_time(self) -> datetime:
        return datetime.fromtimestamp(self.from_ts / 1000, tz=dt_timezone.utc)

    @property
    def until_time(self) -> datetime:
        return datetime.fromtimestamp(self.until_ts / 1000, tz=dt_timezone.utc)

    def in_window(self, column: "str | Column", df: "DataFrame | None" = None, *,
                  epoch_ms: bool | None = None, lookback: Any = None) -> "Column":
        """``from - lookback <= column < until`` on event time.

        ``column``: a timestamp column, or numbers of epoch ms -- say so with ``epoch_ms=True``
        or pass ``df`` so the type can be looked up.  ``lookback`` (a ``timedelta``, ms, or
        text like ``"6 hours"``) widens the window backwards to catch late events; rows in the
        lookback were already seen by an earlier run, so deduplicate them.

            df.where(ctx.in_window("ts_ms", epoch_ms=True))
        """
        from pyspark.sql import functions as F
        from pyspark.sql.types import NumericType
        col = F.col(column) if isinstance(column, str) else column
        start = self.from_ts - (0 if lookback is None else parse_duration(lookback))
        if epoch_ms is None:
            epoch_ms = (df is not None and isinstance(column, str)
                        and isinstance(df.schema[column].dataType, NumericType))
        if epoch_ms:
            return (col >= F.lit(start)) & (col < F.lit(self.until_ts))
        return ((col >= F.timestamp_millis(F.lit(start)))
                & (col < F.timestamp_millis(F.lit(self.until_ts))))

    def in_stamp_window(self) -> "Column":
        """``from < sm_snapshot_ts <= until``: the upstream rows loaded in this window.

        Stamps are pipeline snapshots, and a window never ends after its snapshot, so the
        comparison is ``(from, until]``: rows a dependency wrote earlier in *this* pipeline run
        (stamped with this snapshot) belong to this window, and every upstream row to exactly
        one window of this module, however late its events are.
        """
        from pyspark.sql import functions as F
        col = F.col(SNAPSHOT_COL)
        return ((col > F.timestamp_millis(F.lit(self.from_ts)))
                & (col <= F.timestamp_millis(F.lit(self.until_ts))))

    def window(self, df: "DataFrame", column: str | None = None, *,
               lookback: Any = None) -> "DataFrame":
        """The rows of ``df`` in this module's window.

        Without ``column`` (recommended for an upstream module's target): the rows whose load
        stamp ``sm_snapshot_ts`` is in the window -- every upstream row reaches this module
        exactly once, late events included.  With ``column``: the rows whose event time
        (timestamp, or epoch ms) is in ``[from - lookback, until)``.

            silver = ctx.window(ctx.spark.read.parquet("data/bronze/orders"))
            recent = ctx.window(events, "event_time", lookback="1 day")
        """
        if column is None:
            if lookback is not None:
                raise PipelineError("lookback applies to an event-time column: "
                                    "ctx.window(df, 'event_time', lookback='1 day'); the stamp "
                                    "window needs none (late rows are not missed)")
            if SNAPSHOT_COL not in df.columns:
                raise PipelineError(
                    f"ctx.window(df) windows on the upstream load stamp {SNAPSHOT_COL}, and this "
                    f"DataFrame has no such column (columns: {', '.join(df.columns)}); read an "
                    "upstream module's target, or give an event-time column: "
                    "ctx.window(df, 'event_time')")
            return df.where(self.in_stamp_window())
        return df.where(self.in_window(column, df, lookback=lookback))


# ---------------------------------------------------------------------- results
@dataclass
class ModuleResult:
    """How one module ended in a pipeline run.

    Example: ``[r.status for r in p.run().results]``
    """

    module_id: int
    module_name: str
    layer: str
    status: str
    from_ts: int | None
    until_ts: int | None
    records_written: int | None = None
    run_id: str | None = None
    error: str | None = None
    late_files: int | None = None   # files arrived with an old mtime (lateFiles), from the ledger


@dataclass
class RunSummary:
    """What ``Pipeline.run`` did: one result per module run, in run order.

    Example::

        summary = p.run(layers="bronze,silver")
        print(summary)                    # a table of modules, windows and statuses
        sys.exit(summary.exit_code)       # 1 when a module FAILED
    """

    pipeline: str
    run_id: str
    snapshot_ts: int
    timezone: str
    results: list[ModuleResult]

    @property
    def failed(self) -> bool:
        return any(r.status == FAILED for r in self.results)

    @property
    def skipped(self) -> bool:
        """True if a selected module was SKIPPED because a dependency failed."""
        return any(r.status == SKIPPED for r in self.results)

    @property
    def exit_code(self) -> int:
        """1 if a module FAILED or was SKIPPED by a failed dependency (nothing moved), else 0."""
        return 1 if self.failed or self.skipped else 0

    def status_of(self, module_id: int) -> str | None:
        """The status module ``module_id`` ended with in this run (``None``: not run)."""
        return next((r.status for r in self.results if r.module_id == module_id), None)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [{"module_id": r.module_id, "module_name": r.module_name, "layer": r.layer,
                 "status": r.status, "from": format_ts(r.from_ts, self.timezone),
                 "until": format_ts(r.until_ts, self.timezone),
                 "records_written": r.records_written, "late_files": r.late_files,
                 "run_id": r.run_id,
                 "error": (r.error or "").splitlines()[0][:300] if r.error else None}
                for r in self.results]

    def __str__(self) -> str:
        head = (f"pipeline {self.pipeline} run {self.run_id} snapshot "
                f"{format_ts(self.snapshot_ts, self.timezone)}"
                f" -> {'FAILED' if self.failed else 'SKIPPED' if self.skipped else 'ok'}")
        late = ["late_files"] if any(r.late_files for r in self.results) else []
        return head + "\n" + text_table(self.rows, ["module_id", "module_name", "layer", "status",
                                                "from", "until", "records_written", *late,
                                                "error"])

    def __rich__(self):
        from rich.text import Text
        return Text(str(self))


@dataclass
class RollbackModule:
    """What a rollback does to one module: the cut, the runs undone and their output.

    Example: ``[m.cut_ts for m in p.rollback(modules=[2011], since="2024-01-03").modules]``
    """

    module_id: int
    module_name: str
    job_name: str
    cut_ts: int
    keep_run_id: str | None
    runs: list[dict[str, Any]]
    files: list[str] = field(default_factory=list)
    reload_from_ts: int | None = None   # where the next run starts (the planner's rule)


@dataclass
class RollbackPlan:
    """What ``Pipeline.rollback`` did (or, with ``dry_run=True``, would do).

    Per module, the cut and the runs undone.

    Example: ``print(p.rollback(modules=[2011], since="2024-01-03", dry_run=True))``
    """

    pipeline: str
    dry_run: bool
    timezone: str
    modules: list[RollbackModule]
    warnings: list[str] = field(default_factory=list)

    @property
    def run_ids(self) -> list[str]:
        return [r["run_id"] for m in self.modules for r in m.runs]

    @property
    def rows(self) -> list[dict[str, Any]]:
        out = []
        for m in self.modules:
            for r in m.runs:
                out.append({"module_id": m.module_id, "module_name": m.module_name,
                            "cut": format_ts(m.cut_ts, self.timezone), "run_id": r["run_id"],
                            "pipeline_run_id": r.get("pipeline_run_id"),
                            "status": r["status"] if self.dry_run else ROLLED_BACK,
                            "from": format_ts(r.get("from_ts"), self.timezone),
                            "until": format_ts(r.get("until_ts"), self.timezone),
                            "records_written": r.get("records_written"),
                            "files": sum(1 for f in m.files if f"sm-{r['run_id']}-" in f)})
        return out

    def __str__(self) -> str:
        verb = "would roll back" if self.dry_run else "rolled back"
        lines = [f"pipeline {self.pipeline}: {verb} {len(self.run_ids)} run(s)"
                 + (" (dry run: nothing changed)" if self.dry_run else "")]
        for m in self.modules:
            lines.append(f"  module {m.module_id} {m.module_name}: cut at "
                         f"{format_ts(m.cut_ts, self.timezone)}, {len(m.runs)} run(s), "
                         f"{len(m.files)} file(s); the next run reloads from "
                         f"{format_ts(m.reload_from_ts, self.timezone)}")
        lines.append(text_table(self.rows, ["module_id", "run_id", "status", "from", "until",
                                        "records_written", "files"]))
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)

    def __rich__(self):
        from rich.text import Text
        return Text(str(self))


def text_table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    """Rows as a plain, aligned text table (no colour).

    Example: ``print(text_table(report_rows(store), ["module_id", "status"]))``
    """
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    out = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(line.rstrip() for line in out)


# ---------------------------------------------------------------------- the pipeline
class Pipeline:
    """A named set of modules run together under one snapshot (SPEC §8).

    Example::

        p = Pipeline("overwatch", spark, primordial_date="2024-01-01", max_days_to_load=5)

        @p.module(id=1004, name="Bronze_AuditLogs", layer="bronze", target="bronze/audit")
        def audit(ctx):
            return ctx.job.read.files("landing/audit", format="json", transformation_ctx="a")

        p.run()
    """

    def __init__(self, name: str, spark: "SparkSession", state: str | StateStore | None = None,
                 primordial_date: Any = None, max_days_to_load: int = 60,
                 timezone: str = "UTC", clock: Clock | None = None):
        if not isinstance(name, str) or not name.strip() or len(name) > 200 or "." in name:
            raise PipelineError(f"bad pipeline name {name!r}: give a non-empty name of at most "
                                "200 characters without '.'")
        if isinstance(max_days_to_load, bool) or not isinstance(max_days_to_load, int) \
                or max_days_to_load < 1:
            raise PipelineError(f"max_days_to_load must be a whole number of days >= 1, not "
                                f"{max_days_to_load!r}")
        get_zone(timezone)
        if primordial_date is not None:
            parse_time(primordial_date, timezone, what="primordial_date")
        self.name = name
        self.spark = spark
        self.store: StateStore = state if isinstance(state, StateStore) else open_store(state)
        self.primordial_date = primordial_date
        self.max_days_to_load = max_days_to_load
        self.timezone = timezone
        self.clock: Clock = clock or system_clock
        self.modules: dict[int, Module] = {}

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, modules={sorted(self.modules)})"

    # ------------------------------------------------------------------ definition
    def module(self, *, id: int, name: str, layer: str, target: str,
               depends_on: Sequence[int] = (), format: str = "parquet",
               partition_by: Sequence[str] | str | None = None,
               take_over_from: int | str | None = None):
        """Decorator registering ``fn(ctx) -> DataFrame`` as module ``id``.

        A target belongs to the job that first wrote stamped output into it.
        ``take_over_from`` (a module id of this pipeline, or a job name ``"<pipeline>.<id>"``)
        says this module replaces that job on ``target`` (e.g. after renumbering a module): it
        may write there, and its first window starts where that job's left off.

            @p.module(id=1005, name="Bronze", layer="bronze", target="data/bronze",
                      take_over_from=1001)
        """
        mid = _module_id(id)
        if mid in self.modules:
            raise PipelineError(f"module id {mid} is defined twice in pipeline {self.name!r} "
                                f"({self.modules[mid].name} and {name}); give each module its "
                                "own id")
        if not isinstance(name, str) or not name.strip():
            raise PipelineError(f"module {mid} needs a name")
        if not isinstance(layer, str) or not layer.strip():
            raise PipelineError(f"module {mid} needs a layer (e.g. 'bronze', 'silver', 'gold')")
        if not isinstance(target, str) or not target.strip():
            raise PipelineError(f"module {mid} needs a target path")
        fmt = str(format).lower()
        if fmt not in MODULE_FORMATS:
            raise PipelineError(f"module {mid}: unknown format {format!r}; use one of "
                                f"{', '.join(MODULE_FORMATS)}")
        deps = tuple(_module_id(d) for d in (depends_on or ()))
        previous = None if take_over_from is None else self._take_over_job(mid, take_over_from)
        parts = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by or ())
        if fmt == TABLE_FORMAT:
            if "/" in target or "\\" in target or ":" in target:
                raise PipelineError(f"module {mid}: format='iceberg' writes to a table: target "
                                    f"must be a table name such as catalog.db.table, not a path "
                                    f"({target!r})")
            if parts:
                raise PipelineError(f"module {mid}: partition_by does not apply to an Iceberg "
                                    "target; the table's own partition spec decides (ALTER "
                                    "TABLE ... ADD PARTITION FIELD ...)")

        def register(fn):
            if not callable(fn):
                raise PipelineError(f"@module({mid}) must decorate a function of ctx")
            self.modules[mid] = Module(id=mid, name=name.strip(), layer=layer.strip(),
                                       target=target, depends_on=deps, format=fmt, fn=fn,
                                       partition_by=parts, take_over_from=previous)
            return fn

        return register

    def _take_over_job(self, mid: int, value: Any) -> str:
        text = str(value).strip() if isinstance(value, (int, str)) and \
            not isinstance(value, bool) else ""
        head, _, tail = text.rpartition(".")
        if text.lstrip("-").isdigit():
            job = self.job_name(int(text))
        elif head and tail.isdigit() and "." not in head and head.strip() == head:
            job = text
        else:
            raise PipelineError(f"module {mid}: bad take_over_from {value!r}; give the module id "
                                "whose target this module takes over (e.g. 1001) or its job "
                                f"name (e.g. '{self.name}.1001')")
        if job == self.job_name(mid):
            raise PipelineError(f"module {mid}: take_over_from names the module itself")
        return job

    def job_name(self, module_id: int) -> str:
        """The job that runs module ``module_id``: ``"<pipeline>.<module_id>"``."""
        return f"{self.name}.{module_id}"

    def _graph(self) -> dict[int, tuple[int, ...]]:
        return {m.id: m.depends_on for m in self.modules.values()}

    def order(self) -> list[int]:
        """Module ids in dependency order (cycles and unknown dependencies are refused)."""
        if not self.modules:
            raise PipelineError(f"pipeline {self.name!r} has no modules; add some with "
                                "@pipeline.module(...)")
        return topo_order(self._graph(),
                          key=lambda m: (LAYER_RANK.get(self.modules[m].layer.lower(), 9), m))

    # ------------------------------------------------------------------ state
    def _progress(self) -> tuple[dict[int, int | None], set[int]]:
        """Where each module's next window starts, and the modules whose last run failed: from
        at most one ledger row per module (``store.module_marks``), not the whole ledger."""
        jobs = {mid: self.job_name(mid) for mid in self.modules}
        marks = self.store.module_marks(list(jobs.values()), pipeline=self.name)
        progress: dict[int, int | None] = {}
        failed_before: set[int] = set()
        for mid, m in self.modules.items():
            job = jobs[mid]
            inherited: list[LedgerRun] = []
            if m.take_over_from is not None:
                inherited = [_ledger_run(r) for r in
                             self.store.module_marks([m.take_over_from])[m.take_over_from]]
            progress[mid] = module_start([_ledger_run(r) for r in marks[job]], inherited)
            jr = self.store.job_row(job)
            if jr is not None and jr["attempt"] > 0:
                failed_before.add(mid)
        return progress, failed_before

    def _check_idle(self, module_ids: Iterable[int], what: str) -> None:
        now = self.clock()
        for mid in module_ids:
            jr = self.store.job_row(self.job_name(mid))
            if jr and jr["active_run_id"] and lease_is_alive(
                    host=jr["lease_host"], pid=jr["lease_pid"],
                    expires_ts=jr["lease_expires_ts"], now=now, my_host=this_host()):
                raise ConcurrentRunError(
                    f"module {mid} of pipeline {self.name!r} has an active run "
                    f"{jr['active_run_id']} (host {host_name(jr['lease_host'])}, pid {jr['lease_pid']}); "
                    f"{what} after that run ends. Nothing was changed.")

    def _finish_removals(self, rows: list[dict[str, Any]] | None = None) -> None:
        """Delete the output of rolled-back runs whose removal did not finish (crash-safe)."""
        from sparkmark.sinks.rollback import finish_removals
        if rows is None:
            rows = self.store.list_runs(pipeline=self.name, statuses=(ROLLED_BACK,))
        finish_removals(self.spark, self.store, rows)

    def _check_ownership(self, module_ids: Iterable[int], rows: list[dict[str, Any]]) -> None:
        """Refuse (before anything runs) a module whose target another job owns."""
        writes = _target_writes(rows)
        problems = []
        for mid in sorted(module_ids):
            m = self.modules[mid]
            owner = ownership_conflict(writes, job=self.job_name(mid), target=m.target,
                                       take_over_from=m.take_over_from)
            if owner is not None:
                problems.append(
                    f"target {m.target} of module {mid} ({m.name}) belongs to job {owner!r}, "
                    "which wrote stamped output there; a second job would load its whole "
                    "window again and duplicate rows. Give the module its own target, or, if "
                    f"it replaces that job, declare @module(..., take_over_from={owner!r}) "
                    "(its window carries over)")
        if problems:
            raise PipelineError("; ".join(problems) + ". Nothing was run.")

    def _config(self, m: Module, **extra: Any) -> dict[str, Any]:
        return {"pipeline": {"name": self.name, "timezone": self.timezone,
                             "max_days_to_load": self.max_days_to_load,
                             "primordial_date": None if self.primordial_date is None
                             else str(self.primordial_date),
                             "target": m.target, "format": m.format,
                             "take_over_from": m.take_over_from,
                             "depends_on": list(m.depends_on), **extra}}

    # ------------------------------------------------------------------ run
    def run(self, layers: Iterable[str] | str | None = None,
            modules: Iterable[int | str] | str | None = None,
            progress: Callable[..., None] | None = None) -> RunSummary:
        """Run the selected modules (default all; ``layers`` plus ``modules``) in dependency
        order under one snapshot. A module that fails is recorded FAILED and the others go on;
        check ``summary.failed`` (a module FAILED), ``summary.skipped`` (one was SKIPPED by a
        failed dependency) or ``summary.exit_code`` (1 for either).
        ``progress(k, n, module, window, result)`` is called before (``result`` None) and
        after each module (see :mod:`sparkmark.ops.progress`).

            summary = p.run(layers="silver"); sys.exit(summary.exit_code)
        """
        order = self.order()
        layer_list = _split(layers)
        module_list = None if modules is None else [_module_id(m) for m in _split(modules) or []]
        selected = select_modules({m.id: m.layer for m in self.modules.values()},
                                  layer_list, module_list)
        self._check_idle(selected, "run the pipeline")
        self._finish_removals()
        snapshot = self.clock()
        pipeline_run_id = uuid.uuid4().hex
        done_until, failed_before = self._progress()
        self._check_ownership(selected, self.store.list_runs(
            pipeline=self.name, statuses=PROGRESS_STATUSES, columns=_WRITE_COLUMNS))
        primordial = primordial_start(self.primordial_date, snapshot_ts=snapshot,
                                      max_days=self.max_days_to_load, tz=self.timezone)
        planner = RunPlanner(self._graph(), done_until, failed_before, primordial, snapshot,
                             self.max_days_to_load * DAY_MS, max_days=self.max_days_to_load,
                             tz=self.timezone)
        results = []
        chosen = [mid for mid in order if mid in selected]
        for k, mid in enumerate(chosen, 1):
            step = planner.step(mid)
            if progress is not None:
                progress(k, len(chosen), self.modules[mid], step.window, None)
            result = self._run_module(self.modules[mid], step, pipeline_run_id, snapshot,
                                      primordial)
            planner.record(mid, result.status, Window(step.window.from_ts,
                                                      result.until_ts or step.window.from_ts))
            results.append(result)
            if progress is not None:
                progress(k, len(chosen), self.modules[mid], step.window, result)
        return RunSummary(self.name, pipeline_run_id, snapshot, self.timezone, results)

    def _run_module(self, m: Module, step, pipeline_run_id: str, snapshot: int,
                    primordial: int) -> ModuleResult:
        w = step.window
        result = ModuleResult(m.id, m.name, m.layer, FAILED, w.from_ts, w.until_ts)
        job = Job(self.spark, state=self.store, clock=self.clock)
        ledger = {"pipeline": self.name, "pipeline_run_id": pipeline_run_id, "module_id": m.id,
                  "module_name": m.name, "layer": m.layer, "from_ts": w.from_ts,
                  "until_ts": w.until_ts if step.action != SKIP else None}
        config = self._config(m, primordial_ts=primordial, action=step.action,
                              blocked_by=list(step.blocked_by))
        try:
            job.init(self.job_name(m.id), {"job_bookmark_option": ENABLE}, ledger=ledger,
                     config=config, snapshot_ts=snapshot)
        except SparkmarkError as e:  # no run row could be opened (e.g. a concurrent run)
            result.error = str(e)
            return result
        result.run_id = job.run_id
        if step.action == SKIP:
            deps = ", ".join(str(d) for d in step.blocked_by)
            result.status, result.until_ts = SKIPPED, None
            result.error = (f"skipped: dependency {deps} failed (in this run or in its latest "
                            "attempt); fix it and run again")
            job.skip(result.error)
            return result
        try:
            if step.action == NO_PROGRESS:
                written = 0
            else:
                ctx = ModuleContext(self.spark, w.from_ts, w.until_ts, pipeline_run_id, snapshot,
                                    job, m, self.name, self.timezone)
                df = m.fn(ctx)
                if df is None or not hasattr(df, "withColumn") or not hasattr(df, "write"):
                    raise PipelineError(f"module {m.id} ({m.name}) returned "
                                        f"{type(df).__name__}; return a Spark DataFrame")
                from pyspark.sql import functions as F
                df = df.withColumn(PIPELINE_RUN_ID_COL, F.lit(pipeline_run_id))
                written = job.write(df, m.target, format=m.format, transformation_ctx=OUTPUT_CTX,
                                    partition_by=m.partition_by or None)
            status = SUCCEEDED if written > 0 else EMPTY
            job.commit(status=status)
            result.status, result.records_written = status, written
        except Exception as e:  # noqa: BLE001 - a module failure is recorded; others go on
            job.fail(e)
            result.status, result.error = FAILED, f"{type(e).__name__}: {e}"
            # the summary says what the ledger says (rows written, then discarded)
            result.records_written = self.store.get_run(job.run_identity()[1])["records_written"]
        except BaseException as e:
            job.fail(e)
            raise
        result.late_files = run_markers(self.store.get_run(job.run_identity()[1]))["late_files"]
        return result

    # ------------------------------------------------------------------ report
    def report(self, module: int | None = None, last: int | None = None) -> "DataFrame":
        """The ledger of this pipeline as a Spark DataFrame (times also shown in its timezone)."""
        from sparkmark.state.ledger import report_dataframe
        return report_dataframe(self.spark, self.store, pipeline=self.name, module=module,
                                last=last, timezone=self.timezone)

    # ------------------------------------------------------------------ rollback
    def rollback(self, modules: Iterable[int | str] | int | str, since: Any = None,
                 run_id: str | None = None, dry_run: bool = False) -> RollbackPlan:
        """Undo modules' runs from a window boundary on: delete their output, mark them
        ROLLED_BACK, rewind their bookmarks. The next run reloads from the cut."""
        ids = [_module_id(m) for m in _split(modules) or []] if modules is not None else []
        if not ids:
            raise PipelineError("rollback needs at least one module id (--module ID)")
        unknown = [m for m in ids if m not in self.modules]
        if unknown:
            raise PipelineError(
                f"unknown module id(s) {', '.join(map(str, unknown))} in pipeline "
                f"{self.name!r}; it has {', '.join(map(str, sorted(self.modules)))}")
        ids = list(dict.fromkeys(ids))
        if (since is None) == (run_id is None):
            raise PipelineError("rollback needs exactly one of --since DATE or --run-id RUN_ID")
        since_ts = None if since is None else parse_time(since, self.timezone,
                                                         what="--since date")
        self._check_idle(self.modules, "roll back")
        rows = self.store.list_runs(pipeline=self.name)
        plans: list[RollbackModule] = []
        problems: list[str] = []
        for mid in ids:
            job = self.job_name(mid)
            mine = [r for r in rows if r["job_name"] == job]
            ledger = [_ledger_run(r) for r in mine]
            cut = rollback_cut(ledger, since_ts=since_ts, run_id=run_id)
            if cut is None:
                done = [r for r in mine if r["status"] in PROGRESS_STATUSES]
                latest = max((r["until_ts"] for r in done), default=None)
                undone = [r for r in mine if r["status"] == ROLLED_BACK
                          and run_id in (r["run_id"], r["pipeline_run_id"])]
                if undone:
                    problems.append(f"run {run_id} of module {mid} was already rolled back "
                                    f"(ledger status ROLLED_BACK): there is nothing left to undo")
                elif not done:
                    problems.append(f"module {mid} has no SUCCEEDED/EMPTY run to roll back")
                elif since_ts is not None:
                    problems.append(f"--since {since} is at or after the end of its data "
                                    f"({format_ts(latest, self.timezone)}) for module {mid}: "
                                    "there is nothing after it to roll back")
                else:
                    problems.append(f"run {run_id} made no SUCCEEDED/EMPTY run of module {mid}")
                continue
            by_id = {r["run_id"]: r for r in mine}
            inherited: list[LedgerRun] = []
            if self.modules[mid].take_over_from is not None:
                inherited = [_ledger_run(r) for r in
                             self.store.list_runs(job_name=self.modules[mid].take_over_from)]
            reload_from = module_start(after_rollback(ledger, cut), inherited)
            plans.append(RollbackModule(mid, self.modules[mid].name, job, cut.cut_ts,
                                        cut.keep_run_id, [by_id[r.run_id] for r in cut.rolled],
                                        reload_from_ts=reload_from))
        if problems:
            raise PipelineError("nothing was rolled back: " + "; ".join(problems)
                                + ". Check 'sparkmark report --pipeline " + self.name + "'")
        for pm in plans:  # what would be removed
            for r in pm.runs:
                pm.files.extend(remove_run_output(self.spark, r["run_id"],
                                                        json.loads(r["outputs"] or "[]"),
                                                        dry_run=True))
        self._check_rows_removable(plans)
        plan = RollbackPlan(self.name, dry_run, self.timezone, plans,
                            self._rollback_warnings(plans))
        if dry_run:
            return plan
        self.store.rollback_runs([(pm.job_name, [r["run_id"] for r in pm.runs], pm.keep_run_id)
                                  for pm in plans], now=self.clock())
        rolled = {r["run_id"] for pm in plans for r in pm.runs}
        self._finish_removals([dict(r, status=ROLLED_BACK, publish_state=PublishState.REMOVING)
                               for r in rows if r["run_id"] in rolled])
        return plan

    def _check_rows_removable(self, plans: list[RollbackModule]) -> None:
        """Refuse a rollback that would leave rows behind: rows of a rolled-back run that sit
        in files not named after that run (the target was compacted or otherwise rewritten)
        cannot be removed by file.  Checked before anything changes, dry run included."""
        from pyspark.sql import functions as F
        by_target: dict[tuple[str, str], set[str]] = {}
        for pm in plans:
            for r in pm.runs:
                for out in json.loads(r["outputs"] or "[]"):
                    if out.get("kind") == "files" and out.get("format") in (
                            "parquet", "orc", "json"):
                        by_target.setdefault((out["target"], out["format"]), set()).add(
                            r["run_id"])
        problems = []
        for (target, fmt), run_ids in sorted(by_target.items()):
            try:
                df = self.spark.read.format(fmt).load(target)
            except Exception:  # noqa: BLE001 - an empty or missing target holds no rows
                continue
            if RUN_ID_COL not in df.columns:
                continue
            found = (df.where(F.col(RUN_ID_COL).isin(sorted(run_ids)))
                     .select(RUN_ID_COL, F.input_file_name().alias("f")).distinct().collect())
            stray = sorted({r[RUN_ID_COL] for r in found
                            if not r["f"].rsplit("/", 1)[-1].startswith(f"sm-{r[RUN_ID_COL]}-")})
            if stray:
                problems.append(f"target {target} was rewritten (compacted?): rows of run(s) "
                                f"{', '.join(stray)} are in files not named after their run, "
                                "so removing the runs' files would leave them behind")
        if problems:
            raise PipelineError(
                "nothing was rolled back: " + "; ".join(problems) + ". Remove those rows "
                f"yourself (every row carries its run in {RUN_ID_COL}: keep the rows whose "
                f"{RUN_ID_COL} is not one of these runs), then roll back again; or compact only "
                "data you will never roll back.")

    def _rollback_warnings(self, plans: list[RollbackModule]) -> list[str]:
        cuts = {pm.module_id: pm.cut_ts for pm in plans}
        progress, _ = self._progress()
        out = []
        for m in self.modules.values():
            if m.id in cuts:
                continue
            for d in m.depends_on:
                if d in cuts and (progress.get(m.id) or 0) > cuts[d]:
                    out.append(f"module {m.id} ({m.name}) depends on {d} and keeps data past "
                               f"{format_ts(cuts[d], self.timezone)}; it will not progress "
                               f"until {d} catches up. Roll it back too if its data came from "
                               "the rolled-back runs.")
                    break
        return out


# ---------------------------------------------------------------------- pipeline files
def load_pipeline_file(path: str | Path) -> Pipeline:
    """Run a Python file and return the one :class:`Pipeline` it defines at module level.

    Example: ``load_pipeline_file("examples/overwatch/pipeline.py").run()``
    """
    p = Path(path)
    if not p.is_file():
        raise PipelineError(f"pipeline file {path} does not exist (or is not a file); give the "
                            "path of a Python file that defines a Pipeline")
    folder = str(p.resolve().parent)
    sys.path.insert(0, folder)
    try:
        namespace = runpy.run_path(str(p), run_name="__sparkmark_pipeline__")
    except SparkmarkError:
        raise
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any error in user code
        raise PipelineError(f"pipeline file {path} failed to load: {type(e).__name__}: {e}; "
                            "fix the file (run it with python to see the traceback)") from e
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:
            pass
    found: dict[int, tuple[str, Pipeline]] = {}
    for key, value in namespace.items():
        if isinstance(value, Pipeline) and id(value) not in found:
            found[id(value)] = (key, value)
    if not found:
        raise PipelineError(f"pipeline file {path} defines no Pipeline; create one at module "
                            "level, e.g. p = Pipeline('name', spark), and add modules to it")
    if len(found) > 1:
        names = ", ".join(f"{k} ({v.name})" for k, v in found.values())
        raise PipelineError(f"pipeline file {path} defines several pipelines: {names}; keep "
                            "one Pipeline per file")
    return next(iter(found.values()))[1]


# ---------------------------------------------------------------------- helpers
def _ledger_run(r: dict[str, Any]) -> LedgerRun:
    return LedgerRun(r["run_id"], r.get("pipeline_run_id"), r["run_number"], r["status"],
                     r.get("from_ts"), r.get("until_ts"))


#: the ledger fields :func:`_target_writes` reads
_WRITE_COLUMNS = ("run_start_ts", "run_number", "job_name", "status", "config")


def _target_writes(rows: list[dict[str, Any]]) -> list[TargetWrite]:
    """The committed module runs of a ledger, as writes into their targets."""
    out = []
    for r in rows:
        if r["status"] not in PROGRESS_STATUSES:
            continue
        try:
            cfg = json.loads(r.get("config") or "{}").get("pipeline") or {}
        except (ValueError, AttributeError):
            continue
        if cfg.get("target"):
            out.append(TargetWrite((r.get("run_start_ts") or 0, r["run_number"]),
                                   r["job_name"], normalize_target(cfg["target"]),
                                   cfg.get("take_over_from")))
    return out


def _module_id(value: Any) -> int:
    if isinstance(value, bool):
        raise PipelineError(f"bad module id {value!r}: module ids are integers such as 2011")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise PipelineError(f"bad module id {value!r}: module ids are integers such as 2011")


def _split(value: Any) -> list | None:
    """``"a,b"``, ``["a", "b,c"]`` or a single value -> a flat list (None stays None)."""
    if value is None:
        return None
    items = [value] if isinstance(value, (str, int)) else list(value)
    out: list = []
    for item in items:
        if isinstance(item, str):
            out.extend(x.strip() for x in item.split(",") if x.strip())
        else:
            out.append(item)
    return out
