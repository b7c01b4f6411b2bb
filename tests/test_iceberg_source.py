"""``job.read.table`` on real Apache Iceberg tables (Spark 3.5 and 4.1, a Hadoop catalog under tmp):
appends read exactly once (also with the warehouse on ``s3a://``, moto), empty runs, the
onNonAppend policy (fail, skip, and changes: Iceberg's change rows, copy-on-write carry-overs
removed, merge-on-read delete files refused), broken lineage (rollback, drop and recreate),
bookmarks disabled, pause from/to, and option errors leaving the state alone.

Needs the Iceberg runtime of the Spark line (``make jars``); skips otherwise, unless
SPARKMARK_REQUIRE_ICEBERG=1.  Runs in its own pytest process (``make test35`` does): a session
started earlier by another module has no Iceberg extensions."""
from __future__ import annotations

import itertools
import json
import os

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.core.options import DISABLE, ENABLE, PAUSE

_counter = itertools.count()


class Table:
    def __init__(self, spark, catalog="local"):
        self.spark = spark
        self.name = f"{catalog}.db.t{os.getpid()}_{next(_counter)}"
        self.create()

    def create(self):
        self.spark.sql(f"CREATE TABLE {self.name} (id BIGINT, v STRING) USING iceberg")

    def insert(self, *ids):
        values = ", ".join(f"({i}, 'v{i}')" for i in ids)
        self.spark.sql(f"INSERT INTO {self.name} VALUES {values}")
        return self.current()

    def insert_one_file(self, *ids):
        """The rows in one data file (a copy-on-write rewrite then carries the others over)."""
        self.spark.createDataFrame([(i, f"v{i}") for i in ids], "id BIGINT, v STRING") \
            .coalesce(1).writeTo(self.name).append()
        return self.current()

    def sql(self, text):
        self.spark.sql(text.format(t=self.name))

    def current(self):
        rows = self.spark.sql(f"SELECT snapshot_id FROM {self.name}.refs "
                              "WHERE name = 'main'").collect()
        return rows[0][0] if rows else None


class Runner:
    def __init__(self, spark, state, clock, name="ice_job"):
        self.spark, self.state, self.clock, self.name = spark, state, clock, name

    def run(self, table, option=ENABLE, args=None, ctx="src", options=None, between=None):
        job = Job(self.spark, state=self.state, clock=self.clock)
        job.init(self.name, {"job_bookmark_option": option, **(args or {})})
        try:
            df = job.read.table(table.name, transformation_ctx=ctx, options=options)
            if between is not None:
                between()
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
def runner(ice, sqlite_url, clock):
    return Runner(ice, sqlite_url, clock)


@pytest.fixture(params=["jvm helper", "py4j calls"])
def path(request, monkeypatch):
    """Both ways the source reaches the table: ``java/SparkmarkTableHelper`` (the metadata look
    and the DataFrame load one round trip each, the usual way) and call by call through py4j
    (where the helper cannot load)."""
    from sparkmark.engine import tablemeta
    from sparkmark.sources import table as source
    if request.param == "py4j calls":
        monkeypatch.setattr(tablemeta, "helper", lambda *a: None)
        monkeypatch.setattr(source, "helper", lambda *a: None)
    return request.param


def test_the_helper_looks_as_the_py4j_path_does(ice, runner):
    """The helper is what a classic session uses (not a silent fallback), and its look at a
    range is the py4j path's: the current snapshot, the walk back to the bookmark, and the
    whole metadata where the walk does not reach it (too long, not an ancestor)."""
    from sparkmark.engine import tablemeta
    from sparkmark.engine.compat import classic_dataframe
    from sparkmark.engine.jvm import encode_rows, helper
    from sparkmark.sources import table as source
    t = Table(ice)
    ids = [t.insert(i) for i in range(1, 6)]
    h = tablemeta.open_table(ice, t.name, read=False)
    md = h.base
    look = tablemeta.look_range(ice, t.name, after=ids[1])
    assert look is not None and look.meta is None
    assert look.current == h.current(md)
    assert look.chain == h.walk(md, h.current(md), after=ids[1])
    assert [s.id for s in look.chain] == ids[:1:-1]
    replay = tablemeta.look_range(ice, t.name, after=ids[0], through=ids[3])
    assert replay is not None and [s.id for s in replay.chain] == [ids[3], ids[2], ids[1]]
    assert tablemeta.look_range(ice, t.name, after=ids[-1]).chain is None  # nothing to walk
    for far in (tablemeta.look_range(ice, t.name, after=123),  # not an ancestor
                tablemeta.look_range(ice, t.name, after=ids[1], limit=2)):  # too long
        assert far is not None and far.chain is None
        assert far.meta == h.reread(refresh=False)
    assert tablemeta.look_range(ice, t.name + "_missing", after=1) is None
    assert tablemeta.look_range(ice, t.name + ".branch_main", after=1) is None
    opts = {"start-snapshot-id": str(ids[2]), "end-snapshot-id": str(ids[4])}
    df = source._iceberg_reader(ice, t.name, opts)
    assert sorted(r.id for r in df.collect()) == [4, 5]
    # the helper's own load (the reader falls back silently), on this Spark line's classes
    jdf = helper(ice, "SparkmarkTableHelper").load(ice._jsparkSession, t.name,
                                                  encode_rows(list(opts.items())))
    assert sorted(r.id for r in classic_dataframe(ice, jdf).collect()) == [4, 5]
    with pytest.raises(Exception, match="(?i)not found|cannot be found"):
        source._iceberg_reader(ice, t.name + "_missing", {})


def test_appends_are_read_exactly_once_and_nothing_new_is_empty(ice, runner, ice_catalog, path):
    t = Table(ice, ice_catalog)
    first = t.insert(1, 2)
    # the upper snapshot is fixed at run start: a commit during the run waits for the next one
    rows, _ = runner.run(t, between=lambda: t.insert(3))
    assert rows == [1, 2]
    assert runner.element() == {"table": t.name, "snapshot_id": first}
    assert runner.info()["read"] == "as_of" and runner.info()["to_snapshot"] == first
    last = t.insert(4, 5)
    rows, _ = runner.run(t)
    assert rows == [3, 4, 5]
    info = runner.info()
    assert (info["from_snapshot"], info["to_snapshot"]) == (first, last)
    assert info["operations"] == {"append": 2} and info["read"] == "appends"
    rows, df = runner.run(t)
    assert rows == [] and df.columns == ["id", "v"]
    assert [r["status"] for r in runner.ledger()] == ["SUCCEEDED", "SUCCEEDED", "EMPTY"]
    assert runner.element() == {"table": t.name, "snapshot_id": last}
    paths = [r[0] for r in ice.sql(f"SELECT file_path FROM {t.name}.files").collect()]
    scheme = "s3a://" if ice_catalog == "s3wh" else "/"
    assert paths and all(p.startswith(scheme) for p in paths), paths  # where the data lives


def test_non_append_fails_by_default_and_skip_reads_the_appends(ice, runner, ice_catalog, path):
    t = Table(ice, ice_catalog)
    start = t.insert(1, 2)
    runner.run(t)
    t.insert(3)
    t.sql("DELETE FROM {t} WHERE id = 1")
    deleted = t.current()
    t.insert(4)
    with pytest.raises(SourceError, match=rf"snapshot {deleted} \(delete\).*onNonAppend=skip"):
        runner.run(t)
    assert runner.ledger()[-1]["status"] == "FAILED"
    assert runner.element() == {"table": t.name, "snapshot_id": start}  # nothing committed
    rows, _ = runner.run(t, options={"onNonAppend": "skip"})
    assert rows == [3, 4]
    info = runner.info()
    assert info["skipped_snapshots"] == [{"snapshot_id": deleted, "operation": "delete"}]
    assert info["operations"] == {"append": 2, "delete": 1}
    assert runner.element()["snapshot_id"] == t.current()


def test_broken_lineage_is_a_clear_error(ice, runner, path):
    t = Table(ice)
    s1 = t.insert(1)
    t.insert(2)
    runner.run(t)
    t.sql(f"CALL local.system.rollback_to_snapshot('{t.name.split('.', 1)[1]}', {s1})")
    t.insert(3)
    with pytest.raises(SourceError, match="lineage.*not an ancestor.*bookmark reset.*"
                                          "bookmark set"):
        runner.run(t)
    # drop and recreate: the committed snapshot is gone from the table's metadata
    t.sql("DROP TABLE {t}")
    t.create()
    t.insert(9)
    with pytest.raises(SourceError, match="lineage.*no longer in the table's snapshots"):
        runner.run(t)
    assert [r["status"] for r in runner.ledger()] == ["SUCCEEDED", "FAILED", "FAILED"]
    # the way out the error names: continue after a snapshot of the new table
    first = t.current()
    Bookmarks(runner.state, clock=runner.clock).set(runner.name, "src", snapshot=str(first))
    t.insert(10)
    rows, _ = runner.run(t)
    assert rows == [10]


def test_bookmarks_disabled_read_the_whole_table(ice, runner):
    t = Table(ice)
    t.insert(1, 2)
    t.sql("DELETE FROM {t} WHERE id = 2")
    t.insert(3)
    rows, _ = runner.run(t, option=DISABLE)
    assert rows == [1, 3]
    rows, _ = runner.run(t, option=DISABLE)
    assert rows == [1, 3]
    assert runner.info()["mode"] == "all"


def test_pause_from_to_replays_a_runs_snapshots(ice, runner, path):
    t = Table(ice)
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
    assert rows == [2, 3]
    assert runner.info()["mode"] == "replay"


@pytest.mark.parametrize("options,match", [
    ({"onNonAppend": "bogus"}, "onNonAppend='bogus'"),
    ({"onNonAppend": "changelog"}, "onNonAppend='changelog' is not one of fail, skip, changes"),
    ({"snapshot-id": "1"}, "cannot be used with job.read.table"),
])
def test_bad_options_are_config_errors(ice, runner, options, match):
    t = Table(ice)
    t.insert(1)
    with pytest.raises(ConfigError, match=match):
        runner.run(t, options=options)
    assert runner.element() is None


CHANGE_COLUMNS = ["id", "v", "_change_type", "_change_ordinal", "_commit_snapshot_id"]


def changes(df):
    return sorted((r["id"], r["v"], r["_change_type"], r["_change_ordinal"],
                   r["_commit_snapshot_id"]) for r in df.collect())


def test_changes_reads_inserts_and_deletes_then_nothing(ice, runner, ice_catalog):
    t = Table(ice, ice_catalog)
    start = t.insert(1, 2)
    ch = {"onNonAppend": "changes"}
    # first run: the table as of the upper snapshot, as INSERTs of it, with the same columns
    rows, df = runner.run(t, options=ch)
    assert rows == [1, 2] and df.columns == CHANGE_COLUMNS
    assert changes(df) == [(1, "v1", "INSERT", 0, start), (2, "v2", "INSERT", 0, start)]
    assert runner.info()["read"] == "as_of" and runner.info()["on_non_append"] == "changes"
    s2 = t.insert(3)
    t.sql("DELETE FROM {t} WHERE id = 1")
    s3 = t.current()
    s4 = t.insert(4)
    rows, df = runner.run(t, options=ch)
    assert df.columns == CHANGE_COLUMNS
    assert changes(df) == [(1, "v1", "DELETE", 1, s3), (3, "v3", "INSERT", 0, s2),
                           (4, "v4", "INSERT", 2, s4)]
    info = runner.info()
    assert info["read"] == "changes" and (info["from_snapshot"], info["to_snapshot"]) == (start,
                                                                                            s4)
    assert info["operations"] == {"append": 2, "delete": 1} and "skipped_snapshots" not in info
    assert runner.element() == {"table": t.name, "snapshot_id": s4}
    rows, df = runner.run(t, options=ch)
    assert rows == [] and df.columns == CHANGE_COLUMNS
    assert [r["status"] for r in runner.ledger()] == ["SUCCEEDED", "SUCCEEDED", "EMPTY"]
    # appends only: the changelog too, the same columns
    s5 = t.insert(5)
    rows, df = runner.run(t, options=ch)
    assert changes(df) == [(5, "v5", "INSERT", 0, s5)]


def test_changes_and_appends_on_a_two_part_name_in_the_current_catalog(ice, runner):
    """``db.t`` after ``USE local``: the snapshots, the read and the changelog procedure
    (``CALL system.create_changelog_view``) all resolve in the current catalog."""
    t = Table(ice)
    short = t.name.split(".", 1)[1]
    start = t.insert(1, 2)
    ice.sql("USE local")
    try:
        two = Table.__new__(Table)
        two.spark, two.name = ice, short
        rows, df = runner.run(two, options={"onNonAppend": "changes"})
        assert rows == [1, 2] and df.columns == CHANGE_COLUMNS
        t.sql("DELETE FROM {t} WHERE id = 1")
        deleted = t.current()
        added = t.insert(3)
        rows, df = runner.run(two, options={"onNonAppend": "changes"})
        assert changes(df) == [(1, "v1", "DELETE", 0, deleted), (3, "v3", "INSERT", 1, added)]
        assert runner.element() == {"table": short, "snapshot_id": added}
        rows, _ = runner.run(two, options={"onNonAppend": "changes"})
        assert rows == [] and start != added
    finally:
        ice.sql("USE spark_catalog")


def test_changes_update_copy_on_write_and_merge_on_read_refused(ice, runner):
    t = Table(ice)
    t.insert_one_file(1, 2, 3)
    ch = {"onNonAppend": "changes"}
    runner.run(t, options=ch)
    t.sql("UPDATE {t} SET v = 'x' WHERE id = 2")  # copy-on-write (the default): an overwrite
    upd = t.current()
    rows, df = runner.run(t, options=ch)
    # the old row deleted, the new one inserted; rows 1 and 3 the rewrite carried over are not
    assert changes(df) == [(2, "v2", "DELETE", 0, upd), (2, "x", "INSERT", 0, upd)]
    assert runner.info()["operations"] == {"overwrite": 1}
    # merge-on-read writes a delete file, which Iceberg's changelog scan does not support
    t.sql("ALTER TABLE {t} SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")
    t.sql("DELETE FROM {t} WHERE id = 3")
    deleted = t.current()
    t.insert(4)
    with pytest.raises(SourceError, match=rf"snapshot {deleted} \(delete\) has 1 delete file.*"
                                          "changelog.*bookmark reset.*onNonAppend=skip"):
        runner.run(t, options=ch)
    assert runner.ledger()[-1]["status"] == "FAILED"
    assert runner.element() == {"table": t.name, "snapshot_id": upd}  # nothing committed
    rows, _ = runner.run(t, options={"onNonAppend": "skip"})  # the way out it names
    assert rows == [4]


def test_changes_replays_a_runs_range(ice, runner):
    t = Table(ice)
    t.insert(1)
    ch = {"onNonAppend": "changes"}
    runner.run(t, options=ch)
    t.sql("DELETE FROM {t} WHERE id = 1")
    t.insert(2)
    runner.run(t, options=ch)
    ids = [r["run_id"] for r in runner.ledger()]
    rows, df = runner.run(t, option=PAUSE, options=ch,
                          args={"job_bookmark_from": ids[0], "job_bookmark_to": ids[1]})
    assert [(r["id"], r["_change_type"]) for r in df.orderBy("_change_ordinal").collect()] == [
        (1, "DELETE"), (2, "INSERT")]
    assert runner.info()["read"] == "changes" and runner.info()["mode"] == "replay"
    # bookmarks disabled: the whole table as INSERTs of the current snapshot, the same columns
    rows, df = runner.run(t, option=DISABLE, options=ch)
    assert changes(df) == [(2, "v2", "INSERT", 0, t.current())]
    assert runner.info()["mode"] == "all"


def test_a_run_reads_its_own_snapshots_one_by_one_and_a_long_range_whole(ice, runner, path):
    """A run reads the snapshots of its range from the table's metadata one by one, following
    parent links back from the current one (its cost follows the range, not the table's
    history: issue 22); a range longer than the walk's limit, or one that does not reach the
    bookmark, takes the whole metadata document and reads the same rows."""
    from sparkmark.engine import tablemeta
    t = Table(ice)
    ids = [t.insert(i) for i in range(1, 6)]  # snapshots s1..s5
    h = tablemeta.open_table(ice, t.name, read=False)
    md = h.base
    assert h.current(md).id == ids[-1]
    assert [s.id for s in h.walk(md, h.current(md), after=ids[1])] == ids[:1:-1]
    assert [s.id for s in h.walk(md, ids[3], after=ids[0])] == [ids[3], ids[2], ids[1]]
    assert h.walk(md, ids[-1], after=ids[-1]) == []
    assert h.walk(md, ids[-1], after=ids[1], limit=2) is None  # too long: the caller reads all
    assert h.walk(md, ids[-1], after=123) is None  # not an ancestor
    assert h.walk(md, ids[1], after=ids[3]) is None  # a later snapshot is no ancestor
    assert h.current(md).summary["operation"] == "append"
    assert set(h.columns(md)) == {"id", "v"}

    rows, _ = runner.run(t)
    assert rows == [1, 2, 3, 4, 5]
    for i in range(6, 6 + 70):  # a range of 70 snapshots, longer than the walk's limit (64)
        t.insert(i)
    rows, _ = runner.run(t)
    assert rows == list(range(6, 76))
    assert runner.info()["from_snapshot"] == ids[-1]
    t.insert(100)
    rows, _ = runner.run(t)  # one snapshot again, read one by one
    assert rows == [100]
