"""The state store: bookmarks (every version) and the run ledger, in one SQL database."""
from sparkmark.state.store import (DEFAULT_STATE_URL, BookmarkVersion, RunStart, StateStore, open_store,
                    refuse_default_on_cluster, resolve_state_url)

__all__ = ["DEFAULT_STATE_URL", "BookmarkVersion", "RunStart", "StateStore", "open_store",
           "refuse_default_on_cluster", "resolve_state_url"]
