"""Spark's file index built from the run's own listing (sources/fileindex.py, issue 26).

The DataFrame :func:`load_listed` builds must be the one Spark builds for the same explicit
paths: same schema (inferred or given, partition columns included), same rows, the same
``input_file_name()`` and ``_metadata`` values, on every format it takes; whatever it does not
take falls back (``None``) to Spark's own read.  Real Spark, real files; runs on 3.5 and 4.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkmark.engine import compat
from sparkmark.planning.listing import FileEntry, hidden
from sparkmark.sources import fileindex
from sparkmark.sources.fileindex import load_listed, statuses_text, usable

MIN = 60_000


def _write(root: Path, fmt: str, spark) -> None:
    """Two partitions (dt=...) of three files each in ``fmt``, an empty one (text formats), and
    a hidden file and a _SUCCESS marker (which sparkmark's listing leaves out, as Spark's)."""
    for d, dt in enumerate(("2024-01-01", "2024-01-02")):
        part = root / f"dt={dt}"
        part.mkdir(parents=True)
        for i in range(3):
            rows = [{"id": d * 100 + i * 10 + j, "v": f"x{j}", "n": float(j)} for j in range(4)]
            target = part / f"f{i}.{fmt}"
            if fmt == "json":
                target.write_text("".join(json.dumps(r) + "\n" for r in rows))
            elif fmt == "csv":
                target.write_text("id,v,n\n" + "".join(f"{r['id']},{r['v']},{r['n']}\n"
                                                       for r in rows))
            elif fmt == "text":
                target.write_text("".join(f"line {r['id']}\n" for r in rows))
            else:  # parquet / orc: one file written by Spark, moved into place
                tmp = root.parent / f"w-{fmt}-{d}-{i}"
                spark.createDataFrame(rows).coalesce(1).write.format(fmt).save(str(tmp))
                written = next(p for p in tmp.iterdir() if p.name.startswith("part-"))
                written.rename(target)
        if fmt in ("json", "csv", "text"):  # Spark skips an empty file (Parquet/ORC: no footer)
            (part / f"empty.{fmt}").write_text("")
    (root / "dt=2024-01-01" / ".hidden").write_text("not data\n")
    (root / "_SUCCESS").write_text("")


def _entries(root: Path, keep=lambda p: True) -> list[FileEntry]:
    """The files under ``root`` as sparkmark's listing gives them (hidden names left out)."""
    out = []
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            if keep(path) and not hidden(name):
                st = os.stat(path)
                out.append(FileEntry(st.st_mtime_ns // 1_000_000, f"file:{path}", st.st_size))
    return sorted(out)


def _rows(df):
    from pyspark.sql import functions as F
    cols = [F.col(c) for c in df.columns] + [
        F.input_file_name().alias("_ifn"), F.col("_metadata.file_path").alias("_fp"),
        F.col("_metadata.file_size").alias("_fs"),
        F.col("_metadata.file_modification_time").alias("_fm")]
    return sorted(tuple(r) for r in df.select(*cols).collect())


def _spark_read(spark, fmt: str, files: list[FileEntry], options: dict, schema):
    reader = spark.read.format(fmt).options(**options)
    if schema is not None:
        reader = reader.schema(schema)
    return compat.load_paths(spark, reader, [f.path for f in files])


FORMAT_OPTIONS = {"json": {"mode": "FAILFAST"}, "csv": {"header": "true", "inferSchema": "true"},
                  "parquet": {}, "orc": {}, "text": {}}


@pytest.mark.parametrize("fmt", sorted(FORMAT_OPTIONS))
@pytest.mark.parametrize("given", [False, True], ids=["inferred", "given-schema"])
def test_listed_read_is_sparks_read_of_the_same_paths(spark, tmp_path, fmt, given):
    root = tmp_path / "in"
    _write(root, fmt, spark)
    files = _entries(root)
    base = f"file:{root}"
    options = {**FORMAT_OPTIONS[fmt], "basePath": base}
    schema = None
    if given:  # the partition column typed by the user (a string, not the inferred date)
        data = "value STRING" if fmt == "text" else "id BIGINT, v STRING, n DOUBLE"
        schema = spark.createDataFrame([], f"{data}, dt STRING").schema
    ours = load_listed(spark, fmt, files, base, options, schema)
    assert ours is not None, "the listed read fell back to Spark's"
    theirs = _spark_read(spark, fmt, files, options, schema)
    assert ours.schema == theirs.schema
    assert ("dt", "string" if given else "date") in ours.dtypes
    got = _rows(ours)
    assert got == _rows(theirs)
    assert len(got) == 24  # six files of four rows; the empty file adds none
    assert {r[-4] for r in got} == {"file://" + f.path[5:] for f in files
                                    if f.size and f.path.endswith("." + fmt)}


def test_only_the_listed_files_are_read(spark, tmp_path):
    root = tmp_path / "in"
    _write(root, "json", spark)
    some = _entries(root, lambda p: p.endswith("f1.json"))
    base = f"file:{root}"
    df = load_listed(spark, "json", some, base, {"basePath": base}, None)
    assert df is not None
    assert sorted(df.inputFiles()) == sorted("file://" + f.path[5:] for f in some)
    assert sorted(r.id for r in df.collect()) == [10, 11, 12, 13, 110, 111, 112, 113]
    # the files under the root that were not listed stay unread, also by an action's re-plan
    assert df.filter("dt = '2024-01-02'").count() == 4


def test_nested_files_without_partitions_read_as_explicit_paths_do(spark, tmp_path):
    """Spark's index over a root reads only the root's own files when there are no partition
    directories; explicit paths read every file.  The listed read must be the latter (a
    ``recurse`` listing), or fall back to it."""
    root = tmp_path / "in"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "top.json").write_text('{"id": 1}\n')
    (root / "sub" / "deep" / "inner.json").write_text('{"id": 2}\n')
    files, base = _entries(root), f"file:{root}"
    ours = load_listed(spark, "json", files, base, {"basePath": base}, None)
    theirs = _spark_read(spark, "json", files, {"basePath": base}, None)
    assert sorted(r.id for r in theirs.collect()) == [1, 2]
    assert ours is None or _rows(ours) == _rows(theirs)


def test_statuses_carry_the_listed_size_and_mtime(spark, tmp_path):
    root = tmp_path / "in"
    _write(root, "json", spark)
    files = _entries(root, lambda p: "empty" not in p)
    base = f"file:{root}"
    df = load_listed(spark, "json", files, base, {"basePath": base}, None)
    assert df is not None
    meta = {r[0]: (r[1], r[2]) for r in df.select(
        "_metadata.file_path", "_metadata.file_size", "_metadata.file_modification_time"
    ).distinct().collect()}
    for f in files:
        size, mtime = meta[f.path]
        assert size == f.size
        assert int(mtime.timestamp() * 1000) == f.mtime


def test_the_listing_goes_over_in_chunks(spark, tmp_path, monkeypatch):
    root = tmp_path / "in"
    _write(root, "json", spark)
    files, base = _entries(root), f"file:{root}"
    whole = load_listed(spark, "json", files, base, {"basePath": base}, None)
    monkeypatch.setattr(fileindex, "CHUNK", 3)  # 8 files: chunks of 3, 3 and 2
    chunked = load_listed(spark, "json", files, base, {"basePath": base}, None)
    assert whole is not None and chunked is not None
    assert len(files) == 8 and sorted(chunked.inputFiles()) == sorted(whole.inputFiles())
    assert _rows(chunked) == _rows(whole)


_PATH_CHARS = "ab.Z9_-=/ %:#?@+~é"


@settings(max_examples=int(os.environ.get("SPARKMARK_PATH_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(heads=st.lists(st.sampled_from(["file:/", "file:///", "s3a://bucket/", "s3a://B-1.x/",
                                       "gs://b/", "FILE:///", "file:"]), min_size=8, max_size=8),
       tails=st.lists(st.text(_PATH_CHARS, min_size=1, max_size=12), min_size=8, max_size=8))
def test_the_helpers_paths_are_hadoops_paths_of_the_same_text(spark, heads, tails):
    """The JVM helper makes a status's Path from its text as a URI where Path's own string
    constructor would change nothing (fast: issue 26) and through that constructor otherwise:
    either way the Path equals ``new Path(text)``, with the same text, URI and hash."""
    from sparkmark.engine.jvm import helper, java_class
    jpath = java_class(spark, "org.apache.hadoop.fs.Path")
    texts = [h + t for h, t in zip(heads, tails)] + [
        "file:///in/dt=2024-01-01/a.json", "s3a://bucket/k/part-0.json", "file:///in/./a",
        "file:///in/../a", "file:///in//a", "file:///in/a/", "file:///in/.a", "file:///in/..a"]
    for text in texts:
        expected_text = ("file://" + text[5:] if text.startswith("file:/")
                         and not text.startswith("file://") else text)  # as add() spells it
        try:
            want = jpath(expected_text)
        except Exception:  # noqa: BLE001 - Path refuses it: so must the helper
            with pytest.raises(Exception, match="URISyntax|IllegalArgument"):
                b = helper(spark, "SparkmarkFileHelper").builder()
                b.add(f"1\t2\t{text}", fileindex.BLOCK_SIZE)
            continue
        b = helper(spark, "SparkmarkFileHelper").builder()
        b.add(f"1\t2\t{text}", fileindex.BLOCK_SIZE)
        got = b.statuses()[0].getPath()
        assert (got.toString(), got.toUri().toString(), got.hashCode()) == (
            want.toString(), want.toUri().toString(), want.hashCode()), text
        assert got.equals(want), text


def test_statuses_text_puts_the_path_last():
    text = statuses_text([FileEntry(5, "file:/in/a\tb.json", 3), FileEntry(7, "s3a://b/k", 0)])
    assert text == "3\t5\tfile:/in/a\tb.json\n0\t7\ts3a://b/k"


def test_a_path_with_a_tab_is_read(spark, tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "a\tb.json").write_text('{"id": 1}\n')
    files = _entries(root)
    df = load_listed(spark, "json", files, f"file:{root}", {"basePath": f"file:{root}"}, None)
    assert df is not None and [r.id for r in df.collect()] == [1]


@pytest.mark.parametrize("case", ["format", "no-base", "hdfs", "newline", "v2-source", "orc-hive",
                                  "empty"])
def test_what_it_does_not_take_falls_back_to_sparks_read(spark, tmp_path, case):
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.json").write_text('{"id": 1}\n')
    files, fmt, base = _entries(root), "json", f"file:{root}"
    conf: dict[str, str] = {}
    if case == "format":
        fmt = "avro"
    elif case == "no-base":
        base = None  # type: ignore[assignment]
    elif case == "hdfs":
        base = "hdfs://namenode:8020/in"
    elif case == "newline":
        files = [FileEntry(1, f"file:{root}/a\nb.json", 3)]
    elif case == "v2-source":
        conf = {"spark.sql.sources.useV1SourceList": "avro,csv,kafka,orc,parquet,text"}
    elif case == "orc-hive":
        fmt, conf = "orc", {"spark.sql.orc.impl": "hive"}
    elif case == "empty":
        files = []
    old = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        assert load_listed(spark, fmt, files, base, {"basePath": f"file:{root}"}, None) is None
    finally:
        for k, v in old.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    if case == "v2-source":
        assert usable(spark, "json", base)  # the conf is back


def test_an_empty_json_file_reads_as_sparks_does(spark, tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.json").write_text("")
    files, base = _entries(root), f"file:{root}"
    ours = load_listed(spark, "json", files, base, {"basePath": base}, None)
    theirs = _spark_read(spark, "json", files, {"basePath": base}, None)
    assert ours is not None and ours.schema == theirs.schema
    assert ours.count() == theirs.count() == 0


def test_a_corrupt_file_falls_back_so_spark_names_it(spark, tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.json").write_text('{"id": 1}\n{"id": \n')
    files = _entries(root)
    base = f"file:{root}"
    assert load_listed(spark, "json", files, base, {"basePath": base, "mode": "FAILFAST"},
                       None) is None


def test_a_job_reads_its_new_files_through_the_listing(spark, tmp_path, sqlite_url, clock,
                                                       monkeypatch):
    """``job.read.files`` takes the listed read for a first and an incremental run, and reads
    exactly the new files (a spy on sparkmark's own function, not on Spark)."""
    from sparkmark import Job
    from sparkmark.sources import file_reading
    built: list[int] = []
    real = file_reading.load_listed

    def spy(*args, **kwargs):
        df = real(*args, **kwargs)
        built.append(-1 if df is None else len(args[2]))
        return df

    def write(name: str, i: int, ms: int) -> None:
        path = src / "dt=1" / name
        path.write_text(json.dumps({"id": i}) + "\n")
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))

    monkeypatch.setattr(file_reading, "load_listed", spy)
    src = tmp_path / "in"
    (src / "dt=1").mkdir(parents=True)
    for i in range(40):
        write(f"a{i:02d}.json", i, clock.now - 100 * MIN + i)
    enable = {"job_bookmark_option": "job-bookmark-enable"}
    job = Job(spark, state=sqlite_url, clock=clock).init("listed", enable)
    df = job.read.files(str(src), transformation_ctx="src")
    assert sorted(r.id for r in df.collect()) == list(range(40))
    assert {"id", "dt"} <= set(df.columns)  # (and _rescued_data: schema drift's default)
    job.commit()
    clock.advance(30 * MIN)
    for i in range(40, 43):
        write(f"b{i}.json", i, clock.now - 5 * MIN + i)
    job = Job(spark, state=sqlite_url, clock=clock).init("listed", enable)
    df = job.read.files(str(src), transformation_ctx="src")
    assert sorted(r.id for r in df.collect()) == [40, 41, 42]
    assert len(df.inputFiles()) == 3
    job.commit()
    assert built and -1 not in built  # every read of the new files took the listing
    assert set(built) == {40, 3}


def test_the_module_names_only_spark_file_formats():
    assert set(fileindex.FILE_FORMATS) == {"json", "csv", "parquet", "orc", "text"}


def test_a_base_path_above_the_listed_root_types_the_partitions_as_sparks_read(spark, tmp_path):
    """The user's ``basePath`` above the listed root (a run listing one partition of a table):
    the index is built over the root with that ``basePath``, and the partition column comes
    from the directories between the two, as in Spark's read of the same paths."""
    table = tmp_path / "table"
    _write(table, "json", spark)
    root = table / "dt=2024-01-02"
    files = _entries(root)
    options = {"basePath": f"file:{table}"}
    ours = load_listed(spark, "json", files, f"file:{root}", options, None)
    assert ours is not None, "the listed read fell back to Spark's"
    theirs = _spark_read(spark, "json", files, options, None)
    assert ours.schema == theirs.schema and ("dt", "date") in ours.dtypes
    got = _rows(ours)
    assert got == _rows(theirs) and len(got) == 12
    assert {str(r[ours.columns.index("dt")]) for r in got} == {"2024-01-02"}


def test_on_s3a_the_listed_read_is_sparks_read_of_the_same_objects(spark, s3):
    """On ``s3a://`` (a moto server): the same schema, rows, ``input_file_name()`` and
    ``_metadata`` as Spark's read of the same object paths, which asks S3 for each object."""
    sizes = {}
    for d, dt in enumerate(("2024-01-01", "2024-01-02")):
        for i in range(3):
            key = f"in/dt={dt}/f{i}.json"
            body = "".join(json.dumps({"id": d * 100 + i * 10 + j, "v": f"x{j}"}) + "\n"
                           for j in range(4))
            sizes[key] = len(body.encode())
            s3.put(key, body)
    files = sorted(FileEntry(s3.mtime(k), s3.url(k), n) for k, n in sizes.items())
    base = s3.url("in")
    options = {"basePath": base}
    ours = load_listed(spark, "json", files, base, options, None)
    assert ours is not None, "the listed read fell back to Spark's"
    theirs = _spark_read(spark, "json", files, options, None)
    assert ours.schema == theirs.schema and ("dt", "date") in ours.dtypes
    got = _rows(ours)
    assert got == _rows(theirs) and len(got) == 24
    assert {r[-4] for r in got} == {f.path for f in files}
    assert sorted(ours.inputFiles()) == sorted(f.path for f in files)
