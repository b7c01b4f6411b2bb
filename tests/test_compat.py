"""The one place that knows Spark versions: real PySpark (3.5 or 4.x, whichever this venv has)."""
from __future__ import annotations

import pyspark
import pytest

from sparkmark.engine import compat
from sparkmark.core.errors import SparkmarkError


@pytest.mark.parametrize("text, expected", [
    ("3.5.9", (3, 5)), ("4.0.0-preview2", (4, 0)), ("3.5.1-amzn-0", (3, 5)), ("4.1", (4, 1))])
def test_parse_version(text, expected):
    assert compat.parse_version(text) == expected


def test_unreadable_version_is_a_clear_error():
    with pytest.raises(compat.UnsupportedSparkError, match="3.5.x and 4.x"):
        compat.parse_version("banana")


def test_this_spark_is_supported_and_matches_pyspark(spark):
    assert compat.check_supported(spark) == compat.pyspark_version()
    assert compat.spark_version(spark) == compat.parse_version(pyspark.__version__)
    assert compat.is_spark4(spark) == (compat.spark_version(spark)[0] == 4)
    assert not compat.is_connect(spark)


def test_require_names_the_feature_and_both_versions(spark):
    compat.require(spark, (3, 5), "anything sparkmark uses")  # no error
    with pytest.raises(compat.UnsupportedSparkError) as e:
        compat.require(spark, (9, 1), "time travel")
    assert "time travel needs Spark 9.1 or newer" in str(e.value)
    assert spark.version in str(e.value)
    assert isinstance(e.value, SparkmarkError)


def test_package_coordinates_follow_this_spark(spark):
    scala = compat.scala_binary(spark)
    assert scala == ("2.13" if compat.is_spark4(spark) else "2.12")  # PyPI's builds
    assert compat.avro_package(spark) == f"org.apache.spark:spark-avro_{scala}:{spark.version}"
    assert compat.xml_package(spark) == f"com.databricks:spark-xml_{scala}:0.18.0"


def test_data_source_lookup(spark):
    assert compat.has_data_source(spark, "parquet")
    assert compat.has_data_source(spark, "jdbc")
    assert not compat.has_data_source(spark, "avro")  # PyPI's PySpark ships no spark-avro
    assert not compat.has_data_source(spark, "no.such.format")
    assert compat.has_data_source(spark, "xml") == compat.is_spark4(spark)


def test_default_parallelism(spark):
    assert compat.default_parallelism(spark) == spark.sparkContext.defaultParallelism >= 1
