"""Delta Lake on a local Spark session, for sparkmark's tests and benchmarks.

The jars are Delta's own ``delta-spark`` and ``delta-storage`` for the running Spark line, from
Maven Central (:mod:`sparkmark.devtools.jars`: 3.3.2 for Spark 3.5, 4.4.0 for Spark 4.1; Delta
publishes nothing for Spark 4.3 yet).  ``make jars`` fills the jar cache.  The session gets
Delta's SQL extensions and ``DeltaCatalog`` as its ``spark_catalog``, as Delta's quick start
sets them.

Example::

    spark = local_session(extra_conf=delta_session_conf())
    spark.range(3).write.format("delta").save("/tmp/t")
"""
from __future__ import annotations

from sparkmark.devtools.jars import jars_for

EXTENSIONS = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def delta_jars(*, fetch: bool = True) -> list[str]:
    """Paths of ``delta-spark`` and ``delta-storage`` for the installed PySpark, from the jar
    cache (fetched from Maven Central when missing and ``fetch``).

    Example: ``local_session(extra_conf={"spark.jars": ",".join(delta_jars())})``
    """
    return jars_for(["delta"], fetch_missing=fetch)


def delta_session_conf(*, jars: list[str] | None = None,
                       snapshot_partitions: int | None = None,
                       listing_parallelism: int | None = None) -> dict[str, str]:
    """Spark settings for Delta tables: the jars, Delta's SQL extensions and its catalog.

    ``snapshot_partitions``: Delta's ``spark.databricks.delta.snapshotPartitions`` (50 by
    default: the shuffle that rebuilds a table's state from its log).  The tests give 2: on
    small tables in local mode that makes each commit and each ``DESCRIBE DETAIL`` 2-3 times
    faster (12 appends, each followed by DESCRIBE DETAIL and HISTORY: 41 s against 110 s).

    ``listing_parallelism``: Spark's ``spark.sql.sources.parallelPartitionDiscovery.parallelism``
    (10,000 by default), the number of tasks ``VACUUM`` lists and deletes a table's files with.
    The tests give 2: one ``VACUUM`` of a small table in local mode then takes ~3 s, not ~40 s.

    Example: ``local_session(extra_conf=delta_session_conf(snapshot_partitions=2))``
    """
    conf = {
        "spark.jars": ",".join(delta_jars() if jars is None else jars),
        "spark.sql.extensions": EXTENSIONS,
        "spark.sql.catalog.spark_catalog": CATALOG,
    }
    if snapshot_partitions is not None:
        conf["spark.databricks.delta.snapshotPartitions"] = str(int(snapshot_partitions))
    if listing_parallelism is not None:
        conf["spark.sql.sources.parallelPartitionDiscovery.parallelism"] = str(
            int(listing_parallelism))
    return conf
