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

The package's modules, along its seams (``Pipeline`` delegates to them):
:mod:`~sparkmark.lifecycle.pipeline.declaring` (modules, dependencies, settings checks),
:mod:`~sparkmark.lifecycle.pipeline.windows` (the ledger as the planners' input),
:mod:`~sparkmark.lifecycle.pipeline.running` (gating, module runs, the run summary) and
:mod:`~sparkmark.lifecycle.pipeline.rollback`.
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from sparkmark.core.clock import Clock, system_clock
from sparkmark.core.errors import PipelineError, SparkmarkError
from sparkmark.lifecycle.pipeline.declaring import (FILE_FORMATS, LAYER_RANK, MODULE_FORMATS,
                                                    OUTPUT_CTX, PIPELINE_RUN_ID_COL,
                                                    RUN_ID_COL, SNAPSHOT_COL, TABLE_FORMAT,
                                                    Module, ModuleContext, check_settings,
                                                    declare_module, job_name, order)
from sparkmark.lifecycle.pipeline.rollback import (RollbackModule, RollbackPlan,
                                                   rollback_pipeline)
from sparkmark.lifecycle.pipeline.running import (ModuleResult, RunSummary, run_pipeline,
                                                  text_table)
from sparkmark.engine import compat
from sparkmark.state import StateStore, open_store, refuse_default_on_cluster

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FILE_FORMATS", "LAYER_RANK", "MODULE_FORMATS", "OUTPUT_CTX", "PIPELINE_RUN_ID_COL",
           "RUN_ID_COL", "SNAPSHOT_COL", "TABLE_FORMAT", "Module", "ModuleContext",
           "ModuleResult", "Pipeline", "RollbackModule", "RollbackPlan", "RunSummary",
           "load_pipeline_file", "text_table"]


# ---------------------------------------------------------------------- the pipeline
class Pipeline:
    """A named set of modules run together under one snapshot.

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
        check_settings(name, max_days_to_load=max_days_to_load, timezone=timezone,
                       primordial_date=primordial_date)
        self.name = name
        self.spark = spark
        refuse_default_on_cluster(spark, state)  # a throwaway driver's ./.sparkmark: refused
        self.store: StateStore = (state if isinstance(state, StateStore) else
                                  open_store(state, conf=compat.spark_conf_getter(spark)))
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
        ``format``: a file format (``parquet`` by default), ``"iceberg"`` (``target`` is a
        table name) or ``"delta"`` (a Delta Lake table by path or by name).

            @p.module(id=1005, name="Bronze", layer="bronze", target="data/bronze",
                      take_over_from=1001)
        """
        make = declare_module(self.modules, self.name, id=id, name=name, layer=layer,
                              target=target, depends_on=depends_on, format=format,
                              partition_by=partition_by, take_over_from=take_over_from)

        def register(fn):
            m = make(fn)
            self.modules[m.id] = m
            return fn

        return register

    def job_name(self, module_id: int) -> str:
        """The job that runs module ``module_id``: ``"<pipeline>.<module_id>"``."""
        return job_name(self.name, module_id)

    def order(self) -> list[int]:
        """Module ids in dependency order (cycles and unknown dependencies are refused)."""
        return order(self.name, self.modules)

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
        return run_pipeline(self.spark, self.store, self.clock, self.modules, pipeline=self.name,
                            timezone=self.timezone, max_days_to_load=self.max_days_to_load,
                            primordial_date=self.primordial_date, layers=layers,
                            module_ids=modules, progress=progress)

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
        return rollback_pipeline(self.spark, self.store, self.clock, self.modules, pipeline=self.name,
                                 timezone=self.timezone, module_ids=modules, since=since,
                                 run_id=run_id, dry_run=dry_run)


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

