"""The two generated Glue scripts from the seed documents, run as real scripts.

tests/glue_scripts/ holds them with only ``awsglue`` changed to ``sparkmark.glue``.  Each runs in
its own ``python script.py --JOB_NAME x --job-bookmark-option job-bookmark-enable`` process (no
Spark master configured: ``SparkContext()`` must work as in Glue), with SPARKMARK_STATE,
SPARKMARK_GLUE_CATALOG and SPARKMARK_PATH_MAP set, twice with new input in between; the second run
must process only the new input.  Each Spark start costs seconds, so there are few runs.
"""
from __future__ import annotations

import csv
import glob
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import sqlalchemy as sa

from sparkmark import Bookmarks
from sparkmark.ledger import ledger_rows

SCRIPTS = Path(__file__).parent / "glue_scripts"
ENABLE = ["--job-bookmark-option", "job-bookmark-enable"]


def run_script(script: str, argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items()
            if k not in ("PYSPARK_SUBMIT_ARGS", "PYSPARK_GATEWAY_PORT",
                         "PYSPARK_GATEWAY_SECRET", "SPARK_CONF_DIR", "MASTER")}
    full.update(env)
    full.setdefault("SPARKMARK_GLUE_MASTER", "local[1]")
    return subprocess.run([sys.executable, str(SCRIPTS / script), *argv], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=600)


def ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-4000:]}"


def json_rows_by_run(target: Path) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = defaultdict(list)
    for p in glob.glob(f"{target}/sm-*.json"):
        with open(p) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    out[r["sm_run_id"]].append((r["name"], r["number"]))
    return {k: sorted(v) for k, v in out.items()}


def test_s3_seed_script_twice_then_pause_from_to(tmp_path):
    state = f"sqlite:///{tmp_path / 'state.db'}"
    (tmp_path / "catalog.json").write_text(json.dumps(
        {"database.relatedqueries_csv": {"path": "s3://bucket/relatedqueries", "format": "csv"}}))
    (tmp_path / "paths.yaml").write_text("s3://bucket: lake\ns3://input_path: out\n")
    env = {"SPARKMARK_STATE": state, "SPARKMARK_GLUE_CATALOG": "catalog.json",
           "SPARKMARK_PATH_MAP": str(tmp_path / "paths.yaml")}
    src, out = tmp_path / "lake" / "relatedqueries", tmp_path / "out"
    src.mkdir(parents=True)
    (src / "part1.csv").write_text("glue bookmarks,10\nspark,20\n")  # headerless: col0, col1

    ok(run_script("s3_relatedqueries.py", ["--JOB_NAME", "x", *ENABLE], tmp_path, **env))
    bm = Bookmarks(state)
    r1 = bm.get("x")["RunId"]
    assert json_rows_by_run(out) == {r1: [("glue bookmarks", "10"), ("spark", "20")]}

    (src / "part2.csv").write_text("sparkmark,30\n")
    ok(run_script("s3_relatedqueries.py", ["--JOB_NAME", "x", *ENABLE], tmp_path, **env))
    r2 = bm.get("x")["RunId"]
    assert r2 != r1
    assert json_rows_by_run(out) == {r1: [("glue bookmarks", "10"), ("spark", "20")],
                                     r2: [("sparkmark", "30")]}  # only the new file
    version = bm.get("x")["Version"]

    # pause with Glue's from/to arguments: the input of the runs after r1 up to r2, no commit
    ok(run_script("s3_relatedqueries.py",
                  ["--JOB_NAME", "x", "--job-bookmark-option", "job-bookmark-pause",
                   "--job-bookmark-from", r1, "--job-bookmark-to", r2], tmp_path, **env))
    rows = json_rows_by_run(out)
    (r3,) = set(rows) - {r1, r2}
    assert rows[r3] == [("sparkmark", "30")]
    assert bm.get("x")["Version"] == version
    ledger = ledger_rows(state, job="x")
    assert [(r["status"], r["records_written"]) for r in ledger] == [
        ("SUCCEEDED", 2), ("SUCCEEDED", 1), ("SUCCEEDED", 1)]

    # the CLI rewinds to r1; a bad table name then fails the script with one clear line,
    # recorded FAILED by the script's exit hook, bookmark untouched
    cli = subprocess.run([sys.executable, "-m", "sparkmark.cli", "bookmark", "reset", "x",
                          "--run-id", r1], env={**os.environ, "SPARKMARK_STATE": state},
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    rewound = bm.get("x")
    (tmp_path / "catalog.json").write_text(json.dumps({}))
    bad = run_script("s3_relatedqueries.py", ["--JOB_NAME", "x", *ENABLE], tmp_path, **env)
    assert bad.returncode != 0
    assert "SourceError: table database.relatedqueries_csv is neither in the Spark catalog " \
           "nor in the catalog mapping" in bad.stderr
    last = ledger_rows(state, job="x")[-1]
    assert last["status"] == "FAILED" and "database.relatedqueries_csv" in last["error"]
    after = bm.get("x")
    assert (after["Version"], after["JobBookmark"]) == (rewound["Version"],
                                                        rewound["JobBookmark"])


EMP_DDL = """CREATE TABLE emp (
    empno NUMERIC(5,0) PRIMARY KEY, ename VARCHAR(20), job VARCHAR(20), mgr NUMERIC(5,0),
    hiredate TIMESTAMP, sal NUMERIC(7,2), comm NUMERIC(7,2), deptno NUMERIC(3,0),
    hrly_rate NUMERIC(38,0), photo VARCHAR(100), ssn NUMERIC(9,0))"""
EMP_INSERT = sa.text(
    "INSERT INTO emp VALUES (:empno, :ename, 'CLERK', 7902, '1980-12-17 00:00:00', 800.00, "
    "NULL, 20, 5, NULL, 123456789)")


@pytest.mark.postgres
def test_jdbc_seed_script_twice_on_postgresql(tmp_path, pg_server):
    name = f"glue_hr_{os.getpid()}"
    engine = sa.create_engine(pg_server.create_database(name))
    state = pg_server.create_database(f"glue_state_{os.getpid()}")
    with engine.begin() as c:
        c.execute(sa.text(EMP_DDL))
        for empno, ename in ((7369, "SMITH"), (7499, "ALLEN"), (7521, "WARD")):
            c.execute(EMP_INSERT, {"empno": empno, "ename": ename})
    (tmp_path / "catalog.yaml").write_text(
        "hr.emp:\n"
        f"  url: jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}\n"
        "  table: emp\n  driver: org.postgresql.Driver\n  user: postgres\n"
        "  password: unused-with-trust-auth\n")
    (tmp_path / "paths.json").write_text(json.dumps({"s3://hr": "hr-bucket"}))
    env = {"SPARKMARK_STATE": state, "SPARKMARK_GLUE_CATALOG": str(tmp_path / "catalog.yaml"),
           "SPARKMARK_PATH_MAP": str(tmp_path / "paths.json")}
    out = tmp_path / "hr-bucket" / "employees"

    def emp_by_run() -> dict[str, list[int]]:
        got: dict[str, list[int]] = defaultdict(list)
        for p in glob.glob(f"{out}/sm-*.csv"):
            with open(p, newline="") as f:
                for row in csv.DictReader(f):
                    got[row["sm_run_id"]].append(int(row["empno"]))
                    assert row["ename"] and row["hiredate"].startswith("1980-12-17")
                    assert row["sal"] == "800.00" and row["ssn"] == "123456789"
        return {k: sorted(v) for k, v in got.items()}

    ok(run_script("jdbc_hr_emp.py", ["--JOB_NAME", "hr-emp", *ENABLE], tmp_path, **env))
    bm = Bookmarks(state)
    r1 = bm.get("hr-emp")["RunId"]
    assert emp_by_run() == {r1: [7369, 7499, 7521]}
    assert bm.get("hr-emp")["JobBookmark"]["datasource0"]

    with engine.begin() as c:
        for empno, ename in ((7566, "JONES"), (7654, "MARTIN")):
            c.execute(EMP_INSERT, {"empno": empno, "ename": ename})
    ok(run_script("jdbc_hr_emp.py", ["--JOB_NAME", "hr-emp", *ENABLE], tmp_path, **env))
    r2 = bm.get("hr-emp")["RunId"]
    assert emp_by_run() == {r1: [7369, 7499, 7521], r2: [7566, 7654]}  # only the new rows
    assert [(r["status"], r["records_written"]) for r in ledger_rows(state, job="hr-emp")] == \
        [("SUCCEEDED", 3), ("SUCCEEDED", 2)]
    engine.dispose()
