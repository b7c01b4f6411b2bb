"""``job.write(df, "cat.db.t", format="iceberg")`` on real Apache Iceberg tables (Spark 3.5 and 4.1, a
Hadoop catalog under tmp): write-audit-publish makes each run's rows visible exactly once, only
after the run commits.  Covers: append once per run (a re-run adds nothing), a failed run leaves
nothing visible, the snapshot summary names job and run, a reader during the run sees none of
it, a repeated or raced publish adds nothing, a publish that fails after the state commit is
finished by the next run, bad targets are one clear error with the bookmark unchanged, rollback
(``bookmark reset --remove-output``) and its refusal after compaction, and seeded SIGKILL trials
(``benchmarks/crash.py --sink iceberg``).

Needs the Iceberg runtime of the Spark line (``make jars``); skips otherwise, unless
SPARKMARK_REQUIRE_ICEBERG=1.  Runs in its own pytest process (``make test-iceberg``)."""
from __future__ import annotations

import importlib.util
import itertools
import json
import os
from pathlib import Path

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError, SinkError
from sparkmark.core.options import ENABLE
from sparkmark.sinks.publish import outputs_of, publish_outputs

from conftest import iceberg_jar_paths

ROOT = Path(__file__).resolve().parents[1]
_counter = itertools.count()


def _name(prefix, catalog="local"):
    return f"{catalog}.db.{prefix}{os.getpid()}_{next(_counter)}"


class Tables:
    """A source table (read with bookmarks) and a stamped target table."""

    def __init__(self, spark, catalog="local"):
        self.spark = spark
        self.src, self.tgt = _name("src"), _name("tgt", catalog)
        spark.sql(f"CREATE TABLE {self.src} (id BIGINT, v STRING) USING iceberg")
        spark.sql(f"CREATE TABLE {self.tgt} (id BIGINT, v STRING, sm_run_id STRING, "
                  "sm_snapshot_ts TIMESTAMP) USING iceberg")

    def insert(self, *ids):
        values = ", ".join(f"({i}, 'v{i}')" for i in ids)
        self.spark.sql(f"INSERT INTO {self.src} VALUES {values}")

    def ids(self):
        return sorted(r[0] for r in self.spark.sql(f"SELECT id FROM {self.tgt}").collect())

    def rows(self):
        return self.spark.sql(f"SELECT id, sm_run_id FROM {self.tgt}").collect()

    def current(self):
        rows = self.spark.sql(f"SELECT snapshot_id FROM {self.tgt}.refs "
                              "WHERE name = 'main'").collect()
        return rows[0][0] if rows else None

    def summary(self, snapshot_id):
        return self.spark.sql(f"SELECT summary FROM {self.tgt}.snapshots "
                              f"WHERE snapshot_id = {snapshot_id}").collect()[0][0]


class Runner:
    def __init__(self, spark, state, clock, name="ice_sink_job"):
        self.spark, self.state, self.clock, self.name = spark, state, clock, name

    def run(self, t, between=None, after_write=None, target=None, options=None, stamp=True):
        job = Job(self.spark, state=self.state, clock=self.clock)
        job.init(self.name, {"job_bookmark_option": ENABLE})
        try:
            df = job.read.table(t.src, transformation_ctx="src")
            if between is not None:
                df = between(df)
            n = job.write(df, target or t.tgt, format="iceberg", transformation_ctx="sink",
                          options=options, stamp=stamp)
            if after_write is not None:
                after_write(job)
        except BaseException as e:
            job.fail(e)
            raise
        job.commit()
        self.clock.advance(60_000)
        return n, job.run_id

    def ledger(self):
        return Job(None, state=self.state).store.list_runs(job_name=self.name)

    def version(self):
        return Bookmarks(self.state).get(self.name)["Version"]


@pytest.fixture
def runner(ice, sqlite_url, clock):
    return Runner(ice, sqlite_url, clock)


@pytest.fixture(params=["jvm helper", "py4j calls"])
def path(request, monkeypatch):
    """Both ways the sink reaches the table: ``java/SparkmarkTableHelper`` (one round trip a
    step, the usual way) and call by call through py4j (where the helper cannot load)."""
    from sparkmark.sinks import table as sink
    if request.param == "py4j calls":
        monkeypatch.setattr(sink, "helper", lambda *a: None)
    return request.param


def test_the_helper_holds_the_target_and_says_what_the_py4j_path_says(ice, runner):
    """The helper is what a classic session uses (not a silent fallback): it loads, holds the
    table, and its answers (columns, the WAP property, the staged snapshot) are the py4j
    path's."""
    from sparkmark.engine import tablemeta
    from sparkmark.sinks import table as sink
    t = Tables(ice)
    t.insert(1, 2)
    runner.run(t)
    target = sink._open_target(ice, t.tgt)
    assert isinstance(target, sink._JavaTarget)
    have, props, used = sink._checked_table(ice, t.tgt)
    assert used.__class__ is sink._JavaTarget
    handle = tablemeta.open_table(ice, t.tgt, read=False)
    assert have == {c.lower() for c in handle.columns(handle.base)}
    assert props == {sink.WAP_PROP: "true"}
    wap = ice.sql(f"SELECT summary['wap.id'] FROM {t.tgt}.snapshots WHERE "
                  "summary['wap.id'] IS NOT NULL").collect()[0][0]
    staged, via = sink._staged_snapshot(ice, t.tgt, wap, target)
    assert via is target
    py4j, _ = sink._staged_snapshot(ice, t.tgt, wap, tablemeta.open_table(ice, t.tgt, read=False))
    assert staged == py4j and staged.records == 2
    assert sink._open_target(ice, t.tgt + "_missing") is None
    assert sink._open_target(ice, t.tgt + ".branch_main") is None


def test_a_cached_dataframe_of_the_target_sees_the_published_rows(ice, runner, path):
    """Published with cached data in the session: the table's cached DataFrames see the
    published rows exactly when they would see a plain Spark ``INSERT``'s (Spark 3.5 refreshes
    them, as Iceberg's own cherry-pick procedure does; Spark 4.1 with Iceberg 1.12 keeps a
    cached DataFrame at the snapshot it was cached at, for Spark's own writes too)."""
    probe = _name("probe")
    ice.sql(f"CREATE TABLE {probe} (id BIGINT) USING iceberg "  # as a sparkmark target is
            "TBLPROPERTIES ('write.wap.enabled'='true')")
    ice.sql(f"INSERT INTO {probe} VALUES (1)")
    plain = ice.table(probe).cache()
    assert plain.count() == 1
    ice.sql(f"INSERT INTO {probe} VALUES (2)")
    refreshes = sorted(r.id for r in plain.collect()) == [1, 2]  # what a plain write does
    plain.unpersist()
    t = Tables(ice)
    t.insert(1)
    runner.run(t)
    cached = ice.table(t.tgt).cache()
    assert cached.count() == 1
    t.insert(2, 3)
    runner.run(t)
    assert sorted(r.id for r in cached.collect()) == ([1, 2, 3] if refreshes else [1])
    assert t.ids() == [1, 2, 3]  # a new read sees every published row either way
    cached.unpersist()


def test_each_run_appends_once_and_a_rerun_adds_nothing(ice, runner, path):
    t = Tables(ice)
    t.insert(1, 2)
    n, r1 = runner.run(t)
    assert n == 2 and t.ids() == [1, 2]
    assert {r.sm_run_id for r in t.rows()} == {r1}
    published = t.current()
    n, _ = runner.run(t)  # nothing new in the source
    assert n == 0 and t.ids() == [1, 2]
    assert t.current() == published  # an empty run does not even move the table
    t.insert(3)
    n, r3 = runner.run(t)
    assert n == 1 and t.ids() == [1, 2, 3]
    assert [r["status"] for r in runner.ledger()] == ["SUCCEEDED", "EMPTY", "SUCCEEDED"]
    assert [r["publish_state"] for r in runner.ledger()] == ["done"] * 3
    assert [r["records_written"] for r in runner.ledger()] == [2, 0, 1]
    out = outputs_of(runner.ledger()[-1])[0]
    assert (out.kind, out.target, out.run_id) == ("iceberg", t.tgt, r3)


def test_snapshot_summary_names_job_and_run(ice, runner):
    t = Tables(ice)
    t.insert(1)
    _, run_id = runner.run(t)
    summary = t.summary(t.current())
    assert summary["sparkmark.job"] == runner.name
    assert summary["sparkmark.run-id"] == run_id
    assert summary["sparkmark.ctx"] == "sink"
    assert int(summary["sparkmark.snapshot-ts"]) == runner.ledger()[-1]["snapshot_ts"]
    assert summary["wap.id"].startswith(run_id + "-")


def test_a_failed_run_leaves_nothing_visible_and_the_next_writes_once(ice, runner, path):
    t = Tables(ice)
    t.insert(1, 2)
    before = t.current()

    def boom(job):
        raise RuntimeError("after the write")

    with pytest.raises(RuntimeError, match="after the write"):
        runner.run(t, after_write=boom)
    assert t.ids() == [] and t.current() == before
    assert runner.ledger()[-1]["status"] == "FAILED"
    # the staged snapshot exists, unpublished: it is not in the table's history
    staged = ice.sql(f"SELECT count(*) FROM {t.tgt}.snapshots "
                     "WHERE summary['wap.id'] IS NOT NULL").collect()[0][0]
    assert staged == 1
    n, run_id = runner.run(t)
    assert n == 2 and t.ids() == [1, 2]
    assert {r.sm_run_id for r in t.rows()} == {run_id}


def test_a_reader_during_the_run_sees_none_of_its_rows(ice, runner, path):
    t = Tables(ice)
    t.insert(7, 8)
    runner.run(t)
    t.insert(9)
    before = t.current()
    seen = {}

    def read_now(job):  # written and staged, not committed: what does a reader get?
        seen["ids"] = t.ids()
        seen["current"] = t.current()
        seen["other"] = sorted(r[0] for r in ice.newSession().table(t.tgt).collect())

    runner.run(t, after_write=read_now)
    assert seen == {"ids": [7, 8], "current": before, "other": [7, 8]}
    assert t.ids() == [7, 8, 9]


@pytest.mark.parametrize("writer", ["same session", "another session"])
def test_publish_again_or_after_a_concurrent_commit_adds_nothing_twice(ice, runner, writer, path):
    """The run's publish moves ``main`` to its staged snapshot only when nobody committed since
    the write (a fast-forward against the metadata the write left); another commit in between,
    through this session's cached table or through another session's catalog (its own table
    object: the run's copy of the metadata does not see it, as with another process), makes
    that commit fail, and the publish cherry-picks on top: every row once."""
    t = Tables(ice)
    t.insert(1, 2)
    other = ice if writer == "same session" else ice.newSession()

    def other_writer(job):  # someone else commits to the target before this run publishes
        other.sql(f"INSERT INTO {t.tgt} VALUES (100, 'other', NULL, NULL)")

    _, run_id = runner.run(t, after_write=other_writer)
    assert t.ids() == [1, 2, 100]
    summary = t.summary(t.current())  # a cherry-pick, not a fast-forward
    assert summary["published-wap-id"].startswith(run_id + "-")
    row = runner.ledger()[-1]
    store = Job(None, state=runner.state).store
    # a repeated publish (what recovery does after a crash after the publish) changes nothing
    current = t.current()
    assert publish_outputs(ice, store, run_id, outputs_of(row))
    assert t.ids() == [1, 2, 100] and t.current() == current


def test_the_in_process_publish_of_a_snapshot_published_meanwhile_adds_nothing(ice, runner, path):
    """The run's own publish cherry-picks through the Java table the write used, without the
    ancestry scan; when the staged snapshot was published meanwhile (here by the SQL procedure,
    as a second publisher would), Iceberg refuses and the commit still succeeds, once."""
    t = Tables(ice)
    t.insert(1, 2)
    catalog, ident = t.tgt.split(".", 1)

    def publish_first(job):
        staged = ice.sql(f"SELECT snapshot_id FROM {t.tgt}.snapshots "
                         f"WHERE summary['wap.id'] LIKE '{job.run_id}-%'").collect()
        assert len(staged) == 1 and t.ids() == []  # staged, not visible yet
        ice.sql(f"CALL {catalog}.system.cherrypick_snapshot('{ident}', {staged[0][0]})")
        assert t.ids() == [1, 2]

    n, run_id = runner.run(t, after_write=publish_first)
    assert n == 2 and t.ids() == [1, 2]
    row = runner.ledger()[-1]
    assert row["status"] == "SUCCEEDED" and row["publish_state"] == "done"
    n2, _ = runner.run(t)
    assert n2 == 0 and t.ids() == [1, 2]


def test_a_missing_table_is_one_clear_error_and_the_state_is_unchanged(ice, runner):
    t = Tables(ice)
    t.insert(1)
    runner.run(t)
    version = runner.version()
    t.insert(2)
    missing = _name("missing")
    with pytest.raises(SinkError, match=rf"{missing} does not exist.*CREATE TABLE {missing} "
                                        r"\(id bigint, v string, sm_run_id string, "
                                        r"sm_snapshot_ts timestamp\) USING iceberg"):
        runner.run(t, target=missing)
    assert runner.version() == version and runner.ledger()[-1]["status"] == "FAILED"
    assert not ice.catalog.tableExists(missing)


def test_a_table_without_stamp_columns_names_the_alter_table(ice, runner):
    t = Tables(ice)
    t.insert(1)
    plain = _name("plain")
    ice.sql(f"CREATE TABLE {plain} (id BIGINT, v STRING) USING iceberg")
    with pytest.raises(SinkError, match=rf"no column\(s\) \['sm_run_id', 'sm_snapshot_ts'\].*"
                                        rf"ALTER TABLE {plain} ADD COLUMNS"):
        runner.run(t, target=plain)
    props = dict(ice.sql(f"SHOW TBLPROPERTIES {plain}").collect())
    assert "write.wap.enabled" not in props  # refused before touching the table
    assert runner.version() == 0


def test_stamp_false_writes_dfs_columns_only_and_still_exactly_once(ice, runner):
    t = Tables(ice)
    plain = _name("plain")
    ice.sql(f"CREATE TABLE {plain} (id BIGINT, v STRING) USING iceberg")
    t.insert(1, 2)
    n, run_id = runner.run(t, target=plain, stamp=False)
    assert n == 2
    n, _ = runner.run(t, target=plain, stamp=False)
    assert n == 0
    assert sorted(r[0] for r in ice.table(plain).collect()) == [1, 2]
    current = ice.sql(f"SELECT snapshot_id FROM {plain}.refs WHERE name = 'main'").collect()[0][0]
    summary = ice.sql(f"SELECT summary FROM {plain}.snapshots "
                      f"WHERE snapshot_id = {current}").collect()[0][0]
    assert summary["sparkmark.run-id"] == run_id  # the snapshot still names the run


def test_a_table_of_another_format_and_bad_options_are_refused(ice, runner, tmp_path):
    t = Tables(ice)
    t.insert(1)
    ice.sql(f"CREATE TABLE default.pq{os.getpid()} (id BIGINT, v STRING, sm_run_id STRING, "
            f"sm_snapshot_ts TIMESTAMP) USING parquet LOCATION '{tmp_path / 'pq'}'")
    with pytest.raises(SinkError, match="is not an Apache Iceberg table"):
        runner.run(t, target=f"spark_catalog.default.pq{os.getpid()}")
    with pytest.raises(ConfigError, match="cannot be used with job.write to an Iceberg"):
        runner.run(t, options={"branch": "b1"})
    with pytest.raises(ConfigError, match="catalog.db.table"):
        runner.run(t, target="justaname")
    assert runner.version() == 0 and t.ids() == []


# ------------------------------------------------------------------------- crash trials
def _crash():
    spec = importlib.util.spec_from_file_location("crash", ROOT / "benchmarks" / "crash.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.parametrize("sink", ["iceberg", "iceberg-s3"])
def test_random_sigkills_never_lose_or_duplicate_iceberg_rows(tmp_path, sink, request):
    iceberg_jar_paths()
    if sink == "iceberg-s3":
        request.getfixturevalue("s3_server")  # skips (or fails in CI) without the s3a jars
    trials = int(os.environ.get("SPARKMARK_CRASH_ICEBERG_TRIALS", "3"))
    # seed 4318's first three trials kill between write and commit, in the write, and in the
    # commit (state transaction, then the cherry-pick); report["committed_then_killed"] counts
    # kills after the state commit, which the next run's recovery published.  iceberg-s3: the
    # table's warehouse (data, metadata, manifests) is s3a:// on a moto server
    report = _crash().run_trials(trials, sink, seed=4318, workdir=tmp_path,
                                 log=lambda *_: None)
    assert report["killed"] > 0, report
    assert report["source_records"] > 0
    assert report["duplicates"] == 0 and report["missing"] == 0, report
    assert report["unexpected"] == 0, report
    assert report["last_run"]["status"] == "EMPTY", report
    assert report["exactly_once"], json.dumps(report)


# ------------------------------------------------------------------------- rollback
def _deletes(spark, table):
    return spark.sql(f"SELECT summary['sparkmark.rollback-of'] FROM {table}.snapshots "
                     "WHERE operation = 'delete' ORDER BY committed_at").collect()


def test_reset_remove_output_removes_each_runs_rows_in_one_commit(ice, runner):
    t = Tables(ice)
    t.insert(1, 2)
    _, r1 = runner.run(t)
    t.insert(3)
    _, r2 = runner.run(t)
    t.insert(4)
    _, r3 = runner.run(t)
    bm = Bookmarks(runner.state, clock=runner.clock)
    plan = bm.reset(runner.name, run_id=r1, remove_output=True, dry_run=True, spark=ice)
    assert sorted(plan.removed) == sorted(
        [f"{t.tgt}: 1 data file(s), 1 rows of run {r} (snapshot {s})"
         for r, s in ((r2, _published(ice, t, r2)), (r3, _published(ice, t, r3)))])
    assert t.ids() == [1, 2, 3, 4]  # the dry run changed nothing
    bm.reset(runner.name, run_id=r1, remove_output=True, spark=ice)
    assert t.ids() == [1, 2]
    assert sorted(r[0] for r in _deletes(ice, t.tgt)) == sorted([r2, r3])  # one commit each
    assert [r["status"] for r in runner.ledger()] == ["SUCCEEDED", "ROLLED_BACK", "ROLLED_BACK"]
    # doing it again finds nothing left to remove (a crash after the commit is finished so)
    again = bm.reset(runner.name, run_id=r1, remove_output=True, dry_run=True, spark=ice)
    assert again.removed == []
    n, _ = runner.run(t)  # the bookmark was rewound: the rows come back once
    assert n == 2 and t.ids() == [1, 2, 3, 4]


@pytest.mark.parametrize("ice_catalog", ["s3a"], indirect=True)
def test_a_target_on_an_s3a_warehouse_hides_failed_runs_and_rolls_back(ice, runner,
                                                                       ice_catalog):
    t = Tables(ice, ice_catalog)                  # the target's data and metadata on S3
    t.insert(1, 2)
    n, r1 = runner.run(t)
    assert n == 2 and t.ids() == [1, 2]
    paths = [r[0] for r in ice.sql(f"SELECT file_path FROM {t.tgt}.files").collect()]
    assert paths and all(p.startswith("s3a://") for p in paths), paths
    t.insert(3)
    before = t.current()

    def boom(job):
        raise RuntimeError("after the write")

    with pytest.raises(RuntimeError, match="after the write"):
        runner.run(t, after_write=boom)
    assert t.ids() == [1, 2] and t.current() == before   # staged on S3, not visible
    n, r2 = runner.run(t)
    assert n == 1 and t.ids() == [1, 2, 3]
    bm = Bookmarks(runner.state, clock=runner.clock)
    bm.reset(runner.name, run_id=r1, remove_output=True, spark=ice)
    assert t.ids() == [1, 2] and [r[0] for r in _deletes(ice, t.tgt)] == [r2]
    n, _ = runner.run(t)                          # rewound: row 3 comes back once
    assert n == 1 and t.ids() == [1, 2, 3]


def _published(spark, t, run_id):
    return spark.sql(f"SELECT snapshot_id FROM {t.tgt}.snapshots "
                     f"WHERE summary['sparkmark.run-id'] = '{run_id}'").collect()[0][0]


def test_rollback_is_refused_when_later_snapshots_rewrote_the_runs_files(ice, runner):
    t = Tables(ice)
    t.insert(1)
    _, r1 = runner.run(t)
    t.insert(2)
    runner.run(t)
    ident = t.tgt.split(".", 1)[1]
    ice.sql(f"CALL local.system.rewrite_data_files(table => '{ident}', "
            "options => map('min-input-files', '2'))").collect()
    current = t.current()
    version = runner.version()
    bm = Bookmarks(runner.state, clock=runner.clock)
    with pytest.raises(SinkError, match=r"later snapshots rewrote its data files.*the table was "
                                        "not changed"):
        bm.reset(runner.name, run_id=r1, remove_output=True, spark=ice)
    assert t.ids() == [1, 2] and t.current() == current
    assert runner.version() == version
    assert [r["status"] for r in runner.ledger()] == ["SUCCEEDED", "SUCCEEDED"]


def test_a_publish_that_fails_after_the_state_commit_is_finished_by_the_next_run(ice, runner):
    t = Tables(ice)
    t.insert(1, 2)
    location = next(r[1] for r in ice.sql(f"DESCRIBE TABLE EXTENDED {t.tgt}").collect()
                    if r[0] == "Location").replace("file:", "")
    away = location + ".away"
    job = Job(ice, state=runner.state, clock=runner.clock)
    job.init(runner.name, {"job_bookmark_option": ENABLE})
    job.write(job.read.table(t.src, transformation_ctx="src"), t.tgt, format="iceberg",
              transformation_ctx="sink")
    os.rename(location, away)  # the state commit will succeed, the cherry-pick cannot
    try:
        with pytest.raises(SinkError, match="cannot publish run .* retried by the next run"):
            job.commit()
    finally:
        os.rename(away, location)
    row = runner.ledger()[-1]
    assert (row["status"], row["publish_state"]) == ("SUCCEEDED", "pending")
    assert t.ids() == []  # committed, not yet published: nobody sees the rows
    runner.clock.advance(60_000)
    n, _ = runner.run(t)  # its init publishes the pending run; it finds nothing new itself
    assert n == 0 and t.ids() == [1, 2]
    assert [(r["status"], r["publish_state"]) for r in runner.ledger()] == [
        ("SUCCEEDED", "done"), ("EMPTY", "done")]
