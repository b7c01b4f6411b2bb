"""Where each module's windows start: the glue between the ledger in the state store and the
pure planners of :mod:`sparkmark.planning.windows` (progress, target ownership, the run plan).

Example::

    progress, failed_before = module_progress(store, "overwatch", p.modules)
    check_ownership(store, "overwatch", p.modules, [1004, 2010])
    primordial, planner = plan_run(graph(p.modules), progress, failed_before,
                                   primordial_date="2024-01-01", snapshot_ts=now,
                                   max_days_to_load=5, timezone="UTC")
    step = planner.step(1004)          # the window and action of module 1004
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from sparkmark.core.errors import PipelineError
from sparkmark.lifecycle.pipeline.declaring import Module, job_name
from sparkmark.planning.windows import (DAY_MS, PROGRESS_STATUSES, LedgerRun, RunPlanner,
                                        TargetWrite, module_start, normalize_target,
                                        owner_by_handoffs, owner_conflict, primordial_start,
                                        target_key, target_owner)
from sparkmark.state import StateStore


def ledger_run(r: dict[str, Any]) -> LedgerRun:
    """A ledger row as the planners see it.

    Example: ``module_start([ledger_run(r) for r in store.list_runs(job_name="p.1004")])``
    """
    return LedgerRun(r["run_id"], r.get("pipeline_run_id"), r["run_number"], r["status"],
                     r.get("from_ts"), r.get("until_ts"))


def module_progress(store: StateStore, pipeline: str, modules: Mapping[int, Module]
                    ) -> tuple[dict[int, int | None], set[int]]:
    """Where each module's next window starts, and the modules whose last run failed: from
    at most one ledger row per module (``store.module_marks``), not the whole ledger.

    Example: ``progress, failed_before = module_progress(p.store, p.name, p.modules)``
    """
    jobs = {mid: job_name(pipeline, mid) for mid in modules}
    marks = store.module_marks(list(jobs.values()), pipeline=pipeline)
    progress: dict[int, int | None] = {}
    failed_before: set[int] = set()
    for mid, m in modules.items():
        job = jobs[mid]
        inherited: list[LedgerRun] = []
        if m.take_over_from is not None:
            inherited = [ledger_run(r) for r in
                         store.module_marks([m.take_over_from])[m.take_over_from]]
        progress[mid] = module_start([ledger_run(r) for r in marks[job]], inherited)
        jr = store.job_row(job)
        if jr is not None and jr["attempt"] > 0:
            failed_before.add(mid)
    return progress, failed_before


def check_ownership(store: StateStore, pipeline: str, modules: Mapping[int, Module],
                    module_ids: Iterable[int]) -> None:
    """Refuse (before anything runs) a module whose target another job owns.

    Example: ``check_ownership(p.store, p.name, p.modules, [1004, 2010])``
    """
    owners: dict[str, str | None] = {}
    problems = []
    for mid in sorted(module_ids):
        m = modules[mid]
        target = normalize_target(m.target)
        if target not in owners:
            owners[target] = target_owner_in(store, pipeline, m.target)
        owner = owner_conflict(owners[target], job=job_name(pipeline, mid),
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


def target_owner_in(store: StateStore, pipeline: str, target: str) -> str | None:
    """The job that owns ``target`` among ``pipeline``'s committed module runs
    (:func:`~sparkmark.planning.windows.target_owner`), from the target's first write and one
    look-up per hand-off (:meth:`StateStore.first_target_write`,
    :meth:`StateStore.target_handoff`), however long the ledger.  A run
    that the key matches but is not of this pipeline and target (a hash collision) makes it
    read every committed run of the pipeline instead.

    Example: ``target_owner_in(p.store, p.name, "data/bronze/audit_log")  # 'overwatch.1004'``
    """
    key, wanted = target_key(pipeline, target), normalize_target(target)

    def write(r: dict[str, Any] | None) -> TargetWrite | None:
        if r is None:
            return None
        w = _target_write(r)
        if w is None or w.target != wanted or r["pipeline"] != pipeline:
            raise _Collision
        return w

    try:
        return owner_by_handoffs(write(store.first_target_write(key)), lambda w: write(
            store.target_handoff(key, w.job, w.order)))
    except _Collision:
        rows = store.list_runs(pipeline=pipeline, statuses=PROGRESS_STATUSES,
                               columns=_WRITE_COLUMNS)
        return target_owner(_target_writes(rows), target)


class _Collision(Exception):
    """Another pipeline's or target's run has the same target key."""


def plan_run(graph: dict[int, tuple[int, ...]], progress: dict[int, int | None],
             failed_before: set[int], *, primordial_date: Any, snapshot_ts: int,
             max_days_to_load: int, timezone: str) -> tuple[int, RunPlanner]:
    """The primordial start and the planner of one pipeline run under ``snapshot_ts``.

    Example: ``primordial, planner = plan_run(graph(p.modules), progress, failed_before,
    primordial_date=None, snapshot_ts=now, max_days_to_load=5, timezone="UTC")``
    """
    primordial = primordial_start(primordial_date, snapshot_ts=snapshot_ts,
                                  max_days=max_days_to_load, tz=timezone)
    planner = RunPlanner(graph, progress, failed_before, primordial, snapshot_ts,
                         max_days_to_load * DAY_MS, max_days=max_days_to_load, tz=timezone)
    return primordial, planner


#: the ledger fields :func:`_target_writes` reads
_WRITE_COLUMNS = ("run_start_ts", "run_number", "job_name", "status", "config", "pipeline")


def _target_write(r: dict[str, Any]) -> TargetWrite | None:
    """A committed module run as a write into its target (``None``: it names no target)."""
    if r["status"] not in PROGRESS_STATUSES:
        return None
    try:
        cfg = json.loads(r.get("config") or "{}").get("pipeline") or {}
    except (ValueError, AttributeError):
        return None
    if not cfg.get("target"):
        return None
    return TargetWrite((r.get("run_start_ts") or 0, r["run_number"], r["job_name"]),
                       r["job_name"], normalize_target(cfg["target"]), cfg.get("take_over_from"))


def _target_writes(rows: list[dict[str, Any]]) -> list[TargetWrite]:
    """The committed module runs of a ledger, as writes into their targets."""
    return [w for w in map(_target_write, rows) if w is not None]
