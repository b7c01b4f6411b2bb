"""The job's lease as rows of ``sm_jobs``: renewing it (heartbeat), breaking it from outside
(``sparkmark bookmark release``), and reading a run's outcome under the job row's lock; the
pure lease rules live in :mod:`sparkmark.state.lease`.  A mixin of
:class:`~sparkmark.state.StateStore`.

Example: ``store.heartbeat("orders", run_id, now=clock(), lease_ms=120_000)``
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.exc import DBAPIError

from sparkmark.core.errors import ConcurrentRunError, UnknownRunError
from sparkmark.core.status import RunStatus
from sparkmark.state.lease import host_name, lease_is_alive, this_host
from sparkmark.state.schema import jobs, runs
from sparkmark.state.store_base import StoreBase, cap

#: the job row, locked without waiting (:meth:`LeaseRows.run_outcome`)
_Q_JOB_NOWAIT = select(jobs).where(jobs.c.job_name == bindparam("b_job")).with_for_update(
    nowait=True)


class LeaseRows(StoreBase):
    """Renewing, breaking and waiting out a job's lease."""

    def heartbeat(self, job_name: str, run_id: str, now: int, lease_ms: int) -> bool:
        """Renew the lease; False when this run no longer holds it."""
        with self.tx("heartbeat") as conn:
            res = conn.execute(jobs.update().where(
                jobs.c.job_name == job_name, jobs.c.active_run_id == run_id).values(
                lease_expires_ts=now + lease_ms))
            return res.rowcount == 1

    def release(self, job_name: str, run_id: str | None = None, *, now: int,
                error: str | None = None) -> str:
        """End a job's active run from outside (``sparkmark bookmark release``): record it
        FAILED and break its lease, so the next run or a reset can go ahead.  The run's own
        process, if it is still alive, then fails at commit (it lost the lease).  Returns the
        released run's id."""
        from sparkmark.core.errors import JobStateError
        with self.tx("releasing a run") as conn:
            job = self._require_job(conn, job_name, lock=True)
            active = job.active_run_id
            if active is None:
                raise JobStateError(f"job {job_name!r} has no active run; nothing to release")
            if run_id is not None and run_id != active:
                raise UnknownRunError(
                    f"run {cap(run_id)!r} is not the active run of job {job_name!r} (that is "
                    f"{active}); give --run-id {active} or leave --run-id out")
            conn.execute(runs.update().where(runs.c.run_id == active,
                                             runs.c.status == RunStatus.RUNNING).values(
                status=RunStatus.FAILED, run_end_ts=now,
                error=(error or "released with 'sparkmark bookmark release'") + ": the run "
                      f"never finished (host {host_name(job.lease_host)}, pid {job.lease_pid})"))
            conn.execute(jobs.update().where(jobs.c.job_name == job_name).values(
                attempt=job.attempt + 1, active_run_id=None, lease_host=None, lease_pid=None,
                lease_expires_ts=None))
            return str(active)

    @staticmethod
    def _refuse_live_run(job: Any, now: int, action: str) -> None:
        """An administrative change waits for the job's live run (it names the way out)."""
        if job.active_run_id is not None and lease_is_alive(
                host=job.lease_host, pid=job.lease_pid, expires_ts=job.lease_expires_ts,
                now=now, my_host=this_host()):
            raise ConcurrentRunError(
                f"job {job.job_name!r} has an active run {job.active_run_id}; {action} after "
                "that run ends, or end it first with "
                f"'sparkmark bookmark release {job.job_name} --run-id {job.active_run_id}'")

    @property
    def answers_can_be_lost(self) -> bool:
        """Whether a transaction can land without this process hearing so: a database server
        across a connection can carry out a ``COMMIT`` whose answer never arrives; SQLite's
        commit is a call into a local library that either happened or raised.

        Example: ``store.answers_can_be_lost  # False for sqlite:///state.db``
        """
        return self.engine.dialect.name != "sqlite"

    def run_outcome(self, job_name: str, run_id: str) -> dict[str, Any] | None:
        """Run ``run_id``'s ledger row read under the job row's lock, taken without waiting
        (``FOR UPDATE NOWAIT``): ``None`` while another transaction holds it.  Every
        transaction that ends a run (its commit, a failure, a take-over) locks that row first,
        so a row read here is final: a commit whose answer was lost is either in it or will
        never be.  (SQLite has no row locks: a transaction there is over when its call
        returns.)

        Example: ``(store.run_outcome("orders", run_id) or {}).get("status")``
        """
        with self.tx("reading the outcome of a commit") as conn:
            try:
                conn.execute(_Q_JOB_NOWAIT, {"b_job": job_name}).first()
            except DBAPIError as e:
                code = getattr(getattr(e, "orig", None), "sqlstate", None)
                if code == "55P03" or "could not obtain lock" in str(e).lower():
                    return None  # held: that transaction is not over (the rollback ends ours)
                raise
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).first()
        if row is None:
            raise UnknownRunError(f"no run with id {cap(run_id)!r} in {self.display_url}")
        return dict(row._mapping)
