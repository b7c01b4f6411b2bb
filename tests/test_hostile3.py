"""Hostile inputs, round 3 (issue 28): rewinds, backfills, late files and purges that must lose
and duplicate nothing; pages and messages that print user text literally.

Real local Spark, real files, real SQLite state stores; only the clock is faked.
docs/reliability.md lists the cases and the behaviour.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import SparkmarkError

from test_reset_output import run_job, target_ids

EN = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000


def add_batch(src: Path, name: str, ids: list[int], mtime: int) -> Path:
    p = src / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    os.utime(p, ns=(mtime * 1_000_000, mtime * 1_000_000))
    return p


def two_runs(spark, url, clock, tmp_path) -> tuple[Path, str, list[str]]:
    """Two committed runs of job 'orders', a batch each: (source, target, run ids)."""
    src, target = tmp_path / "src", str(tmp_path / "out")
    ids = []
    for k in range(2):
        add_batch(src, f"b{k}.json", [k], clock.now + 5 * MIN)
        clock.advance(60 * MIN)
        ids.append(run_job(spark, url, clock, src, target))
    return src, target, ids


# ---------------------------------------------------------------------- 1. rewind to ROLLED_BACK
def test_rewind_to_a_rolled_back_run_is_refused_and_changes_nothing(spark, sqlite_url, clock,
                                                                   tmp_path):
    src, target = tmp_path / "src", str(tmp_path / "out")
    ids = {}
    for k, name in enumerate("ABC"):
        add_batch(src, f"b{k}.json", [10 * k + 1], clock.now + 5 * MIN)
        clock.advance(60 * MIN)
        ids[name] = run_job(spark, sqlite_url, clock, src, target)
    bm = Bookmarks(sqlite_url, clock=clock)
    bm.reset("orders", run_id=ids["A"], remove_output=True, spark=spark)
    for name in "DE":   # D re-reads B and C; E reads a new batch
        if name == "E":
            add_batch(src, "b3.json", [31], clock.now + 5 * MIN)
        clock.advance(60 * MIN)
        ids[name] = run_job(spark, sqlite_url, clock, src, target)
    assert target_ids(spark, target) == [1, 11, 21, 31]
    version = bm.get("orders")["Version"] if "Version" in bm.get("orders") else None
    history = len(bm.history("orders"))
    for remove in (True, False):
        with pytest.raises(SparkmarkError, match=r"rolled back.*(?s:.*)history") as e:
            bm.reset("orders", run_id=ids["C"], remove_output=remove, spark=spark)
        assert ids["C"] in str(e.value)
    assert len(bm.history("orders")) == history and bm.get("orders")["RunId"] == ids["E"]
    assert version is None or bm.get("orders")["Version"] == version
    assert target_ids(spark, target) == [1, 11, 21, 31]   # nothing removed
    # the dry run says the same, before anything could be done
    with pytest.raises(SparkmarkError, match="rolled back"):
        bm.reset("orders", run_id=ids["C"], remove_output=True, dry_run=True, spark=spark)
    # rewinding to a live run still works and the re-run is exactly once
    bm.reset("orders", run_id=ids["D"], remove_output=True, spark=spark)
    clock.advance(60 * MIN)
    run_job(spark, sqlite_url, clock, src, target)
    assert target_ids(spark, target) == [1, 11, 21, 31]


# ---------------------------------------------------------------------- 4. purge_s3_path
@pytest.fixture
def glue(spark):
    from sparkmark.glue.context import GlueContext
    return GlueContext(spark.sparkContext)


def test_purge_never_follows_links_out_of_its_root(glue, tmp_path, monkeypatch):
    lake, outside = tmp_path / "lake", tmp_path / "outside"
    (tmp_path / "paths.json").write_text(json.dumps({"s3://b": str(lake)}))
    monkeypatch.setenv("SPARKMARK_PATH_MAP", str(tmp_path / "paths.json"))
    precious = add_batch(outside, "precious.json", [1], 0)
    old = add_batch(lake / "tmp", "old.json", [2], 0)
    os.symlink(outside, lake / "tmp" / "link_out")
    os.symlink(precious, lake / "tmp" / "file_link")
    os.symlink(outside, lake / "linked_tmp")          # a root that is itself a link out
    deleted = glue.purge_s3_path("s3://b/tmp", {"retentionPeriod": 0})
    assert [d.rsplit("/", 1)[-1] for d in deleted] == ["old.json"] and not old.exists()
    assert precious.exists() and (lake / "tmp" / "link_out").is_symlink()
    with pytest.raises(SparkmarkError, match="outside its mapped root"):
        glue.purge_s3_path("s3://b/linked_tmp", {"retentionPeriod": 0})
    assert precious.exists()


@pytest.mark.parametrize("root", ["//", "///", "/./", "/.", "file:/", "file:///", "file://",
                                  "file:////", "FILE:///", "file:/./", "/tmp/..", "s3a://b/",
                                  "s3://b//"])
def test_purge_refuses_every_spelling_of_a_root(glue, root, monkeypatch):
    monkeypatch.delenv("SPARKMARK_PATH_MAP", raising=False)
    with pytest.raises(SparkmarkError, match="root|'..'|scheme"):
        glue.purge_s3_path(root, {"retentionPeriod": 1e9})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "nan", "-inf"])
def test_purge_retention_not_a_finite_number_is_one_clear_error(glue, tmp_path, bad):
    with pytest.raises(SparkmarkError, match="retentionPeriod must be a number of hours"):
        glue.purge_s3_path(str(tmp_path), {"retentionPeriod": bad})


# ---------------------------------------------------------------------- 5. report --output
def _store_with_a_run(url: str, clock, job: str = "orders", status: str = "FAILED",
                      error: str = "boom") -> str:
    from sparkmark.state import open_store
    st = open_store(url)
    rid = f"r{clock():031d}"[:32]
    start = st.begin_run(job, run_id=rid, option="job-bookmark-enable", now=clock(),
                         snapshot_ts=clock(), lease_ms=60_000, pid=os.getpid())
    clock.advance(MIN)
    if status == "SUCCEEDED":
        st.commit_run(job, rid, start_version=start.start_version, new_state={}, status=status,
                      now=clock(), fields={})
    else:
        st.fail_run(job, rid, error=error, now=clock(), status=status)
    return rid


def test_report_output_onto_the_state_store_is_refused(sqlite_url, clock, tmp_path):
    from sparkmark.ops.report_html import write_html_report
    _store_with_a_run(sqlite_url, clock)
    db = Path(sqlite_url.split("///", 1)[1])
    before = db.read_bytes()
    other = tmp_path / "other.db"          # another SQLite database: not a page's place either
    _store_with_a_run(f"sqlite:///{other}", clock)
    for out in (db, Path(f"{db}-wal"), tmp_path / "." / db.name, other):
        with pytest.raises(SparkmarkError, match="state store|SQLite database"):
            write_html_report(str(out), sqlite_url)
    assert db.read_bytes()[:16] == before[:16] == b"SQLite format 3\x00"
    from sparkmark.state import open_store
    assert len(open_store(sqlite_url).list_runs()) == 1
    os.symlink(db, tmp_path / "link.html")
    with pytest.raises(SparkmarkError, match="state store"):
        write_html_report(str(tmp_path / "link.html"), sqlite_url)
    assert len(open_store(sqlite_url).list_runs()) == 1


# ---------------------------------------------------------------------- 2, 3, 11. late files
def _ids_and_info(spark, url, clock, src, options, name="daily"):
    job = Job(spark, state=url, clock=clock).init(name, EN)
    df = job.read.files(src, format="json", transformation_ctx="src", options=options)
    ids = sorted(int(r.id) for r in df.select("id").collect())
    job.commit()
    info = json.loads(job.store.list_runs(job_name=name)[-1]["config"])
    return ids, info["sources"]["src"]


def test_backfill_before_the_lexical_frontier_is_read_by_the_next_full_listing(
        spark, s3, sqlite_url):
    """A new object in day=2024-01-03 after day=2024-01-05 was seen: lexical runs cannot see
    it; the next full listing reads it (not "late"), once."""
    import time as _time

    from conftest import FakeClock
    for d in ("01", "05"):
        s3.put(f"p/day=2024-01-{d}/a.json", json.dumps({"id": int(d)}) + "\n")
    clock = FakeClock(start=int(_time.time() * 1000) + 5_000)
    src = s3.url("p")
    opts = {"incrementalListing": "true", "fullListingInterval": "3"}
    ids, info = _ids_and_info(spark, sqlite_url, clock, src, opts)
    assert ids == [1, 5] and info["listing"] == "full"
    s3.put("p/day=2024-01-03/backfill.json", json.dumps({"id": 3}) + "\n")
    s3.put("p/day=2024-01-05/b.json", json.dumps({"id": 55}) + "\n")
    clock.now = int(_time.time() * 1000) + 5_000
    ids, info = _ids_and_info(spark, sqlite_url, clock, src, opts)
    assert ids == [55] and info["listing"] == "lexical"
    _time.sleep(1.1)                   # S3 times are whole seconds
    s3.put("p/day=2024-01-06/c.json", json.dumps({"id": 6}) + "\n")
    clock.now = int(_time.time() * 1000) + 6 * 3_600_000   # the backfill settles below low
    ids, info = _ids_and_info(spark, sqlite_url, clock, src, opts)
    assert ids == [6] and info["listing"] == "lexical"
    clock.advance(MIN)
    ids, info = _ids_and_info(spark, sqlite_url, clock, src, dict(opts, lateFiles="warn"))
    assert info["listing"] == "full"
    assert ids == [3] and not info.get("late_files"), info    # read, not called late
    clock.advance(MIN)
    ids, info = _ids_and_info(spark, sqlite_url, clock, src, opts)
    assert ids == []                   # once


def _local_run(spark, url, clock, src: Path, late_mode: str) -> tuple[list[int], dict]:
    return _ids_and_info(spark, url, clock, str(src), {"lateFiles": late_mode}, name="orders")


def test_a_reported_late_file_is_read_by_following_the_message(spark, sqlite_url, clock,
                                                               tmp_path, caplog):
    src = tmp_path / "in"
    add_batch(src, "a.json", [1], clock.now - 3 * 3_600_000)
    assert _local_run(spark, sqlite_url, clock, src, "warn")[0] == [1]
    clock.advance(60 * MIN)
    add_batch(src, "late.json", [2], clock.now - 5 * 3_600_000)   # a copy that kept its time
    for _ in range(2):    # reported by every full listing until read, not read
        ids, info = _local_run(spark, sqlite_url, clock, src, "warn")
        assert ids == [] and info["late_files"] == 1 and info["late_sample"] == ["late.json"]
        assert "lateFiles=read reads them" in caplog.text
        clock.advance(MIN)
    ids, info = _local_run(spark, sqlite_url, clock, src, "read")   # what the message says
    assert ids == [2] and info["late_files"] == 1
    clock.advance(MIN)
    for mode in ("read", "warn"):
        ids, info = _local_run(spark, sqlite_url, clock, src, mode)
        assert ids == [] and not info["late_files"]                  # once
        clock.advance(MIN)
    # lateFiles=ignore accepts skipping one: it is not reported again
    add_batch(src, "late2.json", [3], clock.now - 5 * 3_600_000)
    assert _local_run(spark, sqlite_url, clock, src, "ignore")[0] == []
    clock.advance(MIN)
    ids, info = _local_run(spark, sqlite_url, clock, src, "read")
    assert ids == [] and not info["late_files"]


def test_a_read_file_whose_mtime_moves_back_is_not_read_again(spark, sqlite_url, clock,
                                                               tmp_path):
    src = tmp_path / "in"
    settled = add_batch(src, "settled.json", [1], clock.now - 3 * 3_600_000)
    in_band = add_batch(src, "in_band.json", [2], clock.now - MIN)
    assert _local_run(spark, sqlite_url, clock, src, "read")[0] == [1, 2]
    clock.advance(MIN)
    add_batch(src, "next.json", [3], clock.now - 30_000)
    assert _local_run(spark, sqlite_url, clock, src, "read")[0] == [3]
    clock.advance(MIN)
    for p in (settled, in_band):   # touch -d: the same files, older times
        os.utime(p, ns=((clock.now - 9 * 3_600_000) * 1_000_000,) * 2)
    for mode in ("warn", "read"):
        ids, info = _local_run(spark, sqlite_url, clock, src, mode)
        assert ids == [] and not info["late_files"], info
        clock.advance(MIN)


# ---------------------------------------------------------------------- 6. the HTML page
def test_html_page_escapes_every_field_and_the_embedded_data(sqlite_url, clock, tmp_path):
    from test_report_html import CHROMIUM, chromium

    from sparkmark.ops.report_html import write_html_report
    from sparkmark.state import open_store
    if CHROMIUM is None:
        pytest.skip("chromium missing: apt-get install chromium")
    pwn = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"
    _store_with_a_run(sqlite_url, clock, job="<!--<script>", error="</script><!--<script> __APP__")
    clock.advance(MIN)
    rid = _store_with_a_run(sqlite_url, clock, job="orders __DATA__", status="SUCCEEDED")
    open_store(sqlite_url).update_run(rid, status=pwn, run_number=pwn)
    page = tmp_path / "page.html"
    write_html_report(str(page), sqlite_url)
    text = page.read_text()
    data = text.split('<script id="sm-data" type="application/json">', 1)[1].split("</script>")[0]
    assert "<" not in data and json.loads(data)["runs"]  # nothing in the data can end the script
    dom = chromium("--dump-dom", page.as_uri()).stdout
    assert 'data-sm-ready="2"' in dom, dom[-3000:]     # the page's script ran to its end
    assert not re.search(r"<body[^>]*data-pwned", dom) and "<img src=x" not in dom  # not run
    assert "&lt;img src=x" in dom and "&lt;!--&lt;script&gt;" in dom


# ---------------------------------------------------------------------- 7. CLI messages
def cli(*args: str, env: dict | None = None):
    import subprocess
    import sys
    e = {k: v for k, v in os.environ.items() if k != "SPARKMARK_STATE"}
    e.update(env or {})
    exe = str(Path(sys.executable).with_name("sparkmark"))
    return subprocess.run([exe, *args], capture_output=True, text=True, env=e, timeout=90)


def test_cli_prints_user_text_literally_never_as_markup(sqlite_url, clock):
    _store_with_a_run(sqlite_url, clock, job="orders", error="cannot read [/data/in/a.json] "
                      "[bold]x[/bold] [/] :smile:")
    for job in ("sales[eu]", "orders[/]", "[red]x", "eu:warning:x"):  # nor emoji codes
        res = cli("--state", sqlite_url, "bookmark", "get", job)
        assert res.returncode == 2, res.stderr
        assert f"no job named {job!r}" in res.stderr and "Traceback" not in res.stderr
    res = cli("--state", sqlite_url, "report")
    assert res.returncode == 0, res.stderr
    assert "[/data/in/a.json] [bold]x[/bold] [/] :smile:" in res.stdout
    res = cli("--state", sqlite_url, "bookmark", "reset", "a[/]b")
    assert res.returncode == 2 and "'a[/]b'" in res.stderr and "Traceback" not in res.stderr


# ---------------------------------------------------------------------- 8. empty first run
def test_an_empty_run_writes_no_file(spark, sqlite_url, clock, tmp_path):
    src, target = tmp_path / "src", str(tmp_path / "out")
    src.mkdir()
    run_job(spark, sqlite_url, clock, src, target)          # the folder exists, no files yet
    data = [f for _, _, fs in os.walk(target) for f in fs if not f.startswith((".", "_"))] \
        if os.path.isdir(target) else []
    assert data == []
    from sparkmark.state import open_store
    assert open_store(sqlite_url).list_runs()[-1]["status"] == "EMPTY"
    add_batch(src, "a.json", [1], clock.now + 5 * MIN)
    clock.advance(60 * MIN)
    run_job(spark, sqlite_url, clock, src, target)
    assert target_ids(spark, target) == [1]
    assert "id" in spark.read.parquet(target).columns


# ---------------------------------------------------------------------- 9, 10. bookmark set
def _read_ids(spark, url, clock, src) -> list[int]:
    job = Job(spark, state=url, clock=clock).init("orders", EN)
    ids = sorted(r.id for r in job.read.files(str(src), format="json",
                                              transformation_ctx="src").collect())
    job.commit()
    return ids


def test_set_after_a_future_time_is_refused(spark, sqlite_url, clock, tmp_path):
    src = tmp_path / "in"
    add_batch(src, "a.json", [1], clock.now - 100 * MIN)
    assert _read_ids(spark, sqlite_url, clock, src) == [1]
    bm = Bookmarks(sqlite_url, clock=clock)
    history = len(bm.history("orders"))
    for when in ("2099-01-01", "2099-01-01T00:00:00Z"):
        with pytest.raises(SparkmarkError, match="is in the future"):
            bm.set("orders", "src", after=when)
    res = cli("--state", sqlite_url, "bookmark", "set", "orders", "--ctx", "src", "--after",
              "2099-01-01")
    assert res.returncode == 2 and "is in the future" in res.stderr
    assert len(bm.history("orders")) == history
    clock.advance(MIN)
    add_batch(src, "b.json", [2], clock.now - 30_000)
    assert _read_ids(spark, sqlite_url, clock, src) == [2]


def test_set_processed_through_a_linked_folder_matches_the_listing(spark, sqlite_url, clock,
                                                                   tmp_path):
    real = tmp_path / "real"
    add_batch(real, "a.json", [1], clock.now - 100 * MIN)
    os.symlink(real, tmp_path / "link")
    assert _read_ids(spark, sqlite_url, clock, real) == [1]
    clock.advance(60 * MIN)
    bad = add_batch(real, "bad.json", [66], clock.now - 5 * MIN)
    add_batch(real, "good.json", [2], clock.now - 5 * MIN)
    bm = Bookmarks(sqlite_url, clock=clock)
    bm.set("orders", "src", processed=[str(tmp_path / "link" / "bad.json")], spark=spark)
    other = add_batch(tmp_path / "elsewhere", "x.json", [9], clock.now - 5 * MIN)
    history = len(bm.history("orders"))
    with pytest.raises(SparkmarkError, match="not under the source's path"):
        bm.set("orders", "src", processed=[str(other)], spark=spark)
    assert len(bm.history("orders")) == history
    assert bad.exists() and _read_ids(spark, sqlite_url, clock, real) == [2]


# ---------------------------------------------------------------------- 12. symlink loops
def test_reset_remove_output_with_symlink_loops_in_the_target(spark, sqlite_url, clock,
                                                              tmp_path):
    import subprocess
    src, target, ids = two_runs(spark, sqlite_url, clock, tmp_path)
    os.symlink(target, f"{target}/loop1")
    os.symlink(".", f"{target}/loop2")
    outside = add_batch(tmp_path / "elsewhere", f"sm-{ids[1]}-part-0.parquet", [7], 0)
    os.symlink(outside.parent, f"{target}/out_link")
    try:
        res = cli("--state", sqlite_url, "bookmark", "reset", "orders", "--run-id", ids[0],
                  "--remove-output")
    except subprocess.TimeoutExpired:
        pytest.fail("reset --remove-output hung on the symbolic link loops")
    assert res.returncode == 0, res.stderr
    assert outside.exists()                      # a link is not followed out of the target
    left = sorted(f for f in os.listdir(target) if f.startswith("sm-"))
    assert left and all(f.startswith(f"sm-{ids[0]}-") for f in left)
    assert sorted(r.id for r in spark.read.parquet(*[f"{target}/{f}" for f in left])
                  .collect()) == [0]


# ---------------------------------------------------------------------- 13. smaller ones
def test_admin_commands_on_a_missing_store_create_nothing(tmp_path):
    url = f"sqlite:///{tmp_path}/typo/state.db"
    for args in (["bookmark", "reset", "orders", "--dry-run"], ["bookmark", "release", "orders"],
                 ["bookmark", "reset", "orders"],
                 ["bookmark", "set", "orders", "--ctx", "src", "--after", "2020-01-01"]):
        res = cli("--state", url, *args)
        assert res.returncode == 2 and "creates nothing" in res.stderr, res.stderr
        assert not (tmp_path / "typo").exists()


def _sql(url: str, sql: str, **params) -> None:
    import sqlalchemy as sa
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(sql), params)
    engine.dispose()


def test_schema_version_not_a_number_is_one_clear_error(sqlite_url, clock):
    _store_with_a_run(sqlite_url, clock)
    _sql(sqlite_url, "UPDATE sm_meta SET value='v2' WHERE key='schema_version'")
    res = cli("--state", sqlite_url, "report")
    assert res.returncode == 2 and "schema_version is 'v2', not a number" in res.stderr, \
        res.stderr
    res = cli("--state", sqlite_url, "bookmark", "reset", "orders")
    assert res.returncode == 2 and "not a number" in res.stderr


def test_unknown_run_status_makes_reset_remove_output_change_nothing(spark, sqlite_url, clock,
                                                                     tmp_path):
    src, target, ids = two_runs(spark, sqlite_url, clock, tmp_path)
    _sql(sqlite_url, "UPDATE sm_runs SET status='DONE' WHERE run_id=:r", r=ids[1])
    bm = Bookmarks(sqlite_url, clock=clock)
    history = len(bm.history("orders"))
    with pytest.raises(SparkmarkError, match="status 'DONE', which sparkmark does not know"):
        bm.reset("orders", run_id=ids[0], remove_output=True, spark=spark)
    assert len(bm.history("orders")) == history and target_ids(spark, target) == [0, 1]
    _sql(sqlite_url, "UPDATE sm_runs SET status='SUCCEEDED' WHERE run_id=:r", r=ids[1])
    bm.reset("orders", run_id=ids[0], remove_output=True, spark=spark)
    clock.advance(60 * MIN)
    run_job(spark, sqlite_url, clock, src, target)
    assert target_ids(spark, target) == [0, 1]                # exactly once


def test_a_deleted_job_row_is_refused_before_anything_is_read(spark, sqlite_url, clock,
                                                              tmp_path):
    from sparkmark.core.errors import StateCorruptError
    src, target = tmp_path / "src", str(tmp_path / "out")
    add_batch(src, "a.json", [1], clock.now - 5 * MIN)
    run_job(spark, sqlite_url, clock, src, target)
    _sql(sqlite_url, "DELETE FROM sm_jobs WHERE job_name='orders'")
    clock.advance(60 * MIN)
    with pytest.raises(StateCorruptError, match="no job row"):
        Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
    assert target_ids(spark, target) == [1]


# ---------------------------------------------------------------------- names (docs note)
def test_jobs_whose_names_differ_by_case_or_normalization_are_separate_and_warned(
        spark, sqlite_url, clock, tmp_path, caplog):
    import logging
    src, target = tmp_path / "src", str(tmp_path / "out")
    add_batch(src, "a.json", [1], clock.now - 5 * MIN)
    names = ["caf\u00e9", "cafe\u0301", "CAF\u00c9"]    # NFC, NFD, upper case
    with caplog.at_level(logging.WARNING, logger="sparkmark"):
        for name in names:
            run_job(spark, sqlite_url, clock, src, target, name=name)
    from sparkmark.state import open_store
    assert sorted(open_store(sqlite_url).job_names()) == sorted(names)   # three jobs
    assert target_ids(spark, target) == [1, 1, 1]     # each read the file once
    warned = [r.getMessage() for r in caplog.records if "also wrote" in r.getMessage()]
    assert len(warned) == 2 and "only by case or Unicode normalization" in warned[-1]
