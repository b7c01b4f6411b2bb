"""The pure planning of file events (sparkmark.planning.events), property-tested against a
simple model of a bucket, its event queue and the runs that read it (no Spark, no I/O).

The model: objects are put, overwritten and deleted, each put stamped with a new time; every
change sends an event that the queue may drop, duplicate, delay or reorder, and a run may die
between its state commit and its message deletes.  Runs list in full when
:func:`backfill_due` says so and plan with :func:`plan_band`, else plan with
:func:`plan_events`.  Whatever happens, no object version is read twice, and once a last
backfill has run every object's current version has been read exactly once.
"""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkmark.core.errors import ConfigError
from sparkmark.planning.bands import BandOptions, BandState, FileEntry, plan_band
from sparkmark.planning.event_messages import EventMessage, parse_body
from sparkmark.planning.events import (EventOptions, after_listing, backfill_due, event_path,
                                       known_roots, parse_backfill_interval, plan_events,
                                       roots_of, settled_by_listing, split_event_options,
                                       wanted_paths, with_marker)

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/lake-events"
ROOTS = roots_of(["s3a://lake/in"])


def body(kind: str, key: str, bucket: str = "lake") -> str:
    name = "ObjectCreated:Put" if kind == "created" else "ObjectRemoved:Delete"
    from urllib.parse import quote_plus
    return json.dumps({"Records": [{"eventName": name, "s3": {
        "bucket": {"name": bucket}, "object": {"key": quote_plus(key), "size": 1}}}]})


# ---------------------------------------------------------------------- options
def test_options_are_split_and_validated_with_one_clear_error():
    opts, rest = split_event_options({"FileDiscovery": "EVENTS", "queueurl": QUEUE,
                                      "backfillInterval": "12 hours", "header": "true"})
    assert opts == EventOptions("events", QUEUE, 12 * 3_600_000) and rest == {"header": "true"}
    assert split_event_options({"header": "x"}) == (EventOptions(), {"header": "x"})
    assert parse_backfill_interval(None) == 86_400_000
    assert parse_backfill_interval("1 day") == parse_backfill_interval("1d") == 86_400_000
    assert parse_backfill_interval("45") == 45_000
    for bad, words in [({"fileDiscovery": "events"}, "needs queueUrl"),
                       ({"fileDiscovery": "notify", "queueUrl": QUEUE}, "not one of"),
                       ({"fileDiscovery": "events", "queueUrl": "lake-events"},
                        "not an SQS queue URL"),
                       ({"fileDiscovery": "events", "queueUrl": QUEUE,
                         "backfillInterval": "soon"}, "not a duration"),
                       ({"fileDiscovery": "events", "queueUrl": QUEUE,
                         "backfillInterval": "1 fortnight"}, "not a duration"),
                       ({"fileDiscovery": "events", "queueUrl": QUEUE,
                         "backfillInterval": "0s"}, "shorter than one second"),
                       ({"queueUrl": QUEUE}, "only applies with fileDiscovery=events")]:
        with pytest.raises(ConfigError, match=words):
            split_event_options(bad)


def test_bodies_of_s3_eventbridge_sns_and_test_events():
    rec = parse_body(body("created", "in/a b.json"))[0]
    assert (rec.kind, rec.bucket, rec.key) == ("created", "lake", "in/a b.json")
    assert parse_body(body("removed", "in/x"))[0].kind == "removed"
    assert parse_body('{"Event": "s3:TestEvent", "Bucket": "lake"}')[0].kind == "test"
    sns = json.dumps({"Type": "Notification", "Message": body("created", "in/c")})
    assert parse_body(sns)[0].key == "in/c"
    eb = json.dumps({"source": "aws.s3", "detail-type": "Object Created", "time":
                     "2026-01-01T00:00:00Z", "detail": {"bucket": {"name": "lake"},
                                                        "object": {"key": "in/d", "size": 4}}})
    assert parse_body(eb)[0].kind == "created" and parse_body(eb)[0].size == 4
    assert parse_body("not json")[0].kind == "other"
    assert parse_body("[1]")[0].kind == "other"


def test_scope_follows_the_listing_rules():
    def path(key, **kw):
        rec = parse_body(body("created", key, kw.pop("bucket", "lake")))[0]
        return event_path(rec, ROOTS, BandOptions(**kw))
    assert path("in/a.json") == "s3a://lake/in/a.json"
    assert path("in/dt=1/a.json") == "s3a://lake/in/dt=1/a.json"
    assert path("in/sub/a.json") is None and path("in/sub/a.json", recurse=True)
    assert path("in/_tmp/a.json") is None and path("in/.a.json") is None
    assert path("in/") is None and path("inx/a.json") is None and path("other/a.json") is None
    assert path("in/a.json", bucket="other") is None
    assert path("in/a.tmp", exclusions=("**.tmp",)) is None
    file_root = roots_of(["s3a://lake/in/a.json"], files=["s3a://lake/in/a.json"])
    rec = parse_body(body("created", "in/a.json"))[0]
    assert event_path(rec, file_root, BandOptions()) == "s3a://lake/in/a.json"


def test_backfill_is_due_first_after_listing_after_the_interval_and_for_another_queue():
    opts = EventOptions("events", QUEUE, 1_000)
    assert backfill_due(None, 5, opts) == (True, "first run")
    listed = BandState(low=10, high=20, files={"k": 15})
    assert backfill_due(listed, 30, opts) == (True, "switched from listing")
    marked = BandState(low=10, high=20, extra=with_marker({}, opts, 20))
    assert backfill_due(marked, 500, opts) == (False, "events")
    assert backfill_due(marked, 1_020, opts)[0]
    other = EventOptions("events", QUEUE + "2", 1_000)
    assert backfill_due(marked, 500, other) == (True, "another queue")
    assert with_marker(marked.extra, EventOptions(), None) == {}
    bounded = BandState(low=10, extra=after_listing(marked.extra, opts, 400, deferred=3))
    assert backfill_due(bounded, 500, opts) == (True, "the last backfill left files for later")


def test_the_marker_keeps_the_backfill_roots_kinds_for_the_event_runs_after_it():
    opts = EventOptions("events", QUEUE, 1_000)
    listed = after_listing({}, opts, 20, 0, {"s3a://lake/in": False, "s3a://lake/x.json": True})
    kinds = {"s3a://lake/in": False, "s3a://lake/x.json": True}
    assert known_roots(BandState(low=10, extra=listed)) == kinds
    # an event run keeps them; the next backfill replaces them; listing mode drops them
    kept = with_marker(listed, opts, None)
    assert known_roots(BandState(low=10, extra=kept)) == kinds
    again = after_listing(kept, opts, 40, 0, {"s3a://lake/in": False})
    assert known_roots(BandState(low=10, extra=again)) == {"s3a://lake/in": False}
    assert known_roots(BandState(low=10, extra=with_marker(kept, EventOptions(), None))) == {}
    # an element from before the roots were kept: none known (the run asks for each status)
    assert known_roots(BandState(low=10, extra=with_marker({}, opts, 20))) == {}


def test_an_event_run_keeps_messages_for_files_it_leaves_for_later():
    a, b, c = (FileEntry(m, f"s3a://lake/in/{n}", 1) for m, n in [(30, "a"), (40, "b"),
                                                                  (90, "c")])
    msgs = [EventMessage(n, "r" + n, parse_body(body("created", f"in/{n}"))) for n in "abc"]
    prev = BandState(low=10, high=20)
    plan = plan_events(msgs, ROOTS, {f.path: f for f in (a, b, c)}, prev, 50,
                       BandOptions(bounded_files=1))
    assert [f.path for f in plan.selected] == [a.path]
    assert plan.delete == ("a",) and plan.keep == ("b", "c")
    assert plan.waiting == 1 and plan.deferred == 1 and plan.stopped_by == "boundedFiles"
    assert plan.state.low == 10 and plan.state.covers(a) and not plan.state.covers(b)
    again = plan_events(msgs, ROOTS, {f.path: f for f in (a, b, c)}, plan.state, 100)
    assert [f.path for f in again.selected] == [b.path, c.path]
    assert again.why_ignored == {"already read": 1} and len(again.delete) == 3
    gone = plan_events(msgs, ROOTS, {}, prev, 100)
    assert gone.selected == () and gone.why_ignored == {"gone": 3}


def test_messages_received_before_a_backfill_are_settled_by_its_state():
    a = FileEntry(30, "s3a://lake/in/a", 1)
    later = FileEntry(90, "s3a://lake/in/b", 1)
    msgs = [EventMessage(n, "r", parse_body(body("created", f"in/{n}"))) for n in "abx"]
    state = BandState(low=20, files={})
    delete, keep = settled_by_listing(msgs, ROOTS, {a.path: a, later.path: later},
                                      BandState(low=40), BandOptions())
    assert delete == ("a", "x") and keep == ("b",)
    assert settled_by_listing(msgs[:1], ROOTS, {a.path: a}, state, BandOptions())[1] == ("a",)


# ---------------------------------------------------------------------- the model
def simulate(seed: int, runs: int, *, p_drop: float, p_dup: float, p_delay: float,
             p_crash: float, interval: int, bounded: int | None) -> None:
    rnd = random.Random(seed)
    band = BandOptions(max_band=5, bounded_files=bounded)
    opts = EventOptions("events", QUEUE, interval)
    objects: dict[str, int] = {}           # key -> mtime of its current version
    queue: list[EventMessage] = []         # visible messages, in delivery order
    held: list[tuple[int, EventMessage]] = []  # (run it becomes visible, message)
    state: BandState | None = None
    read: list[tuple[str, int]] = []
    t = 100
    ids = iter(range(10**9))

    def send(kind: str, key: str, run: int) -> None:
        if rnd.random() < p_drop:
            return
        for _ in range(2 if rnd.random() < p_dup else 1):
            msg = EventMessage(str(next(ids)), "r", parse_body(body(kind, key)))
            if rnd.random() < p_delay:
                held.append((run + rnd.randint(1, 3), msg))
            else:
                queue.insert(rnd.randint(0, len(queue)), msg)  # reordered

    def one_run(run: int, force_backfill: bool = False) -> None:
        nonlocal state, queue, held, t
        queue += [m for due, m in held if due <= run]
        held = [(due, m) for due, m in held if due > run]
        T = t
        t += 1
        received = list(queue)
        due, _ = backfill_due(state, T, opts)
        if due or force_backfill:
            listing = [FileEntry(m, f"s3a://lake/{k}", 1) for k, m in objects.items()]
            plan = plan_band(listing, state, T, band)
            new = BandState(low=plan.state.low, high=plan.state.high,
                            listing_ts=plan.state.listing_ts, band=plan.state.band,
                            files=plan.state.files,
                            extra=after_listing(plan.state.extra, opts, T, plan.deferred))
            selected = list(plan.selected)
            delete, _keep = settled_by_listing(received, ROOTS, {f.path: f for f in listing},
                                               new, band)
        else:
            assert state is not None
            current = {}
            for p in wanted_paths(received, ROOTS, band):
                key = p.split("/", 3)[3]
                current[p] = FileEntry(objects[key], p, 1) if key in objects else None
            ev = plan_events(received, ROOTS, current, state, T, band)
            new, selected, delete = ev.state, list(ev.selected), ev.delete
        read.extend((f.path, f.mtime) for f in selected)  # committed with the state
        state = new
        if rnd.random() >= p_crash:  # else: killed between the state commit and the deletes
            gone = set(delete)
            queue = [m for m in queue if m.id not in gone]

    for run in range(runs):
        for _ in range(rnd.randint(0, 4)):
            key = f"in/{rnd.choice('abcdefgh')}.json"
            if key in objects and rnd.random() < 0.25:
                del objects[key]
                send("removed", key, run)
            else:
                objects[key] = t
                send("created", key, run)
            t += 1
        one_run(run)
    assert len(read) == len(set(read)), "a version was read twice"
    # a last backfill, then the runs that read what it left for later (a bound lists again
    # until a backfill finishes) and what the messages still held back name
    for extra in range(runs, runs + 60):
        one_run(extra, force_backfill=extra == runs)
        assert state is not None
        if extra >= runs + 3 and not dict(state.extra["events"]).get("incomplete"):
            break
    assert len(read) == len(set(read)), "a version was read twice"
    assert {(f"s3a://lake/{k}", m) for k, m in objects.items()} <= set(read), \
        "an object's current version was never read"


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), runs=st.integers(1, 20),
       p_drop=st.sampled_from([0.0, 0.2, 0.5]), p_dup=st.sampled_from([0.0, 0.3]),
       p_delay=st.sampled_from([0.0, 0.3]), p_crash=st.sampled_from([0.0, 0.3]),
       interval=st.sampled_from([3, 10, 1_000]), bounded=st.sampled_from([None, 2]))
def test_every_version_is_read_at_most_once_and_every_object_once_after_a_backfill(
        seed, runs, p_drop, p_dup, p_delay, p_crash, interval, bounded):
    simulate(seed, runs, p_drop=p_drop, p_dup=p_dup, p_delay=p_delay, p_crash=p_crash,
             interval=interval, bounded=bounded)


def test_without_faults_events_alone_read_every_object():
    simulate(7, 20, p_drop=0, p_dup=0, p_delay=0, p_crash=0, interval=10**9, bounded=None)
