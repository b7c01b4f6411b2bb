"""How fast the HTML run-history page opens, and how big it is, at 1,000 / 10,000 ledger rows.

    python benchmarks/report_html.py [--runs 1000,10000] [--repeat 3]

Seeds a SQLite state store with N module runs (8 modules of one pipeline, every status), writes
the page with ``sparkmark.ops.report_html.write_html_report`` and opens it in headless chromium
(Debian's ``chromium``) ``--repeat`` times.  "ready" is the page's own ``performance.now()``
(from navigation start) once every chart and the table are drawn; "chromium" is the whole
browser process, start-up included.  Goal: < 2 s to open and < 5 MB at 10,000 rows.
Prints a table and writes benchmarks/results/report_html.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def seed(url: str, n: int) -> None:
    from sparkmark.devtools.ledger import synthetic_runs
    from sparkmark.state import open_store
    from sparkmark.state.schema import runs as runs_table
    with open_store(url).tx("seeding") as conn:
        conn.execute(runs_table.insert(), synthetic_runs(n))


def open_page(chromium: str, page: Path) -> tuple[int, float]:
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--dump-dom", page.as_uri()]
    t = time.monotonic()
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    wall = time.monotonic() - t
    m = re.search(r'data-sm-ms="(\d+)"', dom)
    if m is None:
        raise SystemExit(f"the page did not finish drawing:\n{dom[:2000]}")
    return int(m.group(1)), wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium missing: apt-get install chromium")
    from sparkmark.ops.report_html import write_html_report
    results = []
    for n in (int(x) for x in a.runs.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/state.db"
            seed(url, n)
            page = Path(tmp) / "page.html"
            t = time.monotonic()
            write_html_report(str(page), url)
            write_s = time.monotonic() - t
            opens = [open_page(chromium, page) for _ in range(a.repeat)]
            ready = [ms for ms, _ in opens]
            results.append({"runs": n, "bytes": page.stat().st_size,
                            "write_s": round(write_s, 2), "ready_ms": ready,
                            "ready_ms_median": statistics.median(ready),
                            "chromium_s": [round(w, 2) for _, w in opens],
                            "goal_ms": 2000, "goal_bytes": 5_000_000})
    load = os.getloadavg()
    version = subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout
    print(f"machine: {os.cpu_count()} cores, load {load[0]:.1f}, Python "
          f"{platform.python_version()}, {version.strip()}")
    print(f"{'runs':>7} {'size MB':>8} {'write s':>8} {'ready ms (median)':>18} "
          f"{'chromium s':>11}  goal")
    for r in results:
        ok = r["ready_ms_median"] < 2000 and r["bytes"] < 5_000_000
        print(f"{r['runs']:>7,} {r['bytes'] / 1e6:>8.2f} {r['write_s']:>8.2f} "
              f"{r['ready_ms_median']:>18,.0f} {statistics.median(r['chromium_s']):>11.1f}  "
              f"{'met' if ok else 'MISSED'} (< 2,000 ms, < 5 MB)")
    out = ROOT / "benchmarks" / "results" / "report_html.json"
    out.write_text(json.dumps({"load_average": load, "cores": os.cpu_count(),
                               "results": results}, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
