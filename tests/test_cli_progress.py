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
