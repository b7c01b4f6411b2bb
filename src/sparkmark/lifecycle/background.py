"""The threads of a :class:`~sparkmark.lifecycle.job.Job`'s commit: audit rows written ahead
of it (:class:`EarlyAudit`) and the commit checks that only verify, run while its transaction
is written (:class:`ConcurrentChecks`).  Neither touches the Job: it hands them the store and
the checks, and waits for them.

Example::

    checks = ConcurrentChecks()
    checks.start([verify_files_unchanged])
    store.commit_run(..., before_commit=checks.wait)   # commits only once they passed
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

from sparkmark.core.run import FileRead
from sparkmark.engine.gcpause import gc_paused
from sparkmark.state import StateStore


class EarlyAudit:
    """One source's audit rows, written by a thread ahead of the run's commit; the commit
    waits for it (and fails with its error), a failing run cancels it.

    Example: ``audit = EarlyAudit(store, "orders", run_id, "src", files, now); audit.wait()``
    """

    def __init__(self, store: StateStore, job_name: str, run_id: str, ctx: str | None,
                 files: Sequence[FileRead], now: int) -> None:
        self.error: BaseException | None = None
        self.ctx = ctx
        self._args = (store, job_name, run_id, ctx, files, now)
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._write, name="sparkmark-audit",
                                        args=self._args, daemon=True)
        self._thread.start()

    def _write(self, store: StateStore, job_name: str, run_id: str, ctx: str | None,
               files: Sequence[FileRead], now: int) -> None:
        try:
            with gc_paused():  # a tuple per row: no collector passes over the listing
                store.stage_files(job_name, run_id, ctx, files, now=now,
                                  stop=self._cancel.is_set)
        except BaseException as e:  # noqa: BLE001 - raised by wait(), in the run's thread
            self.error = e

    def wait(self) -> None:
        self._thread.join()
        if self.error is not None:
            raise self.error

    def cancel(self) -> None:
        self._cancel.set()
        self._thread.join()

    def again(self) -> "EarlyAudit":
        """The same rows written once more, by a new thread (after their ctx's rows were
        deleted for another read's sake)."""
        return EarlyAudit(*self._args)



class ConcurrentChecks:
    """Commit checks that only verify, run on one thread while the commit's transaction is
    written (:meth:`Job.commit <sparkmark.lifecycle.job.Job.commit>`): :meth:`wait` is the
    transaction's last step, so it commits only once they passed, and the first one's
    exception (``error``) rolls it back.

    Example: ``checks = ConcurrentChecks(); checks.start([check]); checks.wait()``
    """

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, checks: Sequence[Callable[[], None]]) -> None:
        if checks:
            self._thread = threading.Thread(target=self._run, args=(list(checks),),
                                            name="sparkmark-commit-checks", daemon=True)
            self._thread.start()

    def _run(self, checks: list[Callable[[], None]]) -> None:
        try:
            for check in checks:
                check()
        except BaseException as e:  # noqa: BLE001 - handed to the committing thread
            self.error = e

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def wait(self) -> None:
        """Wait for the checks; raise the first one's exception."""
        self.join()
        if self.error is not None:
            raise self.error
