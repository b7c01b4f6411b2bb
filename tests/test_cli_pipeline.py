"""`sparkmark run / report / rollback` as a user runs them: real subprocesses, real exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SPARKMARK = str(Path(sys.executable).with_name("sparkmark"))

PIPELINE = textwrap.dedent("""
    import os
    from sparkmark import Pipeline
    from sparkmark.engine.spark import local_session

    BASE = os.environ["CLIP_DATA"]
    p = Pipeline("clip", local_session("cli-test", cores=1), primordial_date="2024-01-01",
                 max_days_to_load=2)

    @p.module(id=1, name="Bronze_Numbers", layer="bronze", target=BASE + "/bronze")
    def bronze(ctx):
        if os.environ.get("CLIP_FAIL_BRONZE"):
            raise RuntimeError("bronze broke on purpose")
        return ctx.spark.range(3).selectExpr("id", f"{ctx.from_ts} AS window_from")

    @p.module(id=2, name="Silver_Numbers", layer="silver", target=BASE + "/silver",
              depends_on=[1])
    def silver(ctx):
        if os.environ.get("CLIP_FAIL"):
            raise RuntimeError("silver broke on purpose")
        return ctx.spark.range(2)
""")


@pytest.fixture
def env(tmp_path):
    (tmp_path / "pipe.py").write_text(PIPELINE)
    (tmp_path / "nopipe.py").write_text("x = 1\n")
    e = dict(os.environ, CLIP_DATA=str(tmp_path / "data"),
             SPARKMARK_STATE=f"sqlite:///{tmp_path}/state.db")
    return tmp_path, e


def sm(env, *args, **extra):
    tmp, e = env
    return subprocess.run([SPARKMARK, *args], capture_output=True, text=True, cwd=tmp,
                          env={**e, **extra}, timeout=300)


def report(env):
    res = sm(env, "report", "--pipeline", "clip", "--format", "json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def one_line_error(res, needle):
    assert res.returncode == 2, (res.stdout[-2000:], res.stderr[-2000:])
    assert "Traceback" not in res.stderr
    assert "error:" in res.stderr and needle in res.stderr, res.stderr


def test_run_report_rollback_from_the_command_line(env):
    failed = sm(env, "run", "pipe.py", CLIP_FAIL="1")
    assert failed.returncode == 1, failed.stderr  # a FAILED module fails the command
    assert [(r["module_id"], r["status"]) for r in report(env)] == [(1, "SUCCEEDED"),
                                                                    (2, "FAILED")]
    ok = sm(env, "run", "pipe.py", "--module", "2")  # --module: the same option as --modules
    assert ok.returncode == 0, ok.stderr
    rows = report(env)
    assert [(r["module_id"], r["status"]) for r in rows][-1] == (2, "SUCCEEDED")
    assert all(isinstance(r["config"], dict) for r in rows), rows  # an object, not a string
    assert "silver broke on purpose" in rows[1]["error"]

    csv_out = sm(env, "report", "--pipeline", "clip", "--format", "csv", "--last", "1")
    assert csv_out.returncode == 0 and len(csv_out.stdout.strip().splitlines()) == 2
    table = sm(env, "report", "--module", "1")
    assert table.returncode == 0 and "Bronze_Numbers" in table.stdout
    both = sm(env, "report", "--modules", "1,2", "--format", "json")
    assert both.returncode == 0 and json.loads(both.stdout) == json.loads(
        sm(env, "report", "--module", "1", "--module", "2", "--format", "json").stdout)
    assert [r["module_id"] for r in json.loads(both.stdout)] == [1, 2, 2]
    one = json.loads(sm(env, "report", "--modules", "2", "--format", "json").stdout)
    assert [r["module_id"] for r in one] == [2, 2]

    dry = sm(env, "rollback", "pipe.py", "--modules", "1,2", "--since", "2024-01-01",
             "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert report(env) == rows  # a dry run changes nothing
    real = sm(env, "rollback", "pipe.py", "--module", "1", "--module", "2", "--since",
              "2024-01-01")
    assert real.returncode == 0, real.stderr
    statuses = [r["status"] for r in report(env)]
    assert statuses == ["ROLLED_BACK", "FAILED", "ROLLED_BACK"]


def test_skipped_by_a_failed_dependency_exits_non_zero(env):
    """A scheduler running --layers silver on its own must not see green while nothing moves."""
    bronze = sm(env, "run", "pipe.py", "--layers", "bronze", CLIP_FAIL_BRONZE="1")
    assert bronze.returncode == 1, bronze.stderr
    silver = sm(env, "run", "pipe.py", "--layers", "silver")
    assert silver.returncode == 1, (silver.stdout, silver.stderr)
    assert "SKIPPED" in silver.stdout
    assert [(r["module_id"], r["status"]) for r in report(env)] == [(1, "FAILED"),
                                                                    (2, "SKIPPED")]
    fixed = sm(env, "run", "pipe.py")
    assert fixed.returncode == 0, fixed.stderr


def test_pipeline_cli_errors(env):
    one_line_error(sm(env, "run", "nopipe.py"), "defines no Pipeline")
    one_line_error(sm(env, "run", "missing.py"), "missing.py")
    one_line_error(sm(env, "rollback", "pipe.py", "--module", "1"), "exactly one of --since")
    one_line_error(sm(env, "rollback", "pipe.py", "--since", "2024-01-01"), "--modules")
    one_line_error(sm(env, "report", "--modules", "1,x"), "comma-separated")
    one_line_error(sm(env, "report", "--format", "xml"), "unknown --format")
    one_line_error(sm(env, "report", "--last", "0"), "--last must be")
    one_line_error(sm(env, "run", "pipe.py", "--modules", "1,x"), "comma-separated")
    one_line_error(sm(env, "rollback", "pipe.py", "--module", "99", "--since", "2024-01-01"),
                   "99")
    one_line_error(sm(env, "rollback", "pipe.py", "--module", "1", "--since", "yesterday-ish"),
                   "yesterday-ish")
