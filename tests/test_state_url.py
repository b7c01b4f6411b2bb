"""Where a job finds its state store: ``state=``, else env SPARKMARK_STATE, else the Spark conf
``spark.sparkmark.state`` (with ``spark.sparkmark.state.password``; what a cluster-mode driver,
which does not inherit the submitting process's environment, gets), else the SQLite default."""
from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from sparkmark.state import (DEFAULT_STATE_URL, STATE_CONF, STATE_PASSWORD_CONF,
                             resolve_state_url, split_password)


def test_the_order_argument_env_conf_default(monkeypatch):
    conf = {STATE_CONF: "sqlite:///from-conf.db"}.get
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    assert resolve_state_url("sqlite:///arg.db", conf) == "sqlite:///arg.db"
    assert resolve_state_url(None, conf) == "sqlite:///from-conf.db"
    assert resolve_state_url(None, {}.get) == DEFAULT_STATE_URL
    assert resolve_state_url(None) == DEFAULT_STATE_URL
    monkeypatch.setenv("SPARKMARK_STATE", "sqlite:///env.db")
    assert resolve_state_url(None, conf) == "sqlite:///env.db"


def test_the_password_conf_is_put_back_into_the_url(monkeypatch):
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    url = "postgresql+psycopg://etl:p%40ss:w@db.example:5432/sm?sslmode=require"
    bare, password = split_password(url)
    assert bare == "postgresql+psycopg://etl@db.example:5432/sm?sslmode=require"
    assert password == "p@ss:w"
    conf = {STATE_CONF: bare, STATE_PASSWORD_CONF: password}.get
    joined = resolve_state_url(None, conf)
    assert make_url(joined) == make_url(url) and make_url(joined).password == "p@ss:w"
    assert split_password("sqlite:///state.db") == ("sqlite:///state.db", None)


@pytest.fixture
def conf_state(spark, tmp_path, monkeypatch):
    """The session carries ``spark.sparkmark.state``; the process has no SPARKMARK_STATE."""
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    url = f"sqlite:///{tmp_path / 'conf-state.db'}"
    spark.conf.set(STATE_CONF, url)
    yield url
    spark.conf.unset(STATE_CONF)


def test_job_and_pipeline_find_the_store_in_spark_conf(spark, conf_state, tmp_path):
    from sparkmark import Job, Pipeline
    from sparkmark.state.ledger import ledger_rows
    with Job(spark).run("conf_job", ["--job-bookmark-option", "job-bookmark-enable"]) as job:
        job.write(spark.range(3), str(tmp_path / "out"), transformation_ctx="sink")
    assert job.store.url == conf_state
    [row] = ledger_rows(conf_state, job="conf_job")
    assert row["status"] == "SUCCEEDED"
    assert Pipeline("conf_pl", spark, primordial_date="2026-01-01").store.url == conf_state
    assert Job(spark, state=f"sqlite:///{tmp_path / 'arg.db'}").store.url != conf_state
