"""Reading the ledger (``sm_runs``, ``sm_jobs``): a run, the runs of a job, pipeline or module,
each module's marks for planning, and the jobs.  A mixin of :class:`~sparkmark.state.StateStore`;
the report's rows are built on it in :mod:`sparkmark.state.ledger`.

Example: ``store.list_runs(job_name="orders", last=10)``
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import bindparam, select

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


#: what a module's mark holds (``LedgerRun``'s fields)
_MARK_COLUMNS = ("run_id", "pipeline_run_id", "run_number", "status", "from_ts", "until_ts")
_MARK_SELECT = (*(runs.c[c] for c in _MARK_COLUMNS), runs.c.run_start_ts, runs.c.attempt)
_B_JOB: Any = bindparam("b_job")
_B_PIPELINE: Any = bindparam("b_pipeline")
#: a job's committed run with a window and the highest run number, of one status: the top of
#: its range in ix_sm_runs_status (the window terms filter rows only a hand edit leaves out)
_Q_LATEST_DONE = (select(*_MARK_SELECT).where(
    runs.c.job_name == _B_JOB, runs.c.status == bindparam("b_status"),
    runs.c.from_ts.is_not(None), runs.c.until_ts.is_not(None))
    .order_by(runs.c.run_number.desc(), runs.c.run_start_ts, runs.c.attempt).limit(1))
_Q_LATEST_DONE_OF = _Q_LATEST_DONE.where(runs.c.pipeline == _B_PIPELINE)
#: a job's rolled-back run with the earliest window start (asked only when it has no
#: committed run left: its range is the runs rolled back)
_Q_EARLIEST_UNDONE = (select(*_MARK_SELECT).where(
    runs.c.job_name == _B_JOB, runs.c.status == RunStatus.ROLLED_BACK,
    runs.c.from_ts.is_not(None)).order_by(runs.c.from_ts).limit(1))
_Q_EARLIEST_UNDONE_OF = _Q_EARLIEST_UNDONE.where(runs.c.pipeline == _B_PIPELINE)
#: what a target write holds for the ownership walk
_WRITE_COLUMNS = ("run_id", "job_name", "pipeline", "run_start_ts", "run_number", "status",
                  "take_over_from", "config")
_WRITE_ORDER = (runs.c.run_start_ts, runs.c.run_number, runs.c.job_name)
#: a target's first committed write of one status: the start of its ix_sm_runs_target range
_Q_FIRST_WRITE = (select(*(runs.c[c] for c in _WRITE_COLUMNS))
                  .where(runs.c.target_key == bindparam("b_key"),
                         runs.c.status == bindparam("b_status"))
                  .order_by(*_WRITE_ORDER).limit(1))
#: the first committed write of one status after a write, by a job that took the target over
#: from its owner: the start of a range of ix_sm_runs_takeover
_Q_HANDOFF = (select(*(runs.c[c] for c in _WRITE_COLUMNS))
              .where(runs.c.target_key == bindparam("b_key"),
                     runs.c.take_over_from == bindparam("b_owner"),
                     runs.c.status == bindparam("b_status"),
                     sa.tuple_(*_WRITE_ORDER) > sa.tuple_(bindparam("b_ts"),
                                                          bindparam("b_number"),
                                                          bindparam("b_job")),
                     runs.c.job_name != bindparam("b_owner"))
              .order_by(*_WRITE_ORDER).limit(1))


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
        job's rows; a pipeline run asks this instead of reading its whole ledger.  Each status
        is the end of one range of ``ix_sm_runs_status`` (job, status, run number): a few
        index lookups a job, however long its history.

        Example: ``module_start([LedgerRun(**r) for r in store.module_marks(["p.1"])["p.1"]])``
        """
        out: dict[str, list[dict[str, Any]]] = {}
        with self.tx("reading the ledger") as conn:
            for job in job_names:
                params = {"b_job": job} if pipeline is None else {"b_job": job,
                                                                  "b_pipeline": pipeline}
                found = [r for status in RunStatus.progress() for r in conn.execute(
                    _Q_LATEST_DONE if pipeline is None else _Q_LATEST_DONE_OF,
                    {**params, "b_status": str(status)})]
                row: Any
                if found:
                    row = min(found, key=lambda r: (-r.run_number, r.run_start_ts, r.attempt))
                else:
                    row = conn.execute(_Q_EARLIEST_UNDONE if pipeline is None else
                                       _Q_EARLIEST_UNDONE_OF, params).first()
                out[job] = [] if row is None else [
                    {c: getattr(row, c) for c in _MARK_COLUMNS}]
        return out

    def first_target_write(self, key: str) -> dict[str, Any] | None:
        """The first committed (SUCCEEDED/EMPTY) pipeline run that wrote the target with
        ``key`` (``sm_runs.target_key``, see :func:`~sparkmark.planning.windows.target_key`),
        in write order (run start, run number, job); ``None``: no committed run wrote it.  The
        first entry of a range of ``ix_sm_runs_target`` a status, however long the ledger.

        Example: ``store.first_target_write(target_key("overwatch", "/data/bronze"))["job_name"]``
        """
        return self._first_write(_Q_FIRST_WRITE, {"b_key": key})

    def target_handoff(self, key: str, owner: str, after: tuple[int, int, str]
                       ) -> dict[str, Any] | None:
        """The first committed pipeline run after ``after`` (its ``(run_start_ts, run_number,
        job_name)``) that wrote the target with ``key`` and declared it takes that target over
        from ``owner`` (by another job than ``owner``); ``None``: none did.  The first entry
        of a range of ``ix_sm_runs_takeover`` a status: with :meth:`first_target_write`, what
        :func:`~sparkmark.planning.windows.owner_by_handoffs` asks.

        Example: ``store.target_handoff(key, "overwatch.1004", (ts, 17, "overwatch.1004"))``
        """
        return self._first_write(_Q_HANDOFF, {"b_key": key, "b_owner": owner,
                                              "b_ts": after[0], "b_number": after[1],
                                              "b_job": after[2]})

    def _first_write(self, query: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        with self.tx("reading the ledger") as conn:
            found = [dict(r._mapping) for status in RunStatus.progress()
                     for r in conn.execute(query, {**params, "b_status": str(status)})]
        return min(found, key=lambda r: (r["run_start_ts"], r["run_number"], r["job_name"]),
                   default=None)

    def removals_left(self, pipeline: str) -> list[dict[str, Any]]:
        """The ROLLED_BACK runs of ``pipeline`` whose output removal has not finished
        (``publish_state`` still ``removing``), oldest first: one lookup in
        ``ix_sm_runs_publish`` per job of the pipeline (``<pipeline>.<module id>``, from
        ``sm_jobs``), however many runs were rolled back before.

        Example: ``finish_removals(spark, store, store.removals_left("overwatch"))``
        """
        from sparkmark.core.status import PublishState
        prefix = f"{pipeline}."
        with self.tx("reading the ledger") as conn:
            names = [n for n in conn.execute(select(jobs.c.job_name)).scalars()
                     if n.startswith(prefix)]
            rows = [dict(r._mapping) for name in names for r in conn.execute(
                select(runs).where(runs.c.job_name == name,
                                   runs.c.publish_state == str(PublishState.REMOVING),
                                   runs.c.status == RunStatus.ROLLED_BACK,
                                   runs.c.pipeline == pipeline))]
        return sorted(rows, key=lambda r: (r["run_start_ts"], r["job_name"], r["run_number"],
                                           r["attempt"]))

    def job_names(self) -> list[str]:
        with self.tx("reading the ledger") as conn:
            return [r[0] for r in conn.execute(select(jobs.c.job_name).order_by(jobs.c.job_name))]

    def job_row(self, job_name: str) -> dict[str, Any] | None:
        with self.tx("reading a job") as conn:
            row = self._job_row(conn, job_name)
            return dict(row._mapping) if row is not None else None
