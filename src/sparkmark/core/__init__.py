"""The words every layer shares: errors, statuses, the clock, job options, file formats, secrets
and the run-context seam (:mod:`sparkmark.core.run`) that sources and sinks talk to.

Nothing here imports another sparkmark package, Spark or a database::

    from sparkmark.core.errors import ConfigError
    from sparkmark.core.status import RunStatus
"""
