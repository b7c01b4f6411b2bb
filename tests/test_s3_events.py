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
    df = job.read.files(src, format="json", transformation_ctx="src",
                        options={"schema": "key string, v long", **options})
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


def notified(s3, tmp_path) -> tuple[str, str, str]:
    """A queue the bucket's notifications go to, the source prefix and a local target."""
    queue = s3.server.create_queue(f"{s3.name}-q", visibility_s=1)
    s3.notify(queue)
    return queue, s3.url("in"), str(tmp_path / "out")


def target(spark, out) -> list[tuple[str, int]]:
    try:
        return sorted((r.key, int(r.v)) for r in spark.read.parquet(out).collect())
    except Exception as e:  # noqa: BLE001 - nothing written yet
        if "PATH_NOT_FOUND" in str(e) or "does not exist" in str(e):
            return []
        raise


def test_events_runs_take_new_objects_from_the_queue_and_the_ledger_says_how(
        spark, s3, sqlite_url, clock, tmp_path):
    queue, src, out = notified(s3, tmp_path)
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
    # no listing of the prefix (the LISTs left are the JSON inference pass of the default
    # schemaEvolution=rescue: Spark's probe of each object named and of basePath, a LIST of
    # at most 2 keys; with Spark's own handling an event run makes none, the next test)
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


def test_an_event_run_makes_no_list_request_at_the_server(spark, s3, sqlite_url, clock,
                                                            tmp_path):
    """Counted at the server, a whole event run (receive, HEADs, read, commit, deletes) makes
    no LIST: the roots' kinds are the backfill's, Spark reads the run's own statuses (no
    basePath probe), the commit-time check HEADs.  With Spark's own JSON handling (``mode``):
    the default schemaEvolution=rescue infers over the paths, one LIST each."""
    queue, src, out = notified(s3, tmp_path)
    opts = events_options(queue, mode="PERMISSIVE")
    s3.put("in/a.json", body("a", 1))
    before = len(s3.server.log)
    rows, info = run(spark, sqlite_url, clock, src, out, opts)
    assert rows == [("a", 1)] and info["backfill"] is True, info
    assert [r for r in s3.server.log[before:] if is_list_request(*r)]  # the backfill lists
    s3.put("in/b.json", body("b", 2))
    s3.put("in/c.json", body("c", 3))
    before = len(s3.server.log)
    rows, info = run(spark, sqlite_url, clock, src, out, opts)
    assert rows == [("b", 2), ("c", 3)] and info["backfill"] is False, info
    lists = [r for r in s3.server.log[before:] if is_list_request(*r)]
    assert lists == [], lists
    assert sum(1 for r in s3.server.log[before:] if r[0] == "HEAD") >= 2


# ---------------------------------------------------------------------- faults
class Forwarder:
    """Moves the bucket's notifications from its own queue to the job's queue, with faults:
    each message may be dropped, duplicated or held back for 1-3 runs, and what is sent in
    one go is shuffled (reordered)."""

    def __init__(self, sqs, raw: str, job: str, rnd: random.Random):
        self.sqs, self.raw, self.job, self.rnd = sqs, raw, job, rnd
        self.held: list[tuple[int, str]] = []
        self.counts = {"dropped": 0, "duplicated": 0, "delayed": 0, "sent": 0}

    def drain(self) -> list[str]:
        bodies = []
        while True:
            got = self.sqs.receive_message(QueueUrl=self.raw, MaxNumberOfMessages=10,
                                           VisibilityTimeout=30).get("Messages", [])
            if not got:
                return bodies
            for m in got:
                bodies.append(m["Body"])
                self.sqs.delete_message(QueueUrl=self.raw, ReceiptHandle=m["ReceiptHandle"])

    def step(self, now_run: int, *, faults: bool = True) -> None:
        out = []
        for b in self.drain():
            roll = self.rnd.random()
            if faults and roll < 0.15:
                self.counts["dropped"] += 1
                continue
            if faults and roll < 0.35:
                self.counts["delayed"] += 1
                self.held.append((now_run + self.rnd.randint(1, 3), b))
                continue
            out.append(b)
            if faults and self.rnd.random() < 0.2:
                self.counts["duplicated"] += 1
                out.append(b)
        due = [b for r, b in self.held if r <= now_run or not faults]
        self.held = [(r, b) for r, b in self.held if r > now_run and faults]
        out += due
        self.rnd.shuffle(out)
        for b in out:
            self.sqs.send_message(QueueUrl=self.job, MessageBody=b)
        self.counts["sent"] += len(out)


def test_a_seeded_timeline_with_lost_duplicate_late_and_reordered_events_reads_each_once(
        spark, s3, sqlite_url, clock, tmp_path):
    rnd = random.Random(62)
    raw = s3.server.create_queue(f"{s3.name}-raw")
    job_queue = s3.server.create_queue(f"{s3.name}-job", visibility_s=1)
    s3.notify(raw)
    fwd = Forwarder(s3.server.sqs_client(), raw, job_queue, rnd)
    src, out = s3.url("in"), str(tmp_path / "out")
    opts = events_options(job_queue)
    current: dict[str, int] = {}       # key -> version now in the bucket
    put_at: dict[str, float] = {}      # key -> wall time of its last put (S3 stamps seconds)
    versions = iter(range(1, 10**6))
    backfills: list[int] = []
    seen: list[tuple[str, int]] = []    # every row read so far

    def put(key: str) -> None:
        v = next(versions)
        s3.put(key, body(key.split("/")[-1], v))
        put_at[key] = time.time()
        if key.startswith("in/") and not key.startswith("in/_"):
            current[key.split("/")[-1]] = v

    for n in range(20):
        for _ in range(rnd.randint(1, 4)):
            roll = rnd.random()
            reusable = [k for k, t in put_at.items() if time.time() - t > 1.1]
            if roll < 0.15 and current:
                name = rnd.choice(sorted(current))
                s3.delete(f"in/{name}")
                del current[name]
            elif roll < 0.4 and reusable:      # overwrite (or put again after a delete)
                put(rnd.choice(sorted(reusable)))
            elif roll < 0.5:                   # outside the paths, or hidden
                put(rnd.choice(["other/", "in/_tmp/"]) + f"o{n}.json")
            else:
                put(f"in/k{n:02d}{rnd.randint(0, 99):02d}.json")
        fwd.step(n)
        if n in (7, 14):
            clock.offset += HOUR                 # backfillInterval (1 hour) is due
        rows, info = run(spark, sqlite_url, clock, src, out, opts)
        if info["backfill"]:
            backfills.append(n)
        assert not set(rows) & set(seen) and len(rows) == len(set(rows)), \
            f"run {n} read a version twice: {info}"
        seen.extend(rows)
    assert backfills == [0, 7, 14], backfills
    assert fwd.counts["dropped"] and fwd.counts["duplicated"] and fwd.counts["delayed"]
    # every held event is delivered; a last backfill finds the objects whose events were lost
    fwd.step(20, faults=False)
    clock.offset += HOUR
    run(spark, sqlite_url, clock, src, out, opts)
    time.sleep(1.2)                              # messages kept for later come back
    rows, info = run(spark, sqlite_url, clock, src, out, opts)
    assert rows == [], info
    rows_now = target(spark, out)
    assert len(rows_now) == len(set(rows_now)), "a version was read twice"
    assert {(k, v) for k, v in current.items()} <= set(rows_now), "a current object is missing"
    assert not [k for k, _ in rows_now if k.startswith("o")], "an object outside was read"


def test_a_run_killed_between_its_state_commit_and_its_message_deletes_reads_nothing_twice(
        spark, s3, sqlite_url, clock, tmp_path):
    queue, src, out = notified(s3, tmp_path)
    opts = events_options(queue)
    s3.put("in/a.json", body("a", 1))
    assert run(spark, sqlite_url, clock, src, out, opts)[0] == [("a", 1)]
    s3.put("in/b.json", body("b", 2))
    s3.put("in/c.json", body("c", 3))

    def killed(job):  # the process dies right after the state commit: no delete runs
        def die():
            raise SystemExit("killed after the state commit")
        job.add_after_commit(die)

    with pytest.raises(SystemExit):
        run(spark, sqlite_url, clock, src, out, opts, before_commit=killed)
    runs = Job(spark, state=sqlite_url, clock=clock).store.list_runs(job_name="ev")
    assert runs[-1]["status"] == "SUCCEEDED"
    assert target(spark, out) == [("a", 1), ("b", 2), ("c", 3)]
    time.sleep(1.2)  # the queue's visibility timeout: the undeleted messages come back
    rows, info = run(spark, sqlite_url, clock, src, out, opts)
    assert rows == [] and info["events_ignored_why"] == {"already read": 2}, info
    assert info["messages_to_delete"] == 2, info
    time.sleep(1.2)
    rows, info = run(spark, sqlite_url, clock, src, out, opts)
    assert rows == [] and info["events"] == 0, info  # deleted this time
    assert target(spark, out) == [("a", 1), ("b", 2), ("c", 3)]


def test_switching_from_listing_to_events_and_back_reads_each_object_once(
        spark, s3, sqlite_url, clock, tmp_path):
    queue, src, out = notified(s3, tmp_path)
    events, listing = events_options(queue), {}

    def step(key: str, options: dict) -> tuple[list, dict]:
        s3.put(f"in/{key}.json", body(key, ord(key)))
        return run(spark, sqlite_url, clock, src, out, options)

    s3.put("in/a.json", body("a", ord("a")))
    assert step("b", listing)[0] == [("a", 97), ("b", 98)]
    rows, info = step("c", events)
    assert rows == [("c", 99)] and info["backfill"], info
    assert info["discovery_reason"] == "switched from listing", info
    rows, info = step("d", events)
    assert rows == [("d", 100)] and not info["backfill"], info
    rows, info = step("e", listing)
    assert rows == [("e", 101)] and "discovery" not in info, info
    rows, info = step("f", events)  # the queue still holds e's event: covered by the state
    assert rows == [("f", 102)] and info["discovery_reason"] == "switched from listing", info
    rows, info = step("g", events)
    assert rows == [("g", 103)] and not info["backfill"], info
    assert target(spark, out) == [(k, ord(k)) for k in "abcdefg"]


def test_bad_input_is_one_clear_error_that_changes_no_committed_state(
        spark, s3, sqlite_url, clock, tmp_path):
    queue, src, out = notified(s3, tmp_path)
    s3.put("in/a.json", body("a", 1))
    run(spark, sqlite_url, clock, src, out, events_options(queue))
    store = Job(spark, state=sqlite_url, clock=clock).store
    before = store.current_version("ev")
    s3.put("in/b.json", body("b", 2))
    missing = f"{s3.server.endpoint}/123456789012/no-such-queue"
    cases = [(events_options(missing), SourceError, "cannot receive from the SQS queue"),
             (events_options("http://127.0.0.1:9/123456789012/q"), SourceError,
              "cannot receive from the SQS queue"),
             (events_options(queue, backfillInterval="often"), ConfigError,
              "backfillInterval='often' is not a duration"),
             ({"fileDiscovery": "events"}, ConfigError, "needs queueUrl"),
             (events_options(queue, incrementalListing="true"), ConfigError,
              "incrementalListing does not apply")]
    for options, error, words in cases:
        with pytest.raises(error, match=words):
            with Job(spark, state=sqlite_url, clock=clock).run("ev", ENABLE) as job:
                job.read.files(src, format="json", transformation_ctx="src", options=options)
        after = store.current_version("ev")
        assert (after.version, after.state) == (before.version, before.state)
    with pytest.raises(ConfigError, match="needs S3 paths"):
        with Job(spark, state=sqlite_url, clock=clock).run("local", ENABLE) as job:
            job.read.files(str(tmp_path), format="json", transformation_ctx="src",
                           options=events_options(queue))
    # and the input is still there for the next good run
    assert run(spark, sqlite_url, clock, src, out, events_options(queue))[0] == [("b", 2)]


def test_pending_answers_from_the_queue_without_consuming_a_message(
        spark, s3, sqlite_url, clock, tmp_path):
    from sparkmark.ops.pending import pending_files
    queue = s3.server.create_queue(f"{s3.name}-q", visibility_s=30)
    s3.notify(queue)
    src, out = s3.url("in"), str(tmp_path / "out")
    opts = events_options(queue)

    def pending():
        return pending_files("ev", src, transformation_ctx="src", state=sqlite_url,
                             options=opts, storage_options=s3.server.hadoop_conf(), clock=clock)

    s3.put("in/a.json", body("a", 1))
    first = pending()  # never ran: the first run lists, and so does the answer
    assert first.new_input and first.files == 1 and first.events is None, first
    run(spark, sqlite_url, clock, src, out, opts)
    assert not pending().new_input and pending().events == 0
    s3.put("in/b.json", body("b", 2))
    for _ in range(3):  # asked again and again: nothing is received or hidden
        found = pending()
        assert found.new_input and found.events == 1 and found.files is None, found
    # the run sees the message at once (a receive, even with VisibilityTimeout=0, would have
    # counted towards a dead-letter redrive; this queue hides received messages for 30 s)
    assert run(spark, sqlite_url, clock, src, out, opts)[0] == [("b", 2)]
    assert pending().events == 0
    clock.offset += HOUR  # a backfill is due: the answer is the listing's
    due = pending()
    assert not due.new_input and due.events is None and due.listed == 2, due


def test_the_glue_layer_takes_the_discovery_options_in_format_options(
        spark, s3, sqlite_url, clock):
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.job import Job as GlueJob
    glue = GlueContext(spark.sparkContext)
    queue = s3.server.create_queue(f"{s3.name}-q", visibility_s=1)
    s3.notify(queue)
    fmt = {"fileDiscovery": "events", "queueUrl": queue, "backfillInterval": "1 hour"}

    def glue_run() -> tuple[list, dict]:
        job = GlueJob(glue, state=sqlite_url, clock=clock)
        job.init("glue_ev", {"job_bookmark_option": "job-bookmark-enable"})
        frame = glue.create_dynamic_frame.from_options(
            "s3", {"paths": [f"s3://{s3.name}/in"]}, format="json", format_options=fmt,
            transformation_ctx="src")
        df = frame.toDF()
        rows = sorted(r.key for r in df.collect()) if "key" in df.columns else []
        job.commit()
        info = json.loads(Job(spark, state=sqlite_url).store.list_runs(
            job_name="glue_ev")[-1]["config"])["sources"]["src"]
        return rows, info

    s3.put("in/a.json", body("a", 1))
    rows, info = glue_run()
    assert rows == ["a"] and info["backfill"] is True, info
    s3.put("in/b.json", body("b", 2))
    rows, info = glue_run()
    assert rows == ["b"] and info["backfill"] is False and info["events_taken"] == 1, info
