"""``job.read.table`` on real Delta Lake tables (Spark 3.5 with delta-spark 3.3, Spark 4.1 with
delta-spark 4.4): appends read exactly once (by path and by catalog name, partitioned too), empty
runs, the onNonAppend policy (fail, skip, and changes: Delta's change data feed, with a clear
error when the table has it off), broken lineage (a RESTORE to before the bookmark, a dropped and
recreated table, VACUUMed files a run still needs, a log cleaned up), bookmarks disabled, pause
from/to, and option errors leaving the state alone.

Runs in a pytest process of its own (``make test-delta``: the session must start with Delta's
extensions); skipped elsewhere, failed under SPARKMARK_REQUIRE_DELTA=1 when the jars are
missing."""
from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.core.options import DISABLE, ENABLE, PAUSE

REQUIRED = os.environ.get("SPARKMARK_REQUIRE_DELTA") == "1"
_counter = itertools.count()


class Table:
    """A Delta table by path (``delta.`/...```) or, with ``catalog=True``, by name."""

    def __init__(self, spark, tmp_path, catalog=False, partitioned=False, cdf=False):
        self.spark, self.partitioned = spark, partitioned
        n = next(_counter)
        self.path = str(tmp_path / f"t{n}")
        self.name = f"sm_delta_t{os.getpid()}_{n}" if catalog else f"delta.`{self.path}`"
        self.catalog = catalog
        self.create(cdf)

    def create(self, cdf=False):
        part = "PARTITIONED BY (p)" if self.partitioned else ""
        props = "TBLPROPERTIES (delta.enableChangeDataFeed = true)" if cdf else ""
        where = "" if self.catalog else f"LOCATION '{self.path}'"
        name = self.name if self.catalog else f"delta.`{self.path}`"
        self.spark.sql(f"CREATE TABLE {name} (id BIGINT, v STRING, p STRING) USING delta "
                       f"{part} {where} {props}")

    def insert(self, *ids):
        values = ", ".join(f"({i}, 'v{i}', 'p{i % 2}')" for i in ids)
        self.spark.sql(f"INSERT INTO {self.name} VALUES {values}")

    def sql(self, text):
        self.spark.sql(text.format(t=self.name))

    def version(self):
        return self.spark.sql(f"DESCRIBE HISTORY {self.name} LIMIT 1").collect()[0]["version"]


class Runner:
    def __init__(self, spark, state, clock, name="delta_job"):
        self.spark, self.state, self.clock, self.name = spark, state, clock, name

    def run(self, table, option=ENABLE, args=None, ctx="src", options=None, fmt=None):
        job = Job(self.spark, state=self.state, clock=self.clock)
        job.init(self.name, {"job_bookmark_option": option, **(args or {})})
        try:
            df = job.read.table(table.name, transformation_ctx=ctx, options=options, format=fmt)
            rows = sorted(r[0] for r in df.collect())
        except BaseException as e:
            job.fail(e)
            raise
        job.commit()
        self.clock.advance(60_000)
        return rows, df

    def ledger(self):
        return Job(None, state=self.state).store.list_runs(job_name=self.name)

    def info(self, i=-1):
        return json.loads(self.ledger()[i]["config"])["sources"]["src"]

    def element(self):
        return Bookmarks(self.state).get(self.name)["JobBookmark"].get("src")


@pytest.fixture
def runner(delta, sqlite_url, clock):
    return Runner(delta, sqlite_url, clock)


@pytest.mark.parametrize("catalog,partitioned", [(False, False), (True, True)])
def test_appends_are_read_once_by_path_and_by_name(delta, runner, tmp_path, catalog,
                                                   partitioned):
    t = Table(delta, tmp_path, catalog=catalog, partitioned=partitioned)
    t.insert(1, 2)
    rows, df = runner.run(t)
    assert rows == [1, 2] and df.columns == ["id", "v", "p"]
    assert runner.info()["read"] == "as_of" and runner.info()["format"] == "delta"
    t.insert(3)
    t.insert(4, 5)
    rows, df = runner.run(t)
    assert rows == [3, 4, 5]
    assert sorted((r.id, r.p) for r in df.collect()) == [(3, "p1"), (4, "p0"), (5, "p1")]
    info = runner.info()
    assert (info["read"], info["from_version"], info["to_version"]) == \
        ("appends", t.version() - 2, t.version())
    rows, _ = runner.run(t)  # nothing new: EMPTY, the element stays
    assert rows == [] and runner.ledger()[-1]["status"] == "EMPTY"
    assert runner.element()["version"] == t.version()
    t.sql("OPTIMIZE {t}")  # rewrites files, changes no row: never non-append
    t.insert(6)
    rows, _ = runner.run(t)
    assert rows == [6]


def test_non_append_commits_follow_on_non_append(delta, runner, tmp_path):
    t = Table(delta, tmp_path)
    t.insert(1, 2, 3)
    runner.run(t)
    t.insert(4)
    t.sql("DELETE FROM {t} WHERE id = 2")
    t.insert(5)
    with pytest.raises(SourceError, match=r"non-append commit .* \(DELETE\).*onNonAppend=skip"):
        runner.run(t)
    assert runner.ledger()[-1]["status"] == "FAILED"
    rows, _ = runner.run(t, options={"onNonAppend": "skip"})
    assert rows == [4, 5]  # the appended rows only; the DELETE's rewrite is not new rows
    assert [s["operation"] for s in runner.info()["skipped_versions"]] == ["DELETE"]


def test_changes_read_the_change_data_feed(delta, runner, tmp_path):
    t = Table(delta, tmp_path, cdf=True)
    t.insert(1, 2)
    job_opts = {"onNonAppend": "changes"}
    _, df = runner.run(t, options=job_opts)  # first run: every row an insert of the version
    assert df.columns == ["id", "v", "p", "_change_type", "_commit_version", "_commit_timestamp"]
    assert sorted((r.id, r._change_type, r._commit_version) for r in df.collect()) == \
        [(1, "insert", t.version()), (2, "insert", t.version())]
    t.insert(3)
    t.sql("UPDATE {t} SET v = 'new' WHERE id = 1")
    t.sql("DELETE FROM {t} WHERE id = 2")
    _, df = runner.run(t, options=job_opts)
    got = sorted((r.id, r._change_type) for r in df.collect())
    assert got == [(1, "update_postimage"), (1, "update_preimage"), (2, "delete"),
                   (3, "insert")]
    assert runner.info()["read"] == "changes"


def test_changes_without_the_feed_is_one_clear_error(delta, runner, tmp_path):
    t = Table(delta, tmp_path)
    t.insert(1)
    runner.run(t, options={"onNonAppend": "changes"})
    t.insert(2)
    before = runner.element()
    with pytest.raises(SourceError, match="delta.enableChangeDataFeed"):
        runner.run(t, options={"onNonAppend": "changes"})
    assert runner.element() == before


def test_restore_to_before_the_bookmark_is_a_broken_lineage(delta, runner, tmp_path):
    t = Table(delta, tmp_path)
    t.insert(1)
    v1 = t.version()
    t.insert(2)
    runner.run(t)
    t.sql(f"RESTORE TABLE {{t}} TO VERSION AS OF {v1}")
    t.insert(3)
    with pytest.raises(SourceError, match=r"lineage .* restored the table to version .*"
                                          r"bookmark reset"):
        runner.run(t)


def test_a_recreated_table_is_a_broken_lineage(delta, runner, tmp_path):
    t = Table(delta, tmp_path)
    t.insert(1)
    t.insert(2)
    t.insert(3)
    runner.run(t)
    shutil.rmtree(t.path)  # dropped and created again at the same place
    t.create()
    t.insert(7)
    t.insert(8)
    t.insert(9)
    t.insert(10)
    with pytest.raises(SourceError, match=r"new id|now has id"):
        runner.run(t)


def test_vacuumed_files_a_run_needs_are_a_broken_lineage(delta, runner, tmp_path):
    t = Table(delta, tmp_path)
    t.insert(1)
    runner.run(t)
    t.insert(2)
    t.sql("DELETE FROM {t} WHERE id = 2")  # the file of 2 is removed ...
    delta.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        t.sql("VACUUM {t} RETAIN 0 HOURS")  # ... and vacuumed
    finally:
        delta.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")
    with pytest.raises(SourceError, match=r"lineage .* gone \(VACUUM\)"):
        runner.run(t, options={"onNonAppend": "skip"})


def test_a_cleaned_up_log_is_a_broken_lineage(delta, runner, tmp_path):
    t = Table(delta, tmp_path)
    t.insert(1)
    runner.run(t)
    t.insert(2)
    t.insert(3)
    log = os.path.join(t.path, "_delta_log")
    first_new = runner.element()["version"] + 1
    t.sql("ALTER TABLE {t} SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")
    t.insert(4)  # a checkpoint, so Delta still opens the table without the older files
    os.remove(os.path.join(log, f"{first_new:020d}.json"))
    with pytest.raises(SourceError, match=f"version {first_new} is no longer in the table's log"):
        runner.run(t)


def test_bookmarks_disabled_and_pause_from_to(delta, runner, tmp_path):
    t = Table(delta, tmp_path)
    t.insert(1)
    runner.run(t)
    t.insert(2)
    t.insert(3)
    runner.run(t)
    t.insert(4)
    runner.run(t)
    ids = [r["run_id"] for r in runner.ledger()]
    rows, _ = runner.run(t, option=PAUSE, args={"job_bookmark_from": ids[0],
                                                "job_bookmark_to": ids[1]})
    assert rows == [2, 3] and runner.info()["mode"] == "replay"
    rows, _ = runner.run(t, option=DISABLE)
    assert rows == [1, 2, 3, 4] and runner.info()["mode"] == "all"


@pytest.mark.parametrize("options,match", [
    ({"onNonAppend": "bogus"}, "onNonAppend='bogus'"),
    ({"versionAsOf": "1"}, "cannot be used with job.read.table"),
    ({"readChangeFeed": "true"}, "cannot be used with job.read.table"),
])
def test_bad_options_are_config_errors(delta, runner, tmp_path, options, match):
    t = Table(delta, tmp_path)
    t.insert(1)
    with pytest.raises(ConfigError, match=match):
        runner.run(t, options=options)
    assert runner.element() is None


def test_a_path_that_is_not_a_delta_table_is_one_clear_error(delta, runner, tmp_path):
    class NotDelta:
        name = f"delta.`{tmp_path / 'nothing-here'}`"
    with pytest.raises(SourceError, match="cannot read Delta table"):
        runner.run(NotDelta())
    with pytest.raises(ConfigError, match="format='hudi'"):
        runner.run(NotDelta(), fmt="hudi")


def test_bookmark_set_moves_a_delta_bookmark_to_a_version(delta, runner, tmp_path):
    t = Table(delta, tmp_path)
    t.insert(1)
    v1 = t.version()
    t.insert(2)
    t.insert(3)
    runner.run(t)
    Bookmarks(runner.state).set(runner.name, "src", snapshot=v1)  # re-read what came after v1
    assert runner.element()["version"] == v1
    rows, _ = runner.run(t)
    assert rows == [2, 3]
    with pytest.raises(ConfigError, match="versions start at 0"):
        Bookmarks(runner.state).set(runner.name, "src", snapshot=-1)


@pytest.mark.parametrize("catalog", [False, True])
def test_the_checksum_file_says_what_describe_detail_says(delta, runner, tmp_path, catalog):
    """A run takes the table's id and properties from the latest version's checksum file
    (DESCRIBE DETAIL rebuilds the whole table state); they agree, and without the checksum
    files the run falls back to DESCRIBE DETAIL and reads the same rows."""
    from sparkmark.sources.delta import _from_checksum
    t = Table(delta, tmp_path, catalog=catalog, cdf=True)
    t.insert(1, 2)
    detail = delta.sql(f"DESCRIBE DETAIL {t.name}").collect()[0].asDict()
    location, table_id, props = _from_checksum(delta, t.name, t.version())
    assert (location, table_id) == (str(detail["location"]).rstrip("/"), detail["id"])
    assert props == {str(k): str(v) for k, v in detail["properties"].items()}
    rows, _ = runner.run(t)
    assert rows == [1, 2] and runner.element()["table_id"] == detail["id"]
    log = Path(location.replace("file:", "", 1)) / "_delta_log"
    for crc in log.glob("*.crc"):
        crc.unlink()
    t.insert(3)
    crc_now = log / f"{t.version():020d}.crc"
    if crc_now.exists():
        crc_now.unlink()
    assert _from_checksum(delta, t.name, t.version()) is None
    rows, _ = runner.run(t)
    assert rows == [3] and runner.element()["table_id"] == detail["id"]
