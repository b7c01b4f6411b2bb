"""Spark's scan of a run's files is built over their root, not a path per file: from the run's
own listing (sources/fileindex.py: the index holds exactly the planned files), or, where that
read does not apply (``listed=False`` here: sparkmark's own ``load_listed`` switched off), by
handing Spark the root only when Spark finds exactly the planned files there, else the paths
(issue 26: a first run over a directory of 20,000 files spent ~1.1 s in Spark's handling of
explicit paths against ~0.2 s for the directory).  Real local Spark, real files, a real SQLite
state store, an injected clock."""
from __future__ import annotations

import json
import os

import pytest

from sparkmark import Job

from sparkmark.engine import compat
from sparkmark.sources import file_reading
from sparkmark.sources import files as files_source

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000
N = files_source.WHOLE_ROOT_MIN + 14


def _write(path, ids, mtime_ms):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(json.dumps({"id": i}) + "\n" for i in ids)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


def _root_paths(df) -> int:
    """How many root paths the file index of ``df``'s scan was built from."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "InMemoryFileIndex" in plan, plan[:500]
    return int(plan.split("InMemoryFileIndex(", 1)[1].split(" paths)", 1)[0])


@pytest.fixture(params=[True, False], ids=["listed", "fallback"])
def listed(request, monkeypatch) -> bool:
    """Whether the run's read builds Spark's index from its listing (True) or goes the way a
    session that cannot (Spark Connect, avro, HDFS...) goes: the root or the paths (False)."""
    if not request.param:
        monkeypatch.setattr(file_reading, "load_listed", lambda *a, **k: None)
    return request.param


def _files(root, n, start=0):
    return [f"file:{root}/f{i:05d}.json" for i in range(start, start + n)]


def test_a_first_run_over_a_whole_directory_hands_spark_the_directory(spark, sqlite_url, clock,
                                                                      tmp_path, listed):
    src = tmp_path / "in"
    for i in range(N):
        _write(f"{src}/dt={i % 3}/f{i:05d}.json", [i], clock.now - 30 * MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    df = job.read.files(str(src), transformation_ctx="src",
                        options={"schema": "id BIGINT", "mode": "PERMISSIVE"})
    assert _root_paths(df) == 1
    rows = sorted((r["id"], r["dt"]) for r in df.collect())
    assert rows == sorted((i, i % 3) for i in range(N))  # partition column as from the paths
    job.commit()

    # the next run reads two new files of the same root: their paths, nothing else
    clock.advance(10 * MIN)
    _write(f"{src}/dt=1/new1.json", [N], clock.now - 2 * MIN)
    _write(f"{src}/dt=2/new2.json", [N + 1], clock.now - 2 * MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    df = job.read.files(str(src), transformation_ctx="src",
                        options={"schema": "id BIGINT", "mode": "PERMISSIVE"})
    assert _root_paths(df) == (1 if listed else 2)  # the root, holding two files; or two paths
    assert len(df.inputFiles()) == 2
    assert sorted(r["id"] for r in df.collect()) == [N, N + 1]
    job.commit()


def test_a_file_spark_would_find_beyond_the_plan_keeps_the_explicit_paths(spark, sqlite_url,
                                                                          clock, tmp_path,
                                                                          listed):
    """A file written after the listing (here: with an mtime after the run's listing time, so
    the plan leaves it to a later run) is under the root when Spark would list it: the run
    reads the planned files (from its listing, or by path) and not the new one."""
    src = tmp_path / "in"
    for i in range(N):
        _write(f"{src}/f{i:05d}.json", [i], clock.now - 30 * MIN)
    _write(f"{src}/later.json", [-1], clock.now + 5 * MIN)  # not yet: the band leaves it
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    df = job.read.files(str(src), transformation_ctx="src",
                        options={"schema": "id BIGINT", "mode": "PERMISSIVE"})
    assert _root_paths(df) == (1 if listed else N)
    assert len(df.inputFiles()) == N and not any("later" in p for p in df.inputFiles())
    assert sorted(r["id"] for r in df.collect()) == list(range(N))
    job.commit()


def test_load_root_returns_the_root_only_for_exactly_the_files_spark_finds(spark, tmp_path):
    root = tmp_path / "in"
    for i in range(5):
        _write(f"{root}/f{i:05d}.json", [i], 1_700_000_000_000)
    reader = spark.read.format("json").schema("id BIGINT")
    paths = _files(root, 5)
    df = compat.load_root(spark, reader, f"file:{root}", paths)
    assert df is not None and _root_paths(df) == 1
    assert sorted(r["id"] for r in df.collect()) == [0, 1, 2, 3, 4]
    # one file fewer than Spark finds (a file arrived since the listing)
    assert compat.load_root(spark, reader, f"file:{root}", paths[:4]) is None
    # as many files, one of them another (a file replaced by another name since the listing)
    assert compat.load_root(spark, reader, f"file:{root}", paths[:4] + _files(root, 1, 7)) \
        is None
    # a root Spark cannot read: None, the caller reads the paths (and reports their error)
    assert compat.load_root(spark, reader, f"file:{tmp_path}/missing", paths) is None


def test_load_root_compares_spark_s_files_slice_by_slice(spark, tmp_path, monkeypatch):
    """Spark's paths come over in slices (65,536 in use, 2 here): the same answers as one
    comparison of the whole sets, with each slice checked against what is still unmatched."""
    monkeypatch.setattr(compat, "_COMPARE_CHUNK", 2)
    root = tmp_path / "in"
    for i in range(5):
        _write(f"{root}/f{i:05d}.json", [i], 1_700_000_000_000)
    reader = spark.read.format("json").schema("id BIGINT")
    paths = _files(root, 5)
    df = compat.load_root(spark, reader, f"file:{root}", list(reversed(paths)))
    assert df is not None and _root_paths(df) == 1
    assert sorted(r["id"] for r in df.collect()) == [0, 1, 2, 3, 4]
    assert compat.load_root(spark, reader, f"file:{root}", paths[:4]) is None
    assert compat.load_root(spark, reader, f"file:{root}", paths[:4] + _files(root, 1, 7)) \
        is None
    # a listing that holds one file twice is not Spark's five files
    assert compat.load_root(spark, reader, f"file:{root}", paths[:4] + paths[:1]) is None


@pytest.mark.parametrize("spark_paths,listed", [
    (["file:///in/a.json"], {"file:/in/a.json"}),
    (["file:///in/a.json", "file:///in/b.json"], {"file:/in/a.json", "file:/in/b.json"}),
    (["s3a://b/in/a.json", "file:///in/file:///c.json"], {"s3a://b/in/a.json",
                                                          "file:/in/file:///c.json"}),
    (["hdfs://nn/in/a.json"], {"hdfs://nn/in/a.json"})])
def test_spark_s_paths_are_compared_in_the_listing_s_spelling(spark_paths, listed):
    assert compat._listed_forms("\0".join(spark_paths)) == listed


def test_paths_group_by_the_root_they_were_listed_under():
    """``Listing.by_base``: one root (every path under it) is one group in order, the files
    as given (the listing's columns stay a view); a path outside it, overlapping roots or
    files given as paths take the per-path rule (the last matching root; ``None`` for a file
    given as a path)."""
    from sparkmark.planning.filecolumns import FileColumns, FileEntry
    from sparkmark.sources.files import Listing

    def E(*paths):
        return [FileEntry(1, p) for p in paths]

    one = Listing()
    one.dir_roots = ["file:/in"]
    files = E("file:/in/b.json", "file:/in/dt=1/a.json")
    assert one.by_base(files) == {"file:/in": files}
    cols = FileColumns.of(files)
    assert one.by_base(cols)["file:/in"] is cols
    assert one.by_base(files + E("file:/input/c.json")) == {
        "file:/in": files, None: E("file:/input/c.json")}
    assert one.by_base(FileColumns.of(files + E("file:/input/c.json"))) == {
        "file:/in": files, None: E("file:/input/c.json")}
    many = Listing()
    many.dir_roots = ["file:/in", "file:/in/dt=1"]
    many.file_roots = {"file:/x.json"}
    assert many.by_base(files + E("file:/x.json")) == {
        "file:/in": E("file:/in/b.json"), "file:/in/dt=1": E("file:/in/dt=1/a.json"),
        None: E("file:/x.json")}
