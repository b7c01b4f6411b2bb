"""``sinks.stamping.stamp``: the stamp columns every sink adds, written as one ``selectExpr``
(issue 26), with the same names, types and values as ``withColumns`` with ``lit`` and
``timestamp_millis``; columns of those names are replaced, and a run id that is not one is
refused before it reaches SQL text."""
from __future__ import annotations

import datetime as dt

import pytest

from sparkmark.core.errors import SinkError
from sparkmark.sinks.stamping import stamp, stamped_columns

RUN = "0123456789abcdef" * 2
TS = 1_700_000_000_123


def test_stamp_adds_the_run_id_and_the_snapshot_time_as_withcolumns_would(spark):
    from pyspark.sql import functions as F
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING")
    ours = stamp(df, RUN, TS)
    theirs = df.withColumns({"sm_run_id": F.lit(RUN),
                             "sm_snapshot_ts": F.timestamp_millis(F.lit(TS))})
    assert ours.schema == theirs.schema
    assert ours.columns == ["id", "v", "sm_run_id", "sm_snapshot_ts"] == stamped_columns(df.columns)
    assert sorted(ours.collect()) == sorted(theirs.collect())
    row = ours.where("id = 1").collect()[0]
    assert row.sm_run_id == RUN
    # collected as a naive local time, as PySpark gives timestamps
    assert row.sm_snapshot_ts == dt.datetime.fromtimestamp(TS / 1000)


def test_existing_stamp_columns_are_replaced_not_duplicated(spark):
    df = spark.createDataFrame([(1, "old", None)], "id BIGINT, SM_RUN_ID STRING, x INT")
    out = stamp(df, RUN, TS)
    assert [c.lower() for c in out.columns] == ["id", "sm_run_id", "x", "sm_snapshot_ts"]
    assert stamped_columns(df.columns) == out.columns  # the sinks' column check, without Spark
    assert out.collect()[0][1] == RUN
    # a caller that knows df's columns passes them (no second schema lookup): same result
    plain = spark.createDataFrame([(1,)], "id BIGINT")
    assert stamp(plain, RUN, TS, columns=["id"]).collect() == stamp(plain, RUN, TS).collect()


@pytest.mark.parametrize("bad", ["x' AS a, 'y", "0" * 31, RUN.upper(), ""])
def test_a_run_id_that_is_not_one_is_refused_before_any_sql(spark, bad):
    df = spark.createDataFrame([(1,)], "id BIGINT")
    with pytest.raises(SinkError, match="not a sparkmark run id"):
        stamp(df, bad, TS)
