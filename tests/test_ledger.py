"""The ledger report: rows for table/JSON/CSV, filters, timezones, and the Spark DataFrame."""
from __future__ import annotations

import csv
import io
import json

import pytest

from sparkmark import Job, Pipeline
from sparkmark.core.errors import PipelineError, UnknownJobError
from sparkmark.state.ledger import COLUMNS, ledger_rows, report_dataframe, report_rows
from sparkmark.planning.windows import DAY_MS, parse_time

DAY0 = parse_time("2024-03-01")


@pytest.fixture
def filled(spark, tmp_path, state_url, clock):
    """Pipeline 'paris' (Europe/Paris, modules 1 and 2, two runs) and one plain job run."""
    clock.now = DAY0 + 2 * DAY_MS
    p = Pipeline("paris", spark, state=state_url, primordial_date="2024-03-01",
                 timezone="Europe/Paris", clock=clock)

    @p.module(id=1, name="One", layer="bronze", target=str(tmp_path / "one"))
    def one(ctx):
        return ctx.spark.range(2)

    @p.module(id=2, name="Two", layer="silver", target=str(tmp_path / "two"), depends_on=[1])
    def two(ctx):
        return ctx.spark.range(1)

    first = p.run()
    clock.advance(DAY_MS)
    second = p.run(modules=[1])
    job = Job(spark, state=state_url, clock=clock)
    job.init("plain", {})
    job.commit()
    return p, first, second


def test_report_rows_columns_times_and_filters(filled, state_url):
    p, first, second = filled
    rows = report_rows(state_url, pipeline="paris")
    assert [(r["module_id"], r["status"]) for r in rows] == [(1, "SUCCEEDED"), (2, "SUCCEEDED"),
                                                             (1, "SUCCEEDED")]
    assert list(rows[0]) == list(COLUMNS)
    for col in ("pipeline", "module_id", "module_name", "layer", "run_id", "run_number",
                "attempt", "status", "error", "run_start", "run_end", "from", "until",
                "snapshot", "records_read", "records_written", "config"):
        assert col in rows[0]
    # dates are read in the pipeline's timezone (primordial: midnight in Paris); times are
    # stored in UTC and shown in the pipeline's timezone (Paris is UTC+1 in March)
    assert rows[0]["from"] == "2024-03-01 00:00:00.000+01:00"
    assert rows[0]["until"] == "2024-03-03 01:00:00.000+01:00"
    assert rows[0]["timezone"] == "Europe/Paris"
    assert rows[0]["pipeline_run_id"] == first.run_id and rows[2]["pipeline_run_id"] == \
        second.run_id
    assert rows[0]["records_written"] == 2 and rows[0]["run_number"] == 1
    assert rows[2]["run_number"] == 2
    assert json.loads(rows[0]["config"])["pipeline"]["timezone"] == "Europe/Paris"
    # an explicit timezone wins
    utc = report_rows(state_url, pipeline="paris", timezone="UTC")
    assert utc[0]["from"] == "2024-02-29 23:00:00.000+00:00"
    assert utc[0]["until"] == "2024-03-03 00:00:00.000+00:00"
    # filters
    assert [r["module_id"] for r in report_rows(state_url, pipeline="paris", module=2)] == [2]
    assert [r["module_id"] for r in report_rows(state_url, pipeline="paris", module="1")] == \
        [1, 1]
    last = report_rows(state_url, pipeline="paris", last=1)
    assert len(last) == 1 and last[0]["pipeline_run_id"] == second.run_id
    everything = report_rows(state_url)
    assert {r["job_name"] for r in everything} == {"paris.1", "paris.2", "plain"}
    plain = report_rows(state_url, job="plain")
    assert plain[0]["pipeline"] is None and plain[0]["timezone"] == "UTC"
    # JSON and CSV serialisable as they are
    json.dumps(rows)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS)
    w.writeheader()
    w.writerows(rows)
    assert len(list(csv.DictReader(io.StringIO(buf.getvalue())))) == 3


def _check_errors(state_url):
    with pytest.raises(UnknownJobError, match="no runs of pipeline 'nope'"):
        report_rows(state_url, pipeline="nope")
    with pytest.raises(UnknownJobError, match="no job named 'nojob'"):
        report_rows(state_url, job="nojob")
    for bad in (0, -3, "x"):
        with pytest.raises(PipelineError, match="--last must be a whole number"):
            report_rows(state_url, last=bad)
    with pytest.raises(PipelineError, match="bad module id 'abc'"):
        report_rows(state_url, module="abc")
    with pytest.raises(PipelineError, match="unknown timezone"):
        report_rows(state_url, timezone="Mars/Olympus")
    assert report_rows(state_url, pipeline="paris", module=99) == []


def test_report_dataframe_and_errors(filled, spark, state_url):
    p, first, _ = filled
    _check_errors(state_url)
    df = p.report()
    assert df.count() == 3
    types = dict(df.dtypes)
    assert types["from_ts"] == "bigint" and types["module_id"] == "int"
    assert types["from"] == "string" and types["status"] == "string"
    r = df.where("module_id = 2").collect()[0]
    assert r.from_ts == DAY0 - 3_600_000 and r["from"] == "2024-03-01 00:00:00.000+01:00"
    assert r.pipeline_run_id == first.run_id
    raw = ledger_rows(state_url, pipeline="paris")
    assert sorted(x.run_id for x in df.collect()) == sorted(x["run_id"] for x in raw)
    df2 = report_dataframe(spark, state_url, pipeline="paris", last=1, timezone="UTC")
    assert df2.count() == 1 and df2.collect()[0]["timezone"] == "UTC"


def test_reading_the_ledger_creates_no_store(tmp_path):
    """A mistyped path is an error, not a new empty state.db (issue 27: one got committed)."""
    from sparkmark.core.errors import StateStoreError
    missing = tmp_path / "typo" / "state.db"
    with pytest.raises(StateStoreError, match="there is no state store at"):
        ledger_rows(f"sqlite:///{missing}", job="x")
    assert not missing.exists() and not missing.parent.exists()


def test_parse_since_takes_iso_dates_times_and_spans_back_from_now():
    from sparkmark.core.errors import ConfigError
    from sparkmark.state.ledger import parse_since
    now = parse_time("2024-05-10T12:00:00Z")
    assert parse_since("24h", now) == now - DAY_MS
    assert parse_since("7d", now) == now - 7 * DAY_MS
    assert parse_since(" 30M ", now) == now - 30 * 60_000
    assert parse_since("2w", now) == now - 14 * DAY_MS
    assert parse_since("2024-05-01", now) == parse_time("2024-05-01")
    assert parse_since("2024-05-01T06:30", now) == parse_time("2024-05-01T06:30:00+00:00")
    assert parse_since("2024-05-01T06:30:00Z", now) == parse_time("2024-05-01T06:30:00+00:00")
    assert parse_since("2024-05-01 08:30+02:00", now) == parse_time("2024-05-01T06:30:00Z")
    assert parse_since("2024-05-01", now, tz="Europe/Paris") == \
        parse_time("2024-04-30T22:00:00Z")
    for bad in ("", "yesterday", "7", "7y", "-1d", "2024-02-30", "2024-05-01Tnoon", "1.5h"):
        with pytest.raises(ConfigError, match="cannot read --since .*ISO date.* 24h"):
            parse_since(bad, now)


def test_ledger_rows_filter_by_status_and_since_in_the_store(sqlite_url, clock):
    from sparkmark.core.errors import ConfigError
    from sparkmark.state.ledger import ledger_count, runs_left_out
    made = []
    for end in ("commit", "fail", "commit", "fail"):
        job = Job(None, state=sqlite_url, clock=clock).init("orders", {})
        clock.advance(2_000)
        job.commit() if end == "commit" else job.fail("boom")
        made.append(job.run_id)
        clock.advance(DAY_MS)
    t0 = ledger_rows(sqlite_url)[0]["run_start_ts"]
    failed = [r["run_id"] for r in ledger_rows(sqlite_url, statuses="failed")]
    assert failed == [made[1], made[3]]
    assert [r["run_id"] for r in ledger_rows(sqlite_url, statuses=["FAILED", "succeeded"],
                                             since=t0 + DAY_MS)] == made[1:]
    assert [r["run_id"] for r in ledger_rows(sqlite_url, statuses="FAILED", last=1)] == \
        [made[3]]
    assert ledger_count(sqlite_url, statuses="FAILED") == 2
    assert ledger_count(sqlite_url, since=t0 + 2 * DAY_MS) == 2
    assert runs_left_out(sqlite_url, 1, 1, statuses="FAILED") == 1
    assert runs_left_out(sqlite_url, 2, 3) == 0  # the limit was not reached: no COUNT needed
    rows = report_rows(sqlite_url, job="orders", statuses="failed")
    assert [(r["status"], r["duration_s"], r["files_read"]) for r in rows] == \
        [("FAILED", 2.0, None)] * 2
    assert report_rows(sqlite_url, job="orders", statuses="SKIPPED") == []  # a job, no match
    with pytest.raises(ConfigError, match="unknown status 'DONE'; use one of RUNNING"):
        ledger_rows(sqlite_url, statuses="SUCCEEDED,DONE")
    with pytest.raises(ConfigError, match="give epoch ms"):
        ledger_rows(sqlite_url, since=1.5)  # type: ignore[arg-type]
