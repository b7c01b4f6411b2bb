"""``job.read.table``: an Apache Iceberg table read with bookmarks.

The element is the last snapshot a run processed (``{"table": name, "snapshot_id": id}``).
At run start the source reads the table's current snapshot once (the ``main`` branch: the
``current-snapshot-id`` table property, else the ``refs`` metadata table; :func:`current_snapshot`):
that is the run's upper bound, and the element it commits.  Then:

- first run (nothing committed), or bookmarks disabled: the table as of that snapshot;
- later runs: the snapshots after the committed one up to it, walked back through their parent
  links (the ``snapshots`` metadata table); when the committed snapshot is not an ancestor
  (expired snapshots, a rollback, a recreated table) the run fails naming
  ``sparkmark bookmark reset`` / ``bookmark set``.  A ``delete`` or ``overwrite`` snapshot in
  range follows option ``onNonAppend``: ``fail`` (default), ``skip``, which reads the rows
  appended in the range only (Iceberg's incremental read, ``start-snapshot-id`` exclusive,
  ``end-snapshot-id`` inclusive: it returns every row appended in the range, rows deleted later
  included, and never the rows an overwrite rewrote), or ``changes`` (below);
- nothing new: an empty DataFrame with the table's schema (the run ends ``EMPTY``);
- pause with from/to: the snapshots between the two runs' elements.

``onNonAppend=changes`` reads change rows on every run, so the DataFrame always has the table's
columns then ``_change_type`` (``INSERT``/``DELETE``), ``_change_ordinal`` and
``_commit_snapshot_id``: a range (appends only or not) is Iceberg's changelog through
``CALL <catalog>.system.create_changelog_view`` (which drops the carry-over rows a copy-on-write
rewrite produces: rows of a rewritten file that did not change), ``start-snapshot-id``
exclusive, ``end-snapshot-id`` inclusive; a first run (or bookmarks disabled) gives every row of
the table as of the upper snapshot as an ``INSERT`` of that snapshot with ordinal 0; nothing new
gives no row.  Iceberg's changelog scan refuses delete files (merge-on-read): a range with a
snapshot that has them fails before anything is read (the check is on the snapshots' summaries,
as Iceberg would only fail when the rows are collected).

The decision itself is pure: :mod:`sparkmark.planning.snapshots`.
"""
from __future__ import annotations

import logging
import re
import uuid
from typing import TYPE_CHECKING, Any

from sparkmark.engine.compat import classic_dataframe, is_connect
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.engine import tablemeta
from sparkmark.engine.jvm import encode_rows, helper, java_error_text
from sparkmark.planning import snapshots as sp
from sparkmark.core.run import ReadMode, RunContext

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("sparkmark.table")

#: options sparkmark uses itself (everything else goes to Spark's Iceberg reader)
OWN_OPTIONS = ("onNonAppend",)
#: Iceberg read options that would fight the bookmark
REJECTED = ("snapshot-id", "as-of-timestamp", "start-snapshot-id", "end-snapshot-id", "branch",
            "tag", "start-timestamp", "end-timestamp", "versionasof", "timestampasof")
_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)"
_NAME = re.compile(rf"{_PART}(?:\.{_PART})*")
#: the last name part Iceberg reads as a branch, tag or time travel (``t.branch_dev``)
_SELECTOR = tablemeta.SELECTOR


def read_table(run: RunContext, name: str, transformation_ctx: str | None = None,
               options: dict[str, Any] | None = None) -> "DataFrame":
    """Rows of Iceberg table ``name`` committed since the last processed snapshot (the whole
    table as of its current snapshot without a bookmark).

    Example: ``read_table(job, "local.db.orders", "orders_src", {"onNonAppend": "skip"})``
    """
    bm = run.bookmark(transformation_ctx)
    if not isinstance(name, str) or not _NAME.fullmatch(name.strip()):
        raise ConfigError(f"table must be a table name such as catalog.db.table, not {name!r}")
    name = name.strip()
    policy, reader_opts = split_options(options)
    ctx = str(transformation_ctx)
    spark = run.spark

    handle: tablemeta.TableHandle | None = None
    look: tablemeta.RangeLook | None = None
    top: tablemeta.SnapshotMeta | int | None = None
    if bm.mode is ReadMode.REPLAY:
        after = sp.read_element(bm.previous, name, ctx, "--job-bookmark-from run's")
        through = top = sp.read_element(bm.upper, name, ctx, "--job-bookmark-to run's")
    else:
        after = (sp.read_element(bm.previous, name, ctx) if bm.mode is ReadMode.INCREMENTAL
                 else None)
        # classic sessions: the table refreshed once, its current snapshot and the range's
        # snapshots read in one round trip through the helper, else call by call
        look = tablemeta.look_range(spark, name, after) if after is not None else None
        handle = (tablemeta.open_table(spark, name, read=False)
                  if after is not None and look is None else None)
        current: tablemeta.SnapshotMeta | None = None
        if look is not None:
            current = look.current
        elif handle is not None:
            try:
                current = handle.current(handle.base)
            except Exception as e:  # noqa: BLE001 - the table property / refs answer instead
                log.debug("current snapshot of %s: %s", name, java_error_text(e))
                handle = None
        if look is not None or handle is not None:
            top, through = current, None if current is None else current.id
        else:
            through = current_snapshot(spark, name)
    needs_list = bm.mode is not ReadMode.ALL and after is not None and through is not None \
        and after != through
    snaps: list[sp.Snapshot] = []
    if needs_list:
        assert after is not None
        if look is None and handle is None and isinstance(top, int):  # a replay
            look = tablemeta.look_range(spark, name, after, top)
        if look is not None and look.chain is not None:
            snaps = [_as_snapshot(s) for s in look.chain]
        elif look is not None and look.meta is not None:
            snaps = table_snapshots(look.meta)
        else:
            snaps = _range_snapshots(spark, name, handle, top, after)
    plan = sp.plan_read(str(bm.mode), snaps, after, through, policy, table=name, ctx=ctx)
    df = _load(spark, name, plan, reader_opts)

    info: dict[str, Any] = {
        "source": "table", "format": "iceberg", "table": name, "mode": plan.mode,
        "read": plan.kind, "from_snapshot": plan.after, "to_snapshot": plan.through,
        "operations": plan.operations(), "on_non_append": policy, "new_input": plan.new_input,
    }
    if plan.skipped:
        info["skipped_snapshots"] = [{"snapshot_id": s.id, "operation": s.operation}
                                     for s in plan.skipped]
    log.info("table read of %s (ctx %s): mode=%s read=%s from=%s to=%s", name,
             transformation_ctx, plan.mode, plan.kind, plan.after, plan.through)
    element = None if bm.mode is ReadMode.ALL else sp.make_element(name, plan.commit)
    run.record_read(transformation_ctx, element, info)
    return df


def split_options(options: dict[str, Any] | None) -> tuple[str, dict[str, str]]:
    """``onNonAppend`` (validated) and the options passed through to Spark's reader (pure).

    Example: ``split_options({"onNonAppend": "skip", "split-size": 1 << 27})``
    """
    return sp.split_read_options(options, REJECTED, "snapshots")


def table_snapshots(meta: tablemeta.TableMetadata) -> list[sp.Snapshot]:
    """The snapshot list the planner takes, from the table's metadata (pure).

    Example: ``table_snapshots(tablemeta.TableMetadata(None, []))  # []``
    """
    return [_as_snapshot(s) for s in meta.snapshots]


def _as_snapshot(s: tablemeta.SnapshotMeta) -> sp.Snapshot:
    return sp.Snapshot(s.id, s.parent, s.summary.get("operation", ""),
                       _count(s.summary.get("total-delete-files")))


def _range_snapshots(spark: Any, name: str, handle: tablemeta.TableHandle | None,
                     top: tablemeta.SnapshotMeta | int | None, after: int) -> list[sp.Snapshot]:
    """The snapshots the planner needs for the range after ``after`` up to ``top``.

    On classic sessions, the range itself: its snapshots read one by one from the table's
    metadata, following parent links back from ``top`` (what a run costs then depends on the
    snapshots it reads, not on the table's history).  When that walk does not reach ``after``
    within its limit (a broken lineage, or a long range), every snapshot of the metadata, as
    the planner then needs them all to name the problem; elsewhere (Spark Connect) the
    ``snapshots`` metadata table.
    """
    if handle is None and isinstance(top, int):  # a replay: the table is not open yet
        handle = tablemeta.open_table(spark, name, read=False)
    if handle is not None:
        try:
            chain = handle.walk(handle.base, top, after)
        except Exception as e:  # noqa: BLE001 - py4j errors: the whole document decides
            log.debug("snapshots of %s one by one: %s", name, java_error_text(e))
            chain = None
        if chain is not None:
            return [_as_snapshot(s) for s in chain]
        try:
            return table_snapshots(handle.reread(refresh=False))
        except Exception as e:  # noqa: BLE001 - the metadata table gives the error to show
            log.debug("metadata of %s: %s", name, java_error_text(e))
    return snapshot_list(spark, name)


def current_snapshot(spark: Any, name: str) -> int | None:
    """The snapshot id of the table's ``main`` branch (``None``: no snapshot yet).

    Iceberg's Spark table reports it as property ``current-snapshot-id`` (``none`` before the
    first snapshot; Iceberg's current snapshot is the ``main`` branch's), which ``SHOW
    TBLPROPERTIES`` returns from the driver without a Spark job (a ``refs`` query runs one: about
    a tenth of a second per run).  When that is not at hand (not an Iceberg table, a name with a
    branch, tag or time-travel suffix, an error) the ``refs`` metadata table answers, with its
    error.

    Example: ``current_snapshot(spark, "local.db.orders")``
    """
    if not _SELECTOR.match(name.rsplit(".", 1)[-1].strip("`")):
        try:
            props = {str(r[0]): str(r[1])
                     for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
        except Exception:  # noqa: BLE001 - the refs query below gives the error
            props = {}
        value = props.get("current-snapshot-id", "")
        if props.get("format", "").lower().startswith("iceberg/") and (
                value == "none" or value.isdigit()):
            return None if value == "none" else int(value)
    rows = _sql(spark, name, f"SELECT snapshot_id FROM {name}.refs "
                             "WHERE name = 'main' AND type = 'BRANCH'")
    return int(rows[0][0]) if rows else None


def snapshot_list(spark: Any, name: str) -> list[sp.Snapshot]:
    """Every snapshot of the table still in its metadata (``id, parent, operation`` and the
    summary's ``total-delete-files``).

    Example: ``[s.operation for s in snapshot_list(spark, "local.db.orders")]``
    """
    rows = _sql(spark, name, "SELECT snapshot_id, parent_id, operation, "
                             f"summary['total-delete-files'] FROM {name}.snapshots")
    return [sp.Snapshot(int(r[0]), None if r[1] is None else int(r[1]), str(r[2] or ""),
                        _count(r[3])) for r in rows]


def _count(raw: Any) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 0  # no summary key: written by an engine that does not keep totals


def _sql(spark: Any, name: str, query: str) -> list[Any]:
    try:
        return list(spark.sql(query).collect())
    except Exception as e:  # noqa: BLE001 - Spark's analysis errors, py4j errors, Connect errors
        raise SourceError(f"cannot read the snapshots of table {name}: {java_error_text(e)}; "
                          "job.read.table reads Apache Iceberg tables through a Spark catalog "
                          "(catalog.db.table); check the name and the session's catalog "
                          "settings") from None


def _load(spark: Any, name: str, plan: sp.TablePlan, opts: dict[str, str]) -> "DataFrame":
    try:
        if plan.kind == sp.CHANGELOG:
            return _changelog(spark, name, plan, opts)
        if plan.kind == sp.APPENDS:
            return _iceberg_reader(spark, name, {
                **opts, "start-snapshot-id": str(plan.after),
                "end-snapshot-id": str(plan.through)})
        if plan.through is None:  # no snapshot yet: the table as it is (empty)
            df = _iceberg_reader(spark, name, opts)
        else:
            # Spark's own time-travel option: Iceberg 1.11+ refuses its old ``snapshot-id``
            df = _iceberg_reader(spark, name, {**opts, "versionAsOf": str(plan.through)})
        if plan.changelog:  # the changelog's columns on every run
            df = _as_inserts(df, plan.through)
        return df.limit(0) if plan.kind == sp.NOTHING else df
    except Exception as e:  # noqa: BLE001 - Spark resolves the table here
        raise SourceError(f"Spark cannot read table {name} ({plan.kind}, snapshots "
                          f"{plan.after}..{plan.through}): {java_error_text(e)}") from None


def _iceberg_reader(spark: Any, name: str, opts: dict[str, str]) -> "DataFrame":
    """``spark.read.format("iceberg").options(**opts).load(name)``: on a classic session
    through sparkmark's Java helper, the same calls in the driver JVM in one py4j round trip
    (five and more call by call); where the helper is not at hand, or raised (Spark's
    resolution errors among others), call by call, which gives the error to show."""
    made = None if is_connect(spark) else helper(spark, "SparkmarkTableHelper")
    if made is not None:
        try:
            return classic_dataframe(spark, made.load(spark._jsparkSession, name,
                                                      encode_rows(list(opts.items()))))
        except Exception as e:  # noqa: BLE001 - the call-by-call path decides and says why
            log.debug("reading table %s through the helper: %s", name, java_error_text(e))
    return spark.read.format("iceberg").options(**opts).load(name)


def _as_inserts(df: "DataFrame", snapshot: int | None) -> "DataFrame":
    """The table's rows as change rows: each an ``INSERT`` of ``snapshot``, ordinal 0."""
    from pyspark.sql import functions as F
    return df.select("*", F.lit("INSERT").alias("_change_type"),
                     F.lit(0).cast("int").alias("_change_ordinal"),
                     F.lit(snapshot).cast("bigint").alias("_commit_snapshot_id"))


def _changelog(spark: Any, name: str, plan: sp.TablePlan, opts: dict[str, str]) -> "DataFrame":
    """Iceberg's change rows after ``plan.after`` up to ``plan.through``, carry-over rows removed,
    through ``create_changelog_view`` (a temporary view with a name of its own; dropped again
    on a classic session, whose DataFrame keeps the resolved plan)."""
    parts = _parts(name)
    proc = (f"{parts[0]}.system" if len(parts) > 2 else "system") + ".create_changelog_view"
    view = f"sparkmark_changes_{uuid.uuid4().hex}"
    read_opts = {**opts, "start-snapshot-id": str(plan.after),
                 "end-snapshot-id": str(plan.through)}
    pairs = ", ".join(f"{_lit(k)}, {_lit(v)}" for k, v in read_opts.items())
    spark.sql(f"CALL {proc}(table => {_lit(name)}, options => map({pairs}), "
              f"changelog_view => {_lit(view)})").collect()
    df = spark.table(view)
    if not is_connect(spark):
        spark.catalog.dropTempView(view)
    return df


def _parts(name: str) -> list[str]:
    return re.findall(r"`[^`]+`|[^.]+", name)


def _lit(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
