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
import time
from collections import defaultdict
from pathlib import Path

import pytest
import sqlalchemy as sa

from sparkmark import Bookmarks
from sparkmark.state.ledger import ledger_rows

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
                    r = json.loads(line)  # Glue's schema: the run is in the file name
                    out[run_of(p)].append((r["name"], r["number"]))
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
    cli = subprocess.run([sys.executable, "-m", "sparkmark.ops.cli", "bookmark", "reset", "x",
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
                    got[run_of(p)].append(int(row["empno"]))
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


# ---------------------------------------------------------------------- scripts shaped like
# public Glue jobs (console-generated, Glue Studio, hand-written), several per process
def run_plan(tmp_path: Path, items: list[dict], env: dict[str, str], tag: str) -> dict:
    """Run scripts through tests/glue_scripts/runner.py: one process, one JVM, for all."""
    plan, results = tmp_path / f"plan-{tag}.json", tmp_path / f"results-{tag}.json"
    plan.write_text(json.dumps({"scripts": [
        {**i, "script": str(SCRIPTS / i["script"])} for i in items]}))
    proc = run_script("runner.py", [str(plan), str(results)], tmp_path, **env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(results.read_text())


def failed(results: dict) -> str:
    """The scripts that failed, and the end of the first one's error (the scripts share one JVM,
    so the first failure is usually the cause of the others): what an assertion message needs,
    short enough that a CI log's excerpt keeps the cause."""
    bad = [k for k, v in results.items() if v["code"]]
    if not bad:
        return "no script failed"
    return f"failed: {bad}; {bad[0]} ended with:\n" + str(results[bad[0]].get("error", ""))[-2500:]


def run_of(path: str) -> str | None:
    """The run id in a published file's name ``sm-<run_id>-part-...`` (None: a plain file)."""
    name = os.path.basename(path)
    return name.split("-")[1] if name.startswith("sm-") else None


def rows_by_run(target: Path, fmt: str) -> dict[str | None, list[dict]]:
    """Every row under ``target`` (partition folders included), grouped by the writing run."""
    import pyarrow.orc as orc
    import pyarrow.parquet as pq
    out: dict[str | None, list[dict]] = defaultdict(list)
    for p in sorted(glob.glob(f"{target}/**/*", recursive=True)):
        name = os.path.basename(p)
        if os.path.isdir(p) or name.startswith((".", "_")) or "/_" in p[len(str(target)):]:
            continue
        parts = {k: v for k, _, v in (seg.partition("=") for seg in
                                      os.path.relpath(p, target).split(os.sep)[:-1]) if v}
        if fmt == "json":
            with open(p) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        elif fmt == "csv":
            with open(p, newline="") as f:
                rows = list(csv.DictReader(f))
        elif fmt == "parquet":
            rows = pq.read_table(p).to_pylist()
        else:
            rows = orc.read_table(p).to_pylist()
        out[run_of(p)] += [{**r, **parts} for r in rows]
    return dict(out)


def _lines(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _first_input(lake: Path, out: Path) -> None:
    _text(lake / "orders" / "part1.csv", "1,ann,10.5,\n2,bob,20,\n")
    _lines(lake / "events" / "a.json", [
        {"event_id": "e1", "user": "u1", "value": 5, "day": "2024-01-01"},
        {"event_id": "e2", "user": "u2", "value": 6, "day": "2024-01-02"}])
    _lines(lake / "shop_orders" / "a.json", [{"order_id": 1, "customer_id": 10, "total": 5.0},
                                            {"order_id": 2, "customer_id": 11, "total": 7.5}])
    _lines(lake / "shop_customers" / "a.json", [{"id": 10, "name": "ann"},
                                               {"id": 11, "name": "bob"}])
    _lines(lake / "events_fm" / "a.json", [
        {"id": 1, "status": "ok", "amount": 1.5, "debug": "x", "meta": {"customer": "ann"}},
        {"id": 2, "status": "bad", "amount": 2.0, "debug": "y", "meta": {"customer": "bob"}},
        {"id": 3, "status": "ok", "amount": 0.0, "debug": "z", "meta": {"customer": "cy"}}])
    _lines(lake / "medicare" / "a.json", [
        {"drg definition": "039", "provider id": 10001, "provider name": "A",
         "average covered charges": "$100.5"},
        {"drg definition": "057", "provider id": "bad1", "provider name": "B",
         "average covered charges": "$20"}])
    _lines(lake / "persons" / "a.json", [
        {"id": "p1", "name": "Ann", "other": {"twitter": "@ann"},
         "contact_details": [{"type": "email", "value": "a@x"}, {"type": "fax", "value": "1"}]}])
    _lines(lake / "memberships" / "a.json", [{"person_id": "p1", "organization_id": "o1",
                                             "role": "member"}])
    _lines(lake / "organizations" / "o.json", [{"id": "o1", "name": "Senate",
                                               "classification": "chamber"}])
    _text(lake / "readings" / "a.csv", "sensor;celsius\ns1;20.5\n")
    _lines(lake / "accounts" / "a.json", [{"account_id": 1, "balance": 500, "owner": "ann"},
                                         {"account_id": 2, "balance": 2000, "owner": "bob"}])
    _lines(lake / "corrections" / "a.json", [{"account_id": 1, "balance": 1500}])
    _lines(lake / "webhooks" / "a.json", [{"hook_id": "h1",
                                          "payload": json.dumps({"user": "ann", "clicks": 3})}])
    _text(lake / "countries" / "c.csv", "code,country_name\nDE,Germany\nFR,France\n")
    _lines(lake / "sales" / "a.json", [{"sale_id": 1, "country": "DE", "amount": "10.50"}])
    _lines(lake / "applogs" / "a.json", [{"level": "ERROR", "msg": "boom"},
                                        {"level": "INFO", "msg": "fine"}])
    _text(lake / "transfers" / "a.csv", "id,amount\n1,10.5\n2,x\n")
    # housekeeping targets of purge_and_load.py
    two_hours_ago = time.time() - 2 * 3600
    _text(out / "scratch" / "old.tmp", "old")
    os.utime(out / "scratch" / "old.tmp", (two_hours_ago, two_hours_ago))
    _text(out / "scratch" / "fresh.tmp", "fresh")
    _text(out / "exports" / "e1.csv", "a\n1\n")


def _second_input(lake: Path) -> None:
    _text(lake / "orders" / "part2.csv", "3,cy,7.25,\n")
    _lines(lake / "events" / "b.json", [{"event_id": "e3", "user": "u3", "value": 7,
                                         "day": "2024-01-02"}])
    _lines(lake / "shop_orders" / "b.json", [{"order_id": 3, "customer_id": 12, "total": 1.0}])
    _lines(lake / "shop_customers" / "b.json", [{"id": 12, "name": "cy"}])
    _lines(lake / "events_fm" / "b.json", [
        {"id": 4, "status": "ok", "amount": 3.25, "debug": "w", "meta": {"customer": "di"}}])
    _lines(lake / "medicare" / "b.json", [
        {"drg definition": "064", "provider id": 10005, "provider name": "C",
         "average covered charges": "$7"}])
    _lines(lake / "persons" / "b.json", [
        {"id": "p2", "name": "Bob", "other": {"twitter": "@bob"},
         "contact_details": [{"type": "email", "value": "b@x"}]}])
    _lines(lake / "memberships" / "b.json", [{"person_id": "p2", "organization_id": "o1",
                                             "role": "chair"}])
    _text(lake / "readings" / "b.csv", "sensor;celsius\ns2;21\n")
    _lines(lake / "accounts" / "b.json", [{"account_id": 3, "balance": 10, "owner": "cy"}])
    _lines(lake / "webhooks" / "b.json", [{"hook_id": "h2",
                                          "payload": json.dumps({"user": "bob", "clicks": 5})}])
    _lines(lake / "sales" / "b.json", [{"sale_id": 2, "country": "FR", "amount": "3.10"}])
    _lines(lake / "applogs" / "b.json", [{"level": "ERROR", "msg": "again"}])
    _text(lake / "transfers" / "b.csv", "id,amount\n3,4\n")


FILE_CATALOG = {
    "sales.orders_csv": {"path": "s3://lake/orders", "format": "csv", "columns": [
        {"Name": "order_id", "Type": "bigint"}, {"Name": "customer", "Type": "string"},
        {"Name": "amount", "Type": "double"}, {"Name": "note", "Type": "string"}]},
    "shop.orders_json": {"path": "s3://lake/shop_orders", "format": "json"},
    "shop.customers_json": {"path": "s3://lake/shop_customers", "format": "json"},
    "payments.medicare": {"path": "s3://lake/medicare", "format": "json"},
    "legislators.persons_json": {"path": "s3://lake/persons", "format": "json"},
    "legislators.memberships_json": {"path": "s3://lake/memberships", "format": "json"},
    "legislators.organizations_json": {"path": "s3://lake/organizations", "format": "json"},
    "scratch.exports": {"path": "s3://out/exports", "format": "csv"},
    "ingest.webhooks": {"path": "s3://lake/webhooks", "format": "json"},
    "shop.sales": {"path": "s3://lake/sales", "format": "json", "columns": [
        {"Name": "sale_id", "Type": "bigint"}, {"Name": "country", "Type": "string"},
        {"Name": "amount", "Type": "decimal(10,2)"}]},
    "payments.transfers_csv": {"path": "s3://lake/transfers", "format": "csv",
                               "format_options": {"withHeader": True}},
}
FILE_SCRIPTS = [  # (name, script, extra argv, extra env)
    ("console_orders", "console_csv_choice.py", [], {}),
    ("studio_events", "studio_getsink.py", [], {}),
    ("studio_join", "studio_join.py", [], {}),
    ("filter_map", "handwritten_filter_map.py",
     ["--input_path", "s3://lake/events_fm/", "--output_path", "s3://out/filter_map/"], {}),
    ("medicare", "handwritten_medicare.py", [], {"SPARKMARK_GLUE_STAMP": "1"}),
    ("legislators", "relationalize_legislators.py", ["--TempDir", "s3://out/tmp/"], {}),
    ("purge", "purge_and_load.py", [], {}),
    ("merge", "merge_split.py", [], {}),
    ("unbox", "unbox_unnest.py", [], {}),
    ("before_init", "read_before_init.py", [], {}),
]


def shaped_items(names: set[str] | None = None) -> list[dict]:
    """The runner's plan: every Glue-shaped script (or those of ``names``), and the no-commit
    and no-job cases."""
    items = [{"name": n, "script": s, "argv": ["--JOB_NAME", n, *ENABLE, *argv], "env": e}
             for n, s, argv, e in FILE_SCRIPTS]
    items += [{"name": "no_commit_enabled", "script": "no_commit.py",
               "argv": ["--JOB_NAME", "no_commit_enabled", *ENABLE]},
              {"name": "no_commit_disabled", "script": "no_commit.py",
               "argv": ["--JOB_NAME", "no_commit_disabled"]},
              {"name": "no_job", "script": "examples_no_job.py", "argv": []}]
    assert names is None or names <= {i["name"] for i in items}, names  # no misspelt case
    return [i for i in items if names is None or i["name"] in names]


#: the scripts the S3 run takes by default (SPARKMARK_TEST_GLUE_S3=all: every one): a catalog
#: read and a parquet write, getSink's partitioned write with its catalog update, plain s3://
#: argv paths, purge_s3_path, a split into two targets, a run without commit, no job at all.
#: The local run takes all of them (in the last CI run: 101 s for all on local disk, 197 s on S3)
GLUE_S3_SUBSET = {"console_orders", "studio_events", "filter_map", "purge", "merge",
                  "no_commit_enabled", "no_job"}


@pytest.mark.timeout(2400)  # 26 script runs in two processes; slow on a loaded machine
def test_glue_shaped_scripts_twice_only_new_input(tmp_path):
    lake, out = tmp_path / "lake", tmp_path / "out"
    state = f"sqlite:///{tmp_path / 'state.db'}"
    (tmp_path / "catalog.json").write_text(json.dumps(FILE_CATALOG))
    (tmp_path / "paths.json").write_text(json.dumps({"s3://lake": str(lake),
                                                     "s3://out": str(out)}))
    env = {"SPARKMARK_STATE": state, "SPARKMARK_GLUE_CATALOG": str(tmp_path / "catalog.json"),
           "SPARKMARK_PATH_MAP": str(tmp_path / "paths.json")}
    items = shaped_items()
    _first_input(lake, out)
    first = run_plan(tmp_path, items, env, "1")
    assert {k: v["code"] for k, v in first.items() if v["code"]} == {}, failed(first)
    # purge_and_load.py: only the file older than an hour went; the exports table is emptied
    assert sorted(os.listdir(out / "scratch")) == ["fresh.tmp"]
    assert not [f for f in os.listdir(out / "exports") if not f.startswith(".")]
    _second_input(lake)
    second = run_plan(tmp_path, items, env, "2")
    assert {k: v["code"] for k, v in second.items() if v["code"]} == {}, failed(second)
    check_shaped_outputs(tmp_path)


@pytest.mark.timeout(2400)
@pytest.mark.skipif(os.environ.get("SPARKMARK_TEST_GLUE_S3", "1") == "0",
                    reason="SPARKMARK_TEST_GLUE_S3=0 (make test35: the Glue scripts on S3 run "
                           "on Spark 4; Spark 3.5's S3 paths are covered by tests/test_s3_*.py)")
def test_glue_shaped_scripts_on_s3_straight_to_the_endpoint(tmp_path, s3_server):
    """The same scripts (those of GLUE_S3_SUBSET; SPARKMARK_TEST_GLUE_S3=all: every one) with
    their ``s3://`` paths sent to an S3 server (moto, its own, since the scripts name the buckets
    ``lake`` and ``out``): no path map, only spark-defaults.conf with the s3a connector and the
    endpoint, as a cluster would have it.  The inputs are uploaded,
    the outputs downloaded afterwards and checked like the local ones."""
    from sparkmark.devtools.s3 import Bucket, s3a_session_conf, start_moto
    server = start_moto()
    try:
        lake, out = Bucket(server, "lake"), Bucket(server, "out")
        state = f"sqlite:///{tmp_path / 'state.db'}"
        (tmp_path / "catalog.json").write_text(json.dumps(FILE_CATALOG))
        conf_dir = tmp_path / "conf"
        conf_dir.mkdir()
        (conf_dir / "spark-defaults.conf").write_text("".join(
            f"{k} {v}\n" for k, v in {**s3a_session_conf(), **server.spark_conf()}.items()))
        env = {"SPARKMARK_STATE": state, "SPARKMARK_GLUE_CATALOG": str(tmp_path / "catalog.json"),
               "SPARK_CONF_DIR": str(conf_dir), "SPARK_LOCAL_IP": "127.0.0.1"}
        names = None if os.environ.get("SPARKMARK_TEST_GLUE_S3") == "all" else GLUE_S3_SUBSET
        items = shaped_items(names)
        local = tmp_path / "local"

        sent: set[Path] = set()

        def upload() -> None:  # what is new under local/ since the last upload
            for p in sorted(set(local.rglob("*")) - sent):
                if p.is_file():
                    bucket = lake if p.relative_to(local).parts[0] == "lake" else out
                    bucket.put("/".join(p.relative_to(local).parts[1:]), p.read_bytes())
                    sent.add(p)

        _first_input(local / "lake", local / "out")
        upload()
        first = run_plan(tmp_path, items, env, "1")
        assert {k: v["code"] for k, v in first.items() if v["code"]} == {}, failed(first)
        # purge_and_load.py: on S3 both scratch objects are minutes old (an upload cannot be
        # back-dated): retentionPeriod 1 (hour) keeps both; the exports table is emptied
        assert sorted(out.keys("scratch/")) == ["scratch/fresh.tmp", "scratch/old.tmp"]
        assert [k for k in out.keys("exports/") if not k.endswith("/")] == []
        _second_input(local / "lake")
        upload()
        second = run_plan(tmp_path, items, env, "2")
        assert {k: v["code"] for k, v in second.items() if v["code"]} == {}, failed(second)
        for key in out.keys():
            if not key.endswith("/"):
                _text(tmp_path / "out" / key, "")
                (tmp_path / "out" / key).write_bytes(out.get(key))
        assert server.requests("LIST") > 0  # the scripts really listed this server
    finally:
        server.stop()
    check_shaped_outputs(tmp_path, names)


def check_shaped_outputs(tmp_path: Path, names: set[str] | None = None) -> None:
    """What the two runs of the Glue-shaped scripts (those of ``names``, default all) must have
    left behind."""
    out, state = tmp_path / "out", f"sqlite:///{tmp_path / 'state.db'}"

    def want(name: str) -> bool:
        return names is None or name in names

    def runs(job: str) -> list[str]:
        rows = ledger_rows(state, job=job)
        assert [r["status"] for r in rows] == ["SUCCEEDED", "SUCCEEDED"], rows
        return [r["run_id"] for r in rows]

    def by_run(job: str, target: str, fmt: str, key) -> list[list]:
        r1, r2 = runs(job)
        got = rows_by_run(out / target, fmt)
        assert set(got) == {r1, r2}, (job, sorted(got))
        return [sorted(key(r) for r in got[r1]), sorted(key(r) for r in got[r2])]

    if want("console_orders"):
        # console-generated: catalog types applied, note (all null) dropped, only new orders
        r1, r2 = runs("console_orders")
        got = rows_by_run(out / "console_orders", "parquet")
        assert sorted(got[r1][0]) == ["amount", "customer", "order_id"]  # Glue's schema, no sm_
        assert sorted((r["order_id"], r["customer"], r["amount"]) for r in got[r1]) == \
            [(1, "ann", 10.5), (2, "bob", 20.0)]
        assert [(r["order_id"], r["amount"]) for r in got[r2]] == [(3, 7.25)]
    if want("studio_events"):
        # Glue Studio getSink: partitioned by day, exactly once, catalog entry with columns
        assert by_run("studio_events", "events", "parquet",
                      lambda r: (r["event_id"], r["user_name"], r["value"], r["day"])) == [
            [("e1", "u1", 5, "2024-01-01"), ("e2", "u2", 6, "2024-01-02")],
            [("e3", "u3", 7, "2024-01-02")]]
        entry = json.loads((tmp_path / "catalog.json").read_text())["analytics.events"]
        assert entry["format"] == "parquet" and entry["partition_keys"] == ["day"]
        assert entry["columns"] == [{"Name": "event_id", "Type": "string"},
                                    {"Name": "user_name", "Type": "string"},
                                    {"Name": "value", "Type": "int"},
                                    {"Name": "day", "Type": "string"}]
    if want("studio_join"):
        assert by_run("studio_join", "order_customers", "csv",
                      lambda r: (r["order_id"], r["c_name"])) == [[("1", "ann"), ("2", "bob")],
                                                                  [("3", "cy")]]
    if want("filter_map"):
        assert by_run("filter_map", "filter_map", "json", lambda r: tuple(sorted(r.items()))) == [
            [(("amount", 1.5), ("amount_cents", 150), ("customer", "ANN"), ("id", 1),
              ("status", "ok"))],
            [(("amount", 3.25), ("amount_cents", 325), ("customer", "DI"), ("id", 4),
              ("status", "ok"))]]
    if want("medicare"):
        # medicare (stamped on request): cast, make_cols / make_struct where the values are mixed
        r1, r2 = runs("medicare")
        nested = rows_by_run(out / "medicare" / "nested", "json")
        assert [(r["provider"]["id"], r["charges"]["covered"], r["sm_run_id"])
                for r in nested[r1]] == [(10001, 100.5, r1)]
        assert [r["provider"]["id"] for r in nested[r2]] == [10005]
        cols = rows_by_run(out / "medicare" / "make_cols", "json")
        assert sorted(((r.get("provider id_int"), r.get("provider id_string")) for r in cols[r1]),
                      key=str) == [(10001, None), (None, "bad1")]
        assert [r["provider id"] for r in cols[r2]] == [10005]  # all numbers: a long, unchanged
        struct = rows_by_run(out / "medicare" / "make_struct", "json")
        assert sorted(json.dumps(r["provider id"], sort_keys=True) for r in struct[r1]) == \
            ['{"int": 10001}', '{"string": "bad1"}']
    if want("legislators"):
        # relationalize: root and the contact_details table, new person only in run 2
        r1, r2 = runs("legislators")
        root = rows_by_run(out / "legislators" / "hist_root", "json")
        assert [(r["name"], r["org_name"], r["other.twitter"]) for r in root[r1]] == \
            [("Ann", "Senate", "@ann")]
        assert [(r["name"], r["role"]) for r in root[r2]] == [("Bob", "chair")]
        details = rows_by_run(out / "legislators" / "hist_root_contact_details", "json")
        assert sorted(r["contact_details.val.type"] for r in details[r1]) == ["email", "fax"]
        assert [r["contact_details.val.value"] for r in details[r2]] == ["b@x"]
        assert root[r1][0]["contact_details"] == details[r1][0]["id"]
    if want("purge"):
        assert by_run("purge", "readings", "csv", lambda r: (r["sensor"], r["celsius"])) == [
            [("s1", "20.5")], [("s2", "21.0")]]
    if want("merge"):
        assert by_run("merge", "accounts/money", "csv",
                      lambda r: (r["account_id"], r["balance"])) == [[("1", "1500"), ("2", "2000")],
                                                                     [("3", "10")]]
        small = rows_by_run(out / "accounts" / "small", "json")
        assert [r["account_id"] for rows in small.values() for r in rows] == [3]
    if want("unbox"):
        assert by_run("unbox", "webhooks", "csv",
                      lambda r: (r["hook_id"], r["user"], r["clicks"])) == [[("h1", "ann", "3")],
                                                                            [("h2", "bob", "5")]]
    if want("before_init"):
        assert by_run("before_init", "sales_by_country", "orc",
                      lambda r: (r["sale_id"], r["country_name"], str(r["amount"]))) == [
            [(1, "Germany", "10.50")], [(2, "France", "3.10")]]

    if want("no_commit_enabled"):
        # no job.commit(): with a bookmarked source that staged state, FAILED and nothing kept
        # (both runs read everything again: the bookmark never moved); with bookmarks disabled,
        # SUCCEEDED with a note and the output kept
        failed = ledger_rows(state, job="no_commit_enabled")
        assert [r["status"] for r in failed] == ["FAILED", "FAILED"]
        assert "without job.commit()" in failed[0]["error"] and "'logs'" in failed[0]["error"]
    if want("no_commit_disabled"):
        kept = ledger_rows(state, job="no_commit_disabled")
        assert [r["status"] for r in kept] == ["SUCCEEDED", "SUCCEEDED"]
        assert all(json.loads(r["config"])["note"] == "not committed: bookmark unchanged"
                   for r in kept)
        errors = rows_by_run(out / "applog_errors", "json")
        assert {k: sorted(r["msg"] for r in v) for k, v in errors.items()} == {
            kept[0]["run_id"]: ["boom"], kept[1]["run_id"]: ["again", "boom"]}
    if want("no_job"):
        # no Job at all (AWS's examples/): plain appends, Glue's schema, everything each run
        plain = rows_by_run(out / "transfers_parquet", "parquet")
        assert list(plain) == [None]
        assert sorted((r["id"], r["amount"]) for r in plain[None]) == [
            ("1", 10.5), ("1", 10.5), ("2", None), ("2", None), ("3", 4.0)]


@pytest.mark.postgres
def test_jdbc_connections_script_twice_on_postgresql(tmp_path, pg_server):
    """extract_jdbc_conf, a hash-partitioned plain read before job.init, a bookmarked
    from_options read, from_jdbc_conf and connectionName writes, a catalog table through a
    connection with its password from an env var."""
    name = f"glue_shop_{os.getpid()}"
    engine = sa.create_engine(pg_server.create_database(name))
    state = pg_server.create_database(f"glue_shop_state_{os.getpid()}")
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE regions (region_key INT PRIMARY KEY, name TEXT)"))
        c.execute(sa.text("INSERT INTO regions VALUES (1, 'north'), (2, 'south'), (3, NULL)"))
        c.execute(sa.text("CREATE TABLE orders (id INT PRIMARY KEY, region_id INT, "
                          "total NUMERIC(7,2))"))
        c.execute(sa.text("INSERT INTO orders VALUES (1, 1, 5.00), (2, 2, 7.50), (3, 3, 1)"))
        c.execute(sa.text("CREATE TABLE customers (cid INT PRIMARY KEY, cname TEXT)"))
        c.execute(sa.text("INSERT INTO customers VALUES (10, 'ann')"))
    (tmp_path / "catalog.json").write_text(json.dumps({
        "connections": {"pg-shop": {
            "JDBC_CONNECTION_URL": f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}",
            "USERNAME": "postgres", "password_env": "SHOP_PG_PASSWORD"}},
        "shop.customers": {"connection": "pg-shop", "table": "customers",
                           "columns": [{"Name": "cid", "Type": "bigint"},
                                       {"Name": "cname", "Type": "string"}]}}))
    env = {"SPARKMARK_STATE": state, "SPARKMARK_GLUE_CATALOG": str(tmp_path / "catalog.json"),
           "SHOP_PG_PASSWORD": "unused-with-trust-auth"}
    item = {"name": "shop", "script": "jdbc_connections.py",
            "argv": ["--JOB_NAME", "shop", *ENABLE, "--database", name,
                     "--TempDir", "s3://tmp/redshift"]}
    first = run_plan(tmp_path, [item], env, "1")
    assert first["shop"]["code"] == 0, first["shop"]["error"]
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO orders VALUES (4, 1, 2.25)"))
        c.execute(sa.text("INSERT INTO customers VALUES (11, 'bob')"))
    second = run_plan(tmp_path, [item], env, "2")
    assert second["shop"]["code"] == 0, second["shop"]["error"]
    assert [r["status"] for r in ledger_rows(state, job="shop")] == ["SUCCEEDED", "SUCCEEDED"]
    with engine.connect() as c:
        copied = c.execute(sa.text("SELECT id, name, total FROM orders_copy ORDER BY id")).all()
        cols = [r[0] for r in c.execute(sa.text(
            "SELECT column_name FROM information_schema.columns WHERE table_name = "
            "'orders_copy' ORDER BY ordinal_position"))]
        customers = c.execute(sa.text("SELECT cid, cname FROM customers_copy ORDER BY cid")).all()
    # every order once (the NULL-named region came through the first hash query), run 2 only
    # the new one; Glue's columns, no sm_ columns in the target
    assert [(i, n, float(t)) for i, n, t in copied] == [
        (1, "north", 5.0), (2, "south", 7.5), (3, None, 1.0), (4, "north", 2.25)]
    assert not [c for c in cols if c.startswith("sm_")]
    assert customers == [(10, "ann"), (11, "bob")]
    engine.dispose()


# ---------------------------------------------------------------------- a MySQL Glue connection
# on MariaDB with MariaDB's driver only (issue 27)
MYSQL_JOB = "mysql_mask_parquet.py"


def _mysql_catalog(path: Path, port: int, driver: str | None) -> Path:
    conn = {"url": f"jdbc:mysql://127.0.0.1:{port}", "user": "sm", "password_env": "AURORA_PW"}
    if driver:
        conn["driver"] = driver
    path.write_text(json.dumps({"connections": {"aurora": conn}}))
    return path


def test_mysql_connection_script_on_mariadb_with_mariadbs_driver_only(tmp_path, mariadb):
    """AWS's aws-glue-etl-sample-cdk job shape: a Glue connection to a MySQL URL,
    extract_jdbc_conf + from_options (no driver in its options), Map.apply masking a column,
    parquet out; run twice with new rows between.  Only MariaDB's driver is on the classpath
    (SPARKMARK_JDBC_JARS): the connection's driver reaches the read, a connection without one
    gets MariaDB's, a bogus one fails naming its class, and with no driver jar at all the
    error names both packages and changes nothing."""
    from sparkmark.devtools.mariadb import JAR
    db = f"aurora_{os.getpid()}"
    mariadb.create_database(db)
    mariadb.sql("CREATE TABLE messages (id INT PRIMARY KEY, content VARCHAR(40), "
                "author VARCHAR(20))", db)
    mariadb.sql("INSERT INTO messages VALUES (1, 'Hello', 'ann'), (2, 'secret', 'bob'), "
                "(3, 'a b', 'cy')", db)
    state = f"sqlite:///{tmp_path / 'state.db'}"
    (tmp_path / "paths.json").write_text(json.dumps({"s3://out-bucket": str(tmp_path / "out")}))
    env = {"SPARKMARK_STATE": state, "SPARKMARK_PATH_MAP": str(tmp_path / "paths.json"),
           "AURORA_PW": "sm", "SPARKMARK_JDBC_JARS": JAR}

    def item(job: str, driver: str | None) -> dict:
        catalog = _mysql_catalog(tmp_path / f"catalog-{job}.json", mariadb.port, driver)
        return {"name": job, "script": MYSQL_JOB, "env": {"SPARKMARK_GLUE_CATALOG": str(catalog)},
                "argv": ["--JOB_NAME", job, *ENABLE, "--CONNECTION_NAME", "aurora",
                         "--DATABASE_NAME", db, "--TABLE_NAME", "messages",
                         "--OUTPUT_BUCKET", "out-bucket", "--OUTPUT_PATH", job]}

    named, auto = item("named", "org.mariadb.jdbc.Driver"), item("auto", None)
    bogus = item("bogus", "com.example.NoSuchDriver")

    # no driver jar at all: one message naming both packages, FAILED, no bookmark
    bare = run_script(MYSQL_JOB, auto["argv"], tmp_path,
                      **{**env, **auto["env"], "SPARKMARK_JDBC_JARS": os.pathsep})
    assert bare.returncode != 0
    assert "MySQL Connector/J" in bare.stderr and "apt-get install libmariadb-java" in bare.stderr
    assert [r["status"] for r in ledger_rows(state, job="auto")] == ["FAILED"]
    # (its bookmark did not move: the next run reads every row, checked below)

    first = run_plan(tmp_path, [named, auto, bogus], env, "1")
    assert (first["named"]["code"], first["auto"]["code"]) == (0, 0), first
    assert first["bogus"]["code"] != 0
    assert "JDBC driver class com.example.NoSuchDriver is not on Spark's classpath" in \
        first["bogus"]["error"]  # the connection's driver reached from_options' read
    mariadb.sql("INSERT INTO messages VALUES (4, 'new one', 'di'), (5, 'x', 'ed')", db)
    second = run_plan(tmp_path, [named, auto], env, "2")
    assert {k: v["code"] for k, v in second.items()} == {"named": 0, "auto": 0}, second

    for job in ("named", "auto"):
        _assert_masked_runs(state, tmp_path, job, "org.mariadb.jdbc.Driver", [
            [(1, "*****", "ann"), (2, "******", "bob"), (3, "***", "cy")],
            [(4, "*******", "di"), (5, "*", "ed")]])  # only the new rows, masked


def _assert_masked_runs(state: str, tmp_path: Path, job: str, driver: str,
                        expected: list[list[tuple]]) -> None:
    """``job``'s two SUCCEEDED runs read with ``driver`` and wrote ``expected`` (per run)."""
    ledger = [r for r in ledger_rows(state, job=job) if r["status"] == "SUCCEEDED"]
    assert [json.loads(r["config"])["sources"]["bookmark"]["driver"] for r in ledger] == \
        [driver] * len(expected)
    got = rows_by_run(tmp_path / "out" / job, "parquet")
    assert {k: sorted((r["id"], r["content"], r["author"]) for r in v)
            for k, v in got.items()} == {r["run_id"]: rows for r, rows in zip(ledger, expected)}


def test_mysql_connection_script_on_mysql_connector_j(tmp_path, mariadb):
    """The same Glue script with MySQL's own driver only (``com.mysql:mysql-connector-j`` from
    Maven Central, ``make jars``) on the classpath: a connection naming
    ``com.mysql.cj.jdbc.Driver`` and one naming no driver (which then gets MySQL's, the first
    choice for a ``jdbc:mysql:`` URL) both read every row once over two runs, masked."""
    from sparkmark.devtools.jars import JDBC, jars_for
    try:
        [jar] = jars_for(["jdbc"])[-1:]
    except FileNotFoundError as e:
        if os.environ.get("SPARKMARK_REQUIRE_S3") == "1":  # make test: the jars must be there
            pytest.fail(str(e))
        pytest.skip(str(e))
    assert os.path.basename(jar) == JDBC["mysql"].jar
    db = f"cj_{os.getpid()}"
    mariadb.create_database(db)
    mariadb.sql("CREATE TABLE messages (id INT PRIMARY KEY, content VARCHAR(40), "
                "author VARCHAR(20))", db)
    mariadb.sql("INSERT INTO messages VALUES (1, 'Hello', 'ann'), (2, 'secret', 'bob')", db)
    state = f"sqlite:///{tmp_path / 'state.db'}"
    (tmp_path / "paths.json").write_text(json.dumps({"s3://out-bucket": str(tmp_path / "out")}))
    env = {"SPARKMARK_STATE": state, "SPARKMARK_PATH_MAP": str(tmp_path / "paths.json"),
           "AURORA_PW": "sm", "SPARKMARK_JDBC_JARS": jar}
    items = []
    for job, driver in (("cj_named", "com.mysql.cj.jdbc.Driver"), ("cj_auto", None)):
        catalog = _mysql_catalog(tmp_path / f"catalog-{job}.json", mariadb.port, driver)
        items.append({"name": job, "script": MYSQL_JOB,
                      "env": {"SPARKMARK_GLUE_CATALOG": str(catalog)},
                      "argv": ["--JOB_NAME", job, *ENABLE, "--CONNECTION_NAME", "aurora",
                               "--DATABASE_NAME", db, "--TABLE_NAME", "messages",
                               "--OUTPUT_BUCKET", "out-bucket", "--OUTPUT_PATH", job]})
    first = run_plan(tmp_path, items, env, "1")
    assert {k: v["code"] for k, v in first.items()} == {"cj_named": 0, "cj_auto": 0}, first
    mariadb.sql("INSERT INTO messages VALUES (3, 'new one', 'cy')", db)
    second = run_plan(tmp_path, items, env, "2")
    assert {k: v["code"] for k, v in second.items()} == {"cj_named": 0, "cj_auto": 0}, second
    for job in ("cj_named", "cj_auto"):
        _assert_masked_runs(state, tmp_path, job, "com.mysql.cj.jdbc.Driver", [
            [(1, "*****", "ann"), (2, "******", "bob")], [(3, "*******", "cy")]])


def test_glue_crawler_hive_tables_are_bookmarked_like_their_files(tmp_path):
    """A Hive table in the Spark catalog (what a Glue crawler makes: delimited text with a
    header line, partitioned by dt; Parquet) is read as its files with the table's columns and
    types, and bookmarked: the second run reads only the files added since."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    lake = tmp_path / "lake"
    (lake / "orders" / "dt=2024-01-01").mkdir(parents=True)
    (lake / "orders" / "dt=2024-01-01" / "a.csv").write_text("id,name\n1,ann\n2,bob\n")
    (lake / "events").mkdir(parents=True)
    pq.write_table(pa.table({"id": [10], "kind": ["click"]}), lake / "events" / "e1.parquet")
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "spark.sql.catalogImplementation hive\n"
        f"spark.sql.warehouse.dir {tmp_path / 'wh'}\n"
        "spark.hadoop.javax.jdo.option.ConnectionURL "
        f"jdbc:derby:;databaseName={tmp_path / 'metastore'};create=true\n")
    env = {"SPARKMARK_STATE": f"sqlite:///{tmp_path / 'state.db'}", "SPARK_CONF_DIR": str(conf)}
    proc = run_script("crawler_hive_tables.py", ["--JOB_NAME", "crawled", "--job-bookmark-option",
                                                 "job-bookmark-enable", "--lake", str(lake)],
                      tmp_path, **env)
    ok(proc)
    first, second, refused = json.loads(proc.stdout.strip().splitlines()[-1])
    assert first["orders"] == [[1, "ann", "2024-01-01"], [2, "bob", "2024-01-01"]]
    assert first["orders_types"] == [["id", "bigint"], ["name", "string"], ["dt", "string"]]
    assert first["events"] == [[10, "click"]]
    assert second["orders"] == [[3, "cy", "2024-01-02"]]
    assert second["events"] == [[11, "view"]]
    assert "is a Hive table in the Spark catalog" in refused and "MSCK REPAIR" in refused
    assert len(list((lake / "events").glob("*.parquet"))) == 2  # nothing written
