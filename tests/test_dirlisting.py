"""The local lister (``sources/dirlisting.local_level``) on real directories: a large directory
(stat'ed in chunks, by name relative to the directory) lists exactly what one ``os.scandir`` +
``DirEntry.stat`` pass finds, with Spark's hidden rule; files removed while listing are left
out."""
from __future__ import annotations

import os

import pytest

from sparkmark.planning.listing import hidden
from sparkmark.sources import dirlisting
from sparkmark.sources.dirlisting import local_level


def reference(d):
    """One plain pass: (mtime ms, path, size) of the visible files, and the subdirectories."""
    files, dirs = set(), set()
    with os.scandir(d) as it:
        for e in it:
            if hidden(e.name):
                continue
            if e.is_dir():
                dirs.add(e.name)
                continue
            try:
                st = e.stat()
            except FileNotFoundError:
                continue
            files.add((st.st_mtime_ns // 1_000_000, f"file:{d}/{e.name}", st.st_size))
    return files, dirs


@pytest.mark.parametrize("n", [10, 3_000, 20_000])
def test_a_directory_lists_as_one_scandir_pass_finds_it(tmp_path, n):
    d = tmp_path / "in"
    d.mkdir()
    for i in range(n):
        p = d / f"f{i:06d}.json"
        p.write_bytes(b"x" * (i % 7))
        os.utime(p, ns=(i * 1_000_000_000 + 123_456_789,) * 2)
    for name in ("_SUCCESS", ".hidden", "part._COPYING_", "_tmp"):
        (d / name).write_text("h")
    (d / "k=1").mkdir()
    (d / "sub").mkdir()
    os.symlink(d / "f000001.json", d / "link.json")        # followed, like DirEntry.stat
    os.symlink(d / "missing.json", d / "dangling.json")    # a dangling link is left out
    level = next(local_level([f"file:{d}"], recurse=True))
    files, dirs = reference(d)
    assert set(level.files) == files and len(level.files) == len(files) == n + 1
    assert {x.name for x in level.dirs} == dirs == {"k=1", "sub"}
    # without recurse only partition folders are entered
    level = next(local_level([f"file:{d}"], recurse=False))
    assert {x.name for x in level.dirs} == {"k=1"} and set(level.files) == files


def test_files_and_directories_removed_while_listing_are_left_out(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    for name in ("a", "b"):
        (d / name).write_text("1")
    kept, times, sizes = dirlisting._stat_names(str(d), ["a", "gone", "b"])
    assert kept == ["a", "b"] and sizes == [1, 1] and len(times) == 2
    assert dirlisting._stat_names(str(tmp_path / "removed"), ["a"]) == ([], [], [])


def test_without_dir_fd_the_same_files_are_listed(tmp_path, monkeypatch):
    d = tmp_path / "in"
    d.mkdir()
    for i in range(5_000):
        (d / f"{i}.csv").write_text("1" * (i % 3))
    with_fd = set(next(local_level([f"file:{d}"])).files)
    monkeypatch.setattr(dirlisting, "_DIR_FD", False)   # stat by joined path instead
    assert set(next(local_level([f"file:{d}"])).files) == with_fd and len(with_fd) == 5_000
    kept, _, _ = dirlisting._stat_names(str(d), ["0.csv", "gone"])
    assert kept == ["0.csv"]


def test_a_local_root_is_what_hadoop_makes_of_it(classic_spark, tmp_path):
    """``local_root`` qualifies and stats a plain local directory the way Hadoop's
    ``makeQualified`` + ``getFileStatus`` do (the root resolution without py4j, issue 26), and
    leaves every other spelling to Hadoop."""
    from sparkmark.engine.fs import HadoopFS, default_fs
    d = tmp_path / "in_x=1.a-b+c@d~e,f"
    d.mkdir()
    (d / "f.json").write_text("{}")
    (tmp_path / ".dotted").mkdir()
    base = str(d)
    plain = [base, base + "/", "file:" + base, "file://" + base, "file://" + base + "/",
             str(tmp_path / ".dotted")]
    assert default_fs(classic_spark) == "file:///"
    for raw in plain:
        mine = dirlisting.local_root(raw, lambda: default_fs(classic_spark))
        assert mine is not None, raw
        fs = HadoopFS(classic_spark, raw)
        [(path, is_dir, _, mtime)] = fs.status_of(fs.qualify(raw))
        assert mine == [(path, is_dir, 0, mtime)], raw
    # not there: [] as Hadoop's status_of says
    gone = base + "-missing"
    assert dirlisting.local_root(gone, lambda: "file:///") == []
    assert HadoopFS(classic_spark, gone).status_of(HadoopFS(classic_spark, gone).qualify(gone)) == []
    # left to Hadoop: a file, relative, odd segments or characters, an authority, another FS
    others = [base + "/f.json", "in", "./in", base + "//x", base + "/../in", base + "/.",
              str(tmp_path / "a b"), str(tmp_path / "a:b"), str(tmp_path / "a%20b"),
              "file://host" + base, "hdfs://nn" + base, "/"]
    for raw in others:
        assert dirlisting.local_root(raw, lambda: "file:///") is None, raw
    # a bare path names the default file system, which may not be local
    assert dirlisting.local_root(base, lambda: "hdfs://nn:8020") is None
    assert dirlisting.local_root("file:" + base, lambda: "hdfs://nn:8020") is not None


def test_a_run_resolves_a_plain_local_root_without_py4j(classic_spark, tmp_path):
    """``list_inputs`` lists a plain local directory with no py4j round trip beyond the
    default file system's name (a bare path), and with none at all for ``file:`` paths."""
    from py4j import clientserver

    from sparkmark.planning.bands import BandOptions
    from sparkmark.sources.files import list_inputs
    d = tmp_path / "in"
    d.mkdir()
    for i in range(5):
        (d / f"f{i}.json").write_text("{}")
    calls: list[str] = []
    orig = clientserver.ClientServerConnection.send_command

    def counting(self, command):
        calls.append(command)
        return orig(self, command)

    clientserver.ClientServerConnection.send_command = counting
    try:
        bare = list_inputs(classic_spark, [str(d)], BandOptions())
        n_bare = len(calls)
        calls.clear()
        qualified = list_inputs(classic_spark, ["file:" + str(d)], BandOptions())
        n_qualified = len(calls)
    finally:
        clientserver.ClientServerConnection.send_command = orig
    assert n_bare == 2 and n_qualified == 0
    assert bare.roots == qualified.roots == ["file:" + str(d)]
    assert sorted(f.path for f in bare.entries) == [f"file:{d}/f{i}.json" for i in range(5)]
