"""Apache Iceberg on a local Spark session, for sparkmark's tests, benchmarks and demos.

The runtime is Iceberg's own ``iceberg-spark-runtime`` for the running Spark line, from Maven
Central (:mod:`sparkmark.devtools.jars`: 1.10.2 for Spark 3.5, 1.12.0 for Spark 4.1; Iceberg
publishes no runtime for Spark 4.2 or 4.3 yet).  ``make jars`` fills the jar cache.

Example::

    conf = iceberg_session_conf("/tmp/wh")
    spark = local_session(extra_conf=conf)
    spark.sql("CREATE TABLE local.db.t (id BIGINT) USING iceberg")
"""
from __future__ import annotations

import sys

from sparkmark.devtools.jars import deps, jars_for

EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def runtime_jar(spark_version: str | None = None) -> str:
    """The file name of the Iceberg runtime for a Spark line (default: the installed PySpark).

    Example: ``runtime_jar("3.5.7") == "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"``
    """
    return deps(["iceberg"], spark_version)[0].jar


def iceberg_jars(*, fetch: bool = True) -> list[str]:
    """Paths of the Iceberg runtime for the installed PySpark, from the jar cache (fetched from
    Maven Central when missing and ``fetch``).

    Example: ``local_session(extra_conf={"spark.jars": ",".join(iceberg_jars())})``
    """
    return jars_for(["iceberg"], fetch_missing=fetch)


def iceberg_session_conf(warehouse: str, *, catalog: str = "local",
                         jars: list[str] | None = None) -> dict[str, str]:
    """Spark settings for a Hadoop catalog ``catalog`` with its tables under ``warehouse``
    (a directory or an ``s3a://`` URL), the Iceberg SQL extensions and the jars.

    Example: ``local_session(extra_conf=iceberg_session_conf(str(tmp_path / "wh")))``
    """
    prefix = f"spark.sql.catalog.{catalog}"
    return {
        "spark.jars": ",".join(iceberg_jars() if jars is None else jars),
        "spark.sql.extensions": EXTENSIONS,
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        prefix + ".type": "hadoop",
        prefix + ".warehouse": warehouse,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m sparkmark.devtools.iceberg jars``: fetch the runtime into the cache."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["jars"]:
        for p in iceberg_jars():
            print(p)
        return 0
    print("usage: python -m sparkmark.devtools.iceberg jars", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
