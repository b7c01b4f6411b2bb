"""Benchmark: listing and planning at large N, incremental listing off and on (not a test).

Layouts: ``flat`` (N files in one directory) and ``partitioned`` (P ``dt=`` partitions of N/P
files).  For each layout and ``incrementalListing`` off/on, in a fresh subprocess (so the peak
RSS is that scenario's alone):

  first run:        list + plan (band and late files) + element JSON, nothing committed before;
  incremental run:  0.1% new files (in 3 partitions, one an old one, when partitioned), the same
                    steps from the first run's element.

The read of the selected files by Spark is not included (a first run over 1,000,000 files is
Spark's own file index work; the incremental read is the P1 benchmark's, benchmarks/files.py).
Reported: seconds, directories listed ("list calls": one per directory with os.scandir),
files listed, late-file check, element bytes, driver (Python) peak RSS.  Prints a table and
writes benchmarks/results/listing.json.

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


def make(root: Path, layout: str, n: int, parts: int, mtime_ms: int) -> list[Path]:
    dirs = ([root] if layout == "flat" else
            [root / f"dt={dt.date(2020, 1, 1) + dt.timedelta(days=i)}" for i in range(parts)])
    per = n // len(dirs)
    ns = mtime_ms * 1_000_000
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        for i in range(per):
            p = d / f"f{i:07d}.json"
            with open(p, "w") as f:
                f.write('{"id": 1}\n')
            os.utime(p, ns=(ns, ns))
    return dirs


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
    out = {}
    element = None
    T = args.t0
    for phase in ("first", "incremental"):
        if phase == "incremental":
            dirs = sorted(p for p in root.iterdir() if p.is_dir()) or [root]
            targets = [dirs[0], dirs[-2], dirs[-1]] if len(dirs) > 3 else [root]
            k = max(1, args.n // 1000)
            for j in range(k):
                p = targets[j % len(targets)] / f"new{j:06d}.json"
                p.write_text('{"id": 2}\n')
                ms = T + 10 * MIN
                os.utime(p, ns=(ms * 1_000_000, ms * 1_000_000))
            T += 20 * MIN
            time.sleep(1.2)  # directory times fall behind the listing start margin
        t = time.perf_counter()
        previous = BandState.from_element(element)
        sketch = SettledSketch.from_element(previous.extra.get("late")) if previous else None
        prev_listing = ListingState.from_element(previous.extra.get("listing")) if previous \
            else None

        def decide(roots):
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
        element = json.loads(text)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    spark.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--layouts", default="flat,partitioned")
    ap.add_argument("--work", default=None)
    ap.add_argument("--scenario", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--root", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--incremental", default="false", help=argparse.SUPPRESS)
    ap.add_argument("--t0", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scenario:
        print(json.dumps(scenario(args)))
        return
    work = Path(args.work or tempfile.mkdtemp(prefix="sparkmark-listing-"))
    rows = []
    load = os.getloadavg()
    for layout in args.layouts.split(","):
        base = work / f"{layout}-{args.n}"
        t0 = int(time.time() * 1000)
        root = base
        t = time.perf_counter()
        make(root, layout, args.n, args.partitions, t0 - 24 * 60 * MIN)
        gen = time.perf_counter() - t
        for inc in ("false", "true"):
            for p in root.rglob("new*.json"):  # the previous scenario's new files
                p.unlink()
            time.sleep(1.2)
            proc = subprocess.run(
                [sys.executable, __file__, "--scenario", "1", "--root", str(root),
                 "--incremental", inc, "--n", str(args.n), "--t0", str(t0)],
                capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                raise SystemExit(1)
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append({"layout": layout, "n": args.n, "incrementalListing": inc,
                         "generate_s": round(gen, 1), **res})
        subprocess.run(["rm", "-rf", str(root)])
    print(f"load average at start: {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}; "
          f"cpus: {os.cpu_count()}")
    print("| layout | N | incrementalListing | first run s | first dirs listed | incremental "
          "run s | incr. listing | incr. dirs listed | incr. files listed | new read | "
          "late | element bytes | peak RSS MB |")
    print("| --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | "
          "---: |")
    for r in rows:
        f, i = r["first"], r["incremental"]
        print(f"| {r['layout']} | {r['n']:,} | {r['incrementalListing']} | {f['s']} | "
              f"{f['dirs_listed']:,} | {i['s']} | {i['listing']} | {i['dirs_listed']:,} | "
              f"{i['listed']:,} | {i['selected']:,} | {i['late_files']} | "
              f"{i['element_bytes']:,} | {r['peak_rss_mb']} |")
    out = Path(__file__).parent / "results" / "listing.json"
    out.write_text(json.dumps({"load_average": load, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
