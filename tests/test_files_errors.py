"""Bad input to job.read.files: one clear sparkmark error each, and no committed state changes."""
from __future__ import annotations

import json
import os

import pytest

from sparkmark import Job

from sparkmark.engine import compat
from sparkmark.core.errors import ConfigError, SinkError, SourceError

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000


def put(path: str, text: str | bytes, mtime: int) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(text, bytes) else "w") as f:
        f.write(text)
    os.utime(path, ns=(mtime * 1_000_000, mtime * 1_000_000))
    return path


@pytest.fixture
def committed(spark, sqlite_url, clock, tmp_path):
    """A job with one committed run over ``in/a.json``; yields (src, version)."""
    src = str(tmp_path / "in")
    put(f"{src}/a.json", '{"id": 1}\n', clock.now - 30 * MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    assert job.read.files(src, transformation_ctx="src").count() == 1
    version = job.commit()
    clock.advance(10 * MIN)
    return src, version


def bookmark(spark, url):
    """The committed part: version and state elements (a failed run only bumps Attempt)."""
    from sparkmark.state import open_store
    entry = open_store(url).bookmark_entry("orders")
    return {"Version": entry["Version"], "JobBookmark": entry["JobBookmark"]}


BAD = [
    (dict(path="/definitely/not/here"), SourceError, "does not exist"),
    (dict(path="/definitely/not/here/*.json"), SourceError, "does not exist"),
    (dict(format="excel"), SourceError, "unknown file format 'excel'"),
    (dict(options={"boundedFiles": 5, "boundedSize": 100}), ConfigError, "both given"),
    (dict(options={"exclusions": "[**.tmp"}), ConfigError, "not valid JSON"),
    (dict(options={"exclusions": '["{a,b"]'}), ConfigError, "closing"),
    (dict(options={"maxBand": "15min"}), ConfigError, "maxBand"),
    (dict(format="xml"), ConfigError, "rowTag"),
    (dict(options={"badRecordsPath": "/tmp/bad"}), ConfigError, "PERMISSIVE"),
    (dict(options={"schema": "id INT,, x"}), ConfigError, "schema"),
    (dict(path=""), ConfigError, "empty"),
    (dict(options={"incrementalListings": "true"}), ConfigError,
     "unknown option 'incrementalListings'; did you mean 'incrementalListing'?"),
    (dict(options={"lateFile": "read", "header": "true"}), ConfigError,
     "unknown option 'lateFile'; did you mean 'lateFiles'?"),
]


@pytest.mark.parametrize("kwargs, error, words", BAD)
def test_bad_input_is_one_clear_error_and_changes_nothing(spark, sqlite_url, clock, committed,
                                                          kwargs, error, words):
    src, version = committed
    put(f"{src}/b.json", '{"id": 2}\n', clock.now - MIN)
    before = bookmark(spark, sqlite_url)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    call = {"path": src, "format": "json", "options": None, **kwargs}
    with pytest.raises(error) as e:
        job.read.files(call["path"], format=call["format"], transformation_ctx="src",
                       options=call["options"])
    assert words in str(e.value)
    # the same source can be read again in the run once the input is fixed
    assert [r.id for r in job.read.files(src, transformation_ctx="src").collect()] == [2]
    job.fail("test ends the run")
    assert bookmark(spark, sqlite_url) == before


def test_corrupt_json_fails_the_run_and_keeps_the_bookmark(spark, sqlite_url, clock, committed):
    """With Spark's FAILFAST asked for (the default rescues the record, see test_files_drift)."""
    src, version = committed
    put(f"{src}/bad.json", '{"id": 2}\n{"id": 3, oops\n', clock.now - MIN)
    before = bookmark(spark, sqlite_url)
    with pytest.raises(SourceError, match="bad.json.*Malformed|FAILFAST") as e:
        with Job(spark, state=sqlite_url, clock=clock).run("orders", ENABLE) as job:
            job.read.files(src, transformation_ctx="src", options={"mode": "FAILFAST"})
    assert "sparkmark bookmark set orders --ctx src --processed file:" in str(e.value)
    assert bookmark(spark, sqlite_url) == before
    # asked for Spark's PERMISSIVE handling: the bad record is kept in a column
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    df = job.read.files(src, transformation_ctx="src",
                        options={"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_bad"})
    rows = sorted(df.collect(), key=lambda r: (r.id is None, r.id or 0))
    assert rows[0].id == 2 and rows[1].id is None and "oops" in rows[1]._bad
    job.commit()
    assert bookmark(spark, sqlite_url)["Version"] == before["Version"] + 1


def test_corrupt_record_with_a_given_schema_fails_the_write(spark, sqlite_url, clock, committed,
                                                            tmp_path):
    src, version = committed
    put(f"{src}/bad.json", '{"id": 2}\n{"id": 3, oops\n', clock.now - MIN)
    before = bookmark(spark, sqlite_url)
    # Spark 4 names the file; Spark 3.5 only the parse error (its messages carry no file name)
    with pytest.raises(SinkError, match="bad.json" if compat.is_spark4(spark) else
                       "Malformed|Unexpected character"):
        with Job(spark, state=sqlite_url, clock=clock).run("orders", ENABLE) as job:
            df = job.read.files(src, transformation_ctx="src",
                                options={"schema": "id INT", "mode": "FAILFAST"})
            job.write(df, str(tmp_path / "out"), transformation_ctx="sink")
    assert bookmark(spark, sqlite_url) == before
    assert not os.path.exists(tmp_path / "out") or not any(
        n.endswith(".parquet") for _, _, fs in os.walk(tmp_path / "out") for n in fs)


def test_corrupt_parquet_is_a_source_error_unless_ignored(spark, sqlite_url, clock, tmp_path):
    src = str(tmp_path / "in")
    put(f"{src}/bad.parquet", b"PAR1 this is not parquet PAR1", clock.now - MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    with pytest.raises(SourceError, match="cannot read the parquet input"):
        job.read.files(src, format="parquet", transformation_ctx="src")
    job.fail("corrupt input")
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"id": [1]}), f"{src}/good.parquet")
    os.utime(f"{src}/good.parquet", ns=((clock.now - MIN) * 10**6,) * 2)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    df = job.read.files(src, format="parquet", transformation_ctx="src",
                        options={"ignoreCorruptFiles": "true", "schema": "id BIGINT"})
    assert [r.id for r in df.collect()] == [1]
    job.commit()


def test_state_of_another_source_kind_is_a_clear_error(spark, sqlite_url, clock, tmp_path):
    from sparkmark.state import open_store
    src = str(tmp_path / "in")
    put(f"{src}/a.json", '{"id": 1}\n', clock.now - MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    job.record_read("src", {"kind": "jdbc", "last": [1]}, {"new_input": True})
    job.commit()
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    with pytest.raises(ConfigError, match="own transformation_ctx"):
        job.read.files(src, transformation_ctx="src")
    job.fail("wrong ctx")
    assert json.loads(json.dumps(open_store(sqlite_url).bookmark_entry("orders")))[
        "JobBookmark"]["src"]["kind"] == "jdbc"


def test_avro_fallback_refuses_non_local_paths_clearly(spark, sqlite_url, clock, tmp_path):
    from sparkmark.planning.bands import FileEntry
    from sparkmark.sources.files import Listing, load
    listing = Listing()
    with pytest.raises(SourceError, match="spark-avro"):
        load(spark, "avro", [FileEntry(1, "hdfs://nn:8020/x.avro", 1)], listing, {}, None)


def test_xml_without_spark_xml_on_spark35_names_the_package(spark, sqlite_url, clock, tmp_path,
                                                            committed):
    """Spark 4 reads XML built in; Spark 3.5 needs spark-xml, and says so before reading."""
    src, version = committed
    xml = str(tmp_path / "xml")
    put(f"{xml}/a.xml", "<orders><order><id>7</id></order></orders>\n", clock.now - MIN)
    before = bookmark(spark, sqlite_url)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    if compat.is_spark4(spark):
        df = job.read.files(xml, format="xml", transformation_ctx="x",
                            options={"rowTag": "order"})
        assert [r.id for r in df.collect()] == [7]
    elif compat.has_data_source(spark, "xml"):
        pytest.skip("spark-xml is on this classpath: XML is read by it")
    else:
        with pytest.raises(SourceError) as e:
            job.read.files(xml, format="xml", transformation_ctx="x",
                           options={"rowTag": "order"})
        message = str(e.value)
        assert "spark-xml" in message and "com.databricks" in message
        assert spark.version in message and "4.0" in message
        # also when there is nothing new to read: the check comes before the selection
        os.makedirs(tmp_path / "empty")
        with pytest.raises(SourceError, match="spark-xml"):
            job.read.files(str(tmp_path / "empty"), format="xml", transformation_ctx="y",
                           options={"rowTag": "order"})
    job.fail("test ends the run")
    assert bookmark(spark, sqlite_url) == before


def test_avro_fallback_skips_corrupt_files_only_when_asked(spark, sqlite_url, clock, committed,
                                                           tmp_path):
    import fastavro
    src = str(tmp_path / "avro")
    schema = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}]}
    os.makedirs(src)
    with open(f"{src}/a.avro", "wb") as f:
        fastavro.writer(f, schema, [{"id": 1}, {"id": 2}])
    os.utime(f"{src}/a.avro", ns=((clock.now - MIN) * 1_000_000,) * 2)
    put(f"{src}/b.avro", b"Obj\x01 not really avro", clock.now - MIN)
    before = bookmark(spark, sqlite_url)
    with pytest.raises((SourceError, SinkError), match="b.avro|avro"):
        with Job(spark, state=sqlite_url, clock=clock).run("orders", ENABLE) as job:
            df = job.read.files(src, format="avro", transformation_ctx="a")
            job.write(df, str(tmp_path / "out"), transformation_ctx="out")
    assert bookmark(spark, sqlite_url) == before
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    df = job.read.files(src, format="avro", transformation_ctx="a",
                        options={"ignoreCorruptFiles": "true"})
    assert sorted(r.id for r in df.collect()) == [1, 2]
    job.fail("test ends the run")
