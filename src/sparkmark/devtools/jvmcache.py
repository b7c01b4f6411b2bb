"""A class-data-sharing archive of Spark's classes, so that the tests' many short-lived driver
JVMs start faster (test infrastructure only; sparkmark never sets JVM options for its users).

A Spark driver spends most of its first seconds loading and verifying classes from ~250 jars:
on this project's CI machine a bare local session took 6.9 s to start and 11.4 s to start and
run two tiny jobs; with a dynamic CDS archive of the classes such a run loads (Java 13+,
``-XX:ArchiveClassesAtExit`` once, ``-XX:SharedArchiveFile`` after), 3.9 s and 6.4 s.  The
suites start a few hundred drivers (crash trials, fault schedules, CLI and Glue scripts, the
schedulers' tasks), each in its own process.

:func:`enable` builds the archive once per Spark installation and Java (a warm-up job in a
child process, 30-45 s; cached under ``~/.cache/sparkmark/cds``, keyed by the Java binary and
the Spark jars' names, sizes and times) and appends the options to ``SPARK_SUBMIT_OPTS``, which
``spark-submit`` passes to every driver JVM it starts, in this process and its children (Spark
Connect servers included); a standalone cluster started by ``sparkmark.devtools.cluster`` gives
the same options (:func:`options`) to its master, workers and executors.  The JVM checks the
archive against its class path and ignores it, silently (the options turn the CDS log off),
when they do not match; a failed build leaves the environment as it was.  Only where classes
come from changes, not which classes or what they do.  :func:`fast_start` adds, the same way,
the client compiler and the serial collector (:data:`FAST_START`) for those short-lived JVMs.

Example::

    from sparkmark.devtools.jvmcache import enable
    enable()   # before the first SparkSession of the process
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the environment variable spark-submit reads for the driver JVM's own options
SUBMIT_OPTS = "SPARK_SUBMIT_OPTS"
#: quiet: an archive that does not match this JVM is skipped without a warning on stdout
_QUIET = "-Xlog:cds=off,cds+dynamic=off"

#: the tests' drivers run small jobs for seconds: the client compiler only (no C2 compiler
#: threads competing for the cores) and the serial collector (no parallel GC threads).  On this
#: project's 2-core CI machine, crash trials (a driver process each) took 65 s against 83-91 s,
#: and the file-source and sink suites in one session 47-57 s against 69-72 s.  Test
#: infrastructure only, like the archive; ``SPARKMARK_TEST_JIT=0`` leaves the JVM's defaults.
FAST_START = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")

#: archives kept in the cache (each ~190 MB; a clone elsewhere, another venv or Spark needs its
#: own): building one removes the oldest beyond this
KEEP = 6

#: the warm-up: the classes a test's driver typically loads (sessions, the local file system,
#: JSON/CSV/Parquet readers and writers, code generation, joins, aggregates, windows)
WARMUP = r'''
import sys, tempfile, os
from sparkmark.engine.spark import local_session
spark = local_session("sparkmark-cds-warmup")
d = tempfile.mkdtemp()
df = spark.range(200).selectExpr("id", "cast(id as string) AS s", "id % 3 AS k",
                                 "current_timestamp() AS ts")
df.write.json(d + "/j")
j = spark.read.json(d + "/j")
j.groupBy("k").count().collect()
df.write.partitionBy("k").parquet(d + "/p")
p = spark.read.parquet(d + "/p")
p.join(j, "id").selectExpr("sum(id)").collect()
df.write.option("header", "true").csv(d + "/c")
spark.read.option("header", "true").csv(d + "/c").count()
spark.read.text(d + "/c").count()
p.createOrReplaceTempView("t")
spark.sql("SELECT k, s, row_number() OVER (PARTITION BY k ORDER BY id) AS r FROM t").collect()
spark.sql("SELECT input_file_name(), * FROM t WHERE id > 5").collect()
jvm = spark.sparkContext._jvm
path = jvm.org.apache.hadoop.fs.Path("file:" + d)
path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).listStatus(path)
spark.stop()
'''


def cache_dir() -> Path:
    """Where archives live (env ``SPARKMARK_CDS_CACHE``, default ``~/.cache/sparkmark/cds``)."""
    env = os.environ.get("SPARKMARK_CDS_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "sparkmark" / "cds"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(os.path.realpath(found)) if found and os.path.exists(found) else None


def _spark_jars() -> Path | None:
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home) / "jars"
    try:
        import pyspark
    except ImportError:
        return None
    return Path(pyspark.__file__).parent / "jars"


def archive_path() -> Path | None:
    """The archive for this process's Java and Spark jars (it may not exist yet), or None when
    either is missing.

    >>> p = archive_path()
    >>> p is None or p.suffix == ".jsa"
    True
    """
    java, jars = _java(), _spark_jars()
    if java is None or jars is None or not jars.is_dir():
        return None
    h = hashlib.sha1()
    jst = java.stat()
    h.update(f"{java}\0{jst.st_size}\0{jst.st_mtime_ns}\0{jars.resolve()}\0".encode())
    for entry in sorted(os.scandir(jars), key=lambda e: e.name):
        st = entry.stat()
        h.update(f"{entry.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return cache_dir() / f"spark-{h.hexdigest()[:20]}.jsa"


def build(target: Path, *, timeout: float = 300.0) -> bool:
    """Run the warm-up job in a child process whose driver JVM dumps the classes it loaded to
    ``target`` at exit (written beside it, then renamed: never a half-written archive).
    True when the archive is there."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".jsa.part", dir=target.parent)
    os.close(fd)
    os.unlink(tmp)  # the JVM creates it
    env = {k: v for k, v in os.environ.items() if k != SUBMIT_OPTS}
    env[SUBMIT_OPTS] = f"-XX:ArchiveClassesAtExit={tmp} {_QUIET}"
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        done = subprocess.run([sys.executable, "-c", WARMUP], env=env, timeout=timeout,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if done.returncode != 0 or not os.path.exists(tmp) or os.path.getsize(tmp) == 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
            print(f"sparkmark.devtools.jvmcache: no archive (exit {done.returncode}: "
                  f"{' '.join(tail)}); drivers start without one", file=sys.stderr)
            return False
        os.replace(tmp, target)
        _prune(target.parent, KEEP)
        return True
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"sparkmark.devtools.jvmcache: no archive ({e}); drivers start without one",
              file=sys.stderr)
        return False
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _prune(folder: Path, keep: int) -> None:
    """Remove all but the ``keep`` newest archives in ``folder``."""
    archives = sorted(folder.glob("spark-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[keep:]:
        old.unlink(missing_ok=True)


def options() -> list[str]:
    """The archive's JVM options that :func:`enable` put in ``SPARK_SUBMIT_OPTS`` (empty when
    it did not), and :func:`fast_start`'s, for JVMs that spark-submit does not start: a
    standalone cluster's master, workers and executors (``sparkmark.devtools.cluster`` gives
    them ``JAVA_TOOL_OPTIONS``).

    >>> isinstance(options(), list)
    True
    """
    opts = os.environ.get(SUBMIT_OPTS, "").split()
    archive = [o for o in opts if o.startswith("-XX:SharedArchiveFile=")]
    fast = [o for o in FAST_START if o in opts]
    return ([archive[-1], _QUIET] if archive else []) + fast


def fast_start() -> list[str]:
    """Give the driver JVMs that this process and its children start :data:`FAST_START`
    (through ``SPARK_SUBMIT_OPTS``, as :func:`enable` does the archive); returns the options
    added now or before, ``[]`` when ``SPARKMARK_TEST_JIT=0``.  Idempotent.

    >>> isinstance(fast_start(), list)
    True
    """
    if os.environ.get("SPARKMARK_TEST_JIT", "1") == "0":
        return []
    _add_submit_opts(FAST_START)
    return list(FAST_START)


def _add_submit_opts(options: "tuple[str, ...] | list[str]") -> None:
    """Append to ``SPARK_SUBMIT_OPTS`` those of ``options`` it does not hold yet."""
    opts = os.environ.get(SUBMIT_OPTS, "")
    missing = [o for o in options if o not in opts.split()]
    if missing:
        os.environ[SUBMIT_OPTS] = f"{opts} {' '.join(missing)}".strip()


def enable() -> Path | None:
    """Make the driver JVMs that this process and its children start use the archive (built
    first if missing); returns its path, or None (and nothing changed) when there is none.
    Idempotent; env ``SPARKMARK_TEST_CDS=0`` switches it off."""
    if os.environ.get("SPARKMARK_TEST_CDS", "1") == "0":
        return None
    target = archive_path()
    if target is None:
        return None
    if f"-XX:SharedArchiveFile={target}" in os.environ.get(SUBMIT_OPTS, "").split():
        return target
    if not target.exists():
        started = time.monotonic()
        if not build(target):
            return None
        print(f"sparkmark.devtools.jvmcache: built {target} in "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr)
    _add_submit_opts([f"-XX:SharedArchiveFile={target}", _QUIET])
    return target


if __name__ == "__main__":  # python -m sparkmark.devtools.jvmcache: build (or find) it
    path = enable()
    print(path if path else "no archive")
    sys.exit(0 if path else 1)
