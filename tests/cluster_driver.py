"""A driver process for tests/test_cluster.py: real jobs on a ``spark://`` standalone cluster.

    python tests/cluster_driver.py SCENARIO --master spark://127.0.0.1:P --work DIR [...]

The state store's URL reaches this driver only through env ``SPARKMARK_STATE`` (the way a
deployment passes it); the workers, and so the executors, are started without it.  Each scenario
prints ``RESULT {json}`` lines that the test checks, and progress markers (``MARK name``) that the
test can wait for (e.g. to SIGKILL this driver after its output is staged).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000
FORMATS = ["json", "csv", "parquet", "orc", "avro", "xml", "text"]
EXT = {"json": "json", "csv": "csv", "parquet": "parquet", "orc": "orc", "avro": "avro",
       "xml": "xml", "text": "txt"}
READ_OPTS = {"csv": {"header": "true", "inferSchema": "true"}, "xml": {"rowTag": "order"}}


def result(name: str, **data) -> None:
    print("RESULT " + json.dumps({"name": name, **data}, default=str), flush=True)


def mark(name: str) -> None:
    print(f"MARK {name}", flush=True)


class Clock:
    def __init__(self, now: int):
        self.now = now

    def __call__(self) -> int:
        return self.now


def executor_facts(spark) -> dict:
    """Where tasks really run: executor processes' pids, hosts and their SPARKMARK_STATE."""
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus  # includes the driver
    end = time.time() + 120
    while status().size() < 3 and time.time() < end:
        time.sleep(0.5)

    def probe(_):
        yield (os.getpid(), os.getppid(), socket.gethostname(),
               os.environ.get("SPARKMARK_STATE"), os.getcwd())
    rows = spark.sparkContext.parallelize(range(8), 8).mapPartitions(probe).collect()
    return {"driver_pid": os.getpid(), "driver_state_env": bool(os.environ.get("SPARKMARK_STATE")),
            "task_pids": sorted({r[0] for r in rows}),
            "executor_jvm_pids": sorted({r[1] for r in rows}),
            "task_state_env": sorted({str(r[3]) for r in rows}),
            "task_cwds": sorted({r[4] for r in rows}),
            "executors": status().size() - 1}


def ids(df, fmt: str = "json") -> list[int]:
    if fmt == "text":
        return sorted(int(r.value.split("|")[0]) for r in df.collect())
    return sorted(int(r.id) for r in df.select("id").collect())


# ---------------------------------------------------------------------- scenarios
def scenario_files(spark, a) -> None:
    """Every format, two incremental runs, each written through the exactly-once file sink."""
    from test_files import write_orders

    from sparkmark import Job
    from sparkmark.sources.files import has_spark_avro
    work = Path(a.work)
    base = 1_700_000_000_000
    for fmt in FORMATS:
        src, out = str(work / f"in-{fmt}"), str(work / f"out-{fmt}")
        clock = Clock(base)
        write_orders(fmt, f"{src}/day=1/a.{EXT[fmt]}", [1, 2], base - 60 * MIN)
        write_orders(fmt, f"{src}/day=1/b.{EXT[fmt]}", [3], base - 30 * MIN)
        reads = []
        for step in range(2):
            job = Job(spark, clock=clock).init(f"files-{fmt}", ENABLE)
            df = job.read.files(src, format=fmt, transformation_ctx="src",
                                options=READ_OPTS.get(fmt, {}))
            if fmt == "text":
                from pyspark.sql import functions as F
                df = df.select(F.split("value", r"\|")[0].cast("long").alias("id"))
            got = ids(df)
            plan = ""
            if fmt == "avro":
                plan = df._jdf.queryExecution().executedPlan().toString()
            job.write(df, out, format="parquet", transformation_ctx="sink")
            job.commit()
            reads.append(got)
            if step == 0:
                write_orders(fmt, f"{src}/day=2/c.{EXT[fmt]}", [4, 5], base + 5 * MIN)
                clock.now = base + 30 * MIN
        written = sorted(int(r.id) for r in spark.read.parquet(out).select("id").collect())
        result("files", format=fmt, reads=reads, written=written,
               avro_python_source=("MapInArrow" in plan) if fmt == "avro" else None,
               spark_avro=has_spark_avro(spark) if fmt == "avro" else None)


def scenario_jdbc(spark, a) -> None:
    """A JDBC source read in parallel partitions on the executors, into the JDBC sink."""
    import sqlalchemy as sa

    from sparkmark import Job
    src = sa.create_engine(a.src_sa)
    with src.begin() as c:
        c.execute(sa.text("CREATE TABLE orders (id BIGINT PRIMARY KEY, amount DOUBLE PRECISION)"))
        c.execute(sa.text("INSERT INTO orders SELECT g, g * 1.5 FROM generate_series(1, 1000) g"))
    props = {"user": "postgres"}
    runs = []
    for step in range(2):
        job = Job(spark).init("jdbc-orders", ENABLE)
        df = job.read.jdbc(a.src_jdbc, "orders", transformation_ctx="src",
                           properties=props, options={"numPartitions": 2,
                                                      "rowsPerPartition": 10})
        parts = df.rdd.getNumPartitions()
        per_part = df.rdd.mapPartitions(lambda it: [sum(1 for _ in it)]).collect()
        n = job.write_jdbc(df, a.dst_jdbc, "orders_copy", properties=props,
                           transformation_ctx="sink")
        job.commit()
        runs.append({"partitions": parts, "per_partition": per_part, "written": n})
        if step == 0:
            with src.begin() as c:
                c.execute(sa.text(
                    "INSERT INTO orders SELECT g, g * 1.5 FROM generate_series(1001, 1500) g"))
    result("jdbc", runs=runs)


def scenario_pipeline(spark, a) -> None:
    """bronze -> silver -> gold over windows, a rollback of silver+gold, and the reload."""
    from test_pipeline import DAY0, H, build, hours

    from sparkmark.planning.windows import DAY_MS

    def target_hours(spark, path):
        if not any(Path(path).rglob("*.parquet")):
            return []
        return sorted(r.hour for r in spark.read.parquet(path).select("hour").collect())

    class TmpPath:  # build() wants a tmp_path-like object
        def __truediv__(self, other):
            return Path(a.work) / other

    clock = Clock(DAY0)
    p = build(spark, TmpPath(), None, clock, max_days=2)
    statuses = []
    for day in (2, 4):
        clock.now = DAY0 + day * DAY_MS
        s = p.run()
        statuses.append([(r.status, r.error) for r in s.results])
    full = hours(DAY0, clock.now)
    before = target_hours(spark, f"{p.root}/silver") == full
    plan = p.rollback(modules=[2001, 3001], since="2024-03-04")  # cut at day 2: the
    # earliest silver run with until > since is the day-2..day-4 window
    after_rollback = target_hours(spark, f"{p.root}/silver")
    clock.now += H
    s = p.run()
    silver = target_hours(spark, f"{p.root}/silver")
    result("pipeline", statuses=statuses, complete_before=before, rolled_back=plan.run_ids,
           after_rollback_max=max(after_rollback) if after_rollback else None,
           cut_hour=(DAY0 + 2 * DAY_MS) // H,
           reload=[r.status for r in s.results],
           silver_exactly_once=silver == hours(DAY0, DAY0 + 4 * DAY_MS),  # max 2 days a run
           ledger_rolled_back=sum(r["status"] == "ROLLED_BACK"
                                  for r in p.store.list_runs(pipeline="pl")))


def scenario_all(spark, a) -> None:
    result("executors", **executor_facts(spark))
    scenario_files(spark, a)
    if a.src_jdbc:
        scenario_jdbc(spark, a)
    scenario_pipeline(spark, a)
    result("state", url_scheme=os.environ["SPARKMARK_STATE"].split(":", 1)[0])


def scenario_crash(spark, a) -> None:
    """Read JSON input, stage it in a parquet and a JDBC sink, then (``--hang``) wait to be killed
    before the commit; without ``--hang`` commit normally."""
    from sparkmark import Job
    job = Job(spark, lease_ms=30_000).init("crash", ENABLE)
    mark("init")
    df = job.read.files(a.input, format="json", transformation_ctx="src",
                        options={"schema": "id LONG, v STRING"})
    files_n = job.write(df, a.target, format="parquet", transformation_ctx="files")
    jdbc_n = job.write_jdbc(df, a.dst_jdbc, "crash_target", properties={"user": "postgres"},
                            transformation_ctx="jdbc")
    mark("staged")
    if a.hang:
        time.sleep(600)
    job.commit()
    run = job.store.get_run(job.run_id)
    result("crash", status=run["status"], files=files_n, jdbc=jdbc_n,
           taken_over=[r["run_id"] for r in job.store.list_runs(job_name="crash")
                       if r["status"] == "FAILED"])


def _wait_file(path: Path, timeout: float = 300) -> None:
    end = time.time() + timeout
    while not path.exists():
        if time.time() > end:
            raise TimeoutError(f"{path} did not appear within {timeout}s")
        time.sleep(0.1)


def scenario_driver_a(spark, a) -> None:
    """Two drivers, one store — driver A: holds job 'shared' (short lease, busy heartbeat)
    while it runs a pipeline with a rollback; commits 'shared' only after B finished."""
    from sparkmark import Job
    work = Path(a.work)
    shared = Job(spark, lease_ms=1_500).init("shared", ENABLE)  # heartbeat every 0.5 s
    (work / "a-holding").write_text(shared.run_id)
    mark("holding")
    scenario_pipeline(spark, argparse.Namespace(work=str(work / "a")))
    _wait_file(work / "b-done")
    shared.commit()
    result("driver_a", shared_run=shared.run_id)


def scenario_driver_b(spark, a) -> None:
    """Driver B: tries job 'shared' (must be refused), then runs plain jobs while A's lease
    lives; signals 'b-done' so that A commits only afterwards."""
    from test_files import write_orders

    from sparkmark import Job
    from sparkmark.core.errors import ConcurrentRunError
    work = Path(a.work)
    _wait_file(work / "a-holding")
    holder = (work / "a-holding").read_text()
    refused = None
    try:
        Job(spark).init("shared", ENABLE)
    except ConcurrentRunError as e:
        refused = str(e)
    src = work / "b-in"
    store_ms = []
    got = []
    for i in range(3):
        write_orders("json", f"{src}/f{i}.json", [10 * i, 10 * i + 1], int(time.time() * 1000)
                     - 120_000)
        t0 = time.monotonic()
        job = Job(spark).init(f"plain-{i % 2}", ENABLE)
        t_init = time.monotonic() - t0
        df = job.read.files(str(src), format="json", transformation_ctx="src")
        job.write(df, str(work / f"b-out-{i % 2}"), format="parquet", transformation_ctx="sink")
        t1 = time.monotonic()
        job.commit()
        store_ms.append(round(1000 * (t_init + time.monotonic() - t1)))
        got.append(job.run_id)
    (work / "b-done").write_text("ok")
    result("driver_b", holder=holder, refused=refused, runs=got, store_ms=store_ms)


SCENARIOS = {"all": scenario_all, "pipeline": scenario_pipeline, "crash": scenario_crash,
             "driver_a": scenario_driver_a,
             "driver_b": scenario_driver_b}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--master", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--src-jdbc")
    ap.add_argument("--src-sa")
    ap.add_argument("--dst-jdbc")
    ap.add_argument("--input")
    ap.add_argument("--target")
    ap.add_argument("--cores-max", default="2")
    ap.add_argument("--hang", action="store_true")
    a = ap.parse_args()
    from sparkmark.devtools.cluster import cluster_session
    spark = cluster_session(a.master, f"sparkmark-{a.scenario}",
                            extra_conf={"spark.cores.max": a.cores_max})
    try:
        SCENARIOS[a.scenario](spark, a)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
