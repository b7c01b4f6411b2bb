"""The scheduler extras stay optional: ``import sparkmark`` (and the CLI) never imports Airflow
or Dagster, and the Pipes reporter needs neither (a no-op when Dagster did not launch us)."""
from __future__ import annotations

import subprocess
import sys


def test_import_sparkmark_imports_no_scheduler():
    code = ("import sys, sparkmark, sparkmark.ops.cli, sparkmark.ops.pending; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('airflow', 'dagster')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_report_to_pipes_is_a_no_op_without_pipes(monkeypatch):
    from sparkmark.integrations.dagster_pipes import report_to_pipes
    monkeypatch.delenv("DAGSTER_PIPES_CONTEXT", raising=False)
    assert report_to_pipes({"run_id": "r1", "status": "SUCCEEDED", "job_name": "j"}) is False
