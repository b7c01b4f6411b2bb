"""The live progress display of `sparkmark run`: shown on a terminal (a real pty), absent when
stdout is a pipe, silenced by --quiet."""
from __future__ import annotations

import os
import pty
import subprocess
import time
from pathlib import Path

from test_cli_pipeline import PIPELINE, SPARKMARK

ANSI = "\x1b["


def run_on_pty(args: list[str], env: dict, cwd: Path, timeout: float = 300,
               columns: int = 120) -> tuple[int, str]:
    """Run with stdout and stderr on a pseudo-terminal (as in an interactive shell)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            cwd=cwd, env={**env, "TERM": "xterm-256color", "COLUMNS": str(columns)})
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    rc = proc.wait(timeout=60)
    return rc, b"".join(chunks).decode("utf-8", "replace")


def setup(tmp_path: Path) -> dict:
    (tmp_path / "pipe.py").write_text(PIPELINE)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    env.update(CLIP_DATA=str(tmp_path / "data"), SPARKMARK_STATE=f"sqlite:///{tmp_path}/s.db")
    return env


def test_progress_on_a_terminal_and_not_when_piped_or_quiet(tmp_path):
    env = setup(tmp_path)
    rc, text = run_on_pty([SPARKMARK, "run", "pipe.py"], env, tmp_path)
    assert rc == 0, text[-3000:]
    assert ANSI in text  # drawn as a live terminal display
    assert "pipeline clip: module 1 of 2" in text and "module 2 of 2" in text
    assert "running 1 Bronze_Numbers (bronze) window [2024-01-01" in text
    assert "elapsed" in text
    assert "Silver_Numbers" in text and "SUCCEEDED" in text  # finished modules, status, rows

    res = subprocess.run([SPARKMARK, "run", "pipe.py"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "module 1 of" not in res.stdout and "elapsed" not in res.stdout
    assert ANSI not in res.stdout
    assert "pipeline clip run" in res.stdout  # the summary is still printed

    rc, text = run_on_pty([SPARKMARK, "run", "pipe.py", "--quiet"], env, tmp_path)
    assert rc == 0, text[-3000:]
    assert "module 1 of" not in text and "elapsed" not in text
    assert "pipeline clip run" in text


LISTING_PIPELINE = """
import os
from sparkmark import Pipeline
from sparkmark.engine.spark import local_session

BASE = os.environ["CLIP_DATA"]
p = Pipeline("lister", local_session("cli-test", cores=1), primordial_date="2024-01-01",
             max_days_to_load=1)

@p.module(id=1, name="Bronze_Files", layer="bronze", target=BASE + "/bronze")
def bronze(ctx):
    return ctx.job.read.files(BASE + "/in", format="json", transformation_ctx="in")
"""


def test_a_long_file_listing_shows_the_files_listed_so_far(tmp_path):
    """Listings that run longer than SPARKMARK_LISTING_PROGRESS_AFTER seconds (default 5) show
    the files listed so far; 0 here, so this small listing counts as long."""
    env = setup(tmp_path)
    (tmp_path / "pipe.py").write_text(LISTING_PIPELINE)  # setup() wrote the plain pipeline
    src = tmp_path / "data" / "in"
    for d in range(3):
        (src / f"dt=2024-01-0{d + 1}").mkdir(parents=True)
        for i in range(4):
            (src / f"dt=2024-01-0{d + 1}" / f"f{i}.json").write_text(f'{{"id": {d * 10 + i}}}\n')
    env["SPARKMARK_LISTING_PROGRESS_AFTER"] = "0"
    # wide enough that the line with the temp path (longer under pytest-xdist) is not wrapped
    rc, text = run_on_pty([SPARKMARK, "run", "pipe.py"], env, tmp_path, columns=400)
    assert rc == 0, text[-3000:]
    assert f"listing file:{src}" in text and "directories so far" in text, text[-3000:]
    import re
    counts = [(int(f), int(d)) for f, d in
              re.findall(r"([\d,]+) files in ([\d,]+) directories so far", text)]
    assert counts and all(0 <= f <= 12 and 1 <= d <= 4 for f, d in counts), counts

    env.pop("SPARKMARK_LISTING_PROGRESS_AFTER")  # default 5 s: this listing is short, silent
    late = src / "dt=2024-01-03" / "late.json"  # copied in with its old mtime kept (cp -p)
    late.write_text('{"id": 99}\n')
    old = time.time() - 2 * 86_400
    os.utime(late, (old, old))
    rc, text = run_on_pty([SPARKMARK, "run", "pipe.py"], env, tmp_path)
    assert rc == 0, text[-3000:]
    assert "module 1 of 1" in text and "directories so far" not in text
    assert "1 late" in text  # the late file is marked in the live display (lateFiles=warn)
    assert "late_files" in text  # and the summary printed at the end has the column
    # piped: no live display; the unread late file is reported again by every full listing
    # until a run reads it (lateFiles=read) or skips it (ignore), as docs/files.md says
    res = subprocess.run([SPARKMARK, "run", "pipe.py"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0 and "late_files" in res.stdout, res.stdout
    assert "directories so far" not in res.stdout + res.stderr and "\x1b[" not in res.stdout
