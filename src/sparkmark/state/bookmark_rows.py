"""Bookmark versions (``sm_bookmark_versions``): decoding them, reading the current one and the
history, and the operator's changes (reset, rewind, set, rollback), each a new version with the
job pointed at it.  A mixin of :class:`~sparkmark.state.StateStore`; an administrative change
waits for a live run's lease, so it builds on :class:`~sparkmark.state.lease_rows.LeaseRows`.

Example: ``store.bookmark_entry("orders")["JobBookmark"]``
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from sparkmark.core.errors import BookmarkConflictError, StateCorruptError, UnknownRunError
from sparkmark.core.status import PublishState, RunStatus
from sparkmark.state.lease_rows import LeaseRows
from sparkmark.state.schema import jobs, runs, versions
from sparkmark.state.store_base import cap

#: one bookmark version of a job, built once (as the statements in
#: :mod:`~sparkmark.state.run_rows`)
_Q_VERSION = select(versions).where(versions.c.job_name == bindparam("b_job"),
                                    versions.c.version == bindparam("b_version"))


@dataclass
class BookmarkVersion:
    job_name: str
    version: int
    kind: str
    run_id: str | None
    previous_run_id: str | None
    source_run_id: str | None
    run_number: int
    attempt: int
    created_ts: int
    state: dict[str, Any]

    def as_entry(self, *, run: int | None = None, attempt: int | None = None) -> dict[str, Any]:
        """Shaped like Glue's ``JobBookmarkEntry``."""
        return {
            "JobName": self.job_name,
            "Version": self.version,
            "Run": self.run_number if run is None else run,
            "Attempt": self.attempt if attempt is None else attempt,
            "PreviousRunId": self.previous_run_id,
            "RunId": self.run_id,
            "JobBookmark": self.state,
        }


class BookmarkRows(LeaseRows):
    """Reading bookmark versions and changing them by hand."""

    @staticmethod
    def _state(job_name: str, version: int, text: Any) -> dict[str, Any]:
        """A bookmark version's state, decoded; a clear error when it is not a JSON object."""
        try:
            state = json.loads(text)
            if not isinstance(state, dict):
                raise ValueError("not a JSON object")
        except (ValueError, TypeError) as e:
            raise StateCorruptError(
                f"bookmark of job {job_name!r} version {version} is corrupt ({e}); "
                f"rewind with 'sparkmark bookmark reset {job_name} --run-id RUN' to an "
                "earlier run, or reset it") from None
        return state

    def _version_from_row(self, row: Any) -> BookmarkVersion:
        state = self._state(row.job_name, row.version, row.state)
        return BookmarkVersion(
            job_name=row.job_name, version=row.version, kind=row.kind, run_id=row.run_id,
            previous_run_id=row.previous_run_id, source_run_id=row.source_run_id,
            run_number=row.run_number, attempt=row.attempt, created_ts=row.created_ts,
            state=state)

    @staticmethod
    def _empty_version(job: Any) -> BookmarkVersion:
        return BookmarkVersion(job_name=job.job_name, version=0, kind="initial", run_id=None,
                               previous_run_id=None, source_run_id=None, run_number=0,
                               attempt=0, created_ts=job.created_ts, state={})

    def _version(self, conn: Connection, job: Any, version: int) -> BookmarkVersion:
        if version == 0:
            return self._empty_version(job)
        row = conn.execute(_Q_VERSION, {"b_job": job.job_name, "b_version": version}).first()
        if row is None:
            self._refuse_missing_version(job.job_name, version)
        return self._version_from_row(row)

    @staticmethod
    def _refuse_missing_version(job_name: str, version: int) -> NoReturn:
        raise StateCorruptError(
            f"job {job_name!r} points at bookmark version {version}, which is missing; "
            f"reset the bookmark ('sparkmark bookmark reset {job_name}')")

    def _version_of_run(self, conn: Connection, job_name: str, run_id: str) -> BookmarkVersion:
        row = conn.execute(select(versions).where(
            versions.c.job_name == job_name, versions.c.run_id == run_id,
            versions.c.kind == "commit")).first()
        if row is None:
            known = conn.execute(select(runs.c.status).where(
                runs.c.run_id == run_id, runs.c.job_name == job_name)).scalar()
            why = (f"it ended {known} without committing a bookmark" if known
                   else "no such run of this job")
            raise UnknownRunError(
                f"run {cap(run_id)!r} of job {cap(job_name)!r} has no committed bookmark ({why}); "
                f"'sparkmark bookmark history {job_name}' lists the runs that committed one")
        return self._version_from_row(row)

    def validate_runs(self, job_name: str, run_ids: list[str]) -> list[BookmarkVersion]:
        """The versions committed by these runs (pause from/to); clear error if unknown."""
        with self.tx("reading bookmarks") as conn:
            self._require_job(conn, job_name)
            return [self._version_of_run(conn, job_name, r) for r in run_ids]

    def bookmark_entry(self, job_name: str, run_id: str | None = None) -> dict[str, Any]:
        """Glue's ``JobBookmarkEntry`` for the current bookmark, or the one run R committed."""
        with self.tx("reading bookmarks") as conn:
            job = self._require_job(conn, job_name)
            if run_id is None:
                v = self._version(conn, job, job.current_version)
                return v.as_entry(run=job.run_number, attempt=self._shown_attempt(conn, job))
            return self._version_of_run(conn, job_name, run_id).as_entry()

    @staticmethod
    def _shown_attempt(conn: Connection, job: Any) -> int:
        """Glue's Attempt: the failed attempts since the last success while there are any,
        else the attempt number of the run that last succeeded (1 for a committed retry
        after one failure; 0 again after a clean run)."""
        if job.attempt or job.last_run_id is None:
            return int(job.attempt)
        last = conn.execute(select(runs.c.attempt).where(
            runs.c.run_id == job.last_run_id)).scalar()
        return int(last or 0)

    def current_version(self, job_name: str) -> BookmarkVersion:
        with self.tx("reading bookmarks") as conn:
            job = self._require_job(conn, job_name)
            return self._version(conn, job, job.current_version)

    def history(self, job_name: str, last: int | None = None) -> list[BookmarkVersion]:
        """Every bookmark version of the job, oldest first, from the initial (empty) one;
        ``last``: only the newest N (a LIMIT in the query).

        Example: ``store.history("orders", last=200)[-1].version``
        """
        with self.tx("reading bookmarks") as conn:
            job = self._require_job(conn, job_name)
            q = (select(versions).where(versions.c.job_name == job_name)
                 .order_by(versions.c.version.desc()))
            if last is not None:
                q = q.limit(last)
            rows = conn.execute(q).all()[::-1]
            found = [self._version_from_row(r) for r in rows]
            if last is None or len(found) < last:
                found.insert(0, self._empty_version(job))
            return found[-last:] if last is not None else found

    def reset(self, job_name: str, run_id: str | None = None, *, now: int) -> int:
        """Reset (empty state) or rewind (state committed by ``run_id``) as a new version."""
        with self.tx("resetting a bookmark") as conn:
            return self._rewind(conn, job_name, run_id, now=now,
                                kind="rewind" if run_id else "reset", action="reset its bookmark")

    def rollback_runs(self, cuts: list[tuple[str, list[str], str | None]], *, now: int) -> None:
        """Pipeline rollback, one transaction for every module: for each
        ``(job_name, run_ids, keep_run_id)`` mark those SUCCEEDED/EMPTY runs ``ROLLED_BACK``
        (``publish_state='removing'`` until their output is deleted) and rewind the job's
        bookmark to what ``keep_run_id`` committed (``{}`` when None) as a new version of kind
        ``rollback``.  Refused (nothing changed) if any of the jobs has an active run."""
        with self.tx("rolling back runs") as conn:
            for job_name, run_ids, keep_run_id in cuts:
                self._rewind(conn, job_name, keep_run_id, now=now, kind="rollback",
                             action="roll back")
                if run_ids:
                    conn.execute(runs.update().where(
                        runs.c.job_name == job_name, runs.c.run_id.in_(list(run_ids)),
                        runs.c.status.in_((RunStatus.SUCCEEDED, RunStatus.EMPTY))).values(
                        status=RunStatus.ROLLED_BACK, publish_state=PublishState.REMOVING))

    def reset_with_rollback(self, job_name: str, run_id: str | None, run_ids: list[str], *,
                            now: int) -> int:
        """``reset`` plus marking ``run_ids`` (the job's SUCCEEDED/EMPTY runs after ``run_id``)
        ``ROLLED_BACK`` / ``publish_state='removing'``, in one transaction. Refused, nothing
        changed, if those runs are no longer exactly the runs after ``run_id`` (a run committed
        since they were listed)."""
        with self.tx("resetting a bookmark") as conn:
            version = self._rewind(conn, job_name, run_id, now=now,
                                   kind="rewind" if run_id else "reset",
                                   action="reset its bookmark")
            after = 0 if run_id is None else conn.execute(select(runs.c.run_number).where(
                runs.c.run_id == run_id)).scalar() or 0
            now_later = set(conn.execute(select(runs.c.run_id).where(
                runs.c.job_name == job_name, runs.c.run_number > after,
                runs.c.status.in_(RunStatus.progress()))).scalars())
            if now_later != set(run_ids):
                raise BookmarkConflictError(
                    f"the runs of job {job_name!r} changed while the reset was planned; nothing "
                    "was changed. Run the reset again.")
            if run_ids:
                conn.execute(runs.update().where(runs.c.run_id.in_(list(run_ids))).values(
                    status=RunStatus.ROLLED_BACK, publish_state=PublishState.REMOVING))
            return version

    def set_element(self, job_name: str, ctx: str, element: Any, *, now: int,
                    expect_version: int) -> int:
        """A new version (kind ``set``) equal to the current one with ``ctx``'s element replaced;
        refused (nothing changed) while a run is live or if the bookmark moved since
        ``expect_version`` was read."""
        with self.tx("setting a bookmark") as conn:
            job = self._require_job(conn, job_name, lock=True)
            self._refuse_live_run(job, now, "set its bookmark")
            if job.current_version != expect_version:
                raise BookmarkConflictError(
                    f"the bookmark of job {job_name!r} changed while it was being set (version "
                    f"{expect_version} -> {job.current_version}); nothing was changed, try again")
            state = dict(self._version(conn, job, job.current_version).state)
            state[ctx] = element
            return self._admin_version(conn, job, state, kind="set", source_run_id=None, now=now)

    def _rewind(self, conn: Connection, job_name: str, run_id: str | None, *, now: int,
                kind: str, action: str) -> int:
        """Add a version holding the state ``run_id`` committed (``{}`` when None) and point
        the job at it; refused while the job has a live run."""
        job = self._require_job(conn, job_name, lock=True)
        self._refuse_live_run(job, now, action)
        if run_id is not None:
            self.refuse_rolled_back(conn, job_name, run_id)
        state = {} if run_id is None else self._version_of_run(conn, job_name, run_id).state
        return self._admin_version(conn, job, state, kind=kind, source_run_id=run_id, now=now)

    @staticmethod
    def refuse_rolled_back(conn: Connection, job_name: str, run_id: str) -> None:
        """Rewinding to a ``ROLLED_BACK`` run is refused: its output was removed (or is being
        removed), so the state it committed would skip records no target holds, and the runs
        after it would lose their output too.

            store.refuse_rolled_back(conn, "orders", run_id)   # raises for a rolled-back run
        """
        status = conn.execute(select(runs.c.status).where(
            runs.c.run_id == run_id, runs.c.job_name == job_name)).scalar()
        if status == RunStatus.ROLLED_BACK:
            raise UnknownRunError(
                f"run {cap(run_id)!r} of job {cap(job_name)!r} was rolled back (an earlier reset "
                "or rollback removed its output), so rewinding to it would skip records no "
                "target holds; nothing was changed. Rewind to a run that is not ROLLED_BACK: "
                f"'sparkmark report --job {job_name}' shows each run's status, "
                f"'sparkmark bookmark history {job_name}' the bookmark versions")

    def _admin_version(self, conn: Connection, job: Any, state: dict[str, Any], *, kind: str,
                       source_run_id: str | None, now: int) -> int:
        """Add a bookmark version made by an operator (reset, rewind, set) and point the job
        at it; history is kept."""
        version = job.current_version + 1
        conn.execute(versions.insert().values(
            job_name=job.job_name, version=version, kind=kind, run_id=None,
            previous_run_id=job.last_run_id, source_run_id=source_run_id,
            run_number=job.run_number, attempt=job.attempt, created_ts=now,
            state=json.dumps(state, sort_keys=True)))
        conn.execute(jobs.update().where(jobs.c.job_name == job.job_name)
                     .values(current_version=version))
        return version
