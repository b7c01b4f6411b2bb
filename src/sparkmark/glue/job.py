"""Glue's ``Job``: ``Job(glueContext)``, ``init(name, args)``, ``commit()`` on sparkmark bookmarks.

``init`` starts a :class:`sparkmark.Job` run (state store from env ``SPARKMARK_STATE``, else
sparkmark's default) with the arguments from ``getResolvedOptions`` — ``job_bookmark_option``,
``job_bookmark_from``/``job_bookmark_to`` as in Glue.  Reads and writes through the
``GlueContext`` then use the run's bookmarks and exactly-once sinks; ``commit`` saves the state,
the ledger row and publishes the output in one step.

A script that dies with an exception has its run recorded ``FAILED`` (with the error) and its
staged output removed.  A script that ends without ``job.commit()`` exits 0 in Glue, keeping
its output and leaving the bookmark where it was; here:

- if no bookmarked source staged state that a commit would save, the run is finished
  ``SUCCEEDED`` with the note ``not committed: bookmark unchanged`` (in the ledger config), and
  its output is published;
- otherwise its output is discarded and the run recorded ``FAILED`` with a message saying why
  (publishing output whose input the bookmark does not cover would duplicate it next run).

    job = Job(glueContext)
    job.init(args["JOB_NAME"], args)
    ...
    job.commit()
"""
from __future__ import annotations

import atexit
import sys
import weakref
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from sparkmark.lifecycle import job as _sm_job
from sparkmark.core.errors import ConfigError
from sparkmark.glue._common import attribute_error, module_getattr

if TYPE_CHECKING:
    from sparkmark.glue.context import GlueContext

NOT_COMMITTED_NOTE = "not committed: bookmark unchanged"

_HINTS = {
    "continuation_options": "sparkmark reads --job-bookmark-option (the old "
                            "--continuation-option values are translated by getResolvedOptions)",
}


class Job:
    """``Job(glueContext)``; ``state``/``clock`` are sparkmark extras (default: env, system).

        job = Job(glueContext)
        job.init(args["JOB_NAME"], args)
        ...
        job.commit()
    """

    def __init__(self, glue_context: "GlueContext", state: str | None = None, clock=None):
        from sparkmark.glue.context import GlueContext
        if not isinstance(glue_context, GlueContext):
            raise ConfigError(f"Job needs the GlueContext, not {type(glue_context).__name__}: "
                              "job = Job(glueContext)")
        self._glue_context = glue_context
        self._job = _sm_job.Job(glue_context.spark_session, state=state, clock=clock)
        glue_context.attach_job(self)

    @property
    def sparkmark_job(self) -> _sm_job.Job:
        """The :class:`sparkmark.Job` behind this Glue job (run id, ledger, ...).

            job.sparkmark_job.run_id
        """
        return self._job

    @property
    def run_id(self) -> str | None:
        """The current (or last) run's id: ``job.run_id``.

            print(job.run_id)
        """
        return self._job.run_id

    def init(self, job_name: str | None = None,
             args: Mapping[str, Any] | Sequence[str] | None = None) -> "Job":
        """Start the run (Glue: ``job.init(args['JOB_NAME'], args)``; an argv list works too)."""
        self._job.init(job_name, dict(args) if isinstance(args, Mapping) else args)
        _install_hooks()
        _RUNNING.add(self)
        return self

    def isInitialized(self) -> bool:
        """Whether a run is in progress: ``job.isInitialized()``."""
        return self._job.active

    def commit(self) -> int:
        """Save the bookmark (when enabled), finish the ledger row and publish the output:
        ``job.commit()``."""
        return self._job.commit()

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("Job", name, _HINTS)


_RUNNING: "weakref.WeakSet[Job]" = weakref.WeakSet()
_hooks_installed = False


def finish_running_jobs(error: BaseException | None = None) -> None:
    """End every Glue job of this process still running, as the end of a Glue script does.

    With ``error`` (the script raised) each run is recorded ``FAILED`` with that error and its
    staged output removed; without, each run ends by the no-``job.commit()`` rule (see the
    module docstring).  Called by the exit hooks; call it yourself when one process runs
    several scripts::

        runpy.run_path("job.py", run_name="__main__")
        finish_running_jobs()
    """
    for glue_job in list(_RUNNING):
        job = glue_job.sparkmark_job
        if not job.active:
            continue
        try:
            if error is not None:
                job.fail(error)
                continue
            staged = sorted(job.staged_state)
            if not staged:
                job.commit(keep_bookmark=True, note=NOT_COMMITTED_NOTE)
                continue
            job.fail(f"the script ended without job.commit() after bookmarked source(s) "
                     f"{staged} read new input: the run's output was discarded (keeping it "
                     "would write that input again on the next run, since the bookmark did "
                     "not move); call job.commit() at the end of the script")
        except Exception:  # noqa: BLE001 - the script's own end is reported anyway
            pass


def _install_hooks() -> None:
    """Once per process: an uncaught exception or an exit without commit fails running jobs."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    previous = sys.excepthook

    def excepthook(tp, value, tb):
        finish_running_jobs(value)
        previous(tp, value, tb)

    sys.excepthook = excepthook
    atexit.register(finish_running_jobs)


__getattr__ = module_getattr("sparkmark.glue.job", {})
