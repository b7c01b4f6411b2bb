"""State store errors: unreachable servers, malformed URLs, newer schemas, no leaked secrets."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

from sparkmark import Bookmarks, Job
from sparkmark.errors import StateStoreError, UnknownJobError
from sparkmark.state import DEFAULT_STATE_URL, open_store, resolve_state_url
from sparkmark.state.schema import SCHEMA_VERSION


def test_unreachable_postgres_is_one_clear_error_without_password():
    url = "postgresql+psycopg://alice:s3cr3t-pw@127.0.0.1:1/state"
    with pytest.raises(StateStoreError) as e:
        open_store(url)
    msg = str(e.value)
    assert "s3cr3t-pw" not in msg and "***" in msg
    assert "unreachable" in msg and "SPARKMARK_STATE" in msg


@pytest.mark.parametrize("url", ["not a url", "://nothing", "mysql+nodriver://x/y"])
def test_malformed_or_unsupported_url(url):
    with pytest.raises(StateStoreError) as e:
        open_store(url)
    assert "sqlite:///" in str(e.value)  # says what a good URL looks like


def test_plain_postgresql_url_uses_psycopg3(pg_server):
    url = pg_server.create_database("plainurl").replace("postgresql+psycopg://", "postgresql://")
    store = open_store(url)
    assert store.engine.url.get_driver_name() == "psycopg"


def test_resolution_order(monkeypatch, tmp_path):
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    assert resolve_state_url(None) == DEFAULT_STATE_URL
    monkeypatch.setenv("SPARKMARK_STATE", f"sqlite:///{tmp_path}/env.db")
    assert resolve_state_url(None).endswith("env.db")
    assert resolve_state_url("sqlite:///x.db") == "sqlite:///x.db"


def test_default_store_lives_under_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    monkeypatch.chdir(tmp_path)
    Job(None).init("here", {}).commit()
    assert (tmp_path / ".sparkmark" / "state.db").is_file()


def test_schema_is_versioned_and_a_newer_schema_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path}/v.db"
    open_store(url)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        assert conn.execute(sa.text("SELECT value FROM sm_meta WHERE key='schema_version'")
                            ).scalar() == str(SCHEMA_VERSION)
        conn.execute(sa.text("UPDATE sm_meta SET value='999' WHERE key='schema_version'"))
    engine.dispose()
    from sparkmark.state import store as store_mod
    store_mod._ENGINES.pop(url, None)
    with pytest.raises(StateStoreError, match="newer than this sparkmark"):
        open_store(url)


def test_unknown_job(state_url):
    with pytest.raises(UnknownJobError, match="no job named 'ghost'"):
        Bookmarks(state_url).get("ghost")


def test_a_deleted_sqlite_file_is_not_served_from_the_engine_cache(tmp_path):
    url = f"sqlite:///{tmp_path}/gone/state.db"
    Job(None, state=url).init("was-here", {}).commit()
    import shutil
    shutil.rmtree(tmp_path / "gone")  # e.g. rm -r .sparkmark between two runs in one notebook
    with pytest.raises(UnknownJobError):
        Bookmarks(url).get("was-here")
    assert (tmp_path / "gone" / "state.db").is_file()
