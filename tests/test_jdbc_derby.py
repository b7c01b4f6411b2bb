"""JDBC source bookmarks on a real embedded Apache Derby database (its jars ship inside PySpark):
compound keys, sort order, primary-key default, pushdown, partitions, pause/rewind/reset,
quoting, and every error path leaving the committed state alone."""
from __future__ import annotations

import itertools
import json
import os

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.core.options import DISABLE, ENABLE, PAUSE

from conftest import need_derby

_counter = itertools.count()


class Derby:
    """An in-memory Derby database in Spark's own JVM, set up through java.sql.DriverManager."""

    def __init__(self, spark, name: str):
        self.spark = spark
        self.url = f"jdbc:derby:memory:{name}"
        self.conn = spark._jvm.java.sql.DriverManager.getConnection(self.url + ";create=true")

    def execute(self, sql: str, *rows) -> None:
        if not rows:
            st = self.conn.createStatement()
            st.execute(sql)
            st.close()
            return
        ps = self.conn.prepareStatement(sql)
        for row in rows:
            for i, v in enumerate(row, 1):
                ps.setObject(i, v)
            ps.executeUpdate()
        ps.close()

    def drop(self) -> None:
        self.conn.close()
        try:
            self.spark._jvm.java.sql.DriverManager.getConnection(self.url + ";drop=true")
        except Exception:
            pass  # Derby reports a successful drop as an SQLException


@pytest.fixture
def derby(spark):
    need_derby(spark)
    db = Derby(spark, f"sm{os.getpid()}_{next(_counter)}")
    yield db
    db.drop()


class Runner:
    def __init__(self, spark, state, clock, name="emp_job"):
        self.spark, self.state, self.clock, self.name = spark, state, clock, name

    def run(self, url, table, option=ENABLE, args=None, ctx="src", commit=True, **kw):
        job = Job(self.spark, state=self.state, clock=self.clock)
        job.init(self.name, {"job_bookmark_option": option, **(args or {})})
        try:
            df = job.read.jdbc(url, table=table, transformation_ctx=ctx, **kw)
            rows = sorted(tuple(r) for r in df.collect())
        except BaseException as e:
            job.fail(e)
            raise
        if commit:
            job.commit()
        self.clock.advance(60_000)
        return job, rows, df

    def ledger(self):
        return Job(None, state=self.state).store.list_runs(job_name=self.name)

    def source_info(self, i=-1):
        return json.loads(self.ledger()[i]["config"])["sources"]["src"]

    def element(self):
        return Bookmarks(self.state).get(self.name)["JobBookmark"].get("src")


@pytest.fixture
def runner(spark, sqlite_url, clock):
    return Runner(spark, sqlite_url, clock)


def _emp(derby, ids):
    derby.execute("INSERT INTO emp VALUES (?, ?)", *[(i, f"n{i}") for i in ids])


def _ids(rows):
    return [r[0] for r in rows]


def test_enable_reads_new_rows_once_with_primary_key_default(spark, derby, state_url, clock):
    r = Runner(spark, state_url, clock)
    derby.execute("CREATE TABLE emp (empno INT PRIMARY KEY, ename VARCHAR(20))")
    _emp(derby, [3, 1, 5, 2, 4])
    # "emp" resolves to Derby's APP.EMP; the key defaults to the primary key EMPNO
    _, rows, _ = r.run(derby.url, "emp")
    assert _ids(rows) == [1, 2, 3, 4, 5]
    assert r.element() == {"source": "jdbc", "table": "APP.EMP", "keys": ["EMPNO"],
                           "key_types": ["int"], "sort_order": "asc", "last": [5]}
    _emp(derby, [6, 8, 7])
    _, rows, _ = r.run(derby.url, "emp")
    assert _ids(rows) == [6, 7, 8]
    assert r.source_info()["lower"] == [5] and r.source_info()["upper"] == [8]
    _, rows, _ = r.run(derby.url, "emp")
    assert rows == []
    assert [x["status"] for x in r.ledger()] == ["SUCCEEDED", "SUCCEEDED", "EMPTY"]
    assert r.element()["last"] == [8]


def test_upper_bound_is_read_once_rows_inserted_during_the_run_wait(derby, runner):
    derby.execute("CREATE TABLE emp (empno INT PRIMARY KEY, ename VARCHAR(20))")
    _emp(derby, [1, 2])
    job = Job(runner.spark, state=runner.state, clock=runner.clock)
    job.init(runner.name, {"job_bookmark_option": ENABLE})
    df = job.read.jdbc(derby.url, table="EMP", transformation_ctx="src")
    _emp(derby, [3, 4])  # arrives while the run is going on: after the upper bound
    assert sorted(_ids(df.collect())) == [1, 2]
    job.commit()
    _, rows, _ = runner.run(derby.url, "EMP")
    assert _ids(rows) == [3, 4]


def test_compound_keys_compare_lexicographically(derby, runner):
    derby.execute("CREATE TABLE ev (day DATE NOT NULL, seq INT NOT NULL, v VARCHAR(10), "
                  "PRIMARY KEY (day, seq))")
    derby.execute("INSERT INTO ev VALUES (?, ?, ?)", ("2024-01-01", 5, "a"),
                  ("2024-01-02", 1, "b"), ("2024-01-02", 2, "c"))
    _, rows, _ = runner.run(derby.url, "ev")
    assert [r[2] for r in rows] == ["a", "b", "c"]
    assert runner.element()["keys"] == ["DAY", "SEQ"]
    assert runner.element()["last"] == ["2024-01-02", 2]
    # same day, later seq; a later day with a small seq; an earlier day (not monotonic: skipped)
    derby.execute("INSERT INTO ev VALUES (?, ?, ?)", ("2024-01-02", 3, "d"),
                  ("2024-01-03", 1, "e"), ("2024-01-01", 9, "late"))
    _, rows, _ = runner.run(derby.url, "ev")
    assert sorted(r[2] for r in rows) == ["d", "e"]
    assert runner.element()["last"] == ["2024-01-03", 1]


def test_desc_order_with_glue_options_and_misspelling(derby, runner):
    derby.execute("CREATE TABLE cd (countdown BIGINT NOT NULL, v INT)")  # no primary key
    derby.execute("INSERT INTO cd VALUES (?, ?)", *[(100 - i, i) for i in range(5)])
    opts = {"jobBookmarkKeys": ["countdown"], "jobBookmarksKeysSortOrder": "desc"}
    _, rows, _ = runner.run(derby.url, "cd", options=opts)
    assert sorted(r[0] for r in rows) == [96, 97, 98, 99, 100]
    assert runner.element()["last"] == [96] and runner.element()["sort_order"] == "desc"
    derby.execute("INSERT INTO cd VALUES (?, ?)", (95, 5), (93, 7), (101, 9))  # 101: behind
    _, rows, _ = runner.run(derby.url, "cd", options={"jobBookmarkKeys": ["COUNTDOWN"],
                                                      "jobBookmarkKeysSortOrder": "desc"})
    assert sorted(r[0] for r in rows) == [93, 95]
    # the same with the arguments instead of Glue's options
    _, rows, _ = runner.run(derby.url, "cd", bookmark_keys=["countdown"], sort_order="desc")
    assert rows == []


def test_timestamp_and_decimal_keys_round_trip(derby, runner):
    derby.execute("CREATE TABLE tx (ts TIMESTAMP NOT NULL, amt DECIMAL(9,2) NOT NULL, v INT, "
                  "PRIMARY KEY (ts, amt))")
    derby.execute("INSERT INTO tx VALUES (CAST(? AS TIMESTAMP), ?, ?)",
                  ("2024-03-01 10:00:00.123456", "1.50", 1),
                  ("2024-03-01 10:00:00.123456", "2.25", 2))
    _, rows, _ = runner.run(derby.url, "tx")
    assert [r[2] for r in rows] == [1, 2]
    el = runner.element()
    assert el["key_types"] == ["timestamp", "decimal"]
    assert el["last"] == ["2024-03-01 10:00:00.123456", "2.25"]
    derby.execute("INSERT INTO tx VALUES (CAST(? AS TIMESTAMP), ?, ?)",
                  ("2024-03-01 10:00:00.123456", "2.26", 3),
                  ("2024-03-01 10:00:00.123457", "0.01", 4))
    _, rows, _ = runner.run(derby.url, "tx")
    assert sorted(r[2] for r in rows) == [3, 4]


WEIRD = ["a'b", "a''b", "q?x", "{d '2020-01-01'}", "--c", "/*x*/", "back\\slash", "ü", "'"]


def test_identifiers_are_quoted_and_string_keys_escaped(derby, runner):
    derby.execute('CREATE TABLE "we""ird tab" ("k\'ey col" VARCHAR(60) PRIMARY KEY, "v" INT)')
    derby.execute('INSERT INTO "we""ird tab" VALUES (?, ?)', *[(s, i) for i, s in
                                                               enumerate(WEIRD[:5])])
    _, rows, _ = runner.run(derby.url, 'we"ird tab')
    assert sorted(r[0] for r in rows) == sorted(WEIRD[:5])
    assert runner.element()["keys"] == ["k'ey col"]
    last = max(WEIRD[:5])
    assert runner.element()["last"] == [last]
    derby.execute('INSERT INTO "we""ird tab" VALUES (?, ?)', *[(s, 10 + i) for i, s in
                                                               enumerate(WEIRD[5:])])
    _, rows, _ = runner.run(derby.url, 'we"ird tab')
    # Derby's default collation compares by code point, like Python
    assert sorted(r[0] for r in rows) == sorted(s for s in WEIRD[5:] if s > last)
    assert runner.element()["last"] == [max(WEIRD)]


def test_range_is_pushed_down_in_the_query_plan(derby, runner):
    derby.execute("CREATE TABLE emp (empno INT PRIMARY KEY, ename VARCHAR(20))")
    _emp(derby, range(1, 11))
    runner.run(derby.url, "emp")
    _emp(derby, [11, 12])
    _, rows, df = runner.run(derby.url, "emp")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert 'WHERE ("EMPNO" > 10 AND "EMPNO" <= 12)' in plan
    assert _ids(rows) == [11, 12]
    assert runner.source_info()["where"] == '("EMPNO" > 10 AND "EMPNO" <= 12)'


def test_large_range_reads_in_partitions_reported_in_ledger(derby, runner):
    derby.execute("CREATE TABLE emp (empno INT PRIMARY KEY, ename VARCHAR(20))")
    _emp(derby, range(1, 201))
    opts = {"numPartitions": 4, "rowsPerPartition": 20}
    _, rows, df = runner.run(derby.url, "emp", options=opts)
    assert _ids(rows) == list(range(1, 201))  # each row exactly once
    assert df.rdd.getNumPartitions() == 4
    info = runner.source_info()
    assert info["partitions"] == 4 and info["partition_column"] == "EMPNO"
    assert info["partition_bounds"] == [51, 101, 151]
    sizes = df.rdd.glom().map(len).collect()
    assert sizes == [50, 50, 50, 50]
    _emp(derby, range(201, 211))
    _, rows, df = runner.run(derby.url, "emp", options=opts)
    assert _ids(rows) == list(range(201, 211))
    assert df.rdd.getNumPartitions() == 1 and runner.source_info()["partitions"] == 1
    _, rows, df = runner.run(derby.url, "emp", option=DISABLE, options=opts)  # full read
    assert _ids(rows) == list(range(1, 211)) and df.rdd.getNumPartitions() == 4


def test_pause_from_to_rewind_and_reset(derby, runner):
    derby.execute("CREATE TABLE emp (empno INT PRIMARY KEY, ename VARCHAR(20))")
    jobs = []
    for batch in ([1, 2, 3], [4, 5, 6], [7, 8, 9]):
        _emp(derby, batch)
        job, rows, _ = runner.run(derby.url, "emp")
        assert _ids(rows) == batch
        jobs.append(job.run_id)
    r1, r2, r3 = jobs
    pause = lambda f, t: {"job_bookmark_from": f, "job_bookmark_to": t}  # noqa: E731
    _, rows, _ = runner.run(derby.url, "emp", option=PAUSE, args=pause(r1, r2))
    assert _ids(rows) == [4, 5, 6]
    _, rows, _ = runner.run(derby.url, "emp", option=PAUSE, args=pause(r1, r3))
    assert _ids(rows) == [4, 5, 6, 7, 8, 9]
    _, rows, _ = runner.run(derby.url, "emp", option=PAUSE, args=pause(r2, r2))
    assert rows == []
    _emp(derby, [10])
    _, rows, _ = runner.run(derby.url, "emp", option=PAUSE)  # since the last state, no commit
    assert _ids(rows) == [10]
    assert runner.element()["last"] == [9]
    Bookmarks(runner.state).reset(runner.name, run_id=r1)  # rewind
    _, rows, _ = runner.run(derby.url, "emp")
    assert _ids(rows) == list(range(4, 11))
    Bookmarks(runner.state).reset(runner.name)
    _, rows, _ = runner.run(derby.url, "emp")
    assert _ids(rows) == list(range(1, 11))
    _, rows, _ = runner.run(derby.url, "emp")
    assert rows == []


def test_disabled_and_no_ctx_read_everything_without_state(derby, runner):
    derby.execute("CREATE TABLE nopk (v INT)")  # no primary key: fine without a bookmark
    derby.execute("INSERT INTO nopk VALUES (?)", (1,), (2,))
    for _ in range(2):
        _, rows, _ = runner.run(derby.url, "nopk", option=DISABLE)
        assert rows == [(1,), (2,)]
        _, rows, _ = runner.run(derby.url, "nopk", ctx=None)
        assert rows == [(1,), (2,)]
    assert Bookmarks(runner.state).get(runner.name)["JobBookmark"] == {}


def _committed(runner):
    return Bookmarks(runner.state).get(runner.name)


@pytest.mark.parametrize("table,kw,err,match", [
    ("emp", {"bookmark_keys": ["nope"]}, ConfigError, "'nope' does not exist"),
    ("nopk", {}, ConfigError, "no primary key and no bookmark_keys"),
    ("missing_table", {}, ConfigError, "does not exist"),
    ("dbl", {}, ConfigError, "cannot be a bookmark key"),
    ("emp", {"bookmark_keys": ["empno"], "options": {"jobBookmarkKeys": ["ename"]}},
     ConfigError, "disagree"),
    ("emp", {"options": {"query": "SELECT 1"}}, ConfigError, "cannot be used"),
    ("emp", {"options": {"numPartitions": "0"}}, ConfigError, "positive integer"),
    ("emp", {"options": {"onKeysBehind": "shrug"}}, ConfigError, "onKeysBehind"),
    ("emp", {"sort_order": "up"}, ConfigError, "'asc' or 'desc'"),
    ("emp", {"bookmark_keys": ["ename"]}, ConfigError, "was made with bookmark keys"),
    ("emp", {"sort_order": "desc"}, ConfigError, "sort order"),
])
def test_bad_reads_are_one_clear_error_and_change_nothing(derby, runner, table, kw, err, match):
    derby.execute("CREATE TABLE emp (empno INT PRIMARY KEY, ename VARCHAR(20))")
    derby.execute("CREATE TABLE nopk (v INT)")
    derby.execute("CREATE TABLE dbl (d DOUBLE PRIMARY KEY)")
    _emp(derby, [1, 2])
    runner.run(derby.url, "emp")
    before = _committed(runner)
    _emp(derby, [3])
    with pytest.raises(err, match=match):
        runner.run(derby.url, table, **kw)
    assert runner.ledger()[-1]["status"] == "FAILED"
    assert _committed(runner)["JobBookmark"] == before["JobBookmark"]
    _, rows, _ = runner.run(derby.url, "emp")  # the next good run reads what was missed
    assert _ids(rows) == [3]


def test_bad_url_and_missing_driver_are_clear(derby, runner):
    with pytest.raises(SourceError, match="cannot connect"):
        runner.run("jdbc:derby:memory:does_not_exist_xyz", "emp")
    with pytest.raises(SourceError, match="not on Spark's classpath"):
        runner.run(derby.url, "emp", properties={"driver": "com.example.NoSuchDriver"})
    with pytest.raises(ConfigError, match="JDBC URL"):
        runner.run("postgres://x", "emp")


def test_keys_going_backwards_is_an_error_or_a_documented_warning(derby, runner, caplog):
    derby.execute("CREATE TABLE emp (empno INT PRIMARY KEY, ename VARCHAR(20))")
    _emp(derby, range(1, 9))
    runner.run(derby.url, "emp")
    derby.execute("DELETE FROM emp WHERE empno >= 4")  # e.g. the table was reloaded
    with pytest.raises(SourceError, match="went backwards.*Reset the job's bookmark"):
        runner.run(derby.url, "emp")
    assert runner.element()["last"] == [8]
    with caplog.at_level("WARNING", logger="sparkmark.jdbc"):
        _, rows, _ = runner.run(derby.url, "emp", options={"onKeysBehind": "warn"})
    assert rows == [] and "went backwards" in caplog.text
    assert runner.ledger()[-1]["status"] == "EMPTY" and runner.element()["last"] == [8]
    _emp(derby, [5, 9])  # 5 is at or before the bookmark: not read; 9 is new
    _, rows, _ = runner.run(derby.url, "emp", options={"onKeysBehind": "warn"})
    assert _ids(rows) == [9]
    # a table that was emptied is simply "nothing new"
    derby.execute("DELETE FROM emp")
    _, rows, _ = runner.run(derby.url, "emp")
    assert rows == [] and runner.element()["last"] == [9]


@pytest.mark.parametrize("action", ["collect", "job.write"])
def test_error_while_the_users_action_consumes_a_bookmarked_read_names_the_source(
        spark, derby, sqlite_url, clock, tmp_path, action):
    """Issue 16 (14): an error raised while Spark consumes a bookmarked JDBC read in the user's
    own action (here the table is dropped between planning and collect()) is a SourceError
    naming the source, never a raw Py4JJavaError; the run is FAILED and the bookmark stays."""
    derby.execute("CREATE TABLE gone (id INT PRIMARY KEY, v VARCHAR(10))")
    derby.execute("INSERT INTO gone VALUES (?, ?)", (1, "a"), (2, "b"))
    with pytest.raises(SourceError, match=r"reading JDBC source 'gone_src' \(table APP.GONE\) "
                       r"failed while Spark consumed it: Table/View 'APP.GONE' does not exist\. "
                       r"Check") as info:
        with Job(spark, state=sqlite_url, clock=clock).run(
                "gone_job", {"job_bookmark_option": ENABLE}) as job:
            df = job.read.jdbc(derby.url, table="gone", transformation_ctx="gone_src")
            derby.execute("DROP TABLE gone")
            if action == "collect":
                df.collect()
            else:  # inside the exactly-once sink: still the source's failure, not the sink's
                job.write(df, str(tmp_path / "out"), transformation_ctx="sink")
    assert "Py4JJavaError" not in str(info.value) and "\tat " not in str(info.value)
    run = Job(None, state=sqlite_url).store.list_runs(job_name="gone_job")[-1]
    assert run["status"] == "FAILED" and "reading JDBC source 'gone_src'" in run["error"]
    assert Bookmarks(sqlite_url).get("gone_job")["JobBookmark"] == {}
    assert not list(tmp_path.glob("out/**/*.parquet"))  # nothing published


def test_errors_of_the_users_own_code_are_left_alone(spark, derby, sqlite_url, clock):
    derby.execute("CREATE TABLE kept (id INT PRIMARY KEY)")
    derby.execute("INSERT INTO kept VALUES (?)", (1,))
    with pytest.raises(RuntimeError, match="the user.s own bug"):
        with Job(spark, state=sqlite_url, clock=clock).run(
                "kept_job", {"job_bookmark_option": ENABLE}) as job:
            job.read.jdbc(derby.url, table="kept", transformation_ctx="kept_src").collect()
            raise RuntimeError("the user's own bug")
