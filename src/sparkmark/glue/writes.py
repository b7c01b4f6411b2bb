"""``glueContext.write_dynamic_frame`` and ``glueContext.getSink(...)`` over sparkmark.

:class:`DynamicFrameWriter` (``from_options``, ``from_catalog``, ``from_jdbc_conf``) and
:class:`DataSink` (Glue Studio's ``getSink``) write files, JDBC tables and Apache Iceberg
tables: exactly once through the running job's sinks (``job.write`` / ``job.write_jdbc``) while a
Glue ``Job`` runs, else as a plain Spark append.  ``GlueContext`` builds the writer as
``glueContext.write_dynamic_frame``.

    glueContext.write_dynamic_frame.from_options(
        frame=frame, connection_type="s3", connection_options={"path": "s3://b/out"},
        format="parquet", transformation_ctx="sink")
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from sparkmark.core.errors import ConfigError, SinkError
from sparkmark.glue import catalog as _catalog
from sparkmark.glue import formats, paths
from sparkmark.glue._common import (GlueUnsupportedError, as_options, attribute_error,
                                    unsupported_message)
from sparkmark.glue.connection_options import (FILE_TYPES, GlueSession, check_connection_type,
                                               check_scheme, ctx_of, jdbc_driver, jdbc_options)
from sparkmark.glue.dynamicframe import DynamicFrame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparkmark.lifecycle.job import Job as SparkmarkJob

STAMP_ENV = "SPARKMARK_GLUE_STAMP"


def _stamp() -> bool:
    """Whether Glue-layer writes add sm_run_id/sm_snapshot_ts (env SPARKMARK_GLUE_STAMP=1)."""
    value = os.environ.get(STAMP_ENV, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ConfigError(f"env {STAMP_ENV}={value!r}: use 1 (stamp every row with sm_run_id and "
                      "sm_snapshot_ts) or 0")


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


def _write_delta(job: "SparkmarkJob | None", df: "DataFrame", target: str, by_path: bool,
                 ctx: str | None) -> None:
    """Append to a Delta Lake table (a location or a name): exactly once by one stamped
    commit a run with a sparkmark job, a plain append without one."""
    if job is not None:
        job.write(df, target, format="delta", transformation_ctx=ctx, stamp=_stamp())
        return
    try:
        w = df.write.format("delta").mode("append")
        w.save(target) if by_path else w.saveAsTable(target)
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"writing to Delta table {target} failed: "
                        f"{str(e).strip().splitlines()[0][:300]}") from None


def _write_jdbc(job: "SparkmarkJob | None", df: "DataFrame", url: str, table: str,
                props: dict[str, str], ctx: str | None) -> None:
    if job is not None:
        job.write_jdbc(df, url, table, properties=props, transformation_ctx=ctx, stamp=_stamp())
        return
    driver = jdbc_driver(df.sparkSession, url, props, SinkError)
    try:
        df.write.jdbc(url, table, mode="append", properties={**props, "driver": driver})
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"writing to table {table} at {url.split('?')[0]} failed: "
                        f"{str(e).strip().splitlines()[0][:300]}") from None


def _frame(value: Any, call: str) -> DynamicFrame:
    if not isinstance(value, DynamicFrame):
        raise ConfigError(f"{call} needs frame=<DynamicFrame>, not {type(value).__name__}; "
                          "wrap a DataFrame with DynamicFrame.fromDF(df, glueContext, name)")
    return value


def _glue_columns(df: "DataFrame") -> list[tuple[str, str]]:
    """A frame's schema as Glue's Columns (Hive type names)."""
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


class DynamicFrameWriter:
    """``glueContext.write_dynamic_frame``: ``from_options``, ``from_catalog``,
    ``from_jdbc_conf``.

        glueContext.write_dynamic_frame.from_options(
            frame=frame, connection_type="s3", connection_options={"path": "s3://b/out"},
            format="parquet", transformation_ctx="sink")
    """

    def __init__(self, glue_context: GlueSession):
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
        kind = check_connection_type(connection_type, call)
        conn = as_options(connection_options, "connection_options")
        ctx = ctx_of(transformation_ctx)
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
            check_scheme(spark, path, target, SinkError, call)
            _write_files(spark, job, frame.toDF(), target, fmt, ctx, list(parts or []), wopts)
        else:
            url, table, props, opts = jdbc_options(kind, conn, call)
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
        ctx = ctx_of(transformation_ctx)
        if table.detail == _catalog.HIVE_TABLE:
            raise ConfigError(
                f"{call}: table {table.name} is a Hive table in the Spark catalog: sparkmark "
                "reads it as its files, but files written there would not be in its metastore "
                "(new partitions must be registered); write to its location with "
                "write_dynamic_frame.from_options(connection_type='s3', connection_options="
                f"{{'path': '{table.paths[0]}'}}, format='{table.format}') and then run MSCK "
                "REPAIR TABLE, or make it an Iceberg table")
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
            check_scheme(spark, table.paths[0], target, SinkError, call)
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
        elif table.kind == "delta":
            if extra:
                raise ConfigError(f"{call}: additional option(s) {sorted(extra)} do not apply "
                                  f"to Delta table {table.name}; its partitioning and "
                                  "properties are the table's own")
            target = paths.resolve(table.paths[0]) if table.paths else str(table.table)
            _write_delta(job, frame.toDF(), target, bool(table.paths), ctx)
        else:
            raise ConfigError(f"{call}: table {table.name} is {table.detail} in the Spark "
                              "catalog; sparkmark writes files, JDBC tables, Apache Iceberg "
                              f"or Delta Lake tables: map it in {_catalog.CATALOG_ENV}")
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
                    table.strip(), dict(conn.properties), ctx_of(transformation_ctx))
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

    def __init__(self, glue: GlueSession, options: dict[str, Any], fmt: Any,
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
        check_scheme(spark, path, target, SinkError, call)
        df = frame.toDF()
        _write_files(spark, self._glue.sparkmark_job, df, target, fmt, self._ctx, parts, wopts)
        if self._options.get("enableUpdateCatalog") and self._catalog is not None:
            _catalog.register_table(spark, self._catalog[0], self._catalog[1], path=path,
                                    fmt=fmt, columns=_glue_columns(df), partition_keys=parts,
                                    update_schema=self._behavior == "UPDATE_IN_DATABASE")
        return frame

    def __getattr__(self, name: str) -> Any:
        raise attribute_error("DataSink", name, {})
