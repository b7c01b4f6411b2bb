"""Delta Lake's jars from the jar set, on each Spark line that has them (3.5 and 4.1): a real
local session with ``delta-spark`` from Maven Central writes and reads Delta tables, and the
primitives a Delta source and target build on work as Delta documents them: table versions in
``DESCRIBE HISTORY``, ``versionAsOf`` reads, the change data feed with ``_change_type`` and
``_commit_version``, idempotent appends keyed by ``txnAppId`` / ``txnVersion``, and
``userMetadata`` in ``commitInfo``.  delta-rs (the ``deltalake`` package, another engine) reads
what Spark wrote.

Runs in a pytest process of its own (``make test-delta``: the session must start with Delta's
extensions); skipped elsewhere, failed under SPARKMARK_REQUIRE_DELTA=1 when the jars are
missing."""
from __future__ import annotations

import os

import pytest

REQUIRED = os.environ.get("SPARKMARK_REQUIRE_DELTA") == "1"


def _ids(df) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


def test_versions_history_and_time_travel(delta, tmp_path):
    path = str(tmp_path / "t")
    delta.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING") \
        .write.format("delta").save(path)
    delta.createDataFrame([(3, "c")], "id BIGINT, v STRING") \
        .write.format("delta").mode("append").option("userMetadata", "job=j run=r1").save(path)
    history = delta.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()
    assert [(h.version, h.operation) for h in history] == [(0, "WRITE"), (1, "WRITE")]
    assert history[1].userMetadata == "job=j run=r1"
    assert _ids(delta.read.format("delta").option("versionAsOf", 0).load(path)) == [1, 2]
    assert _ids(delta.read.format("delta").load(path)) == [1, 2, 3]


def test_change_data_feed_gives_change_rows_between_versions(delta, tmp_path):
    path = str(tmp_path / "cdf")
    delta.createDataFrame([(1, "a")], "id BIGINT, v STRING").write.format("delta") \
        .option("delta.enableChangeDataFeed", "true").save(path)
    delta.createDataFrame([(2, "b")], "id BIGINT, v STRING").write.format("delta") \
        .mode("append").save(path)
    delta.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")
    changes = (delta.read.format("delta").option("readChangeFeed", "true")
               .option("startingVersion", 1).option("endingVersion", 2).load(path))
    assert sorted((r.id, r._change_type, r._commit_version) for r in changes.collect()) == [
        (1, "delete", 2), (2, "insert", 1)]


def test_an_append_with_the_same_txn_version_is_written_once(delta, tmp_path):
    path = str(tmp_path / "txn")
    df = delta.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING")
    for _ in range(2):  # a re-run of the same (app, version): Delta skips the second
        df.write.format("delta").mode("append").option("txnAppId", "job-j") \
            .option("txnVersion", 7).save(path)
    df.write.format("delta").mode("append").option("txnAppId", "job-j") \
        .option("txnVersion", 8).save(path)
    assert _ids(delta.read.format("delta").load(path)) == [1, 1, 2, 2]
    versions = delta.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert len(versions) == 2


def test_delta_rs_reads_what_spark_wrote(delta, tmp_path):
    deltalake = pytest.importorskip("deltalake") if not REQUIRED else __import__("deltalake")
    path = str(tmp_path / "rs")
    delta.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING") \
        .write.format("delta").save(path)
    delta.createDataFrame([(3, "c")], "id BIGINT, v STRING") \
        .write.format("delta").mode("append").save(path)
    table = deltalake.DeltaTable(path)
    assert table.version() == 1
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]
