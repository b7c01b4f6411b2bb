"""Late files and incremental listing end to end: real Spark, real files and directories, a real
state store, an injected job clock.  Preserved-mtime copies (shutil.copy2 / copytree), a
simulated multipart upload (mtime = upload start, visible later), new files in old partitions,
1,000 partitions listed incrementally (P6)."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time

import pytest

from sparkmark import Job
from sparkmark.core.errors import SourceError
from sparkmark.planning.bands import BandOptions
from sparkmark.planning.listing import LOCAL_MARGIN_MS
from sparkmark.sources.files import list_inputs

ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000


def put(path, ids, mtime_ms: int) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(json.dumps({"id": i}) + "\n" for i in ids)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


def run(spark, url, clock, src, options=None):
    """One committed run; returns (ids read, the ledger config of the source, the element)."""
    job = Job(spark, state=url, clock=clock).init("orders", ENABLE)
    df = job.read.files(src, format="json", transformation_ctx="src", options=options or {})
    ids = sorted(int(r.id) for r in df.select("id").collect()) if df.columns else []
    job.commit()
    info = json.loads(job.store.list_runs(job_name="orders")[-1]["config"])["sources"]["src"]
    element = job.store.bookmark_entry("orders")["JobBookmark"]["src"]
    return ids, info, element


def settle_dirs() -> None:
    """Let directory times fall behind the next listing's start by more than the margin (the
    file system's clock is real even though the job's clock is fake)."""
    time.sleep(LOCAL_MARGIN_MS / 1000 + 0.1)


# ---------------------------------------------------------------------- late files
def test_preserved_mtime_copy_is_reported_by_default_and_glue_selection_unchanged(
        spark, sqlite_url, clock, tmp_path):
    src = str(tmp_path / "in")
    put(f"{src}/a.json", [1], clock.now - 30 * MIN)
    assert run(spark, sqlite_url, clock, src)[0] == [1]
    # landed from Python with shutil.copy2: the file keeps its mtime of three hours ago
    staged = put(str(tmp_path / "staging" / "b.json"), [2], clock.now - 180 * MIN)
    clock.advance(10 * MIN)
    shutil.copy2(staged, f"{src}/b.json")
    ids, info, _ = run(spark, sqlite_url, clock, src)
    assert ids == []  # as in Glue: not read
    assert info["late_files"] == 1 and info["late_sample"] == ["b.json"]
    assert info["listing"] == "full" and info["listed"] == 2 and info["files"] == 0
    clock.advance(10 * MIN)
    ids, info, element = run(spark, sqlite_url, clock, src)
    # not read, so reported again by every full listing until a run reads it (lateFiles=read,
    # as the warning says) or accepts skipping it (lateFiles=ignore)
    assert ids == [] and info["late_files"] == 1
    assert len(json.dumps(element)) <= 64 * 1024


def test_late_files_read_once_with_read(spark, sqlite_url, clock, tmp_path):
    src = str(tmp_path / "in")
    put(f"{src}/a.json", [1], clock.now - 30 * MIN)
    run(spark, sqlite_url, clock, src, {"lateFiles": "read"})
    tree = tmp_path / "backup"
    put(str(tree / "c.json"), [3], clock.now - 600 * MIN)
    put(str(tree / "d.json"), [4], clock.now - 500 * MIN)
    clock.advance(20 * MIN)
    shutil.copytree(tree, src, dirs_exist_ok=True)  # copy2 for every file: times preserved
    put(f"{src}/e.json", [5], clock.now - MIN)      # and one timely file
    ids, info, _ = run(spark, sqlite_url, clock, src, {"lateFiles": "read"})
    assert ids == [3, 4, 5] and info["late_files"] == 2 and info["files"] == 3
    from sparkmark import Bookmarks  # the per-file audit says how each file came to be read
    kinds = {r["path"].rsplit("/", 1)[-1]: r["kind"] for r in Bookmarks(sqlite_url).files(
        "orders") if r["read_ts"] == clock.now}
    assert kinds == {"c.json": "late", "d.json": "late", "e.json": "new"}, kinds
    clock.advance(20 * MIN)
    ids, info, _ = run(spark, sqlite_url, clock, src, {"lateFiles": "read"})
    assert ids == [] and info["late_files"] == 0


def test_simulated_multipart_upload_lands_late_and_fail_names_it(spark, sqlite_url, clock,
                                                                 tmp_path):
    """S3 multipart: LastModified is the upload's start, the object becomes visible at the end.
    Simulated with a hidden part file (skipped by listings) renamed into place after a run."""
    src = str(tmp_path / "in")
    put(f"{src}/a.json", [1], clock.now - 5 * MIN)
    started = clock.now - 20 * MIN  # a long upload, started before the band of this run
    part = put(f"{src}/.upload-big.json", [7, 8], started)  # in progress: invisible
    ids, _, before = run(spark, sqlite_url, clock, src)
    assert ids == [1]
    clock.advance(10 * MIN)
    os.rename(part, f"{src}/big.json")  # completes: visible now, mtime = upload start
    assert started <= before["low"]
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    with pytest.raises(SourceError, match=r"1 late file\(s\) under .*big\.json.*lateFiles=read"):
        job.read.files(src, format="json", transformation_ctx="src",
                       options={"lateFiles": "fail"})
    job.commit()  # nothing read: the bookmark does not move past the late file
    assert job.store.bookmark_entry("orders")["JobBookmark"]["src"]["low"] == before["low"]
    clock.advance(MIN)
    ids, info, _ = run(spark, sqlite_url, clock, src, {"lateFiles": "read"})
    assert ids == [7, 8] and info["late_files"] == 1
    ids, info, _ = run(spark, sqlite_url, clock, src, {"lateFiles": "fail"})
    assert ids == [] and info["late_files"] == 0


def test_ignore_reports_nothing(spark, sqlite_url, clock, tmp_path):
    src = str(tmp_path / "in")
    put(f"{src}/a.json", [1], clock.now - 30 * MIN)
    run(spark, sqlite_url, clock, src)
    clock.advance(30 * MIN)
    put(f"{src}/old.json", [2], clock.now - 300 * MIN)
    ids, info, _ = run(spark, sqlite_url, clock, src, {"lateFiles": "ignore"})
    assert ids == [] and "late_files" not in info


# ---------------------------------------------------------------------- incremental listing
def partitions(src: str, n: int, clock, files_each: int = 1) -> list[str]:
    first = dt.date(2022, 1, 1)
    days = [f"{src}/dt={first + dt.timedelta(days=i)}" for i in range(n)]
    k = 0
    for d in days:
        for _ in range(files_each):
            k += 1
            put(f"{d}/part-{k:05d}.json", [k], clock.now - 24 * 60 * MIN)
    settle_dirs()  # the layout existed before the first run
    return days


def test_p6_thousand_partitions_incremental_run_lists_few_directories(spark, sqlite_url, clock,
                                                                      tmp_path):
    """P6: 1,000 dt= partitions, new files in 3 of them (one an old partition): the incremental
    run lists <= 10 directories and still finds every new file (partition columns kept)."""
    src = str(tmp_path / "in")
    opts = {"incrementalListing": "true"}
    days = partitions(src, 1000, clock)
    ids, info, _ = run(spark, sqlite_url, clock, src, opts)
    assert len(ids) == 1000 and info["listing"] == "full" and info["dirs_listed"] == 1001
    settle_dirs()
    clock.advance(30 * MIN)
    for n, d in ((5001, days[0]), (5002, days[998]), (5003, days[999])):
        put(f"{d}/new-{n}.json", [n], clock.now - MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", ENABLE)
    df = job.read.files(src, format="json", transformation_ctx="src", options=opts)
    rows = sorted((int(r.id), str(r.dt)) for r in df.collect())
    job.commit()
    info = json.loads(job.store.list_runs(job_name="orders")[-1]["config"])["sources"]["src"]
    assert rows == [(5001, "2022-01-01"), (5002, "2024-09-25"), (5003, "2024-09-26")]
    assert info["listing"] == "incremental" and info["dirs_listed"] <= 10, info.get("listing_reason")
    assert info["listed"] == 6 and info["files"] == 3


def test_incremental_listing_finds_a_copied_in_partition_and_a_late_file_at_full_listing(
        spark, sqlite_url, clock, tmp_path):
    src = str(tmp_path / "in")
    opts = {"incrementalListing": "true", "fullListingInterval": "3", "lateFiles": "read"}
    days = partitions(src, 20, clock)
    assert len(run(spark, sqlite_url, clock, src, opts)[0]) == 20
    settle_dirs()
    # a whole partition copied in with copytree (directory and file times preserved)
    clock.advance(30 * MIN)
    backup = tmp_path / "backup" / "dt=2023-01-01"
    put(str(backup / "x.json"), [900], clock.now - 2 * MIN)
    os.utime(backup, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))
    shutil.copytree(backup, f"{src}/dt=2023-01-01")
    put(f"{days[3]}/new.json", [901], clock.now - MIN)
    ids, info, _ = run(spark, sqlite_url, clock, src, opts)
    assert info["listing"] == "incremental" and info["dirs_listed"] <= 4
    assert ids == [900, 901]  # the copied directory's old mtime is not trusted: its ctime is new
    settle_dirs()
    # a file with an old mtime in an old partition: seen by the incremental listing's
    # directory, but late files are only checked by full listings: found and read at the next
    # (third) run.  Its mtime is above the low of the last full listing, so it counts as one
    # a partial listing could have missed: read whatever lateFiles says ("backfilled")
    clock.advance(30 * MIN)
    put(f"{days[5]}/late.json", [902], clock.now - 600 * MIN)
    ids, info, _ = run(spark, sqlite_url, clock, src, opts)
    assert ids == [] and info["listing"] == "incremental" and info["late_files"] is None
    clock.advance(30 * MIN)
    ids, info, _ = run(spark, sqlite_url, clock, src, opts)
    assert info["listing"] == "full" and info["listing_reason"] == "fullListingInterval is due"
    assert ids == [902] and info["late_files"] == 0 and info["backfilled"] == 1


def test_rewritten_in_place_is_found_by_the_next_full_listing(spark, sqlite_url, clock,
                                                              tmp_path):
    src = str(tmp_path / "in")
    opts = {"incrementalListing": "true", "fullListingInterval": "2"}
    days = partitions(src, 5, clock)
    run(spark, sqlite_url, clock, src, opts)
    settle_dirs()
    clock.advance(30 * MIN)
    target = f"{days[2]}/part-00003.json"
    with open(target, "w") as f:  # in place: the directory's time does not change
        f.write(json.dumps({"id": 33}) + "\n")
    os.utime(target, ns=((clock.now - MIN) * 10**6, (clock.now - MIN) * 10**6))
    ids, info, _ = run(spark, sqlite_url, clock, src, opts)
    assert info["listing"] == "incremental" and ids == []  # not seen: no directory changed
    clock.advance(30 * MIN)
    ids, info, _ = run(spark, sqlite_url, clock, src, opts)
    assert info["listing"] == "full" and ids == [33]  # interval 2: one run in two lists fully


def test_jvm_incremental_listing_matches_the_local_one(spark, tmp_path, clock):
    """The Hadoop lister (one listStatus per level) and os.scandir give the same incremental
    answer when only directory mtimes are compared."""
    src = str(tmp_path / "in")
    days = partitions(src, 12, clock)
    first = list_inputs(spark, [src], BandOptions(), fast_local=False,
                        decide=lambda roots: ("full", None))
    assert first.dirs_listed == 13 and first.state is not None
    settle_dirs()
    put(f"{days[4]}/n.json", [1], clock.now)
    for fast in (True, False):
        inc = list_inputs(spark, [src], BandOptions(), fast_local=fast,
                          decide=lambda roots: ("incremental", first.state))
        assert inc.dirs_listed == 2, fast
        assert sorted(e.path.rsplit("/", 1)[-1] for e in inc.entries) == ["n.json",
                                                                          "part-00005.json"]
