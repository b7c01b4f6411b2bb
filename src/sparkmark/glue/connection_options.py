"""Glue's connection types and the connection options reads and writes share.

``glueContext.create_dynamic_frame`` (:mod:`sparkmark.glue.reads`),
``glueContext.write_dynamic_frame`` (:mod:`sparkmark.glue.writes`) and ``purge_s3_path``
(:mod:`sparkmark.glue.purge`) check their arguments here: the connection type, the
``transformation_ctx``, an ``s3://`` path's file system, a JDBC table's options and driver.

    kind = check_connection_type("S3", "create_dynamic_frame.from_options")   # "s3"
    ctx = ctx_of("")                                                          # None: no bookmark
    url, table, props, opts = jdbc_options("postgresql", {"url": "jdbc:postgresql://h/db",
                                           "dbtable": "t", "user": "u"}, "from_options")
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol

from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.glue import catalog as _catalog
from sparkmark.glue import paths
from sparkmark.glue._common import GlueUnsupportedError, unsupported_message

if TYPE_CHECKING:
    from sparkmark.lifecycle.job import Job as SparkmarkJob

FILE_TYPES = ("s3", "file")
JDBC_TYPES = ("postgresql", "mysql", "sqlserver", "oracle", "jdbc")
_JDBC_KEYS = ("url", "dbtable", "user", "password", "jobBookmarkKeys",
              "jobBookmarkKeysSortOrder", "jobBookmarksKeysSortOrder",
              "customJdbcDriverClassName")
JDBC_HASH = ("hashfield", "hashexpression", "hashpartitions")
_JDBC_IGNORED = ("bulkSize", "sampleQuery", "enablePartitioningForSampleQuery")
_CONNECTION_HINTS = {
    "dynamodb": None, "kinesis": "use Spark Structured Streaming", "kafka": "use Spark "
    "Structured Streaming", "mongodb": "use the MongoDB Spark connector",
    "documentdb": "use the MongoDB Spark connector", "redshift": "use connection_type "
    "'postgresql' with the Redshift JDBC URL, or the jdbc connection type",
    "custom.spark": None, "marketplace.spark": None, "opensearch": None,
}


class GlueSession(Protocol):
    """What the reader, the writer, ``getSink`` and ``purge_*`` need of a ``GlueContext``: its
    Spark session and its running sparkmark job (``None`` outside ``job.init``/``job.commit``).

        def read(glue: GlueSession) -> None:
            glue.spark_session.range(1).show()
    """

    spark_session: Any

    @property
    def sparkmark_job(self) -> "SparkmarkJob | None":
        """The running :class:`sparkmark.Job`, or ``None``."""


def ctx_of(transformation_ctx: Any) -> str | None:
    """Glue's ``transformation_ctx=""`` means "no bookmark"."""
    if transformation_ctx in (None, ""):
        return None
    if not isinstance(transformation_ctx, str):
        raise ConfigError(f"transformation_ctx must be a string, not "
                          f"{type(transformation_ctx).__name__}")
    return transformation_ctx


def check_connection_type(connection_type: Any, call: str) -> str:
    name = str(connection_type or "").strip().lower()
    if name in FILE_TYPES or name in JDBC_TYPES:
        return name
    if name in _CONNECTION_HINTS:
        raise GlueUnsupportedError(unsupported_message(f"{call}(connection_type={name!r})",
                                                       _CONNECTION_HINTS[name]))
    raise ConfigError(f"{call}: unknown connection_type {connection_type!r}; sparkmark.glue "
                      f"supports {', '.join(FILE_TYPES + JDBC_TYPES)}")


def check_scheme(spark: Any, raw: str, mapped: str, error: type, call: str) -> None:
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


def jdbc_driver(spark: Any, url: str, props: Mapping[str, Any],
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


def jdbc_options(connection_type: str, connection_options: dict[str, Any],
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
        elif key in _JDBC_KEYS or key in JDBC_HASH:
            options[key] = value
        elif key in _JDBC_IGNORED:
            continue
        else:
            raise ConfigError(f"{call}: unknown JDBC connection option {key!r}; sparkmark.glue "
                              f"supports {', '.join(_JDBC_KEYS + JDBC_HASH)}, connectionName")
    if "driver" not in props:  # values from extract_jdbc_conf(name): that connection's driver
        driver = _catalog.connection_driver(url)
        if driver:
            props["driver"] = driver
    return url, table.strip(), props, options
