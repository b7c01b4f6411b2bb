"""The ledger rows of a run's life (``sm_runs``): begin (take the lease, open the row), commit
(bookmark version, counters, lease, row and file audit in one transaction), failure, staged
output and the targets it names, and the runs whose output waits to be recovered.  A mixin of
:class:`~sparkmark.state.StateStore`.

Example: ``start = store.begin_run("orders", run_id=rid, option="job-bookmark-enable",
now=now, snapshot_ts=now, lease_ms=120_000, pid=os.getpid())``
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from sparkmark.core.errors import BookmarkConflictError, ConcurrentRunError, StateCorruptError
from sparkmark.core.status import PublishState, RunStatus, plain
from sparkmark.planning.bands import path_hash
from sparkmark.state import schema
from sparkmark.state.audit import AuditRows
from sparkmark.state.bookmark_rows import BookmarkRows
from sparkmark.state.lease import host_name, lease_is_alive, lease_token, this_host
from sparkmark.state.schema import files, jobs, runs, targets, versions
from sparkmark.state.store_base import cap

# Statements every run executes (begin, commit, ledger updates), built once: building a Core
# statement and its cache key costs ~70 us of Python per execution, more than SQLite takes to
# run it (13 statements a run).  Parameters are named ``b_*`` so that they never clash
# with the column names an UPDATE's SET takes from the parameters.

#: the job row (locked) with the store's id; for begin, its current bookmark's state and
#: whether a run's output waits to be recovered; for commit, whether audit rows are past their
#: retention: the store identity check, the version read, the recovery query and the retention
#: DELETE cost no statement of their own when there is nothing for them (at begin
#: three statements of Python and SQLite, at commit two)
_STORE_ID_COLUMN = schema.STORE_ID_QUERY.scalar_subquery().label("sm_store_id")
_RECOVERABLE: list[Any] = [sa.literal_column(f"'{PublishState(s).value}'") for s in (
    PublishState.PENDING, PublishState.STAGED, PublishState.REMOVING)]
# no ORDER BY: with one, SQLite walks the job's whole history in ix_sm_runs_job's order instead
# of looking the few runs up in ix_sm_runs_publish (21 ms at 50,000 runs); sorted in Python.
# The states are written into the SQL: an IN of bound values is expanded anew at every
# execution (~80 us of Python at every run's begin)
_Q_TO_RECOVER = select(runs).where(
    runs.c.job_name == bindparam("b_job"),
    runs.c.publish_state.in_(_RECOVERABLE),
    runs.c.status != RunStatus.RUNNING)


def _unknown_status_exists() -> Any:
    """Whether a ledger row of the job has a status that is not a :class:`RunStatus` (written
    by hand), as one EXISTS per gap between the known statuses in sorted order (``status <
    'EMPTY'``, ``'EMPTY' < status < 'FAILED'``, ..., ``status > 'SUCCEEDED'``): each is one
    lookup in ``ix_sm_runs_status``, where ``NOT IN`` would walk all the job's runs."""
    known = sorted(s.value for s in RunStatus)
    bounds = [None, *known, None]
    checks = []
    for low, high in zip(bounds, bounds[1:]):
        terms = [runs.c.job_name == jobs.c.job_name]
        if low is not None:
            terms.append(runs.c.status > sa.literal_column(f"'{low}'"))
        if high is not None:
            terms.append(runs.c.status < sa.literal_column(f"'{high}'"))
        checks.append(sa.exists().where(*terms))
    return sa.or_(*checks)


_Q_UNKNOWN_STATUS = select(runs.c.run_id, runs.c.status).where(
    runs.c.job_name == bindparam("b_job"),
    runs.c.status.not_in([s.value for s in RunStatus])).order_by(runs.c.run_start_ts).limit(1)

_Q_COMMIT_JOB = select(jobs, _STORE_ID_COLUMN, sa.exists().where(
    files.c.job_name == jobs.c.job_name, files.c.read_ts < bindparam("b_before")).label(
    "sm_files_expired")).where(jobs.c.job_name == bindparam("b_job")).with_for_update()
_Q_BEGIN_JOB = select(jobs, _STORE_ID_COLUMN, select(versions.c.state).where(
    versions.c.job_name == jobs.c.job_name,
    versions.c.version == jobs.c.current_version).scalar_subquery().label(
    "sm_version_state"), sa.exists().where(
    runs.c.job_name == jobs.c.job_name, runs.c.publish_state.in_(_RECOVERABLE),
    runs.c.status != RunStatus.RUNNING).label("sm_to_recover"),
    _unknown_status_exists().label("sm_unknown_status")).where(
    jobs.c.job_name == bindparam("b_job")).with_for_update()
_U_JOB = jobs.update().where(jobs.c.job_name == bindparam("b_job"))
_U_RUN = runs.update().where(runs.c.run_id == bindparam("b_run"))
_I_RUN = runs.insert()
_I_VERSION = versions.insert()
_Q_TARGET = select(targets.c.job_name, targets.c.target).where(
    targets.c.target_hash == bindparam("b_hash"))
_I_TARGET = targets.insert()
_RUN_COLUMNS = frozenset(runs.c.keys())


def _run_fields(fields: dict[str, Any] | None) -> dict[str, Any]:
    """Ledger fields as statement parameters: plain values, and only columns of ``sm_runs``
    (a prebuilt statement would silently ignore a key that is not a column, where
    ``.values()`` raised)."""
    fields = fields or {}
    unknown = fields.keys() - _RUN_COLUMNS
    if unknown:
        raise ValueError(f"not columns of sm_runs: {sorted(unknown)}")
    return {k: plain(v) for k, v in fields.items()}


@dataclass
class RunStart:
    """What ``begin_run`` hands back to a job."""

    run_id: str
    job_name: str
    run_number: int
    attempt: int
    start_version: int
    state: dict[str, Any]
    previous_run_id: str | None
    taken_over: list[dict[str, Any]] = field(default_factory=list)
    #: the job's finished runs with output to publish or remove (``runs_to_recover``), read in
    #: the same transaction
    to_recover: list[dict[str, Any]] = field(default_factory=list)


class _FirstRunRaced(Exception):
    """Two first runs of a new job raced: the job's row appeared while ours was being made
    (``begin_run`` tries again, and then sees the other run's lease)."""


class RunRows(BookmarkRows, AuditRows):
    """A run's ledger row from begin to commit or failure."""

    def begin_run(self, job_name: str, *, run_id: str, option: str, now: int,
                  snapshot_ts: int, lease_ms: int, pid: int, host: str | None = None,
                  ledger: dict[str, Any] | None = None) -> RunStart:
        """Take the job's lease (or fail naming the active run) and open its ledger row."""
        host = host or this_host()
        for attempt in range(3):
            with self._errors("begin run"):
                try:
                    return self._begin_run(job_name, run_id=run_id, option=option, now=now,
                                           snapshot_ts=snapshot_ts, lease_ms=lease_ms, pid=pid,
                                           host=host, ledger=ledger or {})
                except (IntegrityError, _FirstRunRaced):
                    if attempt == 2:  # two first runs of a new job raced on its row
                        raise
        raise AssertionError("unreachable")

    def _begin_run(self, job_name: str, *, run_id: str, option: str, now: int,
                   snapshot_ts: int, lease_ms: int, pid: int, host: str,
                   ledger: dict[str, Any]) -> RunStart:
        with self.engine.begin() as conn:
            job = self._checked_job(conn, job_name, _Q_BEGIN_JOB)
            if job is None:
                self._refuse_orphans(conn, job_name)
                conn.execute(jobs.insert().values(
                    job_name=job_name, current_version=0, run_number=0, attempt=0,
                    created_ts=now))
                job = conn.execute(_Q_BEGIN_JOB, {"b_job": job_name}).first()
            if job.sm_unknown_status:
                self._refuse_unknown_status(conn, job_name, run_id)
            taken_over: list[dict[str, Any]] = []
            attempt = job.attempt
            if job.active_run_id is not None:
                if lease_is_alive(host=job.lease_host, pid=job.lease_pid,
                                  expires_ts=job.lease_expires_ts, now=now, my_host=host):
                    raise ConcurrentRunError(
                        f"job {job_name!r} already has an active run {job.active_run_id} "
                        f"(host {host_name(job.lease_host)}, pid {job.lease_pid}); wait for it "
                        "to finish. Its lease is taken over automatically once that process is "
                        "gone (same host) or its lease expires (another host); to end a run "
                        "that will never finish (e.g. a notebook left mid-way), run "
                        f"'sparkmark bookmark release {job_name}'.")
                old = conn.execute(select(runs).where(runs.c.run_id == job.active_run_id)).first()
                reason = (f"taken over by run {run_id}: its process (host "
                          f"{host_name(job.lease_host)}, "
                          f"pid {job.lease_pid}) is gone or its lease expired")
                conn.execute(runs.update().where(runs.c.run_id == job.active_run_id,
                                                 runs.c.status == RunStatus.RUNNING)
                             .values(status=RunStatus.FAILED, error=reason, run_end_ts=now))
                if old is not None:
                    taken_over.append(dict(old._mapping))
                attempt += 1
            state: dict[str, Any] = {}
            if job.current_version:  # its state came with the job row
                if job.sm_version_state is None:
                    self._refuse_missing_version(job_name, job.current_version)
                state = self._state(job_name, job.current_version, job.sm_version_state)
            conn.execute(_U_JOB, {
                "b_job": job_name, "active_run_id": run_id,
                "lease_host": lease_token(host, pid), "lease_pid": pid,
                "lease_expires_ts": now + lease_ms, "attempt": attempt})
            conn.execute(_I_RUN, {
                "run_id": run_id, "job_name": job_name, "run_number": job.run_number + 1,
                "attempt": attempt, "status": RunStatus.RUNNING, "bookmark_option": option,
                "start_version": job.current_version, "run_start_ts": now,
                "snapshot_ts": snapshot_ts, "host": host, "pid": pid, **_run_fields(ledger)})
            # a run taken over just now was RUNNING when the job row was read
            to_recover = (self._runs_to_recover(conn, job_name)
                          if job.sm_to_recover or taken_over else [])
            return RunStart(run_id=run_id, job_name=job_name, run_number=job.run_number + 1,
                            attempt=attempt, start_version=job.current_version,
                            state=state, previous_run_id=job.last_run_id,
                            taken_over=taken_over, to_recover=to_recover)

    def commit_run(self, job_name: str, run_id: str, *, start_version: int,
                   new_state: dict[str, Any] | None, status: str, now: int,
                   fields: dict[str, Any] | None = None,
                   files_read: list[tuple[str | None, Any]] | None = None,
                   files_keep_ms: int | None = None,
                   before_commit: Callable[[], None] | None = None) -> int:
        """One transaction: bookmark version (if ``new_state``), counters, lease, ledger row,
        and the per-file audit (``files_read``: ``(ctx, [FileRead(path, size, mtime, kind)])``
        pairs; rows older than ``files_keep_ms`` are deleted for this job in the same
        transaction).  ``before_commit()`` is called last, inside the transaction: an exception
        from it rolls everything back and is raised as it is.

        Returns the job's bookmark version after the commit.
        """
        if status not in RunStatus.progress():
            raise ValueError(f"commit_run takes SUCCEEDED or EMPTY, not {status!r}")
        status = RunStatus(status).value
        with self.tx("commit") as conn:
            job = self._checked_job(conn, job_name, _Q_COMMIT_JOB, b_before=(
                None if files_keep_ms is None else now - files_keep_ms))
            if job is None:
                self._require_job(conn, job_name)  # raises UnknownJobError
            if job.active_run_id != run_id:
                raise BookmarkConflictError(
                    f"run {run_id} of job {job_name!r} no longer holds the job's lease "
                    f"(active run: {job.active_run_id or 'none'}); it was taken over. "
                    "Nothing was committed; run the job again.")
            version = job.current_version
            if new_state is not None:
                if job.current_version != start_version:
                    raise BookmarkConflictError(
                        f"the bookmark of job {job_name!r} changed while run {run_id} was "
                        f"running (version {start_version} -> {job.current_version}, e.g. a "
                        "reset or rewind). Nothing was committed; run the job again.")
                version = job.current_version + 1
                conn.execute(_I_VERSION, {
                    "job_name": job_name, "version": version, "kind": "commit",
                    "run_id": run_id, "previous_run_id": job.last_run_id,
                    "run_number": job.run_number + 1, "attempt": job.attempt,
                    "created_ts": now, "state": json.dumps(new_state, sort_keys=True)})
            conn.execute(_U_JOB, {
                "b_job": job_name, "current_version": version,
                "run_number": job.run_number + 1, "attempt": 0, "last_run_id": run_id,
                "active_run_id": None, "lease_host": None, "lease_pid": None,
                "lease_expires_ts": None})
            conn.execute(_U_RUN, {
                "b_run": run_id, "status": status, "run_end_ts": now, "end_version": version,
                **_run_fields(fields)})
            if files_keep_ms is not None and job.sm_files_expired:
                self._expire_files(conn, job_name, now - files_keep_ms)
            self._record_files(conn, job_name, run_id, now, files_read)
            if before_commit is not None:
                before_commit()
            return version

    def fail_run(self, job_name: str, run_id: str, *, error: str, now: int,
                 status: RunStatus | str = RunStatus.FAILED,
                 fields: dict[str, Any] | None = None) -> None:
        """Record a failed (or skipped) run; the bookmark is untouched, the attempt goes up."""
        status = RunStatus(status).value
        with self.tx("recording a failure") as conn:
            job = self._job_row(conn, job_name, lock=True)
            ended = conn.execute(runs.update().where(runs.c.run_id == run_id,
                                                     runs.c.status == RunStatus.RUNNING).values(
                status=status, error=error, run_end_ts=now,
                **{k: plain(v) for k, v in (fields or {}).items()}))
            if ended.rowcount:  # audit rows it wrote ahead of a commit that never came
                conn.execute(files.delete().where(files.c.run_id == run_id))
            if job is not None and job.active_run_id == run_id:
                conn.execute(jobs.update().where(jobs.c.job_name == job_name).values(
                    attempt=job.attempt + (1 if status == RunStatus.FAILED else 0),
                    active_run_id=None, lease_host=None,
                    lease_pid=None, lease_expires_ts=None))

    def update_run(self, run_id: str, **fields: Any) -> None:
        with self.tx("updating the ledger") as conn:
            conn.execute(_U_RUN, {"b_run": run_id, **_run_fields(fields)})

    def seed_bookmark(self, job_name: str, ctx: str, element: Any, *, now: int) -> int:
        """A job that has never run in this store (a cut-over from Glue): create it with a
        first bookmark version (kind ``set``) holding ``ctx``'s element, so its first run
        starts from there.  Refused, nothing changed, if the job appeared meanwhile.

            store.seed_bookmark("orders", "src", element, now=now)  # -> 1
        """
        raced = BookmarkConflictError(
            f"job {cap(job_name)!r} appeared in the state store while its bookmark was being set "
            "(did its first run start?); nothing was changed, try again")
        with self._errors("setting a bookmark"):
            try:
                with self.engine.begin() as conn:
                    if self._job_row(conn, job_name, lock=True) is not None:
                        raise raced
                    self._refuse_orphans(conn, job_name)
                    conn.execute(jobs.insert().values(
                        job_name=job_name, current_version=0, run_number=0, attempt=0,
                        created_ts=now))
                    job = self._require_job(conn, job_name, lock=True)
                    return self._admin_version(conn, job, {ctx: element}, kind="set",
                                               source_run_id=None, now=now)
            except (IntegrityError, _FirstRunRaced):
                raise raced from None

    @staticmethod
    def _refuse_orphans(conn: Connection, job_name: str) -> None:
        """A job with bookmark versions or runs but no job row lost its row (deleted in the
        store): starting it afresh would read every input again, then fail at commit."""
        n_versions = conn.execute(select(sa.func.count()).select_from(versions).where(
            versions.c.job_name == job_name)).scalar() or 0
        n_runs = conn.execute(select(sa.func.count()).select_from(runs).where(
            runs.c.job_name == job_name)).scalar() or 0
        if (n_versions or n_runs) and conn.execute(
                select(jobs.c.job_name).where(jobs.c.job_name == job_name)).first() is not None:
            # not lost: another driver created the job between our two reads (the first runs of
            # a new job raced; READ COMMITTED shows its commit to our later statements)
            raise _FirstRunRaced(job_name)
        if n_versions or n_runs:
            raise StateCorruptError(
                f"job {cap(job_name)!r} has {n_versions} bookmark version(s) and {n_runs} run(s) "
                "in the state store but no job row (deleted by hand?); nothing was read or "
                "changed. Restore the store from a backup, or delete the job's rows from "
                "sm_bookmark_versions and sm_runs too to start it over on purpose")

    def _refuse_unknown_status(self, conn: Connection, job_name: str, run_id: str) -> None:
        """A ledger row of the job holds a status sparkmark never writes (edited by hand):
        planning would silently ignore that run (a window read twice, or skipped), so the run
        does not start; the caller's transaction is rolled back, nothing is written."""
        bad = conn.execute(_Q_UNKNOWN_STATUS, {"b_job": job_name}).first()
        where = (f"run {bad.run_id} has status {cap(bad.status, 40)!r}" if bad is not None
                 else "a run has a status")
        raise StateCorruptError(
            f"job {cap(job_name)!r}: {where} in the ledger (sm_runs) of state store "
            f"{self.display_url}, which sparkmark does not know (not one of "
            f"{', '.join(s.value for s in RunStatus)}; edited in the store?); run {run_id} did not "
            "start, and nothing was read or changed. Set that row's status back to what the "
            "run ended with (a row with an end_version committed: SUCCEEDED, or EMPTY if it "
            "wrote nothing; else FAILED), or restore the store from a backup")

    def runs_to_recover(self, job_name: str) -> list[dict[str, Any]]:
        """Finished runs of a job whose output is still staged, not yet published, or rolled
        back but not yet removed (``begin_run`` reads them too, as ``RunStart.to_recover``)."""
        with self.tx("reading the ledger") as conn:
            return self._runs_to_recover(conn, job_name)

    @staticmethod
    def _runs_to_recover(conn: Connection, job_name: str) -> list[dict[str, Any]]:
        rows = [dict(r._mapping) for r in conn.execute(_Q_TO_RECOVER, {"b_job": job_name})]
        return sorted(rows, key=lambda r: r["run_start_ts"])

    def record_staged(self, job_name: str, run_id: str, *, outputs: str | None, target: str
                      ) -> list[str]:
        """One transaction for a run that staged output for ``target``: its ledger row's
        ``outputs`` (the JSON records) and ``publish_state`` STAGED, and the (target, job)
        pair in ``sm_targets`` if new.  Returns the other jobs that wrote ``target`` (see
        :meth:`jobs_writing`), read in the same transaction.

        Example: ``others = store.record_staged("orders", run_id, outputs=records,
        target="file:/out")``
        """
        with self.tx("recording staged output") as conn:
            conn.execute(_U_RUN, {"b_run": run_id, "outputs": outputs,
                                  "publish_state": PublishState.STAGED})
            writers = self._writers(conn, target)
            if job_name not in writers:
                conn.execute(_I_TARGET, {"target_hash": path_hash(target), "job_name": job_name,
                                         "target": target, "first_run_id": run_id})
            return sorted(writers - {job_name})

    def jobs_writing(self, target: str, *, besides: str) -> list[str]:
        """Other jobs (not ``besides``) whose runs staged output for ``target`` (a file target's
        qualified path, a JDBC or Iceberg table), from ``sm_targets`` (an index lookup, however
        long the ledger): ``store.jobs_writing("file:/out", besides="orders") == ["Orders"]``."""
        with self.tx("reading the ledger") as conn:
            return sorted(self._writers(conn, target) - {besides})

    @staticmethod
    def _writers(conn: Connection, target: str) -> set[str]:
        """The jobs ``sm_targets`` has for ``target`` (looked up by its hash, then compared)."""
        return {name for name, t in conn.execute(_Q_TARGET, {"b_hash": path_hash(target)})
                if t == target}
