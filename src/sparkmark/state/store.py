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
from typing import Any, Callable, Optional

from sparkmark.state.bookmark_rows import BookmarkVersion
from sparkmark.state.run_reads import RunReads
from sparkmark.state.run_rows import RunRows, RunStart
from sparkmark.state.store_base import cap, redact

__all__ = ["DEFAULT_STATE_URL", "ENV_VAR", "STATE_CONF", "STATE_PASSWORD_CONF", "BookmarkVersion",
           "RunStart", "StateStore", "cap", "open_store", "redact", "refuse_default_on_cluster",
           "resolve_state_url", "split_password"]

DEFAULT_STATE_URL = "sqlite:///.sparkmark/state.db"
ENV_VAR = "SPARKMARK_STATE"


#: The Spark conf a cluster-mode driver finds its state store in (it does not inherit the
#: submitting process's environment): the URL without its password ...
STATE_CONF = "spark.sparkmark.state"
#: ... and the password, if the URL has one (Spark masks a conf named like a password in its UI,
#: event log and ``--verbose`` output).
STATE_PASSWORD_CONF = "spark.sparkmark.state.password"

#: Reads one Spark conf key: its value, or None when it is not set.
ConfGetter = Callable[[str], Optional[str]]


def split_password(url: str) -> tuple[str, str | None]:
    """``url`` without its password, and the password (None when it has none).

        >>> split_password("postgresql+psycopg://etl:s3cret@db/state")
        ('postgresql+psycopg://etl@db/state', 's3cret')
    """
    from sqlalchemy.engine import URL, make_url
    u = make_url(url)
    if u.password is None:
        return url, None
    bare = URL.create(u.drivername, username=u.username, host=u.host, port=u.port,
                      database=u.database, query=u.query)
    return bare.render_as_string(hide_password=False), str(u.password)


def _from_conf(conf: ConfGetter) -> str | None:
    url = conf(STATE_CONF)
    if not url:
        return None
    password = conf(STATE_PASSWORD_CONF)
    if not password:
        return url
    from sqlalchemy.engine import make_url
    return make_url(url).set(password=password).render_as_string(hide_password=False)


def resolve_state_url(state: str | None = None, conf: ConfGetter | None = None) -> str:
    """``state=`` argument, else env ``SPARKMARK_STATE``, else the Spark conf
    ``spark.sparkmark.state`` (with ``spark.sparkmark.state.password``) when ``conf`` reads
    one, else the SQLite default.

        resolve_state_url(None, compat.spark_conf_getter(spark))  # no argument, no env var
    """
    return (state or os.environ.get(ENV_VAR) or (_from_conf(conf) if conf else None)
            or DEFAULT_STATE_URL)


def refuse_default_on_cluster(spark: Any, state: Any = None) -> None:
    """Refuse the default SQLite state file on a cluster-mode driver.

    With no ``state=``, no env ``SPARKMARK_STATE`` and no conf ``spark.sparkmark.state``, the
    store is
    ``sqlite:///.sparkmark/state.db`` under the working directory.  A driver started with
    ``spark.submit.deployMode=cluster`` (YARN, Kubernetes, EMR steps) runs in a container that
    is thrown away after the job, and that file with it: every run would be a first run and
    read everything.  A given state (a URL, even a SQLite one, or a store) is never refused; nor
    is a client-mode or local driver, nor Spark Connect (the store is the client's).

    Example: ``refuse_default_on_cluster(spark, None)  # ConfigError in cluster mode``
    """
    from sparkmark.core.errors import ConfigError
    from sparkmark.engine import compat
    given = not (state is None or isinstance(state, str) and not state)
    if spark is None or given or os.environ.get(ENV_VAR) or compat.is_connect(spark):
        return
    try:
        mode = spark.conf.get("spark.submit.deployMode", None)
        if spark.conf.get(STATE_CONF, None):  # the store given as Spark conf
            return
    except Exception:  # noqa: BLE001 - a session that cannot answer: nothing to go on
        return
    if str(mode or "").strip().lower() != "cluster":
        return
    raise ConfigError(
        f"no state store was given, and the default ({DEFAULT_STATE_URL}, a file in the "
        "working directory) would live on a cluster-mode driver (spark.submit.deployMode="
        "cluster), whose container is thrown away after the job: every run would be a first "
        "run and read everything. Give a shared store: Job(spark, state='postgresql+psycopg://"
        f"user@host:5432/sparkmark'), --conf {STATE_CONF}=URL (its password in "
        f"{STATE_PASSWORD_CONF}), or env {ENV_VAR} for the driver (YARN: --conf "
        f"spark.yarn.appMasterEnv.{ENV_VAR}=URL; Kubernetes: --conf "
        f"spark.kubernetes.driverEnv.{ENV_VAR}=URL). To keep a SQLite file anyway, give its "
        "URL as state=")


def open_store(state: str | None = None, *, create: bool = True,
               conf: ConfGetter | None = None) -> "StateStore":
    """The state store at ``state`` (URL, env ``SPARKMARK_STATE``, the Spark conf that
    ``conf`` reads, or the default). ``create=False`` (read-only commands) refuses a missing
    store instead of creating one.

        store = open_store("sqlite:///.sparkmark/state.db", create=False)
    """
    return StateStore(resolve_state_url(state, conf), create=create)


class StateStore(RunRows, RunReads):
    """Bookmarks (all versions) and the ledger for every job, behind one small interface."""
