"""``GlueContext``: ``create_dynamic_frame`` and ``write_dynamic_frame`` over sparkmark.

    glueContext = GlueContext(SparkContext.getOrCreate())
    frame = glueContext.create_dynamic_frame.from_catalog(database="db", table_name="t",
                                                          transformation_ctx="src")
    glueContext.write_dynamic_frame.from_options(frame=frame, connection_type="s3",
                                                 connection_options={"path": "s3://b/out"},
                                                 format="parquet")

While a Glue ``Job`` is running (between ``job.init`` and ``job.commit``), reads go through its
bookmarks (``job.read.files`` / ``job.read.jdbc``) and writes through its exactly-once sinks
(``job.write`` / ``job.write_jdbc``), with Glue's schema (no ``sm_run_id`` columns unless env
``SPARKMARK_GLUE_STAMP=1``).  With no running job (AWS's ``examples/`` scripts have none, and
some scripts read before ``job.init``) they work as Glue does without bookmarks: every read
reads everything, every write is a plain Spark append, and nothing goes to the ledger.

Supported connection types: ``s3`` and ``file`` (paths; ``s3://`` goes through
``SPARKMARK_PATH_MAP``), and the JDBC types ``postgresql``, ``mysql``, ``sqlserver``, ``oracle``,
``jdbc`` (``url``, ``dbtable``, ``user``, ``password``; ``jobBookmarkKeys`` and
``jobBookmarkKeysSortOrder`` for bookmarks).  ``from_catalog`` finds the table in the Spark
catalog or in ``SPARKMARK_GLUE_CATALOG`` (see :mod:`sparkmark.glue.catalog`).
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from typing import TYPE_CHECKING, Any, Mapping

from sparkmark.core.errors import ConfigError, SinkError, SourceError
from sparkmark.core.options import DISABLE
from sparkmark.glue import catalog as _catalog
from sparkmark.glue import formats, paths
from sparkmark.glue._common import (GlueUnsupportedError, as_options, attribute_error, module_getattr,
                      unsupported_message)
from sparkmark.glue.dynamicframe import DynamicFrame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparkmark.lifecycle.job import Job as SparkmarkJob

FILE_TYPES = ("s3", "file")
JDBC_TYPES = ("postgresql", "mysql", "sqlserver", "oracle", "jdbc")
#: Glue's S3 connection options sparkmark's file source implements
_S3_BOOKMARK = ("recurse", "exclusions", "boundedFiles", "boundedSize", "maxBand",
                "maxFilesInBand")
#: Glue's S3 connection options that only tune performance: accepted and ignored
_S3_IGNORED = ("groupFiles", "groupSize", "compressionType", "useS3ListImplementation",
               "isFailFast", "optimizePerformance")
_S3_UNSUPPORTED = {
    "excludeStorageClasses": "storage classes do not exist outside S3",
    "jsonPath": "select the fields with frame.toDF()",
}
_JDBC_KEYS = ("url", "dbtable", "user", "password", "jobBookmarkKeys",
              "jobBookmarkKeysSortOrder", "jobBookmarksKeysSortOrder",
              "customJdbcDriverClassName")
_JDBC_HASH = ("hashfield", "hashexpression", "hashpartitions")
_JDBC_IGNORED = ("bulkSize", "sampleQuery", "enablePartitioningForSampleQuery")
STAMP_ENV = "SPARKMARK_GLUE_STAMP"
_CONNECTION_HINTS = {
    "dynamodb": None, "kinesis": "use Spark Structured Streaming", "kafka": "use Spark "
    "Structured Streaming", "mongodb": "use the MongoDB Spark connector",
    "documentdb": "use the MongoDB Spark connector", "redshift": "use connection_type "
    "'postgresql' with the Redshift JDBC URL, or the jdbc connection type",
    "custom.spark": None, "marketplace.spark": None, "opensearch": None,
}

_CONTEXT_HINTS: dict[str, str | None] = {
    "transition_s3_path": "storage classes do not exist outside S3",
    "transition_table": "storage classes do not exist outside S3",
    "getSource": "use glueContext.create_dynamic_frame.from_options",
    "getSinkWithFormat": "use glueContext.getSink(...) then sink.setFormat(...)",
    "create_dynamic_frame_from_rdd": "use DynamicFrame.fromDF(spark.createDataFrame(rdd), "
                                     "glueContext, name)",
    "create_data_frame_from_catalog": "use create_dynamic_frame.from_catalog(...).toDF()",
    "create_data_frame_from_options": "use create_dynamic_frame.from_options(...).toDF()",
    "create_data_frame": "use create_dynamic_frame.from_catalog(...).toDF()",
    "forEachBatch": "use Spark Structured Streaming's foreachBatch",
    "add_ingestion_time_columns": "add the columns with the DataFrame API",
    "begin_transaction": "sparkmark commits state and output together at job.commit()",
    "commit_transaction": "sparkmark commits state and output together at job.commit()",
    "cancel_transaction": "sparkmark discards a run's output when it fails",
    "get_catalog_schema_as_spark_schema": None,
}


class GlueLogger:
    """``glueContext.get_logger()``: info/warn/error to Python's logging ('sparkmark.glue').

        logger = glueContext.get_logger()
        logger.info("starting")
    """

    def __init__(self) -> None:
        self._log = logging.getLogger("sparkmark.glue")

    def info(self, msg: Any) -> None:
        """``logger.info("text")``."""
        self._log.info(msg)

    def warn(self, msg: Any) -> None:
        """``logger.warn("text")``."""
        self._log.warning(msg)

    warning = warn

    def error(self, msg: Any) -> None:
        """``logger.error("text")``."""
        self._log.error(msg)


class GlueContext:
    """``GlueContext(sc)`` with ``.spark_session``, ``create_dynamic_frame``,
    ``write_dynamic_frame``, ``getSink``, ``purge_s3_path``/``purge_table`` and
    ``extract_jdbc_conf``.

        glueContext = GlueContext(SparkContext.getOrCreate())
        spark = glueContext.spark_session
    """

    def __init__(self, sparkContext: Any, **options: Any):
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        from sparkmark.engine.fs import is_connect
        if is_connect(sparkContext):  # Spark Connect: a session, no SparkContext at all
            session, sparkContext = sparkContext, None
        elif isinstance(sparkContext, SparkSession):
            session = sparkContext
            sparkContext = session.sparkContext
        elif isinstance(sparkContext, SparkContext):
            session = SparkSession.builder.getOrCreate()
            if session.sparkContext is not sparkContext:  # pragma: no cover - one context/JVM
                session = SparkSession(sparkContext)
        else:
            raise ConfigError(f"GlueContext needs the SparkContext, not "
                              f"{type(sparkContext).__name__}: GlueContext(SparkContext())")
        if options:
            raise GlueUnsupportedError(unsupported_message(
                f"GlueContext options {sorted(options)}",
                "configure Spark through SparkConf or spark-defaults.conf"))
        self._sc = sparkContext
        self.spark_session = session
        self._jobs: list[Any] = []
        self.create_dynamic_frame = DynamicFrameReader(self)
        self.write_dynamic_frame = DynamicFrameWriter(self)

    # -- the running job
    def attach_job(self, job: Any) -> None:
        """Called by ``Job(glueContext)``: its runs become this context's running job."""
        self._jobs.append(job)

    @property
    def sparkmark_job(self) -> "SparkmarkJob | None":
        """The running :class:`sparkmark.Job` (between ``job.init`` and ``job.commit``), or
        ``None``: then reads read everything and writes are plain, as in Glue without a job."""
        for glue_job in reversed(self._jobs):
            if glue_job.sparkmark_job.active:
                return glue_job.sparkmark_job
        return None

    @property
    def sparkContext(self):
        """The SparkContext: ``glueContext.sparkContext``.

            sc = glueContext.sparkContext
        """
        return self._sc

    def get_logger(self) -> GlueLogger:
        """``glueContext.get_logger().info("...")``."""
        return GlueLogger()

    # -- Glue's flat method names
    def create_dynamic_frame_from_options(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        """Same as ``create_dynamic_frame.from_options``.

            glueContext.create_dynamic_frame_from_options("s3", {"paths": ["s3://b/in"]},
                                                          format="json")
        """
        return self.create_dynamic_frame.from_options(*args, **kwargs)

    def create_dynamic_frame_from_catalog(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        """Same as ``create_dynamic_frame.from_catalog``.

            glueContext.create_dynamic_frame_from_catalog(database="db", table_name="t")
        """
        return self.create_dynamic_frame.from_catalog(*args, **kwargs)

    def write_dynamic_frame_from_options(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        """Same as ``write_dynamic_frame.from_options``.

            glueContext.write_dynamic_frame_from_options(
                frame=f, connection_type="s3", connection_options={"path": "s3://b/out"},
                format="json")
        """
        return self.write_dynamic_frame.from_options(*args, **kwargs)

    def write_dynamic_frame_from_catalog(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        """Same as ``write_dynamic_frame.from_catalog``.

            glueContext.write_dynamic_frame_from_catalog(frame=f, database="db", table_name="t")
        """
        return self.write_dynamic_frame.from_catalog(*args, **kwargs)

    def write_dynamic_frame_from_jdbc_conf(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        """Same as ``write_dynamic_frame.from_jdbc_conf``.

            glueContext.write_dynamic_frame_from_jdbc_conf(
                frame=f, catalog_connection="pg",
                connection_options={"dbtable": "t", "database": "db"})
        """
        return self.write_dynamic_frame.from_jdbc_conf(*args, **kwargs)

    write_from_jdbc_conf = write_dynamic_frame_from_jdbc_conf

    # -- connections
    def extract_jdbc_conf(self, connection_name: str, catalog_id: Any = None) -> dict[str, str]:
        """A Glue connection's settings, as Glue returns them:
        ``conf = glueContext.extract_jdbc_conf("pg-prod")`` gives ``url`` (no database),
        ``fullUrl``, ``user``, ``password``, ``vendor``, ``driver``.  Connections live in the
        ``connections`` section of ``SPARKMARK_GLUE_CATALOG``."""
        if catalog_id is not None:
            raise GlueUnsupportedError(unsupported_message("extract_jdbc_conf(catalog_id=...)"))
        conn = _catalog.connection(connection_name)
        out = {"url": conn.base_url, "fullUrl": conn.url, "vendor": conn.vendor,
               "enforceSSL": "false", "customJDBCCert": "", "customJDBCCertString": "",
               "skipCustomJDBCCertValidation": "false"}
        out.update(conn.properties)
        out.setdefault("driver", _driver(self.spark_session, conn.url, conn.properties))
        return out

    # -- sinks
    def getSink(self, connection_type: str = "s3", format: Any = None,
                transformation_ctx: str = "", **options: Any) -> "DataSink":
        """Glue Studio's sink: ``sink = glueContext.getSink(path="s3://b/out/",
        connection_type="s3", updateBehavior="UPDATE_IN_DATABASE", partitionKeys=[],
        enableUpdateCatalog=True, transformation_ctx="sink")``, then
        ``sink.setCatalogInfo(catalogDatabase="db", catalogTableName="t")``,
        ``sink.setFormat("glueparquet")`` and ``sink.writeFrame(frame)``."""
        kind = _connection_type(connection_type, "getSink")
        if kind not in FILE_TYPES:
            raise GlueUnsupportedError(unsupported_message(
                f"getSink(connection_type={kind!r})",
                "use write_dynamic_frame.from_options or from_jdbc_conf for database tables"))
        return DataSink(self, options, format, _ctx(transformation_ctx))

    # -- purge
    def purge_s3_path(self, s3_path: str, options: Any = None,
                      transformation_ctx: str = "") -> list[str]:
        """Delete the files under ``s3_path`` older than ``retentionPeriod`` hours (default
        168): ``glueContext.purge_s3_path("s3://b/tmp/", {"retentionPeriod": 0})``.

        The path goes through ``SPARKMARK_PATH_MAP``; a path that leaves its mapped root (or,
        unmapped, itself) through ``..`` or a symbolic link, or a file-system root in any
        spelling (``/``, ``//``, ``file:///``, ``s3a://bucket/``), is refused.  Symbolic links
        below it are neither followed nor deleted.  Files of runs not yet committed
        (``_sparkmark_staging``) are never deleted.  Returns the deleted files.
        """
        return _purge(self, [s3_path], options, "purge_s3_path")

    def purge_table(self, database: str, table_name: str, options: Any = None,
                    transformation_ctx: str = "", catalog_id: Any = None) -> list[str]:
        """``purge_s3_path`` for the location of a catalog table:
        ``glueContext.purge_table("db", "t", {"retentionPeriod": 24})``."""
        if catalog_id is not None:
            raise GlueUnsupportedError(unsupported_message("purge_table(catalog_id=...)"))
        table = _catalog.lookup(self.spark_session, database, table_name)
        if table.kind != "files":
            raise ConfigError(f"purge_table: table {table.name} ({table.source}) is not a file "
                              "table; only files can be purged")
        return _purge(self, list(table.paths), options, "purge_table")

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("GlueContext", name,
                              {k: v for k, v in _CONTEXT_HINTS.items() if v})


# ---------------------------------------------------------------------- helpers
def _ctx(transformation_ctx: Any) -> str | None:
    """Glue's ``transformation_ctx=""`` means "no bookmark"."""
    if transformation_ctx in (None, ""):
        return None
    if not isinstance(transformation_ctx, str):
        raise ConfigError(f"transformation_ctx must be a string, not "
                          f"{type(transformation_ctx).__name__}")
    return transformation_ctx


def _stamp() -> bool:
    """Whether Glue-layer writes add sm_run_id/sm_snapshot_ts (env SPARKMARK_GLUE_STAMP=1)."""
    value = os.environ.get(STAMP_ENV, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ConfigError(f"env {STAMP_ENV}={value!r}: use 1 (stamp every row with sm_run_id and "
                      "sm_snapshot_ts) or 0")


def _connection_type(connection_type: Any, call: str) -> str:
    name = str(connection_type or "").strip().lower()
    if name in FILE_TYPES or name in JDBC_TYPES:
        return name
    if name in _CONNECTION_HINTS:
        raise GlueUnsupportedError(unsupported_message(f"{call}(connection_type={name!r})",
                                                       _CONNECTION_HINTS[name]))
    raise ConfigError(f"{call}: unknown connection_type {connection_type!r}; sparkmark.glue "
                      f"supports {', '.join(FILE_TYPES + JDBC_TYPES)}")


def _no_pushdown(push_down_predicate: Any, call: str) -> None:
    if push_down_predicate:
        raise GlueUnsupportedError(unsupported_message(
            f"{call}(push_down_predicate=...)",
            "bookmarks would mark the skipped partitions as processed; filter the frame with "
            "frame.toDF().filter(...) or read the partition's path"))


def _check_scheme(spark: Any, raw: str, mapped: str, error: type, call: str) -> None:
    """An ``s3://`` path that became ``s3a://`` needs Hadoop's S3 connector: say so up front."""
    from sparkmark.engine.fs import is_connect
    if not mapped.startswith("s3a://") or is_connect(spark):  # Connect: the server decides
        return
    jvm = spark.sparkContext._jvm
    try:
        jvm.org.apache.hadoop.fs.Path(mapped).getFileSystem(
            spark.sparkContext._jsc.hadoopConfiguration())
    except Exception as e:  # noqa: BLE001 - ClassNotFound / no FileSystem for scheme
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise error(
            f"{call}: {raw} was rewritten to {mapped}, but Spark cannot open s3a:// paths "
            f"({first}); map the bucket to a local folder in the file named by env "
            f"{paths.PATH_MAP_ENV} (e.g. {{\"{raw.split('://', 1)[0]}://"
            f"{raw.split('://', 1)[1].split('/', 1)[0]}\": \"/local/dir\"}}), or put "
            "hadoop-aws on Spark's class path") from None


def _driver(spark: Any, url: str, props: Mapping[str, Any],
            error: type[Exception] = SourceError) -> str:
    """:func:`sparkmark.engine.jdbc.resolve_driver`, with the Glue way to name a driver."""
    from sparkmark.engine.jdbc import resolve_driver
    try:
        return resolve_driver(spark, url, props)
    except ConfigError:
        raise ConfigError(f"no known JDBC driver for {url.split('?')[0]}; give "
                          "customJdbcDriverClassName (or 'driver' in the catalog mapping's "
                          "connection)") from None
    except SourceError as e:
        raise error(str(e)) from None


def _read_files(spark: Any, job: "SparkmarkJob | None", paths_: list[str], fmt: Any,
                format_options: Any, options: dict[str, Any], ctx: str | None,
                table: "_catalog.CatalogTable | None" = None) -> "DataFrame":
    spark_fmt = formats.glue_format(fmt)
    reader_opts, positional = formats.reader_options(spark_fmt, format_options)
    clash = sorted(set(reader_opts) & set(options))
    if clash:
        raise ConfigError(f"option(s) {clash} are given both in format_options and in the "
                          "connection options; give each once")
    path_map = paths.load_path_map()
    mapped = [paths.map_path(p, path_map) for p in paths_]
    for raw, m in zip(paths_, mapped):
        _check_scheme(spark, raw, m, SourceError, "read")
    if job is not None:
        merged = {**options, **reader_opts}
        if spark_fmt in ("json", "csv") and not any(
                str(k).lower() in ("mode", "schemaevolution") for k in merged):
            merged["mode"] = "FAILFAST"  # Glue's frames have no _rescued_data: as without a job
        df = job.read.files(mapped, format=spark_fmt, transformation_ctx=ctx, options=merged)
    else:  # no running job: everything, read the way sparkmark's file source reads it
        from sparkmark.planning.bands import plan_all, split_options
        from sparkmark.sources import files as file_source
        band_opts, rest = split_options({**options, **reader_opts})
        opts, schema = file_source.reader_options(file_source.check_format(spark_fmt), rest)
        listing = file_source.list_inputs(spark, mapped, band_opts)
        df = file_source.load(spark, spark_fmt, plan_all(listing.entries), listing, opts,
                              schema)
    if positional:
        renames = formats.glue_column_names(df.columns)
        if renames:
            df = df.withColumnsRenamed(renames)
    if table is not None:
        df = _catalog.apply_columns(df, table, positional)
    return df


def _hash_predicates(url: str, opts: dict[str, Any], call: str) -> list[str] | None:
    """Glue's ``hashfield``/``hashexpression`` + ``hashpartitions`` as Spark JDBC predicates."""
    field_ = opts.get("hashfield")
    expr = opts.get("hashexpression")
    if not field_ and not expr:
        return None
    try:
        n = int(opts.get("hashpartitions", 7))
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise ConfigError(f"{call}: hashpartitions must be a whole number >= 1")
    if expr:
        value, null_col = f"({expr})", f"({expr})"
    else:
        if url.startswith("jdbc:postgresql"):
            col = '"' + str(field_).replace('"', '""') + '"'
            value = f"HASHTEXT(CAST({col} AS TEXT))"
        elif url.startswith(("jdbc:mysql", "jdbc:mariadb")):
            col = "`" + str(field_).replace("`", "``") + "`"
            value = f"CRC32({col})"
        else:
            col = str(field_)
            value = col  # a numeric column
        null_col = col
    preds = [f"ABS(MOD({value}, {n})) = {i}" for i in range(n)]
    preds[0] = f"({preds[0]} OR {null_col} IS NULL)"  # rows with no hash value: read here
    return preds


def _read_jdbc(spark: Any, job: "SparkmarkJob | None", url: str, table: str,
               props: dict[str, str], opts: dict[str, Any], ctx: str | None,
               call: str) -> "DataFrame":
    hashing = {k: opts.pop(k) for k in _JDBC_HASH if k in opts}
    if job is not None:  # the bookmarked read partitions on the bookmark key range itself
        return job.read.jdbc(url, table=table, transformation_ctx=ctx, properties=props,
                             options=opts)
    reader_props = {**props, "driver": _driver(spark, url, props)}
    preds = _hash_predicates(url, hashing, call)
    try:
        if preds:
            return spark.read.jdbc(url, table, predicates=preds, properties=reader_props)
        return spark.read.jdbc(url, table, properties=reader_props)
    except Exception as e:  # noqa: BLE001
        raise SourceError(f"{call}: cannot read table {table} at {url.split('?')[0]}: "
                          f"{str(e).strip().splitlines()[0][:300]}") from None


def _write_files(spark: Any, job: "SparkmarkJob | None", df: "DataFrame", target: str,
                 fmt: str, ctx: str | None, parts: list[str], wopts: dict[str, Any]) -> None:
    if job is not None:
        job.write(df, target, format=fmt, transformation_ctx=ctx, partition_by=parts,
                  options=wopts, stamp=_stamp())
        return
    missing = [c for c in parts if c not in df.columns]
    if missing:
        raise ConfigError(f"partitionKeys {missing} are not in the frame (columns: "
                          f"{df.columns})")
    w = df.write.format(fmt).mode("append").options(**wopts)
    if parts:
        w = w.partitionBy(*parts)
    try:
        w.save(target)
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"writing to {target} failed: "
                        f"{str(e).strip().splitlines()[0][:300]}") from None


def _read_iceberg(spark: Any, job: "SparkmarkJob | None", table: str, opts: dict[str, Any],
                  ctx: str | None, call: str) -> "DataFrame":
    """An Iceberg table: bookmarked by snapshot through ``job.read.table``; without a
    sparkmark job, the table as it is (Glue's from_catalog without bookmarks)."""
    if job is not None:
        return job.read.table(table, transformation_ctx=ctx, options=opts)
    own = [k for k in opts if k.lower() == "onnonappend"]
    if own:
        raise ConfigError(f"{call}: {own} applies to bookmarked reads; this script has no "
                          "sparkmark job (call Job(glueContext).init(...) first)")
    try:
        return spark.read.format("iceberg").options(**{k: str(v) for k, v in opts.items()}
                                                    ).load(table)
    except Exception as e:  # noqa: BLE001
        raise SourceError(f"{call}: cannot read Iceberg table {table}: "
                          f"{str(e).strip().splitlines()[0][:300]}") from None


def _write_iceberg(job: "SparkmarkJob | None", df: "DataFrame", table: str,
                   ctx: str | None) -> None:
    """Append to an Iceberg table: exactly once by write-audit-publish with a sparkmark job,
    a plain append without one."""
    if job is not None:
        job.write(df, table, format="iceberg", transformation_ctx=ctx, stamp=_stamp())
        return
    try:
        df.writeTo(table).append()
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"writing to Iceberg table {table} failed: "
                        f"{str(e).strip().splitlines()[0][:300]}") from None


def _write_jdbc(job: "SparkmarkJob | None", df: "DataFrame", url: str, table: str,
                props: dict[str, str], ctx: str | None) -> None:
    if job is not None:
        job.write_jdbc(df, url, table, properties=props, transformation_ctx=ctx, stamp=_stamp())
        return
    driver = _driver(df.sparkSession, url, props, SinkError)
    try:
        df.write.jdbc(url, table, mode="append", properties={**props, "driver": driver})
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"writing to table {table} at {url.split('?')[0]} failed: "
                        f"{str(e).strip().splitlines()[0][:300]}") from None


def _s3_options(connection_options: dict[str, Any], call: str) -> tuple[list[str], dict]:
    opts = dict(connection_options)
    raw = opts.pop("paths", None)
    single = opts.pop("path", None)
    if raw is None:
        raw = single
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ConfigError(f"{call}: connection_options needs 'paths': a list of s3:// URIs or "
                          "local folders")
    bookmark: dict[str, Any] = {}
    for key, value in opts.items():
        if key in _S3_BOOKMARK:
            bookmark[key] = json.dumps(value) if key == "exclusions" and \
                isinstance(value, (list, tuple)) else value
        elif key in _S3_IGNORED:
            continue
        elif key in _S3_UNSUPPORTED:
            raise GlueUnsupportedError(unsupported_message(
                f"{call} connection option {key!r}", _S3_UNSUPPORTED[key]))
        else:
            raise ConfigError(f"{call}: unknown connection option {key!r}; sparkmark.glue "
                              f"supports paths, {', '.join(_S3_BOOKMARK)} (and ignores "
                              f"{', '.join(_S3_IGNORED)}); reader options go in format_options")
    return list(raw), bookmark


def _jdbc_options(connection_type: str, connection_options: dict[str, Any],
                  call: str) -> tuple[str, str, dict[str, str], dict[str, Any]]:
    opts = dict(connection_options)
    conn_name = opts.pop("connectionName", None)
    opts.pop("useConnectionProperties", None)
    props: dict[str, str] = {}
    if conn_name:
        conn = _catalog.connection(conn_name)
        props.update(conn.properties)
        opts.setdefault("url", conn.url)
    url = opts.pop("url", None)
    table = opts.pop("dbtable", None)
    if not isinstance(url, str) or not url.startswith("jdbc:"):
        raise ConfigError(f"{call}: connection_options needs 'url', a JDBC URL such as "
                          f"jdbc:{connection_type if connection_type != 'jdbc' else 'postgresql'}"
                          "://host:5432/db (or 'connectionName', a Glue connection)")
    if not isinstance(table, str) or not table.strip():
        raise ConfigError(f"{call}: connection_options needs 'dbtable', the table to use")
    options: dict[str, Any] = {}
    for key, value in opts.items():
        if key in ("user", "password"):
            props[key] = str(value)
        elif key == "customJdbcDriverClassName":
            props["driver"] = str(value)
        elif key == "customJdbcDriverS3Path":
            raise GlueUnsupportedError(unsupported_message(
                f"{call} connection option 'customJdbcDriverS3Path'",
                "put the driver jar on Spark's class path (spark.jars or --jars, or env "
                "SPARKMARK_JDBC_JARS)"))
        elif key in _JDBC_KEYS or key in _JDBC_HASH:
            options[key] = value
        elif key in _JDBC_IGNORED:
            continue
        else:
            raise ConfigError(f"{call}: unknown JDBC connection option {key!r}; sparkmark.glue "
                              f"supports {', '.join(_JDBC_KEYS + _JDBC_HASH)}, connectionName")
    if "driver" not in props:  # values from extract_jdbc_conf(name): that connection's driver
        driver = _catalog.connection_driver(url)
        if driver:
            props["driver"] = driver
    return url, table.strip(), props, options


def _frame(value: Any, call: str) -> DynamicFrame:
    if not isinstance(value, DynamicFrame):
        raise ConfigError(f"{call} needs frame=<DynamicFrame>, not {type(value).__name__}; "
                          "wrap a DataFrame with DynamicFrame.fromDF(df, glueContext, name)")
    return value


def _glue_columns(df: "DataFrame") -> list[tuple[str, str]]:
    """A frame's schema as Glue's Columns (Hive type names)."""
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


# ---------------------------------------------------------------------- purge
_PURGE_IGNORED = ("excludeStorageClasses",)


def _purge(glue: GlueContext, raw_paths: list[str], options: Any, call: str) -> list[str]:
    opts = as_options(options, f"{call} options")
    hours = opts.pop("retentionPeriod", 168)
    for key in _PURGE_IGNORED:
        opts.pop(key, None)  # storage classes do not exist outside S3: nothing is excluded
    if opts:
        raise GlueUnsupportedError(unsupported_message(
            f"{call} option(s) {sorted(opts)}", "sparkmark supports retentionPeriod (and "
            "ignores excludeStorageClasses)"))
    try:
        hours_f = float(hours)
    except (TypeError, ValueError, OverflowError):
        hours_f = -1.0
    if not math.isfinite(hours_f) or hours_f < 0 or isinstance(hours, bool):
        raise ConfigError(f"{call}: retentionPeriod must be a number of hours >= 0, not "
                          f"{hours!r}")
    job = glue.sparkmark_job
    now = job.clock() if job is not None else int(time.time() * 1000)
    cutoff = now - int(hours_f * 3_600_000)
    path_map = paths.load_path_map()
    spark = glue.spark_session
    from sparkmark.engine.fs import is_connect
    if is_connect(spark):  # no JVM here: list and delete through pyarrow (sparkmark.engine.fs)
        gone = _purge_without_jvm(spark, raw_paths, path_map, cutoff, call)
        logging.getLogger("sparkmark.glue").info("%s: deleted %d file(s)", call, len(gone))
        return gone
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    deleted: list[str] = []
    for raw in raw_paths:
        target = _purge_target(raw, path_map, call)
        _check_scheme(spark, raw, target, ConfigError, call)
        jpath = jvm.org.apache.hadoop.fs.Path(target)
        fs = jpath.getFileSystem(conf)
        qualified = fs.makeQualified(jpath)
        if qualified.isRoot():
            raise ConfigError(f"{call}: refusing to purge {target!r}, a file-system root")
        uri = qualified.toUri()
        if str(uri.getScheme() or "").lower() == "file":
            deleted += _purge_local(str(uri.getPath()), str(qualified.toString()),
                                    paths.mapped_root(raw, path_map), cutoff, call, raw)
            continue
        if not fs.exists(jpath):
            continue
        it = fs.listFiles(jpath, True)
        while it.hasNext():
            st = it.next()
            p = st.getPath()
            if "/_sparkmark_staging/" in p.toString():
                continue  # output of a run that has not committed yet
            if int(st.getModificationTime()) < cutoff:
                fs.delete(p, False)
                deleted.append(p.toString())
    logging.getLogger("sparkmark.glue").info("%s: deleted %d file(s)", call, len(deleted))
    return deleted


def _purge_without_jvm(spark: Any, raw_paths: list[str], path_map: list, cutoff: int,
                       call: str) -> list[str]:
    """``purge_*`` over Spark Connect: the client lists and deletes through the file system
    sparkmark opens for the session (``pyarrow``: the Connect server's S3 endpoint and keys),
    level by level; a run's staged output is spared, a root refused, as on classic sessions."""
    from sparkmark.engine.fs import file_system
    deleted: list[str] = []
    for raw in raw_paths:
        target = _purge_target(raw, path_map, call)
        try:
            fs = file_system(spark, target)
            qualified = str(fs.qualify(target))
        except (OSError, ValueError) as e:
            raise ConfigError(f"{call}: cannot open {raw!r}: {e}") from None
        if _is_root_spelling(qualified):
            raise ConfigError(f"{call}: refusing to purge {target!r}, a file-system root")
        if qualified.startswith("file:"):
            deleted += _purge_local(qualified[len("file:"):], qualified,
                                    paths.mapped_root(raw, path_map), cutoff, call, raw)
            continue
        found = fs.status_of(qualified)
        if not found:
            continue
        level: list[str] = []
        for path, is_dir, _size, mtime in found:
            if is_dir:
                level.append(path)
            elif mtime < cutoff:
                fs.delete(path)
                deleted.append(path)
        while level:
            below: list[str] = []
            for path, is_dir, _size, mtime in fs.list_level(level):
                if is_dir:
                    if path.rstrip("/").rsplit("/", 1)[-1] != "_sparkmark_staging":
                        below.append(path)
                elif mtime < cutoff:
                    fs.delete(path)
                    deleted.append(path)
            level = below
    return deleted


def _purge_local(path: str, shown: str, root: str | None, cutoff: int, call: str,
                 raw: str) -> list[str]:
    """Purge a local folder without following symbolic links: a link (to a folder or a file)
    is neither entered nor deleted, and a folder whose real location is a file-system root or
    outside its mapped root is refused."""
    real = os.path.realpath(path)
    if os.path.dirname(real) == real:
        raise ConfigError(f"{call}: {raw!r} is a file-system root (through a link); refusing "
                          "to purge it")
    if root is not None:
        base = os.path.realpath(root[5:] if root.startswith("file:") else root)
        if real != base and not real.startswith(base.rstrip("/") + "/"):
            raise ConfigError(f"{call}: {raw!r} leads (through a link) to {real!r}, outside its "
                              f"mapped root {root!r}; refusing to delete there")
    if not os.path.isdir(real):
        if os.path.isfile(path) and not os.path.islink(path) and \
                os.stat(path).st_mtime_ns // 1_000_000 < cutoff:
            os.unlink(path)
            return [shown]
        return []
    deleted: list[str] = []
    stack = [("", real)]
    while stack:
        rel, folder = stack.pop()
        with os.scandir(folder) as entries:
            for e in sorted(entries, key=lambda e: e.name):
                if e.is_symlink():
                    continue  # never followed, never deleted: it may lead out of the root
                name = f"{rel}/{e.name}" if rel else e.name
                if e.is_dir(follow_symlinks=False):
                    if e.name != "_sparkmark_staging":  # output of a run not yet committed
                        stack.append((name, e.path))
                elif e.is_file(follow_symlinks=False) and \
                        e.stat(follow_symlinks=False).st_mtime_ns // 1_000_000 < cutoff:
                    os.unlink(e.path)
                    deleted.append(f"{shown.rstrip('/')}/{name}")
    return sorted(deleted)


def _is_root_spelling(target: str) -> bool:
    """Whether ``target`` names a file-system root in any spelling (pure): ``/``, ``//``,
    ``/./``, ``file:///``, ``FILE:/``, ``s3a://bucket/``...

        _is_root_spelling("file:////")   # True
    """
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", target, re.DOTALL)
    scheme, rest = (m.group(1).lower(), m.group(2)) if m else ("", target)
    path = rest
    if scheme and rest.startswith("//"):  # an authority (host, bucket), then the path
        authority, _, after = rest[2:].partition("/")
        path = rest[2:] if scheme == "file" and not authority else after
    return not [c for c in path.split("/") if c not in ("", ".")]


def _purge_target(raw: Any, path_map: list, call: str) -> str:
    """Where ``raw`` lives, refusing anything that leaves its mapped (or given) root."""
    import posixpath
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError(f"{call} needs a path (an s3:// URI or a folder)")
    root = paths.mapped_root(raw, path_map)
    target = paths.map_path(raw, path_map)
    scheme, sep, rest = target.partition("://")
    local = target[5:] if target.startswith("file:") and not sep else (None if sep else target)
    body = local if local is not None else rest
    norm = posixpath.normpath(body) if body else body
    if ".." in body.split("/"):
        raise ConfigError(f"{call}: {raw!r} leaves its root through '..'; give the folder "
                          "itself")
    if local is not None:
        if not norm or norm == "/" or norm == ".":
            raise ConfigError(f"{call}: refusing to purge {target!r}, a file-system root")
        if root is not None:
            base = posixpath.normpath(root[5:] if root.startswith("file:") else root)
            if norm != base and not norm.startswith(base.rstrip("/") + "/"):
                raise ConfigError(f"{call}: {raw!r} maps to {target!r}, outside its mapped "
                                  f"root {root!r}; refusing to delete there")
    if _is_root_spelling(target):  # a whole bucket too: Glue expects s3://bucket/prefix/
        raise ConfigError(f"{call}: refusing to purge {target!r}, a file-system root")
    return target


# ---------------------------------------------------------------------- reader / writer
class DynamicFrameReader:
    """``glueContext.create_dynamic_frame``: ``from_options`` and ``from_catalog``.

        frame = glueContext.create_dynamic_frame.from_options(
            connection_type="s3", connection_options={"paths": ["s3://b/in/"]},
            format="json", transformation_ctx="src")
    """

    def __init__(self, glue_context: GlueContext):
        self._glue = glue_context

    def from_options(self, connection_type: Any = None, connection_options: Any = None,
                     format: Any = None, format_options: Any = None,
                     transformation_ctx: str = "", push_down_predicate: str = "",
                     **kwargs: Any) -> DynamicFrame:
        """Files (``s3``, ``file``) or a database table (``postgresql``, ``mysql``, ...)."""
        call = "create_dynamic_frame.from_options"
        if kwargs:
            raise GlueUnsupportedError(unsupported_message(f"{call} argument(s) {sorted(kwargs)}"))
        kind = _connection_type(connection_type, call)
        _no_pushdown(push_down_predicate, call)
        conn = as_options(connection_options, "connection_options")
        ctx = _ctx(transformation_ctx)
        job = self._glue.sparkmark_job
        spark = self._glue.spark_session
        if kind in FILE_TYPES:
            if format is None:
                raise ConfigError(f"{call}: give format= (csv, json, parquet, orc, avro, xml)")
            raw_paths, opts = _s3_options(conn, call)
            df = _read_files(spark, job, raw_paths, format,
                             as_options(format_options, "format_options"), opts, ctx)
        else:
            url, table, props, opts = _jdbc_options(kind, conn, call)
            df = _read_jdbc(spark, job, url, table, props, opts, ctx, call)
        return DynamicFrame(df, self._glue, ctx or "")

    def from_catalog(self, database: Any = None, table_name: Any = None,
                     redshift_tmp_dir: str = "", transformation_ctx: str = "",
                     push_down_predicate: str = "", additional_options: Any = None,
                     catalog_id: Any = None, **kwargs: Any) -> DynamicFrame:
        """A table of the Spark catalog or of ``SPARKMARK_GLUE_CATALOG``.

            glueContext.create_dynamic_frame.from_catalog(
                database="hr", table_name="emp", transformation_ctx="emp",
                additional_options={"jobBookmarkKeys": ["empno"]})
        """
        call = "create_dynamic_frame.from_catalog"
        if kwargs.get("name_space") and database is None:
            database = kwargs.pop("name_space")
        kwargs.pop("name_space", None)
        if kwargs:
            raise GlueUnsupportedError(unsupported_message(f"{call} argument(s) {sorted(kwargs)}"))
        if catalog_id is not None:
            raise GlueUnsupportedError(unsupported_message(
                f"{call}(catalog_id=...)", "there is one catalog: the Spark catalog plus "
                "SPARKMARK_GLUE_CATALOG"))
        _no_pushdown(push_down_predicate, call)
        extra = as_options(additional_options, "additional_options")
        ctx = _ctx(transformation_ctx)
        job = self._glue.sparkmark_job
        spark = self._glue.spark_session
        table = _catalog.lookup(spark, database, table_name)
        if table.kind == "files":
            key_opts = [k for k in extra if k.lower().startswith("jobbookmark")]
            if key_opts:
                raise ConfigError(f"{call}: {key_opts} apply to JDBC tables; table {table.name} "
                                  f"({table.source}) is {table.format} files, bookmarked by "
                                  "file modification time")
            conn = {**table.options, **extra}
            conn["paths"] = list(table.paths)
            raw_paths, opts = _s3_options(conn, call)
            df = _read_files(spark, job, raw_paths, table.format, table.format_options, opts,
                             ctx, table)
        elif table.kind == "jdbc":
            opts = {**table.options, **extra}
            df = _read_jdbc(spark, job, str(table.url), str(table.table),
                            dict(table.properties), opts, ctx, call)
            df = _catalog.apply_columns(df, table, positional=False)
        elif table.kind == "iceberg":
            df = _read_iceberg(spark, job, str(table.table), {**table.options, **extra}, ctx,
                               call)
        else:
            if ctx is not None and job is not None and job.bookmark_option != DISABLE:
                raise ConfigError(
                    f"{call}: table {table.name} is {table.detail} in the Spark catalog, which "
                    "sparkmark cannot bookmark; map it to its files or JDBC table in "
                    f"{_catalog.CATALOG_ENV}, or read it without transformation_ctx")
            df = spark.table(str(table.table))
        return DynamicFrame(df, self._glue, ctx or "")

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("create_dynamic_frame", name, {
            "from_rdd": "use DynamicFrame.fromDF(spark.createDataFrame(rdd), glueContext, name)",
            "from_jdbc_conf": "use from_options with connection_options {'connectionName': ..., "
                              "'dbtable': ...}"})


class DynamicFrameWriter:
    """``glueContext.write_dynamic_frame``: ``from_options``, ``from_catalog``,
    ``from_jdbc_conf``.

        glueContext.write_dynamic_frame.from_options(
            frame=frame, connection_type="s3", connection_options={"path": "s3://b/out"},
            format="parquet", transformation_ctx="sink")
    """

    def __init__(self, glue_context: GlueContext):
        self._glue = glue_context

    def from_options(self, frame: Any = None, connection_type: Any = None,
                     connection_options: Any = None, format: Any = None,
                     format_options: Any = None, transformation_ctx: str = "",
                     **kwargs: Any) -> DynamicFrame:
        """Files (``path``, ``partitionKeys``, ``compression``) or a database table.

            glueContext.write_dynamic_frame.from_options(
                frame=f, connection_type="s3",
                connection_options={"path": "s3://b/out", "partitionKeys": ["day"]},
                format="parquet", transformation_ctx="sink")
        """
        call = "write_dynamic_frame.from_options"
        if kwargs:
            raise GlueUnsupportedError(unsupported_message(f"{call} argument(s) {sorted(kwargs)}"))
        frame = _frame(frame, call)
        kind = _connection_type(connection_type, call)
        conn = as_options(connection_options, "connection_options")
        ctx = _ctx(transformation_ctx)
        job = self._glue.sparkmark_job
        spark = self._glue.spark_session
        if kind in FILE_TYPES:
            path = conn.pop("path", None)
            parts = conn.pop("partitionKeys", None)
            if not isinstance(path, str) or not path.strip():
                raise ConfigError(f"{call}: connection_options needs 'path', the target "
                                  "s3:// URI or local folder")
            if format is None:
                raise ConfigError(f"{call}: give format= (csv, json, parquet, orc)")
            fmt = formats.glue_format(format, write=True)
            wopts = formats.writer_options(fmt, as_options(format_options, "format_options"))
            for key, value in conn.items():
                if key == "compression":
                    wopts["compression"] = value
                else:
                    raise ConfigError(f"{call}: unknown connection option {key!r}; use path, "
                                      "partitionKeys, compression")
            target = paths.resolve(path)
            _check_scheme(spark, path, target, SinkError, call)
            _write_files(spark, job, frame.toDF(), target, fmt, ctx, list(parts or []), wopts)
        else:
            url, table, props, opts = _jdbc_options(kind, conn, call)
            if opts:
                raise ConfigError(f"{call}: {sorted(opts)} apply to JDBC sources, not targets")
            _write_jdbc(job, frame.toDF(), url, table, props, ctx)
        return frame

    def from_catalog(self, frame: Any = None, database: Any = None, table_name: Any = None,
                     redshift_tmp_dir: str = "", transformation_ctx: str = "",
                     additional_options: Any = None, catalog_id: Any = None,
                     **kwargs: Any) -> DynamicFrame:
        """A file or JDBC table of ``SPARKMARK_GLUE_CATALOG``.

            glueContext.write_dynamic_frame.from_catalog(
                frame=f, database="db", table_name="target", transformation_ctx="sink")
        """
        call = "write_dynamic_frame.from_catalog"
        if kwargs or catalog_id is not None:
            raise GlueUnsupportedError(unsupported_message(
                f"{call} argument(s) {sorted(kwargs) + (['catalog_id'] if catalog_id else [])}"))
        frame = _frame(frame, call)
        extra = as_options(additional_options, "additional_options")
        job = self._glue.sparkmark_job
        spark = self._glue.spark_session
        table = _catalog.lookup(spark, database, table_name)
        ctx = _ctx(transformation_ctx)
        if table.kind == "files":
            if len(table.paths) != 1:
                raise ConfigError(f"{call}: table {table.name} has several paths; a target "
                                  "needs one")
            fmt = formats.glue_format(table.format, write=True)
            wopts = formats.writer_options(fmt, table.format_options)
            parts = extra.pop("partitionKeys", None)
            if extra:
                raise ConfigError(f"{call}: unknown additional option(s) {sorted(extra)}; use "
                                  "partitionKeys")
            target = paths.resolve(table.paths[0])
            _check_scheme(spark, table.paths[0], target, SinkError, call)
            _write_files(spark, job, frame.toDF(), target, fmt, ctx, list(parts or []), wopts)
        elif table.kind == "jdbc":
            _write_jdbc(job, frame.toDF(), str(table.url), str(table.table),
                        dict(table.properties), ctx)
        elif table.kind == "iceberg":
            if extra:
                raise ConfigError(f"{call}: additional option(s) {sorted(extra)} do not apply "
                                  f"to Iceberg table {table.name}; its partition spec and "
                                  "properties are the table's own")
            _write_iceberg(job, frame.toDF(), str(table.table), ctx)
        else:
            raise ConfigError(f"{call}: table {table.name} is {table.detail} in the Spark "
                              "catalog; sparkmark writes files, JDBC tables or Apache Iceberg "
                              f"tables: map it in {_catalog.CATALOG_ENV}")
        return frame

    def from_jdbc_conf(self, frame: Any = None, catalog_connection: Any = None,
                       connection_options: Any = None, redshift_tmp_dir: str = "",
                       transformation_ctx: str = "", catalog_id: Any = None,
                       **kwargs: Any) -> DynamicFrame:
        """A table through a Glue connection: ``from_jdbc_conf(frame=f,
        catalog_connection="pg-prod", connection_options={"dbtable": "t", "database": "hr"})``
        (``redshift_tmp_dir`` is not needed and ignored)."""
        call = "write_dynamic_frame.from_jdbc_conf"
        if kwargs or catalog_id is not None:
            raise GlueUnsupportedError(unsupported_message(
                f"{call} argument(s) {sorted(kwargs) + (['catalog_id'] if catalog_id else [])}"))
        frame = _frame(frame, call)
        conn_opts = as_options(connection_options, "connection_options")
        conn = _catalog.connection(catalog_connection)
        table = conn_opts.pop("dbtable", None)
        database = conn_opts.pop("database", None)
        if not isinstance(table, str) or not table.strip():
            raise ConfigError(f"{call}: connection_options needs 'dbtable', the target table")
        for key in ("preactions", "postactions", "extracopyoptions", "aws_iam_role"):
            if conn_opts.pop(key, None):
                raise GlueUnsupportedError(unsupported_message(
                    f"{call} connection option {key!r}", "run the SQL yourself before or after "
                    "the job"))
        if conn_opts:
            raise ConfigError(f"{call}: unknown connection option(s) {sorted(conn_opts)}; use "
                              "dbtable, database")
        _write_jdbc(self._glue.sparkmark_job, frame.toDF(), conn.url_for(database),
                    table.strip(), dict(conn.properties), _ctx(transformation_ctx))
        return frame

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("write_dynamic_frame", name, {})


class DataSink:
    """What ``glueContext.getSink(...)`` returns (Glue Studio's write path).

        sink = glueContext.getSink(path="s3://b/out/", connection_type="s3",
                                   updateBehavior="UPDATE_IN_DATABASE", partitionKeys=["day"],
                                   enableUpdateCatalog=True, transformation_ctx="sink")
        sink.setCatalogInfo(catalogDatabase="db", catalogTableName="out")
        sink.setFormat("glueparquet", compression="snappy")
        sink.writeFrame(frame)

    ``writeFrame`` writes like ``write_dynamic_frame.from_options`` (exactly once while a job
    runs); with ``enableUpdateCatalog=True`` it then registers or updates the table (path,
    format, columns) in ``SPARKMARK_GLUE_CATALOG``, or in the Spark catalog when that is unset.
    ``updateBehavior="LOG"`` keeps an existing table's columns.
    """

    _KNOWN = ("path", "partitionKeys", "enableUpdateCatalog", "updateBehavior", "compression")

    def __init__(self, glue: GlueContext, options: dict[str, Any], fmt: Any,
                 ctx: str | None):
        unknown = sorted(set(options) - set(self._KNOWN))
        if unknown:
            raise GlueUnsupportedError(unsupported_message(
                f"getSink option(s) {unknown}", "sparkmark supports " + ", ".join(self._KNOWN)))
        self._glue = glue
        self._options = dict(options)
        self._format = fmt
        self._format_options: dict[str, Any] = {}
        self._ctx = ctx
        self._catalog: tuple[str, str] | None = None
        behavior = str(options.get("updateBehavior") or "UPDATE_IN_DATABASE").upper()
        if behavior not in ("UPDATE_IN_DATABASE", "LOG"):
            raise ConfigError(f"getSink: updateBehavior {behavior!r} must be UPDATE_IN_DATABASE "
                              "or LOG")
        self._behavior = behavior

    def setFormat(self, format: str, **options: Any) -> None:
        """``sink.setFormat("glueparquet", compression="snappy")``."""
        formats.glue_format(format, write=True)
        self._format = format
        self._format_options = dict(options)

    def setCatalogInfo(self, catalogDatabase: str, catalogTableName: str,
                       catalogId: Any = None) -> None:
        """``sink.setCatalogInfo(catalogDatabase="db", catalogTableName="t")``."""
        if catalogId is not None:
            raise GlueUnsupportedError(unsupported_message("setCatalogInfo(catalogId=...)"))
        self._catalog = (catalogDatabase, catalogTableName)

    def writeFrame(self, dynamic_frame: Any, info: str = "") -> DynamicFrame:
        """Write the frame (and update the catalog if asked): ``sink.writeFrame(frame)``."""
        call = "getSink(...).writeFrame"
        frame = _frame(dynamic_frame, call)
        path = self._options.get("path")
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"{call}: getSink needs path=, the target s3:// URI or folder")
        if self._format is None:
            raise ConfigError(f"{call}: call sink.setFormat('parquet') (or pass format= to "
                              "getSink) first")
        fmt = formats.glue_format(self._format, write=True)
        fopts = dict(self._format_options)
        compression = fopts.pop("compression", self._options.get("compression"))
        wopts = formats.writer_options(fmt, fopts)
        if compression:
            wopts["compression"] = compression
        parts = list(self._options.get("partitionKeys") or [])
        spark = self._glue.spark_session
        target = paths.resolve(path)
        _check_scheme(spark, path, target, SinkError, call)
        df = frame.toDF()
        _write_files(spark, self._glue.sparkmark_job, df, target, fmt, self._ctx, parts, wopts)
        if self._options.get("enableUpdateCatalog") and self._catalog is not None:
            _catalog.register_table(spark, self._catalog[0], self._catalog[1], path=path,
                                    fmt=fmt, columns=_glue_columns(df), partition_keys=parts,
                                    update_schema=self._behavior == "UPDATE_IN_DATABASE")
        return frame

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("DataSink", name, {})


__getattr__ = module_getattr("sparkmark.glue.context", {})
