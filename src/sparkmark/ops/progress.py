"""A live terminal display for ``sparkmark run``: module k of N, the current module and its data
window, elapsed time, and each finished module's status and rows (rich ``Live``).

    from sparkmark.ops.progress import PipelineProgress
    with PipelineProgress(console, "overwatch", timezone="UTC") as show:
        summary = pipeline.run(progress=show)

It draws only on a terminal: when ``console.is_terminal`` is false (cron, CI, a pipe) or
``quiet`` is set, it does nothing at all.
"""
from __future__ import annotations

import time
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sparkmark.core.clock import format_ts

STATUS_STYLES = {"SUCCEEDED": "green", "EMPTY": "bright_black", "FAILED": "bold red",
                 "SKIPPED": "yellow", "ROLLED_BACK": "magenta", "RUNNING": "cyan"}


def status_text(status: Any) -> Text:
    """A status word coloured as in the report: ``status_text("FAILED")``."""
    word = str(status)
    return Text(word, style=STATUS_STYLES.get(word, ""))


class PipelineProgress:
    """The ``progress`` callback of :meth:`Pipeline.run` that draws a live display."""

    def __init__(self, console: Console, pipeline: str, *, timezone: str = "UTC",
                 quiet: bool = False, clock: Any = time.monotonic):
        self.console, self.pipeline, self.timezone = console, pipeline, timezone
        self.enabled = console.is_terminal and not quiet
        self.clock = clock
        self.started = clock()
        self.k = self.n = 0
        self.current: Any = None
        self.window: Any = None
        self.done: list[Any] = []
        self.listing: Any = None  # the long file listing under way (ListingProgress), if any
        self._live: Live | None = None

    def __enter__(self) -> "PipelineProgress":
        if self.enabled:
            self._live = Live(self._render(), console=self.console, refresh_per_second=4,
                              transient=False, get_renderable=self._render)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self.current = None
            self._live.update(self._render(), refresh=True)
            self._live.__exit__(*exc)
            self._live = None

    def __call__(self, k: int, n: int, module: Any, window: Any, result: Any) -> None:
        self.k, self.n = k, n
        self.listing = None
        if result is None:
            self.current, self.window = module, window
        else:
            self.current = None
            self.done.append(result)
        if self._live is not None:
            self._live.refresh()

    def on_listing(self, progress: Any) -> None:
        """The :func:`sparkmark.core.listing_progress.watch_listing` callback: a long file listing
        shows the files listed so far under the current module."""
        self.listing = None if progress.done else progress
        if self._live is not None:
            self._live.refresh()

    def _render(self) -> Group:
        elapsed = self.clock() - self.started
        where = f"module {self.k} of {self.n}" if self.n else "starting"
        head = Text(f"pipeline {self.pipeline}: {where} · elapsed {elapsed:,.1f} s",
                    style="bold")
        parts: list[Any] = [head]
        if self.current is not None:
            w, tz, m = self.window, self.timezone, self.current
            parts.append(Text(f"running {m.id} {m.name} ({m.layer}) window "
                              f"[{format_ts(w.from_ts, tz)}, {format_ts(w.until_ts, tz)})",
                              style="cyan"))
        if self.listing is not None:
            p = self.listing
            parts.append(Text(f"  listing {p.root}: {p.files:,} files in {p.dirs:,} "
                              f"directories so far ({p.elapsed_s:,.1f} s)", style="bright_black"))
        if self.done:
            t = Table(show_edge=False, pad_edge=False, box=None)
            late = any(r.late_files for r in self.done)
            for col in ("module", "name", "status", "rows", *(["late files"] if late else [])):
                t.add_column(col)
            for r in self.done:
                cells: list[Any] = [str(r.module_id), r.module_name, status_text(r.status),
                                    "" if r.records_written is None else f"{r.records_written:,}"]
                if late:
                    n = r.late_files
                    cells.append(Text(f"{n:,} late" if n else "", style="bold yellow"))
                t.add_row(*cells)
            parts.append(t)
        return Group(*parts)
