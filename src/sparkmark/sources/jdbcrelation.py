"""Spark's JDBC relation built on the connection the run already holds (issue 26).

A JDBC run opens one connection before it reads: it resolves the table, its keys and the upper
bound of the range. Spark's ``spark.read.jdbc`` then opened a second connection on the driver
only to learn the schema of the read (``SELECT * FROM (...) WHERE 1=0``) and closed it: a
connect, a login and a teardown per run, ~5 ms on this machine's local PostgreSQL and far more
to a database across a network or behind TLS. :func:`load_on` asks the same question on the
run's connection and builds what Spark's ``DataFrameReader.jdbc`` builds (Spark's
``JdbcRelationProvider.createRelation``): ``JDBCOptions`` from the same URL, table and
properties, the schema from Spark's own ``JDBCRDD.resolveTable`` (Spark 4 takes the
connection; on Spark 3.5 the same statement, ``JdbcUtils.getSchema`` over its result) with the
``customSchema`` option applied as Spark applies it, the partitions (the predicates, or Spark's
one partition with no WHERE of its own), a ``JDBCRelation`` and its DataFrame. The executors
read exactly as before: the relation carries the same options, so Spark's reads connect,
initialise the session and fetch as they would.

Used only where that holds: a classic session whose connection is the driver JVM's JDBC driver
(Spark Connect reads through the server, sparkmark through a Python driver), and no option that
makes Spark connect differently from a plain ``Driver.connect`` (``keytab``, ``principal``,
``connectionProvider``). Anything else, and any error while building (an unsupported column
type, a table gone), returns ``None``: the caller reads through ``spark.read.jdbc`` as before, so
Spark's errors keep their words.

    >>> df = load_on(spark, conn.java_connection, url, "(SELECT ...) sm_range", None, props)
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Sequence

from ..compat import classic_dataframe, is_connect
from ..jvm import java_class, java_static

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("sparkmark.jdbc")

_JDBC = "org.apache.spark.sql.execution.datasources.jdbc."
#: options with which Spark's connection is not a plain ``Driver.connect`` (Kerberos, a
#: named connection provider): Spark's own read resolves the schema on its own connection
OWN_CONNECTION_OPTIONS = ("keytab", "principal", "refreshkrb5config", "connectionprovider")


def usable(spark: "SparkSession", java_connection: Any, props: dict[str, str]) -> bool:
    """Whether :func:`load_on` may build the read on ``java_connection`` (pure but for the
    session kind).

    >>> usable(spark, None, {})          # a Python driver's connection: Spark connects itself
    False
    """
    if java_connection is None or is_connect(spark):
        return False
    return not any(k.lower() in OWN_CONNECTION_OPTIONS for k in props)


def load_on(spark: "SparkSession", java_connection: Any, url: str, dbtable: str,
            predicates: Sequence[str] | None, props: dict[str, str]) -> "DataFrame | None":
    """The DataFrame ``spark.read.jdbc(url, dbtable, predicates=..., properties=props)``
    would return, its schema read on ``java_connection`` (left open: the caller's); ``None``
    when it cannot be built here (see the module docstring), and the caller reads as before.

    Example: ``load_on(spark, conn.java_connection, spark_url(url), dbtable, None, props)``
    """
    if not usable(spark, java_connection, props):
        return None
    try:
        return _build(spark, java_connection, url, dbtable, predicates, props)
    except Exception as e:  # noqa: BLE001 - Spark's own read runs and says what is wrong
        log.debug("sparkmark: Spark's own JDBC schema query used for %s: %s", dbtable, e)
        return None


def _build(spark: "SparkSession", jconn: Any, url: str, dbtable: str,
           predicates: Sequence[str] | None, props: dict[str, str]) -> "DataFrame":
    jss: Any = spark._jsparkSession
    jprops = java_class(spark, "java.util.HashMap")()
    for name, value in props.items():
        jprops.put(name, value)
    params = java_static(spark, "org.apache.spark.api.python.PythonUtils", "toScalaMap")(jprops)
    options = java_class(spark, _JDBC + "JDBCOptions")(url, dbtable, params)
    started = time.perf_counter_ns()
    schema = _schema(spark, jconn, url, options)
    elapsed = time.perf_counter_ns() - started
    if any(k.lower() == "customschema" for k in props):  # Spark's JDBCRelation.getSchema
        conf = jss.sessionState().conf()
        schema = java_static(spark, _JDBC + "JdbcUtils", "getCustomSchema")(
            schema, options.customSchema().get(), conf.resolver())
    wheres = list(predicates) if predicates else [None]  # None: Spark's one partition
    partition = java_class(spark, "org.apache.spark.Partition")
    gateway: Any = spark.sparkContext._gateway
    parts = gateway.new_array(partition, len(wheres))
    make = java_class(spark, _JDBC + "JDBCPartition")
    for i, where in enumerate(wheres):
        parts[i] = make(where, i)
    return classic_dataframe(spark, jss.baseRelationToDataFrame(
        _relation(spark, jss, schema, parts, options, elapsed)))


def _schema(spark: "SparkSession", jconn: Any, url: str, options: Any) -> Any:
    """Spark's ``JDBCRDD.resolveTable`` on ``jconn``: Spark 4 takes the connection; Spark 3.5
    has no such form, so its statement is run here as it runs it."""
    try:
        none = java_static(spark, "scala.Option", "empty")()
        return java_static(spark, _JDBC + "JDBCRDD", "resolveTable")(options, jconn, none, none)
    except Exception as e:  # noqa: BLE001
        if "does not exist" not in str(e):
            raise
    dialect = java_static(spark, "org.apache.spark.sql.jdbc.JdbcDialects", "get")(url)
    statement = jconn.prepareStatement(
        options.prepareQuery() + dialect.getSchemaQuery(options.tableOrQuery()))
    try:
        statement.setQueryTimeout(options.queryTimeout())
        rows = statement.executeQuery()
        try:  # Spark 3.5: (resultSet, dialect, alwaysNullable, isTimestampNTZ)
            return java_static(spark, _JDBC + "JdbcUtils", "getSchema")(
                rows, dialect, True, options.preferTimestampNTZ())
        finally:
            rows.close()
    finally:
        statement.close()


def _relation(spark: "SparkSession", jss: Any, schema: Any, parts: Any, options: Any,
              elapsed_ns: int) -> Any:
    """``JDBCRelation(schema, parts, options)``: Spark 4 also takes the relation's metrics
    (the schema fetch time, as its ``createRelation`` records it); Spark 3.5 does not."""
    cls = java_class(spark, _JDBC + "JDBCRelation")
    try:
        metric = java_static(spark, _JDBC + "JdbcUtils", "createSchemaFetchMetric")(
            jss.sparkContext())
    except Exception as e:  # noqa: BLE001
        if "does not exist" not in str(e):
            raise
        return cls(schema, parts, options, jss)  # Spark 3.5
    metric.add(elapsed_ns)
    metrics = java_class(spark, "java.util.HashMap")()
    metrics.put(java_static(spark, _JDBC + "JDBCRelation", "schemaFetchKey")(), metric)
    scala_metrics = java_static(spark, "org.apache.spark.api.python.PythonUtils",
                                "toScalaMap")(metrics)
    return cls(schema, parts, options, scala_metrics, jss)
