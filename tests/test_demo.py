"""``sparkmark demo`` (part 1, file bookmarks) end to end in a temporary folder."""
from __future__ import annotations

import io
import re

from rich.console import Console

from sparkmark.ops.demo import JOB, run_demo
from sparkmark.state import open_store


def _run(directory) -> tuple[bool, str]:
    buf = io.StringIO()
    ok = run_demo(str(directory), Console(file=buf, width=140, color_system=None))
    return ok, buf.getvalue()


def test_demo_runs_the_bookmarked_job_passes_and_runs_again_with_state_from_the_environment(
        spark, tmp_path, sqlite_url, monkeypatch):
    """One demo run checked in full, then a second run in the same folder with
    SPARKMARK_STATE set (one test: the second needs the first's folder, and a demo run is the
    suite's costliest in-process job)."""
    monkeypatch.delenv("SPARKMARK_STATE", raising=False)
    ok, text = _run(tmp_path)
    assert ok, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("demo verdict: PASS") and "5/5 checks" in last
    # every run printed its files and rows, then the ledger
    for run in range(1, 5):
        assert f"run {run} at T = t0 + {10 * (run - 1)} min" in text
    assert re.search(r"orders_json\s*│\s*json\s*│\s*orders-003.json, orders-late.json\s*│\s*5",
                     text)
    assert "rows written: 23" in text and "ledger of job demo_orders" in text
    store = open_store(f"sqlite:///{tmp_path}/.sparkmark/state.db")
    runs = store.list_runs(job_name=JOB)
    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED", "EMPTY", "SUCCEEDED"]
    assert [r["records_written"] for r in runs] == [23, 7, 0, 7]
    out = spark.read.parquet(str(tmp_path / "output" / "orders"))
    assert out.count() == 37 and out.select("sm_run_id").distinct().count() == 3

    # again in the same folder, the state from the environment: a fresh store, PASS again
    monkeypatch.setenv("SPARKMARK_STATE", sqlite_url)
    ok, text = _run(tmp_path)
    assert ok, text
    assert len(open_store(sqlite_url).list_runs(job_name=JOB)) == 4
    # the first run's state database saw only its own four runs
    assert len(open_store(f"sqlite:///{tmp_path}/.sparkmark/state.db").list_runs(
        job_name=JOB)) == 4
