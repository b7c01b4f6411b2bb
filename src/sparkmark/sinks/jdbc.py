"""Exactly-once JDBC targets: stage in ``<table>__sm_stage``, publish in one DB transaction.

``write_jdbc`` appends the stamped rows to the staging table (Spark's JDBC writer; the table is
created on first use).  After the state store commit, :func:`publish_jdbc` runs, in one
transaction of the target database::

    INSERT INTO <table> (cols) SELECT cols FROM <table>__sm_stage WHERE sm_run_id = 'R';
    DELETE FROM <table>__sm_stage WHERE sm_run_id = 'R';

so readers of ``<table>`` never see rows of a run that did not commit, and repeating the publish
after a crash inserts nothing twice.  Passwords are never written to the ledger: a publish or
clean-up that needs credentials the state store does not have is retried by the next run of the
job that writes to the same table (it passes its ``properties``).

    n = write_jdbc(run, df, "jdbc:postgresql://db/shop", "orders", properties={"user": "etl"})
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from sparkmark.core.errors import ConfigError, JobStateError, SinkError, SourceError
from sparkmark.engine.jdbc import JdbcConnection, java_message, resolve_driver, spark_url
from sparkmark.core.redact import redact_url, url_has_secret
from sparkmark.core.run import JdbcOutput, RunContext
from sparkmark.sinks.stamping import RUN_ID_COL, checked_run_id, count_while, stamp, stamped_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STAGE_SUFFIX = "__sm_stage"
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?")


STAGE_NAME_MAX = 30  # fits every common database (Oracle 12.1: 30, PostgreSQL: 63, MySQL: 64)


def public_properties(props: Mapping[str, Any]) -> dict[str, str]:
    """The connection properties that may be stored in the ledger: an allowlist (user, driver
    and a few known-safe keys, :data:`sparkmark.core.secrets.SAFE_PROPERTIES`), never the rest.

    >>> public_properties({"user": "etl", "passwd": "x", "options": "-c a=b"})
    {'user': 'etl'}
    """
    from sparkmark.core.secrets import safe_properties
    return safe_properties(props)


def stage_name(table: str) -> str:
    """The staging table of ``table``: ``<table>__sm_stage``, or a short hashed name when that
    would be longer than 30 characters (PostgreSQL silently truncates names past 63, and
    publish would then not find the stage).

    >>> stage_name("orders")
    'orders__sm_stage'
    >>> len(stage_name("s." + "x" * 70)) <= 2 + 30
    True
    """
    import hashlib
    schema, dot, name = table.rpartition(".")
    full = name + STAGE_SUFFIX
    if len(full) <= STAGE_NAME_MAX:
        return f"{schema}{dot}{full}"
    digest = hashlib.sha1(name.lower().encode()).hexdigest()[:10]
    short = f"{name[:STAGE_NAME_MAX - 11 - len(STAGE_SUFFIX)]}_{digest}{STAGE_SUFFIX}"
    return f"{schema}{dot}{short}"


def sink_driver(spark: "SparkSession | None", url: str, props: Mapping[str, Any]) -> str:
    """:func:`~sparkmark.engine.jdbc.resolve_driver` for a target: its error is a SinkError.

        sink_driver(spark, "jdbc:mysql://db/shop", {})  # 'org.mariadb.jdbc.Driver' (Debian)
    """
    try:
        return resolve_driver(spark, url, props)
    except SourceError as e:
        raise SinkError(str(e)) from None


class JdbcTarget:
    """A connection for the sink's own statements (:class:`~sparkmark.engine.jdbc.JdbcConnection`:
    the driver JVM's JDBC driver, or a Python driver over Spark Connect).

    Example::

        with JdbcTarget(spark, url, {"user": "etl", "password": pw}) as t:
            if t.exists("orders"):
                t.transaction([f"DELETE FROM {t.q('orders')} {t.where_run('orders', run_id)}"])
    """

    def __init__(self, spark: "SparkSession | None", url: str, props: Mapping[str, Any]):
        self.url = url
        driver = sink_driver(spark, url, props)
        self._c = JdbcConnection(spark, url, {k: str(v) for k, v in props.items()}, driver)

    def __enter__(self) -> "JdbcTarget":
        try:
            self._c.__enter__()
        except SourceError as e:
            raise SinkError(str(e)) from None
        return self

    def __exit__(self, *exc: Any) -> None:
        self._c.__exit__(*exc)

    def q(self, table: str) -> str:
        """The table's name as the database stores it, quoted (Derby folds to upper case)."""
        return self._c.resolve_table(table).quoted

    def col(self, table: str, name: str) -> str:
        """A column of ``table`` by case-insensitive name, quoted as the database stores it."""
        for c in self.columns(table):
            if c.lower() == name.lower():
                return self._c.quote(c)
        raise SinkError(f"table {table} has no column {name}")

    def exists(self, table: str) -> bool:
        try:
            self._c.resolve_table(table)
            return True
        except (ConfigError, SourceError):
            return False

    def columns(self, table: str) -> list[str]:
        return [c[0] for c in self._c.resolve_table(table).columns]

    def where_run(self, table: str, run_id: str) -> str:
        """``WHERE sm_run_id = 'R'`` (a cast keeps Derby's CLOB strings comparable)."""
        run_id = checked_run_id(run_id)
        return f"WHERE CAST({self.col(table, RUN_ID_COL)} AS VARCHAR(32)) = '{run_id}'"

    def transaction(self, statements: list[str]) -> list[int]:
        """Run statements in one transaction; returns their update counts."""
        return self._c.transaction(statements, error=SinkError)

    def count(self, sql: str) -> int:
        return self._c.count(sql)


def write_jdbc(run: RunContext, df: "DataFrame", url: str, table: str, *,
               properties: Mapping[str, Any] | None = None,
               transformation_ctx: str | None = None, stamp_rows: bool = True) -> int:
    """Stage ``df`` (stamped) for ``table``; returns the rows written.

    ``stamp_rows=False``: the staging table still carries the run id (publishing stays
    exactly once), but the target gets ``df``'s columns only.
    """
    if not url or not url.startswith("jdbc:"):
        raise ConfigError(f"write_jdbc needs a JDBC URL (jdbc:...), got {redact_url(str(url))!r}")
    if not table or not _TABLE_NAME.fullmatch(table):
        raise ConfigError(f"table name {table!r} is not a plain [schema.]name; use letters, "
                          "digits and underscores")
    run_id, snapshot_ts = run.run_id, run.snapshot_ts
    if run_id is None or snapshot_ts is None:
        raise JobStateError("write_jdbc() needs a running job: call job.init(name, args) first")
    props = dict(properties or {})
    run.add_secrets(props, url)  # scrubbed from ledger errors
    if not any(str(k).lower() == "driver" for k in props):  # the ledger's outputs say which
        props["driver"] = sink_driver(run.spark, url, props)
    columns = list(df.columns)  # one schema lookup for the stamp and the target's columns
    stamped = stamp(df, run_id, snapshot_ts, columns)
    if stamp_rows:  # what the target table gets
        columns = stamped_columns(columns)
    stage = stage_name(table)
    with JdbcTarget(run.spark, url, props) as t:
        if t.exists(table):
            have = {c.lower() for c in t.columns(table)}
            missing = [c for c in columns if c.lower() not in have]
            if missing:
                raise SinkError(f"target table {table} has no column(s) {missing}; add them "
                                "(ALTER TABLE) or write to a new table")
        if t.exists(stage):
            have = {c.lower() for c in t.columns(stage)}
            if any(c.lower() not in have for c in stamped.columns):
                t.transaction([f"DROP TABLE {t.q(stage)}"])  # stale layout; it holds no
                # committed rows once earlier runs are recovered (the job did that first)
    run.stage_output(JdbcOutput(
        target=table, staging_table=stage, columns=tuple(columns),
        url=None if url_has_secret(url) else url, properties=public_properties(props),
        run_id=run_id, ctx=transformation_ctx, credentials={**props, "url": url}))
    writer_props = {k: str(v) for k, v in props.items()}

    def action(d: "DataFrame") -> None:
        d.write.jdbc(spark_url(url), stage, mode="append", properties=writer_props)

    try:
        n = count_while(stamped, action)
        with JdbcTarget(run.spark, url, props) as t:
            if not t.exists(stage):
                raise SinkError(
                    f"the staging table {stage} of table {table} is missing right after the "
                    "write (did the database shorten or rename it?); nothing was committed")
            if not t.exists(table):  # same column types as Spark gave the staging table
                stamped.select(*columns).limit(0).write.jdbc(spark_url(url), table,
                                                             mode="append",
                                                             properties=writer_props)
    except SinkError:
        raise
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"writing to table {table} at {redact_url(url)} failed: "
                        f"{java_message(e)}") from None
    run.add_written(n)
    return n


def _target_for(spark: "SparkSession | None", out: JdbcOutput,
                credentials: Mapping[str, Any] | None) -> JdbcTarget | None:
    """A connection for ``out``: its in-memory credentials, else ``credentials`` given for its
    table (with ``url``), else what the ledger has (no passwords) — or ``None`` (no URL)."""
    given = dict(out.credentials or credentials or {})
    url = given.pop("url", None) or out.url
    if url is None:
        return None
    props = dict(out.properties)
    props.update(given)
    return JdbcTarget(spark, url, props)


def publish_jdbc(spark: "SparkSession", run_id: str, out: JdbcOutput,
                 credentials: Mapping[str, Any] | None = None) -> bool:
    """Move run ``run_id``'s staged rows into the target (idempotent). False: deferred."""
    checked_run_id(run_id)
    target = _target_for(spark, out, credentials)
    if target is None:
        return False
    try:
        with target as t:
            if not t.exists(out.staging_table):
                raise SinkError(
                    f"cannot publish run {run_id} to table {out.target}: its staging table "
                    f"{out.staging_table} is missing, so its rows are lost or were never "
                    "staged; the run stays 'pending' in the ledger. Roll it back and rerun "
                    "it ('sparkmark bookmark reset' to the run before)")
            st_name, tg_name = out.staging_table, out.target
            stage, table = t.q(st_name), t.q(tg_name)
            dst = ", ".join(t.col(tg_name, c) for c in out.columns)
            src = ", ".join(t.col(st_name, c) for c in out.columns)
            where = t.where_run(st_name, run_id)
            t.transaction([f"INSERT INTO {table} ({dst}) SELECT {src} FROM {stage} {where}",
                           f"DELETE FROM {stage} {where}"])
        return True
    except SinkError:
        if not (out.credentials or credentials):
            return False  # e.g. needs a password: the next write to this table publishes it
        raise


def discard_jdbc(spark: "SparkSession", out: JdbcOutput,
                 credentials: Mapping[str, Any] | None = None,
                 run_id: str | None = None) -> bool:
    """Delete the staged rows of a run that did not commit. False: deferred."""
    run_id = run_id or out.run_id
    target = _target_for(spark, out, credentials)
    if target is None or run_id is None:
        return False
    try:
        with target as t:
            if t.exists(out.staging_table):
                st_name = out.staging_table
                t.transaction([f"DELETE FROM {t.q(st_name)} {t.where_run(st_name, run_id)}"])
        return True
    except SinkError:
        if not (out.credentials or credentials):
            return False
        raise


def remove_jdbc_run(spark: "SparkSession | None", run_id: str, out: JdbcOutput,
                    credentials: Mapping[str, Any] | None = None,
                    dry_run: bool = False) -> list[str]:
    """Rollback: delete a published run's rows from the target table."""
    target = _target_for(spark, out, credentials)
    if target is None:
        raise SinkError(f"rolling back run {run_id} needs the credentials of table "
                        f"{out.target}; pass properties=...")
    if RUN_ID_COL not in out.columns:
        raise SinkError(f"run {run_id} wrote unstamped rows to table {out.target} (the Glue "
                        "layer's default), so its rows cannot be told apart from others; delete "
                        "them by hand, or set SPARKMARK_GLUE_STAMP=1 for runs you may roll back")
    with target as t:
        if not t.exists(out.target):
            return []
        where = t.where_run(out.target, run_id)
        n = t.count(f"SELECT COUNT(*) FROM {t.q(out.target)} {where}")
        if not dry_run and n:
            t.transaction([f"DELETE FROM {t.q(out.target)} {where}"])
    return [f"{out.target}: {n} rows of run {run_id}"] if n else []
