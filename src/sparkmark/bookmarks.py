"""Bookmark administration in Python — the same calls as ``sparkmark bookmark ...``.

    from sparkmark import Bookmarks
    bm = Bookmarks()                    # state: URL, env SPARKMARK_STATE, or the default
    bm.get("orders")                    # Glue's JobBookmarkEntry shape, as a dict
    bm.get("orders", run_id=R)          # the bookmark that run R committed
    bm.history("orders")                # every version, oldest first
    bm.reset("orders")                  # next enabled run reprocesses everything
    bm.reset("orders", run_id=R)        # rewind: next run reprocesses only what came after R
"""
from __future__ import annotations

from typing import Any

from .clock import Clock, system_clock
from .state import StateStore, open_store


class Bookmarks:
    """Bookmark administration: the Python side of ``sparkmark bookmark ...`` (SPEC §7).

    Example::

        bm = Bookmarks("sqlite:///.sparkmark/state.db")
        bm.get("orders")["JobBookmark"]       # the state elements by transformation_ctx
        bm.reset("orders", run_id=R)          # rewind: the next run reprocesses after R
    """

    def __init__(self, state: str | StateStore | None = None, clock: Clock | None = None):
        self.store = state if isinstance(state, StateStore) else open_store(state)
        self.clock = clock or system_clock

    def get(self, job_name: str, run_id: str | None = None) -> dict[str, Any]:
        """The job's bookmark (or the one run ``run_id`` committed) shaped like Glue's
        ``JobBookmarkEntry``: ``JobName, Version, Run, Attempt, PreviousRunId, RunId,
        JobBookmark``.  Example: ``Bookmarks().get("orders")["Version"]``"""
        return self.store.bookmark_entry(job_name, run_id)

    def history(self, job_name: str) -> list[dict[str, Any]]:
        """Every bookmark version of the job, oldest first, each with ``Kind`` (commit, reset,
        rewind, ...), ``CreatedTs`` and ``RewoundToRunId``.

        Example: ``[h["Kind"] for h in Bookmarks().history("orders")]``
        """
        out = []
        for v in self.store.history(job_name):
            entry = v.as_entry()
            entry.update(Kind=v.kind, CreatedTs=v.created_ts, RewoundToRunId=v.source_run_id)
            out.append(entry)
        return out

    def reset(self, job_name: str, run_id: str | None = None) -> int:
        """Reset (or rewind to run ``run_id``); returns the new version. History is kept.

        Example: ``Bookmarks().reset("orders")`` — the next enabled run reads everything.
        """
        return self.store.reset(job_name, run_id, now=self.clock())
