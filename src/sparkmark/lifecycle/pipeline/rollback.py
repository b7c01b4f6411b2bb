"""Rolling a pipeline back: from a window boundary (or a run) on, delete the modules' output,
mark their runs ROLLED_BACK and rewind their bookmarks, so that the next run reloads from the
cut.  What it did (or would do) is a :class:`RollbackPlan`.

Example::

    plan = rollback_pipeline(spark, store, system_clock, p.modules, pipeline="overwatch",
                             timezone="UTC", module_ids=[2011], since="2024-01-03",
                             dry_run=True)
    print(plan)               # what Pipeline.rollback returns and prints
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from sparkmark.core.clock import Clock, format_ts
from sparkmark.core.errors import PipelineError
from sparkmark.core.status import PublishState
from sparkmark.lifecycle.pipeline.declaring import (RUN_ID_COL, Module, job_name,
                                                    parse_module_id, split_values)
from sparkmark.lifecycle.pipeline.running import check_idle, finish_removals, text_table
from sparkmark.lifecycle.pipeline.windows import ledger_run, module_progress
from sparkmark.planning.windows import (PROGRESS_STATUSES, ROLLED_BACK, LedgerRun,
                                        after_rollback, module_start, parse_time, rollback_cut)
from sparkmark.sinks import remove_run_output
from sparkmark.state import StateStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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



def rollback_pipeline(spark: "SparkSession", store: StateStore, clock: Clock,
                      modules: Mapping[int, Module], *, pipeline: str, timezone: str,
                      module_ids: Iterable[int | str] | int | str, since: Any = None,
                      run_id: str | None = None, dry_run: bool = False) -> RollbackPlan:
    """What :meth:`Pipeline.rollback <sparkmark.lifecycle.pipeline.Pipeline.rollback>` does,
    on its settings: undo the runs of ``module_ids`` from ``since`` (or ``run_id``) on.

    Example: ``rollback_pipeline(spark, store, clock, p.modules, pipeline=p.name, timezone="UTC",
    module_ids=[2011], run_id="3f2a...", dry_run=True).run_ids``
    """
    ids = [parse_module_id(m) for m in split_values(module_ids) or []] \
        if module_ids is not None else []
    if not ids:
        raise PipelineError("rollback needs at least one module id (--module ID)")
    unknown = [m for m in ids if m not in modules]
    if unknown:
        raise PipelineError(
            f"unknown module id(s) {', '.join(map(str, unknown))} in pipeline "
            f"{pipeline!r}; it has {', '.join(map(str, sorted(modules)))}")
    ids = list(dict.fromkeys(ids))
    if (since is None) == (run_id is None):
        raise PipelineError("rollback needs exactly one of --since DATE or --run-id RUN_ID")
    since_ts = None if since is None else parse_time(since, timezone, what="--since date")
    check_idle(store, clock, pipeline, modules, "roll back")
    rows = store.list_runs(pipeline=pipeline)
    plans: list[RollbackModule] = []
    problems: list[str] = []
    for mid in ids:
        job = job_name(pipeline, mid)
        mine = [r for r in rows if r["job_name"] == job]
        ledger = [ledger_run(r) for r in mine]
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
                                f"({format_ts(latest, timezone)}) for module {mid}: "
                                "there is nothing after it to roll back")
            else:
                problems.append(f"run {run_id} made no SUCCEEDED/EMPTY run of module {mid}")
            continue
        by_id = {r["run_id"]: r for r in mine}
        inherited: list[LedgerRun] = []
        if modules[mid].take_over_from is not None:
            inherited = [ledger_run(r) for r in
                         store.list_runs(job_name=modules[mid].take_over_from)]
        reload_from = module_start(after_rollback(ledger, cut), inherited)
        plans.append(RollbackModule(mid, modules[mid].name, job, cut.cut_ts,
                                    cut.keep_run_id, [by_id[r.run_id] for r in cut.rolled],
                                    reload_from_ts=reload_from))
    if problems:
        raise PipelineError("nothing was rolled back: " + "; ".join(problems)
                            + ". Check 'sparkmark report --pipeline " + pipeline + "'")
    for pm in plans:  # what would be removed
        for r in pm.runs:
            pm.files.extend(remove_run_output(spark, r["run_id"],
                                              json.loads(r["outputs"] or "[]"),
                                              dry_run=True))
    check_rows_removable(spark, plans)
    plan = RollbackPlan(pipeline, dry_run, timezone, plans,
                        rollback_warnings(store, pipeline, modules, timezone, plans))
    if dry_run:
        return plan
    store.rollback_runs([(pm.job_name, [r["run_id"] for r in pm.runs], pm.keep_run_id)
                         for pm in plans], now=clock())
    rolled = {r["run_id"] for pm in plans for r in pm.runs}
    finish_removals(spark, store, pipeline,
                    [dict(r, status=ROLLED_BACK, publish_state=PublishState.REMOVING)
                     for r in rows if r["run_id"] in rolled])
    return plan


def check_rows_removable(spark: "SparkSession", plans: list[RollbackModule]) -> None:
    """Refuse a rollback that would leave rows behind: rows of a rolled-back run that sit
    in files not named after that run (the target was compacted or otherwise rewritten)
    cannot be removed by file.  Checked before anything changes, dry run included.

    Example: ``check_rows_removable(spark, plan.modules)``
    """
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
            df = spark.read.format(fmt).load(target)
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


def rollback_warnings(store: StateStore, pipeline: str, modules: Mapping[int, Module],
                      timezone: str, plans: list[RollbackModule]) -> list[str]:
    """The modules left out of a rollback that keep data past a rolled-back dependency's cut.

    Example: ``rollback_warnings(p.store, p.name, p.modules, "UTC", plan.modules)``
    """
    cuts = {pm.module_id: pm.cut_ts for pm in plans}
    progress, _ = module_progress(store, pipeline, modules)
    out = []
    for m in modules.values():
        if m.id in cuts:
            continue
        for d in m.depends_on:
            if d in cuts and (progress.get(m.id) or 0) > cuts[d]:
                out.append(f"module {m.id} ({m.name}) depends on {d} and keeps data past "
                           f"{format_ts(cuts[d], timezone)}; it will not progress "
                           f"until {d} catches up. Roll it back too if its data came from "
                           "the rolled-back runs.")
                break
    return out
