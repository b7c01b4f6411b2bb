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

The reader and the writer live in their own modules: :mod:`sparkmark.glue.reads`
(``DynamicFrameReader``), :mod:`sparkmark.glue.writes` (``DynamicFrameWriter``, ``DataSink``),
with the connection options they share in :mod:`sparkmark.glue.connection_options` and
``purge_s3_path``/``purge_table`` in :mod:`sparkmark.glue.purge`; ``GlueContext`` composes them
(and they stay importable from here).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sparkmark.core.errors import ConfigError
from sparkmark.glue import catalog as _catalog
from sparkmark.glue._common import (GlueUnsupportedError, attribute_error, module_getattr,
                                    unsupported_message)
from sparkmark.glue.connection_options import FILE_TYPES as FILE_TYPES
from sparkmark.glue.connection_options import JDBC_TYPES as JDBC_TYPES
from sparkmark.glue.connection_options import check_connection_type, ctx_of, jdbc_driver
from sparkmark.glue.dynamicframe import DynamicFrame
from sparkmark.glue.purge import purge
from sparkmark.glue.reads import DynamicFrameReader as DynamicFrameReader
from sparkmark.glue.writes import STAMP_ENV as STAMP_ENV
from sparkmark.glue.writes import DataSink as DataSink
from sparkmark.glue.writes import DynamicFrameWriter as DynamicFrameWriter

if TYPE_CHECKING:
    from sparkmark.lifecycle.job import Job as SparkmarkJob

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
        if sparkContext is not None:  # plain Spark I/O on s3:// paths, as on Glue and EMR:
            from sparkmark.engine.fs import s3_scheme_on_path_map, s3_scheme_on_s3a
            from sparkmark.glue.paths import load_path_map  # the mapped folders, else S3A
            if not s3_scheme_on_path_map(session, load_path_map()):
                s3_scheme_on_s3a(session)
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
        out.setdefault("driver", jdbc_driver(self.spark_session, conn.url, conn.properties))
        return out

    # -- sinks
    def getSink(self, connection_type: str = "s3", format: Any = None,
                transformation_ctx: str = "", **options: Any) -> "DataSink":
        """Glue Studio's sink: ``sink = glueContext.getSink(path="s3://b/out/",
        connection_type="s3", updateBehavior="UPDATE_IN_DATABASE", partitionKeys=[],
        enableUpdateCatalog=True, transformation_ctx="sink")``, then
        ``sink.setCatalogInfo(catalogDatabase="db", catalogTableName="t")``,
        ``sink.setFormat("glueparquet")`` and ``sink.writeFrame(frame)``."""
        kind = check_connection_type(connection_type, "getSink")
        if kind not in FILE_TYPES:
            raise GlueUnsupportedError(unsupported_message(
                f"getSink(connection_type={kind!r})",
                "use write_dynamic_frame.from_options or from_jdbc_conf for database tables"))
        return DataSink(self, options, format, ctx_of(transformation_ctx))

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
        return purge(self, [s3_path], options, "purge_s3_path")

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
        return purge(self, list(table.paths), options, "purge_table")

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("GlueContext", name,
                              {k: v for k, v in _CONTEXT_HINTS.items() if v})


__getattr__ = module_getattr("sparkmark.glue.context", {})
