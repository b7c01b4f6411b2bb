"""Rollback for plain jobs: ``bookmark reset --remove-output`` rewinds the bookmark, removes the
later runs' output (files and JDBC rows) and marks them ROLLED_BACK, so that a re-run leaves
every source record in the target exactly once; a SIGKILL during the removal is finished by a
repeat (or by the job's next run)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import UnknownJobError, UnknownRunError
from sparkmark.core.options import ENABLE

EN = {"job_bookmark_option": ENABLE}
MIN = 60_000
SPARKMARK = str(Path(sys.executable).with_name("sparkmark"))


def add_batch(src: Path, name: str, ids: list[int], mtime: int) -> None:
    src.mkdir(parents=True, exist_ok=True)
    p = src / f"{name}.json"
    p.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    os.utime(p, ns=(mtime * 1_000_000, mtime * 1_000_000))


def run_job(spark, url, clock, src: Path, target: str, name: str = "orders") -> str:
    job = Job(spark, state=url, clock=clock).init(name, EN)
    df = job.read.files(str(src), format="json", transformation_ctx="src")
    job.write(df, target, transformation_ctx="sink")
    job.commit()
    return job.run_id


def target_ids(spark, target: str) -> list[int]:
    if not os.path.isdir(target):
        return []
    names = [f for f in os.listdir(target) if not f.startswith(("_", "."))]
    if not names:
        return []
    return sorted(r.id for r in spark.read.parquet(target).select("id").collect())


def run_files(target: str, run_id: str) -> list[str]:
    return [f for f in os.listdir(target) if f.startswith(f"sm-{run_id}-")]


def three_runs(spark, url, clock, tmp_path):
    src, target = tmp_path / "src", str(tmp_path / "out")
    ids = []
    for k in range(3):
        add_batch(src, f"b{k}", [10 * k + 1, 10 * k + 2], clock.now + 5 * MIN)
        clock.advance(60 * MIN)
        ids.append(run_job(spark, url, clock, src, target))
    assert target_ids(spark, target) == [1, 2, 11, 12, 21, 22]
    return src, target, ids


def test_reset_to_run_removes_later_output_and_rerun_is_exactly_once(spark, state_url, clock,
                                                                      tmp_path):
    src, target, (r1, r2, r3) = three_runs(spark, state_url, clock, tmp_path)
    bm = Bookmarks(state_url, clock=clock)

    plan = bm.reset("orders", run_id=r1, remove_output=True, dry_run=True, spark=spark)
    assert plan.dry_run and plan.run_ids == [r2, r3] and plan.version is None
    assert sorted(plan.removed) == sorted(
        os.path.join(target, f) for r in (r2, r3) for f in run_files(target, r)) or \
        len(plan.removed) == len(run_files(target, r2)) + len(run_files(target, r3))
    assert target_ids(spark, target) == [1, 2, 11, 12, 21, 22]  # dry run: nothing changed
    assert bm.get("orders")["RunId"] == r3

    before = len(bm.history("orders"))
    plan = bm.reset("orders", run_id=r1, remove_output=True, spark=spark)
    assert plan.run_ids == [r2, r3] and plan.version == before
    assert run_files(target, r2) == [] and run_files(target, r3) == []
    assert target_ids(spark, target) == [1, 2]
    for r in (r2, r3):
        row = bm.store.get_run(r)
        assert (row["status"], row["publish_state"]) == ("ROLLED_BACK", "removed")
    assert bm.store.get_run(r1)["status"] == "SUCCEEDED"
    assert bm.get("orders")["JobBookmark"] == bm.get("orders", run_id=r1)["JobBookmark"]
    assert bm.history("orders")[-1]["Kind"] == "rewind"

    clock.advance(60 * MIN)
    run_job(spark, state_url, clock, src, target)
    assert target_ids(spark, target) == [1, 2, 11, 12, 21, 22]  # each record exactly once

    # without --run-id: everything goes, and the re-run loads everything once
    plan = bm.reset("orders", remove_output=True, spark=spark)
    assert target_ids(spark, target) == []
    assert bm.store.get_run(r1)["status"] == "ROLLED_BACK"
    clock.advance(60 * MIN)
    run_job(spark, state_url, clock, src, target)
    assert target_ids(spark, target) == [1, 2, 11, 12, 21, 22]


def test_reset_bad_input_changes_nothing(spark, sqlite_url, clock, tmp_path):
    src, target, (r1, r2, r3) = three_runs(spark, sqlite_url, clock, tmp_path)
    bm = Bookmarks(sqlite_url, clock=clock)
    versions = len(bm.history("orders"))
    with pytest.raises(UnknownRunError, match="no committed bookmark"):
        bm.reset("orders", run_id="f" * 32, remove_output=True, spark=spark)
    with pytest.raises(UnknownJobError, match="no job named 'nobody'"):
        bm.reset("nobody", remove_output=True, spark=spark)
    assert len(bm.history("orders")) == versions
    assert target_ids(spark, target) == [1, 2, 11, 12, 21, 22]
    assert {bm.store.get_run(r)["status"] for r in (r1, r2, r3)} == {"SUCCEEDED"}


CRASHER = textwrap.dedent("""
    import os, signal, sys
    from sparkmark import Bookmarks
    from sparkmark.sinks import publish as sinks
    from sparkmark.engine.spark import local_session
    state, run_id, kill_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    real = sinks.remove_run_output

    def remove_then_maybe_die(spark, rid, outputs, credentials=None, dry_run=False):
        # kill_after=0: die before deleting anything; 1: die right after the first run's
        # files are deleted, before that run is marked 'removed'
        if not dry_run and kill_after == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        out = real(spark, rid, outputs, credentials, dry_run=dry_run)
        if not dry_run and kill_after == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    sinks.remove_run_output = remove_then_maybe_die
    Bookmarks(state).reset("orders", run_id=run_id, remove_output=True,
                           spark=local_session("crash"))
    print("NOT KILLED")
""")


@pytest.mark.parametrize("kill_after, then", [(1, "repeat"), (0, "rerun"), (1, "rerun")])
def test_sigkill_during_removal_then_repeat_or_rerun(spark, sqlite_url, clock, tmp_path,
                                                     kill_after, then):
    """SIGKILL after the state change, with none or one of the 2 runs' output deleted (but not
    yet marked removed); then either
    repeat the reset or just run the job again: the target ends with each record once."""
    src, target, (r1, r2, r3) = three_runs(spark, sqlite_url, clock, tmp_path)
    script = tmp_path / "crash.py"
    script.write_text(CRASHER)
    res = subprocess.run([sys.executable, str(script), sqlite_url, r1, str(kill_after)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, (res.returncode, res.stdout, res.stderr[-2000:])
    assert "NOT KILLED" not in res.stdout
    bm = Bookmarks(sqlite_url, clock=clock)
    # the intent was recorded before anything was deleted, in one transaction with the rewind
    states = {r: (bm.store.get_run(r)["status"], bm.store.get_run(r)["publish_state"])
              for r in (r2, r3)}
    assert states == {r2: ("ROLLED_BACK", "removing"), r3: ("ROLLED_BACK", "removing")}
    assert bm.get("orders")["JobBookmark"] == bm.get("orders", run_id=r1)["JobBookmark"]
    left = target_ids(spark, target)
    assert left == ([1, 2, 21, 22] if kill_after == 1 else [1, 2, 11, 12, 21, 22])
    assert bm.store.list_runs(job_name="orders")[-1]["run_id"] == r3  # no run since

    if then == "repeat":
        plan = bm.reset("orders", run_id=r1, remove_output=True, spark=spark)
        assert plan.run_ids == [] and plan.finished_earlier  # it finished the removal
        assert target_ids(spark, target) == [1, 2]
        assert bm.store.get_run(r3)["publish_state"] == "removed"
    clock.advance(60 * MIN)
    run_job(spark, sqlite_url, clock, src, target)
    assert target_ids(spark, target) == [1, 2, 11, 12, 21, 22]  # exactly once
    assert {bm.store.get_run(r)["publish_state"] for r in (r2, r3)} == {"removed"}


def test_cli_reset_remove_output_dry_run_and_real(spark, sqlite_url, clock, tmp_path):
    src, target, (r1, r2, r3) = three_runs(spark, sqlite_url, clock, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "SPARKMARK_STATE"}
    cmd = [SPARKMARK, "--state", sqlite_url, "bookmark", "reset", "orders", "--run-id", r2,
           "--remove-output"]
    # the dry run never starts Spark: with no Java and no Spark to find, it still lists the
    # later run's files (through pyarrow) and changes nothing
    path = [d for d in env.get("PATH", "").split(os.pathsep)
            if not os.path.exists(os.path.join(d, "java"))]
    no_jvm = dict(env, COLUMNS="1000", JAVA_HOME=str(tmp_path / "no-java"),
                  SPARK_HOME=str(tmp_path / "no-spark"), PATH=os.pathsep.join(path))
    res = subprocess.run(cmd + ["--dry-run"], capture_output=True, text=True, env=no_jvm,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "dry run, nothing changed" in res.stdout
    assert "would roll back 1 later run(s)" in res.stdout
    assert f"run {r3} (#3" in res.stdout and f"run {r2} (#" not in res.stdout
    r3_files = run_files(target, r3)
    assert r3_files and all(f in res.stdout for f in r3_files)
    assert target_ids(spark, target) == [1, 2, 11, 12, 21, 22]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "rolled back 1 later run(s)" in res.stdout
    assert target_ids(spark, target) == [1, 2, 11, 12]
    res = subprocess.run([SPARKMARK, "--state", sqlite_url, "bookmark", "reset", "orders",
                          "--remove-output", "--jdbc-password-env", "NO_SUCH_VAR_SM"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 2 and "NO_SUCH_VAR_SM" in res.stderr
    assert target_ids(spark, target) == [1, 2, 11, 12]


def test_reset_removes_jdbc_rows_by_run_id_then_rerun_is_exactly_once(spark, sqlite_url, clock,
                                                                      tmp_path, pg_server):
    """A PostgreSQL target: the later runs' rows go by sm_run_id; with a password given the
    way the CLI gives it (``properties`` by table); a re-run loads each record once."""
    if not os.path.exists("/usr/share/java/postgresql.jar"):
        pytest.skip("PostgreSQL JDBC driver missing: apt-get install libpostgresql-jdbc-java")
    import sqlalchemy as sa
    name = f"reset{os.getpid()}"
    sa_url = pg_server.create_database(name)
    jdbc = f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}"
    props = {"user": "postgres", "password": "secret-not-in-ledger"}
    src = tmp_path / "src"

    def run():
        job = Job(spark, state=sqlite_url, clock=clock).init("to_pg", EN)
        df = job.read.files(str(src), format="json", transformation_ctx="src")
        job.write_jdbc(df, jdbc, "orders_out", properties=props)
        job.commit()
        return job.run_id

    def ids():
        engine = sa.create_engine(sa_url)
        with engine.connect() as c:
            out = sorted(r[0] for r in c.execute(sa.text("SELECT id FROM orders_out")))
        engine.dispose()
        return out

    runs = []
    for k in range(3):
        add_batch(src, f"b{k}", [10 * k + 1, 10 * k + 2], clock.now + 5 * MIN)
        clock.advance(60 * MIN)
        runs.append(run())
    assert ids() == [1, 2, 11, 12, 21, 22]
    bm = Bookmarks(sqlite_url, clock=clock)
    plan = bm.reset("to_pg", run_id=runs[0], remove_output=True, dry_run=True, spark=spark,
                    properties={"orders_out": {"password": props["password"]}})
    assert plan.run_ids == runs[1:] and len(plan.removed) == 2 and ids() == [1, 2, 11, 12, 21, 22]
    assert all("orders_out: 2 rows of run" in x for x in plan.removed)
    bm.reset("to_pg", run_id=runs[0], remove_output=True, spark=spark,
             properties={"orders_out": {"password": props["password"]}})
    assert ids() == [1, 2]
    assert {bm.store.get_run(r)["status"] for r in runs[1:]} == {"ROLLED_BACK"}
    # --jdbc-password-env: VAR for every target, TABLE=VAR for one (the more specific wins)
    from sparkmark.core.errors import SparkmarkError
    from sparkmark.sinks.rollback import jdbc_credentials
    env = {"ALL_PW": "a", "ORD_PW": "o"}
    assert jdbc_credentials(sqlite_url, "to_pg", ["ALL_PW"], env) == \
        {"orders_out": {"password": "a"}}
    assert jdbc_credentials(sqlite_url, "to_pg", ["ALL_PW", "ORDERS_OUT=ORD_PW"], env) == \
        {"orders_out": {"password": "o"}}
    with pytest.raises(SparkmarkError, match="wrote to no JDBC table 'audit'.*orders_out"):
        jdbc_credentials(sqlite_url, "to_pg", ["audit=ORD_PW"], env)
    with pytest.raises(SparkmarkError, match="NOPE is not set"):
        jdbc_credentials(sqlite_url, "to_pg", ["orders_out=NOPE"], env)
    clock.advance(60 * MIN)
    run()
    assert ids() == [1, 2, 11, 12, 21, 22]
