"""Reading the ledger (``sm_runs``, ``sm_jobs``): a run, the runs of a job, pipeline or module,
each module's marks for planning, and the jobs.  A mixin of :class:`~sparkmark.state.StateStore`;
the report's rows are built on it in :mod:`sparkmark.state.ledger`.

Example: ``store.list_runs(job_name="orders", last=10)``
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import select

from sparkmark.core.errors import UnknownRunError
from sparkmark.core.status import PublishState, RunStatus
from sparkmark.state.schema import jobs, runs
from sparkmark.state.store_base import StoreBase, cap


def _run_filters(*, job_name: str | None, pipeline: str | None,
                 module_id: int | list[int] | None, statuses: tuple[str, ...] | None,
                 pipeline_run_id: str | None, started_from: int | None) -> list[Any]:
    """The WHERE terms of a ledger read (none for a filter not given)."""
    terms: list[Any] = []
    if started_from is not None:
        terms.append(runs.c.run_start_ts >= started_from)
    if job_name is not None:
        terms.append(runs.c.job_name == job_name)
    if pipeline is not None:
        terms.append(runs.c.pipeline == pipeline)
    if isinstance(module_id, list):  # several modules
        terms.append(runs.c.module_id.in_(module_id))
    elif module_id is not None:
        terms.append(runs.c.module_id == module_id)
    if statuses:
        terms.append(runs.c.status.in_([str(s) for s in statuses]))
    if pipeline_run_id is not None:
        terms.append(runs.c.pipeline_run_id == pipeline_run_id)
    return terms


class RunReads(StoreBase):
    """Ledger reads."""

    def get_run(self, run_id: str) -> dict[str, Any]:
        with self.tx("reading the ledger") as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).first()
        if row is None:
            raise UnknownRunError(f"no run with id {cap(run_id)!r} in {self.display_url}")
        return dict(row._mapping)

    def settled_runs(self, run_ids: list[str]) -> set[str]:
        """Which of ``run_ids`` the ledger has finished as not committed, with their output
        already discarded or removed: nothing will ever publish what is staged under them.

        Example: ``store.settled_runs(["3f2a...", "77c1..."])  # {"3f2a..."}``
        """
        if not run_ids:
            return set()
        q = select(runs.c.run_id).where(
            runs.c.run_id.in_(run_ids[:500]),
            runs.c.status.in_([str(s.value) for s in RunStatus.undone()]),
            runs.c.publish_state.in_([PublishState.DISCARDED.value, PublishState.REMOVED.value]))
        with self.tx("reading the ledger") as conn:
            return {r[0] for r in conn.execute(q)}

    def list_runs(self, *, job_name: str | None = None, pipeline: str | None = None,
                  module_id: int | list[int] | None = None, last: int | None = None,
                  statuses: tuple[str, ...] | None = None,
                  pipeline_run_id: str | None = None,
                  started_from: int | None = None,
                  columns: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        """Ledger rows, oldest first (``last`` keeps the newest N; ``statuses``: only runs in
        these; ``started_from``: runs that started at or after this epoch ms; ``columns``: only
        these fields of each row).  Every filter and the limit are in the SQL.

        Example: ``store.list_runs(job_name="orders", statuses=("FAILED",), last=10)``
        """
        q = select(*(runs.c[c] for c in columns)) if columns else select(runs)
        q = q.where(*_run_filters(job_name=job_name, pipeline=pipeline, module_id=module_id,
                                  statuses=statuses, pipeline_run_id=pipeline_run_id,
                                  started_from=started_from))
        q = q.order_by(runs.c.run_start_ts.desc(), runs.c.job_name.desc(),
                       runs.c.run_number.desc(), runs.c.attempt.desc())
        if last is not None:
            q = q.limit(last)
        with self.tx("reading the ledger") as conn:
            rows = [dict(r._mapping) for r in conn.execute(q)]
        return rows[::-1]

    def count_runs(self, *, job_name: str | None = None, pipeline: str | None = None,
                   module_id: int | list[int] | None = None,
                   statuses: tuple[str, ...] | None = None,
                   pipeline_run_id: str | None = None,
                   started_from: int | None = None) -> int:
        """How many ledger rows :meth:`list_runs` would return without ``last`` (one
        ``COUNT`` in the database).

        Example: ``store.count_runs(job_name="orders", statuses=("FAILED",))``
        """
        q = select(sa.func.count()).select_from(runs).where(*_run_filters(
            job_name=job_name, pipeline=pipeline, module_id=module_id, statuses=statuses,
            pipeline_run_id=pipeline_run_id, started_from=started_from))
        with self.tx("reading the ledger") as conn:
            return int(conn.execute(q).scalar() or 0)

    def module_marks(self, job_names: list[str], pipeline: str | None = None
                     ) -> dict[str, list[dict[str, Any]]]:
        """What :func:`~sparkmark.planning.windows.module_start` reads of each job's ledger rows
        (of ``pipeline``'s runs when given), in at most one row per job: its SUCCEEDED/EMPTY
        run with a window and the highest run number (the first of those to start, as the
        planner picks among equal numbers), else its ROLLED_BACK run with the earliest window
        start, else none.  ``module_start`` of these rows equals ``module_start`` of all the
        job's rows; a pipeline run asks this instead of reading its whole ledger.

        Example: ``module_start([LedgerRun(**r) for r in store.module_marks(["p.1"])["p.1"]])``
        """
        cols = (runs.c.run_id, runs.c.pipeline_run_id, runs.c.run_number, runs.c.status,
                runs.c.from_ts, runs.c.until_ts)
        out: dict[str, list[dict[str, Any]]] = {}
        with self.tx("reading the ledger") as conn:
            for job in job_names:
                mine = runs.c.job_name == job
                if pipeline is not None:
                    mine = sa.and_(mine, runs.c.pipeline == pipeline)
                row = conn.execute(
                    select(*cols).where(mine, runs.c.status.in_(RunStatus.progress()),
                                        runs.c.from_ts.is_not(None),
                                        runs.c.until_ts.is_not(None))
                    .order_by(runs.c.run_number.desc(), runs.c.run_start_ts,
                              runs.c.attempt).limit(1)).first()
                if row is None:
                    row = conn.execute(
                        select(*cols).where(mine, runs.c.status == RunStatus.ROLLED_BACK,
                                            runs.c.from_ts.is_not(None))
                        .order_by(runs.c.from_ts).limit(1)).first()
                out[job] = [] if row is None else [dict(row._mapping)]
        return out

    def job_names(self) -> list[str]:
        with self.tx("reading the ledger") as conn:
            return [r[0] for r in conn.execute(select(jobs.c.job_name).order_by(jobs.c.job_name))]

    def job_row(self, job_name: str) -> dict[str, Any] | None:
        with self.tx("reading a job") as conn:
            row = self._job_row(conn, job_name)
            return dict(row._mapping) if row is not None else None
