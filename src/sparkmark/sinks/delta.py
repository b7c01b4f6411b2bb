"""Exactly-once Delta Lake targets: one stamped append per run, counted with the run or removed.

Delta has no unpublished commit (nothing like Iceberg's write-audit-publish), so the order is:

1. the ledger records the output first (:class:`~sparkmark.core.run.DeltaOutput`: the table's
   location, its version before the write and a ``write_id`` the commit will name);
2. one Delta append (``mode("append")``) commits the run's rows, stamped with ``sm_run_id`` /
   ``sm_snapshot_ts``, with ``userMetadata`` naming job, run, ``write_id`` and ctx
   (``commitInfo``); the ledger then records the version written.  A run whose sources found
   nothing new and whose DataFrame is empty makes no commit at all;
3. the state store commit (bookmark and ledger row, in one transaction); the publish after it
   has nothing left to move.

Between 2 and 3 a plain reader of the table already sees the run's rows: Delta commits are
visible at once.  If the run then fails (an exception, a refused state commit) its rows are
removed again in one Delta ``DELETE`` commit; if the driver dies, the next run's ``init``
finds the run's commit (the recorded version, else the commit in the versions after ``before``
whose ``userMetadata`` names the run's ``write_id``) and removes its rows in one commit
*before* it reads anything.  So after any crash and a re-run each record is in the table once,
and a reader who wants only committed runs reads as of a version a committed run recorded
(``versionAsOf``) or filters on the ``sm_run_id`` of committed runs.

Delta's own idempotent-write markers (``txnAppId``/``txnVersion``) are not set: Delta checks
them against every transaction the table knows, which rebuilds the table's whole state on each
write (a shuffle over its log and checkpoint: 8-18 s on a 1,000,000-row table, where the append
itself takes 0.6 s).  The ledger's record of the write, made before the commit, and the write id
in the commit do what they would: the next ``init`` finds the commit of a run that did not count
and removes it.  (Commits of older versions that carry a ``txn`` are still recognised.)

Rollback (:func:`remove_delta_run`, ``Bookmarks.reset(..., remove_output=True)``) removes a
run's rows in one ``DELETE`` commit whose ``userMetadata`` names the run
(``sparkmark.removes``), and refuses, changing nothing, when a later commit removed any file the
run added (``OPTIMIZE``, an ``UPDATE``/``MERGE``/``DELETE``): its rows are then no longer
exactly what it wrote.  A removal repeated after a crash finds that commit and does nothing.
Unstamped rows (``stamp=False``) are removed only while the run's commit is the table's latest
(``RESTORE`` to the version before it, one commit), which is where a failed or crashed run's
commit usually is; otherwise the removal is refused.

    n = write_delta(run, df, "/data/orders_delta", transformation_ctx="sink")
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from sparkmark.core.errors import ConfigError, JobStateError, SinkError
from sparkmark.core.run import DeltaOutput, RunContext, has_new_input
from sparkmark.engine.fs import file_system
from sparkmark.engine.jvm import java_error_text
from sparkmark.sinks.stamping import RUN_ID_COL, checked_run_id, stamp, stamped_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("sparkmark.delta")

#: the ``userMetadata`` keys of a run's append, and of the commit that removes its rows
JOB_KEY, RUN_KEY, WRITE_KEY, CTX_KEY, SNAPSHOT_KEY, REMOVES_KEY = (
    "sparkmark.job", "sparkmark.run-id", "sparkmark.write-id", "sparkmark.ctx",
    "sparkmark.snapshot-ts", "sparkmark.removes")
#: the session setting Delta takes a SQL command's ``userMetadata`` from
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
#: writer options sparkmark sets itself, or that would replace rows rather than append them
_REJECTED = ("txnappid", "txnversion", "usermetadata", "replacewhere", "overwriteschema",
             "path")
_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)"
_TABLE = re.compile(rf"{_PART}(?:\.{_PART}){{0,2}}")
#: (run id, table location) of the Delta writes made in this process: one per run and table
_WRITTEN: set[tuple[str, str]] = set()


def delta_app_id(job: str, target: str) -> str:
    """The ``txnAppId`` of job ``job``'s appends to ``target``: stable across runs.

    >>> delta_app_id("orders", "/data/t") == delta_app_id("orders", "/data/t")
    True
    """
    digest = hashlib.sha256(f"{job}\0{target}".encode()).hexdigest()[:32]
    return f"sparkmark-{digest}"


def write_delta(run: RunContext, df: "DataFrame", target: str, *,
                transformation_ctx: str | None = None,
                partition_by: Sequence[str] | None = None, mode: str = "append",
                options: Mapping[str, Any] | None = None, stamp_rows: bool = True) -> int:
    """Append ``df`` (stamped) to Delta table ``target`` (a path, or a table name in a catalog
    that knows Delta tables) in one commit stamped with the run; returns the rows written.

    A path that holds no table yet gets one (``partition_by`` then partitions it); a table name
    must name an existing Delta table.  With ``stamp_rows`` (the default) the table needs the
    ``sm_run_id``/``sm_snapshot_ts`` columns (a new table gets them).

    Example: ``write_delta(job, df, "/data/orders_delta", transformation_ctx="sink")``
    """
    if not isinstance(target, str) or not target.strip():
        raise ConfigError("a Delta target is a path or a table name, not "
                          f"{target!r}")
    target = target.strip()
    is_path = "/" in target or ":" in target
    if not is_path and not _TABLE.fullmatch(target):
        raise ConfigError(f"a Delta target is a path or a table name such as db.table, not "
                          f"{target!r}")
    if mode != "append":
        raise ConfigError(f"write mode {mode!r} is not supported for Delta targets: each run's "
                          "rows are appended exactly once (mode='append')")
    opts = {str(k): str(v) for k, v in dict(options or {}).items()}
    bad = [k for k in opts if k.lower() in _REJECTED]
    if bad:
        raise ConfigError(f"writer option(s) {bad} cannot be used with job.write to a Delta "
                          "table: sparkmark sets the transaction and the commit's metadata "
                          "itself, and only appends")
    run_id, snapshot_ts, job = run.run_id, run.snapshot_ts, run.job_name
    if run_id is None or snapshot_ts is None or job is None:
        raise JobStateError("write() needs a running job: call job.init(name, args) first")
    checked_run_id(run_id)
    spark = run.spark
    location, before, have = _table_state(spark, target, is_path)
    # The version this commit expects to make (the ledger keeps it; the commit itself is found
    # by its write id in ``userMetadata``, in the versions after ``before``)
    number = before + 1
    if (run_id, location) in _WRITTEN:
        raise ConfigError(f"run {run_id} already wrote to Delta table {target}: write one "
                          "DataFrame per run and table (union them first)")
    columns = list(df.columns)
    stamped = stamp(df, run_id, snapshot_ts, columns) if stamp_rows else df
    if stamp_rows:
        columns = stamped_columns(columns)
    if have is not None:
        missing = [c for c in columns if c.lower() not in have]
        if missing:
            adds = ", ".join(f"{f.name} {f.dataType.simpleString()}"
                             for f in stamped.schema.fields if f.name in missing)
            raise SinkError(f"Delta table {target} has no column(s) {missing}; add them with "
                            f"ALTER TABLE {_sql_name(target, location, is_path)} ADD COLUMNS "
                            f"({adds})"
                            + (" (sparkmark stamps every row with its run; pass stamp=False "
                               "to write df's columns only)" if stamp_rows else "")
                            + "; nothing was written or committed")
    if has_new_input(run) is False and df.isEmpty():
        # the run's sources found nothing new and df is empty: no commit at all (an empty
        # append would still make a table version), nothing staged, nothing to undo
        return 0
    out = DeltaOutput(target=target, location=location, write_id=f"{run_id}-{secrets.token_hex(4)}",
                      app_id=delta_app_id(job, target), txn_version=number, before=before,
                      run_id=run_id, ctx=transformation_ctx, stamped=stamp_rows)
    # In the ledger before the commit: a crash from here on is found and undone by the next init
    run.stage_output(out)
    meta = {JOB_KEY: job, RUN_KEY: run_id, WRITE_KEY: out.write_id,
            SNAPSHOT_KEY: str(int(snapshot_ts))}
    if transformation_ctx is not None:
        meta[CTX_KEY] = str(transformation_ctx)
    _WRITTEN.add((run_id, location))
    try:
        _append(stamped, location, {**opts, "userMetadata": json.dumps(meta, sort_keys=True)},
                list(partition_by or []))
    except Exception as e:  # noqa: BLE001 - Spark analysis errors, py4j errors
        raise SinkError(f"writing to Delta table {target} failed: {java_error_text(e)}; the "
                        "run fails, and a commit it made is removed again") from None
    version, commit = _committed(spark, out)
    if version is None:
        # Delta makes no commit for an append of no rows (without a txn action to record):
        # nothing was written; the ledger's record (no version) undoes nothing
        log.info("the append to Delta table %s had no rows: no commit", target)
        return 0
    run.stage_output(replace(out, version=version))  # the ledger now names the version
    if not is_path:
        try:  # cached DataFrames of the catalog table see the new version
            spark.catalog.refreshTable(target)
        except Exception:  # noqa: BLE001 - the write itself is done
            pass
    n = _rows_added(commit)
    run.add_written(n)
    return n


def _append(df: "DataFrame", location: str, options: dict[str, str],
            partition_by: list[str]) -> None:
    """The one Delta commit of a write (by path: a catalog table is written at its location)."""
    writer = df.write.format("delta").mode("append").options(**options)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(location)


def _sql_name(target: str, location: str, is_path: bool) -> str:
    return target if not is_path else _path_sql(location)


def _path_sql(location: str) -> str:
    return "delta.`" + location.replace("`", "``") + "`"


def _table_state(spark: "SparkSession", target: str, is_path: bool
                 ) -> tuple[str, int, set[str] | None]:
    """The table's location, its current version (-1: no table yet, a path only) and its
    lower-cased columns (``None``: no table yet); one :class:`SinkError` saying what to do
    when it is not a Delta table."""
    if is_path:
        try:
            fs = file_system(spark, target)
            location = str(fs.qualify(target).toString()).rstrip("/")
            has_log = fs.exists(fs.path(location + "/_delta_log"))
            has_data = has_log or any(not str(c).startswith(("_", "."))
                                      for c in fs.children(fs.path(location)))
        except Exception as e:  # noqa: BLE001 - a missing bucket, refused keys
            raise SinkError(f"cannot open Delta target {target}: {java_error_text(e)}; nothing "
                            "was written or committed") from None
        if not has_log:
            if has_data:
                raise SinkError(f"{target} holds files but no Delta table (_delta_log); write a "
                                "Delta target to an empty or new path, or CONVERT TO DELTA "
                                "first; nothing was written or committed")
            return location, -1, None
    else:
        try:
            # the catalog's entry, not DESCRIBE DETAIL (which sums every file of the snapshot)
            detail = {str(r[0]).strip().lower(): str(r[1] or "").strip() for r in
                      spark.sql(f"DESCRIBE TABLE EXTENDED {target}").collect() if r[0]}
        except Exception as e:  # noqa: BLE001 - no such table, no Delta catalog
            raise SinkError(f"Delta table {target} cannot be opened: {java_error_text(e)}; a "
                            "table-name Delta target must exist (CREATE TABLE ... USING delta) "
                            "in a catalog that knows Delta (spark_catalog as DeltaCatalog); "
                            "nothing was written or committed") from None
        if detail.get("provider", "").lower() != "delta" or not detail.get("location"):
            raise SinkError(f"{target} is not a Delta table (format "
                            f"{detail.get('provider') or None!r}); nothing was written or "
                            "committed")
        location = detail["location"].rstrip("/")
    try:
        version = latest_version(spark, location)
        have = {c.lower() for c in spark.read.format("delta").load(location).columns}
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"cannot read Delta table {target}: {java_error_text(e)}; nothing was "
                        "written or committed") from None
    return location, version, have


def latest_version(spark: "SparkSession", location: str) -> int:
    """The current version of the Delta table at ``location``.

    Example: ``latest_version(spark, "file:/data/orders_delta")  # 41``
    """
    rows = spark.sql(f"DESCRIBE HISTORY {_path_sql(location)} LIMIT 1").collect()
    return int(rows[0]["version"]) if rows else -1


def commits(spark: "SparkSession", location: str, first: int, last: int
            ) -> dict[int, list[dict[str, Any]]]:
    """The actions of the commits ``first..last`` of the Delta table at ``location``, from its
    log (``_delta_log/<version>.json``, one JSON action a line), by version; a version whose
    file is gone (a log cleaned up) is a :class:`FileNotFoundError`.

    Example: ``commits(spark, loc, 42, 42)[42]  # [{"commitInfo": {...}}, {"add": ...}, ...]``
    """
    found: dict[int, list[dict[str, Any]]] = {}
    for v in range(first, last + 1):
        actions = _commit_actions(spark, location, v)
        if actions is None:
            raise FileNotFoundError(f"version {v} is no longer in the log of Delta table "
                                    f"{location}")
        found[v] = actions
    return found


def _commit_actions(spark: "SparkSession", location: str, version: int
                    ) -> list[dict[str, Any]] | None:
    """The actions of one commit (one small file read, no Spark job); ``None``: no such file."""
    fs = file_system(spark, location)
    text = fs.read_text(fs.path(f"{location.rstrip('/')}/_delta_log/{version:020d}.json"))
    if text is None:
        return None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _meta(actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``userMetadata`` of a commit as sparkmark wrote it (``{}``: none, or another's)."""
    for a in actions:
        info = a.get("commitInfo")
        if info is not None:
            try:
                meta = json.loads(info.get("userMetadata") or "{}")
            except (TypeError, ValueError):
                return {}
            return meta if isinstance(meta, dict) else {}
    return {}


def _committed(spark: "SparkSession", out: DeltaOutput
               ) -> tuple[int | None, list[dict[str, Any]]]:
    """The version of ``out``'s commit and its actions, or ``(None, [])``: none was made.

    ``out.version`` when the ledger has it (checked to be that commit); else the commit after
    ``out.before`` that names the write (``userMetadata``; a ``txn`` of ``(out.app_id,
    out.txn_version)`` for commits sparkmark made before it stopped setting one).  The usual
    case, the commit right after ``before``, is one small file read; a later one takes the
    table's latest version and a read per version between.
    """
    if out.version is not None:
        actions = _commit_actions(spark, out.location, out.version)
        if actions is not None and _is_ours(actions, out):
            return out.version, actions
    first = out.before + 1
    actions = _commit_actions(spark, out.location, first)
    if actions is None:  # no version after ``before``: no commit (unless the log was cleaned)
        if _has_table(spark, out.location) and latest_version(spark, out.location) >= first:
            raise FileNotFoundError(f"version {first} is no longer in the log of Delta table "
                                    f"{out.target}")
        return None, []
    if _is_ours(actions, out):
        return first, actions
    latest = latest_version(spark, out.location)
    for version, acts in sorted(commits(spark, out.location, first + 1, latest).items()):
        if _is_ours(acts, out):
            return version, acts
    return None, []


def _is_ours(actions: list[dict[str, Any]], out: DeltaOutput) -> bool:
    return any((a.get("txn") or {}).get("appId") == out.app_id
               and int((a.get("txn") or {}).get("version", -1)) == out.txn_version
               for a in actions) or _meta(actions).get(WRITE_KEY) == out.write_id


def _has_table(spark: "SparkSession", location: str) -> bool:
    fs = file_system(spark, location)
    return bool(fs.exists(fs.path(location.rstrip("/") + "/_delta_log")))


def _rows_added(actions: list[dict[str, Any]]) -> int:
    """The rows a commit appended: its ``numOutputRows``, else the sum of its files' stats."""
    for a in actions:
        metrics = (a.get("commitInfo") or {}).get("operationMetrics") or {}
        if "numOutputRows" in metrics:
            return int(metrics["numOutputRows"])
    n = 0
    for path, add in _adds(actions):
        try:
            n += int(json.loads(add.get("stats") or "{}").get("numRecords", 0))
        except (TypeError, ValueError):
            log.warning("no row count in the stats of %s", path)
    return n


def _adds(actions: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for a in actions:
        add = a.get("add")
        if add is not None and add.get("dataChange", True):
            yield str(add["path"]), add


# ---------------------------------------------------------------- publish, discard, remove
def publish_delta(spark: "SparkSession", run_id: str, out: DeltaOutput) -> bool:
    """A committed run's Delta output: already in the table (its commit came before the state
    commit), so nothing moves.  Always True.

    Example: ``publish_delta(spark, run_id, out)  # True``
    """
    return True


def discard_delta(spark: "SparkSession", out: DeltaOutput, run_id: str | None = None) -> bool:
    """A run that did not commit: its Delta commit, if it made one, has its rows removed in one
    commit (stamped rows go by ``sm_run_id`` even when later commits rewrote its files: no
    row of a run that never committed may stay).  True when nothing of it is left.

    Example: ``discard_delta(spark, out, run_id)  # True``
    """
    rid = run_id or out.run_id
    if rid is None:
        return False
    remove_delta_run(spark, rid, out, uncommitted=True)
    return True


def remove_delta_run(spark: "SparkSession", run_id: str, out: DeltaOutput,
                     dry_run: bool = False, uncommitted: bool = False) -> list[str]:
    """Remove the rows run ``run_id`` appended to Delta table ``out.target`` in one ``DELETE``
    commit (its ``userMetadata`` has ``sparkmark.removes`` = the write's id).  Refused, with
    nothing changed, when a later commit removed a file the run added (its rows are then no
    longer exactly what it wrote), unless ``uncommitted`` (a run that never committed: every
    row it stamped goes); nothing to do when the run made no commit or its rows were removed
    already (a removal a crash interrupted after its commit).  Returns what was removed.

    Example: ``remove_delta_run(spark, run_id, out, dry_run=True)  # ['/data/t: 3 rows ...']``
    """
    checked_run_id(run_id)
    try:
        version, actions = _committed(spark, out)
        if version is None:
            return []  # the write made no commit (a crash before it)
        latest = latest_version(spark, out.location)
        later = commits(spark, out.location, version + 1, latest)
    except Exception as e:  # noqa: BLE001 - the table is gone, its log was cleaned up
        raise SinkError(f"cannot find run {run_id}'s commit in Delta table {out.target}: "
                        f"{java_error_text(e)}; the table was not changed") from None
    if any(_meta(acts).get(REMOVES_KEY) == out.write_id for acts in later.values()):
        return []  # removed by an earlier rollback or discard
    added = dict(_adds(actions))
    if not added:
        return []  # an empty append: no rows to remove
    removed = {str(a["remove"]["path"]) for acts in later.values() for a in acts
               if a.get("remove") is not None}
    gone = [p for p in added if p in removed]
    rows = _rows_added(actions)
    if gone and not (uncommitted and out.stamped):
        raise SinkError(
            f"cannot {'remove' if uncommitted else 'roll back'} run {run_id} in Delta table "
            f"{out.target}: later commits rewrote its data files ({len(gone)} of {len(added)} "
            "added at version "
            f"{version} are no longer live: OPTIMIZE, an UPDATE, MERGE or DELETE), so its rows "
            "cannot be removed exactly; the table was not changed. Delete them by hand"
            + (f" (DELETE FROM {_path_sql(out.location)} WHERE {RUN_ID_COL} = '{run_id}')"
               if out.stamped else "")
            + " and reset the bookmark without --remove-output")
    if not out.stamped and version != latest:
        raise SinkError(
            f"cannot remove run {run_id}'s rows from Delta table {out.target}: they are not "
            f"stamped (stamp=False) and later commits followed its version {version}, so they "
            "cannot be told apart from others; the table was not changed. Delete them by hand, "
            "then reset the bookmark without --remove-output")
    what = [f"{out.target}: {rows} rows of run {run_id} (Delta version {version}, "
            f"{len(added)} data file(s))"]
    if dry_run:
        return what
    _delete_rows(spark, out, run_id, version)
    return what


def _delete_rows(spark: "SparkSession", out: DeltaOutput, run_id: str, version: int) -> None:
    """One commit naming the write that removes its rows: ``DELETE FROM <table> WHERE
    sm_run_id = <run>``; unstamped rows of the latest version: ``RESTORE`` to the version
    before it (or, for the version that made the table, ``DELETE`` of every row)."""
    before = spark.conf.get(USER_METADATA_CONF, None)
    meta = json.dumps({REMOVES_KEY: out.write_id, RUN_KEY: run_id}, sort_keys=True)
    table = _path_sql(out.location)
    if out.stamped:
        sql = f"DELETE FROM {table} WHERE {RUN_ID_COL} = '{checked_run_id(run_id)}'"
    elif version == 0:
        sql = f"DELETE FROM {table}"
    else:
        sql = f"RESTORE TABLE {table} TO VERSION AS OF {int(version) - 1}"
    try:
        spark.conf.set(USER_METADATA_CONF, meta)
        spark.sql(sql).collect()
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"removing run {run_id}'s rows from Delta table {out.target} failed: "
                        f"{java_error_text(e)}; the table was not changed (its commit is "
                        "atomic)") from None
    finally:
        if before is None:
            spark.conf.unset(USER_METADATA_CONF)
        else:
            spark.conf.set(USER_METADATA_CONF, before)
