"""Benchmark: Iceberg tables with sparkmark against plain Spark (not a test).

    PYTHONPATH=src .venv35/bin/python benchmarks/iceberg.py     # 1,000,000 rows, 1% new, 7 trials
    PYTHONPATH=src .venv35/bin/python benchmarks/iceberg.py --rows 100000 \\
        --write-rows 10000 --repeat 3                                     # quicker
    PYTHONPATH=src .venv35/bin/python benchmarks/iceberg.py --history 2000  # long histories
    PYTHONPATH=src .venv35/bin/python benchmarks/iceberg.py --warehouse s3  # on moto's S3 API
    PYTHONPATH=src .venv35/bin/python benchmarks/iceberg.py --warehouse s3 --catalog jdbc

Spark 3.5 (or 4.1: .venv41) with the Iceberg runtime (``make jars``), a Hadoop catalog ``local`` in a
temporary folder (``--warehouse s3``: its tables, metadata and manifests under ``s3a://`` on a
moto server this script starts, as the Iceberg tests do; needs ``make jars``; ``--catalog jdbc``:
Iceberg's JDBC catalog on a PostgreSQL server this script starts, whose commits swap the
metadata pointer in one SQL statement, as metastore catalogs such as Glue's do, instead of the
Hadoop catalog's file renames and version hint), a SQLite state store (sparkmark's embedded
default).  In one run:

1. read: a source table of ``--rows`` rows; before each trial ``--new-pct`` % new rows are
   appended (a new snapshot, outside the timing) and counted once by plain Spark (untimed: it
   checks the range and makes neither timed peer the first reader of the new manifests).
   Then, in alternating order:
   - sparkmark: a whole run — ``Job(...).init`` (lease, ledger row), ``job.read.table`` (the
     current snapshot, the snapshot list, the ranged read), the rows consumed by Spark's
     ``noop`` sink, ``job.commit()`` (the bookmark moves to the new snapshot);
   - plain: ``spark.read.format("iceberg")`` with ``start-snapshot-id``/``end-snapshot-id``
     set to the same snapshot range, the same ``noop`` sink;
   - full: plain Spark reading the whole table (its current snapshot), the same sink.
   Goal: sparkmark / plain <= 1.2.  full / sparkmark is what the bookmark saves.
2. write, for each ``--write-rows`` size: fresh rows each trial; sparkmark: a whole run
   (init, ``job.write(df, target, format="iceberg")`` — the table checks, the staged WAP
   snapshot — and ``job.commit()``: the state transaction, then the cherry-pick that
   publishes the snapshot) against plain ``df.withColumns(...).writeTo(target).append()`` of
   the same rows with the same two stamp columns (``sm_run_id``, ``sm_snapshot_ts``, as
   literals), into the same target table.  Both peers start from the same unstamped DataFrame
   and add the stamp columns inside their timed run, the same way (one ``selectExpr``:
   sparkmark's ``job.write`` stamps so, and so does the plain peer).  Goal: sparkmark / plain
   <= 1.2.

Every figure is best of ``--repeat`` and median, after ``--warmup`` (3) untimed trials of each
peer.  In the
timed sparkmark runs each phase is timed (exclusive wall time: a phase's time excludes the
phases it calls; the median per phase is reported) and the py4j round trips are counted in each
(also for the plain peers; ``--no-phases`` turns this off); one more run of each scenario under
cProfile gives the top Python functions.  Prints a table and writes
benchmarks/results/iceberg.json with versions and the load average.
"""
from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tablebench import machine, noop, ratio, report_load, report_read_write, rows, stats  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "iceberg.json"
EN = {"job_bookmark_option": "job-bookmark-enable"}
COLS = "id BIGINT, v STRING, amount DOUBLE, created TIMESTAMP"
STAMPS = "sm_run_id STRING, sm_snapshot_ts TIMESTAMP"


# ---------------------------------------------------------------------- data

def current(spark, table: str) -> int:
    return int(spark.sql(f"SELECT snapshot_id FROM {table}.refs WHERE name = 'main'")
               .collect()[0][0])


def pad_history(spark, table: str, n: int) -> None:
    """``n`` more snapshots in ``table``'s history: empty appends committed through Iceberg's
    Java API (each a real snapshot in the metadata; no data files, so reads are unchanged)."""
    if n <= 0:
        return
    t0 = time.perf_counter()
    jt = spark.sparkContext._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, table)
    for i in range(n):
        op = jt.newFastAppend()
        op.set("bench.history", str(i))
        op.commit()
    spark.sql(f"REFRESH TABLE {table}")
    print(f"{table}: {n:,} more snapshots in {time.perf_counter() - t0:.1f}s", flush=True)


def sm_read(spark, state: str, src: str) -> tuple[float, dict]:
    """A whole sparkmark run reading ``src`` incrementally; seconds and the source's info."""
    from sparkmark import Job
    t0 = time.perf_counter()
    with measured():
        job = Job(spark, state=state)
        job.init("bench_ice_read", EN)
        with span("read: other (plan, ledger)"):
            df = job.read.table(src, transformation_ctx="src")
        with span("sink: noop (the data read)"):
            noop(df)
        with span("commit: other"):
            job.commit()
    elapsed = time.perf_counter() - t0
    run = job.store.list_runs(job_name="bench_ice_read", last=1)[-1]
    return elapsed, json.loads(run["config"])["sources"]["src"]


def plain_range(spark, src: str, a: int, b: int) -> float:
    t0 = time.perf_counter()
    with measured("plain"):
        noop(spark.read.format("iceberg").option("start-snapshot-id", str(a))
             .option("end-snapshot-id", str(b)).load(src))
    return time.perf_counter() - t0


def plain_full(spark, src: str) -> float:
    t0 = time.perf_counter()
    with measured("plain"):
        noop(spark.read.format("iceberg").load(src))
    return time.perf_counter() - t0


def sm_write(spark, state: str, tgt: str, df, job_name: str) -> tuple[float, int]:
    from sparkmark import Job
    t0 = time.perf_counter()
    with measured():
        job = Job(spark, state=state)
        job.init(job_name, EN)
        with span("write: other (stamp, checks)"):
            n = job.write(df, tgt, format="iceberg", transformation_ctx="sink")
        with span("commit: other"):
            job.commit()
    return time.perf_counter() - t0, n


def plain_write(tgt: str, df) -> float:
    """The plain peer: ``df`` (unstamped, as sparkmark's) gets the stamp columns, then is
    appended; both inside the timed region, as sparkmark's stamping is inside its run."""
    t0 = time.perf_counter()
    with measured("plain"):
        stamped(df).writeTo(tgt).append()
    return time.perf_counter() - t0


def stamped(df):
    """The rows plain Spark appends: the same columns sparkmark's stamp adds, as literals, in
    the same one ``selectExpr`` (the cheapest way found: ``withColumns`` with ``lit`` makes
    about twice the py4j round trips)."""
    return df.selectExpr("*", f"'{uuid.uuid4().hex}' AS sm_run_id",
                         f"timestamp_millis({int(time.time() * 1000)}L) AS sm_snapshot_ts")


# ---------------------------------------------------------------------- phases
class Phases:
    """Exclusive wall time, calls and py4j round trips per named phase (main thread only)."""

    def __init__(self):
        self.on = False
        self.stack: list[list] = []
        self.time: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.trips: dict[str, int] = defaultdict(int)
        self._undo: list[tuple] = []
        self.last: dict = {}

    def reset(self) -> None:
        self.stack.clear()
        self.time.clear()
        self.calls.clear()
        self.trips.clear()

    @contextmanager
    def span(self, label: str):
        """Time ``label`` when inside a measured run (the outermost span is BETWEEN or
        ``plain``), on the main thread; anything else (preparing the input) is not counted."""
        if not self.on or threading.current_thread() is not threading.main_thread() or \
                (not self.stack and label not in (BETWEEN, "plain")):
            yield
            return
        self.stack.append([label, 0.0])
        t0 = time.perf_counter()
        try:
            yield
        finally:
            el = time.perf_counter() - t0
            _, inner = self.stack.pop()
            self.time[label] += el - inner
            self.calls[label] += 1
            if self.stack:
                self.stack[-1][1] += el

    def wrap(self, owner, attr: str, label: str) -> None:
        orig = getattr(owner, attr)

        @functools.wraps(orig)
        def timed(*a, **k):
            with self.span(label):
                return orig(*a, **k)
        setattr(owner, attr, timed)
        self._undo.append((owner, attr, orig))

    def count_trip(self) -> None:
        if self.on and self.stack and threading.current_thread() is threading.main_thread():
            self.trips[self.stack[-1][0]] += 1

    def install(self) -> None:
        from py4j.java_gateway import GatewayClient
        from pyspark.sql.readwriter import DataFrameWriterV2

        from sparkmark.sinks import publish, table as sink
        from sparkmark.sources import table as source
        from sparkmark.state.store import StateStore
        send = GatewayClient.send_command

        def counted(client, *a, **k):
            self.count_trip()
            return send(client, *a, **k)
        GatewayClient.send_command = counted
        self._undo.append((GatewayClient, "send_command", send))
        for owner, attr, label in [
                (StateStore, "__init__", "init: open the store"),
                (StateStore, "begin_run", "init: begin_run (lease, ledger row)"),
                (StateStore, "runs_to_recover", "init: runs to recover"),
                (source, "current_snapshot", "read: current snapshot"),
                (source, "snapshot_list", "read: snapshot list"),
                (source, "_load", "read: DataFrame load"),
                (sink, "table_columns", "write: table checks (exists, format, columns)"),
                (sink, "_checked_table", "write: table checks (exists, format, columns)"),
                (sink, "_open_target", "write: table checks (exists, format, columns)"),
                (sink, "_enable_wap", "write: WAP property"),
                (sink, "_append_staged", "write: the append (staged snapshot)"),
                (sink, "_staged_snapshot", "write: staged snapshot lookup"),
                (sink, "wap_snapshots", "publish: ancestry check (wap_snapshots)"),
                (DataFrameWriterV2, "append", "write: the append (staged snapshot)"),
                (StateStore, "update_run", "ledger: update_run"),
                (StateStore, "record_staged", "ledger: staged output (record_staged)"),
                (StateStore, "commit_run", "commit: state transaction"),
                (publish, "publish_table", "publish (fast-forward, else cherry-pick)")]:
            if hasattr(owner, attr):  # names of this checkout's sparkmark (they change)
                self.wrap(owner, attr, label)
        from sparkmark.lifecycle import job as job_mod
        orig_init = job_mod.Job.__init__
        orig_jinit = job_mod.Job.init

        def job_ctor(job, *a, **k):
            with self.span("init: Job() (version check)"):
                return orig_init(job, *a, **k)

        def job_init(job, *a, **k):
            with self.span("init: other"):
                return orig_jinit(job, *a, **k)
        job_mod.Job.__init__ = job_ctor
        job_mod.Job.init = job_init
        self._undo += [(job_mod.Job, "__init__", orig_init), (job_mod.Job, "init", orig_jinit)]

    def uninstall(self) -> None:
        for owner, attr, orig in reversed(self._undo):
            setattr(owner, attr, orig)
        self._undo.clear()

    def snapshot(self, cpu_s: float) -> dict:
        return {"phases": {k: {"ms": 1000 * self.time[k], "calls": self.calls[k],
                               "py4j": self.trips.get(k, 0)} for k in self.time},
                "py4j": sum(self.trips.values()), "python_cpu_ms": 1000 * cpu_s}


PHASES = Phases()
span = PHASES.span
#: the outermost phase of a run: its time is what no named phase below it took
BETWEEN = "between phases (Python, small calls)"


@contextmanager
def measured(label: str = BETWEEN):
    """One measured run: its phases (when installed), py4j round trips and Python CPU time
    land in ``PHASES.last``."""
    PHASES.reset()
    PHASES.on = True
    c0 = time.process_time()
    try:
        with span(label):
            yield
    finally:
        PHASES.on = False
        PHASES.last = PHASES.snapshot(time.process_time() - c0)


def summarize(runs: list[dict]) -> dict:
    """The median of each phase over the measured runs, slowest first."""
    names = {k for r in runs for k in r["phases"]}
    med = lambda xs: statistics.median(xs)
    phases = [{"phase": k,
               "median_ms": round(med([r["phases"].get(k, {}).get("ms", 0.0) for r in runs]), 1),
               "calls": med([r["phases"].get(k, {}).get("calls", 0) for r in runs]),
               "py4j": med([r["phases"].get(k, {}).get("py4j", 0) for r in runs])}
              for k in names]
    return {"runs": len(runs), "py4j_round_trips_median": med([r["py4j"] for r in runs]),
            "python_cpu_ms_median": round(med([r["python_cpu_ms"] for r in runs]), 1),
            "phases": sorted(phases, key=lambda p: -p["median_ms"])}


def cprofiled(fn):
    """``fn()`` under cProfile: its result and the top Python functions by own time."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        out = fn()
    finally:
        prof.disable()
    return out, top_functions(prof)


def top_functions(prof: cProfile.Profile, n: int = 12) -> list[dict]:
    st = pstats.Stats(prof, stream=io.StringIO())
    rows_ = []
    for (file, line, fn), (_cc, nc, tt, ct, _) in st.stats.items():  # type: ignore[attr-defined]
        rows_.append({"function": f"{fn} ({Path(file).name}:{line})", "ncalls": nc,
                      "tottime_s": round(tt, 4), "cumtime_s": round(ct, 4)})
    return sorted(rows_, key=lambda r: -r["tottime_s"])[:n]


# ---------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="source table size")
    ap.add_argument("--new-pct", type=float, default=1.0, help="new rows per run, %% of --rows")
    ap.add_argument("--write-rows", default="10000,1000000", help="write sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=7, help="timed trials per peer")
    ap.add_argument("--warmup", type=int, default=3,
                    help="untimed trials of every peer first (the JVM compiles the hot paths)")
    ap.add_argument("--history", type=int, default=0,
                    help="extra snapshots in each table's history before timing (empty "
                         "appends through Iceberg's Java API: a table with a long history)")
    ap.add_argument("--no-phases", action="store_true",
                    help="no phase timers and py4j counters in the measured runs")
    ap.add_argument("--warehouse", choices=("local", "s3"), default="local",
                    help="the catalog's warehouse: a temporary folder, or s3a:// on moto")
    ap.add_argument("--catalog", choices=("hadoop", "jdbc"), default="hadoop",
                    help="Iceberg's Hadoop catalog, or its JDBC catalog on a PostgreSQL server")
    ap.add_argument("--json", default=None,
                    help="where to write the results (default benchmarks/results/iceberg.json; "
                         "iceberg-<warehouse>-<catalog>.json for the others)")
    a = ap.parse_args(argv)
    new = max(1, int(a.rows * a.new_pct / 100))
    sizes = [int(s) for s in a.write_rows.split(",") if s.strip()]
    load_start = list(os.getloadavg())

    import pyspark

    import sparkmark
    from sparkmark.devtools.iceberg import iceberg_jars, iceberg_session_conf, runtime_jar
    from sparkmark.engine.spark import local_session
    try:
        runtime = runtime_jar()
    except LookupError as e:  # no Iceberg runtime for this Spark line (.venv35 and .venv41 have one)
        sys.exit(str(e))
    work = Path(tempfile.mkdtemp(prefix="sm-bench-ice-"))
    server = pg = None
    try:  # the servers this script starts are stopped again if the set-up fails
        if a.warehouse == "s3":
            from sparkmark.devtools.s3 import Bucket, s3a_jars, s3a_session_conf, start_moto
            server = start_moto()
            warehouse = Bucket(server, "bench-ice-wh").url("wh")
            s3a = s3a_jars(fetch=False)
            conf = iceberg_session_conf(warehouse, jars=iceberg_jars(fetch=False) + s3a)
            conf.update({k: v for k, v in s3a_session_conf(jars=s3a).items()
                         if k != "spark.jars"})
            conf.update(server.spark_conf())
        else:
            conf = iceberg_session_conf(str(work / "wh"), jars=iceberg_jars(fetch=False))
        if a.catalog == "jdbc":
            from sparkmark.devtools.postgres import start_postgres
            from sparkmark.engine.spark import jdbc_jars
            pg = start_postgres()
            pg.create_database("iceberg_catalog")
            prefix = "spark.sql.catalog.local"
            conf[prefix + ".type"] = "jdbc"
            conf[prefix + ".uri"] = f"jdbc:postgresql://127.0.0.1:{pg.port}/iceberg_catalog"
            conf[prefix + ".jdbc.user"] = "postgres"
            conf[prefix + ".jdbc.schema-version"] = "V1"
            conf["spark.jars"] = ",".join([conf["spark.jars"], *jdbc_jars()])
        conf["spark.sql.warehouse.dir"] = str(work / "spark-wh")
        spark = local_session("sparkmark-bench-iceberg", extra_conf=conf)
    except BaseException:
        for started in (server, pg):
            if started is not None:
                started.stop()
        raise
    spark.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    state = f"sqlite:///{work}/state.db"
    java = spark.sparkContext._jvm.System.getProperty("java.version")
    src = "local.db.src"
    result: dict = {}
    if not a.no_phases:
        PHASES.install()
    try:
        # ------------------------------------------------------------ read
        t0 = time.perf_counter()
        spark.sql(f"CREATE TABLE {src} ({COLS}) USING iceberg")
        rows(spark, 0, a.rows).writeTo(src).append()
        pad_history(spark, src, a.history)
        top = a.rows
        load_s = time.perf_counter() - t0
        first_s, info = sm_read(spark, state, src)  # the first run: whole table, sets bookmark
        assert info["read"] != "appends", info
        print(f"source {src}: {a.rows:,} rows loaded in {load_s:.1f}s; first sparkmark run "
              f"(whole table) {first_s:.2f}s", flush=True)

        def increment() -> tuple[int, int]:
            """Append the next ``new`` rows; then read them once, untimed, so that neither
            timed peer is the first reader of the new snapshot's manifests (that first read
            was slower, and with alternating order the medians then mixed first and second
            reads: medians of the read ratio varied 1.07-1.40 between runs)."""
            nonlocal top
            before = current(spark, src)
            rows(spark, top, new).writeTo(src).append()
            top += new
            after = current(spark, src)
            got = spark.read.format("iceberg").option("start-snapshot-id", str(before)) \
                .option("end-snapshot-id", str(after)).load(src).count()
            assert got == new, (got, new)
            return before, after

        def checked_read(lo: int, hi: int) -> float:
            s, info = sm_read(spark, state, src)
            assert (info["from_snapshot"], info["to_snapshot"], info["read"]) == \
                (lo, hi, "appends"), info
            return s

        # warm-up (also checks that the range holds exactly the increment's rows)
        for _ in range(a.warmup):
            lo, hi = increment()
            checked_read(lo, hi)
            plain_range(spark, src, lo, hi)
            plain_full(spark, src)
        ours, plain, full, phases, plain_trips = [], [], [], [], []
        for i in range(a.repeat):
            lo, hi = increment()
            if i % 2:
                plain.append(plain_range(spark, src, lo, hi))
                plain_trips.append(PHASES.last.get("py4j"))
            ours.append(checked_read(lo, hi))
            phases.append(PHASES.last)
            if not i % 2:
                plain.append(plain_range(spark, src, lo, hi))
                plain_trips.append(PHASES.last.get("py4j"))
            full.append(plain_full(spark, src))
            print(f"  read trial {i + 1}: sparkmark {ours[-1]:.3f}s plain {plain[-1]:.3f}s "
                  f"full {full[-1]:.3f}s  load {os.getloadavg()[0]:.2f}", flush=True)
        read = {"table_rows": a.rows, "new_rows_per_run": new,
                "table_rows_at_end": top, "load_s": round(load_s, 2),
                "first_run_s": round(first_s, 3),
                "sparkmark": stats(ours), "plain_range": stats(plain), "full_scan": stats(full)}
        read["sparkmark_over_plain"] = ratio(read["sparkmark"], read["plain_range"])
        read["full_over_sparkmark"] = ratio(read["full_scan"], read["sparkmark"])
        if not a.no_phases:
            read["sparkmark_phases"] = summarize(phases)
            read["plain_py4j_round_trips_median"] = statistics.median(plain_trips)
            lo, hi = increment()
            read["cprofile_one_run"] = cprofiled(lambda: checked_read(lo, hi))[1]
        result["read"] = read

        # ------------------------------------------------------------ write
        writes = []
        base = 10 ** 12  # the written ids never meet the source's
        for n in sizes:
            tgt = f"local.db.target_{n}"
            spark.sql(f"CREATE TABLE {tgt} ({COLS}, {STAMPS}) USING iceberg")
            pad_history(spark, tgt, a.history)
            job_name = f"bench_ice_write_{n}"
            ours, plain, phases, plain_trips = [], [], [], []
            warm = max(1, a.warmup)
            for i in range(a.repeat + warm):  # the first `warm` trials are the warm-up
                df_sm, df_plain = rows(spark, base, n), rows(spark, base + n, n)
                base += 2 * n
                timed = i >= warm
                for peer in (("sm", "plain") if i % 2 else ("plain", "sm")):
                    if peer == "sm":
                        s, got = sm_write(spark, state, tgt, df_sm, job_name)
                        assert got == n, (got, n)
                        if timed:
                            ours.append(s)
                            phases.append(PHASES.last)
                    else:
                        s = plain_write(tgt, df_plain)
                        if timed:
                            plain.append(s)
                            plain_trips.append(PHASES.last.get("py4j"))
                if timed:
                    print(f"  write {n:,} trial {i}: sparkmark {ours[-1]:.3f}s plain "
                          f"{plain[-1]:.3f}s  load {os.getloadavg()[0]:.2f}", flush=True)
            w = {"rows": n, "sparkmark": stats(ours), "plain_append": stats(plain)}
            w["sparkmark_over_plain"] = ratio(w["sparkmark"], w["plain_append"])
            if not a.no_phases:
                w["sparkmark_phases"] = summarize(phases)
                w["plain_py4j_round_trips_median"] = statistics.median(plain_trips)
                df = rows(spark, base, n)
                base += n
                got = cprofiled(lambda df=df, tgt=tgt, job_name=job_name:
                                sm_write(spark, state, tgt, df, job_name))
                w["cprofile_one_run"] = got[1]
            sm_runs = a.repeat + warm + (0 if a.no_phases else 1)
            total = spark.table(tgt).count()
            assert total == n * (sm_runs + a.repeat + warm), (total, n)  # each run's rows once
            w["target_rows_checked"] = total
            writes.append(w)
        result["write"] = writes
    finally:
        PHASES.uninstall()
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            result["s3_requests"] = server.requests()
            server.stop()
        if pg is not None:
            pg.stop()

    result = {
        "benchmark": "Iceberg incremental read and exactly-once write, sparkmark vs plain Spark",
        "command": " ".join(["PYTHONPATH=src", sys.executable, *sys.argv]),
        "args": vars(a),
        "goals": {"read_sparkmark_over_plain_max": 1.2, "write_sparkmark_over_plain_max": 1.2},
        **result,
        "machine": machine(load_start),
        "versions": {"python": sys.version.split()[0], "spark": pyspark.__version__,
                     "iceberg_runtime": runtime, "java": java,
                     "sparkmark": sparkmark.__version__, "sqlite": sqlite3.sqlite_version},
        "note": "whole runs each side: sparkmark = Job() + init + read/write + commit on a "
                "SQLite state store; plain = the same snapshot-range read (or full scan, or "
                "append of the same rows and columns) with the same noop sink. Best of N and "
                "median after --warmup untimed trials; the peers alternate order; every "
                "trial reads or writes new rows. Phases: exclusive wall time (a phase "
                "excludes the phases it calls) of the timed sparkmark runs, median per "
                "phase; py4j = round trips to the JVM. cprofile_one_run: one more run under "
                "cProfile, Python functions by own time (socket recv_into = waiting for the "
                "JVM).",
    }
    report(result)
    out = Path(a.json or (RESULTS if (a.warehouse, a.catalog) == ("local", "hadoop")
                          else RESULTS.with_name(f"iceberg-{a.warehouse}-{a.catalog}.json")))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")
    return 0


def report(r: dict) -> None:
    report_read_write(r, 1.2, "plain snapshot-range read")
    rd = r["read"]
    for label, d in [("read", rd)] + [(f"write {w['rows']:,}", w) for w in r["write"]]:
        p = d.get("sparkmark_phases")
        if not p:
            continue
        print()
        print(f"phases of the sparkmark runs, {label} (median of {p['runs']}): "
              f"{p['py4j_round_trips_median']:g} py4j round trips (plain peer: "
              f"{d['plain_py4j_round_trips_median']:g}), {p['python_cpu_ms_median']} ms Python CPU")
        for ph in p["phases"]:
            print(f"  {ph['phase']:<46}{ph['median_ms']:>9.1f} ms x{ph['calls']:<4g} "
                  f"{ph['py4j']:>5g} py4j")
    report_load(r)


if __name__ == "__main__":
    sys.exit(main())
