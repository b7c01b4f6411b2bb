"""The per-file audit (``sparkmark files``, ``Bookmarks.files``) and ``onModified``.

Real Spark, real files, a real SQLite store; only the clock is fake.
"""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import sqlalchemy as sa
from typer.testing import CliRunner

from sparkmark.state.schema import SCHEMA_VERSION
from sparkmark import Bookmarks, Job
from sparkmark.ops.cli import app
from sparkmark.core.errors import ConfigError, SourceError, UnknownJobError

EN = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000
DAY = 86_400_000


@pytest.fixture(params=["in-commit", "ahead"])
def audit_path(request, monkeypatch):
    """Both ways a run's audit rows are written: in the commit's transaction, and ahead of it
    by a thread (``EARLY_AUDIT_FILES``: a large read's, here any read's)."""
    if request.param == "ahead":
        import sparkmark.lifecycle.job
        monkeypatch.setattr(sparkmark.lifecycle.job, "EARLY_AUDIT_FILES", 1)
    return request.param


def put(src: Path, name: str, text: str, mtime: int) -> None:
    p = src / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    os.utime(p, ns=(mtime * 1_000_000, mtime * 1_000_000))


def run(spark, url, clock, src, *, commit=True, **options):
    """One run of job 'orders' over ``src``: (ids read, the source's ledger report)."""
    job = Job(spark, state=url, clock=clock,
              **({"files_retention_days": options.pop("days")} if "days" in options else {})
              ).init("orders", EN)
    df = job.read.files(str(src), format="json", transformation_ctx="src", options=options)
    ids = sorted(r["id"] for r in df.collect())
    if commit:
        job.commit()
    return ids, job.reads["src"], job


def cli(url, *args):
    res = CliRunner().invoke(app, ["--state", url, "files", "orders", *args])
    return res.exit_code, res.output


def test_which_run_read_which_file_from_python_the_cli_and_spark(audit_path, spark, sqlite_url,
                                                                  clock, tmp_path):
    src = tmp_path / "in"
    put(src, "dt=1/a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    put(src, "dt=1/b.json", '{"id": 2}\n{"id": 3}\n', clock.now - 9 * MIN)
    assert run(spark, sqlite_url, clock, src)[0] == [1, 2, 3]
    clock.advance(20 * MIN)
    put(src, "dt=2/c.json", '{"id": 4}\n', clock.now - 5 * MIN)
    assert run(spark, sqlite_url, clock, src)[0] == [4]
    r1, r2 = [r["run_id"] for r in Job(None, state=sqlite_url).store.list_runs(
        job_name="orders")]
    bm = Bookmarks(sqlite_url)
    rows = bm.files("orders")
    assert [(Path(r["path"]).name, r["run_id"], r["run_status"], r["kind"], r["ctx"])
            for r in rows] == [("c.json", r2, "SUCCEEDED", "new", "src"),
                               ("a.json", r1, "SUCCEEDED", "new", "src"),
                               ("b.json", r1, "SUCCEEDED", "new", "src")]  # newest read first
    b = next(r for r in rows if r["path"].endswith("b.json"))
    assert b["size"] == (src / "dt=1/b.json").stat().st_size
    assert b["mtime"] == clock.now - 20 * MIN - 9 * MIN and b["path"].startswith("file:")
    # filters: a file name, a folder glob, a full path, a run, a context
    assert [r["run_id"] for r in bm.files("orders", path="b.json")] == [r1]
    assert len(bm.files("orders", path="dt=1/*")) == 2
    assert len(bm.files("orders", path=str(src / "dt=2" / "c.json"))) == 1
    assert len(bm.files("orders", path="?.json")) == 3 and bm.files("orders", path="b") == []
    assert [Path(r["path"]).name for r in bm.files("orders", run_id=r2)] == ["c.json"]
    assert bm.files("orders", ctx="other") == []
    assert len(bm.files("orders", limit=1)) == 1
    df = bm.files_dataframe(spark, "orders", path="dt=1/*")
    assert sorted(r["run_id"] for r in df.collect()) == [r1, r1]
    assert df.schema["size"].dataType.typeName() == "long"
    # the CLI: json, csv and the table, with the same filters
    code, text = cli(sqlite_url, "--path", "b.json", "--format", "json")
    assert code == 0, text
    [got] = json.loads(text)
    assert got["run_id"] == r1 and got["kind"] == "new" and got["mtime"].endswith("+00:00")
    code, text = cli(sqlite_url, "--format", "csv")
    assert code == 0 and len(list(csv.DictReader(io.StringIO(text)))) == 3
    code, text = cli(sqlite_url, "--run-id", r2, "--limit", "5")
    assert code == 0 and "c.json" in text and "a.json" not in text, text
    code, text = cli(sqlite_url, "--limit", "1")
    assert code == 0 and "(2 more;" in text and "--all" in text, text
    code, text = cli(sqlite_url, "--all")  # every row, nothing said left out
    assert code == 0 and all(n in text for n in ("a.json", "b.json", "c.json")), text
    assert "more;" not in text, text
    # bad input: one clear message each, exit 2
    for args, needle in ((["--format", "xml"], "unknown --format 'xml'"),
                         (["--limit", "0"], "limit=0 must be a positive number"),
                         (["--limit", "1", "--all"], "give --limit N or --all, not both")):
        code, text = cli(sqlite_url, *args)
        assert code != 0 and needle in text, (args, text)
    res = CliRunner().invoke(app, ["--state", sqlite_url, "files", "nosuch"])
    assert res.exit_code != 0 and "nosuch" in res.output, res.output
    with pytest.raises(UnknownJobError):
        bm.files("nosuch")


def _two_runs_second_reset(spark, sqlite_url, clock, src, out, options):
    """Run 1 reads a.json, run 2 b.json (both write to ``out``); then ``reset --run-id``
    run 1 with --remove-output, which rolls back run 2 (the run after it). Their run ids."""
    put(src, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    for i in range(2):
        job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
        df = job.read.files(str(src), format="json", transformation_ctx="src",
                            options=options)
        job.write(df, str(out), format="parquet", transformation_ctx="sink")
        job.commit()
        clock.advance(20 * MIN)
        if i == 0:
            put(src, "b.json", '{"id": 2}\n', clock.now - 5 * MIN)
    r1, r2 = [r["run_id"] for r in Job(None, state=sqlite_url).store.list_runs(
        job_name="orders")]
    Bookmarks(sqlite_url, clock=clock).reset("orders", run_id=r1, remove_output=True,
                                             spark=spark)
    return r1, r2


def test_a_rolled_back_runs_files_show_as_such(audit_path, spark, sqlite_url, clock, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    r1, r2 = _two_runs_second_reset(spark, sqlite_url, clock, src, out, {})
    status = {Path(r["path"]).name: (r["run_id"], r["run_status"])
              for r in Bookmarks(sqlite_url).files("orders")}
    assert status == {"a.json": (r1, "SUCCEEDED"), "b.json": (r2, "ROLLED_BACK")}
    # the re-run reads b.json again: the same version, so not a rewrite, even with ignore
    ids, report, _ = run(spark, sqlite_url, clock, src, onModified="ignore")
    assert ids == [2] and report["rewritten"] == 0
    kinds = [(r["run_status"], r["kind"]) for r in Bookmarks(sqlite_url).files(
        "orders", path="b.json")]
    assert kinds == [("SUCCEEDED", "new"), ("ROLLED_BACK", "new")]


@pytest.mark.parametrize("mode", ["ignore", "fail"])
def test_a_rolled_back_read_is_no_read_for_on_modified(audit_path, spark, sqlite_url, clock,
                                                        tmp_path, mode):
    """A file whose only earlier read was by a run rolled back since (its output removed) and
    that changed meanwhile is read as new input: with onModified=ignore it is not left out as
    a rewrite (its content would then be in no output), with fail the run does not fail."""
    src, out = tmp_path / "in", tmp_path / "out"
    r1, r2 = _two_runs_second_reset(spark, sqlite_url, clock, src, out, {"onModified": mode})
    put(src, "b.json", '{"id": 2}\n{"id": 22}\n', clock.now - 5 * MIN)  # rewritten since
    ids, report, _ = run(spark, sqlite_url, clock, src, onModified=mode)
    assert ids == [2, 22] and report["rewritten"] == 0
    assert sorted(r["id"] for r in spark.read.parquet(str(out)).collect()) == [1]  # r2's gone
    # a.json, read by the run that stays, is still a rewrite when it changes
    clock.advance(20 * MIN)
    put(src, "a.json", '{"id": 1}\n{"id": 11}\n', clock.now - 5 * MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
    if mode == "fail":
        with pytest.raises(SourceError, match="a.json"):
            job.read.files(str(src), format="json", transformation_ctx="src",
                           options={"onModified": mode})
        job.fail("rewritten")
    else:
        df = job.read.files(str(src), format="json", transformation_ctx="src",
                            options={"onModified": mode})
        assert df.count() == 0 and job.reads["src"]["rewritten_skipped"] == 1
        job.commit()


@pytest.mark.parametrize("mode", ["reprocess", "ignore", "fail"])
def test_on_modified_reprocess_ignore_or_fail(audit_path, spark, sqlite_url, clock, tmp_path, mode):
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    put(src, "b.json", '{"id": 2}\n', clock.now - 10 * MIN)
    assert run(spark, sqlite_url, clock, src, onModified=mode)[0] == [1, 2]
    clock.advance(20 * MIN)
    put(src, "a.json", '{"id": 1}\n{"id": 11}\n', clock.now - 5 * MIN)  # rewritten in place
    put(src, "c.json", '{"id": 3}\n', clock.now - 5 * MIN)
    before = Bookmarks(sqlite_url).get("orders")["Version"]
    if mode == "fail":
        job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
        with pytest.raises(SourceError) as e:
            job.read.files(str(src), format="json", transformation_ctx="src",
                           options={"onModified": mode})
        job.fail(e.value)
        text = str(e.value)
        assert "1 file(s) under" in text and "a.json" in text and "onModified=ignore" in text
        assert Bookmarks(sqlite_url).get("orders")["Version"] == before  # nothing committed
        assert len(Bookmarks(sqlite_url).files("orders")) == 2
        # the way out: one run with reprocess reads it, and counts it
        ids, report, _ = run(spark, sqlite_url, clock, src, onModified="reprocess")
        assert ids == [1, 3, 11] and report["rewritten"] == 1
        return
    ids, report, _ = run(spark, sqlite_url, clock, src, onModified=mode)
    assert report["rewritten"] == 1  # counted either way
    kinds = {(Path(r["path"]).name, r["kind"]) for r in Bookmarks(sqlite_url).files(
        "orders") if r["read_ts"] == clock.now}
    if mode == "reprocess":  # Glue's behaviour: the rewritten file is read again, whole
        assert ids == [1, 3, 11] and "rewritten_skipped" not in report
        assert kinds == {("a.json", "rewrite"), ("c.json", "new")}
    else:  # ignore: read once, whatever happens to it later
        assert ids == [3] and report["rewritten_skipped"] == 1
        assert kinds == {("c.json", "new")}
    config = json.loads(Job(None, state=sqlite_url).store.list_runs(
        job_name="orders")[-1]["config"])
    assert config["sources"]["src"]["rewritten"] == 1  # in the ledger
    clock.advance(20 * MIN)  # ignore: the rewrite stays skipped, later runs read nothing
    assert run(spark, sqlite_url, clock, src, onModified=mode)[0] == []


def test_bad_on_modified_and_retention_are_one_clear_error_before_anything(
        spark, sqlite_url, clock, tmp_path):
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
    with pytest.raises(ConfigError, match="onModified='sometimes' is not one of reprocess, "
                                          "ignore, fail"):
        job.read.files(str(src), format="json", transformation_ctx="src",
                       options={"onModified": "sometimes"})
    job.fail("bad option")
    for bad in (0, -1, "x", float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="files_retention_days=.* positive number"):
            Job(spark, state=sqlite_url, clock=clock, files_retention_days=bad)
    assert Bookmarks(sqlite_url).get("orders")["Version"] == 0
    assert Bookmarks(sqlite_url).files("orders") == []


def test_retention_keeps_the_audit_bounded(spark, sqlite_url, clock, tmp_path):
    src = tmp_path / "in"
    for day in range(5):
        put(src, f"d{day}.json", f'{{"id": {day}}}\n', clock.now - 10 * MIN)
        assert run(spark, sqlite_url, clock, src, days=2)[0] == [day]
        clock.advance(DAY)
    # rows more than two days old went at the later commits (d2 is exactly two days old)
    names = sorted(Path(r["path"]).name for r in Bookmarks(sqlite_url).files("orders"))
    assert names == ["d2.json", "d3.json", "d4.json"]


def test_a_version_1_store_gains_the_audit_table_on_first_use(spark, tmp_path, clock):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    assert run(spark, url, clock, src)[0] == [1]
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # what sparkmark 0.x (schema 1) left behind
        conn.exec_driver_sql("DROP TABLE sm_files")
        conn.exec_driver_sql("DROP TABLE sm_targets")  # schema 3 added these
        conn.exec_driver_sql("DROP INDEX ix_sm_runs_publish")
        conn.exec_driver_sql("UPDATE sm_meta SET value='1' WHERE key='schema_version'")
    engine.dispose()
    # a new process opens the store (this one keeps its engine): the upgrade runs there
    subprocess.run([sys.executable, "-c", f"from sparkmark import Bookmarks; "
                    f"Bookmarks({url!r}).get('orders')"], check=True, timeout=120)
    clock.advance(20 * MIN)
    put(src, "b.json", '{"id": 2}\n', clock.now - 5 * MIN)
    assert run(spark, url, clock, src)[0] == [2]
    assert [Path(r["path"]).name for r in Bookmarks(url).files("orders")] == ["b.json"]
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT value FROM sm_meta WHERE key='schema_version'"
                                    ).scalar() == str(SCHEMA_VERSION)
    engine.dispose()


def test_the_page_lists_a_runs_files_with_a_count(spark, sqlite_url, clock, tmp_path):
    from sparkmark.ops.report_html import FILES_PER_RUN, page_data
    src = tmp_path / "in"
    for i in range(FILES_PER_RUN + 5):
        put(src, f"f{i:04d}.json", f'{{"id": {i}}}\n', clock.now - 10 * MIN)
    assert len(run(spark, sqlite_url, clock, src)[0]) == FILES_PER_RUN + 5
    data = page_data(Job(None, state=sqlite_url).store)
    [(run_id, total, first)] = data["files"]
    assert total == FILES_PER_RUN + 5 and len(first) == FILES_PER_RUN
    assert first[0][0].endswith("f0000.json") and first[0][2] == "new"
    assert run_id == data["runs"]["run_id"][0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcde"), st.integers(1, 4), st.integers(0, 2)),
                max_size=8),
       st.dictionaries(st.sampled_from("abcdef"),
                       st.sets(st.tuples(st.integers(1, 4), st.integers(0, 2)), min_size=1,
                               max_size=3), max_size=6),
       st.sampled_from(["reprocess", "ignore", "fail"]))
def test_plan_rewrites_matches_the_reference_model(files, before, mode):
    """Pure planning against the plain reading of the rule: a rewrite is a path read before
    whose (mtime, size) is none of the versions read then; ignore drops exactly those."""
    from sparkmark.planning.listing import FileEntry
    from sparkmark.planning.rewrites import plan_rewrites
    selected = sorted({FileEntry(m, f"file:/in/{p}", sz) for p, m, sz in files})
    read_before = {f"file:/in/{p}": v for p, v in before.items()}
    plan = plan_rewrites(selected, read_before, mode)
    model = [f for f in selected
             if f.path in read_before and not any((f.mtime, f.size) == v
                                                  for v in read_before[f.path])]
    assert plan.rewritten == model
    assert plan.selected == ([f for f in selected if f not in model] if mode == "ignore"
                             else selected)
    assert plan.info()["rewritten"] == len(model)


def test_a_path_longer_than_an_index_row_is_kept_and_found(spark, state_url, clock, tmp_path):
    """The audit indexes a hash of the path, not the path: a 3,000-character path (PostgreSQL's
    btree rows stop near 2,700 bytes) commits and is found again on both stores."""
    deep = tmp_path / "in"
    for i in range(15):
        deep = deep / (f"{i:02d}" + "d" * 198)
    src = tmp_path / "in"
    put(deep, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    put(src, "b.json", '{"id": 2}\n', clock.now - 10 * MIN)
    assert run(spark, state_url, clock, src, recurse=True, onModified="fail")[0] == [1, 2]
    [row] = Bookmarks(state_url).files("orders", path="a.json")
    assert len(row["path"]) > 3000 and row["kind"] == "new"
    clock.advance(20 * MIN)
    put(deep, "a.json", '{"id": 1}\n{"id": 3}\n', clock.now - 5 * MIN)
    with pytest.raises(SourceError, match="1 file\\(s\\) under .* rewritten since"):
        run(spark, state_url, clock, src, recurse=True, onModified="fail", commit=False)


@pytest.mark.parametrize("sort_from", [None, 0])
def test_a_first_runs_audit_rows_take_the_path_hashes_of_its_listing(spark, sqlite_url, clock,
                                                                    tmp_path, sort_from,
                                                                    monkeypatch):
    """A first run hashes each listed path once (its sketch keys and its audit rows share
    them): every audit row carries its path's hash, in the store's sorted order too
    (``sort_from=0``), with a file newer than the run's listing time left out (it waits for
    the next run); a bounded first run reads a part, and the store hashes those rows itself."""
    from sparkmark.planning.bands import path_hash
    from sparkmark.state import audit as audit_module
    if sort_from is not None:
        monkeypatch.setattr(audit_module, "AUDIT_SORT_READ", sort_from)
        monkeypatch.setattr(audit_module, "AUDIT_SORT_TABLE", sort_from)
    given_by_run = []
    real = audit_module._path_keys

    def spy(read):
        known = real(read)
        given_by_run.append(known is not None)
        return known
    monkeypatch.setattr(audit_module, "_path_keys", spy)
    src = tmp_path / "in"
    for i in range(12):
        put(src, f"dt={i % 3}/f{i:02d}.json", f'{{"id": {i}}}\n', clock.now - (30 - i) * MIN)
    put(src, "dt=0/future.json", '{"id": 99}\n', clock.now + 10 * MIN)  # after the listing

    def audit(job):
        with sa.create_engine(sqlite_url).connect() as c:
            return dict(c.execute(sa.text("SELECT path, path_hash FROM sm_files "
                                          "WHERE job_name = :j"), {"j": job}).all())

    assert run(spark, sqlite_url, clock, src)[0] == list(range(12))
    rows = audit("orders")
    assert sorted(Path(p).name for p in rows) == [f"f{i:02d}.json" for i in range(12)]
    assert all(h == path_hash(p) for p, h in rows.items())
    assert given_by_run[-1] is True
    job = Job(spark, state=sqlite_url, clock=clock).init("bounded", EN)
    df = job.read.files(str(src), format="json", transformation_ctx="src",
                        options={"boundedFiles": 5})
    assert sorted(r["id"] for r in df.collect()) == list(range(5))
    job.commit()
    rows = audit("bounded")
    assert sorted(Path(p).name for p in rows) == [f"f{i:02d}.json" for i in range(5)]
    assert all(h == path_hash(p) for p, h in rows.items())
    assert given_by_run[-1] is False


def _raw_audit(url: str, job: str) -> list[tuple[str, str]]:
    """The store's own sm_files rows of ``job`` (run id, file name), whatever their run's
    status: what the audit's readers leave out included."""
    with sa.create_engine(url).connect() as c:
        return sorted((r, Path(p).name) for r, p in c.execute(sa.text(
            "SELECT run_id, path FROM sm_files WHERE job_name = :j"), {"j": job}))


def test_audit_rows_written_ahead_count_only_once_the_run_commits(spark, sqlite_url, clock,
                                                                  tmp_path, monkeypatch):
    """A large read's audit rows go in ahead of the commit (a thread, while Spark builds the
    read): before the commit they are in the table but no reader sees them (``files``, the
    page's counts, onModified's earlier reads); the commit makes them count at once."""
    import sparkmark.lifecycle.job
    monkeypatch.setattr(sparkmark.lifecycle.job, "EARLY_AUDIT_FILES", 2)
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    put(src, "b.json", '{"id": 2}\n', clock.now - 9 * MIN)
    ids, _, job = run(spark, sqlite_url, clock, src, commit=False)
    assert ids == [1, 2]
    run_id = job.run_id
    for audit in job._early_audits:  # the thread's rows are all in
        audit.wait()
    assert _raw_audit(sqlite_url, "orders") == [(run_id, "a.json"), (run_id, "b.json")]
    store = job.store
    assert Bookmarks(sqlite_url).files("orders") == []
    assert store.run_files([run_id]) == {}
    assert store.files_read_before("orders", "src", [f"file:{src}/a.json"]) == {}
    job.commit()
    rows = Bookmarks(sqlite_url).files("orders")
    assert [(Path(r["path"]).name, r["run_id"], r["run_status"]) for r in rows] == [
        ("a.json", run_id, "SUCCEEDED"), ("b.json", run_id, "SUCCEEDED")]
    assert store.run_files([run_id])[run_id][0] == 2


def test_a_failed_run_deletes_the_audit_rows_it_wrote_ahead(spark, sqlite_url, clock, tmp_path,
                                                            monkeypatch):
    import sparkmark.lifecycle.job
    monkeypatch.setattr(sparkmark.lifecycle.job, "EARLY_AUDIT_FILES", 1)
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    _, _, job = run(spark, sqlite_url, clock, src, commit=False)
    job.fail("the transform broke")  # waits for the thread, then deletes its rows
    assert _raw_audit(sqlite_url, "orders") == []
    assert Bookmarks(sqlite_url).files("orders") == []
    ids, _, job2 = run(spark, sqlite_url, clock, src)  # the file is new input, read once
    assert ids == [1]
    assert _raw_audit(sqlite_url, "orders") == [(job2.run_id, "a.json")]


def test_a_run_that_died_leaves_audit_rows_no_reader_counts(spark, sqlite_url, clock, tmp_path,
                                                            monkeypatch):
    """A run that never ended (its process gone: here the lease is released from outside)
    leaves the rows it wrote ahead; they are not a read, so onModified=fail does not call the
    file a rewrite when it changed since, and the retention removes them."""
    import sparkmark.lifecycle.job
    monkeypatch.setattr(sparkmark.lifecycle.job, "EARLY_AUDIT_FILES", 1)
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    _, _, dead = run(spark, sqlite_url, clock, src, commit=False)
    for audit in dead._early_audits:
        audit.wait()
    Job(None, state=sqlite_url, clock=clock).store.release("orders", now=clock.now)
    put(src, "a.json", '{"id": 1}\n{"id": 11}\n', clock.now - 5 * MIN)  # rewritten since
    ids, report, job = run(spark, sqlite_url, clock, src, onModified="fail")
    assert ids == [1, 11] and report["rewritten"] == 0
    assert [r["run_id"] for r in Bookmarks(sqlite_url).files("orders")] == [job.run_id]
    assert (dead.run_id, "a.json") in _raw_audit(sqlite_url, "orders")
    clock.advance(31 * DAY)  # the default retention (30 days) takes the dead run's rows too
    put(src, "c.json", '{"id": 3}\n', clock.now - 5 * MIN)
    run(spark, sqlite_url, clock, src)
    assert [n for _, n in _raw_audit(sqlite_url, "orders")] == ["c.json"]


def test_audit_rows_that_cannot_be_written_ahead_fail_the_run_and_commit_nothing(
        spark, sqlite_url, clock, tmp_path, monkeypatch):
    """The store refuses the rows (here a trigger of the SQLite file itself): the commit
    raises that error, the run is FAILED, the bookmark did not move and no row stays."""
    import sparkmark.lifecycle.job
    monkeypatch.setattr(sparkmark.lifecycle.job, "EARLY_AUDIT_FILES", 1)
    src = tmp_path / "in"
    put(src, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    assert run(spark, sqlite_url, clock, src)[0] == [1]  # the store and its tables exist
    before = Bookmarks(sqlite_url).get("orders")["Version"]
    clock.advance(20 * MIN)
    put(src, "b.json", '{"id": 2}\n', clock.now - 5 * MIN)
    with sa.create_engine(sqlite_url).begin() as c:
        c.execute(sa.text("CREATE TRIGGER no_audit BEFORE INSERT ON sm_files "
                          "BEGIN SELECT RAISE(ABORT, 'the audit is full'); END"))
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
    assert job.read.files(str(src), format="json", transformation_ctx="src").count() == 1
    with pytest.raises(Exception, match="the audit is full"):
        job.commit()
    last = job.store.list_runs(job_name="orders")[-1]
    assert last["status"] == "FAILED" and "the audit is full" in last["error"]
    assert Bookmarks(sqlite_url).get("orders")["Version"] == before
    assert [n for _, n in _raw_audit(sqlite_url, "orders")] == ["a.json"]


def test_a_read_that_fails_after_listing_leaves_no_audit_rows(audit_path, spark, sqlite_url,
                                                              clock, tmp_path):
    """A source records its files before Spark builds the read; when that read fails (here
    JSON files read as Parquet) and the job goes on to commit, those files are no read of
    this run: no audit row, written ahead or not, while another source's rows stay."""
    bad, good = tmp_path / "bad", tmp_path / "good"
    put(bad, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    put(good, "g.json", '{"id": 7}\n', clock.now - 10 * MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
    with pytest.raises(Exception, match="(?i)parquet"):
        job.read.files(str(bad), format="parquet", transformation_ctx="bad")
    assert job.read.files(str(good), format="json", transformation_ctx="good").count() == 1
    job.commit()
    assert [(r["ctx"], Path(r["path"]).name) for r in Bookmarks(sqlite_url).files("orders")
            ] == [("good", "g.json")]
    assert _raw_audit(sqlite_url, "orders") == [(job.run_id, "g.json")]


def test_a_failed_read_withdraws_only_its_own_rows_when_sources_share_no_ctx(
        audit_path, spark, sqlite_url, clock, tmp_path):
    """Two reads without a transformation_ctx share the audit's empty ctx: when the second
    fails after listing, only its files leave the audit; the first read's rows, written
    ahead or not, stay and count once the run commits."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    put(good, "g.json", '{"id": 7}\n', clock.now - 10 * MIN)
    put(bad, "a.json", '{"id": 1}\n', clock.now - 10 * MIN)
    job = Job(spark, state=sqlite_url, clock=clock).init("orders", EN)
    assert job.read.files(str(good), format="json").count() == 1
    with pytest.raises(Exception, match="(?i)parquet"):
        job.read.files(str(bad), format="parquet")
    job.commit()
    assert _raw_audit(sqlite_url, "orders") == [(job.run_id, "g.json")]
    assert [Path(r["path"]).name for r in Bookmarks(sqlite_url).files("orders")] == ["g.json"]
