"""Scale-out, for real: a Spark standalone master and two workers (separate JVMs, executors in
other processes), drivers in their own processes, and PostgreSQL state shared between them.

The cluster is started once for this module.  Its workers, and so every executor, run without
``SPARKMARK_STATE``; the drivers get it from their environment — the deployment rule "only the
driver talks to the state store" (SPEC §11), checked here rather than assumed.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "cluster_driver.py"
PG_JAR = "/usr/share/java/postgresql.jar"

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture(scope="module")
def cluster():
    from sparkmark.devtools.cluster import start_standalone
    c = start_standalone(workers=2, cores=1, memory="1g")
    yield c
    c.stop()


class Driver:
    """One driver process (own process group), its output lines collected as they come."""

    def __init__(self, scenario: str, cluster, state: str, work: Path, *args: str):
        env = dict(os.environ, SPARKMARK_STATE=state,
                   PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
        cmd = [sys.executable, str(DRIVER), scenario, "--master", cluster.master_url,
               "--work", str(work), *args]
        self.log = work / f"{scenario}-{time.time_ns()}.log"
        self._err = open(self.log, "wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._err, text=True,
                                     env=env, start_new_session=True)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self.lines.append("<exit>")
            self._cond.notify_all()

    def wait_mark(self, name: str, timeout: float = 300) -> None:
        end = time.time() + timeout
        with self._cond:
            while f"MARK {name}" not in self.lines:
                if "<exit>" in self.lines or not self._cond.wait(max(0.0, end - time.time())):
                    raise AssertionError(f"driver never reached {name}:\n{self.stderr()}")

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(60)

    def finish(self, timeout: float = 600) -> dict[str, list[dict]]:
        rc = self.proc.wait(timeout)
        with self._cond:
            while "<exit>" not in self.lines:
                self._cond.wait(5)
        assert rc == 0, f"driver exited {rc}:\n{self.stderr()}"
        out: dict[str, list[dict]] = {}
        for line in self.lines:
            if line.startswith("RESULT "):
                r = json.loads(line[7:])
                out.setdefault(r.pop("name"), []).append(r)
        return out

    def stderr(self) -> str:
        self._err.flush()
        text = self.log.read_text(errors="replace")
        return "\n".join(ln for ln in text.splitlines() if "WARN" not in ln)[-4000:]


def _need_pg_jar():
    if not os.path.exists(PG_JAR):
        pytest.skip("PostgreSQL JDBC driver missing: apt-get install libpostgresql-jdbc-java")


def _jdbc(pg_server, sa_url: str) -> str:
    return f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{sa_url.rsplit('/', 1)[1]}"


def _no_state_files(cluster) -> list[str]:
    """Any SQLite state (the default store) an executor might have opened in its cwd."""
    found = []
    for d in cluster.work_dirs:
        for root, dirs, files in os.walk(d):
            found += [os.path.join(root, f) for f in files if f.endswith(".db")]
            found += [os.path.join(root, x) for x in dirs if x == ".sparkmark"]
    return found


def test_everything_on_a_standalone_cluster(cluster, pg_server, tmp_path):
    _need_pg_jar()
    state = pg_server.create_database(f"cl_state_{os.getpid()}")
    src = pg_server.create_database(f"cl_src_{os.getpid()}")
    dst = pg_server.create_database(f"cl_dst_{os.getpid()}")
    d = Driver("all", cluster, state, tmp_path, "--src-jdbc", _jdbc(pg_server, src),
               "--src-sa", src, "--dst-jdbc", _jdbc(pg_server, dst))
    res = d.finish()

    # executors are other processes, in other JVMs, and have no state URL at all
    ex = res["executors"][0]
    assert ex["executors"] == 2 and len(ex["executor_jvm_pids"]) == 2, ex
    assert ex["driver_pid"] not in ex["task_pids"] and ex["driver_state_env"], ex
    assert ex["task_state_env"] == ["None"], ex
    assert all(str(cluster.root) in cwd for cwd in ex["task_cwds"]), ex
    assert res["state"] == [{"url_scheme": "postgresql+psycopg"}]

    # every format, incremental, through the exactly-once file sink
    by_fmt = {r["format"]: r for r in res["files"]}
    assert sorted(by_fmt) == sorted(["json", "csv", "parquet", "orc", "avro", "xml", "text"])
    for fmt, r in by_fmt.items():
        assert r["reads"] == [[1, 2, 3], [4, 5]], (fmt, r)
        assert r["written"] == [1, 2, 3, 4, 5], (fmt, r)
    assert by_fmt["avro"]["spark_avro"] is False          # stock pyspark: no spark-avro jar
    assert by_fmt["avro"]["avro_python_source"] is True   # fastavro in Python workers (mapInArrow)

    # JDBC source in two parallel partitions, into the JDBC sink, exactly once
    runs = res["jdbc"][0]["runs"]
    assert [r["partitions"] for r in runs] == [2, 2], runs
    assert all(min(r["per_partition"]) > 0 for r in runs), runs   # both partitions read rows
    assert [r["written"] for r in runs] == [1000, 500], runs
    import sqlalchemy as sa
    with sa.create_engine(dst).connect() as c:
        got = c.execute(sa.text("SELECT count(*), count(DISTINCT id), min(id), max(id) "
                                "FROM orders_copy")).one()
    assert tuple(got) == (1500, 1500, 1, 1500)

    # a pipeline with a rollback and a reload
    p = res["pipeline"][0]
    assert all(s in ("SUCCEEDED", "EMPTY") for run in p["statuses"] for s, _ in run), p
    assert p["complete_before"] and len(p["rolled_back"]) == 2, p   # silver + gold, 2nd window
    assert p["ledger_rolled_back"] == 2, p
    assert p["after_rollback_max"] == p["cut_hour"] - 1, p   # kept exactly up to the cut
    assert p["silver_exactly_once"], p

    # and no executor ever opened a state store (the default one would be a SQLite file
    # in the executor's working directory)
    assert _no_state_files(cluster) == []
    from sparkmark.state import open_store
    store = open_store(state)
    assert {r["job_name"] for r in store.list_runs()} >= {"files-json", "jdbc-orders"}

    # the executors loaded Spark's classes from the tests' archive, as the drivers do
    from sparkmark.devtools import jvmcache
    if jvmcache.options():
        logs = [p.read_text(errors="replace") for p in cluster.root.glob("worker-*/app-*/*/stderr")]
        assert logs and all("-XX:SharedArchiveFile=" in t for t in logs), logs[:1]


def test_sigkill_of_the_driver_mid_run_then_a_clean_rerun(cluster, pg_server, tmp_path):
    _need_pg_jar()
    state = pg_server.create_database(f"cr_state_{os.getpid()}")
    dst = pg_server.create_database(f"cr_dst_{os.getpid()}")
    inp, target = tmp_path / "in", tmp_path / "out"
    inp.mkdir()
    expected = []
    for i in range(4):
        rows = [{"id": 100 * i + k, "v": f"r{i}"} for k in range(25)]
        expected += [r["id"] for r in rows]
        (inp / f"f{i}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        t = time.time() - 600
        os.utime(inp / f"f{i}.json", (t, t))
    args = ("--input", str(inp), "--target", str(target), "--dst-jdbc", _jdbc(pg_server, dst))

    d = Driver("crash", cluster, state, tmp_path, *args, "--hang")
    d.wait_mark("staged")       # both sinks hold this run's staged output; nothing committed
    d.kill()                    # SIGKILL the whole driver process group (driver JVM included)

    from sparkmark.state import open_store
    store = open_store(state)
    killed = store.list_runs(job_name="crash")
    assert [r["status"] for r in killed] == ["RUNNING"]

    res = Driver("crash", cluster, state, tmp_path, *args).finish()["crash"][0]
    assert res["status"] == "SUCCEEDED" and res["files"] == res["jdbc"] == 100, res
    assert res["taken_over"] == [killed[0]["run_id"]], res

    import pyarrow.parquet as pq
    files = [p for p in target.rglob("*.parquet") if not any(
        part.startswith(("_", ".")) for part in p.relative_to(target).parts)]
    got = sorted(i for f in files for i in pq.read_table(f, columns=["id"]).column(0).to_pylist())
    assert got == sorted(expected)                       # exactly once in the file target
    assert not (target / "_sparkmark_staging").exists() or not any(
        (target / "_sparkmark_staging").iterdir())
    import sqlalchemy as sa
    with sa.create_engine(dst).connect() as c:
        ids = sorted(r[0] for r in c.execute(sa.text("SELECT id FROM crash_target")))
    assert ids == sorted(expected)                       # and in the JDBC target
    assert _no_state_files(cluster) == []


def test_two_drivers_one_store(cluster, pg_server, tmp_path):
    """Driver A holds job 'shared' with a 1.5 s lease (heartbeat every 0.5 s) and runs a
    pipeline with a rollback; driver B is refused 'shared' and runs plain jobs meanwhile.  A
    commits 'shared' only after B signalled that all its jobs committed: had A's lease or
    heartbeat traffic blocked B, this would dead-lock and time out."""
    _need_pg_jar()
    state = pg_server.create_database(f"two_state_{os.getpid()}")
    a = Driver("driver_a", cluster, state, tmp_path, "--cores-max", "1")
    b = Driver("driver_b", cluster, state, tmp_path, "--cores-max", "1")
    ra = a.finish()
    rb = b.finish()

    shared = ra["driver_a"][0]["shared_run"]
    b_res = rb["driver_b"][0]
    assert b_res["holder"] == shared
    assert b_res["refused"] and shared in b_res["refused"] and "shared" in b_res["refused"]

    from sparkmark.state import open_store
    store = open_store(state)
    runs = store.list_runs()
    shared_runs = [r for r in runs if r["job_name"] == "shared"]
    assert [(r["run_id"], r["status"]) for r in shared_runs] == [(shared, "SUCCEEDED")]
    plain = [r for r in runs if r["job_name"].startswith("plain-")]
    assert sorted(r["run_id"] for r in plain) == sorted(b_res["runs"])
    assert all(r["status"] == "SUCCEEDED" for r in plain)
    # B's runs all happened while A's run of 'shared' held its lease
    s = shared_runs[0]
    assert all(s["run_start_ts"] <= r["run_start_ts"] and r["run_end_ts"] <= s["run_end_ts"]
               for r in plain)
    p = ra["pipeline"][0]
    assert p["silver_exactly_once"] and p["rolled_back"], p
