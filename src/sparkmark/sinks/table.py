"""Exactly-once Apache Iceberg targets by write-audit-publish.

``write_table`` stages the run's rows as an Iceberg snapshot that is *not* made current: the
table gets ``write.wap.enabled=true`` once, and the write runs with ``spark.wap.id`` set to a
WAP id unique to this write (``<run_id>-<8 hex>``), recorded in the ledger first
(:class:`~sparkmark.core.run.TableOutput`).  The staged snapshot's summary names the job and the run
(``sparkmark.job``, ``sparkmark.run-id``, ``sparkmark.snapshot-ts``, ``sparkmark.ctx``).
Readers of the table (its ``main`` branch) see none of it.

After the state store commit, :func:`publish_table` makes it current with
``CALL <catalog>.system.cherrypick_snapshot(...)`` (a fast-forward when nobody committed in
between, so the current snapshot is the stamped one; otherwise a new snapshot whose summary has
``published-wap-id`` and ``source-snapshot-id``).  Before that it walks the ancestry of the
table's current snapshot for that WAP id (as Spark's streaming sink walks it for its epoch id):
found means the publish already happened, so repeating a publish after a crash never adds the
rows twice (Iceberg itself also refuses a second cherry-pick of one WAP id).  A run that does not
commit leaves its staged snapshot unpublished and unreferenced; Iceberg's ``expire_snapshots``
removes it and its files with the rest of the table's old snapshots.  Rollback
(:func:`sparkmark.sinks.table_rollback.remove_table_run`) drops the data files a run published,
in one table commit, or refuses when later snapshots rewrote them.

On classic sessions the steps on the table (its checks, the staged append, the staged
snapshot's lookup, the fast-forward) run in the driver JVM through
``java/SparkmarkTableHelper.java``, one py4j round trip each, with the same Iceberg and Spark
calls as the py4j path here, which stays as the fallback (:class:`_JavaTarget`).

    n = write_table(run, df, "local.db.orders", transformation_ctx="sink")
"""
from __future__ import annotations

import logging
import re
import secrets
import weakref
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence, TypeAlias

from sparkmark.engine import tablemeta
from sparkmark.core.errors import ConfigError, JobStateError, SinkError
from sparkmark.engine.compat import is_connect
from sparkmark.engine.jvm import decode_rows, encode_rows, helper, java_error_text, java_static
from sparkmark.core.run import RunContext, TableOutput
from sparkmark.sinks.stamping import checked_run_id, stamp, stamped_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("sparkmark.table")

#: the summary keys every staged snapshot carries
JOB_PROP, RUN_PROP, SNAPSHOT_PROP, CTX_PROP = ("sparkmark.job", "sparkmark.run-id",
                                               "sparkmark.snapshot-ts", "sparkmark.ctx")
WAP_PROP = "write.wap.enabled"
_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)"
_TABLE = re.compile(rf"{_PART}(?:\.{_PART}){{1,}}")
_WAP_ID = re.compile(r"^[0-9a-f]{32}-[0-9a-f]{8}$")
#: a last name part Iceberg reads as a branch, tag or time travel (``t.branch_dev``)
_SELECTOR = tablemeta.SELECTOR
#: writer options sparkmark sets itself or that would bypass the staging
_REJECTED = ("branch", "wap-id")


def write_table(run: RunContext, df: "DataFrame", table: str, *,
                transformation_ctx: str | None = None,
                partition_by: Sequence[str] | None = None, mode: str = "append",
                options: Mapping[str, Any] | None = None, stamp_rows: bool = True) -> int:
    """Stage ``df`` (stamped) as an unpublished snapshot of Iceberg table ``table``; returns
    the rows written.  The snapshot becomes visible when the run commits (``publish_table``).

    The table must exist (the error gives a ``CREATE TABLE`` for ``df``'s columns); with
    ``stamp_rows`` (the default) it needs the ``sm_run_id``/``sm_snapshot_ts`` columns too.

    Example: ``write_table(job, df, "local.db.orders", transformation_ctx="sink")``
    """
    if not isinstance(table, str) or not _TABLE.fullmatch(table.strip()):
        raise ConfigError(f"an Iceberg target is a table name such as catalog.db.table, not "
                          f"{table!r}")
    table = table.strip()
    if mode != "append":
        raise ConfigError(f"write mode {mode!r} is not supported for Iceberg targets: each run's "
                          "rows are appended exactly once (mode='append')")
    if partition_by:
        raise ConfigError("partition_by does not apply to an Iceberg target: the table's own "
                          "partition spec decides (ALTER TABLE ... ADD PARTITION FIELD)")
    opts = {str(k): str(v) for k, v in dict(options or {}).items()}
    bad = [k for k in opts if k.lower() in _REJECTED or k.lower().startswith(
        "snapshot-property.sparkmark.")]
    if bad:
        raise ConfigError(f"writer option(s) {bad} cannot be used with job.write to an Iceberg "
                          "table: sparkmark stages and publishes the snapshot itself")
    run_id, snapshot_ts, job = run.run_id, run.snapshot_ts, run.job_name
    if run_id is None or snapshot_ts is None:
        raise JobStateError("write() needs a running job: call job.init(name, args) first")
    checked_run_id(run_id)
    spark = run.spark
    columns = list(df.columns)  # one schema lookup for the stamp and the column check
    stamped = stamp(df, run_id, snapshot_ts, columns) if stamp_rows else df
    if stamp_rows:
        columns = stamped_columns(columns)
    have, table_props, handle = _checked_table(spark, table, stamped)
    missing = [c for c in columns if c.lower() not in have]
    if missing:
        adds = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in stamped.schema.fields
                         if f.name in missing)
        raise SinkError(f"Iceberg table {table} has no column(s) {missing}; add them with "
                        f"ALTER TABLE {table} ADD COLUMNS ({adds})"
                        + (" (sparkmark stamps every row with its run; pass stamp=False to "
                           "write df's columns only)" if stamp_rows else "")
                        + "; nothing was written or committed")
    _enable_wap(spark, table, table_props)
    wap_id = f"{run_id}-{secrets.token_hex(4)}"
    # In the ledger before the snapshot exists: a crash from here on is cleaned up (or rolled
    # forward) by the next init, which knows what to look for.
    run.stage_output(TableOutput(target=table, wap_id=wap_id, run_id=run_id,
                                 ctx=transformation_ctx))
    props = {f"snapshot-property.{JOB_PROP}": str(job), f"snapshot-property.{RUN_PROP}": run_id,
             f"snapshot-property.{SNAPSHOT_PROP}": str(int(snapshot_ts))}
    if transformation_ctx is not None:
        props[f"snapshot-property.{CTX_PROP}"] = str(transformation_ctx)
    try:
        _append_staged(spark, stamped, table, {**opts, **props}, wap_id, handle)  # no collision
    except Exception as e:  # noqa: BLE001 - Spark analysis errors, py4j errors
        raise SinkError(f"writing to Iceberg table {table} failed: {java_error_text(e)}; nothing was "
                        "published") from None
    # The snapshot just staged under this run's fresh WAP id (nobody else can have published
    # it yet: the id is new and the run holds the job's lease), so no ancestry check here; the
    # publish checks the ancestry (wap_snapshots) before it cherry-picks.
    found, handle = _staged_snapshot(spark, table, wap_id, handle)
    if found is None:
        raise SinkError(f"the write to Iceberg table {table} staged no snapshot with wap.id "
                        f"{wap_id} (was {WAP_PROP} turned off meanwhile?); nothing was published")
    if handle is not None:  # for this process's publish: no second lookup, no ancestry walk
        _STAGED[wap_id] = (handle, found)
    run.add_written(found.records)
    return found.records


class Staged(NamedTuple):
    """A snapshot staged under a WAP id: its id, ``added-records`` and parent, and the
    ``main`` snapshot of the same metadata (``None``: unknown, or no snapshot yet).

    Example: ``Staged(7, 10_000, parent=6, main=6)  # a fast-forward can publish it``
    """

    id: int
    records: int
    parent: int | None = None
    main: int | None = None


#: what this process staged and has not published yet: WAP id -> (the table as loaded for the
#: write, the staged snapshot).  A crash loses it; the publish then finds the snapshot
#: through :func:`wap_snapshots` instead.
_STAGED: "dict[str, tuple[_Target, Staged]]" = {}


class _JavaTarget:
    """The write's target table as ``java/SparkmarkTableHelper.java`` holds it in the driver
    JVM (its ``Target``: the Java table and the metadata it last saw).  The checks, the staged
    append, the staged snapshot's lookup and the fast-forward are one py4j round trip each
    (call by call, a 10,000-row write made 41 round trips, plain Spark's append 10), with the same
    Iceberg and Spark calls as the py4j path beside them.  That path stays the fallback: any
    answer but the common one (no helper, not found among the newest snapshots, not a
    fast-forward) goes on through :meth:`handle`, from the same metadata.

    Example: ``t = _open_target(spark, "local.db.t"); t.handle().table``
    """

    def __init__(self, spark: "SparkSession", name: str, target: Any) -> None:
        self.spark, self.name, self.target = spark, name, target
        self._handle: tablemeta.TableHandle | None = None

    def handle(self) -> tablemeta.TableHandle:
        """The same table for the py4j path, at the metadata this target last saw (asked once;
        the py4j path goes on from there)."""
        if self._handle is None:
            made = tablemeta.TableHandle(self.spark, self.name, self.target.table(),
                                         tablemeta.TableMetadata(None, []))
            made.base = self.target.base()
            self._handle = made
        return self._handle


#: a target table as the write holds it: through the helper, else the py4j path's
_Target: TypeAlias = "_JavaTarget | tablemeta.TableHandle"


def _open_target(spark: "SparkSession", name: str) -> _JavaTarget | None:
    """Iceberg table ``name`` loaded and refreshed through ``SparkmarkTableHelper`` (one py4j
    round trip), or ``None`` where that is not at hand (Spark Connect, no helper, a name with a
    branch or time-travel suffix, a table that is not Iceberg, any error): the caller takes
    :func:`tablemeta.open_table`'s path, which gives the error to show.

    Example: ``_open_target(spark, "local.db.orders")``
    """
    parts = re.findall(_PART, name)
    if is_connect(spark) or not parts or _SELECTOR.match(parts[-1].strip("`")):
        return None
    made = helper(spark, "SparkmarkTableHelper")
    if made is None:
        return None
    try:
        return _JavaTarget(spark, name, made.open(spark._jsparkSession, name))
    except Exception as e:  # noqa: BLE001 - not an Iceberg table, no such table, py4j errors
        log.debug("table %s through the helper: %s", name, java_error_text(e))
        return None


def _append_staged(spark: "SparkSession", df: "DataFrame", table: str,
                   options: dict[str, str], wap_id: str, handle: "_Target | None") -> None:
    """``df.writeTo(table).options(**options).append()`` with the session's ``spark.wap.id``
    set to ``wap_id`` for the write and restored after it (in the JVM, one round trip, when
    the table came through the helper)."""
    if isinstance(handle, _JavaTarget):
        handle.target.append(df._jdf, encode_rows(list(options.items())), wap_id)
        return
    before = spark.conf.get("spark.wap.id", None)
    try:
        spark.conf.set("spark.wap.id", wap_id)
        df.writeTo(table).options(**options).append()
    finally:
        if before is None:
            spark.conf.unset("spark.wap.id")
        else:
            spark.conf.set("spark.wap.id", before)


def table_columns(spark: "SparkSession", table: str, df: "DataFrame | None" = None) -> set[str]:
    """The lower-cased column names of Iceberg table ``table``, after checking it exists and is
    an Iceberg table (else one :class:`SinkError` saying how to fix it).

    Example: ``"sm_run_id" in table_columns(spark, "local.db.orders")``
    """
    return _checked_table(spark, table, df)[0]


def _checked_table(spark: "SparkSession", table: str, df: "DataFrame | None" = None
                   ) -> "tuple[set[str], dict[str, str], _Target | None]":
    """:func:`table_columns`, the table's properties (on classic sessions only the one
    sparkmark reads, ``write.wap.enabled``) and, on classic sessions, the loaded table
    (:func:`tablemeta.open_table`: the current schema and that property from the refreshed
    metadata, no Spark command, not the whole metadata document).  Where that is not at hand
    (Spark Connect, a table that is not Iceberg, a missing table) the catalog and ``SHOW
    TBLPROPERTIES`` (an Iceberg table's have ``format`` = ``iceberg/<file format>``) answer,
    and give the error to show."""
    target = _open_target(spark, table)
    if target is not None:
        try:  # two rows: the columns, the property
            names, (wap,) = decode_rows(target.target.describe(WAP_PROP))
            return {str(c).lower() for c in names if c}, {WAP_PROP: wap or ""}, target
        except Exception as e:  # noqa: BLE001 - the py4j path below decides
            log.debug("schema of %s through the helper: %s", table, java_error_text(e))
    handle = tablemeta.open_table(spark, table, read=False)
    if handle is not None:
        try:  # the schema and the one property sparkmark looks at, not the whole document
            base = handle.base
            return ({c.lower() for c in handle.columns(base)},
                    {WAP_PROP: str(base.property(WAP_PROP, ""))}, handle)
        except Exception as e:  # noqa: BLE001 - the catalog's answers below decide
            log.debug("schema of %s through the Java API: %s", table, java_error_text(e))
    try:
        exists = spark.catalog.tableExists(table)
    except Exception as e:  # noqa: BLE001 - an unknown catalog, a malformed name
        raise SinkError(f"cannot look up table {table}: {java_error_text(e)}; an Iceberg target is "
                        "catalog.db.table in a catalog configured as "
                        "org.apache.iceberg.spark.SparkCatalog") from None
    if not exists:
        ddl = ""
        if df is not None:
            cols = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in df.schema.fields)
            ddl = f": CREATE TABLE {table} ({cols}) USING iceberg"
        raise SinkError(f"Iceberg table {table} does not exist; sparkmark appends to an existing "
                        f"table only, so create it first{ddl}; nothing was written or committed")
    why = "its properties have no format iceberg/..."
    props: dict[str, str] = {}
    try:
        props = {str(r[0]): str(r[1]) for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    except Exception as e:  # noqa: BLE001
        why = f"cannot read its properties: {java_error_text(e)}"
    if not props.get("format", "").lower().startswith("iceberg/"):
        raise SinkError(f"table {table} is not an Apache Iceberg table ({why}); "
                        "job.write(..., format='iceberg') writes to "
                        "tables of a catalog configured as org.apache.iceberg.spark.SparkCatalog"
                        "; nothing was written or committed") from None
    return {c.lower() for c in spark.table(table).columns}, props, None


def _enable_wap(spark: "SparkSession", table: str, props: dict[str, str]) -> None:
    """Set ``write.wap.enabled=true`` unless ``props`` (the table's properties) has it."""
    if str(props.get(WAP_PROP, "")).lower() == "true":
        return
    try:  # a metadata-only commit; writers that do not set spark.wap.id are not affected
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{WAP_PROP}'='true')")
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"cannot set {WAP_PROP}=true on Iceberg table {table}, which "
                        f"sparkmark needs to stage a run's snapshot: {java_error_text(e)}") from None


def wap_snapshots(spark: "SparkSession", table: str, wap_id: str) -> list[dict[str, Any]]:
    """The snapshots of ``table`` staged or published under ``wap_id``: dicts with
    ``snapshot_id``, ``staged`` (its ``wap.id`` is ``wap_id``), ``published`` (an ancestor of
    the current snapshot that staged or cherry-picked it), ``added_records``, ``added_files``.

    Example: ``any(s["published"] for s in wap_snapshots(spark, "local.db.t", out.wap_id))``
    """
    if not _WAP_ID.match(wap_id):
        raise SinkError(f"{wap_id!r} is not a sparkmark WAP id; the ledger row is damaged")
    meta = tablemeta.load(spark, table)  # classic sessions: the metadata itself, no Spark job
    if meta is not None:
        lineage = meta.ancestors()
        return [{"snapshot_id": s.id, "staged": s.summary.get("wap.id") == wap_id,
                 "published": s.id in lineage,
                 "added_records": int(s.summary.get("added-records") or 0),
                 "added_files": int(s.summary.get("added-data-files") or 0)}
                for s in meta.snapshots
                if wap_id in (s.summary.get("wap.id"), s.summary.get("published-wap-id"))]
    # The ancestry walked here, in Python, from the current snapshot through the parent links
    # of one scan of ``snapshots`` (as Iceberg computes ``history.is_current_ancestor``): one
    # Spark job instead of the join's two.  The current snapshot is read first, so the
    # scan holds it unless the table changed in between (then: the join, below).
    current = False if _SELECTOR.match(re.findall(_PART, table)[-1].strip("`")) else \
        _current_id(spark, table)
    if current is not False:
        rows = spark.sql(
            f"SELECT snapshot_id, parent_id, summary['wap.id'], summary['published-wap-id'], "
            f"summary['added-records'], summary['added-data-files'] FROM {table}.snapshots"
        ).collect()
        parent = {int(r[0]): None if r[1] is None else int(r[1]) for r in rows}
        if current is None or current in parent:
            ancestors: set[int] = set()
            at = current
            while at is not None and at in parent and at not in ancestors:
                ancestors.add(at)
                at = parent[at]
            return [{"snapshot_id": int(r[0]), "staged": r[2] == wap_id,
                     "published": int(r[0]) in ancestors, "added_records": int(r[4] or 0),
                     "added_files": int(r[5] or 0)} for r in rows if wap_id in (r[2], r[3])]
    rows = spark.sql(
        f"SELECT s.snapshot_id, s.summary['wap.id'] AS staged, "
        f"s.summary['published-wap-id'] AS published, s.summary['added-records'] AS added, "
        f"s.summary['added-data-files'] AS files, "
        f"coalesce(h.is_current_ancestor, false) AS ancestor "
        f"FROM {table}.snapshots s LEFT JOIN {table}.history h ON s.snapshot_id = h.snapshot_id "
        f"WHERE s.summary['wap.id'] = '{wap_id}' OR s.summary['published-wap-id'] = '{wap_id}'"
    ).collect()
    return [{"snapshot_id": int(r[0]), "staged": r[1] == wap_id,
             "published": bool(r[5]), "added_records": int(r[3] or 0),
             "added_files": int(r[4] or 0)} for r in rows]


def _current_id(spark: "SparkSession", table: str) -> "int | None | bool":
    """The table's current (``main``) snapshot id from its ``current-snapshot-id`` property
    (``SHOW TBLPROPERTIES``, on the driver), ``None`` before the first snapshot, ``False`` when
    the property is not there (then the caller asks the metadata tables)."""
    props = {str(r[0]): str(r[1]) for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    value = props.get("current-snapshot-id", "")
    if value == "none":
        return None
    return int(value) if value.isdigit() else False


def _staged_snapshot(spark: "SparkSession", table: str, wap_id: str,
                     handle: "_Target | None" = None) -> "tuple[Staged | None, _Target | None]":
    """The snapshot staged under ``wap_id`` (``None``: there is none), without
    :func:`wap_snapshots`' ancestry walk, and the handle to publish it through.  With
    ``handle`` (the table the write went through) first the newest snapshots of its metadata
    as this process last saw it (the write's own commit, no I/O: one round trip through the
    helper, a few py4j calls without it, whatever the table's history), then its whole
    metadata, as last seen and refreshed; else one scan of the ``snapshots`` metadata table.
    """
    if not _WAP_ID.match(wap_id):
        raise SinkError(f"{wap_id!r} is not a sparkmark WAP id; the ledger row is damaged")
    if isinstance(handle, _JavaTarget):
        try:
            found = decode_rows(handle.target.staged(wap_id, tablemeta.STAGED_LIMIT))
            if found:
                sid, records, parent, main = found[0]
                return Staged(int(str(sid)), int(records or 0),
                              None if parent is None else int(parent),
                              None if main is None else int(main)), handle
        except Exception as e:  # noqa: BLE001 - the py4j path decides
            log.debug("staged snapshot of %s through the helper: %s", table, java_error_text(e))
        handle = handle.handle()
    if handle is not None:
        try:
            metadata = handle.table.operations().current()
            snap = handle.staged(metadata, wap_id)
            if snap is not None:
                main = metadata.currentSnapshot()
                handle.base = metadata
                return Staged(snap.id, int(snap.summary.get("added-records") or 0), snap.parent,
                              None if main is None else int(main.snapshotId())), handle
        except Exception as e:  # noqa: BLE001 - the whole document below decides
            log.debug("newest snapshots of %s: %s", table, java_error_text(e))
        for refresh in (False, True):
            meta = handle.reread(refresh)
            staged = [s for s in meta.snapshots if s.summary.get("wap.id") == wap_id]
            if staged:
                return Staged(staged[0].id, int(staged[0].summary.get("added-records") or 0),
                              staged[0].parent, meta.current), handle
        return None, handle
    rows = spark.sql(f"SELECT s.snapshot_id, s.summary['added-records'] FROM {table}.snapshots s "
                     f"WHERE s.summary['wap.id'] = '{wap_id}'").collect()
    return (Staged(int(rows[0][0]), int(rows[0][1] or 0)) if rows else None), None


def publish_table(spark: "SparkSession", run_id: str, out: TableOutput) -> None:
    """Make run ``run_id``'s staged snapshot current (idempotent: nothing happens when the
    table's ancestry already holds it).

    Example: ``publish_table(spark, run_id, TableOutput("local.db.t", wap_id, run_id))``
    """
    checked_run_id(run_id)
    known = _STAGED.pop(out.wap_id, None)
    if known is not None and known[0].spark is spark and _cherrypick(out, *known):
        return
    try:
        found = wap_snapshots(spark, out.target, out.wap_id)
    except SinkError:
        raise
    except Exception as e:  # noqa: BLE001 - the table was dropped, the catalog is gone
        raise SinkError(f"cannot publish run {run_id} to Iceberg table {out.target}: "
                        f"{java_error_text(e)}; the run stays 'pending' and is retried by the next "
                        "run of the job") from None
    if any(s["published"] for s in found):
        return
    staged = [s for s in found if s["staged"]]
    if not staged:
        raise SinkError(
            f"cannot publish run {run_id} to Iceberg table {out.target}: its staged snapshot "
            f"(wap.id {out.wap_id}) is gone (expired before the publish?), so its rows are "
            "lost; the run stays 'pending' in the ledger. Roll it back and rerun it "
            "('sparkmark bookmark reset' to the run before)")
    if staged[0]["added_records"] == 0:
        return  # nothing to show readers: an empty snapshot would only move the table
    catalog, ident = _split(spark, out.target)
    try:
        spark.sql(f"CALL {catalog}.system.cherrypick_snapshot('{ident}', "
                  f"{staged[0]['snapshot_id']})").collect()
    except Exception as e:  # noqa: BLE001
        if "DuplicateWAPCommitException" in str(e):  # published meanwhile: Iceberg refuses
            return
        raise SinkError(f"cannot publish run {run_id} to Iceberg table {out.target}: "
                        f"{java_error_text(e)}; the run stays 'pending' and is retried by the next "
                        "run of the job") from None


def _cherrypick(out: TableOutput, handle: "_Target", staged: Staged) -> bool:
    """Publish what this process staged moments ago: a fast-forward or the cherry-pick, as
    one Iceberg commit through the Java table the write used (no SQL procedure, no
    metadata-table scan).  The ancestry walk of :func:`publish_table` is not needed here: the
    WAP id is fresh and the run holds the job's lease, and Iceberg itself refuses a second
    publish of one WAP id or of an ancestor.  False: the caller takes the general path (which
    reports errors)."""
    if staged.records == 0:
        return True  # nothing to show readers: an empty snapshot would only move the table
    spark = handle.spark
    done = _fast_forward(handle, staged)
    if not done:
        if isinstance(handle, _JavaTarget):
            handle = handle.handle()
        try:
            handle.table.manageSnapshots().cherrypick(staged.id).commit()
        except Exception as e:  # noqa: BLE001
            text = str(e)
            if "DuplicateWAPCommitException" in text or \
                    "CherrypickAncestorCommitException" in text:
                return True  # published already (Iceberg checked the ancestry)
            return False
    try:  # as Iceberg's procedures do: cached DataFrames of the table see the new snapshot
        if done != "done":  # the helper's fast-forward says whether anything is cached
            manager = _CACHE_MANAGERS.get(spark)
            if manager is None:
                manager = _CACHE_MANAGERS[spark] = \
                    spark._jsparkSession.sharedState().cacheManager()
            if not manager.isEmpty():
                spark.sql(f"REFRESH TABLE {out.target}")
    except Exception:  # noqa: BLE001 - the publish itself is done
        pass
    return True


#: Spark's cache manager per session (one py4j call instead of three per publish)
_CACHE_MANAGERS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _fast_forward(handle: "_Target", staged: Staged) -> str:
    """Publish the ``staged`` snapshot by moving the ``main`` branch to it, when its parent is
    the branch's snapshot in the metadata the write left (:attr:`handle.base
    <sparkmark.engine.tablemeta.TableHandle.base>`): the table then becomes exactly what Iceberg's
    cherry-pick makes of it (a fast-forward: the staged snapshot itself is current), in one
    table commit without the cherry-pick's transaction, validation and reports (6-9 ms of a
    ~20 ms publish here).  The table is refreshed first and must still be at that
    metadata, and the commit is made against it, so it fails when anyone committed to the
    table since (a stale base, Iceberg's ``CommitFailedException``); then, when the refresh
    fails (the table is gone), and on any other error, False: the caller cherry-picks,
    which refreshes, retries and decides (a commit whose outcome is unknown included: the
    cherry-pick of a snapshot already current is refused as an ancestor, taken as done).

    Returns ``"done"`` (and nothing is cached in the session: known only through the helper),
    ``"done cached"`` (cached data, or not known), or ``""`` (not done).
    """
    if staged.parent != staged.main:
        return ""
    if isinstance(handle, _JavaTarget):  # the same steps in the JVM, one round trip
        try:
            answer = str(handle.target.fastForward(staged.id))
        except Exception as e:  # noqa: BLE001 - the cherry-pick decides
            answer = f"no: {java_error_text(e)}"
        if answer.startswith("done"):
            return answer
        log.debug("fast-forward of %s to snapshot %s: %s; cherry-picking", handle.name,
                  staged.id, answer[4:])
        return ""
    base, snapshot_id = handle.base, staged.id
    if base is None:
        return ""
    try:
        ops = handle.table.operations()
        # refreshed first, as the cherry-pick's transaction does: a table that changed, or whose
        # metadata is gone (a dropped or moved table), is the cherry-pick's to decide and report
        if not ops.refresh().equals(base):
            return ""
        build = java_static(handle.spark, "org.apache.iceberg.TableMetadata", "buildFrom")
        updated = build(base).setBranchSnapshot(snapshot_id, "main").build()
        ops.commit(base, updated)
        return "done cached"
    except Exception as e:  # noqa: BLE001 - a stale base, a failed or unknown commit
        log.debug("fast-forward of %s to snapshot %s: %s; cherry-picking", handle.name,
                  snapshot_id, java_error_text(e))
        return ""


def discard_table(spark: "SparkSession", out: TableOutput) -> bool:
    """A run that did not commit: its staged snapshot stays unpublished (its WAP id is never
    published by anyone), and ``expire_snapshots`` removes it with the table's old snapshots.

    Expiring it here would also expire the table's other snapshots older than its
    ``history.expire.max-snapshot-age-ms`` (Iceberg applies that default to every expiry), a
    change to the user's table sparkmark does not make on its own.

    Example: ``discard_table(spark, out)  # True``
    """
    _STAGED.pop(out.wap_id, None)
    return True


def _split(spark: "SparkSession", table: str) -> tuple[str, str]:
    """``catalog`` and ``db.table`` for a CALL (a two-part name is in the current catalog)."""
    parts = re.findall(_PART, table)
    if len(parts) >= 3:
        return parts[0], ".".join(parts[1:])
    return spark.catalog.currentCatalog(), ".".join(parts)
