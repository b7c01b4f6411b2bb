"""The real `sparkmark` console script: bookmark admin, report, and one-line errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from sparkmark import Job
from sparkmark.core.options import ENABLE

EN = {"job_bookmark_option": ENABLE}
SPARKMARK = str(Path(sys.executable).with_name("sparkmark"))


def cli(*args, env=None, cwd=None):
    e = dict(os.environ)
    e.pop("SPARKMARK_STATE", None)
    e.update(env or {})
    return subprocess.run([SPARKMARK, *args], capture_output=True, text=True, env=e, cwd=cwd,
                          timeout=120)


def _runs(url, clock, n=2):
    ids = []
    for i in range(n):
        job = Job(None, state=url, clock=clock).init("orders", EN)
        job.bookmark("src")
        job.record_read("src", {"high": i}, {"new_input": True})
        job.commit()
        ids.append(job.run_id)
        clock.advance(1000)
    return ids


def test_bookmark_get_history_reset_rewind(state_url, clock):
    r1, r2 = _runs(state_url, clock)
    res = cli("--state", state_url, "bookmark", "get", "orders")
    assert res.returncode == 0, res.stderr
    entry = json.loads(res.stdout)
    assert set(entry) == {"JobName", "Version", "Run", "Attempt", "PreviousRunId", "RunId",
                          "JobBookmark"}
    assert (entry["Version"], entry["Run"], entry["RunId"], entry["PreviousRunId"]) == \
        (2, 2, r2, r1)
    assert entry["JobBookmark"] == {"src": {"high": 1}}

    res = cli("bookmark", "get", "orders", "--run-id", r1, env={"SPARKMARK_STATE": state_url})
    assert json.loads(res.stdout)["JobBookmark"] == {"src": {"high": 0}}

    res = cli("--state", state_url, "bookmark", "reset", "orders", "--run-id", r1)
    assert res.returncode == 0 and "version 3" in res.stdout
    res = cli("--state", state_url, "bookmark", "history", "orders", "--format", "json")
    hist = json.loads(res.stdout)
    assert [h["Kind"] for h in hist] == ["initial", "commit", "commit", "rewind"]
    assert hist[-1]["JobBookmark"] == {"src": {"high": 0}}
    res = cli("--state", state_url, "bookmark", "history", "orders")
    assert res.returncode == 0 and "rewind" in res.stdout
    res = cli("--state", state_url, "bookmark", "reset", "orders")
    assert res.returncode == 0
    assert json.loads(cli("--state", state_url, "bookmark", "get", "orders").stdout)[
        "JobBookmark"] == {}


def _assert_one_line_error(res, needle):
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr + res.stdout
    lines = [line for line in res.stderr.strip().splitlines() if line.strip()]
    assert lines and lines[0].startswith("error:"), res.stderr
    assert needle in res.stderr


def test_cli_errors_are_one_clear_line(tmp_path, clock):
    url = f"sqlite:///{tmp_path}/s.db"
    _runs(url, clock, 1)
    _assert_one_line_error(cli("--state", url, "bookmark", "get", "ghost"), "no job named")
    _assert_one_line_error(cli("--state", url, "bookmark", "get", "orders", "--run-id", "zz"),
                           "has no committed bookmark")
    _assert_one_line_error(cli("--state", url, "bookmark", "reset", "orders", "--run-id", "zz"),
                           "has no committed bookmark")
    _assert_one_line_error(cli("--state", "what://is this", "bookmark", "get", "x"),
                           "state URL")
    res = cli("--state", "postgresql+psycopg://bob:hunter2@127.0.0.1:1/x", "bookmark", "get", "x")
    _assert_one_line_error(res, "unreachable")
    assert "hunter2" not in res.stderr + res.stdout
    _assert_one_line_error(cli("--state", url, "bookmark", "history", "orders", "-f", "xml"),
                           "unknown --format")
    # nothing changed by any of that
    entry = json.loads(cli("--state", url, "bookmark", "get", "orders").stdout)
    assert entry["Version"] == 1


def test_default_state_in_working_directory(tmp_path):
    # read-only commands never create a store (issue 16, case 12)
    res = cli("bookmark", "get", "nothing-yet", cwd=tmp_path)
    _assert_one_line_error(res, "there is no state store at .sparkmark/state.db")
    assert not (tmp_path / ".sparkmark").exists()
    _assert_one_line_error(cli("report", cwd=tmp_path), "there is no state store")
    assert not (tmp_path / ".sparkmark").exists()


def test_state_works_after_the_command_and_version_prints(state_url, clock):
    """``--state`` before or after the command (or as ``--state=URL``) reaches the same store;
    ``--version`` prints sparkmark's version."""
    import sparkmark
    from sparkmark.ops.cli import hoist_state
    _runs(state_url, clock, n=1)
    for args in (["--state", state_url, "bookmark", "get", "orders"],
                 ["bookmark", "get", "orders", "--state", state_url],
                 ["bookmark", "get", f"--state={state_url}", "orders"]):
        res = cli(*args)
        assert res.returncode == 0, (args, res.stderr)
        assert "src" in res.stdout, res.stdout
    assert hoist_state(["run", "--", "--state", "x"]) == ["run", "--", "--state", "x"]
    res = cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"sparkmark {sparkmark.__version__}"


def test_usage_errors_are_one_line_with_exit_status_2():
    """A mistyped option or a missing argument is one ``error: ...`` line that says where the
    help is, like every other user error (not click's usage block and boxed panel); a bare
    ``sparkmark`` still prints its help."""
    for args, text in ((["--bogus"], "No such option: --bogus; see `sparkmark --help`"),
                       (["bookmark", "get"], "Missing argument 'job'; see `sparkmark bookmark "
                                             "get --help`")):
        res = cli(*args)
        assert res.returncode == 2, res
        assert res.stderr.strip().splitlines() == [f"error: {text}"], res.stderr
    res = cli()
    assert res.returncode == 2 and "Usage: sparkmark" in res.stdout + res.stderr


def _mixed_runs(url, clock):
    """orders: a SUCCEEDED run that read 3 files in 1.5 s, a FAILED one, a SKIPPED one and
    another SUCCEEDED one, a day apart; returns their run ids in that order."""
    ids = []
    for i, end in enumerate(("commit", "fail", "skip", "commit")):
        job = Job(None, state=url, clock=clock).init("orders", EN)
        job.bookmark("src")
        job.record_read("src", {"high": i}, {"new_input": True, "files": 3})
        clock.advance(1500)
        if end == "commit":
            job.commit()
        elif end == "fail":
            job.fail("boom")
        else:
            job.skip("nothing to do")
        ids.append(job.run_id)
        clock.advance(86_400_000 - 1500)
    return ids


def test_report_filters_by_status_and_since_with_limit_and_last(sqlite_url, clock):
    ok1, failed, skipped, ok2 = _mixed_runs(sqlite_url, clock)

    def ids(*args):
        res = cli("--state", sqlite_url, "report", "--format", "json", *args)
        assert res.returncode == 0, res.stderr
        return [r["run_id"] for r in json.loads(res.stdout)]

    assert ids() == [ok1, failed, skipped, ok2]
    assert ids("--status", "failed") == [failed]
    assert ids("--status", "FAILED,skipped") == [failed, skipped]
    assert ids("--status", "Failed", "--status", "succeeded") == [ok1, failed, ok2]
    # the clock's runs are in 2023-11; 'now' is today: a span back from now finds none of them
    assert ids("--since", "7d") == []
    assert ids("--since", "2023-11-15T22:13:21Z") == [skipped, ok2]
    assert ids("--since", "2023-11-16", "--status", "succeeded") == [ok2]
    assert ids("--limit", "2") == [skipped, ok2]
    assert ids("--last", "1") == [ok2]  # the old spelling still works
    assert ids("--status", "succeeded", "--limit", "1") == [ok2]


def test_report_bad_filters_are_one_line_errors(sqlite_url, clock):
    _runs(sqlite_url, clock, n=1)
    base = ("--state", sqlite_url, "report")
    res = cli(*base, "--status", "DONE")
    _assert_one_line_error(res, "unknown status 'DONE'; use one of RUNNING, SUCCEEDED, EMPTY, "
                                "FAILED, SKIPPED, ROLLED_BACK")
    _assert_one_line_error(cli(*base, "--since", "last tuesday"),
                           "cannot read --since 'last tuesday': give an ISO date")
    _assert_one_line_error(cli(*base, "--since", "2024-02-30"), "cannot read --since")
    _assert_one_line_error(cli(*base, "--limit", "0"), "must be a positive number of runs")
    _assert_one_line_error(cli(*base, "--all", "--limit", "3"), "--limit N or --all, not both")


def test_report_shows_duration_and_files_read_and_json_config_is_an_object(sqlite_url, clock):
    ok1, failed, _, _ = _mixed_runs(sqlite_url, clock)
    res = cli("--state", sqlite_url, "report", "--format", "json")
    rows = {r["run_id"]: r for r in json.loads(res.stdout)}
    assert rows[ok1]["duration_s"] == 1.5 and rows[ok1]["files_read"] == 3
    assert rows[failed]["duration_s"] == 1.5 and rows[failed]["status"] == "FAILED"
    assert isinstance(rows[ok1]["config"], dict)  # an object, not a JSON string
    assert rows[ok1]["config"]["sources"]["src"]["files"] == 3

    res = cli("--state", sqlite_url, "report", "--format", "csv")
    import csv as _csv
    import io as _io
    got = list(_csv.DictReader(_io.StringIO(res.stdout)))
    assert [(r["duration_s"], r["files_read"]) for r in got][0] == ("1.5", "3")
    header = res.stdout.splitlines()[0]
    none = cli("--state", sqlite_url, "report", "--format", "csv", "--status", "rolled_back")
    assert none.returncode == 0 and none.stdout.splitlines() == [header]  # same columns, empty

    res = cli("--state", sqlite_url, "report")
    assert res.returncode == 0, res.stderr
    header = next(line for line in res.stdout.splitlines() if "duration_s" in line)
    assert "files_read" in header
    assert "1.5" in res.stdout


def test_python_m_runs_the_cli_by_its_old_and_new_module_paths():
    for module in ("sparkmark.cli", "sparkmark.ops.cli"):
        res = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0 and res.stdout.startswith("sparkmark "), (module, res.stderr)


def test_read_only_commands_start_no_spark(sqlite_url, clock, tmp_path):
    """report, bookmark get/history and files need only the store: no pyspark, py4j, pandas
    or pyarrow import (each costs start-up time on every command)."""
    _runs(sqlite_url, clock)
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print('HEAVY', sorted({m.split('.')[0] for m in "
             "sys.modules} & {'pyspark', 'py4j', 'pandas', 'pyarrow'}), file=sys.stderr))\n"
             "from sparkmark.ops.cli import main\nmain()\n")
    for args in (["report"], ["report", "--format", "json"],
                 ["report", "--format", "html", "--output", str(tmp_path / "r.html")],
                 ["bookmark", "get", "orders"], ["bookmark", "history", "orders"],
                 ["files", "orders"]):
        res = subprocess.run([sys.executable, "-c", probe, "--state", sqlite_url, *args],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, (args, res.stderr)
        assert "HEAVY []" in res.stderr, (args, res.stderr[-500:])


def test_report_table_is_bounded_by_default_and_says_what_it_left_out(sqlite_url, clock):
    from sparkmark.state import open_store
    from sparkmark.state.ledger import REPORT_LIMITS
    from sparkmark.state.schema import runs
    ids = _runs(sqlite_url, clock, n=2)
    # a long history, written straight into the ledger (a job run each would take minutes)
    store = open_store(sqlite_url)
    template = store.get_run(ids[0])
    extra = REPORT_LIMITS["table"] + 3 - len(ids)
    with store.engine.begin() as conn:
        conn.execute(runs.insert(), [dict(template, run_id=f"old{i:05d}",
                                          run_start_ts=template["run_start_ts"] - 10_000 - i)
                                     for i in range(extra)])
    res = cli("--state", sqlite_url, "report")
    assert res.returncode == 0, res.stderr
    assert ids[-1] in res.stdout and "old00000" in res.stdout
    assert f"old{extra - 1:05d}" not in res.stdout            # the oldest are left out
    assert ("(3 older run(s) not shown: the newest 100 are; --limit N for more, --all for "
            "every run)") in res.stdout
    res = cli("--state", sqlite_url, "report", "--all")
    assert f"old{extra - 1:05d}" in res.stdout and "not shown" not in res.stdout
    res = cli("--state", sqlite_url, "report", "--limit", "102")
    assert "(1 older run(s) not shown" in res.stdout
    # JSON and CSV give every run unless told otherwise, as `sparkmark files` does
    res = cli("--state", sqlite_url, "report", "--format", "json")
    assert len(json.loads(res.stdout)) == REPORT_LIMITS["table"] + 3


def test_report_html_takes_the_filters_and_says_what_it_left_out(sqlite_url, clock, tmp_path):
    ok1, failed, skipped, ok2 = _mixed_runs(sqlite_url, clock)
    page = tmp_path / "runs.html"
    res = cli("--state", sqlite_url, "report", "--format", "html", "--output", str(page),
              "--status", "succeeded,failed", "--since", "2023-11-14", "--limit", "2")
    assert res.returncode == 0, res.stderr
    assert ("2 run(s) (1 older run(s) left out: --limit N for more, --all for every run)"
            in res.stdout), res.stdout
    text = page.read_text()
    runs = text[text.index('"runs":'):text.index('"bookmarks":')]  # the page's run table
    assert failed in runs and ok2 in runs and ok1 not in runs and skipped not in runs
    assert "status SUCCEEDED,FAILED" in text and "since 2023-11-14 00:00:00.000+00:00" in text
    res = cli("--state", sqlite_url, "report", "--format", "html", "--output", str(page))
    assert "4 run(s)," in res.stdout and "left out" not in res.stdout


def test_bookmark_history_limit_reads_the_newest_versions(sqlite_url, clock):
    _runs(sqlite_url, clock, n=3)
    res = cli("--state", sqlite_url, "bookmark", "history", "orders", "--format", "json",
              "--limit", "2")
    assert res.returncode == 0, res.stderr
    assert [h["Version"] for h in json.loads(res.stdout)] == [2, 3]
    res = cli("--state", sqlite_url, "bookmark", "history", "orders", "--format", "json")
    assert [h["Version"] for h in json.loads(res.stdout)] == [0, 1, 2, 3]  # all by default
    _assert_one_line_error(cli("--state", sqlite_url, "bookmark", "history", "orders",
                               "--limit", "0"), "must be a positive number of versions")


def test_bookmark_history_table_shows_the_newest_100_and_says_how_many_are_left_out(
        sqlite_url, clock):
    _runs(sqlite_url, clock, n=102)   # versions 0 (empty) to 102
    res = cli("--state", sqlite_url, "bookmark", "history", "orders")
    assert res.returncode == 0, res.stderr
    assert "3 older version(s) not shown: the newest 100 are" in " ".join(res.stdout.split())
    res = cli("--state", sqlite_url, "bookmark", "history", "orders", "--all")
    assert res.returncode == 0 and "not shown" not in res.stdout, res.stderr
    res = cli("--state", sqlite_url, "bookmark", "history", "orders", "--limit", "102")
    assert "1 older version(s) not shown" in res.stdout   # the empty version 0
    res = cli("--state", sqlite_url, "bookmark", "history", "orders", "--limit", "103")
    assert "not shown" not in res.stdout
    _assert_one_line_error(cli("--state", sqlite_url, "bookmark", "history", "orders",
                               "--limit", "5", "--all"), "not both")
