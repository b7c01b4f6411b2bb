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
