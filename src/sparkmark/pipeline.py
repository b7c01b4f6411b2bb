"""Overwatch-style pipelines: modules with time windows, dependency gating, a ledger, rollback.

    from sparkmark import Pipeline

    p = Pipeline("overwatch", spark, primordial_date="2024-01-01", max_days_to_load=5)

    @p.module(id=1004, name="Bronze_AuditLogs", layer="bronze", target="data/bronze/audit_log")
    def audit_logs(ctx):
        return ctx.job.read.files("landing/audit", format="json", transformation_ctx="audit")

    @p.module(id=2010, name="Silver_JobsStatus", layer="silver", target="data/silver/jobs",
              depends_on=[1004])
    def jobs_status(ctx):
        return ctx.window(ctx.spark.read.parquet("data/bronze/audit_log"), "event_ts")

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

from .clock import Clock, format_ts, system_clock
from .errors import ConcurrentRunError, PipelineError, SparkmarkError
from .formats import WRITE_FORMATS
from .job import Job
from .options import ENABLE
from .sinks import discard_outputs, remove_run_output
from .planning.windows import (DAY_MS, EMPTY, FAILED, NO_PROGRESS, PROGRESS_STATUSES,
                               ROLLED_BACK, SKIP, SKIPPED, SUCCEEDED, LedgerRun, RunPlanner,
                               Window, get_zone, parse_time, primordial_start,
                               rollback_cut, select_modules, topo_order)
from .state import StateStore, open_store
from .state.lease import lease_is_alive, this_host
from .status import PublishState

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PIPELINE_RUN_ID_COL = "sm_pipeline_run_id"
OUTPUT_CTX = "sm_module_output"
LAYER_RANK = {"bronze": 0, "silver": 1, "gold": 2, "presentation": 3, "platinum": 3}
FILE_FORMATS = WRITE_FORMATS


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
    :class:`~sparkmark.job.Job` (bookmarked reads: ``ctx.job.read.files(...)``).
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
        return self.job.run_id

    @property
    def from_time(self) -> datetime:
        return datetime.fromtimestamp(self.from_ts / 1000, tz=dt_timezone.utc)

    @property
    def until_time(self) -> datetime:
        return datetime.fromtimestamp(self.until_ts / 1000, tz=dt_timezone.utc)

    def in_window(self, column: "str | Column", df: "DataFrame | None" = None) -> "Column":
        """``from <= column < until`` for a timestamp column (or a long column of epoch ms
        when ``df`` is given and the column is numeric)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import NumericType
        col = F.col(column) if isinstance(column, str) else column
        if df is not None and isinstance(column, str) and \
                isinstance(df.schema[column].dataType, NumericType):
            return (col >= F.lit(self.from_ts)) & (col < F.lit(self.until_ts))
        return ((col >= F.timestamp_millis(F.lit(self.from_ts)))
                & (col < F.timestamp_millis(F.lit(self.until_ts))))

    def window(self, df: "DataFrame", column: str) -> "DataFrame":
        """The rows of ``df`` whose ``column`` (timestamp, or epoch ms) is in the window."""
        return df.where(self.in_window(column, df))


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
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def status_of(self, module_id: int) -> str | None:
        """The status module ``module_id`` ended with in this run (``None``: not run)."""
        return next((r.status for r in self.results if r.module_id == module_id), None)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [{"module_id": r.module_id, "module_name": r.module_name, "layer": r.layer,
                 "status": r.status, "from": format_ts(r.from_ts, self.timezone),
                 "until": format_ts(r.until_ts, self.timezone),
                 "records_written": r.records_written, "run_id": r.run_id,
                 "error": (r.error or "").splitlines()[0][:300] if r.error else None}
                for r in self.results]

    def __str__(self) -> str:
        head = (f"pipeline {self.pipeline} run {self.run_id} snapshot "
                f"{format_ts(self.snapshot_ts, self.timezone)}"
                f" -> {'FAILED' if self.failed else 'ok'}")
        return head + "\n" + text_table(self.rows, ["module_id", "module_name", "layer", "status",
                                                "from", "until", "records_written", "error"])

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
                         f"{len(m.files)} file(s); the next run reloads from the cut")
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
               partition_by: Sequence[str] | str | None = None):
        """Decorator registering ``fn(ctx) -> DataFrame`` as module ``id``."""
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
        if fmt not in FILE_FORMATS:
            raise PipelineError(f"module {mid}: unknown format {format!r}; use one of "
                                f"{', '.join(FILE_FORMATS)}")
        deps = tuple(_module_id(d) for d in (depends_on or ()))
        parts = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by or ())

        def register(fn):
            if not callable(fn):
                raise PipelineError(f"@module({mid}) must decorate a function of ctx")
            self.modules[mid] = Module(id=mid, name=name.strip(), layer=layer.strip(),
                                       target=target, depends_on=deps, format=fmt, fn=fn,
                                       partition_by=parts)
            return fn

        return register

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
    def _progress(self) -> tuple[dict[int, int | None], set[int], list[dict[str, Any]]]:
        rows = self.store.list_runs(pipeline=self.name)
        progress: dict[int, int | None] = {}
        failed_before: set[int] = set()
        for mid in self.modules:
            job = self.job_name(mid)
            done = [r for r in rows if r["job_name"] == job and r["status"] in PROGRESS_STATUSES]
            progress[mid] = max(done, key=lambda r: r["run_number"])["until_ts"] if done else None
            jr = self.store.job_row(job)
            if jr is not None and jr["attempt"] > 0:
                failed_before.add(mid)
        return progress, failed_before, rows

    def _check_idle(self, module_ids: Iterable[int], what: str) -> None:
        now = self.clock()
        for mid in module_ids:
            jr = self.store.job_row(self.job_name(mid))
            if jr and jr["active_run_id"] and lease_is_alive(
                    host=jr["lease_host"], pid=jr["lease_pid"],
                    expires_ts=jr["lease_expires_ts"], now=now, my_host=this_host()):
                raise ConcurrentRunError(
                    f"module {mid} of pipeline {self.name!r} has an active run "
                    f"{jr['active_run_id']} (host {jr['lease_host']}, pid {jr['lease_pid']}); "
                    f"{what} after that run ends. Nothing was changed.")

    def _finish_removals(self, rows: list[dict[str, Any]] | None = None) -> None:
        """Delete the output of rolled-back runs whose removal did not finish (crash-safe)."""
        if rows is None:
            rows = self.store.list_runs(pipeline=self.name, statuses=(ROLLED_BACK,))
        for r in rows:
            if r["status"] == ROLLED_BACK and r.get("publish_state") == PublishState.REMOVING:
                outputs = json.loads(r["outputs"] or "[]")
                remove_run_output(self.spark, r["run_id"], outputs)
                discard_outputs(self.spark, outputs)
                self.store.update_run(r["run_id"], publish_state=PublishState.REMOVED)

    def _config(self, m: Module, **extra: Any) -> dict[str, Any]:
        return {"pipeline": {"name": self.name, "timezone": self.timezone,
                             "max_days_to_load": self.max_days_to_load,
                             "primordial_date": None if self.primordial_date is None
                             else str(self.primordial_date),
                             "target": m.target, "format": m.format,
                             "depends_on": list(m.depends_on), **extra}}

    # ------------------------------------------------------------------ run
    def run(self, layers: Iterable[str] | str | None = None,
            modules: Iterable[int | str] | str | None = None) -> RunSummary:
        """Run the selected modules (default all; ``layers`` plus ``modules``) in dependency
        order under one snapshot. A module that fails is recorded FAILED and the others go on;
        check ``summary.failed``."""
        order = self.order()
        layer_list = _split(layers)
        module_list = None if modules is None else [_module_id(m) for m in _split(modules)]
        selected = select_modules({m.id: m.layer for m in self.modules.values()},
                                  layer_list, module_list)
        self._check_idle(selected, "run the pipeline")
        self._finish_removals()
        snapshot = self.clock()
        pipeline_run_id = uuid.uuid4().hex
        progress, failed_before, _ = self._progress()
        primordial = primordial_start(self.primordial_date, snapshot_ts=snapshot,
                                      max_days=self.max_days_to_load, tz=self.timezone)
        planner = RunPlanner(self._graph(), progress, failed_before, primordial, snapshot,
                             self.max_days_to_load * DAY_MS)
        results = []
        for mid in order:
            if mid not in selected:
                continue
            step = planner.step(mid)
            result = self._run_module(self.modules[mid], step, pipeline_run_id, snapshot,
                                      primordial)
            planner.record(mid, result.status, Window(step.window.from_ts,
                                                      result.until_ts or step.window.from_ts))
            results.append(result)
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
        except BaseException as e:
            job.fail(e)
            raise
        return result

    # ------------------------------------------------------------------ report
    def report(self, module: int | None = None, last: int | None = None) -> "DataFrame":
        """The ledger of this pipeline as a Spark DataFrame (times also shown in its timezone)."""
        from .ledger import report_dataframe
        return report_dataframe(self.spark, self.store, pipeline=self.name, module=module,
                                last=last, timezone=self.timezone)

    # ------------------------------------------------------------------ rollback
    def rollback(self, modules: Iterable[int | str] | int | str, since: Any = None,
                 run_id: str | None = None, dry_run: bool = False) -> RollbackPlan:
        """Undo modules' runs from a window boundary on: delete their output, mark them
        ROLLED_BACK, rewind their bookmarks. The next run reloads from the cut."""
        ids = [_module_id(m) for m in _split(modules)] if modules is not None else []
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
            cut = rollback_cut([LedgerRun(r["run_id"], r["pipeline_run_id"], r["run_number"],
                                          r["status"], r["from_ts"], r["until_ts"])
                                for r in mine], since_ts=since_ts, run_id=run_id)
            if cut is None:
                done = [r for r in mine if r["status"] in PROGRESS_STATUSES]
                latest = max((r["until_ts"] for r in done), default=None)
                if not done:
                    problems.append(f"module {mid} has no SUCCEEDED/EMPTY run to roll back")
                elif since_ts is not None:
                    problems.append(f"--since {since} is after every run of module {mid} "
                                    f"(its data ends at {format_ts(latest, self.timezone)})")
                else:
                    problems.append(f"run {run_id} made no SUCCEEDED/EMPTY run of module {mid}")
                continue
            by_id = {r["run_id"]: r for r in mine}
            plans.append(RollbackModule(mid, self.modules[mid].name, job, cut.cut_ts,
                                        cut.keep_run_id, [by_id[r.run_id] for r in cut.rolled]))
        if problems:
            raise PipelineError("nothing was rolled back: " + "; ".join(problems)
                                + ". Check 'sparkmark report --pipeline " + self.name + "'")
        for pm in plans:  # what would be removed
            for r in pm.runs:
                pm.files.extend(remove_run_output(self.spark, r["run_id"],
                                                        json.loads(r["outputs"] or "[]"),
                                                        dry_run=True))
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

    def _rollback_warnings(self, plans: list[RollbackModule]) -> list[str]:
        cuts = {pm.module_id: pm.cut_ts for pm in plans}
        progress, _, _ = self._progress()
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
