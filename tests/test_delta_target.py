"""``job.write(df, target, format="delta")`` on real Delta Lake tables (Spark 3.5 and 4.1, a real
SQLite store): each run's rows are appended once, in one commit whose ``commitInfo`` names job
and run and its write (no ``txn``: Delta would rebuild the table's whole state to check it); a
run that does not count has its rows removed in one commit, and a run with nothing new makes
none.  Covers: bookmarked
files -> Delta, a re-run adds nothing, a failed run leaves nothing, a catalog table by name,
SIGKILL of a driver process before, inside (committed, version not yet in the ledger) and after
the Delta commit and after the state commit, then a re-run with new input: every record once;
``reset --remove-output`` and its refusal after ``OPTIMIZE`` rewrote a run's files; delta-rs
(the ``deltalake`` package) reads the same rows.

Runs in a pytest process of its own (``make test-delta``: the session must start with Delta's
extensions); skipped elsewhere, failed under SPARKMARK_REQUIRE_DELTA=1 when the jars are
missing."""
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
from sparkmark.core.errors import ConfigError, SinkError
from sparkmark.core.options import ENABLE
from sparkmark.sinks.delta import REMOVES_KEY
from sparkmark.sinks.publish import outputs_of

REQUIRED = os.environ.get("SPARKMARK_REQUIRE_DELTA") == "1"
SRC = str(Path(__file__).resolve().parents[1] / "src")
EN = {"job_bookmark_option": ENABLE}
MIN = 60_000
JOB = "to_delta"


def add_batch(src: Path, name: str, ids: list[int], mtime: int) -> None:
    src.mkdir(parents=True, exist_ok=True)
    p = src / f"{name}.json"
    p.write_text("".join(json.dumps({"id": i, "v": f"v{i}"}) + "\n" for i in ids))
    os.utime(p, ns=(mtime * 1_000_000, mtime * 1_000_000))


class Flow:
    """Bookmarked JSON files in ``src`` -> the Delta table ``target`` (a path or a name)."""

    def __init__(self, spark, state, clock, tmp_path, target=None):
        self.spark, self.state, self.clock = spark, state, clock
        self.src = tmp_path / "src"
        self.target = target or str(tmp_path / "out")
        self.batches = 0

    def add(self, *ids):
        add_batch(self.src, f"b{self.batches}", list(ids), self.clock.now + 5 * MIN)
        self.batches += 1
        self.clock.advance(60 * MIN)

    def run(self, after_write=None, stamp=True, options=None, target=None):
        job = Job(self.spark, state=self.state, clock=self.clock).init(JOB, EN)
        try:
            df = job.read.files(str(self.src), format="json", transformation_ctx="src")
            n = job.write(df, target or self.target, format="delta",
                          transformation_ctx="sink", stamp=stamp, options=options)
            if after_write is not None:
                after_write(job)
        except BaseException as e:
            job.fail(e)
            raise
        job.commit()
        self.clock.advance(MIN)
        return n, job.run_id

    def table(self):
        if "/" in self.target:
            return self.spark.read.format("delta").load(self.target)
        return self.spark.table(self.target)

    def ids(self):
        return sorted(r.id for r in self.table().select("id").collect())

    def rows(self):
        return sorted((r.id, r.sm_run_id) for r in self.table().collect())

    def history(self):
        name = f"delta.`{self.target}`" if "/" in self.target else self.target
        return self.spark.sql(f"DESCRIBE HISTORY {name}").orderBy("version").collect()

    def ledger(self):
        return Bookmarks(self.state).store.list_runs(job_name=JOB)

    def bookmark_version(self):
        return Bookmarks(self.state).get(JOB)["Version"]


@pytest.fixture(autouse=True)
def delta_rs_reads_every_table_left(request, tmp_path):
    """After each test: every Delta table it left under its tmp_path (targets, crash trials'
    targets, unstamped ones) opens in delta-rs (the ``deltalake`` package, no Spark) with the
    ids Spark reads, so the logs are valid for other engines too."""
    yield
    spark = request.node.funcargs.get("delta")  # None: the test never got a Delta session
    if spark is None:
        return
    for log in sorted(tmp_path.rglob("_delta_log")):
        location = str(log.parent)
        df = spark.read.format("delta").load(location)
        if "id" not in df.columns:
            continue
        assert _delta_rs_ids(location) == sorted(r[0] for r in df.select("id").collect()), \
            location


@pytest.fixture
def flow(delta, sqlite_url, clock, tmp_path):
    return Flow(delta, sqlite_url, clock, tmp_path)


def _meta(h):
    return json.loads(h.userMetadata) if h.userMetadata else {}


def test_each_run_appends_once_and_commit_info_names_job_and_run(flow):
    flow.add(1, 2)
    n, r1 = flow.run()
    assert n == 2 and flow.rows() == [(1, r1), (2, r1)]
    n, r2 = flow.run()  # nothing new
    assert n == 0 and flow.ids() == [1, 2]
    flow.add(3)
    n, r3 = flow.run()
    assert n == 1 and flow.ids() == [1, 2, 3]
    ledger = flow.ledger()
    assert [r["status"] for r in ledger] == ["SUCCEEDED", "EMPTY", "SUCCEEDED"]
    assert [r["records_written"] for r in ledger] == [2, 0, 1]
    assert [r["publish_state"] for r in ledger] == ["done", None, "done"]
    assert outputs_of(ledger[1]) == []  # the EMPTY run made no Delta commit and staged nothing
    outs = [outputs_of(r)[0] for r in (ledger[0], ledger[2])]
    history = flow.history()
    assert [h.version for h in history] == [0, 1]  # two runs with rows, two versions
    for out, rid in zip(outs, (r1, r3)):
        assert (out.kind, out.target, out.run_id) == ("delta", flow.target, rid)
        assert out.txn_version == out.before + 1
        h = history[out.version]  # the ledger names the version each run wrote
        assert h.operation == "WRITE"
        meta = _meta(h)
        assert meta["sparkmark.job"] == JOB and meta["sparkmark.run-id"] == rid
        assert meta["sparkmark.ctx"] == "sink" and meta["sparkmark.write-id"] == out.write_id
    # no txn action: Delta would check it against every transaction of the table, a rebuild
    # of the whole table state on each write
    log = Path(flow.target) / "_delta_log" / f"{outs[1].version:020d}.json"
    assert not [x for x in log.read_text().splitlines() if '"txn"' in x]


def test_a_failed_run_leaves_no_rows_and_the_next_writes_once(flow):
    flow.add(1, 2)
    seen = {}

    def boom(job):  # the Delta commit is made: a plain reader sees the rows now
        seen["ids"] = flow.ids()
        raise RuntimeError("after the write")

    with pytest.raises(RuntimeError, match="after the write"):
        flow.run(after_write=boom)
    assert seen["ids"] == [1, 2]
    assert flow.ids() == [] and flow.ledger()[-1]["status"] == "FAILED"
    failed = outputs_of(flow.ledger()[-1])[0]
    removal = flow.history()[-1]
    assert removal.operation == "DELETE" and _meta(removal)[REMOVES_KEY] == failed.write_id
    n, r2 = flow.run()
    assert n == 2 and flow.rows() == [(1, r2), (2, r2)]


def test_unstamped_rows_of_a_failed_run_are_removed_too(flow):
    """``stamp=False``: the failed run's commit is the table's latest, so it is undone as one
    commit (``DELETE`` of every row when that commit made the table, else ``RESTORE``)."""
    def boom(job):
        raise RuntimeError("after the write")

    flow.add(1, 2)
    with pytest.raises(RuntimeError, match="after the write"):
        flow.run(after_write=boom, stamp=False)
    assert flow.ids() == [] and flow.history()[-1].operation == "DELETE"
    n, _ = flow.run(stamp=False)
    assert n == 2 and flow.ids() == [1, 2]
    assert "sm_run_id" not in flow.table().columns
    flow.add(3)
    with pytest.raises(RuntimeError, match="after the write"):
        flow.run(after_write=boom, stamp=False)
    assert flow.ids() == [1, 2] and flow.history()[-1].operation == "RESTORE"
    n, _ = flow.run(stamp=False)
    assert n == 1 and flow.ids() == [1, 2, 3]


def test_a_catalog_table_by_name(delta, sqlite_url, clock, tmp_path):
    name = f"default.dtgt{os.getpid()}"
    delta.sql(f"CREATE TABLE {name} (id BIGINT, v STRING, _rescued_data STRING, "
              "sm_run_id STRING, sm_snapshot_ts TIMESTAMP) USING delta")
    f = Flow(delta, sqlite_url, clock, tmp_path, target=name)
    f.add(1, 2)
    _, r1 = f.run()
    f.add(3)
    _, r2 = f.run()
    assert f.rows() == [(1, r1), (2, r1), (3, r2)]
    assert _meta(f.history()[-1])["sparkmark.run-id"] == r2
    bm = Bookmarks(sqlite_url, clock=clock)
    bm.reset(JOB, run_id=r1, remove_output=True, spark=delta)
    assert f.ids() == [1, 2]
    n, _ = f.run()
    assert n == 1 and f.ids() == [1, 2, 3]
    location = delta.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]
    assert _delta_rs_ids(location) == [1, 2, 3]  # delta-rs reads the catalog table's rows


def test_bad_targets_and_options_change_nothing(delta, flow, tmp_path):
    flow.add(1)
    plain = str(tmp_path / "plain")
    delta.createDataFrame([(0, "x")], "id BIGINT, v STRING").write.format("delta").save(plain)
    with pytest.raises(SinkError, match=r"no column\(s\) \[.*'sm_run_id', 'sm_snapshot_ts'\].*"
                                        r"ALTER TABLE delta.`file:.*` ADD COLUMNS"):
        flow.run(target=plain)
    with pytest.raises(SinkError, match="cannot be opened"):
        flow.run(target="default.no_such_table_here")
    parquet_table = f"default.ptgt{os.getpid()}"
    delta.sql(f"CREATE TABLE {parquet_table} (id BIGINT, v STRING) USING parquet")
    with pytest.raises(SinkError, match="is not a Delta table \\(format 'parquet'\\)"):
        flow.run(target=parquet_table)
    with pytest.raises(ConfigError, match="cannot be used with job.write to a Delta"):
        flow.run(options={"txnAppId": "mine"})
    (tmp_path / "notdelta").mkdir()
    (tmp_path / "notdelta" / "x.parquet").write_text("x")
    with pytest.raises(SinkError, match="no Delta table"):
        flow.run(target=str(tmp_path / "notdelta"))
    assert [r["status"] for r in flow.ledger()] == ["FAILED"] * 5
    assert not os.path.exists(flow.target)
    assert delta.table(parquet_table).count() == 0
    assert len(delta.sql(f"DESCRIBE HISTORY delta.`{plain}`").collect()) == 1
    n, _ = flow.run()
    assert n == 1 and flow.ids() == [1]


# ------------------------------------------------------------------------- crash trials
DRIVER = textwrap.dedent("""
    import os, signal, sys
    from sparkmark import Job
    from sparkmark.core.options import ENABLE
    from sparkmark.devtools.delta import delta_jars, delta_session_conf
    from sparkmark.engine.spark import local_session
    import sparkmark.sinks.delta as sink
    import sparkmark.sinks.publish as publish

    state, src, target, point, now, wh = sys.argv[1:7]

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "before":          # the ledger has the output; no Delta commit yet
        sink._append = die
    elif point == "inside":        # the Delta commit landed; the ledger has no version yet
        sink._committed = die
    elif point == "after_commit":  # the state store committed; the publish never ran
        publish.publish_outputs = die
    conf = dict(delta_session_conf(jars=delta_jars(fetch=False), snapshot_partitions=2,
                                   listing_parallelism=2))
    conf["spark.sql.warehouse.dir"] = wh
    spark = local_session("sparkmark-delta-crash", extra_conf=conf)
    job = Job(spark, state=state, clock=lambda: int(now)).init("%s", {"job_bookmark_option":
                                                                     ENABLE})
    df = job.read.files(src, format="json", transformation_ctx="src")
    job.write(df, target, format="delta", transformation_ctx="sink")
    if point == "after_write":     # committed to Delta, version in the ledger, state not saved
        die()
    job.commit()
    print("NOT KILLED")
""" % JOB)


@pytest.mark.parametrize("point", ["before", "inside", "after_write", "after_commit"])
def test_sigkill_around_the_delta_commit_then_rerun_with_new_input(flow, tmp_path, point):
    flow.add(1, 2)
    _, r1 = flow.run()
    flow.add(11, 12)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYSPARK_PYTHON=sys.executable)
    res = subprocess.run([sys.executable, str(script), flow.state, str(flow.src), flow.target,
                          point, str(flow.clock.now), str(tmp_path / "wh")],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == -signal.SIGKILL, (res.returncode, res.stdout, res.stderr[-3000:])
    assert "NOT KILLED" not in res.stdout
    crashed = flow.ledger()[-1]
    assert crashed["status"] == ("SUCCEEDED" if point == "after_commit" else "RUNNING")
    out = outputs_of(crashed)[0]
    assert out.version is None if point in ("before", "inside") else out.version is not None
    # what a plain reader sees until the next run: the crashed run's rows once it committed
    # to Delta, whether or not the state store counted it
    assert flow.ids() == ([1, 2] if point == "before" else [1, 2, 11, 12])
    flow.add(21)  # new input arrives before the re-run
    n, r3 = flow.run()
    assert flow.ids() == [1, 2, 11, 12, 21]  # every record once
    ledger = {r["run_id"]: r for r in flow.ledger()}
    if point == "after_commit":
        assert n == 1
        assert (ledger[crashed["run_id"]]["status"],
                ledger[crashed["run_id"]]["publish_state"]) == ("SUCCEEDED", "done")
        assert {r.sm_run_id for r in flow.table().where("id >= 11 AND id < 20").collect()} \
            == {crashed["run_id"]}
    else:
        assert n == 3
        assert ledger[crashed["run_id"]]["status"] == "FAILED"
        assert ledger[crashed["run_id"]]["publish_state"] == "discarded"
        assert {r.sm_run_id for r in flow.table().where("id >= 11").collect()} == {r3}
        removals = [h for h in flow.history() if h.operation == "DELETE"]
        assert len(removals) == (0 if point == "before" else 1)  # one commit removed them
    n, _ = flow.run()
    assert n == 0 and flow.ids() == [1, 2, 11, 12, 21]


# ------------------------------------------------------------------------- rollback
def test_reset_remove_output_removes_each_runs_rows_in_one_commit(flow, delta):
    runs = []
    for k in range(3):
        flow.add(10 * k + 1, 10 * k + 2)
        runs.append(flow.run()[1])
    r1, r2, r3 = runs
    bm = Bookmarks(flow.state, clock=flow.clock)
    plan = bm.reset(JOB, run_id=r1, remove_output=True, dry_run=True, spark=delta)
    assert len(plan.removed) == 2 and all("2 rows of run" in x for x in plan.removed)
    assert flow.ids() == [1, 2, 11, 12, 21, 22]  # the dry run changed nothing
    versions = len(flow.history())
    bm.reset(JOB, run_id=r1, remove_output=True, spark=delta)
    assert flow.rows() == [(1, r1), (2, r1)]
    history = flow.history()
    assert len(history) == versions + 2  # one DELETE commit per run
    assert [h.operation for h in history[-2:]] == ["DELETE", "DELETE"]
    assert sorted(_meta(h)["sparkmark.run-id"] for h in history[-2:]) == sorted([r2, r3])
    assert [r["status"] for r in flow.ledger()] == ["SUCCEEDED", "ROLLED_BACK", "ROLLED_BACK"]
    again = bm.reset(JOB, run_id=r1, remove_output=True, dry_run=True, spark=delta)
    assert again.removed == []
    n, _ = flow.run()  # rewound: the rows come back once
    assert n == 4 and flow.ids() == [1, 2, 11, 12, 21, 22]


def test_rollback_is_refused_when_later_commits_rewrote_the_runs_files(flow, delta):
    flow.add(1)
    _, r1 = flow.run()
    flow.add(2)
    flow.run()
    flow.add(3)
    flow.run()
    delta.sql(f"OPTIMIZE delta.`{flow.target}`").collect()
    assert flow.history()[-1].operation == "OPTIMIZE"
    versions = len(flow.history())
    version = flow.bookmark_version()
    bm = Bookmarks(flow.state, clock=flow.clock)
    with pytest.raises(SinkError, match=r"later commits rewrote its data files.*the table was "
                                        "not changed"):
        bm.reset(JOB, run_id=r1, remove_output=True, spark=delta)
    assert flow.ids() == [1, 2, 3] and len(flow.history()) == versions
    assert flow.bookmark_version() == version
    assert [r["status"] for r in flow.ledger()] == ["SUCCEEDED"] * 3


def test_delta_rs_reads_the_rows_spark_wrote(flow):
    deltalake = pytest.importorskip("deltalake") if not REQUIRED else __import__("deltalake")
    flow.add(1, 2)
    _, r1 = flow.run()
    flow.add(3)
    _, r2 = flow.run()
    table = deltalake.DeltaTable(flow.target)
    got = table.to_pyarrow_table(columns=["id", "sm_run_id"]).to_pylist()
    assert sorted((r["id"], r["sm_run_id"]) for r in got) == flow.rows() == [
        (1, r1), (2, r1), (3, r2)]
    meta = [json.loads(h["userMetadata"]) for h in table.history() if h.get("userMetadata")]
    assert {m["sparkmark.run-id"] for m in meta} == {r1, r2}


def _delta_rs_ids(location: str) -> list[int]:
    """The ids delta-rs (the ``deltalake`` package, no Spark) reads at ``location``."""
    deltalake = pytest.importorskip("deltalake") if not REQUIRED else __import__("deltalake")
    table = deltalake.DeltaTable(location.replace("file:", "", 1))
    return sorted(r["id"] for r in table.to_pyarrow_table(columns=["id"]).to_pylist())


# ---------------------------------------------------------------------- pipeline modules
def test_pipeline_modules_write_delta_tables_exactly_once_and_roll_back(delta, sqlite_url,
                                                                        clock, tmp_path):
    """A two-module pipeline: bronze reads a bookmarked Delta source into a Delta table by
    path, silver windows bronze's table into another; each module run is one stamped commit
    naming the module's job; a rollback of silver's second run removes its rows in one DELETE
    commit and the next run reloads them once."""
    from pyspark.sql import functions as F

    from sparkmark import Pipeline
    from sparkmark.core.errors import PipelineError
    from sparkmark.planning.windows import DAY_MS, parse_time
    src, bronze, silver = (str(tmp_path / n) for n in ("src", "bronze", "silver"))
    delta.createDataFrame([], "id BIGINT, v BIGINT").write.format("delta").save(src)
    p = Pipeline("deltapl", delta, state=sqlite_url, primordial_date="2024-03-01", clock=clock)

    @p.module(id=1001, name="Bronze_Orders", layer="bronze", target=bronze, format="delta")
    def bronze_mod(ctx):
        return ctx.job.read.table(f"delta.`{src}`", transformation_ctx="orders")

    @p.module(id=2001, name="Silver_Orders", layer="silver", target=silver, format="delta",
              depends_on=[1001])
    def silver_mod(ctx):
        return (ctx.window(ctx.spark.read.format("delta").load(bronze))
                .select("id", (F.col("v") * 10).alias("v10")))

    def ids(path):
        return sorted(r.id for r in delta.read.format("delta").load(path).collect())

    def history(path):
        return delta.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()

    day0, expected, runs = parse_time("2024-03-01"), [], []
    for day, new in ((1, (1, 2, 3)), (2, (4, 5)), (3, ())):
        if new:
            delta.createDataFrame([(i, i) for i in new], "id BIGINT, v BIGINT") \
                .write.format("delta").mode("append").save(src)
            expected += new
        clock.now = day0 + day * DAY_MS
        s = p.run()
        assert not s.failed, [(r.get("status"), r.get("error")) for r in s.rows]
        runs.append(s)
        assert ids(bronze) == expected and ids(silver) == expected
    assert [r.status for r in runs[-1].results] == ["EMPTY", "EMPTY"]
    writes = [h for h in history(silver) if h.operation == "WRITE"]
    assert writes and all(_meta(h)["sparkmark.job"] == "deltapl.2001" for h in writes)
    assert {_meta(h)["sparkmark.run-id"] for h in writes} >= \
        {r.run_id for s in runs[:2] for r in s.results if r.module_id == 2001}

    second = [r.run_id for r in runs[1].results if r.module_id == 2001][0]
    plan = p.rollback(modules=[2001], run_id=second, dry_run=True)
    assert plan.dry_run and ids(silver) == expected
    versions = len(history(silver))
    p.rollback(modules=[2001], run_id=second)
    assert ids(silver) == [1, 2, 3] and ids(bronze) == expected
    after = history(silver)
    assert len(after) == versions + 1 and after[-1].operation == "DELETE"
    assert _meta(after[-1])["sparkmark.run-id"] == second
    clock.advance(3_600_000)
    s = p.run()
    assert not s.failed, s.rows
    assert ids(silver) == expected and ids(bronze) == expected
    for path in (bronze, silver):  # another engine reads the same rows (delta-rs)
        assert _delta_rs_ids(path) == ids(path)

    with pytest.raises(PipelineError, match="unknown format 'hudi'.*delta"):
        p.module(id=3001, name="G", layer="gold", target=str(tmp_path / "g"), format="hudi")


# ---------------------------------------------------------------------- the Glue layer
def test_glue_from_catalog_reads_and_writes_delta_tables_exactly_once(delta, sqlite_url, clock,
                                                                      tmp_path, monkeypatch):
    """A Glue script's from_catalog on Delta tables mapped by location (the source) and found
    in the Spark catalog by its provider (the target): bookmarked by version, each run's rows
    appended once (unstamped, as Glue writes), a re-run adds nothing; bad entries are one
    clear error with nothing committed."""
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.dynamicframe import DynamicFrame
    from sparkmark.glue.job import Job as GlueJob
    from sparkmark.glue.utils import getResolvedOptions
    glue = GlueContext(delta.sparkContext)
    src = str(tmp_path / "gsrc")
    tgt = f"sm_glue_delta_{os.getpid()}"
    delta.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING") \
        .write.format("delta").save(src)
    delta.sql(f"DROP TABLE IF EXISTS default.{tgt}")
    delta.sql(f"CREATE TABLE default.{tgt} (id BIGINT, v STRING) USING delta")
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"db.events": {"format": "delta", "path": src}}))
    monkeypatch.setenv("SPARKMARK_GLUE_CATALOG", str(catalog))

    def run():
        args = getResolvedOptions(["script.py", "--JOB_NAME", "gdelta", "--job-bookmark-option",
                                   "job-bookmark-enable"], ["JOB_NAME"])
        job = GlueJob(glue, state=sqlite_url, clock=clock)
        job.init(args["JOB_NAME"], args)
        try:
            frame = glue.create_dynamic_frame.from_catalog(database="db", table_name="events",
                                                           transformation_ctx="src")
            glue.write_dynamic_frame.from_catalog(frame=frame, database="default",
                                                  table_name=tgt, transformation_ctx="sink")
        except BaseException as e:
            job.sparkmark_job.fail(e)
            raise
        job.commit()
        clock.advance(60_000)

    def ids():
        return sorted(r.id for r in delta.table(f"default.{tgt}").collect())

    run()
    assert ids() == [1, 2]
    delta.createDataFrame([(3, "c")], "id BIGINT, v STRING") \
        .write.format("delta").mode("append").save(src)
    run()
    assert ids() == [1, 2, 3]  # the bookmark: only the new version's row
    versions = delta.sql(f"DESCRIBE HISTORY default.{tgt}").count()
    run()
    assert ids() == [1, 2, 3]
    assert Bookmarks(sqlite_url).get("gdelta")["JobBookmark"]["src"]["version"] == 1
    assert delta.sql(f"DESCRIBE HISTORY default.{tgt}").count() == versions  # no commit

    version = Bookmarks(sqlite_url).get("gdelta")["Version"]
    catalog.write_text(json.dumps({"db.events": {"format": "delta", "path": src,
                                                 "table": "x.y"}}))
    with pytest.raises(ConfigError, match="a Delta entry needs one of 'table'"):
        run()
    catalog.write_text(json.dumps({"db.events": {"format": "delta", "path": src}}))
    job = GlueJob(glue, state=sqlite_url, clock=clock)
    job.init("gdelta", {"job_bookmark_option": "job-bookmark-enable"})
    frame = DynamicFrame.fromDF(delta.createDataFrame([(9, "z")], "id BIGINT, v STRING"), glue,
                                "f")
    with pytest.raises(ConfigError, match=f"do not apply to Delta table default.{tgt}"):
        glue.write_dynamic_frame.from_catalog(frame=frame, database="default", table_name=tgt,
                                              additional_options={"partitionKeys": ["v"]})
    job.sparkmark_job.fail(RuntimeError("test over"))
    assert Bookmarks(sqlite_url).get("gdelta")["Version"] == version and ids() == [1, 2, 3]
    location = delta.sql(f"DESCRIBE DETAIL default.{tgt}").collect()[0]["location"]
    assert _delta_rs_ids(location) == [1, 2, 3]  # delta-rs reads the catalog table's rows
