"""The jar set of ``sparkmark.devtools.jars`` (no Spark session): each line's coordinates match
the Spark it names, the installed PySpark's line matches the Scala and Hadoop it ships, a
feature a line lacks is one clear error naming the lines that have it, and the cache holds
every jar ``make jars`` fetched (under SPARKMARK_REQUIRE_S3=1, as in ``make test``)."""
from __future__ import annotations

import os
import zipfile

import pytest

from sparkmark.devtools import jars


@pytest.mark.parametrize("name", sorted(jars.LINES))
def test_every_line_names_artifacts_of_its_own_scala_and_spark(name):
    line = jars.LINES[name]
    assert line.name == name
    for feature, items in line.features.items():
        for d in items:
            if "_2.1" in d.artifact:  # a Scala artifact: the line's Scala, and its Spark
                assert d.artifact.endswith("_" + line.scala), (feature, d)
            if d.group == "org.apache.spark":
                assert d.version == line.spark, (feature, d)
            if d.artifact == "hadoop-aws":
                assert d.version == line.hadoop and d.transitive
            if d.artifact.startswith("iceberg-spark-runtime-"):
                assert d.artifact.startswith(f"iceberg-spark-runtime-{name}_")
    assert not set(line.features) & set(line.missing)


def test_the_installed_pyspark_has_a_line_matching_what_it_ships():
    import pyspark
    line = jars.line_of()
    assert pyspark.__version__ == line.spark, (
        "the venvs pin each line's Spark version (Makefile PYSPARK4 / PYSPARK35 / PYSPARK41)")
    assert jars.bundled() == {"scala": line.scala, "hadoop": line.hadoop}


def test_packages_is_the_value_a_user_passes_to_spark():
    assert jars.packages(["s3a", "iceberg"], "3.5.9") == (
        "org.apache.hadoop:hadoop-aws:3.3.4,"
        f"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:{jars.ICEBERG_VERSION_35}")
    assert jars.packages(["s3a"], "4.3.0") == "org.apache.hadoop:hadoop-aws:3.5.0"
    assert jars.packages(["delta"], "4.1.2") == (
        "io.delta:delta-spark_4.1_2.13:4.4.0,io.delta:delta-storage:4.4.0")
    assert "com.mysql:mysql-connector-j:" in jars.packages(["jdbc"], "3.5.7")


def test_a_feature_a_line_lacks_is_one_error_naming_the_lines_that_have_it():
    with pytest.raises(jars.FeatureUnavailable) as e:
        jars.deps(["iceberg"], "4.3.0")
    assert "no iceberg jars for Spark 4.3.0" in str(e.value)
    assert "use Spark 3.5.7 or 4.1.2" in str(e.value)
    with pytest.raises(jars.FeatureUnavailable, match="unknown feature 'icebreg'"):
        jars.deps(["icebreg"], "3.5.7")
    with pytest.raises(jars.FeatureUnavailable, match="no jar set for Spark 3.4.1"):
        jars.line_of("3.4.1")


def test_the_pom_takes_non_transitive_jars_alone():
    pom = jars._pom([jars.Dep("a.b:c_2.13:1.0"), jars.Dep("d:e:2", transitive=True)])
    assert pom.count("<dependency>") == 2
    assert pom.count("<exclusions>") == 1
    assert "<artifactId>c_2.13</artifactId><version>1.0</version><exclusions>" in pom


def test_a_missing_jar_names_make_jars_and_fetches_nothing(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"make jars"):
        jars.jars_for(["iceberg"], "3.5.7", cache=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_cache_holds_every_jar_of_this_line():
    """Every feature of this line resolves to real jar files in the cache, the s3a connector
    with the AWS SDK bundle of its hadoop-aws; skipped unless ``make jars`` ran (failed in
    ``make test``)."""
    line = jars.line_of()
    try:
        paths = jars.jars_for([*line.features, "jdbc"])
    except FileNotFoundError as e:
        if os.environ.get("SPARKMARK_REQUIRE_S3") == "1":
            pytest.fail(str(e))
        pytest.skip(str(e))
    names = [os.path.basename(p) for p in paths]
    assert f"hadoop-aws-{line.hadoop}.jar" in names
    assert any(n.startswith(("aws-java-sdk-bundle-", "bundle-2.")) for n in names), names
    for p in paths:
        with zipfile.ZipFile(p) as z:  # a whole jar (its central directory at its end)
            assert z.namelist()
