"""The run lifecycle: :class:`~sparkmark.lifecycle.job.Job` (init, read, write, commit or fail)
and :class:`~sparkmark.lifecycle.pipeline.Pipeline` (modules, windows, gating, rollback).

Both are exported by the package root::

    from sparkmark import Job, Pipeline
"""
