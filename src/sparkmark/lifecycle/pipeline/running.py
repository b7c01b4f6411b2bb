"""Running a pipeline: gating (no concurrent run, unfinished removals finished first), each
module run as a job run with its ledger row, and what the run reports (:class:`RunSummary`).

Example::

    summary = run_pipeline(spark, store, system_clock, p.modules, pipeline="overwatch",
                           timezone="UTC", max_days_to_load=5, primordial_date=None,
                           layers="bronze")
    print(summary)            # what Pipeline.run returns and prints
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from sparkmark.core.clock import Clock, format_ts
from sparkmark.core.errors import ConcurrentRunError, PipelineError, SparkmarkError
from sparkmark.core.options import ENABLE
from sparkmark.lifecycle.job import Job
from sparkmark.lifecycle.pipeline.declaring import (OUTPUT_CTX, PIPELINE_RUN_ID_COL, Module,
                                                    ModuleContext, graph, job_name,
                                                    module_config, order, parse_module_id,
                                                    split_values)
from sparkmark.lifecycle.pipeline.windows import check_ownership, module_progress, plan_run
from sparkmark.planning.windows import (EMPTY, FAILED, NO_PROGRESS, SKIP, SKIPPED, Step,
                                        SUCCEEDED, Window, select_modules, target_key)
from sparkmark.state import StateStore
from sparkmark.state.lease import host_name, lease_is_alive, this_host
from sparkmark.state.ledger import run_markers

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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


def text_table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    """Rows as a plain, aligned text table (no colour).

    Example: ``print(text_table(report_rows(store), ["module_id", "status"]))``
    """
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    out = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(line.rstrip() for line in out)



# ---------------------------------------------------------------------- gating
def check_idle(store: StateStore, clock: Clock, pipeline: str, module_ids: Iterable[int],
               what: str) -> None:
    """Refuse when a module has a live run (its lease is held): nothing is changed.

    Example: ``check_idle(p.store, p.clock, p.name, [2011], "roll back")``
    """
    now = clock()
    for mid in module_ids:
        jr = store.job_row(job_name(pipeline, mid))
        if jr and jr["active_run_id"] and lease_is_alive(
                host=jr["lease_host"], pid=jr["lease_pid"],
                expires_ts=jr["lease_expires_ts"], now=now, my_host=this_host()):
            raise ConcurrentRunError(
                f"module {mid} of pipeline {pipeline!r} has an active run "
                f"{jr['active_run_id']} (host {host_name(jr['lease_host'])}, pid {jr['lease_pid']}); "
                f"{what} after that run ends. Nothing was changed.")


def finish_removals(spark: "SparkSession", store: StateStore, pipeline: str,
                    rows: list[dict[str, Any]] | None = None) -> None:
    """Delete the output of rolled-back runs whose removal did not finish (crash-safe).

    Example: ``finish_removals(spark, p.store, p.name)`` (the pipeline's ROLLED_BACK runs still
    marked ``removing``: an index lookup a module, however many runs were rolled back before)
    """
    from sparkmark.sinks.rollback import finish_removals as finish
    if rows is None:
        rows = store.removals_left(pipeline)
    finish(spark, store, rows)


# ---------------------------------------------------------------------- run
def run_pipeline(spark: "SparkSession", store: StateStore, clock: Clock,
                 modules: Mapping[int, Module], *, pipeline: str, timezone: str,
                 max_days_to_load: int, primordial_date: Any,
                 layers: Iterable[str] | str | None = None,
                 module_ids: Iterable[int | str] | str | None = None,
                 progress: Callable[..., None] | None = None) -> RunSummary:
    """What :meth:`Pipeline.run <sparkmark.lifecycle.pipeline.Pipeline.run>` does, on its
    settings: the selected modules in dependency order under one snapshot.

    Example: ``run_pipeline(spark, store, clock, p.modules, pipeline=p.name, timezone="UTC",
    max_days_to_load=5, primordial_date=None, module_ids=[2011])``
    """
    ordered = order(pipeline, modules)
    layer_list = split_values(layers)
    module_list = None if module_ids is None else [parse_module_id(m) for m in
                                                   split_values(module_ids) or []]
    selected = select_modules({m.id: m.layer for m in modules.values()},
                              layer_list, module_list)
    check_idle(store, clock, pipeline, selected, "run the pipeline")
    finish_removals(spark, store, pipeline)
    snapshot = clock()
    pipeline_run_id = uuid.uuid4().hex
    done_until, failed_before = module_progress(store, pipeline, modules)
    check_ownership(store, pipeline, modules, selected)
    primordial, planner = plan_run(graph(modules), done_until, failed_before,
                                   primordial_date=primordial_date, snapshot_ts=snapshot,
                                   max_days_to_load=max_days_to_load, timezone=timezone)
    results = []
    chosen = [mid for mid in ordered if mid in selected]
    for k, mid in enumerate(chosen, 1):
        step = planner.step(mid)
        if progress is not None:
            progress(k, len(chosen), modules[mid], step.window, None)
        result = run_module(spark, store, clock, modules[mid], step, pipeline=pipeline,
                            timezone=timezone, max_days_to_load=max_days_to_load,
                            primordial_date=primordial_date, pipeline_run_id=pipeline_run_id,
                            snapshot=snapshot, primordial=primordial,
                            planned_from=(done_until.get(mid),))
        planner.record(mid, result.status, Window(step.window.from_ts,
                                                  result.until_ts or step.window.from_ts))
        results.append(result)
        if progress is not None:
            progress(k, len(chosen), modules[mid], step.window, result)
    return RunSummary(pipeline, pipeline_run_id, snapshot, timezone, results)


def run_module(spark: "SparkSession", store: StateStore, clock: Clock, m: Module, step: Step, *,
               pipeline: str, timezone: str, max_days_to_load: int, primordial_date: Any,
               pipeline_run_id: str, snapshot: int, primordial: int,
               planned_from: tuple[int | None] | None = None) -> ModuleResult:
    """One module run: a job run of ``"<pipeline>.<module id>"`` (bookmarks enabled) that
    writes the module's DataFrame and commits it with its ledger row, or is SKIPPED or FAILED.

    Example: ``run_module(spark, store, clock, p.modules[1004], planner.step(1004),
    pipeline=p.name, timezone="UTC", max_days_to_load=5, primordial_date=None,
    pipeline_run_id=uuid.uuid4().hex, snapshot=now, primordial=primordial).status``

    ``planned_from``: ``(where the module's progress stood when its window was planned,)``.
    Checked again under the module's lease: if another run of the pipeline moved the module
    on (or rolled it back) meanwhile, the window is stale and the run is ``SKIPPED`` with
    nothing written (two overlapping ``p.run()`` would otherwise load one window twice).
    """
    w = step.window
    result = ModuleResult(m.id, m.name, m.layer, FAILED, w.from_ts, w.until_ts)
    job = Job(spark, state=store, clock=clock)
    ledger = {"pipeline": pipeline, "pipeline_run_id": pipeline_run_id, "module_id": m.id,
              "module_name": m.name, "layer": m.layer, "from_ts": w.from_ts,
              "until_ts": w.until_ts if step.action != SKIP else None,
              # what the target's owner is found by (target_owner_in), indexed
              "target_key": target_key(pipeline, m.target), "take_over_from": m.take_over_from}
    config = module_config(m, pipeline=pipeline, timezone=timezone,
                           max_days_to_load=max_days_to_load, primordial_date=primordial_date,
                           primordial_ts=primordial, action=step.action,
                           blocked_by=list(step.blocked_by))
    try:
        job.init(job_name(pipeline, m.id), {"job_bookmark_option": ENABLE}, ledger=ledger,
                 config=config, snapshot_ts=snapshot)
    except SparkmarkError as e:  # no run row could be opened (e.g. a concurrent run)
        result.error = str(e)
        return result
    result.run_id = job.run_id
    if planned_from is not None:
        now_from = module_progress(store, pipeline, {m.id: m})[0].get(m.id)
        if now_from != planned_from[0]:
            result.status, result.until_ts = SKIPPED, None
            result.error = (f"skipped: another run of pipeline {pipeline} moved module {m.id} "
                            f"(its next window now starts at {format_ts(now_from, timezone)}) "
                            "after this run planned its window from "
                            f"{format_ts(w.from_ts, timezone)}; nothing was written: run the "
                            "pipeline again")
            job.skip(result.error)
            return result
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
            ctx = ModuleContext(spark, w.from_ts, w.until_ts, pipeline_run_id, snapshot,
                                job, m, pipeline, timezone)
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
        result.records_written = store.get_run(job.run_identity()[1])["records_written"]
    except BaseException as e:
        job.fail(e)
        raise
    result.late_files = run_markers(store.get_run(job.run_identity()[1]))["late_files"]
    return result
