"""``glueContext.create_dynamic_frame``: ``from_options`` and ``from_catalog`` over sparkmark.

:class:`DynamicFrameReader` reads files (``s3``, ``file``), JDBC tables and Apache Iceberg
tables: through the running job's bookmarks (``job.read.files`` / ``job.read.jdbc`` /
``job.read.table``) while a Glue ``Job`` runs, else everything, as Glue reads without bookmarks.
``GlueContext`` builds one as ``glueContext.create_dynamic_frame``.

    frame = glueContext.create_dynamic_frame.from_options(
        connection_type="s3", connection_options={"paths": ["s3://b/in/"]},
        format="json", transformation_ctx="src")
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.core.options import DISABLE
from sparkmark.glue import catalog as _catalog
from sparkmark.glue import formats, paths
from sparkmark.glue._common import (GlueUnsupportedError, as_options, attribute_error,
                                    unsupported_message)
from sparkmark.glue.connection_options import (FILE_TYPES, JDBC_HASH, GlueSession,
                                               check_connection_type, check_scheme, ctx_of,
                                               jdbc_driver, jdbc_options)
from sparkmark.glue.dynamicframe import DynamicFrame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sparkmark.lifecycle.job import Job as SparkmarkJob

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

def _no_pushdown(push_down_predicate: Any, call: str) -> None:
    if push_down_predicate:
        raise GlueUnsupportedError(unsupported_message(
            f"{call}(push_down_predicate=...)",
            "bookmarks would mark the skipped partitions as processed; filter the frame with "
            "frame.toDF().filter(...) or read the partition's path"))


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
        check_scheme(spark, raw, m, SourceError, "read")
    if job is not None:
        merged = {**options, **reader_opts}
        if spark_fmt in ("json", "csv") and not any(
                str(k).lower() in ("mode", "schemaevolution") for k in merged):
            merged["mode"] = "FAILFAST"  # Glue's frames have no _rescued_data: as without a job
        df = job.read.files(mapped, format=spark_fmt, transformation_ctx=ctx, options=merged)
    else:  # no running job: everything, read the way sparkmark's file source reads it
        from sparkmark.planning.bands import plan_all, split_options
        from sparkmark.planning.events import split_event_options
        from sparkmark.sources import files as file_source
        _events, given = split_event_options({**options, **reader_opts})  # all is read anyway
        band_opts, rest = split_options(given)
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
    hashing = {k: opts.pop(k) for k in JDBC_HASH if k in opts}
    if job is not None:  # the bookmarked read partitions on the bookmark key range itself
        return job.read.jdbc(url, table=table, transformation_ctx=ctx, properties=props,
                             options=opts)
    reader_props = {**props, "driver": jdbc_driver(spark, url, props)}
    preds = _hash_predicates(url, hashing, call)
    try:
        if preds:
            return spark.read.jdbc(url, table, predicates=preds, properties=reader_props)
        return spark.read.jdbc(url, table, properties=reader_props)
    except Exception as e:  # noqa: BLE001
        raise SourceError(f"{call}: cannot read table {table} at {url.split('?')[0]}: "
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


def _read_delta(spark: Any, job: "SparkmarkJob | None", table: "_catalog.CatalogTable",
                opts: dict[str, Any], ctx: str | None, call: str) -> "DataFrame":
    """A Delta Lake table (by name or location): bookmarked by version through
    ``job.read.table``; without a sparkmark job, the table as it is."""
    name = (f"delta.`{paths.resolve(table.paths[0])}`" if table.paths
            else str(table.table))
    if job is not None:
        return job.read.table(name, transformation_ctx=ctx, options=opts, format="delta")
    own = [k for k in opts if k.lower() == "onnonappend"]
    if own:
        raise ConfigError(f"{call}: {own} applies to bookmarked reads; this script has no "
                          "sparkmark job (call Job(glueContext).init(...) first)")
    try:
        return spark.table(name)
    except Exception as e:  # noqa: BLE001
        raise SourceError(f"{call}: cannot read Delta table {name}: "
                          f"{str(e).strip().splitlines()[0][:300]}") from None


def _did_you_mean(key: str) -> str:
    """`` did you mean 'boundedFiles'?`` for a near-miss of an S3 connection option (or of one
    of sparkmark's file options, which go in format_options), else ``""``."""
    from sparkmark.planning.bands import OWN_OPTION_NAMES
    from sparkmark.planning.option_names import CUTOFF, closest
    names = ("paths", *_S3_BOOKMARK, *_S3_IGNORED, *_S3_UNSUPPORTED, *OWN_OPTION_NAMES)
    best = closest(key, dict.fromkeys(names))
    if best is None or best[1] < CUTOFF:
        return ""
    if best[0] in ("paths", *_S3_BOOKMARK, *_S3_IGNORED):
        return f" did you mean {best[0]!r}?"
    if best[0] in _S3_UNSUPPORTED:
        return ""  # no point suggesting what is refused anyway
    if best[0].lower() == key.lower():
        return f" {best[0]} is a file option of sparkmark: give it in format_options."
    return f" did you mean {best[0]!r} (in format_options)?"


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
            raise ConfigError(f"{call}: unknown connection option {key!r};{_did_you_mean(key)} "
                              f"sparkmark.glue supports paths, {', '.join(_S3_BOOKMARK)} (and "
                              f"ignores {', '.join(_S3_IGNORED)}); reader options and "
                              "sparkmark's own file options (lateFiles, incrementalListing, "
                              "...) go in format_options")
    return list(raw), bookmark


class DynamicFrameReader:
    """``glueContext.create_dynamic_frame``: ``from_options`` and ``from_catalog``.

        frame = glueContext.create_dynamic_frame.from_options(
            connection_type="s3", connection_options={"paths": ["s3://b/in/"]},
            format="json", transformation_ctx="src")
    """

    def __init__(self, glue_context: GlueSession):
        self._glue = glue_context

    def from_options(self, connection_type: Any = None, connection_options: Any = None,
                     format: Any = None, format_options: Any = None,
                     transformation_ctx: str = "", push_down_predicate: str = "",
                     **kwargs: Any) -> DynamicFrame:
        """Files (``s3``, ``file``) or a database table (``postgresql``, ``mysql``, ...)."""
        call = "create_dynamic_frame.from_options"
        if kwargs:
            raise GlueUnsupportedError(unsupported_message(f"{call} argument(s) {sorted(kwargs)}"))
        kind = check_connection_type(connection_type, call)
        _no_pushdown(push_down_predicate, call)
        conn = as_options(connection_options, "connection_options")
        ctx = ctx_of(transformation_ctx)
        job = self._glue.sparkmark_job
        spark = self._glue.spark_session
        if kind in FILE_TYPES:
            if format is None:
                raise ConfigError(f"{call}: give format= (csv, json, parquet, orc, avro, xml)")
            raw_paths, opts = _s3_options(conn, call)
            df = _read_files(spark, job, raw_paths, format,
                             as_options(format_options, "format_options"), opts, ctx)
        else:
            url, table, props, opts = jdbc_options(kind, conn, call)
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
        ctx = ctx_of(transformation_ctx)
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
        elif table.kind == "delta":
            df = _read_delta(spark, job, table, {**table.options, **extra}, ctx, call)
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
