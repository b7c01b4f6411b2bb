"""The state store: one interface over SQLite and PostgreSQL (SQLAlchemy 2 Core).

Everything that changes committed state happens in one transaction: a commit writes the new
bookmark version, moves the job's pointer and counters, releases the lease and finishes the ledger
row together.  Rows are locked with ``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite every write
transaction starts with ``BEGIN IMMEDIATE`` so that writers queue instead of deadlocking.

:class:`StateStore` is the one class callers use; it is composed of mixins, each in its own
module over :class:`~sparkmark.state.store_base.StoreBase` (engine, transactions, the checks
that the store is still the one it opened): :mod:`~sparkmark.state.bookmark_rows` (bookmark
versions and the operator's changes), :mod:`~sparkmark.state.run_rows` (a run's ledger row
from begin to commit), :mod:`~sparkmark.state.run_reads` (ledger reads),
:mod:`~sparkmark.state.lease_rows` (heartbeat, release, outcome under the lock) and
:mod:`~sparkmark.state.audit` (the per-file audit).  The tables and their upgrades are in
:mod:`~sparkmark.state.schema`.

    store = open_store("sqlite:///.sparkmark/state.db")
    store.current_version("orders").state
"""
from __future__ import annotations

import os

from sparkmark.state.bookmark_rows import BookmarkVersion
from sparkmark.state.run_reads import RunReads
from sparkmark.state.run_rows import RunRows, RunStart
from sparkmark.state.store_base import cap, redact

__all__ = ["DEFAULT_STATE_URL", "ENV_VAR", "BookmarkVersion", "RunStart", "StateStore", "cap",
           "open_store", "redact", "resolve_state_url"]

DEFAULT_STATE_URL = "sqlite:///.sparkmark/state.db"
ENV_VAR = "SPARKMARK_STATE"


def resolve_state_url(state: str | None = None) -> str:
    """``state=`` argument, else env ``SPARKMARK_STATE``, else the SQLite default."""
    return state or os.environ.get(ENV_VAR) or DEFAULT_STATE_URL


def open_store(state: str | None = None, *, create: bool = True) -> "StateStore":
    """The state store at ``state`` (URL, env ``SPARKMARK_STATE``, or the default).
    ``create=False`` (read-only commands) refuses a missing store instead of creating one.

        store = open_store("sqlite:///.sparkmark/state.db", create=False)
    """
    return StateStore(resolve_state_url(state), create=create)


class StateStore(RunRows, RunReads):
    """Bookmarks (all versions) and the ledger for every job, behind one small interface."""
