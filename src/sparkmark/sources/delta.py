"""``job.read.table`` on a Delta Lake table: a version-range read with bookmarks.

The element is the last table version a run processed, with the table's id
(:mod:`sparkmark.planning.versions`, pure, decides what to read).  At run start the source asks
the table once for its latest version (``DESCRIBE HISTORY ... LIMIT 1``), then reads its id and
properties from that version's checksum file (``_delta_log/<version>.crc``; ``DESCRIBE DETAIL``
when there is none): that version is the run's upper bound and the element it commits.  Then:

- first run (nothing committed), or bookmarks disabled: the table as of that version;
- later runs: the commits after the committed version up to it, read from the table's log
  (``_delta_log/<version>.json``, one small file per commit); an append-only range reads the
  data files those commits added, by name (what a run costs depends on what it reads, not on
  the table's size or history); with ``onNonAppend=changes`` it reads Delta's change data feed
  of the range (``readChangeFeed``, ``startingVersion``/``endingVersion``);
- nothing new: an empty DataFrame with the table's schema (the run ends ``EMPTY``);
- pause with from/to: the commits between the two runs' elements.

Tables with column mapping (``delta.columnMapping.mode`` ``name``/``id``) keep physical column
names in their files: their appends are read through the change data feed (the ``insert``
rows), which must then be on.  A table is named ``delta.`/path``` or by a catalog name whose
catalog serves Delta (``spark_catalog`` as ``DeltaCatalog``).

    df = job.read.table("delta.`/lake/orders`", transformation_ctx="orders_src")
"""
from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.core.run import ReadMode, RunContext
from sparkmark.engine.fs import open_fs
from sparkmark.engine.jvm import java_error_text
from sparkmark.planning import snapshots as sp
from sparkmark.planning import versions as vp

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger("sparkmark.delta")

#: ``delta.`/path``` (Delta's own spelling of a table by path)
DELTA_PATH = re.compile(r"^delta\.`([^`]+)`$", re.IGNORECASE)
_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)"
_NAME = re.compile(rf"{_PART}(?:\.{_PART})*")
#: Delta read options that would fight the bookmark
REJECTED = ("versionasof", "timestampasof", "startingversion", "endingversion",
            "startingtimestamp", "endingtimestamp", "readchangefeed", "readchangedata")


def is_delta_table(spark: Any, name: str) -> bool:
    """Whether ``name`` is a Delta table: ``delta.`/path```, or a catalog table whose
    properties are Delta's (``SHOW TBLPROPERTIES``; a catalog configured as Iceberg's is
    never asked).

    Example: ``is_delta_table(spark, "delta.`/lake/orders`")  # True``
    """
    if DELTA_PATH.match(name.strip()):
        return True
    parts = re.findall(r"`[^`]+`|[^.]+", name.strip())
    catalog = parts[0].strip("`") if len(parts) >= 3 else "spark_catalog"
    try:
        impl = str(spark.conf.get(f"spark.sql.catalog.{catalog}", "") or "")
    except Exception:  # noqa: BLE001 - a Connect session without the key
        impl = ""
    if "iceberg" in impl.lower():
        return False
    try:
        keys = [str(r[0]) for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()]
    except Exception:  # noqa: BLE001 - not a table this catalog knows: the Iceberg path says so
        return False
    return any(k.startswith("delta.") for k in keys)


def split_options(options: dict[str, Any] | None) -> tuple[str, dict[str, str]]:
    """``onNonAppend`` (validated) and the options passed through to Delta's reader (pure).

    Example: ``split_options({"onNonAppend": "skip"}) == ("skip", {})``
    """
    return sp.split_read_options(options, REJECTED, "versions")


class _Detail:
    """A table's location, id and properties: from its log's checksum file of ``version``
    (``_delta_log/<version>.crc``, which Delta writes with each commit) when there is one,
    else from ``DESCRIBE DETAIL``, which rebuilds the table's whole state (a shuffle: ~3 s on a
    1,000,000-row table after each new version, against one small file read)."""

    def __init__(self, spark: Any, name: str, version: int | None = None) -> None:
        fast = _from_checksum(spark, name, version) if version is not None else None
        if fast is not None:
            self.location, self.table_id, self.properties = fast
            return
        try:
            row = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0].asDict()
        except Exception as e:  # noqa: BLE001 - analysis errors, py4j errors, Connect errors
            raise SourceError(f"cannot read Delta table {name}: {java_error_text(e)}; check the "
                              "name (delta.`/path` or catalog.db.table) and that the session "
                              "has Delta's jars and settings (spark.sql.extensions "
                              "io.delta.sql.DeltaSparkSessionExtension)") from None
        if str(row.get("format") or "").lower() != "delta":
            raise SourceError(f"table {name} is not a Delta table (format "
                              f"{row.get('format')!r})")
        self.location = str(row["location"]).rstrip("/")
        self.table_id = str(row.get("id")) if row.get("id") is not None else None
        self.properties = {str(k): str(v) for k, v in (row.get("properties") or {}).items()}

    @property
    def cdf(self) -> bool:
        return self.properties.get("delta.enableChangeDataFeed", "").lower() == "true"

    @property
    def column_mapping(self) -> bool:
        return self.properties.get("delta.columnMapping.mode", "none").lower() in ("name", "id")


def _from_checksum(spark: Any, name: str, version: int
                   ) -> tuple[str, str | None, dict[str, str]] | None:
    """``(location, id, properties)`` from the table's checksum file of ``version``; ``None``
    when it cannot tell (no such file, another layout, a catalog name it cannot place)."""
    try:
        m = DELTA_PATH.match(name)
        if m is not None:
            location = m.group(1)
        else:
            info = {str(r[0]).strip(): r[1] for r in
                    spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect() if r[0]}
            if str(info.get("Provider") or "").lower() != "delta" or not info.get("Location"):
                return None
            location = str(info["Location"])
        fs = open_fs(spark, location, what="Delta table")
        location = str(fs.qualify(location).toString()).rstrip("/")
        text = fs.read_text(fs.path(f"{location}/_delta_log/{version:020d}.crc"))
        meta = json.loads(text).get("metadata") if text else None
        if not isinstance(meta, dict) or not meta.get("id"):
            return None
        props = {str(k): str(v) for k, v in (meta.get("configuration") or {}).items()}
        return location, str(meta["id"]), props
    except Exception:  # noqa: BLE001 - any doubt: DESCRIBE DETAIL says it
        return None


def latest_version(spark: Any, name: str) -> tuple[int, int | None]:
    """The table's latest version and its commit time in ms (``DESCRIBE HISTORY ... LIMIT 1``).

    Example: ``latest_version(spark, "delta.`/lake/orders`")  # (12, 1733400000000)``
    """
    try:
        row = spark.sql(f"DESCRIBE HISTORY {name} LIMIT 1").collect()[0]
    except Exception as e:  # noqa: BLE001
        raise SourceError(f"cannot read Delta table {name} (its history): "
                          f"{java_error_text(e)}; check the name (delta.`/path` or "
                          "catalog.db.table) and that the session has Delta's jars and settings "
                          "(spark.sql.extensions io.delta.sql.DeltaSparkSessionExtension)"
                          ) from None
    ts = row["timestamp"]
    return int(row["version"]), (int(ts.timestamp() * 1000) if ts is not None else None)


def read_commits(spark: Any, location: str, first: int, last: int) -> list[vp.Commit]:
    """The commits ``first..last`` from the table's log (a version whose file is gone is left
    out: the planner names it).

    Example: ``read_commits(spark, "file:/lake/orders", 11, 12)``
    """
    fs = open_fs(spark, location, what="Delta table")
    out: list[vp.Commit] = []
    for v in range(first, last + 1):
        text = fs.read_text(fs.path(f"{location}/_delta_log/{v:020d}.json"))
        if text is not None:
            out.append(vp.parse_commit(v, text))
    return out


def _full(location: str, path: str) -> str:
    """A data file's path from the log's spelling (URL-encoded, relative or absolute)."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path):
        return unquote(path)
    return f"{location}/{unquote(path)}"


def read_delta(run: RunContext, name: str, transformation_ctx: str | None = None,
               options: dict[str, Any] | None = None) -> "DataFrame":
    """Rows of Delta table ``name`` committed since the last processed version (the whole
    table as of its latest version without a bookmark).

    Example: ``read_delta(job, "delta.`/lake/orders`", "orders_src", {"onNonAppend": "skip"})``
    """
    bm = run.bookmark(transformation_ctx)
    if not isinstance(name, str) or not (DELTA_PATH.match(name.strip())
                                         or _NAME.fullmatch(name.strip())):
        raise ConfigError(f"table must be delta.`/path` or a table name such as db.table, not "
                          f"{name!r}")
    name = name.strip()
    policy, reader_opts = split_options(options)
    ctx = str(transformation_ctx)
    spark = run.spark
    ts: int | None = None
    if bm.mode is ReadMode.REPLAY:
        after, after_id = vp.read_element(bm.previous, name, ctx, "--job-bookmark-from run's")
        through, _ = vp.read_element(bm.upper, name, ctx, "--job-bookmark-to run's")
        detail = _Detail(spark, name)
    else:
        after, after_id = (vp.read_element(bm.previous, name, ctx)
                           if bm.mode is ReadMode.INCREMENTAL else (None, None))
        through, ts = latest_version(spark, name)
        detail = _Detail(spark, name, through)
    commits: list[vp.Commit] = []
    if bm.mode is not ReadMode.ALL and after is not None and through is not None \
            and through > after:
        commits = read_commits(spark, detail.location, after + 1, through)
    plan = vp.plan_delta_read(str(bm.mode), commits, after, through, policy, table=name,
                              ctx=ctx, after_id=after_id, table_id=detail.table_id,
                              cdf_enabled=detail.cdf)
    df = _load(spark, name, ctx, detail, plan, reader_opts, ts)

    info: dict[str, Any] = {
        "source": "table", "format": "delta", "table": name, "mode": plan.mode,
        "read": plan.kind, "from_version": plan.after, "to_version": plan.through,
        "operations": plan.operations(), "on_non_append": policy, "new_input": plan.new_input,
        "files": len(plan.files),
    }
    if plan.skipped:
        info["skipped_versions"] = [{"version": c.version, "operation": c.operation}
                                    for c in plan.skipped]
    log.info("delta read of %s (ctx %s): mode=%s read=%s from=%s to=%s", name,
             transformation_ctx, plan.mode, plan.kind, plan.after, plan.through)
    element = None if bm.mode is ReadMode.ALL else vp.make_element(name, plan.through,
                                                                   detail.table_id)
    run.record_read(transformation_ctx, element, info)
    return df


def _load(spark: Any, name: str, ctx: str, detail: _Detail, plan: vp.DeltaPlan,
          opts: dict[str, str], ts: int | None) -> "DataFrame":
    reader = spark.read.format("delta").options(**opts)
    try:
        if plan.kind == vp.CHANGELOG:
            return _changes(spark, detail, plan.after + 1 if plan.after is not None else 0,
                            plan.through, opts)
        as_of = reader.option("versionAsOf", str(plan.through)).load(detail.location)
        if plan.kind == vp.APPENDS and plan.files:
            df = _appended(spark, name, ctx, detail, plan, as_of, opts)
        elif plan.kind == vp.AS_OF:
            df = as_of
        else:
            df = as_of.limit(0)
        if plan.changelog:  # the change feed's columns on every run
            df = _as_inserts(df, plan.through, ts)
        return df
    except SourceError:
        raise
    except Exception as e:  # noqa: BLE001 - Spark resolves the table here
        raise SourceError(f"Spark cannot read Delta table {name} ({plan.kind}, versions "
                          f"{plan.after}..{plan.through}): {java_error_text(e)}") from None


def _appended(spark: Any, name: str, ctx: str, detail: _Detail, plan: vp.DeltaPlan,
              as_of: "DataFrame", opts: dict[str, str]) -> "DataFrame":
    """The rows of the data files the append commits in range added: by name, under the
    table's schema as of the upper version (partition values from the Hive-style folders);
    through the change feed for a column-mapped table."""
    if detail.column_mapping:
        if not detail.cdf:
            raise SourceError(
                f"Delta table {name} uses column mapping (delta.columnMapping.mode), so its "
                "data files keep physical column names and sparkmark reads its appended rows "
                "through the change data feed, which is off: run ALTER TABLE ... SET "
                "TBLPROPERTIES (delta.enableChangeDataFeed = true), then read again")
        from pyspark.sql import functions as F
        assert plan.after is not None
        rows = _changes(spark, detail, plan.after + 1, plan.through, opts)
        return rows.where(F.col("_change_type") == "insert").drop(*vp.CHANGE_COLUMNS)
    paths = [_full(detail.location, f) for f in plan.files]
    removed_later = {r for c in plan.commits for r in c.removed}
    suspect = [p for f, p in zip(plan.files, paths) if f in removed_later] \
        if plan.mode != vp.REPLAY else paths
    if suspect:
        fs = open_fs(spark, detail.location, what="Delta table")
        gone = [p for p in suspect if not fs.exists(fs.path(p))]
        if gone:
            raise SourceError(
                f"the lineage of Delta table {name} is broken: {len(gone)} data file(s) the "
                f"versions {plan.after}..{plan.through} added are gone (VACUUM), e.g. "
                f"{gone[0]}; {vp.way_out(ctx)}")
    return (spark.read.schema(as_of.schema).option("basePath", detail.location)
            .parquet(*paths))


def _changes(spark: Any, detail: _Detail, first: int, last: int | None,
             opts: dict[str, str]) -> "DataFrame":
    return (spark.read.format("delta").options(**opts).option("readChangeFeed", "true")
            .option("startingVersion", str(first)).option("endingVersion", str(last))
            .load(detail.location))


def _as_inserts(df: "DataFrame", version: int | None, ts: int | None) -> "DataFrame":
    """The table's rows as change rows: each an ``insert`` of ``version``."""
    from pyspark.sql import functions as F
    stamp = (F.lit(ts / 1000).cast("timestamp") if ts is not None
             else F.lit(None).cast("timestamp"))
    return df.select("*", F.lit("insert").alias("_change_type"),
                     F.lit(version).cast("bigint").alias("_commit_version"),
                     stamp.alias("_commit_timestamp"))
