"""Progress of long file listings: how many files a listing has found so far.

A file source lists its input one directory level at a time; on a big tree that can take
minutes.  Whoever wants to show it (``sparkmark run``'s live display, a notebook, a log line)
registers a callback for the current context::

    from sparkmark.core.listing_progress import watch_listing
    with watch_listing(lambda p: print(f"{p.root}: {p.files:,} files so far")):
        job.read.files("s3a://bucket/in", transformation_ctx="src")

The callback gets a :class:`ListingProgress` once the listing has run for ``after_s`` seconds
(default 5, env ``SPARKMARK_LISTING_PROGRESS_AFTER``), then at most every ``every_s`` seconds,
and once more when that listing ends (``done=True``).  Short listings report nothing.  The
registration is a context variable: it applies to the code inside the ``with`` block only, and
nothing is reported when no one watches.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence


@dataclass(frozen=True)
class ListingProgress:
    """One report: the root being listed, directories and files found so far, seconds spent.

    Example: ``ListingProgress("file:/data/in", dirs=12, files=40_000, elapsed_s=6.5)``
    """

    root: str
    dirs: int
    files: int
    elapsed_s: float
    done: bool = False


@dataclass
class _Watcher:
    callback: Callable[[ListingProgress], None]
    after_s: float
    every_s: float
    clock: Callable[[], float]


_WATCHER: ContextVar[_Watcher | None] = ContextVar("sparkmark_listing_watcher", default=None)


def default_after_s() -> float:
    """Seconds a listing runs before it is reported (env ``SPARKMARK_LISTING_PROGRESS_AFTER``,
    default 5).  Example: ``default_after_s()``"""
    try:
        return max(0.0, float(os.environ.get("SPARKMARK_LISTING_PROGRESS_AFTER", "5")))
    except ValueError:
        return 5.0


@contextmanager
def watch_listing(callback: Callable[[ListingProgress], None], *,
                  after_s: float | None = None, every_s: float = 0.5,
                  clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Report the progress of file listings run inside the block to ``callback``.

    Example::

        with watch_listing(lambda p: log.info("%s files listed", p.files)):
            pipeline.run()
    """
    token = _WATCHER.set(_Watcher(callback, default_after_s() if after_s is None else after_s,
                                  every_s, clock))
    try:
        yield
    finally:
        _WATCHER.reset(token)


Lister = Callable[[Sequence[str]], Iterable[Any]]


class _Counting:
    """A level lister that counts what ``lister`` finds and reports it to ``watcher``."""

    def __init__(self, lister: Lister, root: str, watcher: _Watcher):
        self.lister, self.root, self.watcher = lister, root, watcher
        self.started = watcher.clock()
        self.last = self.started - watcher.every_s
        self.dirs = self.files = 0
        self.shown = False

    def __call__(self, dirs: Sequence[str]) -> Iterator[Any]:
        for listed in self.lister(dirs):
            self.dirs += 1
            files = getattr(listed, "files", None)  # a Level (dir, files, subdirs) ...
            if files is not None:
                self.files += len(files)
            else:  # ... or a (dir, entries) pair
                self.files += sum(1 for e in listed[1] if not getattr(e, "is_dir", False))
            self.report()
            yield listed

    def report(self, done: bool = False) -> None:
        w = self.watcher
        now = w.clock()
        elapsed = now - self.started
        if elapsed < w.after_s or (not done and now - self.last < w.every_s):
            return
        if done and not self.shown:
            return  # a listing that never showed up does not report its end
        self.last, self.shown = now, True
        try:
            w.callback(ListingProgress(self.root, self.dirs, self.files, elapsed, done))
        except Exception:  # noqa: BLE001 - a display must never break the listing
            pass


def counting(lister: Lister, root: str) -> Lister:
    """``lister`` (a level lister for :func:`sparkmark.planning.listing.walk`) reporting to the
    current watcher as it goes; ``lister`` itself when no one watches.

    Example: ``walk([root], counting(local_level, root), ...)``
    """
    watcher = _WATCHER.get()
    return lister if watcher is None else _Counting(lister, root, watcher)


def finish(lister: Lister) -> None:
    """Tell the watcher (if any) that the listing done by ``lister`` ended.
    Example: ``finish(lister)``"""
    if isinstance(lister, _Counting):
        lister.report(done=True)
