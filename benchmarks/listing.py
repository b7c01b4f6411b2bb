"""Benchmark: listing and planning at large N, incremental listing off and on (not a test).

Layouts: ``flat`` (N files in one directory) and ``partitioned`` (P ``dt=`` partitions of N/P
files).  For each layout and ``incrementalListing`` off/on, in a fresh subprocess (so the peak
RSS is that scenario's alone):

  first run:        list + plan (band and late files) + element JSON, nothing committed before;
  incremental run:  0.1% new files (in 3 partitions, one an old one, when partitioned), the same
                    steps from the first run's element.

The read of the selected files by Spark is not included in these rows (the incremental read is
the P1 benchmark's, benchmarks/files.py).  The first run *as a whole* is compared with plain
Spark in ``first_run_vs_plain``: per layout, in one subprocess, alternating,
``--first-runs`` trials (best and median) of (a) a whole sparkmark first run (``Job.init``, the
listing, ``job.read.files`` with a schema and ``mode=PERMISSIVE``, a ``noop`` write, the commit
with its check of every file read and its per-file audit rows, on a SQLite store) and (b) plain
``spark.read.schema(...).json(<root>)`` with the same ``noop`` write; both warmed up on a small
directory first, with a 4 GB driver JVM.  Goal: (a) / (b) <= 1.10.  The first trial of (a)
also reports the driver Python process's peak RSS over its RSS before it, per listed file
(the whole run: listing, plan, Spark's root check, commit; goal <= 200 bytes).
Reported: seconds, directories listed ("list calls": one per directory with os.scandir),
files listed, late-file check, element bytes, and per phase the peak RSS of the driver's
Python process and of the driver JVM (VmHWM, reset between phases through
/proc/PID/clear_refs), next to their RSS before listing.  The files are empty (a million fit in
a tmpfs: /dev/shm by default) and their mtimes are their creation times.  Prints a table and
writes benchmarks/results/listing.json with the load average and versions.

    .venv/bin/python benchmarks/listing.py --n 1000000 --partitions 1000
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIN = 60_000


def make(root: Path, layout: str, n: int, parts: int) -> list[Path]:
    """Empty files (no data pages: a million of them fit in a tmpfs), created with
    ``os.open``/``os.close`` only; their mtimes are their creation times, spread over the
    generation (as files written over a period are)."""
    dirs = ([root] if layout == "flat" else
            [root / f"dt={dt.date(2020, 1, 1) + dt.timedelta(days=i)}" for i in range(parts)])
    per = n // len(dirs)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        base = str(d)
        for i in range(per):
            os.close(os.open(f"{base}/f{i:07d}.json", flags, 0o644))
    return dirs


def _hwm_mb(pid: int | str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _rss_mb(pid: int | str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _reset_hwm(pid: int | str) -> None:
    """Reset a process's peak RSS (Linux: write 5 to clear_refs), so each phase has its own."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass


def jvm_pid(spark) -> int | None:
    """The Spark driver JVM's pid (py4j launched it as this process's child)."""
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    return getattr(proc, "pid", None)


def scenario(args) -> dict:
    """One subprocess: first run, then add new files, then the incremental run."""
    from pyspark.sql import SparkSession

    from sparkmark.planning.bands import BandState, plan_band, split_options
    from sparkmark.planning.latefiles import SettledSketch, plan_late
    from sparkmark.planning.listing import ListingState, choose_listing
    from sparkmark.sources.files import list_inputs

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())
    root = Path(args.root)
    opts, _ = split_options({"incrementalListing": args.incremental})
    out: dict = {}
    state_file = Path(args.state)
    element = json.loads(state_file.read_text()) if args.phase == "incremental" else None
    T = args.t0 + (20 * MIN if args.phase == "incremental" else 0)
    jpid = jvm_pid(spark)
    from sparkmark.engine.fs import file_system
    fs = file_system(spark, str(root))  # warm: Hadoop's FileSystem classes load before timing
    fs.status_of(fs.qualify(str(root)))
    out["baseline_rss_mb"] = _rss_mb("self")
    out["jvm_baseline_rss_mb"] = _rss_mb(jpid) if jpid else None
    for phase in (args.phase,):
        _reset_hwm("self")
        if jpid:
            _reset_hwm(jpid)
        t = time.perf_counter()
        previous = BandState.from_element(element)
        sketch = SettledSketch.from_element(previous.extra.get("late")) if previous else None
        prev_listing = ListingState.from_element(previous.extra.get("listing")) if previous \
            else None

        def decide(roots, prev_listing=prev_listing, sketch=sketch):
            return (choose_listing(prev_listing, enabled=opts.incremental_listing, roots=roots,
                                   listing_ts=T, interval=opts.full_listing_interval,
                                   has_sketch=sketch is not None)[0], prev_listing)
        listing = list_inputs(spark, [str(root)], opts, decide=decide, listing_ts=T)
        t_list = time.perf_counter() - t
        plan = plan_band(listing.entries, previous, T, opts)
        late = plan_late(listing.entries, previous.low if previous else None, sketch,
                         previous.files if previous else {}, plan.selected, plan.state.low,
                         full=listing.mode == "full")
        extra = {**dict(plan.state.extra), "late": late.sketch.to_element()}
        if listing.state is not None:
            extra["listing"] = listing.state.to_element()
        element = BandState(low=plan.state.low, high=plan.state.high, listing_ts=T,
                            band=plan.state.band, files=plan.state.files,
                            extra=extra).to_element()
        text = json.dumps(element)
        out[phase] = {"s": round(time.perf_counter() - t, 3), "list_s": round(t_list, 3),
                      "listing": listing.mode, "dirs_listed": listing.dirs_listed,
                      "listed": len(listing.entries), "selected": len(plan.selected),
                      "late_files": late.count, "element_bytes": len(text)}
        del listing, plan, late
        state_file.write_text(text)
        out[phase]["peak_rss_mb"] = _hwm_mb("self")
        out[phase]["jvm_peak_rss_mb"] = _hwm_mb(jpid) if jpid else None
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    spark.stop()
    return out


def first_run_peer(args) -> dict:
    """One subprocess: ``--first-runs`` alternating trials of a whole sparkmark first run and
    plain Spark reading the same directory (see the module docstring)."""
    import statistics
    import tempfile as tf

    from pyspark.sql import SparkSession

    from sparkmark import Job
    # a driver JVM of 4 GB for both (docs/scale.md: Spark's file index of a million files
    # does not fit the default 1 GB heap next to the read)
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    work = Path(tf.mkdtemp(prefix="sm-first-"))
    state = f"sqlite:///{work}/state.db"
    offset = 20 * MIN  # the run's clock: 20 minutes after the files' mtimes (none in the band)

    def clock() -> int:
        return time.time_ns() // 1_000_000 + offset

    def ours(root: Path, name: str) -> float:
        t = time.perf_counter()
        job = Job(spark, state=state, clock=clock).init(
            name, {"job_bookmark_option": "job-bookmark-enable"})
        df = job.read.files(str(root), format="json", transformation_ctx="src",
                            options={"schema": "id BIGINT", "mode": "PERMISSIVE"})
        df.write.format("noop").mode("overwrite").save()
        job.commit()
        return time.perf_counter() - t

    def plain(root: Path) -> float:
        t = time.perf_counter()
        spark.read.schema("id BIGINT").json(str(root)).write.format("noop").mode(
            "overwrite").save()
        return time.perf_counter() - t

    warm = work / "warm"
    make(warm, "flat", 2_000, 1)
    for i in range(2):
        ours(warm, f"warm{i}")
        plain(warm)
    root = Path(args.root)
    a, b = [], []
    me = os.getpid()
    base_mb = _rss_mb(me)
    peak_mb = None
    for k in range(args.first_runs):
        if k % 2:
            b.append(plain(root))
            a.append(ours(root, f"first{k}"))
        else:
            if k == 0:  # the whole first run's driver peak: the first trial, nothing freed yet
                _reset_hwm(me)
            a.append(ours(root, f"first{k}"))
            if k == 0:
                peak_mb = _hwm_mb(me)
            b.append(plain(root))
    spark.stop()
    subprocess.run(["rm", "-rf", str(work)])
    return {"sparkmark_best_s": round(min(a), 3), "sparkmark_median_s": round(
                statistics.median(a), 3), "plain_best_s": round(min(b), 3),
            "plain_median_s": round(statistics.median(b), 3),
            "ratio_best": round(min(a) / min(b), 2),
            "ratio_median": round(statistics.median(a) / statistics.median(b), 2),
            "sparkmark_runs_s": [round(x, 3) for x in a], "plain_runs_s": [round(x, 3) for x in b],
            "driver_baseline_rss_mb": base_mb, "driver_peak_rss_mb_first_trial": peak_mb,
            "driver_bytes_per_listed_file": (round((peak_mb - base_mb) * 2**20 / args.n)
                                             if peak_mb and base_mb else None)}


def add_new_files(root: Path, n: int, t0: int) -> None:
    """0.1% new files, mtime = the first run's T + 10 minutes; partitioned: in the oldest
    partition and the two newest."""
    dirs = sorted(p for p in root.iterdir() if p.is_dir()) or [root]
    targets = [dirs[0], dirs[-2], dirs[-1]] if len(dirs) > 3 else [root]
    ms = t0 + 10 * MIN
    for j in range(max(1, n // 1000)):
        p = targets[j % len(targets)] / f"new{j:06d}.json"
        p.write_text('{"id": 2}\n')
        os.utime(p, ns=(ms * 1_000_000, ms * 1_000_000))
    time.sleep(1.2)  # directory times fall behind the listing start margin


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--layouts", default="flat,partitioned")
    ap.add_argument("--work", default=None, help="where the files go (default: a new "
                    "directory in /dev/shm when it exists, else the temp dir); removed after")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "listing.json"))
    ap.add_argument("--first-runs", type=int, default=7, help="trials of the whole first run "
                    "against plain Spark reading the directory (0: skip)")
    ap.add_argument("--scenario", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--phase", default="first", help=argparse.SUPPRESS)
    ap.add_argument("--state", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--root", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--incremental", default="false", help=argparse.SUPPRESS)
    ap.add_argument("--t0", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scenario:
        print(json.dumps(first_run_peer(args) if args.scenario == "first-peer"
                         else scenario(args)))
        return
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    work = Path(args.work or tempfile.mkdtemp(prefix="sparkmark-listing-", dir=shm))
    rows = []
    first_peer: dict = {}
    load = os.getloadavg()
    for layout in args.layouts.split(","):
        base = work / f"{layout}-{args.n}"
        root = base
        t = time.perf_counter()
        make(root, layout, args.n, args.partitions)
        gen = time.perf_counter() - t
        t0 = int(time.time() * 1000) + 20 * MIN  # the first run's T: 20 minutes later
        for inc in ("false", "true"):
            for p in root.rglob("new*.json"):  # the previous scenario's new files
                p.unlink()
            time.sleep(1.2)
            res = {}
            state = work / f"state-{layout}-{inc}.json"
            for phase in ("first", "incremental"):
                if phase == "incremental":
                    add_new_files(root, args.n, t0)
                proc = subprocess.run(
                    [sys.executable, __file__, "--scenario", "1", "--root", str(root),
                     "--incremental", inc, "--n", str(args.n), "--t0", str(t0),
                     "--phase", phase, "--state", str(state)],
                    capture_output=True, text=True)
                if proc.returncode != 0:
                    print(proc.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(1)
                one = json.loads(proc.stdout.strip().splitlines()[-1])
                res[phase] = {**one[phase], "baseline_rss_mb": one["baseline_rss_mb"],
                              "jvm_baseline_rss_mb": one["jvm_baseline_rss_mb"]}
            rows.append({"layout": layout, "n": args.n, "incrementalListing": inc,
                         "generate_s": round(gen, 1), **res})
        if args.first_runs > 0:
            for p in root.rglob("new*.json"):
                p.unlink()
            proc = subprocess.run([sys.executable, __file__, "--scenario", "first-peer",
                                   "--root", str(root), "--first-runs", str(args.first_runs),
                                   "--n", str(args.n)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                raise SystemExit(1)
            peer = json.loads(proc.stdout.strip().splitlines()[-1])
            first_peer[layout] = peer
            print(f"{layout}: first run, sparkmark {peer['sparkmark_median_s']} s vs plain "
                  f"{peer['plain_median_s']} s median: {peer['ratio_median']} (best "
                  f"{peer['ratio_best']}); whole first run's driver peak "
                  f"{peer['driver_peak_rss_mb_first_trial']} MB over "
                  f"{peer['driver_baseline_rss_mb']} MB: {peer['driver_bytes_per_listed_file']} "
                  "B per listed file", flush=True)
        subprocess.run(["rm", "-rf", str(root)])
        print(json.dumps(rows[-2:]), flush=True)
    if not args.work:
        subprocess.run(["rm", "-rf", str(work)])
    print(f"load average at start: {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}; "
          f"cpus: {os.cpu_count()}")
    print("| layout | N | incrementalListing | first run s | first dirs listed | first peak RSS "
          "MB (JVM) | incremental run s | incr. listing | incr. dirs listed | incr. files "
          "listed | new read | late | element bytes | incr. peak RSS MB (JVM) |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | "
          "---: | ---: |")
    for r in rows:
        f, i = r["first"], r["incremental"]
        print(f"| {r['layout']} | {r['n']:,} | {r['incrementalListing']} | {f['s']} | "
              f"{f['dirs_listed']:,} | {f['peak_rss_mb']} ({f['jvm_peak_rss_mb']}) | {i['s']} | "
              f"{i['listing']} | {i['dirs_listed']:,} | "
              f"{i['listed']:,} | {i['selected']:,} | {i['late_files']} | "
              f"{i['element_bytes']:,} | {i['peak_rss_mb']} ({i['jvm_peak_rss_mb']}) |")
    print(f"driver RSS before listing: {rows[0]['first']['baseline_rss_mb']} MB (JVM "
          f"{rows[0]['first']['jvm_baseline_rss_mb']} MB)")
    import platform

    import pyspark
    out = Path(args.out)
    machine = {"cores": os.cpu_count(), "load_average_start": list(load),
               "load_average_end": list(os.getloadavg()), "python": platform.python_version(),
               "pyspark": pyspark.__version__, "work": str(work)}
    out.write_text(json.dumps({"machine": machine, "load_average": load, "rows": rows,
                               "first_run_vs_plain": {"n": args.n, "trials": args.first_runs,
                                                      "goal_ratio_max": 1.10, **first_peer}},
                              indent=1))


if __name__ == "__main__":
    main()
