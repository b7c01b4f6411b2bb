"""schemaEvolution on real JSON and CSV files (local disk; S3 in test_s3_files-style below):
each mode against a new column, a missing column, a type change and an unparseable row, with a
later run reading new data after the bad file; the known schema in the bookmark; the way out
of a wedge named in the error."""
from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError, SourceError

EN = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000
SPARKMARK = str(Path(sys.executable).with_name("sparkmark"))

# one good file, then a file with a new column (note), a row without amount, a type change
# (amount "30.5") and an unparseable row, then a good file again
FILES = {
    "json": ['{"id": 1, "amount": 30}\n',
             '{"id": 2, "amount": "30.5", "note": "x"}\n{"id": 3}\n{"id": 4, oops\n',
             '{"id": 5, "amount": 7}\n'],
    "csv": ["id,amount\n1,30\n",
            "id,note,amount\n2,x,30.5\n3,,\n4\n",
            "id,amount\n5,7\n"],
}
NAMES = ["a", "b", "c"]


def put(src: Path, name: str, text: str, mtime: int) -> str:
    src.mkdir(parents=True, exist_ok=True)
    p = src / name
    p.write_text(text)
    os.utime(p, ns=(mtime * 1_000_000, mtime * 1_000_000))
    return str(p)


def options(fmt: str, evolution: str | None, **more) -> dict:
    opts = {"header": "true", "inferSchema": "true"} if fmt == "csv" else {}
    if evolution is not None:
        opts["schemaEvolution"] = evolution
    return {**opts, **more}


def read(spark, url, clock, src, fmt, evolution, **more):
    job = Job(spark, state=url, clock=clock).init("orders", EN)
    df = job.read.files(str(src), format=fmt, transformation_ctx="src",
                        options=options(fmt, evolution, **more))
    rows = sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"] or 0)
    return job, df.columns, rows


def committed(url) -> dict:
    e = Bookmarks(url).get("orders")
    return {"Version": e["Version"], "JobBookmark": e["JobBookmark"]}


def rescued(row) -> dict:
    return json.loads(row["_rescued_data"]) if row.get("_rescued_data") else {}


@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.parametrize("mode", ["rescue", "addNewColumns", "failOnNewColumns", "none"])
def test_each_mode_then_a_later_run_reads_past_the_bad_file(spark, sqlite_url, clock,
                                                            tmp_path, fmt, mode):
    src = tmp_path / "in"
    put(src, f"a.{fmt}", FILES[fmt][0], clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, fmt, mode)
    assert [(r["id"], r["amount"]) for r in rows] == [(1, 30)]
    job.commit()
    clock.advance(10 * MIN)
    bad = put(src, f"b.{fmt}", FILES[fmt][1], clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, fmt, mode) if mode != \
        "failOnNewColumns" else (None, None, None)
    if mode == "failOnNewColumns":
        before = committed(sqlite_url)
        job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
        with pytest.raises(SourceError) as e:
            job.read.files(str(src), format=fmt, transformation_ctx="src",
                           options=options(fmt, mode))
        job.fail("the new column was refused")
        text = str(e.value)
        assert "new column(s) note" in text and f"b.{fmt}" in text
        assert f"sparkmark bookmark set orders --ctx src --processed file:{bad}" in text
        assert committed(sqlite_url) == before  # nothing committed
        # the way out, as the error spells it (the Python API takes the same arguments)
        Bookmarks(sqlite_url, clock=clock).set("orders", "src", processed=[f"file:{bad}"],
                                              spark=spark)
    else:
        by_id = {r["id"]: r for r in rows}
        unparseable = 4 if fmt == "csv" else None  # CSV keeps the fields it could parse
        assert set(by_id) == {2, 3, unparseable}
        job.commit()  # the counts are final at commit (observed on the job's own action)
        reads = job.reads["src"]
        assert reads["new_columns"] == ["note"] and reads["malformed_records"] == 2
        assert by_id[3]["amount"] is None and not rescued(by_id[3])  # missing column: null
        assert by_id[2]["amount"] is None                            # 30.5 is not a bigint
        if mode == "none":
            assert cols == ["id", "amount"] or cols == ["amount", "id"]
            assert reads["dropped_records"] == 2
        else:
            assert reads["rescued_records"] == 2 and cols[-1] == "_rescued_data"
            r2, r4 = rescued(by_id[2]), rescued(by_id[unparseable])
            assert r2["amount"] == "30.5" and r2["_file_path"].endswith(f"b.{fmt}")
            assert ("note" in r2) == (mode != "addNewColumns")
            assert (by_id[2].get("note") == "x") == (mode == "addNewColumns")
            assert r4["_corrupt_record"].startswith("4" if fmt == "csv" else '{"id": 4, oops')
    clock.advance(10 * MIN)
    put(src, f"c.{fmt}", FILES[fmt][2], clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, fmt, mode)
    assert [(r["id"], r["amount"]) for r in rows] == [(5, 7)]
    assert ("note" in cols) == (mode == "addNewColumns")       # the known schema was kept
    job.commit()
    assert job.reads["src"]["malformed_records"] == 0
    assert job.reads["src"]["dropped_records" if mode == "none" else "rescued_records"] == 0


def test_known_schema_is_in_the_bookmark_rewinds_with_it_and_a_given_schema_wins(
        spark, sqlite_url, clock, tmp_path):
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 5 * MIN)
    job, _, _ = read(spark, sqlite_url, clock, src, "json", "addNewColumns")
    first = job.run_id
    job.commit()
    clock.advance(10 * MIN)
    put(src, "b.json", '{"id": 2, "note": "x"}\n', clock.now - 5 * MIN)
    job, cols, _ = read(spark, sqlite_url, clock, src, "json", "addNewColumns")
    job.commit()
    assert cols == ["id", "note", "_rescued_data"]

    def known() -> list[str]:
        element = Bookmarks(sqlite_url).get("orders")["JobBookmark"]
        element = json.loads(element) if isinstance(element, str) else element
        return [f["name"] for f in json.loads(element["src"]["known_schema"])["fields"]]
    assert known() == ["id", "note"]
    Bookmarks(sqlite_url, clock=clock).reset("orders", first)
    assert known() == ["id"]                                  # rewound with the state
    clock.advance(10 * MIN)
    put(src, "c.json", '{"id": 3, "note": 30.5}\n', clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, "json", "rescue",
                           schema="id BIGINT, note DOUBLE")
    assert cols == ["id", "note", "_rescued_data"]
    assert {r["id"]: r["note"] for r in rows} == {2: None, 3: 30.5}  # "x" is no double
    assert rescued(rows[0])["note"] == "x"
    job.commit()
    assert known() == ["id", "note"]


def test_an_empty_run_returns_the_known_columns(spark, sqlite_url, clock, tmp_path):
    src = tmp_path / "in"
    put(src, "a.csv", "id,amount\n1,2\n", clock.now - 5 * MIN)
    job, _, _ = read(spark, sqlite_url, clock, src, "csv", None)
    job.commit()
    clock.advance(10 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, "csv", None)
    assert (cols, rows) == (["id", "amount", "_rescued_data"], [])
    job.commit()


BAD = [({"schemaEvolution": "evolve"}, ConfigError, "not a mode"),
       ({"schemaEvolution": "rescue", "mode": "FAILFAST"}, ConfigError, "both given")]


@pytest.mark.parametrize("opts, error, words", BAD)
def test_bad_option_is_one_clear_error_and_commits_nothing(spark, sqlite_url, clock, tmp_path,
                                                           opts, error, words):
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 5 * MIN)
    read(spark, sqlite_url, clock, src, "json", None)[0].commit()
    before = committed(sqlite_url)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
    with pytest.raises(error, match=words):
        job.read.files(str(src), transformation_ctx="src", options=opts)
    with pytest.raises(ConfigError, match="json and csv"):
        job.read.files(str(src), format="parquet", transformation_ctx="src2",
                       options={"schemaEvolution": "rescue"})
    job.fail("test")
    assert committed(sqlite_url) == before


def test_a_wedged_run_names_the_file_and_the_cli_command_that_unwedges_it(
        spark, sqlite_url, clock, tmp_path):
    """Spark's own FAILFAST (asked for explicitly): the error names the bad file among the good
    ones and the command; running that command as printed lets the next run read the rest."""
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 5 * MIN)
    read(spark, sqlite_url, clock, src, "json", None, mode="FAILFAST")[0].commit()
    clock.advance(10 * MIN)
    for name in ("b", "c", "d"):
        put(src, f"{name}.json", '{"id": 2}\n' if name != "c" else '{"id": 3, oops\n',
            clock.now - 5 * MIN)
    before = committed(sqlite_url)
    with pytest.raises(SourceError) as e:
        with Job(spark, state=sqlite_url, clock=clock).run("orders", EN) as job:
            job.read.files(str(src), transformation_ctx="src", options={"mode": "FAILFAST"})
    text = str(e.value)
    assert "(file file:" in text and "c.json" in text and "b.json" not in text
    command = text.split("skip the file with: ", 1)[1]
    assert command.startswith("sparkmark bookmark set orders --ctx src --processed file:")
    assert committed(sqlite_url) == before
    argv = shlex.split(command)
    res = subprocess.run([SPARKMARK, "--state", sqlite_url, *argv[1:]], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    job, _, rows = read(spark, sqlite_url, clock, src, "json", None, mode="FAILFAST")
    assert [r["id"] for r in rows] == [2, 2]
    job.commit()


def test_the_issue_wedge_is_gone_and_spark_own_handling_names_the_way_out(
        spark, sqlite_url, clock, tmp_path):
    """Issue 23's report: a bookmarked JSON job writing parquet, then a file whose amount is
    "30.5".  By default the run succeeds (the text is rescued); with Spark's own handling the
    target's clash names the input file and the command that skips it, and after that command
    the next run reads past it."""
    from sparkmark.core.errors import SinkError
    src, out = tmp_path / "in", str(tmp_path / "out")

    def run(opts):
        with Job(spark, state=sqlite_url, clock=clock).run("orders", EN) as job:
            df = job.read.files(str(src), transformation_ctx="src", options=opts)
            job.write(df.drop("_rescued_data") if "_rescued_data" in df.columns else df, out,
                      transformation_ctx="sink")
        clock.advance(10 * MIN)
    put(src, "a.json", '{"id": 1, "amount": 30}\n', clock.now - 5 * MIN)
    run(None)
    bad = put(src, "b.json", '{"id": 2, "amount": "30.5"}\n', clock.now - 5 * MIN)
    run(None)                                              # default: no wedge
    assert sorted(tuple(r) for r in spark.read.parquet(out).select("id", "amount").collect()) \
        == [(1, 30), (2, None)]
    Bookmarks(sqlite_url, clock=clock).reset("orders")     # read both again, Spark's way
    with pytest.raises(SinkError) as e:
        run({"mode": "PERMISSIVE"})
    text = str(e.value)
    assert "amount: target has bigint, new data has string" in text
    assert "b.json" in text and \
        "skip the file with: sparkmark bookmark set orders --ctx src --processed PATH" in text
    Bookmarks(sqlite_url, clock=clock).set("orders", "src", processed=[f"file:{bad}"],
                                          spark=spark)
    put(src, "c.json", '{"id": 3, "amount": 7}\n', clock.now - 5 * MIN)
    run({"mode": "PERMISSIVE"})     # a.json again (the reset) and c.json: no clash
    assert sorted(r.id for r in spark.read.parquet(out).collect()) == [1, 1, 2, 3]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_rescue_on_s3_reads_each_csv_by_its_own_header(spark, s3, sqlite_url, fmt):
    """The same drift on a real S3 API (moto): a CSV file's header is read from the object
    store (one small read per file), values that do not fit are rescued, the next run reads on."""
    import time

    from conftest import FakeClock
    clock = FakeClock(start=int(time.time() * 1000))
    src = s3.url("in")
    ids = []
    for i, name in enumerate(NAMES):
        m = s3.put(f"in/{name}.{fmt}", FILES[fmt][i])
        clock.now = max(clock.now, m + 2000)
        job, cols, rows = read(spark, sqlite_url, clock, src, fmt, None)
        ids.append(sorted(r["id"] or 0 for r in rows))
        if i == 1:
            r2 = rescued(next(r for r in rows if r["id"] == 2))
            assert r2["amount"] == "30.5" and r2["note"] == "x"
            assert r2["_file_path"].startswith("s3a://")
        job.commit()
        if i == 1:
            assert job.reads["src"]["rescued_records"] == 2
        clock.advance(MIN)
    assert ids == [[1], [0, 2, 3] if fmt == "json" else [2, 3, 4], [5]]


@pytest.mark.parametrize("action", ["count", "write", "none"])
def test_counts_ride_on_the_jobs_own_action_or_are_taken_at_commit(spark, sqlite_url, clock,
                                                                   tmp_path, action):
    """The rescued/malformed counts cost no extra pass when the job's own action reads the
    files (a Spark Observation on the returned DataFrame; on classic sessions the commit then
    starts no Spark job), and are still exact when no action ran (one aggregate at commit)."""
    from sparkmark.engine.compat import is_connect
    src = tmp_path / "in"
    put(src, "b.json", FILES["json"][1], clock.now - 5 * MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
    df = job.read.files(str(src), format="json", transformation_ctx="src")
    if action == "count":
        assert df.count() == 3
    elif action == "write":
        df.write.format("noop").mode("overwrite").save()
    sc = None if is_connect(spark) else spark.sparkContext
    if sc is not None:
        sc.setJobGroup("sparkmark-commit", "the commit")
    try:
        job.commit()
    finally:
        if sc is not None:
            sc.setJobGroup("", "")
    reads = job.reads["src"]
    assert (reads["malformed_records"], reads["rescued_records"]) == (1, 1)
    if sc is not None:
        jobs = list(sc.statusTracker().getJobIdsForGroup("sparkmark-commit"))
        assert (len(jobs) == 0) == (action != "none"), (action, jobs)
    config = json.loads(job.store.list_runs(job_name="orders")[-1]["config"])
    assert config["sources"]["src"]["rescued_records"] == 1  # in the ledger too


def test_parser_options_apply_to_the_drift_read(spark, sqlite_url, clock, tmp_path):
    """A JSON parser option (here single quotes) applies to the inference and the typed read:
    a later file's new column is rescued and reported."""
    src = tmp_path / "in"
    put(src, "a.json", "{'id': 1, 'amount': 30}\n", clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, "json", None, allowSingleQuotes="true")
    job.commit()
    clock.advance(10 * MIN)
    put(src, "b.json", "{'id': 2, 'amount': 3, 'note': 'x'}\n", clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, "json", None, allowSingleQuotes="true")
    assert [(r["id"], r["amount"], rescued(r).get("note")) for r in rows] == [(2, 3, "x")]
    job.commit()
    assert job.reads["src"]["new_columns"] == ["note"]


def test_a_key_spelled_in_another_case_fills_the_known_column(spark, sqlite_url, clock,
                                                              tmp_path):
    """Names compare case-insensitively (the known spelling wins): a later file's ``ID`` fills
    the known ``id``. Spark's JSON parser matches names exactly, so reading ``ID`` as ``id``
    dropped its value without a trace (null, nothing rescued, nothing counted)."""
    src = tmp_path / "in"
    put(src, "a.json", FILES["json"][0], clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, "json", None)
    job.commit()
    clock.advance(10 * MIN)
    put(src, "b.json", '{"ID": 2, "Amount": "3.5"}\n', clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, "json", None)
    assert cols == ["amount", "id", "_rescued_data"] or cols == ["id", "amount", "_rescued_data"]
    assert [(r["id"], r["amount"]) for r in rows] == [(2, None)]
    assert rescued(rows[0])["amount"] == "3.5"  # the value that does not fit, as before
    job.commit()
    assert job.reads["src"]["rescued_records"] == 1 and "new_columns" not in job.reads["src"]


# a first run fixes the known schema; the next run meets one file with a new column and one
# with a wrong type, in a partitioned layout (dt=...), with no inference pass
STEADY = {
    "json": ('{"id": 1, "amount": 30}\n',
             '{"id": 2, "amount": 5, "note": "x"}\n{"id": 3, "amount": 6}\n',
             '{"id": 4, "amount": "abc"}\n{"id": 5, "amount": 7}\n'),
    "csv": ("id,amount\n1,30\n",
            "id,amount,note\n2,5,x\n3,6,\n",
            "id,amount\n4,abc\n5,7\n"),
}


_GROUPS = itertools.count()


def _jobs_during(spark, fn):
    """``fn()`` and the ids of the Spark jobs it started (a job group of its own, read from
    Spark's status tracker; a classic session only)."""
    sc = spark.sparkContext
    group = f"sparkmark-test-{next(_GROUPS)}"
    sc.setJobGroup(group, "a read")
    try:
        out = fn()
    finally:
        sc.setJobGroup("", "")
    return out, list(sc.statusTracker().getJobIdsForGroup(group))


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_the_steady_state_rescues_a_new_column_and_a_wrong_type_without_inference(
        spark, sqlite_url, clock, tmp_path, fmt):
    """After a first run fixed the schema, a run whose new files bring a new column (one file)
    and a value of another type (another file) returns every row, the known columns typed,
    both values in ``_rescued_data`` with their file, and counts them; building its read
    starts no Spark job (no inference pass: the first run's read starts one), and the one
    action that reads the rows delivers the counts and what the run met."""
    from sparkmark.engine.compat import is_connect
    if is_connect(spark):
        pytest.skip("Spark jobs are counted on a classic session")
    src = tmp_path / "in" / "dt=1"
    opts = {"header": "true", "inferSchema": "true"} if fmt == "csv" else {}
    put(src, f"a.{fmt}", STEADY[fmt][0], clock.now - 5 * MIN)

    def read():
        job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
        df, jobs = _jobs_during(spark, lambda: job.read.files(
            str(tmp_path / "in"), format=fmt, transformation_ctx="src", options=opts))
        return job, df, jobs
    job, df, jobs = read()
    assert jobs, "the first run infers its schema (a Spark job)"
    assert job.reads["src"]["schema_inference"].startswith("first run")
    assert [tuple(r) for r in df.select("id", "amount", "dt").collect()] == [(1, 30, 1)]
    job.commit()
    clock.advance(10 * MIN)
    put(src, f"b.{fmt}", STEADY[fmt][1], clock.now - 5 * MIN)
    put(src, f"c.{fmt}", STEADY[fmt][2], clock.now - 5 * MIN)
    job, df, jobs = read()
    assert jobs == [], f"the steady state started Spark jobs {jobs} before any action"
    assert "schema_inference" not in job.reads["src"]
    # (Spark's JSON inference sorts the names; CSV keeps the header's order)
    first = ["amount", "id"] if fmt == "json" else ["id", "amount"]
    assert df.columns == [*first, "dt", "_rescued_data"]
    rows = sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])
    assert [(r["id"], r["amount"], r["dt"]) for r in rows] == \
        [(2, 5, 1), (3, 6, 1), (4, None, 1), (5, 7, 1)]
    got = {r["id"]: rescued(r) for r in rows if r["_rescued_data"]}
    assert [got[i].pop("_file_path").rsplit("/", 2)[-2:] for i in (2, 4)] == \
        [["dt=1", f"b.{fmt}"], ["dt=1", f"c.{fmt}"]]
    assert got == {2: {"note": "x"}, 4: {"amount": "abc"}}
    job.commit()  # the counts came with the collect: the commit reads nothing again
    reads = job.reads["src"]
    assert (reads["rescued_records"], reads["malformed_records"]) == (2, 1)
    assert reads["new_columns"] == ["note"]
    assert reads["changed_columns"] == [f"amount: {'int' if fmt == 'csv' else 'bigint'} -> other"]
    element = Bookmarks(sqlite_url).get("orders")["JobBookmark"]
    element = json.loads(element) if isinstance(element, str) else element
    known = json.loads(element["src"]["known_schema"])
    assert [f["name"] for f in known["fields"]] == [*first, "dt"]  # unchanged


def test_steady_json_keys_in_another_case_nested_values_and_odd_lines(spark, sqlite_url,
                                                                      clock, tmp_path):
    """The steady JSON read without inference keeps Spark's JSON semantics where they matter:
    a key spelt in another case fills the known column (converted as the JSON reader does,
    nested values too), blank lines are no rows, a line that is not an object is a malformed
    row kept whole, a key with a null value is no rescued value, a column no new row has is
    reported missing."""
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1, "tags": ["a"], "at": "2024-01-02T03:04:05Z", "n": 1.5}\n',
        clock.now - 5 * MIN)
    read(spark, sqlite_url, clock, src, "json", None)[0].commit()
    clock.advance(10 * MIN)
    put(src, "b.json", '{"ID": 2, "Tags": ["b", "c"], "AT": "2024-01-03T00:00:00Z", "n": 2}\n'
        '\n   \n[1, 2]\n{"id": 3, "extra": null, "n": "x"}\n', clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, "json", None)
    assert cols == ["at", "id", "n", "tags", "_rescued_data"]
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == {None, 2, 3}
    assert by_id[2]["tags"] == ["b", "c"] and by_id[2]["n"] == 2.0
    assert str(by_id[2]["at"]).startswith("2024-01-0") and not by_id[2]["_rescued_data"]
    assert rescued(by_id[None])["_corrupt_record"] == "[1, 2]"
    assert rescued(by_id[3])["_file_path"].endswith("/in/b.json")
    assert rescued(by_id[3]) == {"n": "x", "_file_path": rescued(by_id[3])["_file_path"]}
    job.commit()
    reads = job.reads["src"]
    assert (reads["rescued_records"], reads["malformed_records"]) == (2, 2)
    assert reads["new_columns"] == ["extra"] and "missing_columns" not in reads
    clock.advance(10 * MIN)
    put(src, "c.json", '{"id": 4}\n', clock.now - 5 * MIN)
    job, cols, rows = read(spark, sqlite_url, clock, src, "json", None)
    job.commit()
    assert job.reads["src"]["missing_columns"] == ["at", "n", "tags"]
