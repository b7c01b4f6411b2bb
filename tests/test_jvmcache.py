"""The tests' class-data-sharing archive (sparkmark.devtools.jvmcache): keyed by the Spark jars,
passed to the drivers once, switched off by SPARKMARK_TEST_CDS=0, old archives pruned."""
from __future__ import annotations

import os
import time

import pytest

from sparkmark.devtools import jvmcache


@pytest.fixture
def jars(tmp_path, monkeypatch):
    """A SPARK_HOME with one jar, and an archive cache of its own."""
    folder = tmp_path / "spark" / "jars"
    folder.mkdir(parents=True)
    (folder / "a.jar").write_bytes(b"x")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    monkeypatch.setenv("SPARKMARK_CDS_CACHE", str(tmp_path / "cds"))
    return folder


def test_the_archive_is_keyed_by_the_spark_jars(tmp_path, monkeypatch, jars):
    first = jvmcache.archive_path()
    assert first is not None and first.parent == tmp_path / "cds" and first.suffix == ".jsa"
    assert jvmcache.archive_path() == first
    (jars / "b.jar").write_bytes(b"y")  # another jar set: another archive
    assert jvmcache.archive_path() != first
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "nowhere"))
    assert jvmcache.archive_path() is None


def test_enable_adds_the_options_once_and_can_be_switched_off(monkeypatch, jars):
    monkeypatch.setenv(jvmcache.SUBMIT_OPTS, "-Dmine=1")
    target = jvmcache.archive_path()
    assert target is not None
    target.parent.mkdir()
    target.write_bytes(b"archive")  # present: nothing to build
    assert jvmcache.enable() == target
    assert jvmcache.enable() == target
    opts = os.environ[jvmcache.SUBMIT_OPTS]
    assert opts.startswith("-Dmine=1 ") and opts.count(f"-XX:SharedArchiveFile={target}") == 1
    assert "-Xlog:cds=off" in opts
    # what a standalone cluster's JVMs get (JAVA_TOOL_OPTIONS): the archive, not -Dmine=1
    assert jvmcache.options() == [f"-XX:SharedArchiveFile={target}", "-Xlog:cds=off,cds+dynamic=off"]
    monkeypatch.setenv(jvmcache.SUBMIT_OPTS, "")
    monkeypatch.setenv("SPARKMARK_TEST_CDS", "0")
    assert jvmcache.enable() is None and os.environ[jvmcache.SUBMIT_OPTS] == ""
    assert jvmcache.options() == []


def test_prune_keeps_the_newest(tmp_path):
    now = time.time()
    for i in range(5):
        p = tmp_path / f"spark-{i}.jsa"
        p.write_bytes(b"x")
        os.utime(p, (now - 100 * i, now - 100 * i))
    (tmp_path / "other.txt").write_text("kept")
    jvmcache._prune(tmp_path, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.txt", "spark-0.jsa",
                                                          "spark-1.jsa"]


def test_this_runs_drivers_get_the_archive(spark):
    """The session fixture's driver JVM was started with the archive (when there is one)."""
    target = jvmcache.archive_path()
    args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory
                .getRuntimeMXBean().getInputArguments())
    if os.environ.get("SPARKMARK_TEST_CDS", "1") == "0" or target is None or not target.exists():
        assert not any(a.startswith("-XX:SharedArchiveFile") for a in args), args
    else:
        assert f"-XX:SharedArchiveFile={target}" in args, args


def test_fast_start_adds_its_options_once_and_can_be_switched_off(monkeypatch):
    monkeypatch.setenv(jvmcache.SUBMIT_OPTS, "-Dmine=1")
    monkeypatch.delenv("SPARKMARK_TEST_JIT", raising=False)
    assert jvmcache.fast_start() == list(jvmcache.FAST_START)
    assert jvmcache.fast_start() == list(jvmcache.FAST_START)
    opts = os.environ[jvmcache.SUBMIT_OPTS].split()
    assert opts[0] == "-Dmine=1" and all(opts.count(o) == 1 for o in jvmcache.FAST_START)
    # a standalone cluster's JVMs get them too (no archive here: only these)
    assert jvmcache.options() == list(jvmcache.FAST_START)
    monkeypatch.setenv(jvmcache.SUBMIT_OPTS, "")
    monkeypatch.setenv("SPARKMARK_TEST_JIT", "0")
    assert jvmcache.fast_start() == [] and os.environ[jvmcache.SUBMIT_OPTS] == ""


def test_this_runs_drivers_get_the_fast_start_options(spark):
    """The session fixture's driver JVM runs with the client compiler and the serial collector
    (unless SPARKMARK_TEST_JIT=0)."""
    args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory
                .getRuntimeMXBean().getInputArguments())
    want = [] if os.environ.get("SPARKMARK_TEST_JIT", "1") == "0" else list(jvmcache.FAST_START)
    assert [a for a in args if a in jvmcache.FAST_START] == want, args
