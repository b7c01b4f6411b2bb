"""The Overwatch example declares the seed's module table, and the pipeline demo passes."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkmark.lifecycle.pipeline import load_pipeline_file

ROOT = Path(__file__).resolve().parents[1]
# shared/ sits beside the clone (in CI too); /work/shared is where it lives on a dev machine
SEED = next((p for p in (ROOT.parent / "shared" / "seeds" / "overwatch-etl-process.md",
                         Path("/work/shared/seeds/overwatch-etl-process.md")) if p.exists()),
            ROOT.parent / "shared" / "seeds" / "overwatch-etl-process.md")


def _seed_table():
    rows = {}
    for line in SEED.read_text().splitlines():
        m = re.match(r"^(\d{4})\|(\w+)\|(\w+)\|([\d,]*)\s*$", line.strip())
        if m:
            deps = tuple(int(x) for x in m.group(4).split(",") if x)
            rows[int(m.group(1))] = (m.group(2), m.group(3), deps)
    return rows


@pytest.mark.skipif(not SEED.exists(), reason="seed documents not present")
def test_overwatch_example_matches_the_seed(spark, tmp_path, sqlite_url, monkeypatch):
    monkeypatch.setenv("SPARKMARK_STATE", sqlite_url)
    monkeypatch.setenv("OVERWATCH_DATA", str(tmp_path))
    p = load_pipeline_file(ROOT / "examples" / "overwatch" / "pipeline.py")
    seed = _seed_table()
    assert len(seed) == 30
    got = {m.id: (m.name, Path(m.target).name, m.depends_on) for m in p.modules.values()}
    assert got == seed
    assert {m.layer for m in p.modules.values()} == {"bronze", "silver", "gold"}
    order = p.order()
    assert order.index(1004) < order.index(2011) < order.index(3003) < order.index(3015)


def test_pipeline_demo_passes(spark, tmp_path):
    pytest.importorskip("sparkmark.sources.files")
    from rich.console import Console

    from sparkmark.ops.pipeline_demo import run_pipeline_demo
    console = Console(record=True, width=200)
    assert run_pipeline_demo(tmp_path, console, spark) is True
    text = console.export_text()
    assert "ROLLED_BACK" in text and "pipeline demo verdict: PASS" in text
