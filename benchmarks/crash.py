"""Crash trials: SIGKILL a bookmarked job at random moments, then prove exactly-once.

    python benchmarks/crash.py --trials 300                 # file -> parquet target
    python benchmarks/crash.py --trials 300 --sink jdbc     # file -> PostgreSQL table
    python benchmarks/crash.py --trials 100 --sink s3       # file -> parquet on S3 (moto)
    python benchmarks/crash.py --trials 50 --sink iceberg   # file -> Iceberg table (Spark 3.5)
    python benchmarks/crash.py --trials 50 --sink iceberg-s3  # the same, warehouse on s3a (moto)
    python benchmarks/crash.py --trials 20 --sink both      # what CI runs (tests/test_crash.py)

Each trial adds new input files (new records keep arriving), starts the job in its own process
group and kills the whole group with SIGKILL at a random moment of a randomly chosen phase:
during the read (listing and planning), during the write, between the write and the commit, or
during the commit (state transaction and publish).  Some runs finish before the kill lands; they
count as completed.  After the trials the job runs to completion twice; then the target must hold
every source record exactly once, the bookmark must agree (the last run finds nothing new), and
no staging output may be left behind.  Prints a table and writes benchmarks/results/crash.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

JOB = "crash-trial"
# phase marker printed by the worker -> (max random delay in seconds after it)
PHASES = {
    "read": ("before-read", 0.4),        # listing + band planning
    "write": ("before-write", 2.5),      # Spark reads the new files and writes the staging
    "between": ("before-commit", 0.02),  # written, not yet committed
    "commit": ("in-commit", 0.15),       # state transaction, then publish
}
#: on S3 a publish copies every object (no rename): give the kill a wider window inside it
S3_PHASES = {**PHASES, "commit": ("in-commit", 1.5)}
#: an Iceberg publish is Spark SQL (snapshot lookup, cherry-pick): the window covers the state
#: commit, the time between it and the cherry-pick, and the cherry-pick itself
ICEBERG_PHASES = {**PHASES, "commit": ("in-commit", 2.0)}
ICEBERG_TABLE = "local.db.crash_target"


def s3_conf() -> dict[str, str]:
    """The worker's extra session settings, handed down by the harness: s3a (``--sink s3``)
    or the Iceberg catalog and jars (``--sink iceberg``)."""
    return json.loads(os.environ.get("SPARKMARK_CRASH_S3") or "{}")


ICEBERG_SINKS = ("iceberg", "iceberg-s3")


def iceberg_conf(warehouse: str, s3: Any = None) -> dict[str, str]:
    """A Hadoop catalog ``local`` whose warehouse is ``warehouse`` (a folder, or an
    ``s3a://`` URL on the S3 server ``s3``) with the Iceberg jars (Spark 3.5)."""
    from sparkmark.devtools.iceberg import iceberg_jars, iceberg_session_conf
    from sparkmark.engine.spark import jdbc_jars
    jars = iceberg_jars(fetch=False)
    conf = iceberg_session_conf(warehouse, jars=jars)
    extra: list[str] = []
    if s3 is not None:
        from sparkmark.devtools.s3 import s3a_jars, s3a_session_conf
        extra = s3a_jars(fetch=False)
        conf.update({k: v for k, v in {**s3a_session_conf(jars=extra), **s3.spark_conf()}.items()
                     if k != "spark.jars"})
    conf["spark.jars"] = ",".join(jdbc_jars() + jars + extra)
    return conf


# ---------------------------------------------------------------------------- the job
def worker(a: argparse.Namespace) -> None:
    from sparkmark import Job
    from sparkmark.engine.spark import local_session

    def mark(m: str) -> None:
        print(m, flush=True)

    spark = local_session("crash-worker", cores=1, extra_conf=s3_conf())
    if a.sink in ICEBERG_SINKS:  # the user's own setup, done before the run (and any kill)
        spark.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {ICEBERG_TABLE} (id STRING, v BIGINT, _rescued_data STRING, "
                  "sm_run_id STRING, sm_snapshot_ts TIMESTAMP) USING iceberg")
    job = Job(spark, state=a.state)
    job.init(JOB, ["--job-bookmark-option", "job-bookmark-enable"])
    mark("before-read")
    df = job.read.files(a.input, format="json", transformation_ctx="src",
                        options={"schema": "id STRING, v LONG"})
    mark("before-write")
    if a.sink in ("files", "s3"):
        job.write(df, a.target, format="parquet", transformation_ctx="sink")
    elif a.sink in ICEBERG_SINKS:
        job.write(df, ICEBERG_TABLE, format="iceberg", transformation_ctx="sink")
    else:
        job.write_jdbc(df, a.jdbc, "crash_target", properties={"user": "postgres"},
                       transformation_ctx="sink")
    mark("before-commit")
    mark("in-commit")
    job.commit()
    mark("done")
    last = job.store.get_run(job.run_id)
    print("RESULT " + json.dumps({"status": last["status"],
                                  "records_written": last["records_written"]}), flush=True)


def verify(a: argparse.Namespace) -> None:
    """Print the record ids in the target (with multiplicity) as JSON."""
    if a.sink in ICEBERG_SINKS:
        from sparkmark.engine.spark import local_session
        spark = local_session("crash-verify", cores=1, extra_conf=s3_conf())
        ids = [r.id for r in spark.table(ICEBERG_TABLE).select("id").collect()]
    elif a.sink == "s3":
        from sparkmark.engine.spark import local_session
        spark = local_session("crash-verify", cores=1, extra_conf=s3_conf())
        try:
            ids = [r.id for r in spark.read.parquet(a.target).select("id").collect()]
        except Exception as e:  # noqa: BLE001 - no data files yet
            if "PATH_NOT_FOUND" not in str(e) and "UNABLE_TO_INFER_SCHEMA" not in str(e):
                raise
            ids = []
    elif a.sink == "files":
        from sparkmark.engine.spark import local_session
        spark = local_session("crash-verify", cores=1)
        if os.path.isdir(a.target) and any(not n.startswith(("_", "."))
                                           for n in os.listdir(a.target)):
            ids = [r.id for r in spark.read.parquet(a.target).select("id").collect()]
        else:
            ids = []
    else:
        import sqlalchemy as sa
        engine = sa.create_engine(a.target_sa)
        with engine.connect() as c:
            ids = [r[0] for r in c.execute(sa.text("SELECT id FROM crash_target"))]
    print("IDS " + json.dumps(ids), flush=True)


# ---------------------------------------------------------------------------- the harness
class Trial:
    def __init__(self, cmd: list[str], env: dict[str, str], stderr: "Path | None" = None):
        # a killed worker's stderr is dropped unless SPARKMARK_CRASH_STDERR names a file to
        # append it to; the final runs' goes to ``stderr`` (its tail is in their error)
        self.stderr = stderr
        # the worker's Spark scratch (its copy of every spark.jars jar: ~660 MB with the s3a
        # jars) in a folder of its own, removed when it has exited: a SIGKILLed JVM cannot
        # remove it, and trials left gigabytes in /tmp
        self.local = tempfile.mkdtemp(prefix="sparkmark-crash-local-")
        env = {**env, "SPARK_LOCAL_DIRS": self.local}
        with open(stderr or os.environ.get("SPARKMARK_CRASH_STDERR", os.devnull), "a") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                         env=env, start_new_session=True)
        self.seen: list[str] = []
        self.lines: list[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.seen.append(line.strip())
                self.cond.notify_all()
        with self.cond:
            self.seen.append("<exit>")
            self.cond.notify_all()

    def wait_for(self, marker: str, timeout: float = 180) -> bool:
        end = time.time() + timeout
        with self.cond:
            while marker not in self.seen and "<exit>" not in self.seen:
                if not self.cond.wait(max(0.0, end - time.time())):
                    return False
            return marker in self.seen

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def finish(self) -> int:
        self.proc.wait(300)
        time.sleep(0.05)
        import shutil
        shutil.rmtree(self.local, ignore_errors=True)
        return self.proc.returncode


def add_input(inp: Path, rng: random.Random, counter: list[int], expected: list[str]) -> int:
    files = rng.randint(0, 3)
    for _ in range(files):
        counter[0] += 1
        name = inp / f"part={counter[0] % 3}" / f"orders-{counter[0]:05d}.json"
        name.parent.mkdir(parents=True, exist_ok=True)
        recs = []
        for _ in range(rng.randint(1, 20)):
            rid = f"r{len(expected):06d}"
            expected.append(rid)
            recs.append(json.dumps({"id": rid, "v": len(expected)}))
        tmp = name.with_suffix(".tmp")
        tmp.write_text("\n".join(recs) + "\n")
        os.replace(tmp, name.with_suffix(".json"))
    return files


def run_trials(trials: int, sink: str, seed: int, workdir: Path, log=print) -> dict:
    from sparkmark.devtools.postgres import start_postgres

    rng = random.Random(seed)
    inp, target = workdir / "input", workdir / "target"
    inp.mkdir(parents=True, exist_ok=True)
    state = f"sqlite:///{workdir}/state.db"
    pg = s3 = None
    if sink in ("s3", "iceberg-s3"):
        from sparkmark.devtools.s3 import Bucket, s3a_session_conf, start_moto
        s3 = start_moto()
        bucket = Bucket(s3, "crash")
        target_url = bucket.url("target")
    base = [sys.executable, __file__, "--dir", str(workdir), "--sink", sink, "--state", state,
            "--input", str(inp), "--target", target_url if s3 else str(target)]
    if sink == "jdbc":
        pg = start_postgres()
        sa_url = pg.create_database("crash")
        base += ["--jdbc", f"jdbc:postgresql://127.0.0.1:{pg.port}/crash",
                 "--target-sa", sa_url]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), SPARKMARK_LEASE_SECONDS="30")
    if sink == "s3":
        env["SPARKMARK_CRASH_S3"] = json.dumps({**s3a_session_conf(), **s3.spark_conf()})
    elif sink == "iceberg":
        env["SPARKMARK_CRASH_S3"] = json.dumps(iceberg_conf(str(workdir / "wh")))
    elif sink == "iceberg-s3":
        env["SPARKMARK_CRASH_S3"] = json.dumps(iceberg_conf(bucket.url("wh"), s3))
    phases_of = (ICEBERG_PHASES if sink in ICEBERG_SINKS else S3_PHASES if s3 is not None
                 else PHASES)
    expected: list[str] = []
    counter = [0]
    outcome: Counter = Counter()
    phases: Counter = Counter()
    started = time.time()
    try:
        for i in range(trials):
            add_input(inp, rng, counter, expected)
            phase = rng.choice(list(phases_of))
            marker, max_delay = phases_of[phase]
            phases[phase] += 1
            t = Trial(base + ["--worker"], env)
            reached = t.wait_for(marker)
            if reached:
                time.sleep(rng.uniform(0, max_delay))
            t.kill()
            t.finish()
            done = "done" in t.seen
            outcome["completed" if done else "killed"] += 1
            log(f"trial {i + 1:>4}/{trials}: phase={phase:<8} "
                f"{'completed before the kill' if done else 'killed'}")
        # finish: one run that completes (recovers and processes the rest), one that finds nothing
        results = []
        for n in range(2):
            t = Trial(base + ["--worker"], env, stderr=workdir / f"final-{n + 1}.stderr")
            rc = t.finish()
            res = [json.loads(line[7:]) for line in t.lines if line.startswith("RESULT ")]
            if rc != 0 or not res:
                tail = t.stderr.read_text(errors="replace")[-4000:] if t.stderr else ""
                raise RuntimeError(f"final run {n + 1} failed (exit {rc}): {t.lines[-5:]}; "
                                   f"the end of its stderr ({t.stderr}):\n{tail}")
            results.append(res[0])
        v = Trial(base + ["--verify"], env)
        v.finish()
        ids = next(json.loads(line[4:]) for line in v.lines if line.startswith("IDS "))
    finally:
        if pg is not None:
            pg.stop()
        if s3 is not None:
            leftover_keys = [k for k in bucket.keys("target/") if "/_sparkmark_staging/" in k
                             or "/_temporary/" in k]
            s3.stop()
    from sparkmark import Job
    runs = Job(None, state=state).store.list_runs(job_name=JOB)
    committed = sum(r["status"] in ("SUCCEEDED", "EMPTY") for r in runs)
    counts = Counter(ids)
    dupes = sorted(r for r, c in counts.items() if c > 1)
    missing = sorted(set(expected) - set(counts))
    unexpected = sorted(set(counts) - set(expected))
    leftover = (target / "_sparkmark_staging").exists() if sink == "files" else (
        bool(leftover_keys) if sink == "s3" else False)
    ok = (not dupes and not missing and not unexpected and results[-1]["status"] == "EMPTY"
          and results[-1]["records_written"] == 0 and not leftover)
    return {"sink": sink, "trials": trials, "seed": seed, "phases": dict(phases),
            "killed": outcome["killed"], "completed_before_kill": outcome["completed"],
            # killed after the state commit (in or before the publish): recovery published them
            "committed_then_killed": committed - outcome["completed"] - len(results),
            "source_records": len(expected), "target_records": len(ids),
            "duplicates": len(dupes), "missing": len(missing), "unexpected": len(unexpected),
            "staging_left": leftover, "last_run": results[-1], "exactly_once": ok,
            "seconds": round(time.time() - started, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--sink", choices=("files", "jdbc", "s3", "iceberg", "iceberg-s3", "both"),
                    default="files")
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "crash.json"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)
    for hidden in ("--dir", "--state", "--input", "--target", "--jdbc", "--target-sa"):
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    if a.verify:
        return verify(a)
    sinks = ["files", "jdbc"] if a.sink == "both" else [a.sink]
    reports = []
    for sink in sinks:
        with tempfile.TemporaryDirectory(prefix=f"sparkmark-crash-{sink}-") as d:
            reports.append(run_trials(a.trials, sink, a.seed, Path(d)))
    cols = ("sink", "trials", "killed", "completed_before_kill", "source_records",
            "target_records", "duplicates", "missing", "exactly_once", "seconds")
    print("  ".join(f"{c:>12}" for c in cols))
    for r in reports:
        print("  ".join(f"{str(r[c]):>12}" for c in cols))
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(reports, indent=2))
    print(f"wrote {a.json}")
    sys.exit(0 if all(r["exactly_once"] for r in reports) else 1)


if __name__ == "__main__":
    main()
