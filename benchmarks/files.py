"""Benchmark: file bookmarks against the lower bound and Spark's file stream (not a test).

For each N (default 1,000, 10,000 and 100,000 small JSON files, or CSV files with a header
line with ``--format csv``) with 1% new files, side by side in one Spark session:

  (a) sparkmark: one incremental run — init, list + plan + read the new files, count, commit —
      with the default options (``--a-options default``: no schema given, so the known schema
      the first run learnt applies, and the default ``schemaEvolution=rescue``; CSV:
      ``header=true``), or ``--a-options schema``: the explicit schema, still ``rescue``;
  (a2) the same with the explicit schema and ``mode=PERMISSIVE``: Spark's own bad-record
      handling, as the lower bound has (no ``_rescued_data``);
  (b) the lower bound: list the directory (os.scandir) and read only the new files by path with
      plain Spark, then count;
  (b2) the same with the paths handed to the JVM in one py4j call (``compat.load_paths``, as
      sparkmark does; plain ``spark.read.json(list)`` makes one py4j call per path);
  (c) Spark Structured Streaming's file source with Trigger.AvailableNow (noop sink), its
      checkpoint already holding the old files;
  (d) a full re-read of the directory, then count.

Then R more sparkmark runs (default 100), each a simulated 20 minutes after the previous one
with a few new files, and the size of the state (the bookmark entry as JSON) next to the size of
(c)'s checkpoint directory. Every approach but (a) with ``--a-options default`` gets the same
explicit schema (the file stream requires one). (a), (a2), (b) and (b2) run interleaved,
``--repeat`` times each (best and median): each repetition first adds 1% new files (a simulated
20 minutes later), so every sparkmark run is a real next run of its job (until 2026-11 the
bookmark was rewound to the first run instead, so each repetition re-read files the file audit
already held and the audit lookup grew with every repetition, which no scheduled run sees); (c)
reads the first repetition's new files. The listing grows by 1% per repetition, alike for all
four. The old files have distinct mtimes over the past day (so the state after the first run
holds one band, as in a steady state; with identical mtimes the first run's band would hold all
N files and the measured run would settle them all at once). Prints a table and writes
benchmarks/results/files.json (``--format csv``: files-csv.json) with the date, the load average
and the versions.

    .venv/bin/python benchmarks/files.py --sizes 1000,10000,100000 --runs 100
    .venv/bin/python benchmarks/files.py --format csv --sizes 1000,10000,100000 --runs 20
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

SCHEMA = "id BIGINT, v STRING"
MIN = 60_000
#: the format the files are written in (``--format``)
FORMAT = "json"
#: what (a) is given (``--a-options``): ``default`` (nothing) or ``schema``
A_OPTIONS = "default"


def plain_reader(reader):
    """A Spark reader (batch or stream) set up for :data:`FORMAT` with the explicit schema."""
    reader = reader.schema(SCHEMA).format(FORMAT)
    return reader.option("header", "true") if FORMAT == "csv" else reader


def make_files(d: Path, start: int, n: int, mtime_ms: int | None, spread: bool = False
               ) -> list[str]:
    """``n`` small JSON files; ``spread``: file i gets ``mtime_ms + i`` (distinct times, as
    files written over a day have), else all get ``mtime_ms``."""
    d.mkdir(parents=True, exist_ok=True)
    names = []
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for i in range(start, start + n):
        p = f"{d}/f{i:07d}.{FORMAT}"
        fd = os.open(p, flags, 0o644)
        try:
            os.write(fd, (f'id,v\n{i},x{i % 97}\n' if FORMAT == "csv" else
                          f'{{"id": {i}, "v": "x{i % 97}"}}\n').encode())
        finally:
            os.close(fd)
        if mtime_ms is not None:
            ns = (mtime_ms + (i - start if spread else 0)) * 1_000_000
            os.utime(p, ns=(ns, ns))
        names.append(p)
    return names


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def timed(fn, repeat: int = 1):
    """Best of ``repeat`` wall-clock times (s) and the last result."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


class SimClock:
    def __init__(self, now: int):
        self.now = now

    def __call__(self) -> int:
        return self.now


def bench_size(spark, n: int, runs: int, work: Path, repeat: int) -> dict:
    from sparkmark import Job
    base = work / f"n{n}"
    if base.exists():
        shutil.rmtree(base)
    src = base / "in"
    now = int(time.time() * 1000)
    clock = SimClock(now)
    t = time.perf_counter()
    make_files(src, 0, n, now - 24 * 3600 * 1000, spread=True)
    gen_s = time.perf_counter() - t
    state = f"sqlite:///{base}/state.db"
    enable = {"job_bookmark_option": "job-bookmark-enable"}
    fmt_opts = {"header": "true"} if FORMAT == "csv" else {}
    opts = {**fmt_opts, **({"schema": SCHEMA} if A_OPTIONS == "schema" else {})}
    # (a2): Spark's own bad-record handling (``mode``), as plain Spark reads: no drift pass
    spark_mode = {**fmt_opts, "schema": SCHEMA, "mode": "PERMISSIVE"}

    # initial state: sparkmark has processed the old files, the stream's checkpoint holds them
    def sm_run(name: str = "bench", options: dict = opts):
        job = Job(spark, state=state, clock=clock).init(name, enable)
        df = job.read.files(str(src), format=FORMAT, transformation_ctx="src", options=options)
        rows = df.count()
        job.commit()
        return rows, job

    t = time.perf_counter()
    assert sm_run()[0] == n
    first_sm_s = time.perf_counter() - t
    assert sm_run("bench_mode", spark_mode)[0] == n
    ckpt = base / "checkpoint"

    def stream_once() -> int:
        q = (plain_reader(spark.readStream).load(str(src)).writeStream.format("noop")
             .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
        q.awaitTermination()
        return sum(int(p["numInputRows"]) for p in q.recentProgress)

    t = time.perf_counter()
    assert stream_once() == n
    first_stream_s = time.perf_counter() - t

    # (a) sparkmark incremental run, (a2) the same with ``mode``, (b)/(b2) the lower bounds.
    # Every repetition is a real next run: 1% new files, a minute old for sparkmark's simulated
    # clock, which moves 20 minutes per repetition (no rewinding of the bookmark: a rewound
    # run re-reads files that the audit already holds, which no scheduled run does)
    from sparkmark.engine import compat
    new_n = max(1, n // 100)
    next_id = n
    cutoff = 0

    def lower_bound(one_call: bool) -> int:
        """(b) list + read only the new files by path; ``one_call``: (b2) the paths handed to
        the JVM in one py4j call, as sparkmark does (compat.load_paths)."""
        picked = []
        with os.scandir(src) as it:
            for e in it:
                if e.is_file() and e.stat().st_mtime_ns // 1_000_000 > cutoff:
                    picked.append("file:" + e.path)
        # plain Spark, with the same listing setting sparkmark uses (the driver stats the
        # given paths instead of a one-task-per-path listing job)
        spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
        try:
            reader = plain_reader(spark.read)
            df = compat.load_paths(spark, reader, picked) if one_call else reader.load(picked)
        finally:
            spark.conf.unset("spark.sql.sources.parallelPartitionDiscovery.threshold")
        return df.count()

    # interleaved a, a2, b, b2 so that a change of load hits all alike; best of ``repeat``
    a_times, a2_times, b_times, b2_times = [], [], [], []
    load_seen = [os.getloadavg()[0]]
    c_s = None
    for rep in range(repeat):
        clock.now += 20 * MIN
        make_files(src, next_id, new_n, clock.now - MIN)
        next_id += new_n
        cutoff = clock.now - 2 * MIN
        if rep == 0:  # (c) the file stream picks up the same new files (once: it commits)
            c_s, c_rows = timed(stream_once)
            assert c_rows == new_n, (c_rows, new_n)
        s, (rows, job) = timed(sm_run)
        assert rows == new_n, (rows, new_n)
        a_times.append(s)
        s, (rows, _) = timed(lambda: sm_run("bench_mode", spark_mode))
        assert rows == new_n, (rows, new_n)
        a2_times.append(s)
        s, b_rows = timed(lambda: lower_bound(False))
        assert b_rows == new_n
        b_times.append(s)
        s, b_rows = timed(lambda: lower_bound(True))
        assert b_rows == new_n
        b2_times.append(s)
        load_seen.append(os.getloadavg()[0])
    info = json.loads(job.store.get_run(job.run_id)["config"])["sources"]["src"]
    b_s, b2_s = min(b_times), min(b2_times)
    assert c_s is not None
    ckpt_bytes = dir_size(ckpt)

    # (d) full re-read
    d_s, d_rows = timed(lambda: plain_reader(spark.read).load(str(src)).count(), repeat)
    assert d_rows == next_id

    # R more runs, 20 simulated minutes apart, a few new files each: the state stays one band
    sizes = []
    per_run = []
    for _ in range(runs):
        clock.now += 20 * MIN
        make_files(src, next_id, 5, clock.now - MIN)
        next_id += 5
        t = time.perf_counter()
        rows, job = sm_run()
        per_run.append(time.perf_counter() - t)
        assert rows == 5
        sizes.append(len(json.dumps(job.store.bookmark_entry("bench"))))
    return {
        "n": n, "new": new_n, "generate_s": round(gen_s, 2),
        "first_full_run_sparkmark_s": round(first_sm_s, 2),
        "first_full_run_stream_s": round(first_stream_s, 2),
        "a_sparkmark_s": round(min(a_times), 3), "a_sparkmark_runs_s": [round(x, 3) for x in a_times],
        "a2_sparkmark_mode_s": round(min(a2_times), 3),
        "a2_runs_s": [round(x, 3) for x in a2_times],
        "a2_over_b2": round(min(a2_times) / b2_s, 3),
        "a2_over_b2_median": round(statistics.median(a2_times) / statistics.median(b2_times), 3),
        "b_lower_bound_s": round(b_s, 3), "b_lower_bound_runs_s": [round(x, 3) for x in b_times],
        "b2_lower_bound_one_call_s": round(b2_s, 3),
        "b2_runs_s": [round(x, 3) for x in b2_times],
        "c_stream_s": round(c_s, 3), "d_full_reread_s": round(d_s, 3),
        "a_over_b": round(min(a_times) / b_s, 3), "a_over_b2": round(min(a_times) / b2_s, 3),
        "a_over_b_median": round(statistics.median(a_times) / statistics.median(b_times), 3),
        "a_over_b2_median": round(statistics.median(a_times) / statistics.median(b2_times), 3),
        "a_over_c": round(min(a_times) / c_s, 3),
        "load_1min_during_a_b": load_seen,
        "a_over_d": round(min(a_times) / d_s, 3),
        "listed": info.get("listed"), "files_read": info.get("files"),
        "runs": runs,
        "state_bytes_after_runs": sizes[-1] if sizes else None,
        "state_bytes_max": max(sizes) if sizes else None,
        "state_bytes_first_runs": sizes[:3],
        "incremental_run_median_s": round(statistics.median(per_run), 3) if per_run else None,
        "stream_checkpoint_bytes": ckpt_bytes,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="best of R for (a), (b), (b2), (d)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--format", choices=("json", "csv"), default="json")
    ap.add_argument("--a-options", choices=("default", "schema"), default="default",
                    help="(a): the default options (no schema) or the explicit schema")
    ap.add_argument("--out", default=None, help="default: results/files.json "
                    "(files-csv.json for --format csv)")
    args = ap.parse_args(argv)
    global FORMAT, A_OPTIONS
    FORMAT, A_OPTIONS = args.format, args.a_options
    if args.out is None:
        args.out = str(Path(__file__).parent / "results" /
                       ("files.json" if FORMAT == "json" else f"files-{FORMAT}.json"))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from sparkmark.engine.spark import local_session
    spark = local_session("sparkmark-bench-files")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="sm-bench-files-"))
    results = []
    load_start = os.getloadavg()
    try:
        for n in sizes:
            r = bench_size(spark, n, args.runs, work, args.repeat)
            results.append(r)
            print(json.dumps(r), flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    header = (f"{'N':>8} {'new':>5} {'(a) sm s':>9} {'(b) lower s':>11} {'(b2) 1-call s':>13} "
              f"{'(c) stream s':>12} {'(d) full s':>10} {'a/b':>6} {'a/b2':>6} {'a2/b2':>6} "
              f"{'a/c':>6} {'state B':>8} {'ckpt B':>9}")
    print(header)
    for r in results:
        print(f"{r['n']:>8} {r['new']:>5} {r['a_sparkmark_s']:>9.3f} {r['b_lower_bound_s']:>11.3f} "
              f"{r['b2_lower_bound_one_call_s']:>13.3f} "
              f"{r['c_stream_s']:>12.3f} {r['d_full_reread_s']:>10.3f} {r['a_over_b']:>6.2f} "
              f"{r['a_over_b2']:>6.2f} {r['a2_over_b2']:>6.2f} {r['a_over_c']:>6.2f} "
              f"{r['state_bytes_after_runs']!s:>8} "
              f"{r['stream_checkpoint_bytes']:>9}")
    import platform

    import pyspark
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "cores": os.cpu_count(), "load_average_start": list(load_start),
               "load_average_end": list(os.getloadavg()), "python": platform.python_version(),
               "pyspark": pyspark.__version__, "spark": spark.version}
    out.write_text(json.dumps({"machine": machine, "format": FORMAT,
                               "a_options": A_OPTIONS, "sizes": sizes, "runs": args.runs,
                               "repeat": args.repeat,
                               "results": results}, indent=2) + "\n")
    print(f"saved {out}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
