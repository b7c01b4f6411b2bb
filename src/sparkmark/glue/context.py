"""``GlueContext``: ``create_dynamic_frame`` and ``write_dynamic_frame`` over sparkmark.

Reads go through the running Glue ``Job``'s bookmarks (``job.read.files`` / ``job.read.jdbc``),
writes through its exactly-once sinks (``job.write`` / ``job.write_jdbc``); so a Glue ``Job`` must
be initialised first (``job.init(args['JOB_NAME'], args)``, as Glue's generated scripts do).

Supported connection types: ``s3`` and ``file`` (paths; ``s3://`` goes through
``SPARKMARK_PATH_MAP``), and the JDBC types ``postgresql``, ``mysql``, ``sqlserver``, ``oracle``,
``jdbc`` (``url``, ``dbtable``, ``user``, ``password``; ``jobBookmarkKeys`` and
``jobBookmarkKeysSortOrder`` for bookmarks).  ``from_catalog`` finds the table in the Spark
catalog or in ``SPARKMARK_GLUE_CATALOG`` (see :mod:`sparkmark.glue.catalog`).
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, JobStateError, SinkError, SourceError
from ..options import DISABLE
from . import catalog as _catalog
from . import formats, paths
from ._common import (GlueUnsupportedError, as_options, attribute_error, module_getattr,
                      unsupported_message)
from .dynamicframe import DynamicFrame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ..job import Job as SparkmarkJob

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
_JDBC_IGNORED = ("hashfield", "hashexpression", "hashpartitions", "bulkSize")
_CONNECTION_HINTS = {
    "dynamodb": None, "kinesis": "use Spark Structured Streaming", "kafka": "use Spark "
    "Structured Streaming", "mongodb": "use the MongoDB Spark connector",
    "documentdb": "use the MongoDB Spark connector", "redshift": "use connection_type "
    "'postgresql' with the Redshift JDBC URL, or the jdbc connection type",
    "custom.spark": None, "marketplace.spark": None, "opensearch": None,
}

_CONTEXT_HINTS = {
    "purge_s3_path": "delete the files yourself; sparkmark sinks only add each run's output "
                     "once (rollback removes a run's output: 'sparkmark rollback')",
    "purge_table": "delete the files yourself",
    "transition_s3_path": "storage classes do not exist outside S3",
    "transition_table": "storage classes do not exist outside S3",
    "getSource": "use glueContext.create_dynamic_frame.from_options",
    "getSink": "use glueContext.write_dynamic_frame.from_options",
    "getSinkWithFormat": "use glueContext.write_dynamic_frame.from_options",
    "write_dynamic_frame_from_jdbc_conf": "use write_dynamic_frame.from_options with "
                                          "connection_type 'postgresql' (or 'jdbc') and the url",
    "write_from_jdbc_conf": "use write_dynamic_frame.from_options with a JDBC connection type",
    "extract_jdbc_conf": "put the url, user and password in SPARKMARK_GLUE_CATALOG",
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
    """``glueContext.get_logger()``: info/warn/error to Python's logging ('sparkmark.glue')."""

    def __init__(self) -> None:
        self._log = logging.getLogger("sparkmark.glue")

    def info(self, msg: Any) -> None:
        self._log.info(msg)

    def warn(self, msg: Any) -> None:
        self._log.warning(msg)

    warning = warn

    def error(self, msg: Any) -> None:
        self._log.error(msg)


class GlueContext:
    """``GlueContext(sc)`` with ``.spark_session``, ``create_dynamic_frame``,
    ``write_dynamic_frame``."""

    def __init__(self, sparkContext: Any, **options: Any):
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        from ..fs import is_connect
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
    def _job(self, call: str) -> "SparkmarkJob":
        for glue_job in reversed(self._jobs):
            if glue_job.sparkmark_job.active:
                return glue_job.sparkmark_job
        raise JobStateError(
            f"{call} needs a running Glue Job: add 'job = Job(glueContext)' and "
            "'job.init(args[\"JOB_NAME\"], args)' before it (sparkmark.glue reads and writes "
            "through the job's bookmarks and exactly-once sinks)")

    @property
    def sparkContext(self):
        return self._sc

    def get_logger(self) -> GlueLogger:
        return GlueLogger()

    # -- Glue's flat method names
    def create_dynamic_frame_from_options(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        return self.create_dynamic_frame.from_options(*args, **kwargs)

    def create_dynamic_frame_from_catalog(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        return self.create_dynamic_frame.from_catalog(*args, **kwargs)

    def write_dynamic_frame_from_options(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        return self.write_dynamic_frame.from_options(*args, **kwargs)

    def write_dynamic_frame_from_catalog(self, *args: Any, **kwargs: Any) -> DynamicFrame:
        return self.write_dynamic_frame.from_catalog(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("GlueContext", name, _CONTEXT_HINTS)


# ---------------------------------------------------------------------- helpers
def _ctx(transformation_ctx: Any) -> str | None:
    """Glue's ``transformation_ctx=""`` means "no bookmark"."""
    if transformation_ctx in (None, ""):
        return None
    if not isinstance(transformation_ctx, str):
        raise ConfigError(f"transformation_ctx must be a string, not "
                          f"{type(transformation_ctx).__name__}")
    return transformation_ctx


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
    from ..fs import is_connect
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


def _read_files(job: "SparkmarkJob", paths_: list[str], fmt: Any, format_options: Any,
                options: dict[str, Any], ctx: str | None) -> "DataFrame":
    spark_fmt = formats.glue_format(fmt)
    reader_opts, positional = formats.reader_options(spark_fmt, format_options)
    clash = sorted(set(reader_opts) & set(options))
    if clash:
        raise ConfigError(f"option(s) {clash} are given both in format_options and in the "
                          "connection options; give each once")
    path_map = paths.load_path_map()
    mapped = [paths.map_path(p, path_map) for p in paths_]
    for raw, m in zip(paths_, mapped):
        _check_scheme(job.spark, raw, m, SourceError, "read")
    df = job.read.files(mapped, format=spark_fmt, transformation_ctx=ctx,
                        options={**options, **reader_opts})
    if positional:
        renames = formats.glue_column_names(df.columns)
        if renames:
            df = df.withColumnsRenamed(renames)
    return df


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
    url = opts.pop("url", None)
    table = opts.pop("dbtable", None)
    if not isinstance(url, str) or not url.startswith("jdbc:"):
        raise ConfigError(f"{call}: connection_options needs 'url', a JDBC URL such as "
                          f"jdbc:{connection_type if connection_type != 'jdbc' else 'postgresql'}"
                          "://host:5432/db")
    if not isinstance(table, str) or not table.strip():
        raise ConfigError(f"{call}: connection_options needs 'dbtable', the table to use")
    props: dict[str, str] = {}
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
        elif key in _JDBC_KEYS:
            options[key] = value
        elif key in _JDBC_IGNORED:
            continue
        else:
            raise ConfigError(f"{call}: unknown JDBC connection option {key!r}; sparkmark.glue "
                              f"supports {', '.join(_JDBC_KEYS)}")
    return url, table.strip(), props, options


def _frame(value: Any, call: str) -> DynamicFrame:
    if not isinstance(value, DynamicFrame):
        raise ConfigError(f"{call} needs frame=<DynamicFrame>, not {type(value).__name__}; "
                          "wrap a DataFrame with DynamicFrame.fromDF(df, glueContext, name)")
    return value


# ---------------------------------------------------------------------- reader / writer
class DynamicFrameReader:
    """``glueContext.create_dynamic_frame``."""

    def __init__(self, glue_context: GlueContext):
        self._glue = glue_context

    def from_options(self, connection_type: Any = None, connection_options: Any = None,
                     format: Any = None, format_options: Any = None,
                     transformation_ctx: str = "", push_down_predicate: str = "",
                     **kwargs: Any) -> DynamicFrame:
        call = "create_dynamic_frame.from_options"
        if kwargs:
            raise GlueUnsupportedError(unsupported_message(f"{call} argument(s) {sorted(kwargs)}"))
        kind = _connection_type(connection_type, call)
        _no_pushdown(push_down_predicate, call)
        conn = as_options(connection_options, "connection_options")
        ctx = _ctx(transformation_ctx)
        job = self._glue._job(call)
        if kind in FILE_TYPES:
            if format is None:
                raise ConfigError(f"{call}: give format= (csv, json, parquet, orc, avro, xml)")
            raw_paths, opts = _s3_options(conn, call)
            df = _read_files(job, raw_paths, format, as_options(format_options, "format_options"),
                             opts, ctx)
        else:
            url, table, props, opts = _jdbc_options(kind, conn, call)
            df = job.read.jdbc(url, table=table, transformation_ctx=ctx, properties=props,
                               options=opts)
        return DynamicFrame(df, self._glue, ctx or "")

    def from_catalog(self, database: Any = None, table_name: Any = None,
                     redshift_tmp_dir: str = "", transformation_ctx: str = "",
                     push_down_predicate: str = "", additional_options: Any = None,
                     catalog_id: Any = None, **kwargs: Any) -> DynamicFrame:
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
        job = self._glue._job(call)
        table = _catalog.lookup(job.spark, database, table_name)
        if table.kind == "files":
            key_opts = [k for k in extra if k.lower().startswith("jobbookmark")]
            if key_opts:
                raise ConfigError(f"{call}: {key_opts} apply to JDBC tables; table {table.name} "
                                  f"({table.source}) is {table.format} files, bookmarked by "
                                  "file modification time")
            conn = {**table.options, **extra}
            conn["paths"] = list(table.paths)
            raw_paths, opts = _s3_options(conn, call)
            df = _read_files(job, raw_paths, table.format, table.format_options, opts, ctx)
        elif table.kind == "jdbc":
            opts = {**table.options, **extra}
            df = job.read.jdbc(table.url, table=table.table, transformation_ctx=ctx,
                               properties=table.properties, options=opts)
        else:
            if ctx is not None and job.args.option != DISABLE:
                raise ConfigError(
                    f"{call}: table {table.name} is {table.detail} in the Spark catalog, which "
                    "sparkmark cannot bookmark; map it to its files or JDBC table in "
                    f"{_catalog.CATALOG_ENV}, or read it without transformation_ctx")
            df = job.spark.table(table.table)
        return DynamicFrame(df, self._glue, ctx or "")

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("create_dynamic_frame", name, {
            "from_rdd": "use DynamicFrame.fromDF(spark.createDataFrame(rdd), glueContext, name)"})


class DynamicFrameWriter:
    """``glueContext.write_dynamic_frame``."""

    def __init__(self, glue_context: GlueContext):
        self._glue = glue_context

    def from_options(self, frame: Any = None, connection_type: Any = None,
                     connection_options: Any = None, format: Any = None,
                     format_options: Any = None, transformation_ctx: str = "",
                     **kwargs: Any) -> DynamicFrame:
        call = "write_dynamic_frame.from_options"
        if kwargs:
            raise GlueUnsupportedError(unsupported_message(f"{call} argument(s) {sorted(kwargs)}"))
        frame = _frame(frame, call)
        kind = _connection_type(connection_type, call)
        conn = as_options(connection_options, "connection_options")
        ctx = _ctx(transformation_ctx)
        job = self._glue._job(call)
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
            _check_scheme(job.spark, path, target, SinkError, call)
            job.write(frame.toDF(), target, format=fmt, transformation_ctx=ctx,
                      partition_by=list(parts or []), options=wopts)
        else:
            url, table, props, opts = _jdbc_options(kind, conn, call)
            if opts:
                raise ConfigError(f"{call}: {sorted(opts)} apply to JDBC sources, not targets")
            job.write_jdbc(frame.toDF(), url, table, properties=props, transformation_ctx=ctx)
        return frame

    def from_catalog(self, frame: Any = None, database: Any = None, table_name: Any = None,
                     redshift_tmp_dir: str = "", transformation_ctx: str = "",
                     additional_options: Any = None, catalog_id: Any = None,
                     **kwargs: Any) -> DynamicFrame:
        call = "write_dynamic_frame.from_catalog"
        if kwargs or catalog_id is not None:
            raise GlueUnsupportedError(unsupported_message(
                f"{call} argument(s) {sorted(kwargs) + (['catalog_id'] if catalog_id else [])}"))
        frame = _frame(frame, call)
        extra = as_options(additional_options, "additional_options")
        job = self._glue._job(call)
        table = _catalog.lookup(job.spark, database, table_name)
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
            _check_scheme(job.spark, table.paths[0], target, SinkError, call)
            job.write(frame.toDF(), target, format=fmt,
                      transformation_ctx=ctx, partition_by=list(parts or []), options=wopts)
        elif table.kind == "jdbc":
            job.write_jdbc(frame.toDF(), table.url, table.table, properties=table.properties,
                           transformation_ctx=ctx)
        else:
            raise ConfigError(f"{call}: table {table.name} is {table.detail} in the Spark "
                              "catalog; sparkmark writes files or JDBC tables: map it in "
                              f"{_catalog.CATALOG_ENV}")
        return frame

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("write_dynamic_frame", name, {
            "from_jdbc_conf": "use from_options with connection_type 'postgresql' (or 'jdbc')"})


__getattr__ = module_getattr("sparkmark.glue.context", {})
