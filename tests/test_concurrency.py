"""One active run per job: two Job objects, two racing processes, kill -9, other hosts."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import BookmarkConflictError, ConcurrentRunError
from sparkmark.core.options import ENABLE

EN = {"job_bookmark_option": ENABLE}


def test_second_job_object_fails_naming_the_active_run(state_url, clock):
    a = Job(None, state=state_url, clock=clock).init("orders", EN)
    b = Job(None, state=state_url, clock=clock)
    with pytest.raises(ConcurrentRunError) as e:
        b.init("orders", EN)
    assert a.run_id in str(e.value) and "orders" in str(e.value)
    a.commit()
    b.init("orders", EN).commit()  # free again once the first run ended
    runs = a.store.list_runs(job_name="orders")
    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]


def _racer(url, barrier, results, release):
    job = Job(None, state=url)
    barrier.wait()
    try:
        job.init("race", EN)
    except ConcurrentRunError as e:
        results.put(("lost", str(e)))
        return
    results.put(("won", job.run_id))
    release.wait(30)
    job.commit()


def _opener(urls, barrier, results):
    """Open the store at each of ``urls`` in turn, all openers at once (one barrier each)."""
    for url in urls:
        barrier.wait()
        try:
            store = Job(None, state=url).store
            results.put((url, "ok" if store.store_id else "no store id"))
        except Exception as e:  # noqa: BLE001 - reported to the test
            results.put((url, f"{type(e).__name__}: {e}"))


ROUNDS = int(os.environ.get("SPARKMARK_STORE_RACE_ROUNDS", "40"))


def test_processes_opening_a_new_sqlite_store_at_once_all_get_it(tmp_path):
    """Jobs that start at the same moment on a store nobody created yet (the first scheduled
    runs of a new deployment) all open it: none takes the new file for a truncated store.
    (Before the state file was made whole aside and linked into place, ``sqlite3.connect``'s
    0-byte file failed ~1 round in 15 here; the race is timing, so many rounds.)"""
    ctx = mp.get_context("spawn")
    urls = [f"sqlite:///{tmp_path}/r{i}/state.db" for i in range(ROUNDS)]
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_opener, args=(urls, barrier, results)) for _ in range(4)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in range(4 * ROUNDS)]
    for p in procs:
        p.join(60)
    assert [g for g in got if g[1] != "ok"] == []
    for i in range(ROUNDS):  # one store each, nothing left beside it
        names = sorted(os.listdir(tmp_path / f"r{i}"))
        assert names[0] == "state.db" and not [n for n in names if n.endswith(".new")], names
        assert Job(None, state=urls[i]).store.store_id


def test_two_processes_racing_init(state_url):
    ctx = mp.get_context("spawn")
    barrier, release, results = ctx.Barrier(2), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(state_url, barrier, results, release))
             for _ in range(2)]
    for p in procs:
        p.start()
    got = [results.get(timeout=60) for _ in procs]
    release.set()
    for p in procs:
        p.join(60)
    outcomes = sorted(g[0] for g in got)
    assert outcomes == ["lost", "won"]
    winner = next(g[1] for g in got if g[0] == "won")
    loser_msg = next(g[1] for g in got if g[0] == "lost")
    assert winner in loser_msg
    runs = Job(None, state=state_url).store.list_runs(job_name="race")
    assert [(r["run_id"], r["status"]) for r in runs] == [(winner, "SUCCEEDED")]


HOLDER = textwrap.dedent("""
    import sys, time
    from sparkmark import Job
    job = Job(None, state=sys.argv[1]).init("held", {"job_bookmark_option": "job-bookmark-enable"})
    job.bookmark("src"); job.record_read("src", {"n": 1}, {"new_input": True})
    print(job.run_id, flush=True)
    time.sleep(600)
""")


def test_kill_9_lease_is_taken_over_at_once(state_url, clock):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, state_url], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        held_run = proc.stdout.readline().strip()
        assert len(held_run) == 32
        with pytest.raises(ConcurrentRunError, match=held_run):
            Job(None, state=state_url).init("held", EN)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    job = Job(None, state=state_url).init("held", EN)  # no waiting for expiry
    assert job.attempt == 1
    job.commit()
    runs = {r["run_id"]: r for r in job.store.list_runs(job_name="held")}
    assert runs[held_run]["status"] == "FAILED"
    assert "taken over by run " + job.run_id in runs[held_run]["error"]
    assert runs[job.run_id]["status"] == "SUCCEEDED"
    assert Bookmarks(state_url).get("held")["JobBookmark"] == {}  # the dead run saved nothing


def test_lease_from_another_host_is_taken_over_once_expired(state_url, clock):
    job = Job(None, state=state_url, clock=clock)
    start = job.store.begin_run("remote", run_id="f" * 32, option=ENABLE, now=clock(),
                                snapshot_ts=clock(), lease_ms=60_000, pid=1,
                                host="some-other-host")
    assert start.attempt == 0
    clock.advance(59_000)
    with pytest.raises(ConcurrentRunError, match="some-other-host"):
        job.init("remote", EN)
    clock.advance(2_000)
    job.init("remote", EN)
    assert job.attempt == 1
    job.commit()
    runs = {r["run_id"]: r["status"] for r in job.store.list_runs(job_name="remote")}
    assert runs == {"f" * 32: "FAILED", job.run_id: "SUCCEEDED"}


def test_heartbeat_keeps_the_lease_alive(sqlite_url):
    job = Job(None, state=sqlite_url, lease_ms=600).init("beat", EN)
    first = job.store.job_row("beat")["lease_expires_ts"]
    time.sleep(0.8)
    assert job.store.job_row("beat")["lease_expires_ts"] > first
    job.commit()
    assert job.store.job_row("beat")["active_run_id"] is None


def test_taken_over_run_cannot_commit(state_url, clock):
    old = Job(None, state=state_url, clock=clock, lease_ms=1000).init("split", EN)
    old._heartbeat.stop()
    # Another host's view: the old lease looks expired, so a new run takes over.
    new = Job(None, state=state_url, clock=lambda: clock.now + 10**9)
    new.store.engine.dispose()
    row = new.store.job_row("split")
    assert row["active_run_id"] == old.run_id
    from sparkmark.state.schema import jobs
    with new.store.tx() as conn:  # pretend the old run lives on another host
        conn.execute(jobs.update().values(lease_host="elsewhere"))
    new.init("split", EN)
    with pytest.raises(BookmarkConflictError, match="no longer holds the job's lease"):
        old.commit()
    new.commit()


def test_first_runs_racing_on_postgresql_is_a_concurrent_run_not_corruption(pg_url, clock):
    """Found by benchmarks/chaos.py (racing drivers on a fresh store): the loser read no job row,
    then, under READ COMMITTED, saw the winner's run row and called the store corrupt. The
    interleaving is replayed here with two connections."""
    from sparkmark.state import open_store
    store = open_store(pg_url)
    with store.engine.begin() as loser:
        assert store._job_row(loser, "raced", lock=True) is None   # no job yet
        store.begin_run("raced", run_id="a" * 32, option=ENABLE, now=clock(),  # the winner
                        snapshot_ts=clock(), lease_ms=120_000, pid=os.getpid())
        with pytest.raises(Exception) as caught:  # the loser's next reads see its commit
            store._refuse_orphans(loser, "raced")
        assert type(caught.value).__name__ == "_FirstRunRaced"  # retried, not "corrupt"
    with pytest.raises(ConcurrentRunError):  # the retry sees the winner's live lease
        store.begin_run("raced", run_id="b" * 32, option=ENABLE, now=clock(),
                        snapshot_ts=clock(), lease_ms=120_000, pid=os.getpid() + 1)


def test_store_emptied_mid_run_refuses_the_commit(state_url):
    """The commit's identity check reads sm_meta in one query; a store whose tables were
    dropped (emptied) mid-run is still refused, with the bookmark untouched."""
    import sqlalchemy as sa
    from sparkmark.core.errors import StateStoreError
    job = Job(None, state=state_url).init("emptied", EN)
    job.record_read("src", {"last": 1}, {"new_input": True})
    with job.store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE sm_meta"))
    with pytest.raises(StateStoreError, match="was emptied or truncated"):
        job.commit()


def test_one_thread_renews_the_lease_of_every_live_run(state_url):
    """Issue 26: no thread per run; the process's lease thread renews each run's lease every
    third of its length, and a stopped run's lease no more."""
    import threading
    jobs_ = [Job(None, state=state_url, lease_ms=lease).init(f"beat{i}", EN)
             for i, lease in enumerate((600, 900, 600))]
    store = jobs_[0].store
    first = [store.job_row(f"beat{i}")["lease_expires_ts"] for i in range(3)]
    jobs_[2]._heartbeat.stop()
    time.sleep(1.0)
    later = [store.job_row(f"beat{i}")["lease_expires_ts"] for i in range(3)]
    assert later[0] > first[0] and later[1] > first[1]  # renewed, each on its own schedule
    assert later[2] == first[2]                         # stopped: not renewed
    names = [t.name for t in threading.enumerate()]
    assert names.count("sparkmark-leases") == 1 and not any(
        n.startswith("sparkmark-lease-") for n in names), names
    for job in jobs_[:2]:
        job.commit()
    assert all(store.job_row(f"beat{i}")["active_run_id"] is None for i in range(2))
