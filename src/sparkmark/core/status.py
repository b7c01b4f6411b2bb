"""Statuses as enums: one home for the words the store, the planners, the sinks and the ledger use.

Both enums are ``str`` subclasses, so a status read back from the database (a plain string)
compares equal to its member, and a member can be written anywhere a string is expected::

    >>> from sparkmark.core.status import RunStatus
    >>> RunStatus.SUCCEEDED == "SUCCEEDED"
    True
    >>> RunStatus("EMPTY") in RunStatus.progress()
    True
"""
from __future__ import annotations

from enum import Enum
from typing import Iterable


class RunStatus(str, Enum):
    """How a run ended, or ``RUNNING`` while it holds the job's lease.

    Example::

        if row["status"] == RunStatus.FAILED: ...
    """

    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    EMPTY = "EMPTY"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    ROLLED_BACK = "ROLLED_BACK"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def terminal(cls) -> tuple["RunStatus", ...]:
        """Every status a finished run can have: ``RunStatus.terminal()``."""
        return (cls.SUCCEEDED, cls.EMPTY, cls.FAILED, cls.SKIPPED, cls.ROLLED_BACK)

    @classmethod
    def progress(cls) -> tuple["RunStatus", ...]:
        """The statuses that move a job forward (a window, a bookmark): SUCCEEDED and EMPTY."""
        return (cls.SUCCEEDED, cls.EMPTY)

    @classmethod
    def undone(cls) -> tuple["RunStatus", ...]:
        """The statuses whose staged output must never be published: FAILED, SKIPPED,
        ROLLED_BACK."""
        return (cls.FAILED, cls.SKIPPED, cls.ROLLED_BACK)


class PublishState(str, Enum):
    """Where a run's staged output is on its way into the targets (ledger ``publish_state``).

    ``STAGED`` (written aside, run not committed) → ``PENDING`` (committed, not yet moved into
    place) → ``DONE``; a run that did not commit ends ``DISCARDED``; a rolled-back run goes
    ``REMOVING`` → ``REMOVED``.  Example::

        store.update_run(run_id, publish_state=PublishState.DONE)
    """

    STAGED = "staged"
    PENDING = "pending"
    DONE = "done"
    DISCARDED = "discarded"
    REMOVING = "removing"
    REMOVED = "removed"

    def __str__(self) -> str:
        return self.value


def parse_statuses(values: "str | Iterable[str] | None") -> tuple[str, ...] | None:
    """Run statuses as a user gave them (repeated, comma-separated, any case) -> the stored
    values, in order, once each; ``None`` for none given.  An unknown word is a
    :class:`~sparkmark.core.errors.ConfigError` naming the valid ones.

    >>> parse_statuses(["failed,Succeeded", "FAILED"])
    ('FAILED', 'SUCCEEDED')
    >>> parse_statuses(None) is None
    True
    """
    if values is None:
        return None
    items = [values] if isinstance(values, str) else list(values)
    found: list[str] = []
    for item in items:
        for word in str(item).split(","):
            word = word.strip()
            if not word:
                continue
            try:
                value = RunStatus(word.upper()).value
            except ValueError:
                from sparkmark.core.errors import ConfigError
                raise ConfigError(
                    f"unknown status {word[:40]!r}; use one of "
                    f"{', '.join(s.value for s in RunStatus)} (any case, comma-separated)"
                ) from None
            if value not in found:
                found.append(value)
    return tuple(found) or None


def plain(value: object) -> object:
    """An enum member as its plain value (for SQL parameters and JSON); anything else as is.

    Example: ``plain(RunStatus.FAILED) == "FAILED"``
    """
    return value.value if isinstance(value, Enum) else value
