"""File sources on a real S3 API (moto, in process), classic and over Spark Connect.

S3 stamps ``LastModified`` itself, in whole seconds of the server's clock: the tests upload real
objects and place the injected clock relative to those times.  Covered: only new objects per
run, ties on one second at both band edges, late objects, ``boundedFiles``, exclusions,
``key=value`` partitions, key names with spaces, ``=``, ``%``, unicode and glob characters, and
a random timeline checked against a simple model of what each run must read.
"""
from __future__ import annotations

import json
import random
import time

import pytest

from sparkmark import Job
from sparkmark.engine.compat import is_connect
from sparkmark.devtools.s3 import is_list_request

from conftest import FakeClock

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
SEC = 1000
MIN = 60 * SEC


@pytest.fixture(scope="module")
def spark(any_spark):
    return any_spark


@pytest.fixture
def now_clock() -> FakeClock:
    """A clock at the real time: S3 stamps objects with the server's clock."""
    return FakeClock(start=int(time.time() * 1000))


def lines(ids: list[int]) -> str:
    return "".join(json.dumps({"id": i, "amount": i * 1.5}) + "\n" for i in ids)


def run(spark, url, clock, src, *, options=None, name="orders") -> list[int]:
    job = Job(spark, state=url, clock=clock).init(name, ENABLE)
    df = job.read.files(src, format="json", transformation_ctx="src", options=options or {})
    if "id" in df.columns:
        ids = sorted(int(r.id) for r in df.select("id").collect())
    else:  # a run that found nothing before any schema was known has no columns
        assert df.count() == 0, df.columns
        ids = []
    job.commit()
    return ids


def test_only_new_objects_are_read_and_odd_key_names_are_literal(spark, s3, sqlite_url,
                                                                 now_clock):
    src = s3.url("in")
    names = ["a.json", "with space.json", "k=v.json", "pct%41.json", "ünï😀.json",
             "glob[1]{a,b}*?.json"]
    for i, n in enumerate(names):
        s3.put(f"in/{n}", lines([i]))
    now_clock.now = max(s3.mtime(f"in/{n}") for n in names) + 5 * SEC
    assert run(spark, sqlite_url, now_clock, src) == list(range(len(names)))

    now_clock.advance(MIN)
    assert run(spark, sqlite_url, now_clock, src) == []
    s3.put("in/later.json", lines([100]))
    now_clock.now = max(now_clock.now + SEC, s3.mtime("in/later.json") + 2 * SEC)
    assert run(spark, sqlite_url, now_clock, src) == [100]
    job = Job(spark, state=sqlite_url, clock=now_clock)
    last = job.store.list_runs(job_name="orders")[-1]
    assert last["status"] == "SUCCEEDED"


def test_a_late_multipart_object_is_reported_then_read_once_with_late_files_read(
        spark, s3, sqlite_url, now_clock):
    """A late object on S3: AWS stamps a multipart object with the upload's initiation time,
    so a long upload becomes visible after a run whose band already passed that time.  (moto
    stamps completion; ``put_started_at`` gives moto's record the initiation time, as AWS
    would, and every listing goes through the real S3 API.)"""
    import json as _json
    src = s3.url("late")
    started = int(time.time() * 1000) - 20 * MIN  # a long upload, begun 20 minutes ago
    s3.put("late/a.json", lines([1]))
    now_clock.now = s3.mtime("late/a.json") + 5 * SEC
    assert run(spark, sqlite_url, now_clock, src, name="late") == [1]
    assert s3.put_started_at("late/big.json", lines([7, 8]), started) < s3.mtime("late/a.json")

    def info() -> dict:
        runs = Job(spark, state=sqlite_url, clock=now_clock).store.list_runs(job_name="late")
        return _json.loads(runs[-1]["config"])["sources"]["src"]

    now_clock.advance(MIN)
    assert run(spark, sqlite_url, now_clock, src, name="late") == []  # default: reported
    assert info()["late_files"] == 1 and info()["late_sample"] == ["big.json"], info()
    now_clock.advance(MIN)
    assert run(spark, sqlite_url, now_clock, src, name="late",
               options={"lateFiles": "read"}) == [7, 8]
    assert info()["late_files"] == 1 and info()["files"] == 1, info()
    now_clock.advance(MIN)
    assert run(spark, sqlite_url, now_clock, src, name="late",
               options={"lateFiles": "read"}) == []
    assert info()["late_files"] == 0, info()


def test_a_tie_on_one_second_at_the_upper_edge_is_read_by_the_next_run(spark, s3, sqlite_url,
                                                                       now_clock):
    """A run whose T falls inside the second an object is stamped with must not settle that
    second: another object stamped with the same second, uploaded after the listing, is read
    by the next run (and the first object is not read again)."""
    for attempt in range(20):  # both objects must land in one wall-clock second
        src, name = s3.url(f"in{attempt}"), f"tie{attempt}"
        while time.time() % 1 > 0.3:
            time.sleep(0.05)
        m1 = s3.put(f"in{attempt}/a.json", lines([1]))
        now_clock.now = m1  # T == the second both objects are stamped with
        job = Job(spark, state=sqlite_url, clock=now_clock).init(name, ENABLE)
        df = job.read.files(src, format="json", transformation_ctx="src")
        # right after the listing (the run's paths are fixed), not after its read and commit:
        # a loaded machine (Spark Connect under CI's parallel suites) takes longer than the
        # rest of the second for those
        m2 = s3.put(f"in{attempt}/b.json", lines([2]))
        a = sorted(int(r.id) for r in df.select("id").collect())
        job.commit()
        if m2 == m1:
            break
    else:
        pytest.fail("could not upload two objects within one second")
    assert a == [1]
    now_clock.advance(SEC)
    assert run(spark, sqlite_url, now_clock, src, name=name) == [2]
    now_clock.advance(MIN)
    assert run(spark, sqlite_url, now_clock, src, name=name) == []


def test_bounded_files_spreads_objects_tied_on_one_second_over_runs(spark, s3, sqlite_url,
                                                                     now_clock):
    """``boundedFiles`` over a backlog of objects stamped with the same second (a tie at the
    bound): oldest first, the rest by later runs, nothing lost, nothing twice."""
    src = s3.url("in")
    mtimes = [s3.put(f"in/f{i}.json", lines([i])) for i in range(5)]
    now_clock.now = max(mtimes) + SEC
    seen = []
    for _ in range(4):
        seen.append(run(spark, sqlite_url, now_clock, src, options={"boundedFiles": 2}))
        now_clock.advance(SEC)
    assert sorted(sum(seen, [])) == [0, 1, 2, 3, 4]
    assert [len(s) for s in seen] == [2, 2, 1, 0]


def test_exclusions_and_partitions_on_s3(spark, s3, sqlite_url, now_clock):
    src = s3.url("in")
    s3.put("in/day=2024-01-01/region=eu/a.json", lines([1]))
    s3.put("in/day=2024-01-02/region=us/b.json", lines([2]))
    s3.put("in/day=2024-01-02/region=us/skip.tmp", lines([3]))
    s3.put("in/_staging/x.json", lines([98]))
    now_clock.now = int(time.time() * 1000) + 2 * SEC
    job = Job(spark, state=sqlite_url, clock=now_clock).init("parts", ENABLE)
    df = job.read.files(src, format="json", transformation_ctx="src",
                        options={"exclusions": '["**.tmp"]'})
    assert sorted((r.id, str(r.day), r.region) for r in df.collect()) == [
        (1, "2024-01-01", "eu"), (2, "2024-01-02", "us")]
    job.commit()


def test_random_timeline_reads_every_object_version_once(spark, s3, sqlite_url, now_clock):
    """Random uploads, overwrites and deletes between runs whose clocks sit on, just before or
    just after the stamped seconds (skew both ways), some runs bounded: no run reads an object
    version twice, and a final run far ahead leaves nothing unread that still exists."""
    rnd = random.Random(int(__import__("os").environ.get("SPARKMARK_S3_SEED", "7")))
    src = s3.url("tl")
    read: dict[str, set[int]] = {}  # key -> LastModified versions read
    versions: dict[str, int] = {}  # key -> current LastModified
    content: dict[str, int] = {}  # key -> id in the current version
    next_id = 0
    for step in range(int(__import__("os").environ.get("SPARKMARK_S3_STEPS", "8"))):
        for _ in range(rnd.randint(0, 3)):
            action = rnd.random()
            if action < 0.7 or not versions:
                key = f"tl/o{next_id}.json"
            else:
                key = rnd.choice(sorted(versions))
                if action > 0.9:
                    s3.delete(key)
                    versions.pop(key)
                    continue
            next_id += 1
            versions[key] = s3.put(key, lines([next_id]))
            content[key] = next_id
        base = max(versions.values()) if versions else int(time.time() * 1000)
        now_clock.now = max(now_clock.now, base + rnd.choice([-SEC, 0, 999, SEC, 30 * SEC]))
        opts = {"boundedFiles": rnd.randint(1, 3)} if rnd.random() < 0.3 else {}
        ids = run(spark, sqlite_url, now_clock, src, options=opts, name="timeline")
        by_id = {v: k for k, v in content.items()}
        for i in ids:
            key = by_id[i]
            assert versions[key] not in read.setdefault(key, set()), (step, key)
            read[key].add(versions[key])
        time.sleep(rnd.choice([0, 0, 0.3, 1.1]))
    now_clock.advance(10 * MIN)
    for _ in range(2):
        for i in run(spark, sqlite_url, now_clock, src, name="timeline"):
            key = {v: k for k, v in content.items()}[i]
            assert versions[key] not in read.setdefault(key, set())
            read[key].add(versions[key])
        now_clock.advance(MIN)
    unread = [k for k, m in versions.items() if m not in read.get(k, set())]
    assert unread == []
    if is_connect(spark):
        assert all(k.startswith("tl/") for k in versions)


def _put_many(s3, keys: list[str]) -> None:
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: s3.put(k, lines([len(k)])), keys))


def test_lexical_listing_of_1000_partitions_costs_a_few_list_requests(spark, s3, s3_server,
                                                                      sqlite_url, now_clock):
    """N daily ``dt=`` partitions (SPARKMARK_S3_PARTITIONS, 300 here; benchmarks/s3.py runs
    1,000), new objects in the newest one and in a new day: an incremental run's listing makes
    at most 5 LIST requests (recorded in the ledger; the server's count of the whole run minus
    a plain Spark read of the same objects agrees), a full listing more than N.
    Classic sessions only (over Connect the client lists through pyarrow: the same
    plan, counted by tests/test_s3_files' other runs)."""
    import datetime as dt
    import os
    if is_connect(spark):
        pytest.skip("classic only: a minute of uploads and listings is enough once")
    n = int(os.environ.get("SPARKMARK_S3_PARTITIONS", "300"))
    days = [(dt.date(2022, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(n + 1)]
    new_day = days.pop()
    _put_many(s3, [f"p/dt={d}/a.json" for d in days])
    src = s3.url("p")
    # mode=FAILFAST: Spark's own handling, one Spark pass over the new objects as in the plain
    # read below (schemaEvolution's default rescue adds passes, each with Spark's own probes:
    # docs/object-stores.md); the listing itself is the same either way
    opts = {"incrementalListing": "true", "fullListingInterval": "1000", "mode": "FAILFAST"}
    now_clock.now = int(time.time() * 1000) + 2 * SEC

    def counted_run(expect_ids: int) -> tuple[int, dict]:
        before = s3_server.requests("LIST")
        job = Job(spark, state=sqlite_url, clock=now_clock).init("daily", ENABLE)
        df = job.read.files(src, format="json", transformation_ctx="src", options=opts)
        assert df.count() == expect_ids
        job.commit()
        lists = s3_server.requests("LIST") - before
        info = json.loads(job.store.list_runs(job_name="daily")[-1]["config"])
        now_clock.advance(MIN)
        return lists, info["sources"]["src"] if "sources" in info else info

    full, info = counted_run(n)
    assert full >= n + 1
    if not is_connect(spark):
        assert info["list_requests"] >= n + 1, info
    _put_many(s3, [f"p/dt={days[-1]}/b.json", f"p/dt={new_day}/a.json"])
    # the run's T after the new objects' times, however long the first run took (a loaded
    # CI took over the minute the clock advanced, and the run left both for later)
    now_clock.now = max(now_clock.now, int(time.time() * 1000) + 2 * SEC)
    mark = len(s3_server.log)  # the incremental run's requests are those from here on
    lexical, info = counted_run(2)
    text = json.dumps(info)
    assert '"lexical"' in text
    # the rest of the run's requests are Spark's own for reading two objects by path: a plain
    # Spark read of the same two objects makes them too
    before = s3_server.requests("LIST")
    spark.read.json([s3.url(f"p/dt={days[-1]}/b.json"), s3.url(f"p/dt={new_day}/a.json")]).count()
    plain = s3_server.requests("LIST") - before
    # measured: the listing 4 (the root's status, the root, the two partitions), the commit
    # check none (a HEAD per file), Spark's read 2 more than the plain read (the basePath
    # probe that keeps the partition column)
    assert lexical - plain <= 6, (lexical, plain)
    if not is_connect(spark):  # S3A's own count of the listing, recorded per source
        listed = json.loads(text)["list_requests"] if "list_requests" in text else None
        assert listed is not None and 3 <= listed <= 5, text  # the root, two partitions
        # the root was listed from the last partition on (StartAfter), not enumerated whole
        assert any(is_list_request(*r) and f"start-after=p%2Fdt%3D{days[-1]}" in r[2]
                   for r in s3_server.log[mark:]), [r for r in s3_server.log[mark:]
                                                     if is_list_request(*r)]


def test_lexical_file_names_on_a_flat_prefix_list_only_the_new_names(spark, s3, s3_server,
                                                                     sqlite_url, now_clock):
    """``lexicalFileNames=true``: 500 objects with time-stamped names in one flat prefix,
    then 20 new: the incremental run's listing makes at most 2 LIST requests (the root's
    status, one ListObjectsV2 with StartAfter = the greatest name seen) and reads exactly the
    20; then an object with an older name arrives: the lexical run does not read it, the next
    full listing (fullListingInterval) reads it once and reports it (``backfilled``).  Bad
    options are one ConfigError and commit nothing.  Classic only (over Connect the client
    lists the whole root through pyarrow, the same plan)."""
    import datetime as dt

    from sparkmark.core.errors import ConfigError
    if is_connect(spark):
        pytest.skip("classic only: S3A's StartAfter listing runs in the session's JVM")
    t0 = dt.datetime(2024, 11, 5, 10, 0, 0)
    n = 500  # one page of S3A's listing either way (it asks 5,000); the first run reads them all

    def names(first: int, count: int) -> list[str]:
        return [f"flat/events-{(t0 + dt.timedelta(seconds=15 * i)):%Y%m%dT%H%M%S}-0001.json"
                for i in range(first, first + count)]

    _put_many(s3, names(0, n))
    src = s3.url("flat")
    opts = {"incrementalListing": "true", "lexicalFileNames": "true",
            "fullListingInterval": "3", "mode": "FAILFAST"}

    def counted_run(expect: int) -> tuple[int, dict]:
        before = s3_server.requests("LIST")
        job = Job(spark, state=sqlite_url, clock=now_clock).init("flat", ENABLE)
        df = job.read.files(src, format="json", transformation_ctx="src", options=opts)
        assert df.count() == expect
        job.commit()
        lists = s3_server.requests("LIST") - before
        return lists, json.loads(job.store.list_runs(job_name="flat")[-1]["config"])[
            "sources"]["src"]

    now_clock.now = int(time.time() * 1000) + 2 * SEC
    _, info = counted_run(n)
    full = info["list_requests"]  # measured: 2 (the root's status, one page: S3A asks 5,000)
    assert info["listing"] == "full" and info["files"] == n and full >= 2, info
    _put_many(s3, names(n, 20))
    now_clock.now = int(time.time() * 1000) + 2 * SEC
    mark = len(s3_server.log)
    lexical, info = counted_run(20)
    assert info["listing"] == "lexical" and info["files"] == 20 and info["listed"] == 20, info
    assert "file names after events-20241105T" in info["listing_reason"], info
    # S3A's count of the listing: the root's status and one ListObjectsV2 with StartAfter
    # (measured: 2; the whole run's other LISTs are Spark's own probes of the 20 paths)
    assert info["list_requests"] <= 2, info
    print(f"flat {n} + 20: full listing {full} LIST, lexical {info['list_requests']} LIST "
          f"(whole run, server: {lexical})")
    last = names(n - 1, 1)[0].split("/")[1]  # the greatest name the full listing saw
    assert any(is_list_request(*r) and f"start-after=flat%2F{last}" in r[2]
               for r in s3_server.log[mark:]), [r for r in s3_server.log[mark:]
                                                if is_list_request(*r)]
    # an object with an older name (a writer that finished late), then a newer one
    older = "flat/events-20241105T095959-0002.json"
    s3.put(older, lines([7777]))
    time.sleep(1.1)  # S3 stamps whole seconds: the older object settles below the next low
    s3.put(names(n + 20, 1)[0], lines([8888]))
    now_clock.now = int(time.time() * 1000) + 20 * MIN
    _, info = counted_run(1)
    assert info["listing"] == "lexical" and info["sample"] == [names(n + 20, 1)[0][5:]], info
    # bad options: one ConfigError each, nothing committed
    before = job_version = Job(spark, state=sqlite_url, clock=now_clock).store.current_version(
        "flat")
    for bad, words in (({"lexicalFileNames": "true"}, "needs incrementalListing=true"),
                       ({**opts, "lexicalFileNames": "sorted"}, "lexicalFileNames")):
        job = Job(spark, state=sqlite_url, clock=now_clock).init("flat", ENABLE)
        with pytest.raises(ConfigError, match=words):
            job.read.files(src, format="json", transformation_ctx="src", options=bad)
        job.fail("bad option")
    assert Job(spark, state=sqlite_url, clock=now_clock).store.current_version(
        "flat") == job_version == before
    now_clock.advance(20 * MIN)
    _, info = counted_run(1)  # one run in 3: the full listing reads the older object once
    assert info["listing"] == "full" and "fullListingInterval" in info["listing_reason"], info
    assert info["backfilled"] == 1 and info["sample"] == [older[5:]], info
    now_clock.advance(20 * MIN)
    _, info = counted_run(0)
    assert info["listing"] == "lexical" and info["files"] == 0, info


def test_list_after_returns_what_s3a_lists_after_a_name(spark, s3):
    """``HadoopFS.list_after`` (ListObjectsV2 with StartAfter through S3A's own client) gives
    the same entries as S3A's own listing of the root, restricted to names after the given one:
    folders and objects, odd key names included."""
    if is_connect(spark):
        pytest.skip("the JVM's S3A file system is on the server")
    from sparkmark.engine.fs import file_system
    names = ["dt=1/a.json", "dt=2/a.json", "dt=2 b%41ü/a.json", "dt=3/x.json", "loose.json",
             "z k=v.json", "_hidden.json"]
    for n in names:
        s3.put(f"la/{n}", lines([1]))
    root = s3.url("la")
    fs = file_system(spark, root)
    qualified = str(fs.qualify(root))
    whole = sorted((p.rstrip("/"), d, size) for p, d, size, _ in fs.list_level([qualified]))
    before = fs.list_requests()
    for start in ("dt=1", "dt=2", "dt=3", "a"):
        got = fs.list_after(qualified, start)
        assert got is not None
        # folders at or after the name (``dt=2/`` sorts after ``dt=2``), objects after it
        want = [e for e in whole if (e[0].rsplit("/", 1)[-1] >= start if e[1]
                                     else e[0].rsplit("/", 1)[-1] > start)]
        assert sorted((p, d, size) for p, d, size, _ in got) == want, start
    assert fs.list_requests() - before == 4  # one request each, counted with S3A's own


def test_an_object_rewritten_while_the_run_reads_it_fails_the_commit(spark, s3, sqlite_url,
                                                                     now_clock):
    """The commit-time check on S3 (a status per object, a few at a time, instead of listing
    the prefix): an object overwritten after the run read it fails the run, naming it; the next
    run reads the new version whole, once."""
    from sparkmark.core.errors import SourceError
    for i in range(5):
        s3.put(f"rw/o{i}.json", lines([i]))
    src = s3.url("rw")
    now_clock.now = int(time.time() * 1000) + 2 * SEC
    job = Job(spark, state=sqlite_url, clock=now_clock).init("rewrite", ENABLE)
    assert job.read.files(src, format="json", transformation_ctx="src").count() == 5
    time.sleep(1.1)  # a new LastModified second
    s3.put("rw/o3.json", lines([30, 31]))
    with pytest.raises(SourceError, match="o3.json of source 'src' changed"):
        job.commit()
    now_clock.now = int(time.time() * 1000) + 2 * SEC  # past the new version's second
    assert run(spark, sqlite_url, now_clock, src, name="rewrite") == [0, 1, 2, 4, 30, 31]
    now_clock.advance(MIN)
    assert run(spark, sqlite_url, now_clock, src, name="rewrite") == []


def test_a_rewritten_object_is_told_apart_and_ignore_reads_it_once(spark, s3, sqlite_url,
                                                                     now_clock):
    """onModified on S3: an object put again under the same key (a new LastModified and
    size) is a rewrite in the per-file audit; ``ignore`` leaves it out, and the audit names
    the run that read each object."""
    from sparkmark import Bookmarks
    src, opts = s3.url("rw"), {"onModified": "ignore"}
    s3.put("rw/a.json", lines([1]))
    s3.put("rw/b.json", lines([2]))
    now_clock.now = s3.mtime("rw/b.json") + 5 * SEC
    assert run(spark, sqlite_url, now_clock, src, options=opts, name="rw") == [1, 2]
    time.sleep(1.1)  # a new second: S3 stamps whole seconds
    s3.put("rw/a.json", lines([1, 11]))
    s3.put("rw/c.json", lines([3]))
    now_clock.now = max(now_clock.now + SEC, s3.mtime("rw/c.json") + 5 * SEC)
    assert run(spark, sqlite_url, now_clock, src, options=opts, name="rw") == [3]
    config = json.loads(Job(None, state=sqlite_url).store.list_runs(job_name="rw")[-1]["config"])
    assert config["sources"]["src"]["rewritten_skipped"] == 1
    audit = Bookmarks(sqlite_url).files("rw")
    assert sorted(r["path"].rsplit("/", 1)[-1] for r in audit) == ["a.json", "b.json", "c.json"]
    assert all(r["path"].startswith("s3a://") and r["run_status"] == "SUCCEEDED" for r in audit)


def test_a_first_run_over_a_whole_prefix_hands_spark_the_prefix(spark, s3, sqlite_url,
                                                                now_clock):
    """On s3a:// a run that reads every listed object (a first run over 270 objects in
    ``dt=`` partitions) builds its scan from the prefix, not a path per object (Spark's paths
    and the listing's are compared as Hadoop spells them on both sides), with every row and
    the partition column; the next run reads its two new objects by path.  Over Spark Connect
    the objects go by path (no file index to compare): the same rows."""
    from sparkmark.sources.files import WHOLE_ROOT_MIN
    n = WHOLE_ROOT_MIN + 14
    keys = [f"whole/dt={i % 3}/o{i:04d}.json" for i in range(n)]
    _put_many(s3, keys)
    src = s3.url("whole")
    now_clock.now = max(s3.mtime(k) for k in keys) + 5 * SEC
    job = Job(spark, state=sqlite_url, clock=now_clock).init("orders", ENABLE)
    df = job.read.files(src, format="json", transformation_ctx="src",
                        options={"schema": "id BIGINT, amount DOUBLE", "mode": "PERMISSIVE"})
    if not is_connect(spark):
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert "InMemoryFileIndex(1 paths)" in plan, plan[:600]
    rows = sorted((r["id"], r["dt"]) for r in df.collect())
    assert rows == sorted((len(k), i % 3) for i, k in enumerate(keys))
    job.commit()

    now_clock.advance(MIN)
    later = ["whole/dt=1/later.json", "whole/dt=2/later.json"]
    for i, k in enumerate(later):
        s3.put(k, lines([7_000 + i]))
    now_clock.now = max(now_clock.now, max(s3.mtime(k) for k in later) + 2 * SEC)
    job = Job(spark, state=sqlite_url, clock=now_clock).init("orders", ENABLE)
    df = job.read.files(src, format="json", transformation_ctx="src",
                        options={"schema": "id BIGINT, amount DOUBLE", "mode": "PERMISSIVE"})
    if not is_connect(spark):
        assert "InMemoryFileIndex(1 paths)" in df._jdf.queryExecution().executedPlan().toString()
        assert sorted(p.rsplit("/", 2)[-2] for p in df.inputFiles()) == ["dt=1", "dt=2"]
    assert sorted((r["id"], r["dt"]) for r in df.collect()) == [(7_000, 1), (7_001, 2)]
    job.commit()
