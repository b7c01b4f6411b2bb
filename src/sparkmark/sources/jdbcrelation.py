"""Spark's JDBC relation built on the connection the run already holds.

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
one partition with no WHERE of its own), a ``JDBCRelation`` and its DataFrame. That is done in
the driver JVM by ``java/SparkmarkJdbcHelper.sparkJdbcRelation`` in one py4j round trip (through
py4j, call by call, it took 20), reaching Spark's classes by reflection so the same class file
runs on Spark 3.5 and 4. The executors read exactly as before: the relation carries the same
options, so Spark's reads connect, initialise the session and fetch as they would.

Used only where that holds: a classic session whose connection is the driver JVM's JDBC driver
(Spark Connect reads through the server, sparkmark through a Python driver), and no option that
makes Spark connect differently from a plain ``Driver.connect`` (``keytab``, ``principal``,
``connectionProvider``). Anything else, and any error while building (an unsupported column
type, a table gone), returns ``None``: the caller reads through ``spark.read.jdbc`` as before, so
Spark's errors keep their words.

Example (``conn``: the run's open :class:`sparkmark.engine.jdbc.JdbcConnection`)::

    df = load_on(spark, conn.java_connection, url, "(SELECT ...) sm_range", None, props)
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Sequence

from sparkmark.engine.compat import classic_dataframe, is_connect
from sparkmark.engine.jvm import encode_rows, helper

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("sparkmark.jdbc")

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
           predicates: Sequence[str] | None, props: dict[str, str]) -> "DataFrame | None":
    made = helper(spark, "SparkmarkJdbcHelper")
    if made is None:
        return None
    wheres = encode_rows([[p] for p in predicates] if predicates else [[None]])
    jdf = made.sparkJdbcRelation(spark._jsparkSession, jconn, url, dbtable, wheres,
                                 encode_rows([[k, v] for k, v in props.items()]))
    return classic_dataframe(spark, jdf)
