"""Planted bugs: product mutations applied in memory (monkeypatched in this process only, for
one schedule) that the simulation must catch.  Each is a context manager factory taking the
world.

    with PLANTED["skip_recovery"](world): ...
"""
from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from sparkmark.core.status import PublishState
from sparkmark.lifecycle.job import Job
from sparkmark.sinks import publish
from sparkmark.sources import files as source_files
from sparkmark.state import StateStore

from chaos_harness.sim.world import World


@contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    own = name in vars(owner)  # a class may inherit it (from a mixin): then only shadowed
    saved = vars(owner).get(name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if own:
            setattr(owner, name, saved)
        else:
            delattr(owner, name)


def publish_before_commit(world: World) -> Any:
    """The staged output is published before the state store transaction (not after)."""
    original = StateStore.commit_run

    def commit_run(self: StateStore, job_name: str, run_id: str, **kw: Any) -> int:
        outputs = json.loads((kw.get("fields") or {}).get("outputs") or "[]")
        publish.publish_outputs(world.spark, self, run_id, outputs)  # type: ignore[attr-defined]
        return original(self, job_name, run_id, **kw)
    return _patched(StateStore, "commit_run", commit_run)


def skip_recovery(world: World) -> Any:
    """A starting run does not finish what earlier runs left (publish or discard)."""
    return _patched(publish, "recover_job_outputs", lambda *a, **k: None)


def no_lost_answer_fix(world: World) -> Any:
    """An error from the commit's transaction is taken as 'not committed' without asking the
    store again: the run is failed and its staged output discarded."""
    def outcome(self: Job, error: BaseException, run_id: str) -> int | None:
        self.fail(error)
        return None
    return _patched(Job, "_commit_outcome", outcome)


class _Row:
    def __init__(self, row: Any, run_id: str):
        self._row, self._run_id = row, run_id

    def __getattr__(self, name: str) -> Any:
        return self._run_id if name == "active_run_id" else getattr(self._row, name)


def no_commit_checks(world: World) -> Any:
    """The commit checks neither the lease (is this run still the active one?) nor the start
    version (did the bookmark move meanwhile?)."""
    original = StateStore.commit_run

    def commit_run(self: StateStore, job_name: str, run_id: str, **kw: Any) -> int:
        kw["start_version"] = self.current_version(job_name).version
        checked = self._checked_job

        def lax(conn: Any, name: str, query: Any, **params: Any) -> Any:
            row = checked(conn, name, query, **params)
            return None if row is None else _Row(row, run_id)
        self._checked_job = lax  # type: ignore[method-assign]
        try:
            return original(self, job_name, run_id, **kw)
        finally:
            del self._checked_job
    return _patched(StateStore, "commit_run", commit_run)


def low_off_by_one(world: World) -> Any:
    """The band's low watermark one ms too high: a file with mtime low + 1 counts as read."""
    original = source_files.plan_band

    def plan_band(*a: Any, **k: Any) -> Any:
        plan = original(*a, **k)
        if plan.state.low is None:
            return plan
        return dataclasses.replace(plan, state=dataclasses.replace(plan.state,
                                                                    low=plan.state.low + 1))
    return _patched(source_files, "plan_band", plan_band)


def removed_before_delete(world: World) -> Any:
    """A rollback marks a run ``removed`` before it deletes the run's output."""
    def finish(spark: Any, store: Any, rows: Any, properties: Any = None,
               only: Any = None) -> list[str]:
        removed: list[str] = []
        for r in rows:
            if not publish.pending_removal(r) or (only is not None and not only(r)):
                continue
            store.update_run(r["run_id"], publish_state=PublishState.REMOVED)
            outputs = publish.outputs_of(r)
            removed.extend(publish.remove_run_output(spark, r["run_id"], outputs, properties))
            publish.discard_outputs(spark, outputs, properties, r["run_id"])
        return removed
    import sparkmark.sinks.rollback as rollback
    from contextlib import ExitStack
    stack = ExitStack()
    stack.enter_context(_patched(publish, "finish_removals", finish))
    stack.enter_context(_patched(rollback, "finish_removals", finish))
    return stack


def stamp_window_closed(world: World) -> Any:
    """A module's stamp window closed at its start too (``from <= sm_snapshot_ts``, not
    ``from <``): the upstream rows stamped at the window's start are read by two windows."""
    from sparkmark.lifecycle.pipeline.declaring import SNAPSHOT_COL, ModuleContext

    def in_stamp_window(self: ModuleContext) -> Any:
        from pyspark.sql import functions as F
        col = F.col(SNAPSHOT_COL)
        return ((col >= F.timestamp_millis(F.lit(self.from_ts)))
                & (col <= F.timestamp_millis(F.lit(self.until_ts))))
    return _patched(ModuleContext, "in_stamp_window", in_stamp_window)


PLANTED: dict[str, Callable[[World], Any]] = {
    "publish_before_commit": publish_before_commit,
    "skip_recovery": skip_recovery,
    "no_lost_answer_fix": no_lost_answer_fix,
    "no_lease_or_version_check": no_commit_checks,
    "low_watermark_off_by_one": low_off_by_one,
    "removed_before_delete": removed_before_delete,
    "stamp_window_closed": stamp_window_closed,
}
