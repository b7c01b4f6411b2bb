"""The run-context seam: sources and sinks need nothing of a run but ``RunContext``.

A source written against the public protocol works inside a real ``Job`` (bookmarks commit,
ledger config records it), and the built-in file source and sink run against a plain
``RunContext`` implementation that is not a ``Job`` at all.
"""
from __future__ import annotations

import os
import uuid
from typing import Any, Mapping

from sparkmark import Bookmarks, Job
from sparkmark.core.options import ENABLE
from sparkmark.core.run import FileOutput, ReadMode, RunContext, SourceBookmark, StagedOutput
from sparkmark.sinks import write_files
from sparkmark.sources.files import read_files

EN = {"job_bookmark_option": ENABLE}


def read_counter(run: RunContext, ctx: str, upto: int):
    """A fake source on the public seam: numbers after the bookmark, through ``upto``."""
    bm = run.bookmark(ctx)
    last = 0 if bm.mode is ReadMode.ALL else int((bm.previous or {}).get("last", 0))
    df = run.spark.range(last + 1, upto + 1)
    run.record_read(ctx, {"last": upto}, {"records": upto - last, "new_input": upto > last})
    return df


def test_a_source_on_the_public_seam_commits_with_the_job(spark, state_url, clock):
    assert isinstance(Job(spark, state=state_url), RunContext)
    seen = []
    for upto in (5, 5, 9):
        with Job(spark, state=state_url, clock=clock).run("counter", EN) as job:
            seen.append(sorted(r.id for r in read_counter(job, "numbers", upto).collect()))
            assert job.reads["numbers"]["records"] == len(seen[-1])
        clock.advance(60_000)
    assert seen == [[1, 2, 3, 4, 5], [], [6, 7, 8, 9]]
    assert Bookmarks(state_url).get("counter")["JobBookmark"] == {"numbers": {"last": 9}}
    rows = Job(None, state=state_url).store.list_runs(job_name="counter")
    assert [r["status"] for r in rows] == ["SUCCEEDED", "EMPTY", "SUCCEEDED"]
    assert [r["records_read"] for r in rows] == [5, 0, 4]


class PlainRun:
    """A RunContext that is not a Job: it keeps what it is told in plain dicts."""

    def __init__(self, spark, previous: Mapping[str, Any] | None, now: int):
        self.spark = spark
        self.run_id = uuid.uuid4().hex
        self.job_name = "plain"
        self.snapshot_ts = now
        self._previous = previous
        self.recorded: dict[str, Any] = {}
        self.outputs: list[StagedOutput] = []
        self.written = 0
        self.checks: list = []
        self.files: list[dict] = []

    def bookmark(self, ctx: str | None) -> SourceBookmark:
        return SourceBookmark(ctx=ctx, mode=ReadMode.INCREMENTAL, previous=self._previous,
                              listing_ts=self.snapshot_ts, save=True)

    def record_read(self, ctx, element, report) -> None:
        self.recorded[ctx] = (element, dict(report))

    def record_files(self, ctx, files) -> None:
        self.files.extend(files)

    def files_read_before(self, ctx, paths) -> dict:
        return {}  # this plain run keeps no audit: nothing was read before

    def stage_output(self, output: StagedOutput) -> None:
        self.outputs.append(output)

    def add_written(self, n: int) -> None:
        self.written += n

    def add_commit_check(self, check) -> None:
        self.checks.append(check)

    def add_secrets(self, properties=None, url=None) -> None:
        pass


def test_the_file_source_and_sink_run_on_any_run_context(spark, tmp_path, clock):
    src = tmp_path / "in"
    src.mkdir()
    for i, name in enumerate(["a.json", "b.json"]):
        (src / name).write_text(f'{{"id": {i}}}\n')
        t = (clock.now - 3_600_000 + i * 1000) / 1000
        os.utime(src / name, (t, t))
    run = PlainRun(spark, None, clock.now)
    assert isinstance(run, RunContext)
    df = read_files(run, str(src), format="json", transformation_ctx="src")
    element, report = run.recorded["src"]
    # the state's T is bounded by the newest listed mtime (issue 16): b stays in the band
    assert report["files"] == 2 and report["read"] == "incremental"
    assert list(element["files"].values()) == [clock.now - 3_600_000 + 1000]
    assert sorted((f.path.rsplit("/", 1)[-1], f.kind) for f in run.files) == [
        ("a.json", "new"), ("b.json", "new")]  # what the per-file audit would keep
    n = write_files(run, df, str(tmp_path / "out"), format="parquet", transformation_ctx="sink")
    assert n == 2 and run.written == 2
    [out] = run.outputs
    assert isinstance(out, FileOutput) and out.staging.endswith(f"{run.run_id}/0")
    assert spark.read.parquet(out.staging).count() == 2  # staged, not yet published

    later = PlainRun(spark, element, clock.now + 60_000)
    read_files(later, str(src), format="json", transformation_ctx="src")
    assert later.recorded["src"][1]["files"] == 0  # nothing new after the element


def test_a_verifying_check_is_concurrent_only_where_the_run_context_takes_the_keyword():
    """``add_verifying_check``: a run context with ``add_commit_check(check, *, concurrent)``
    (sparkmark's Job) is asked for the overlap; one written against the earlier seam
    (``add_commit_check(check)``, as PlainRun above) gets the plain call, not a TypeError."""
    from sparkmark.core.run import add_verifying_check

    class Old:
        def __init__(self):
            self.calls = []

        def add_commit_check(self, check):
            self.calls.append((check, None))

    class New(Old):
        def add_commit_check(self, check, *, concurrent=False):
            self.calls.append((check, concurrent))

    class Loose(Old):
        def add_commit_check(self, check, **kw):
            self.calls.append((check, kw.get("concurrent")))

    def check():
        return None
    for kind, want in ((Old, None), (New, True), (Loose, True)):
        run = kind()
        add_verifying_check(run, check)
        assert run.calls == [(check, want)], kind
