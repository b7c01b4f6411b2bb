"""File events on a real S3 API and SQS (moto's server: the bucket's event notifications go to
a real queue), with real Spark local mode and a real SQLite state store.

``fileDiscovery=events``: the first run lists, later runs take the objects the queue names,
a backfill lists every ``backfillInterval``.  Covered: the ledger's event fields; a seeded
timeline of 20 runs of puts, overwrites and deletes whose events the test forwards from the
bucket's queue to the job's queue with faults (dropped, duplicated, delayed, reordered),
after which the target holds each object's content once; a run that dies between its state
commit and its message deletes; a switch from listing to events and back; bad input.

S3 stamps ``LastModified`` itself (the server's clock): the injected clock runs at real time
plus an offset the tests move forward to make a backfill due.
"""
from __future__ import annotations

import json
import random
import time

import pytest

from sparkmark import Job
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.devtools.s3 import is_list_request

from conftest import FakeClock

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
HOUR = 3_600_000


class Clock(FakeClock):
    """Real time plus ``offset`` (ms): S3 stamps objects with the real clock."""

    def __init__(self) -> None:
        super().__init__(0)
        self.offset = 0

    def __call__(self) -> int:
        return int(time.time() * 1000) + self.offset


@pytest.fixture
def clock() -> Clock:
    return Clock()


def body(key: str, version: int) -> str:
    return json.dumps({"key": key, "v": version}) + "\n"


def events_options(queue: str, **more) -> dict:
    return {"fileDiscovery": "events", "queueUrl": queue, "backfillInterval": "1 hour", **more}


def run(spark, url, clock, src, out, options, *, name="ev", before_commit=None
        ) -> tuple[list[tuple[str, int]], dict]:
    """One run: read ``src``, append to ``out``, commit; (rows read, the ledger's source)."""
    job = Job(spark, state=url, clock=clock).init(name, ENABLE)
    if before_commit is not None:
        before_commit(job)
    df = job.read.files(src, format="json", transformation_ctx="src", options=options)
    rows = ([(r.key, int(r.v)) for r in df.select("key", "v").collect()]
            if "key" in df.columns else [])
    if rows:
        job.write(df.select("key", "v"), out, format="parquet", transformation_ctx="sink")
    try:
        job.commit()
    finally:
        info = json.loads(Job(spark, state=url, clock=clock).store.list_runs(
            job_name=name)[-1]["config"])["sources"]["src"]
    return sorted(rows), info


def target(spark, out) -> list[tuple[str, int]]:
    try:
        return sorted((r.key, int(r.v)) for r in spark.read.parquet(out).collect())
    except Exception as e:  # noqa: BLE001 - nothing written yet
        if "PATH_NOT_FOUND" in str(e) or "does not exist" in str(e):
            return []
        raise


def test_events_runs_take_new_objects_from_the_queue_and_the_ledger_says_how(
        spark, s3, sqlite_url, clock, tmp_path):
    queue = s3.server.create_queue(f"{s3.name}-q", visibility_s=1)
    s3.notify(queue)
    src, out = s3.url("in"), str(tmp_path / "out")
    s3.put("in/a.json", body("a", 1))
    opts = events_options(queue)
    rows, info = run(spark, sqlite_url, clock, src, out, opts)
    assert rows == [("a", 1)]
    assert info["discovery"] == "events" and info["backfill"] is True, info
    assert info["discovery_reason"] == "first run" and info["listing"] == "full", info
    # the test event and a.json's event were received before the listing and are settled
    assert info["events"] == 2 and info["messages_to_delete"] == 2, info

    s3.put("in/b c.json", body("b c", 1))        # a key with a space: form-encoded in events
    s3.put("other/x.json", body("x", 1))          # outside the source's path
    s3.put("in/_tmp/y.json", body("y", 1))        # hidden
    s3.put("in/a.json", body("a", 2))             # overwritten
    s3.delete("in/a.json")
    s3.put("in/a.json", body("a", 3))
    before = len(s3.server.log)
    rows, info = run(spark, sqlite_url, clock, src, out, opts)
    assert rows == [("a", 3), ("b c", 1)], rows
    # no listing of the prefix: only the root's status (a LIST of at most 2 keys)
    assert not [q for m, p, q in s3.server.log[before:] if is_list_request(m, p, q)
                and q.endswith("prefix=in%2F") and "max-keys=2&" not in q]
    assert info["backfill"] is False and info["listing"] == "events", info
    assert info["events"] == 6 and info["events_taken"] == 2, info
    assert info["events_ignored"] == 4 and info["events_ignored_why"] == {
        "outside the paths": 2, "removed": 1, "duplicate": 1}, info
    assert info["messages_to_delete"] == 6, info

    rows, info = run(spark, sqlite_url, clock, src, out, opts)  # all deleted: nothing to take
    assert rows == [] and info["events"] == 0 and info["new_input"] is False, info
    assert target(spark, out) == [("a", 1), ("a", 3), ("b c", 1)]

    clock.offset += HOUR  # backfillInterval passed: a full listing, which reads nothing again
    rows, info = run(spark, sqlite_url, clock, src, out, opts)
    assert rows == [] and info["backfill"] is True, info
    assert info["discovery_reason"] == "backfillInterval is due", info
