"""The state store: bookmarks (every version) and the run ledger, in one SQL database."""
from sparkmark.state.store import (DEFAULT_STATE_URL, STATE_CONF, STATE_PASSWORD_CONF,
                                   BookmarkVersion, RunStart, StateStore, open_store,
                                   refuse_default_on_cluster, resolve_state_url, split_password)

__all__ = ["DEFAULT_STATE_URL", "STATE_CONF", "STATE_PASSWORD_CONF", "BookmarkVersion", "RunStart",
           "StateStore", "open_store", "refuse_default_on_cluster", "resolve_state_url",
           "split_password"]
