"""Setting a bookmark by hand (``bookmark set``: files --after / --processed, JDBC --after-key),
its bad inputs (nothing changes), and ``bookmark release`` of a run that will never finish."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import (ConcurrentRunError, ConfigError, JobStateError, UnknownRunError)
from sparkmark.core.options import ENABLE

from test_jdbc_derby import derby  # noqa: F401 - the embedded Derby fixture

EN = {"job_bookmark_option": ENABLE}
MIN = 60_000
SPARKMARK = str(Path(sys.executable).with_name("sparkmark"))


def add_file(src: Path, name: str, ids: list[int], mtime: int) -> Path:
    src.mkdir(parents=True, exist_ok=True)
    p = src / name
    p.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    os.utime(p, ns=(mtime * 1_000_000, mtime * 1_000_000))
    return p


def read_run(spark, url, clock, src: Path, name="orders") -> list[int]:
    job = Job(spark, state=url, clock=clock).init(name, EN)
    df = job.read.files(str(src), format="json", transformation_ctx="src")
    ids = sorted(r.id for r in df.collect()) if df.columns else []
    job.commit()
    return ids


def iso(ms: int) -> str:
    import datetime as dt
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat().replace("+00:00",
                                                                                       "Z")


def test_set_files_after_time_and_processed_paths(spark, state_url, clock, tmp_path):
    src = tmp_path / "src"
    t0 = clock.now
    add_file(src, "a.json", [1], t0 - 100 * MIN)
    assert read_run(spark, state_url, clock, src) == [1]
    clock.advance(120 * MIN)
    add_file(src, "b.json", [2], t0 + 10 * MIN)  # skip: before the --after time
    add_file(src, "c.json", [3], t0 + 30 * MIN)
    bad = add_file(src, "d.json", [4], t0 + 40 * MIN)  # skip: a bad batch, by path
    add_file(src, "e.json", [5], t0 + 50 * MIN)
    bm = Bookmarks(state_url, clock=clock)
    v1 = bm.set("orders", "src", after=iso(t0 + 20 * MIN))
    v2 = bm.set("orders", "src", processed=[str(bad)], spark=spark)
    assert v2 == v1 + 1
    hist = bm.history("orders")
    assert [h["Kind"] for h in hist[-2:]] == ["set", "set"] and len(hist) == 4  # history kept
    el = bm.get("orders")["JobBookmark"]["src"]
    assert el["kind"] == "files" and el["low"] == t0 + 20 * MIN and len(el["files"]) == 1
    assert read_run(spark, state_url, clock, src) == [3, 5]


def test_set_bad_inputs_change_nothing(spark, sqlite_url, clock, tmp_path):
    src = tmp_path / "src"
    add_file(src, "a.json", [1], clock.now - 100 * MIN)
    read_run(spark, sqlite_url, clock, src)
    bm = Bookmarks(sqlite_url, clock=clock)
    before = (bm.get("orders"), len(bm.history("orders")))
    cases = [
        (dict(), "give exactly one of"),
        (dict(after="2024-05-01T00:00:00Z", after_key=["1"]), "got --after, --after-key"),
        (dict(after="next tuesday"), "bad --after time 'next tuesday'"),
        (dict(after_key=["10"]), "--after-key is for JDBC sources"),
        (dict(processed=[str(src / "nope.json")]), "does not exist"),
        (dict(processed=[str(src)]), "is a directory"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            bm.set("orders", "src", spark=spark, **kwargs)
    with pytest.raises(ConfigError, match="has no transformation_ctx 'nosuch'; its bookmark "
                                          "knows 'src'"):
        bm.set("orders", "nosuch", after="2024-05-01")
    with pytest.raises(ConfigError, match="--ctx"):
        bm.set("orders", " ", after="2024-05-01")
    assert (bm.get("orders"), len(bm.history("orders"))) == before
    # the CLI: one line on stderr, exit 2, nothing changed
    env = {k: v for k, v in os.environ.items() if k != "SPARKMARK_STATE"}
    res = subprocess.run([SPARKMARK, "--state", sqlite_url, "bookmark", "set", "orders", "--ctx",
                          "src", "--after-key", "5"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "holds a file-source bookmark; use --after TIME or --processed PATH" in res.stderr
    res = subprocess.run([SPARKMARK, "--state", sqlite_url, "bookmark", "set", "orders", "--ctx",
                          "src", "--after", "2024-05-01T00:00:00Z"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"now version {before[1]}" in res.stdout
    assert bm.history("orders")[-1]["Kind"] == "set"


def test_set_jdbc_after_key_and_its_errors(spark, derby, sqlite_url, clock):  # noqa: F811
    derby.execute("CREATE TABLE EMP (ID INT PRIMARY KEY, NAME VARCHAR(20))")
    derby.execute("INSERT INTO EMP VALUES (?, ?)", *[(i, f"n{i}") for i in range(1, 6)])

    def run():
        job = Job(spark, state=sqlite_url, clock=clock).init("emp", EN)
        df = job.read.jdbc(derby.url, table="EMP", transformation_ctx="src")
        ids = sorted(r.ID for r in df.collect())
        job.commit()
        clock.advance(MIN)
        return ids

    assert run() == [1, 2, 3, 4, 5]
    derby.execute("INSERT INTO EMP VALUES (?, ?)", *[(i, f"n{i}") for i in range(6, 11)])
    bm = Bookmarks(sqlite_url, clock=clock)
    before = len(bm.history("emp"))
    for kwargs, message in [(dict(after_key=["x7"]), "bad --after-key for keys"),
                            (dict(after_key=["7", "8"]), "give 1 --after-key value"),
                            (dict(after="2024-01-01"), "holds a JDBC bookmark"),
                            (dict(processed=["/tmp/x"]), "holds a JDBC bookmark")]:
        with pytest.raises(ConfigError, match=message):
            bm.set("emp", "src", **kwargs)
    with pytest.raises(ConfigError, match="has no transformation_ctx 'other_ctx'"):
        bm.set("emp", "other_ctx", after_key=["3"])
    with pytest.raises(ConfigError, match="has no bookmark yet"):  # a new ctx: no keys known
        bm.set("emp", "other_ctx", after_key=["3"], new_ctx=True)
    assert len(bm.history("emp")) == before
    bm.set("emp", "src", after_key=["8"])  # skip 6..8
    assert bm.get("emp")["JobBookmark"]["src"]["last"] == [8]
    assert run() == [9, 10]


def files_element(ms: int) -> dict:
    """A file source's element as a run commits it (everything up to ``ms`` read)."""
    return {"kind": "files", "v": 1, "low": ms, "high": ms, "listing_ts": ms, "band": 900000,
            "files": {}}


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SPARKMARK_STATE"}
    return subprocess.run([SPARKMARK, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_set_refuses_a_ctx_the_bookmark_does_not_know(sqlite_url, clock):
    job = Job(None, state=sqlite_url, clock=clock).init("orders", EN)
    for ctx in ("src", "emp"):
        job.bookmark(ctx)
        job.record_read(ctx, files_element(clock.now - MIN), {"new_input": True})
    job.commit()
    clock.advance(MIN)
    bm = Bookmarks(sqlite_url, clock=clock)
    before = (bm.get("orders"), bm.history("orders"))
    message = ("job 'orders' has no transformation_ctx 'nosuch'; its bookmark knows 'emp', "
               "'src'. Nothing was changed.")
    with pytest.raises(ConfigError) as e:
        bm.set("orders", "nosuch", after=iso(clock.now - MIN))
    assert str(e.value).startswith(message) and "--new-ctx" in str(e.value)
    res = cli("--state", sqlite_url, "bookmark", "set", "orders", "--ctx", "nosuch", "--after",
              iso(clock.now - MIN))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert message in res.stderr
    assert (bm.get("orders"), bm.history("orders")) == before
    # a context an earlier version held is known (set after a reset), and --new-ctx seeds one
    bm.reset("orders")
    bm.set("orders", "src", after=iso(clock.now - 2 * MIN))
    res = cli("--state", sqlite_url, "bookmark", "set", "orders", "--ctx", "fresh", "--after",
              iso(clock.now - 3 * MIN), "--new-ctx")
    assert res.returncode == 0, res.stderr
    state = bm.get("orders")["JobBookmark"]
    assert sorted(state) == ["fresh", "src"]
    assert state["fresh"]["low"] == clock.now - 3 * MIN
    # a job that ran only with bookmarks disabled has no bookmark to check against: any ctx
    Job(None, state=sqlite_url, clock=clock).init("off", {}).commit()
    assert bm.set("off", "anything", after=iso(clock.now - MIN)) == 1


def test_set_seeds_the_bookmark_of_a_job_that_never_ran(spark, sqlite_url, clock, tmp_path):
    """The cut-over from Glue: the job has no row in this store yet; `bookmark set` creates it
    with that one element, and its first run reads only what came after."""
    src = tmp_path / "src"
    t0 = clock.now
    add_file(src, "old.json", [1], t0 - 100 * MIN)  # Glue read these already
    add_file(src, "older.json", [2], t0 - 200 * MIN)
    add_file(src, "new.json", [3], t0 - 10 * MIN)
    Job(None, state=sqlite_url, clock=clock).init("other", EN).commit()  # the store exists
    res = cli("--state", sqlite_url, "bookmark", "set", "cutover", "--ctx", "src", "--after",
              iso(t0 - 50 * MIN))
    assert res.returncode == 0, res.stderr
    assert "bookmark of cutover: context src set; now version 1" in res.stdout
    assert "job cutover had not run with this state store" in res.stdout
    bm = Bookmarks(sqlite_url, clock=clock)
    assert [h["Kind"] for h in bm.history("cutover")] == ["initial", "set"]
    assert bm.get("cutover")["JobBookmark"]["src"]["low"] == t0 - 50 * MIN
    assert read_run(spark, sqlite_url, clock, src, name="cutover") == [3]
    # --processed works the same way for a job that never ran
    add_file(src, "skip.json", [4], t0 - 5 * MIN)
    bm.set("cutover2", "src", processed=[str(src / "skip.json")], spark=spark)
    assert read_run(spark, sqlite_url, clock, src, name="cutover2") == [1, 2, 3]


def test_release_a_run_that_will_never_finish(sqlite_url, clock):
    stuck = Job(None, state=sqlite_url, clock=clock).init("orders", EN)  # lease held, alive
    bm = Bookmarks(sqlite_url, clock=clock)
    with pytest.raises(ConcurrentRunError):
        Job(None, state=sqlite_url, clock=clock).init("orders", EN)
    with pytest.raises(ConcurrentRunError, match="bookmark release"):
        bm.set("orders", "src", after="2023-01-01")
    with pytest.raises(UnknownRunError, match="is not the active run"):
        bm.release("orders", run_id="0" * 32)
    assert bm.store.get_run(stuck.run_id)["status"] == "RUNNING"
    env = {k: v for k, v in os.environ.items() if k != "SPARKMARK_STATE"}
    res = subprocess.run([SPARKMARK, "--state", sqlite_url, "bookmark", "release", "orders",
                          "--run-id", stuck.run_id], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"run {stuck.run_id} of orders released" in res.stdout
    row = bm.store.get_run(stuck.run_id)
    assert row["status"] == "FAILED" and "released by an operator" in row["error"]
    assert bm.store.job_row("orders")["active_run_id"] is None
    with pytest.raises(JobStateError, match="has no active run"):
        bm.release("orders")
    nxt = Job(None, state=sqlite_url, clock=clock).init("orders", EN)  # the job can run again
    assert nxt.attempt == 1
    nxt.commit()
    with pytest.raises(Exception, match="no longer holds the job's lease"):
        stuck.commit()  # the released run, if it was alive after all, cannot commit
