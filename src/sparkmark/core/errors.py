"""Every error sparkmark raises on purpose derives from :class:`SparkmarkError`.

Each message says what is wrong and what to do about it; the CLI prints it as one line and exits
non-zero.  None of these errors is raised after committed state was changed.
"""
from __future__ import annotations


class SparkmarkError(Exception):
    """Base class: a user-facing error with a clear message."""

    exit_code = 2


class ConfigError(SparkmarkError, ValueError):
    """A bad argument or option value (job arguments, reader/writer options, CLI flags)."""


class StateStoreError(SparkmarkError):
    """The state store cannot be opened, reached or used (bad URL, server down, newer schema)."""


class StateCorruptError(StateStoreError):
    """The store holds something sparkmark cannot use: a bookmark row that cannot be decoded, a
    ledger status it does not know, a job's runs without its job row (edited in the store)."""


class UnknownJobError(SparkmarkError, LookupError):
    """No job of that name in the state store."""


class UnknownRunError(SparkmarkError, LookupError):
    """No run with that id (for that job)."""


class ConcurrentRunError(SparkmarkError):
    """Another run of the same job is active (its lease is alive)."""


class BookmarkConflictError(SparkmarkError):
    """The bookmark changed under a running job (reset, rewind or a take-over); nothing committed."""


class JobStateError(SparkmarkError):
    """A Job method was called in the wrong order (e.g. read before init, commit twice)."""


class SourceError(SparkmarkError):
    """An input cannot be listed or read (missing path, unknown format, corrupt file, bad key)."""


class SinkError(SparkmarkError):
    """An output cannot be written (target is a file, incompatible schema, no permission)."""


class PipelineError(SparkmarkError):
    """A pipeline definition or a pipeline command is invalid (cycle, unknown module, bad date)."""
