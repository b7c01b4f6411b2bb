"""sparkmark.glue in-process: Glue's API over real local Spark, real files and a real state store.

Pure parts (argument resolution, path and catalog mapping, format options) are tested directly;
the GlueContext flows run on the shared SparkSession with an injected clock and files whose
mtimes are set with os.utime.  The seed scripts themselves run as subprocesses in
test_glue_scripts.py.
"""
from __future__ import annotations

import glob
import json
import os

import pytest

from sparkmark import Bookmarks
from sparkmark.core.errors import ConfigError, SinkError, SourceError, SparkmarkError

# importing sparkmark.glue may set PYSPARK_SUBMIT_ARGS (for a script's bare SparkContext());
# keep this test process's Spark exactly as conftest starts it
_SUBMIT_ARGS = os.environ.get("PYSPARK_SUBMIT_ARGS")
from sparkmark.glue import GlueUnsupportedError, local_submit_args  # noqa: E402
from sparkmark.glue.catalog import find_in_mapping, lookup, parse_entry  # noqa: E402
from sparkmark.glue.formats import (glue_column_names, glue_format,  # noqa: E402
                                    reader_options, writer_options)
from sparkmark.glue.paths import load_path_map, map_path, parse_path_map  # noqa: E402
from sparkmark.glue.transforms import split_path  # noqa: E402
from sparkmark.glue.utils import getResolvedOptions  # noqa: E402

if _SUBMIT_ARGS is None:
    os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
MIN = 60_000


# ---------------------------------------------------------------------- getResolvedOptions
def test_resolved_options_have_glue_reserved_keys():
    argv = ["script.py", "--JOB_NAME", "orders", "--job-bookmark-option", "job-bookmark-enable",
            "--day=2024-01-01", "--TempDir", "s3://tmp/x", "--not-asked", "1"]
    args = getResolvedOptions(argv, ["JOB_NAME", "day"])
    assert args == {"job_bookmark_option": "job-bookmark-enable", "job_bookmark_from": None,
                    "job_bookmark_to": None, "JOB_ID": None, "JOB_RUN_ID": None,
                    "SECURITY_CONFIGURATION": None, "encryption_type": None,
                    "TempDir": "s3://tmp/x", "RedshiftTempDir": "s3://tmp/x",
                    "JOB_NAME": "orders", "day": "2024-01-01"}


def test_resolved_options_defaults_and_translations():
    assert getResolvedOptions(["s"], [])["job_bookmark_option"] == "job-bookmark-disable"
    old = getResolvedOptions(["s", "--continuation-option", "continuation-readonly"], [])
    assert old["job_bookmark_option"] == "job-bookmark-pause"
    paused = getResolvedOptions(["s", "--job-bookmark-option", "job-bookmark-pause",
                                 "--job-bookmark-from", "r1", "--job-bookmark-to", "r2"], [])
    assert (paused["job_bookmark_from"], paused["job_bookmark_to"]) == ("r1", "r2")
    assert getResolvedOptions(["s", "--my-opt", "v"], ["my-opt"])["my_opt"] == "v"


@pytest.mark.parametrize("argv,options,words", [
    (["s"], ["JOB_NAME"], ["--JOB_NAME"]),
    (["s", "--job-bookmark-option", "job-bookmark-on"], [], ["job-bookmark-on", "enable"]),
    (["s", "--job-bookmark-option", "job-bookmark-pause", "--job-bookmark-from", "r1"], [],
     ["--job-bookmark-to"]),
    (["s", "--job-bookmark-option", "job-bookmark-enable", "--job-bookmark-from", "r1",
      "--job-bookmark-to", "r2"], [], ["job-bookmark-pause"]),
    (["s"], ["job-bookmark-option"], ["reserved"]),
    (["s", "--JOB_NAME"], ["JOB_NAME"], ["--JOB_NAME", "no value"]),
    (["s", "--continuation-option", "maybe"], [], ["continuation-option", "maybe"]),
    (["s", "--a", "1", "--a", "2"], ["a"], ["twice"]),
])
def test_resolved_options_errors(argv, options, words):
    with pytest.raises(ConfigError) as e:
        getResolvedOptions(argv, options)
    for w in words:
        assert w in str(e.value)


def test_local_spark_defaults_only_when_nothing_is_configured(tmp_path):
    args = local_submit_args({})
    assert args.startswith("--master 'local[2]'") and args.endswith("pyspark-shell")
    assert "spark.ui.enabled=false" in args
    assert "--master 'local[1]'" in local_submit_args({"SPARKMARK_GLUE_MASTER": "local[1]"})
    assert local_submit_args({"PYSPARK_SUBMIT_ARGS": "--master yarn pyspark-shell"}) is None
    assert local_submit_args({"PYSPARK_GATEWAY_PORT": "4040"}) is None
    (tmp_path / "spark-defaults.conf").write_text("spark.master  spark://h:7077\n")
    assert local_submit_args({"SPARK_CONF_DIR": str(tmp_path)}) is None


# ---------------------------------------------------------------------- paths
def test_path_map_longest_prefix_on_segments(tmp_path):
    m = parse_path_map({"s3://bucket": "/data/b", "s3a://bucket/raw/": "/fast/raw",
                        "s3://other/x": "rel/dir"}, base_dir=str(tmp_path))
    assert map_path("s3://bucket/raw/2024/f.csv", m) == "/fast/raw/2024/f.csv"
    assert map_path("s3n://bucket/raw", m) == "/fast/raw"
    assert map_path("s3://bucket/rawer/f", m) == "/data/b/rawer/f"
    assert map_path("s3://bucket", m) == "/data/b"
    assert map_path("s3://other/x/y", m) == f"{tmp_path}/rel/dir/y"
    assert map_path("s3://other/xy", m) == "s3a://other/xy"
    assert map_path("s3://unmapped/k", m) == "s3a://unmapped/k"
    assert map_path("hdfs://nn/p", m) == "hdfs://nn/p"
    assert map_path("/local/p", []) == "/local/p"


@pytest.mark.parametrize("data,word", [
    ({"bucket/x": "/d"}, "URI prefix"), ({"s3://": "/d"}, "URI prefix"),
    ({"s3://b": ""}, "local folder"), ({"s3://b": 3}, "local folder")])
def test_path_map_errors(data, word):
    with pytest.raises(ConfigError, match=word):
        parse_path_map(data)


def test_path_map_files_json_and_yaml(tmp_path):
    j = tmp_path / "map.json"
    j.write_text(json.dumps({"s3://input_path": "out"}))
    assert load_path_map({"SPARKMARK_PATH_MAP": str(j)}) == [("s3://input_path",
                                                             f"{tmp_path}/out")]
    y = tmp_path / "map.yaml"
    y.write_text("s3://b/p: /abs/dir\n")
    assert load_path_map({"SPARKMARK_PATH_MAP": str(y)}) == [("s3://b/p", "/abs/dir")]
    assert load_path_map({}) == []
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="not valid JSON or YAML"):
        load_path_map({"SPARKMARK_PATH_MAP": str(bad)})
    with pytest.raises(ConfigError, match="does not exist"):
        load_path_map({"SPARKMARK_PATH_MAP": str(tmp_path / "missing.json")})
    lst = tmp_path / "list.yaml"
    lst.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_path_map({"SPARKMARK_PATH_MAP": str(lst)})


# ---------------------------------------------------------------------- catalog entries
def test_catalog_entries(tmp_path):
    t = parse_entry("db.t", {"path": "data/t", "format": "CSV",
                             "format_options": {"withHeader": True}, "options": {"maxBand": 0}},
                    "f", str(tmp_path))
    assert (t.kind, t.paths, t.format) == ("files", (f"{tmp_path}/data/t",), "csv")
    assert t.format_options == {"withHeader": True} and t.options == {"maxBand": 0}
    s3 = parse_entry("db.t", {"paths": ["s3://b/x", "/abs"], "format": "json"}, "f")
    assert s3.paths == ("s3://b/x", "/abs")
    j = parse_entry("hr.emp", {"url": "jdbc:postgresql://h/db", "table": "emp", "user": "u",
                               "password": "p", "driver": "org.postgresql.Driver",
                               "properties": {"ssl": True}}, "f")
    assert (j.kind, j.url, j.table) == ("jdbc", "jdbc:postgresql://h/db", "emp")
    assert j.properties == {"ssl": "True", "user": "u", "password": "p",
                            "driver": "org.postgresql.Driver"}
    assert find_in_mapping({"DB.T": 1}, "db.t") == 1
    assert find_in_mapping({"db.t": 1}, "db.u") is None


@pytest.mark.parametrize("entry,word", [
    ({"format": "csv"}, "give 'path'"), ({"path": "x"}, "give 'format'"),
    ({"path": "x", "format": "csv", "header": True}, "unknown key"),
    ({"url": "postgres://h", "table": "t"}, "JDBC URL"), ({"url": "jdbc:x:y"}, "needs 'table'"),
    ({"url": "jdbc:x:y", "table": "t", "schema": "s"}, "unknown key"),
    ("s3://b/x", "must be an object"),
    ({"path": "x", "format": "csv", "format_options": "header"}, "format_options")])
def test_catalog_entry_errors(entry, word):
    with pytest.raises(ConfigError, match=word):
        parse_entry("db.t", entry, "f")


def test_catalog_lookup_errors(spark, tmp_path):
    with pytest.raises(SourceError, match="SPARKMARK_GLUE_CATALOG is not set"):
        lookup(spark, "nodb", "t", env={})
    f = tmp_path / "cat.json"
    f.write_text(json.dumps({"db.other": {"path": "x", "format": "csv"}}))
    with pytest.raises(SourceError, match="it has: db.other"):
        lookup(spark, "db", "t", env={"SPARKMARK_GLUE_CATALOG": str(f)})
    f.write_text(json.dumps({"db.t": {"path": "x", "format": "csv"},
                             "DB.T": {"path": "y", "format": "csv"}}))
    with pytest.raises(ConfigError, match="differ only in case"):
        lookup(spark, "Db", "t", env={"SPARKMARK_GLUE_CATALOG": str(f)})
    with pytest.raises(ConfigError, match="non-empty database"):
        lookup(spark, "", "t", env={})


# ---------------------------------------------------------------------- formats
def test_format_options_glue_names_to_spark():
    opts, positional = reader_options("csv", {"withHeader": True, "separator": "|",
                                              "quoteChar": -1, "escaper": "\\",
                                              "optimizePerformance": True, "inferSchema": "true"})
    assert opts == {"header": "true", "sep": "|", "quote": "", "escape": "\\",
                    "inferSchema": "true"}
    assert positional is False
    assert reader_options("csv", None) == ({}, True)
    assert reader_options("json", {"multiline": True}) == ({"multiLine": "true"}, False)
    assert writer_options("csv", {}) == {"header": "true"}
    assert writer_options("csv", {"writeHeader": False}) == {"header": "false"}
    assert glue_format("glueparquet", write=True) == "parquet"
    assert glue_column_names(["_c0", "_c12", "name", "_cx"]) == {"_c0": "col0", "_c12": "col12"}


def test_format_errors():
    with pytest.raises(GlueUnsupportedError, match="format 'ion' is not supported"):
        glue_format("ion")
    with pytest.raises(ConfigError, match="unknown sink format 'avro'"):
        glue_format("avro", write=True)
    with pytest.raises(GlueUnsupportedError, match="'jsonPath' is not supported.*select"):
        reader_options("json", {"jsonPath": "$.a"})
    with pytest.raises(GlueUnsupportedError, match="withHeader: true"):
        reader_options("csv", {"skipFirst": True})


def test_split_path():
    assert split_path("a.b") == ["a", "b"]
    assert split_path("a.`x.y`.c") == ["a", "x.y", "c"]
    for bad in ("a..b", "`a", "", None):
        with pytest.raises(ConfigError):
            split_path(bad)


# ---------------------------------------------------------------------- transforms and frames
@pytest.fixture
def glue(spark):
    from sparkmark.glue.context import GlueContext
    return GlueContext(spark.sparkContext)


def _frame(spark, glue, rows, ddl):
    from sparkmark.glue.dynamicframe import DynamicFrame
    return DynamicFrame.fromDF(spark.createDataFrame(rows, ddl), glue, "f")


def test_apply_mapping_renames_casts_nests_and_drops(spark, glue):
    from sparkmark.glue.transforms import ApplyMapping
    f = _frame(spark, glue, [("1", "2.50", ("x", 7), "gone")],
               "ID string, amount string, inner struct<tag:string,n:int>, extra string")
    out = ApplyMapping.apply(frame=f, mappings=[
        ("id", "string", "id", "long"), ("amount", "string", "amt", "decimal(7,2)"),
        ("inner.tag", "string", "meta.tag", "string"), ("inner.n", "int", "meta.n", "string"),
        ("absent", "string", "later", "int")], transformation_ctx="am")
    df = out.toDF()
    assert df.schema.simpleString() == ("struct<id:bigint,amt:decimal(7,2),"
                                        "meta:struct<tag:string,n:string>,later:int>")
    row = df.collect()[0]
    assert (row.id, str(row.amt), row.meta.tag, row.meta.n, row.later) == (1, "2.50", "x", "7",
                                                                           None)
    with pytest.raises(ConfigError, match="none of the source fields"):
        ApplyMapping.apply(frame=f, mappings=[("nope", "string", "x", "string")])
    with pytest.raises(ConfigError, match="unknown type 'strng'"):
        ApplyMapping.apply(frame=f, mappings=[("id", "string", "x", "strng")])
    with pytest.raises(ConfigError, match="4-tuple"):
        ApplyMapping.apply(frame=f, mappings=[("id", "x")])
    with pytest.raises(ConfigError, match="two sources"):
        ApplyMapping.apply(frame=f, mappings=[("id", "string", "x", "string"),
                                              ("amount", "string", "x", "string")])
    with pytest.raises(ConfigError, match="frame=<DynamicFrame>"):
        ApplyMapping.apply(frame=f.toDF(), mappings=[("id", "string", "x", "string")])
    strict = ApplyMapping.apply(frame=f, mappings=[("id", "string", "id", "string"),
                                                   ("amount", "string", "a", "string")],
                                case_sensitive=True).toDF().collect()[0]
    assert (strict.id, strict.a) == (None, "2.50")


def test_field_transforms_and_frame_methods(spark, glue, capsys):
    from sparkmark.glue.transforms import DropFields, RenameField, SelectFields
    f = _frame(spark, glue, [(1, "a", True)], "n int, s string, b boolean")
    assert SelectFields.apply(frame=f, paths=["s", "n", "zz"]).toDF().columns == ["s", "n"]
    assert DropFields.apply(frame=f, paths=["s"]).toDF().columns == ["n", "b"]
    assert RenameField.apply(frame=f, old_name="s", new_name="t").toDF().columns == \
        ["n", "t", "b"]
    assert f.rename_field("n", "m").select_fields(["m"]).toDF().columns == ["m"]
    with pytest.raises(ConfigError, match="'q' is not in the frame"):
        RenameField.apply(frame=f, old_name="q", new_name="t")
    assert f.count() == 1
    assert f.schema().simpleString() == "struct<n:int,s:string,b:boolean>"
    f.printSchema()
    assert "|-- s: string" in capsys.readouterr().out


def test_unsupported_calls_name_themselves_and_the_way_out(spark, glue):
    from sparkmark.glue import transforms
    from sparkmark.glue.job import Job
    f = _frame(spark, glue, [(1,)], "n int")
    with pytest.raises(GlueUnsupportedError) as e:
        glue.transition_s3_path("s3://b/x", {"retentionPeriod": 0})
    assert str(e.value).startswith("GlueContext.transition_s3_path is not supported by "
                                   "sparkmark.glue;")
    assert "storage classes" in str(e.value)
    with pytest.raises(GlueUnsupportedError, match="DynamicFrame.spigot is not "
                                                   "supported.*limit"):
        f.spigot("s3://x")
    assert not hasattr(f, "spigot")  # an AttributeError too: duck typing still works
    with pytest.raises(AttributeError) as plain:
        f.__array__  # noqa: B018 - Python's own probes get a plain AttributeError
    assert not isinstance(plain.value, GlueUnsupportedError)
    with pytest.raises(GlueUnsupportedError, match=r"FillMissingValues.apply is not supported"):
        transforms.FillMissingValues.apply(frame=f, missing_values_column="n")
    with pytest.raises(GlueUnsupportedError, match="sparkmark.glue.context.Foo is not"):
        from sparkmark.glue.context import Foo  # noqa: F401
    with pytest.raises(GlueUnsupportedError, match="connection_type='dynamodb'"):
        glue.create_dynamic_frame.from_options(connection_type="dynamodb",
                                               connection_options={})
    with pytest.raises(GlueUnsupportedError, match="create_dynamic_frame.from_rdd"):
        glue.create_dynamic_frame.from_rdd(None, "x")
    with pytest.raises(ConfigError, match="Job needs the GlueContext"):
        Job(spark)
    with pytest.raises(SourceError, match="input path '/x' does not exist"):
        glue.create_dynamic_frame.from_options("s3", {"paths": ["/x"]}, format="csv")
    with pytest.raises(ConfigError, match="GlueContext needs the SparkContext"):
        type(glue)("local")


# ---------------------------------------------------------------------- end-to-end flows
def _write(path, text: str, mtime_ms: int) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


def _out_rows(target: str) -> list[tuple]:
    rows = []
    for p in sorted(glob.glob(f"{target}/sm-*.json")):
        with open(p) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    return sorted((r["name"], r["number"]) for r in rows)


@pytest.fixture
def mapped(tmp_path, monkeypatch):
    """A YAML catalog with an s3:// CSV table and a path map sending the bucket to tmp_path."""
    (tmp_path / "catalog.yaml").write_text(
        "database.relatedqueries_csv:\n  path: s3://bucket/queries\n  format: csv\n")
    (tmp_path / "paths.json").write_text(json.dumps({"s3://bucket": "bucket",
                                                     "s3://input_path": "out"}))
    monkeypatch.setenv("SPARKMARK_GLUE_CATALOG", str(tmp_path / "catalog.yaml"))
    monkeypatch.setenv("SPARKMARK_PATH_MAP", str(tmp_path / "paths.json"))
    return tmp_path


def _seed_run(glue, state_url, clock, argv):
    """The seed's S3 script body, in-process (imports as the script has them)."""
    from sparkmark.glue.job import Job
    from sparkmark.glue.transforms import ApplyMapping
    args = getResolvedOptions(["script.py", *argv], ["JOB_NAME"])
    job = Job(glue, state=state_url, clock=clock)
    job.init(args["JOB_NAME"], args)
    src = glue.create_dynamic_frame.from_catalog(database="database",
                                                 table_name="relatedqueries_csv",
                                                 transformation_ctx="datasource0")
    am = ApplyMapping.apply(frame=src, mappings=[("col0", "string", "name", "string"),
                                                 ("col1", "string", "number", "string")],
                            transformation_ctx="applymapping1")
    glue.write_dynamic_frame.from_options(frame=am, connection_type="s3",
                                          connection_options={"path": "s3://input_path"},
                                          format="json", transformation_ctx="datasink2")
    job.commit()
    return job.run_id


def test_seed_flow_enable_pause_from_to_and_reset(glue, mapped, state_url, clock):
    enable = ["--JOB_NAME", "q", "--job-bookmark-option", "job-bookmark-enable"]
    src, out = mapped / "bucket" / "queries", str(mapped / "out")
    _write(f"{src}/a.csv", "alice,1\nbob,2\n", clock.now - 30 * MIN)
    r1 = _seed_run(glue, state_url, clock, enable)
    assert _out_rows(out) == [("alice", "1"), ("bob", "2")]

    clock.advance(30 * MIN)
    _write(f"{src}/b.csv", "carol,3\n", clock.now - 10 * MIN)
    r2 = _seed_run(glue, state_url, clock, enable)
    assert _out_rows(out) == [("alice", "1"), ("bob", "2"), ("carol", "3")]  # b only

    clock.advance(30 * MIN)
    r3 = _seed_run(glue, state_url, clock, enable)  # nothing new: nothing written
    assert _out_rows(out) == [("alice", "1"), ("bob", "2"), ("carol", "3")]
    bm = Bookmarks(state_url)
    version = bm.get("q")["Version"]

    # pause with from/to: replays exactly what r2 processed, and moves nothing
    _seed_run(glue, state_url, clock, ["--JOB_NAME", "q", "--job-bookmark-option",
                                       "job-bookmark-pause", "--job-bookmark-from", r1,
                                       "--job-bookmark-to", r2])
    assert _out_rows(out).count(("carol", "3")) == 2 and len(_out_rows(out)) == 4
    assert bm.get("q")["Version"] == version

    # rewind to r1: the next enabled run reprocesses what came after r1 (b.csv)
    bm.reset("q", run_id=r1)
    _seed_run(glue, state_url, clock, enable)
    assert _out_rows(out).count(("carol", "3")) == 3 and len(_out_rows(out)) == 5
    # reset: everything again
    bm.reset("q")
    _seed_run(glue, state_url, clock, enable)
    assert len(_out_rows(out)) == 8
    assert r3 != r2


def test_misspelt_file_options_are_refused_with_a_did_you_mean(glue, tmp_path, sqlite_url,
                                                               clock):
    """A connection option or a format option close to a real one is one clear error, with or
    without a running job (Spark would otherwise ignore the misspelt name)."""
    from sparkmark.glue.job import Job
    src = tmp_path / "in"
    _write(f"{src}/a.csv", "id,v\n1,x\n", clock.now - 10 * MIN)
    cases = [
        (dict(connection_options={"paths": [str(src)], "boundedFile": 3}),
         "unknown connection option 'boundedFile'; did you mean 'boundedFiles'?"),
        (dict(connection_options={"paths": [str(src)], "lateFiles": "read"}),
         "lateFiles is a file option of sparkmark: give it in format_options"),
        (dict(connection_options={"paths": [str(src)]},
              format_options={"withHeader": True, "incrementalListings": "true"}),
         "unknown option 'incrementalListings'; did you mean 'incrementalListing'?"),
    ]
    for running in (False, True):
        job = Job(glue, state=sqlite_url, clock=clock)
        if running:
            job.init("opts", {"job_bookmark_option": "job-bookmark-enable"})
        for kwargs, words in cases:
            with pytest.raises(ConfigError) as e:
                glue.create_dynamic_frame.from_options("file", format="csv",
                                                       transformation_ctx="src", **kwargs)
            assert words in str(e.value)
        if running:
            job.commit()
    # the right spellings read
    frame = glue.create_dynamic_frame.from_options(
        "file", {"paths": [str(src)]}, format="csv",
        format_options={"withHeader": True, "lateFiles": "read"}, transformation_ctx="src")
    assert [r.id for r in frame.toDF().collect()] == ["1"]


def test_from_options_glue_s3_options(glue, tmp_path, sqlite_url, clock, request):
    from sparkmark.glue.job import Job
    src = tmp_path / "in"
    for i in range(4):
        _write(f"{src}/sub/f{i}.csv", f"id,v\n{i},x{i}\n", clock.now - (40 - i) * MIN)
    _write(f"{src}/skip.tmp.csv", "id,v\n99,no\n", clock.now - 30 * MIN)
    job = Job(glue, state=sqlite_url, clock=clock)
    job.init("opts", {"job_bookmark_option": "job-bookmark-enable"})
    frame = glue.create_dynamic_frame_from_options(
        connection_type="file",
        connection_options={"paths": [str(src)], "recurse": True,
                            "exclusions": ["**.tmp.csv"], "boundedFiles": 3,
                            "groupFiles": "inPartition"},
        format="csv", format_options={"withHeader": True}, transformation_ctx="src")
    assert sorted(r.id for r in frame.toDF().collect()) == ["0", "1", "2"]  # oldest 3, header
    assert frame.toDF().columns == ["id", "v"]
    job.commit()
    job.init("opts", {"job_bookmark_option": "job-bookmark-enable"})
    frame = glue.create_dynamic_frame.from_options(
        "file", {"paths": [str(src)], "recurse": True, "exclusions": ["**.tmp.csv"]},
        format="csv", format_options={"withHeader": True}, transformation_ctx="src")
    assert [r.id for r in frame.toDF().collect()] == ["3"]
    job.commit()
    job.init("opts", {})
    for conn, err in (({"paths": [str(src)], "maxBand": -1}, ConfigError),
                      ({"paths": [str(src)], "fancy": 1}, ConfigError),
                      ({"path": []}, ConfigError),
                      ({"paths": [str(src)], "excludeStorageClasses": ["GLACIER"]},
                       GlueUnsupportedError)):
        with pytest.raises(err):
            glue.create_dynamic_frame.from_options("file", conn, format="csv",
                                                   transformation_ctx="e")
    # an unmapped s3:// path goes to s3a://: without the connector, a hint to map it; with it
    # (`make test` has the jars), whatever the bucket's server says, clearly.  The bucket is
    # pinned to the test S3 server, so the answer does not depend on which tests ran before
    from conftest import s3_jars
    if s3_jars() is not None:  # the session has the connector (conftest puts the jars on it)
        request.getfixturevalue("s3_server").configure(glue.spark_session, bucket="nowhere")
        read_err = write_err = r"the bucket 'nowhere' does not exist \(NoSuchBucket\)"
    else:
        read_err = (r"s3://nowhere/x was rewritten to s3a://nowhere/x.*"
                    r"SPARKMARK_PATH_MAP.*\"s3://nowhere\"")
        write_err = "hadoop-aws"
    with pytest.raises(SourceError, match=read_err):
        glue.create_dynamic_frame.from_options("s3", {"paths": ["s3://nowhere/x"]},
                                               format="csv", transformation_ctx="s3")
    with pytest.raises(SinkError, match=write_err):
        glue.write_dynamic_frame.from_options(frame=frame, connection_type="s3",
                                              connection_options={"path": "s3://nowhere/o"},
                                              format="json")
    with pytest.raises(GlueUnsupportedError, match="push_down_predicate"):
        glue.create_dynamic_frame.from_options("file", {"paths": [str(src)]}, format="csv",
                                               push_down_predicate="day='1'")
    job.sparkmark_job.fail("test over")


def test_a_failing_script_moves_no_bookmark(glue, mapped, sqlite_url, clock):
    from sparkmark.glue.job import Job, finish_running_jobs
    _write(f"{mapped}/bucket/queries/a.csv", "alice,1\n", clock.now - 30 * MIN)
    _seed_run(glue, sqlite_url, clock,
              ["--JOB_NAME", "f", "--job-bookmark-option", "job-bookmark-enable"])
    before = Bookmarks(sqlite_url).get("f")
    clock.advance(30 * MIN)
    _write(f"{mapped}/bucket/queries/b.csv", "bob,2\n", clock.now - 10 * MIN)
    job = Job(glue, state=sqlite_url, clock=clock)
    job.init("f", {"job_bookmark_option": "job-bookmark-enable"})
    src = glue.create_dynamic_frame.from_catalog(database="database",
                                                 table_name="relatedqueries_csv",
                                                 transformation_ctx="datasource0")
    with pytest.raises(SparkmarkError, match="database.missing"):
        glue.create_dynamic_frame.from_catalog(database="database", table_name="missing",
                                               transformation_ctx="other")
    assert src.count() == 1
    glue.write_dynamic_frame.from_options(frame=src, connection_type="s3",
                                          connection_options={"path": "s3://input_path/x"},
                                          format="json")
    finish_running_jobs()  # what the script's exit hook does: FAILED, output discarded
    assert not job.isInitialized()
    after = Bookmarks(sqlite_url).get("f")
    assert (after["Version"], after["JobBookmark"]) == (before["Version"], before["JobBookmark"])
    assert after["Attempt"] == 1  # as in Glue: a failed attempt counts
    assert not glob.glob(f"{mapped}/out/x/sm-*")
    _seed_run(glue, sqlite_url, clock,
              ["--JOB_NAME", "f", "--job-bookmark-option", "job-bookmark-enable"])
    assert _out_rows(str(mapped / "out")) == [("alice", "1"), ("bob", "2")]


def test_spark_catalog_tables_first(spark, glue, tmp_path, sqlite_url, clock):
    from sparkmark.glue.job import Job
    loc = tmp_path / "tloc"
    _write(f"{loc}/a.csv", "k;v\n1;a\n", clock.now - 30 * MIN)
    spark.sql("CREATE DATABASE IF NOT EXISTS sm_glue_db")
    spark.sql("DROP TABLE IF EXISTS sm_glue_db.t")
    spark.sql("DROP VIEW IF EXISTS sm_glue_db.v")
    spark.sql(f"CREATE TABLE sm_glue_db.t (k STRING, v STRING) USING csv "
              f"OPTIONS (header 'true', sep ';') LOCATION '{loc}'")
    spark.sql("CREATE VIEW sm_glue_db.v AS SELECT 1 AS x")
    try:
        job = Job(glue, state=sqlite_url, clock=clock)
        job.init("cat", {"job_bookmark_option": "job-bookmark-enable"})
        f = glue.create_dynamic_frame.from_catalog(database="sm_glue_db", table_name="t",
                                                   transformation_ctx="t")
        assert [tuple(r) for r in f.toDF().collect()] == [("1", "a")]
        with pytest.raises(ConfigError, match="a view in the Spark catalog.*cannot bookmark"):
            glue.create_dynamic_frame.from_catalog(database="sm_glue_db", table_name="v",
                                                   transformation_ctx="v")
        assert glue.create_dynamic_frame.from_catalog(database="sm_glue_db",
                                                      table_name="v").count() == 1
        job.commit()
        clock.advance(30 * MIN)
        _write(f"{loc}/b.csv", "k;v\n2;b\n", clock.now - 10 * MIN)
        job.init("cat", {"job_bookmark_option": "job-bookmark-enable"})
        f = glue.create_dynamic_frame.from_catalog(database="sm_glue_db", table_name="t",
                                                   transformation_ctx="t")
        assert [tuple(r) for r in f.toDF().collect()] == [("2", "b")]
        job.commit()
    finally:
        spark.sql("DROP VIEW IF EXISTS sm_glue_db.v")
        spark.sql("DROP TABLE IF EXISTS sm_glue_db.t")


def test_jdbc_source_and_target_through_from_options(spark, glue, sqlite_url, clock,
                                                     monkeypatch):
    from sparkmark.glue.job import Job
    monkeypatch.setenv("SPARKMARK_GLUE_STAMP", "1")  # opt-in: the target gets sm_run_id
    url = f"jdbc:derby:memory:smglue{os.getpid()}"
    conn = spark._jvm.java.sql.DriverManager.getConnection(url + ";create=true")
    st = conn.createStatement()
    st.execute("CREATE TABLE emp (empno DECIMAL(5,0) NOT NULL, ename VARCHAR(20))")
    st.execute("INSERT INTO emp VALUES (10, 'ann'), (30, 'bo'), (20, 'cy')")
    try:
        def run():
            job = Job(glue, state=sqlite_url, clock=clock)
            job.init("emp", getResolvedOptions(["s", "--job-bookmark-option",
                                                "job-bookmark-enable"], []))
            f = glue.create_dynamic_frame.from_options(
                "jdbc", {"url": url, "dbtable": "emp", "jobBookmarkKeys": ["empno"],
                         "jobBookmarkKeysSortOrder": "asc", "hashpartitions": "4"},
                transformation_ctx="emp")
            glue.write_dynamic_frame.from_options(
                frame=f, connection_type="jdbc",
                connection_options={"url": url, "dbtable": "emp_copy"})
            job.commit()

        run()
        st.execute("INSERT INTO emp VALUES (40, 'di')")
        run()
        rs = st.executeQuery('SELECT empno, ename, "sm_run_id" FROM emp_copy ORDER BY empno')
        rows = []
        while rs.next():
            rows.append((int(rs.getBigDecimal(1)), rs.getString(2), rs.getString(3)))
        assert [r[:2] for r in rows] == [(10, "ann"), (20, "cy"), (30, "bo"), (40, "di")]
        assert len({r[2] for r in rows[:3]}) == 1 and rows[3][2] != rows[0][2]
        job = Job(glue, state=sqlite_url, clock=clock)
        job.init("emp2", {})
        with pytest.raises(GlueUnsupportedError, match="customJdbcDriverS3Path"):
            glue.create_dynamic_frame.from_options(
                "jdbc", {"url": url, "dbtable": "emp", "customJdbcDriverS3Path": "s3://j"})
        with pytest.raises(ConfigError, match="needs 'dbtable'"):
            glue.create_dynamic_frame.from_options("postgresql", {"url": url})
        job.sparkmark_job.fail("test over")
    finally:
        conn.close()


def test_write_to_a_catalog_table(spark, glue, tmp_path, sqlite_url, clock, monkeypatch):
    from sparkmark.glue.dynamicframe import DynamicFrame
    from sparkmark.glue.job import Job
    (tmp_path / "cat").write_text(  # no extension: JSON is tried, then YAML
        "db.target:\n  path: s3://b/target\n  format: csv\n"
        "  format_options: {writeHeader: false, separator: '|'}\n"
        "db.view:\n  path: x\n  format: ion\n")
    (tmp_path / "paths.json").write_text(json.dumps({"s3://b": str(tmp_path / "b")}))
    monkeypatch.setenv("SPARKMARK_GLUE_CATALOG", str(tmp_path / "cat"))
    monkeypatch.setenv("SPARKMARK_PATH_MAP", str(tmp_path / "paths.json"))
    job = Job(glue, state=sqlite_url, clock=clock)
    job.init("w", {})
    frame = DynamicFrame.fromDF(spark.createDataFrame([("a", 1)], "s string, n int"), glue, "f")
    with pytest.raises(ConfigError, match="unknown additional option"):
        glue.write_dynamic_frame.from_catalog(frame=frame, database="db", table_name="target",
                                              additional_options={"fancy": 1})
    with pytest.raises(GlueUnsupportedError, match="format 'ion'"):
        glue.write_dynamic_frame_from_catalog(frame=frame, database="db", table_name="view")
    glue.write_dynamic_frame_from_catalog(frame=frame, database="db", table_name="target",
                                          transformation_ctx="sink")
    assert not glob.glob(f"{tmp_path}/b/target/sm-*.csv")  # staged until commit
    job.commit()
    text = ""
    for written in glob.glob(f"{tmp_path}/b/target/sm-*.csv"):
        with open(written) as f:
            text += f.read()
    assert text == "a|1\n"  # no header, Glue's schema (no sm_ columns)


# ---------------------------------------------------------------------- issue 11: the new calls
def test_connections_columns_and_extract_jdbc_conf(glue, tmp_path, monkeypatch):
    from sparkmark.glue.catalog import connection, lookup
    (tmp_path / "cat.yaml").write_text(
        "connections:\n"
        "  pg:\n    JDBC_CONNECTION_URL: jdbc:postgresql://db:5432/hr?ssl=false\n"
        "    USERNAME: etl\n    password_env: SM_TEST_PG_PASSWORD\n"
        "hr.emp:\n  connection: pg\n  table: emp\n"
        "  columns: [{Name: empno, Type: 'decimal(5,0)'}, {Name: ename, Type: string}]\n"
        "hr.bad:\n  connection: nope\n  table: x\n"
        "hr.badcols:\n  path: /x\n  format: csv\n  columns: [{Name: a, Type: strng}]\n")
    monkeypatch.setenv("SPARKMARK_GLUE_CATALOG", str(tmp_path / "cat.yaml"))
    with pytest.raises(ConfigError, match="env SM_TEST_PG_PASSWORD, which is not set"):
        glue.extract_jdbc_conf("pg")
    monkeypatch.setenv("SM_TEST_PG_PASSWORD", "s3cret")
    conf = glue.extract_jdbc_conf("pg")
    assert (conf["url"], conf["fullUrl"], conf["user"], conf["password"], conf["vendor"],
            conf["driver"]) == ("jdbc:postgresql://db:5432", "jdbc:postgresql://db:5432/hr?"
                                "ssl=false", "etl", "s3cret", "postgresql", "org.postgresql.Driver")
    assert connection("pg").url_for("sales") == "jdbc:postgresql://db:5432/sales?ssl=false"
    emp = lookup(glue.spark_session, "hr", "emp")
    assert (emp.url, emp.table, emp.properties["password"], emp.columns) == (
        "jdbc:postgresql://db:5432/hr?ssl=false", "emp", "s3cret",
        (("empno", "decimal(5,0)"), ("ename", "string")))
    with pytest.raises(ConfigError, match="connection 'nope' is not in the 'connections'"):
        lookup(glue.spark_session, "hr", "bad")
    with pytest.raises(ConfigError, match="unknown type 'strng'"):
        lookup(glue.spark_session, "hr", "badcols")
    with pytest.raises(ConfigError, match="Glue connection 'other' is not in"):
        glue.extract_jdbc_conf("other")


def test_connection_driver_reaches_url_only_options(glue, tmp_path, monkeypatch):
    """extract_jdbc_conf + from_options passes url/user/password only: the connection whose URL
    names the same server lends its driver; a jdbc:mysql: connection without one gets the
    driver Spark has (here only MariaDB's, libmariadb-java)."""
    from sparkmark.glue.catalog import connection_driver
    assert connection_driver("jdbc:mysql://db:3306/x", env={}) is None  # no mapping file
    (tmp_path / "cat.json").write_text(json.dumps({"connections": {
        "a": {"url": "jdbc:mysql://DB:3306", "user": "u",
              "JDBC_DRIVER_CLASS_NAME": "org.mariadb.jdbc.Driver"},
        "b": {"url": "jdbc:mysql://db:3306/other", "user": "u"},  # same server, no driver
        "c": {"url": "jdbc:postgresql://db:3306/x", "properties": {"Driver": "x.Pg"}},
        "d1": {"url": "jdbc:mysql://two:1/a", "driver": "one.Driver"},
        "d2": {"url": "jdbc:mysql://two:1/b", "driver": "other.Driver"},
        "m": {"url": "jdbc:mysql://127.0.0.1:1", "user": "u"}}}))
    env = {"SPARKMARK_GLUE_CATALOG": str(tmp_path / "cat.json")}
    assert connection_driver("jdbc:mysql://db:3306/shop?useSSL=false", env) == \
        "org.mariadb.jdbc.Driver"
    assert connection_driver("jdbc:postgresql://db:3306/y", env) == "x.Pg"
    assert connection_driver("jdbc:mysql://db:3307/shop", env) is None  # another port
    assert connection_driver("jdbc:mysql://two:1/a", env) is None  # they disagree: no guess
    monkeypatch.setenv("SPARKMARK_GLUE_CATALOG", env["SPARKMARK_GLUE_CATALOG"])
    from sparkmark.devtools.mariadb import JAR
    if JAR not in (glue.spark_session.conf.get("spark.jars", "") or ""):
        pytest.skip("MariaDB's driver (libmariadb-java) is not on the test session's classpath")
    assert glue.extract_jdbc_conf("m")["driver"] == "org.mariadb.jdbc.Driver"


def test_purge_refuses_paths_outside_their_root(glue, tmp_path, monkeypatch):
    (tmp_path / "paths.json").write_text(json.dumps({"s3://b/data": str(tmp_path / "data")}))
    monkeypatch.setenv("SPARKMARK_PATH_MAP", str(tmp_path / "paths.json"))
    (tmp_path / "data" / "keep" / "_sparkmark_staging" / "r").mkdir(parents=True)
    _write(f"{tmp_path}/data/keep/_sparkmark_staging/r/x.json", "{}", 0)  # a running run's
    _write(f"{tmp_path}/data/keep/old.json", "{}", 0)
    _write(f"{tmp_path}/outside.json", "{}", 0)
    for bad, word in (("s3://b/data/../..", "'..'"), ("/", "file-system root"),
                      ("s3://b/data/keep", "retentionPeriod must be")):
        with pytest.raises(ConfigError, match=word):
            glue.purge_s3_path(bad, {"retentionPeriod": -1} if "keep" in bad else {})
    with pytest.raises(GlueUnsupportedError, match="manifestFilePath"):
        glue.purge_s3_path("s3://b/data/keep", {"manifestFilePath": "s3://b/m"})
    deleted = glue.purge_s3_path("s3://b/data", {"retentionPeriod": 1})
    assert [d.rsplit("/", 1)[-1] for d in deleted] == ["old.json"]
    assert os.path.exists(f"{tmp_path}/outside.json")
    assert os.path.exists(f"{tmp_path}/data/keep/_sparkmark_staging/r/x.json")


@pytest.mark.parametrize("choice", ["MATCH_CATALOG", "match_catalog", "Match_Catalog"])
def test_match_catalog_in_any_case_casts_to_the_catalog_types(spark, glue, tmp_path,
                                                               monkeypatch, choice):
    """AWS's samples spell the choice in upper case (ResolveChoice.apply(frame, choice=
    "MATCH_CATALOG", database=..., table_name=...)); Glue takes any case."""
    from sparkmark.glue.transforms import ResolveChoice
    cat = tmp_path / "catalog.json"
    cat.write_text(json.dumps({"sales.orders": {
        "path": str(tmp_path / "orders"), "format": "json",
        "columns": [{"Name": "id", "Type": "bigint"}, {"Name": "amount", "Type": "double"}]}}))
    monkeypatch.setenv("SPARKMARK_GLUE_CATALOG", str(cat))
    f = _frame(spark, glue, [("1", "2.5", "x")], "ID string, amount string, note string")
    out = ResolveChoice.apply(frame=f, choice=choice, database="sales",
                              table_name="orders").toDF()
    assert [(c.name, c.dataType.simpleString()) for c in out.schema.fields] == \
        [("ID", "bigint"), ("amount", "double"), ("note", "string")]
    assert [tuple(r) for r in out.collect()] == [(1, 2.5, "x")]


def test_choice_join_merge_and_errors(spark, glue):
    from sparkmark.glue.transforms import DropNullFields, Join, ResolveChoice
    f = _frame(spark, glue, [("1", "a", None), ("x", "b", None), ("2.5", "c", None)],
               "v string, k string, n string")
    out = ResolveChoice.apply(frame=f, choice="make_cols").toDF()
    assert out.columns == ["v_int", "v_double", "v_string", "k", "n"]
    assert sorted(((r.v_int, r.v_double, r.v_string) for r in out.collect()), key=str) == \
        sorted([(1, None, None), (None, None, "x"), (None, 2.5, None)], key=str)
    cast = f.resolveChoice(specs=[("v", "cast:long"), ("absent", "cast:int")]).toDF()
    from sparkmark.engine import compat
    # "2.5" as long: null on Spark 4 (try_cast); 2 on Spark 3.5, whose non-ANSI cast truncates
    # (docs/glue-migration.md, differences)
    expected = [1] if compat.is_spark4(spark) else [1, 2]
    assert sorted(r.v for r in cast.collect() if r.v is not None) == expected
    assert DropNullFields.apply(frame=f).toDF().columns == ["v", "k"]
    for kwargs, word in (({}, "needs specs"), ({"specs": [("v", "bogus")]}, "unknown "
                                                                            "resolveChoice"),
                         ({"specs": [("v", "cast:long")], "choice": "make_cols"}, "not both"),
                         ({"choice": "match_catalog"}, "needs database")):
        with pytest.raises(ConfigError, match=word):
            f.resolveChoice(**kwargs)
    g = _frame(spark, glue, [("a", 1)], "k string, w int")
    joined = Join.apply(f, g, "k", "k").toDF()
    assert joined.columns == ["v", "k", "n", "w"] and joined.count() == 1
    with pytest.raises(ConfigError, match=r"both frames have field\(s\) \['k'\]"):
        Join.apply(f, g, "v", "w")
    with pytest.raises(ConfigError, match="not in the second frame"):
        f.join(["k"], ["zz"], g)
    merged = f.mergeDynamicFrame(_frame(spark, glue, [("a", "NEW")], "k string, v string"),
                                 ["k"]).toDF()
    assert sorted((r.k, r.v) for r in merged.collect()) == [("a", "NEW"), ("b", "x"),
                                                            ("c", "2.5")]


def test_plain_spark_s3_paths_in_a_glue_script_reach_the_s3a_store(spark, s3, tmp_path):
    """Inside a Glue script, plain Spark I/O on ``s3://`` works as on Glue and EMR: the
    GlueContext serves Hadoop's ``s3`` scheme with S3A (the same fs.s3a.* settings), when the
    connector is on the class path and nothing else serves it."""
    from conftest import s3_jars
    if s3_jars() is None:
        pytest.skip("no s3a jars (make jars)")
    from sparkmark.glue.context import GlueContext
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    before = conf.get("fs.s3.impl")
    conf.unset("fs.s3.impl")
    try:
        with pytest.raises(Exception, match='No FileSystem for scheme "s3"'):
            spark.range(1).write.parquet(f"s3://{s3.name}/before")
        GlueContext(spark.sparkContext)
        assert conf.get("fs.s3.impl") == "org.apache.hadoop.fs.s3a.S3AFileSystem"
        df = spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string")
        df.write.parquet(f"s3://{s3.name}/plain")
        assert any(k.startswith("plain/part-") for k in s3.keys("plain/"))
        back = spark.read.parquet(f"s3a://{s3.name}/plain")
        assert sorted(tuple(r) for r in back.collect()) == [(1, "a"), (2, "b")]
        conf.set("fs.s3.impl", "org.example.Mine")  # a scheme someone already serves is theirs
        GlueContext(spark.sparkContext)
        assert conf.get("fs.s3.impl") == "org.example.Mine"
    finally:
        if before is None:
            conf.unset("fs.s3.impl")
        else:
            conf.set("fs.s3.impl", before)



def test_plain_spark_s3_paths_in_a_glue_script_reach_the_mapped_folder(spark, tmp_path,
                                                                        monkeypatch):
    """Under ``SPARKMARK_PATH_MAP`` a Glue script's plain Spark ``s3://`` I/O lands in the
    mapped folder, where the Glue layer's own reads and writes of that path go (Hadoop's
    ViewFileSystemOverloadScheme behind the ``s3`` scheme, a mount table per bucket)."""
    import uuid

    from sparkmark.glue.context import GlueContext
    bucket, whole = f"pm-{uuid.uuid4().hex[:8]}", f"pmw-{uuid.uuid4().hex[:8]}"
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({f"s3://{bucket}/raw": str(tmp_path / "raw"),
                                   f"s3://{whole}": "whole"}))  # relative: to the map file
    monkeypatch.setenv("SPARKMARK_PATH_MAP", str(mapping))
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    keys = ("fs.s3.impl", "fs.s3.impl.disable.cache", "fs.viewfs.overload.scheme.target.s3.impl")
    before = {k: conf.get(k) for k in keys}
    conf.unset("fs.s3.impl")
    try:
        glue = GlueContext(spark.sparkContext)
        df = spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string")
        df.write.parquet(f"s3://{bucket}/raw/plain")
        assert any(n.startswith("part-") for n in os.listdir(tmp_path / "raw" / "plain"))
        back = spark.read.parquet(f"s3://{bucket}/raw/plain")
        assert sorted(tuple(r) for r in back.collect()) == [(1, "a"), (2, "b")]
        # a bucket mapped whole, and the Glue layer reading what plain Spark wrote
        df.write.json(f"s3://{whole}/events/day=1")
        assert any(n.startswith("part-") for n in os.listdir(tmp_path / "whole" / "events"
                                                             / "day=1"))
        frame = glue.create_dynamic_frame.from_options(
            "s3", {"paths": [f"s3://{whole}/events/day=1"]}, format="json")
        assert sorted((r["id"], r["v"]) for r in frame.toDF().collect()) == [(1, "a"), (2, "b")]
    finally:
        for k, v in before.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)
