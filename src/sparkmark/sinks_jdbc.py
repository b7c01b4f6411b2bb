"""Exactly-once JDBC targets: stage in ``<table>__sm_stage``, publish in one DB transaction.

``write_jdbc`` appends the stamped rows to the staging table (Spark's JDBC writer; the table is
created on first use).  After the state store commit, ``publish_jdbc`` runs, in one transaction
of the target database::

    INSERT INTO <table> (cols) SELECT cols FROM <table>__sm_stage WHERE sm_run_id = 'R';
    DELETE FROM <table>__sm_stage WHERE sm_run_id = 'R';

so readers of ``<table>`` never see rows of a run that did not commit, and repeating the publish
after a crash inserts nothing twice.  Passwords are never written to the ledger: a publish or
clean-up that needs credentials the state store does not have is retried by the next run of the
job that writes to the same table (it passes its ``properties``).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, SinkError, SourceError
from .sinks import RUN_ID_COL, _count_while, stamp

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .job import Job

STAGE_SUFFIX = "__sm_stage"
_SECRET_KEYS = ("password", "pwd", "secret", "token")
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def _public_props(props: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in props.items()
            if not any(s in k.lower() for s in _SECRET_KEYS)}


def _url_has_secret(url: str) -> bool:
    return bool(re.search(r"(?i)password=|//[^/@]+:[^/@]+@", url))


class _Target:
    """A JDBC connection (through the driver JVM) for the sink's own statements."""

    def __init__(self, spark: "SparkSession", url: str, props: dict[str, Any]):
        from .sources.jdbc import _Connection, _driver_for
        self.url = url
        driver = props.get("driver") or _driver_for(url)
        self._c = _Connection(spark, url, {k: str(v) for k, v in props.items()}, driver)

    def __enter__(self) -> "_Target":
        try:
            self._c.__enter__()
        except SourceError as e:
            raise SinkError(str(e)) from None
        self.conn = self._c._conn
        return self

    def __exit__(self, *exc) -> None:
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
        assert _RUN_ID.match(run_id)
        return f"WHERE CAST({self.col(table, RUN_ID_COL)} AS VARCHAR(32)) = '{run_id}'"

    def transaction(self, statements: list[str]) -> list[int]:
        """Run statements in one transaction; returns their update counts."""
        from .sources.jdbc import _java_message, _redact
        self.conn.setAutoCommit(False)
        st = self.conn.createStatement()
        try:
            counts = [int(st.executeUpdate(s)) for s in statements]
            self.conn.commit()
            return counts
        except Exception as e:
            try:
                self.conn.rollback()
            except Exception:  # noqa: BLE001
                pass
            raise SinkError(f"statement on {_redact(self.url)} failed: {_java_message(e)}") \
                from None
        finally:
            st.close()

    def count(self, sql: str) -> int:
        rows = self._c.query(sql)
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def _stage_name(table: str) -> str:
    return table + STAGE_SUFFIX


def write_jdbc(job: "Job", df: "DataFrame", url: str, table: str, *,
               properties: dict[str, Any] | None = None,
               transformation_ctx: str | None = None, stamp_rows: bool = True) -> int:
    job._require_active("write_jdbc")
    if not url or not url.startswith("jdbc:"):
        raise ConfigError(f"write_jdbc needs a JDBC URL (jdbc:...), got {url!r}")
    if not table or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?",
                                     table):
        raise ConfigError(f"table name {table!r} is not a plain [schema.]name; use letters, "
                          "digits and underscores")
    props = dict(properties or {})
    stamped = stamp(df, job.run_id, job.snapshot_ts)  # the staging table always has the run id
    columns = stamped.columns if stamp_rows else df.columns  # what the target table gets
    stage = _stage_name(table)
    # Finish earlier runs of this job that wait for credentials to publish to this table.
    recover_with_credentials(job, url, table, props)
    with _Target(job.spark, url, props) as t:
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
                # committed rows once earlier runs are recovered above
    job._register_output({
        "kind": "jdbc", "target": table, "staging_table": stage, "columns": columns,
        "stamped": bool(stamp_rows),
        "url": None if _url_has_secret(url) else url, "properties": _public_props(props),
        "ctx": transformation_ctx, "run_id": job.run_id})
    from .sources.jdbc import _driver_for
    writer_props = {k: str(v) for k, v in props.items()}
    writer_props.setdefault("driver", _driver_for(url))

    def action(d: "DataFrame") -> None:
        d.write.jdbc(url, stage, mode="append", properties=writer_props)

    try:
        n = _count_while(stamped, action)
        with _Target(job.spark, url, props) as t:
            if not t.exists(table):  # same column types as Spark gave the staging table
                stamped.select(*columns).limit(0).write.jdbc(url, table, mode="append",
                                                             properties=writer_props)
    except SinkError:
        raise
    except Exception as e:  # noqa: BLE001
        from .sources.jdbc import _java_message, _redact
        raise SinkError(f"writing to table {table} at {_redact(url)} failed: "
                        f"{_java_message(e)}") from None
    job._add_written(n)
    job._sink_properties[table] = {**props, "url": url}
    return n


def _target_for(spark: "SparkSession", out: dict[str, Any],
                properties: dict[str, dict[str, Any]] | None) -> _Target | None:
    """``properties`` maps a target table to the connection properties (with ``url``) that a
    running job was given for it; the ledger alone has no passwords."""
    given = dict((properties or {}).get(out["target"]) or {})
    url = given.pop("url", None) or out.get("url")
    if url is None:
        return None
    props = dict(out.get("properties") or {})
    props.update(given)
    return _Target(spark, url, props)


def publish_jdbc(spark: "SparkSession", run_id: str, out: dict[str, Any],
                 properties: dict[str, Any] | None) -> bool:
    """Move run ``run_id``'s staged rows into the target (idempotent). False: deferred."""
    assert _RUN_ID.match(run_id)
    target = _target_for(spark, out, properties)
    if target is None:
        return False
    try:
        with target as t:
            if not t.exists(out["staging_table"]):
                return True
            st_name, tg_name = out["staging_table"], out["target"]
            stage, table = t.q(st_name), t.q(tg_name)
            dst = ", ".join(t.col(tg_name, c) for c in out["columns"])
            src = ", ".join(t.col(st_name, c) for c in out["columns"])
            where = t.where_run(st_name, run_id)
            t.transaction([f"INSERT INTO {table} ({dst}) SELECT {src} FROM {stage} {where}",
                           f"DELETE FROM {stage} {where}"])
        return True
    except SinkError:
        if not (properties or {}).get(out["target"]):
            return False  # e.g. needs a password: the next write to this table publishes it
        raise


def discard_jdbc(spark: "SparkSession", out: dict[str, Any],
                 properties: dict[str, Any] | None, run_id: str | None = None) -> bool:
    """Delete the staged rows of a run that did not commit. False: deferred."""
    run_id = run_id or out.get("run_id")
    target = _target_for(spark, out, properties)
    if target is None or run_id is None:
        return False
    try:
        with target as t:
            if t.exists(out["staging_table"]):
                st_name = out["staging_table"]
                t.transaction([f"DELETE FROM {t.q(st_name)} {t.where_run(st_name, run_id)}"])
        return True
    except SinkError:
        if not (properties or {}).get(out["target"]):
            return False
        raise


def remove_jdbc_run(spark: "SparkSession", run_id: str, out: dict[str, Any],
                    properties: dict[str, Any] | None, dry_run: bool = False) -> list[str]:
    """Rollback: delete a published run's rows from the target table."""
    target = _target_for(spark, out, properties)
    if target is None:
        raise SinkError(f"rolling back run {run_id} needs the credentials of table "
                        f"{out['target']}; pass properties=...")
    if out.get("stamped") is False:
        raise SinkError(f"run {run_id} wrote unstamped rows to table {out['target']} (the Glue "
                        "layer's default), so its rows cannot be told apart from others; delete "
                        "them by hand, or set SPARKMARK_GLUE_STAMP=1 for runs you may roll back")
    with target as t:
        if not t.exists(out["target"]):
            return []
        where = t.where_run(out["target"], run_id)
        n = t.count(f"SELECT COUNT(*) FROM {t.q(out['target'])} {where}")
        if not dry_run and n:
            t.transaction([f"DELETE FROM {t.q(out['target'])} {where}"])
    return [f"{out['target']}: {n} rows of run {run_id}"] if n else []


def recover_with_credentials(job: "Job", url: str, table: str, props: dict[str, Any]) -> None:
    """Publish or discard earlier runs' JDBC output for this table, now that we have creds."""
    import json

    from .sinks import publish_outputs
    from .state.store import EMPTY, FAILED, ROLLED_BACK, SUCCEEDED
    full = {table: {**props, "url": url}}
    for row in job.store.runs_to_recover(job.job_name):
        outs = json.loads(row["outputs"] or "[]")
        mine = [o for o in outs if o["kind"] == "jdbc" and o["target"] == table]
        if not mine:
            continue
        if row["status"] in (SUCCEEDED, EMPTY) and row["publish_state"] == "pending":
            publish_outputs(job.spark, job.store, row["run_id"], outs, properties=full)
        elif row["status"] in (FAILED, ROLLED_BACK, "SKIPPED"):
            if all(discard_jdbc(job.spark, o, full, row["run_id"]) for o in mine):
                job.store.update_run(row["run_id"], publish_state="discarded")
