"""Which directories a run lists (incremental listing), as pure functions.

A full listing descends into every directory Spark would read (``key=value`` partitions always,
other directories with ``recurse``).  An *incremental* listing (opt-in,
``incrementalListing=true``) relies on a file-system rule: a directory's modification time
changes when an entry is added to it, removed from it or renamed in or out of it (local disks,
HDFS).  So a directory whose time did not change since the previous listing holds the same
entries, and a run need not list it.

The state is a handful of numbers, whatever the number of files or runs:

* ``start``: when the previous listing started (the driver's clock, not the job's clock, which
  may be a fake or skewed one), ``w``: the newest directory change time it saw (file-system
  clock) and ``took``: how long it took (ms).  A directory changed after the previous listing
  read its entry has a change time after that listing's start, which is at least
  ``max(w - took, start - skew)``; a run descends into a directory whose change time is after
  that, less a margin (:data:`LOCAL_MARGIN_MS` on local disks, whose times come from the
  driver's own kernel clock at a few ms granularity; :data:`REMOTE_MARGIN_MS` elsewhere, for
  the clock skew between the driver and, e.g., the HDFS NameNode).
* ``inner``: hashes of the directories that hold directories (the root, and e.g. ``year=``
  levels in ``year=/month=/day=``): they are always listed, because a change deep down does not
  change the times of the levels above it.  More than :data:`MAX_INNER` of them: full listings.
* ``full_ts``/``runs``: when the last full listing happened, to list fully again every
  ``fullListingInterval`` (runs, or a duration; default one day, cf. Auto Loader's
  ``backfillInterval``) so that files rewritten in place (no directory change) are still found.

A run lists fully when it has no previous listing state, when the roots changed, when the
previous run left files behind (a bound, or mtimes after ``T``: they may sit in directories that
will not change again), or when the interval is due.

Object stores have no directory times.  There the listing is *lexical* (``last`` in the state:
the greatest ``key=value`` directory name under the root): a run lists the root and only the
partitions that sort at or after ``last``; new files in older partitions wait for the next full
listing.  Without a previous listing of the same single root, or without partitions, it is full.
With ``lexicalFileNames=true`` (opt-in, for flat prefixes whose file names grow: time-stamped
names) a root that held files and no directories keeps ``name``, its greatest file name, and the
next run lists the root from that name on (S3's ``StartAfter``): a new file whose name sorts
before it waits for the next full listing, which reads it once (a backfill, see
``latefiles.plan_late``).

The *change time* of a directory is its mtime, and on local disks the later of mtime and ctime:
a directory copied in with a preserved mtime (``cp -p``, ``shutil.copytree``) still gets a new
ctime, which no tool can set.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.planning.filecolumns import FileColumns, FileEntry

LOCAL_MARGIN_MS = 1_000
REMOTE_MARGIN_MS = 300_000
MAX_INNER = 1_024
DEFAULT_FULL_INTERVAL = "1d"
OBJECT_STORES = ("s3", "s3a", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs", "oss", "cos", "r2")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d|w)\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000,
            "w": 7 * 86_400_000}


class DirEntry(NamedTuple):
    """A subdirectory in a directory listing: ``changed`` is its change time (its mtime, or
    the later of mtime and ctime where the file system has a ctime); ``name`` the last path
    component (derived from ``path`` when empty).

    >>> DirEntry("file:/in/dt=1", True, 5, 0, 9).changed
    9
    """

    path: str
    is_dir: bool
    mtime: int
    size: int = 0
    changed: int | None = None
    name: str = ""


class Level(NamedTuple):
    """What a level lister returns for one directory: its visible files (Spark's hidden-file
    rule already applied, see :func:`hidden`) and its subdirectories (all of them; the walk
    decides which to enter).

    >>> Level("file:/in", [FileEntry(5, "file:/in/a.json")], []).files[0].mtime
    5
    """

    dir: str
    files: Sequence[FileEntry]   # a FileColumns from the listers, or a list
    dirs: list[DirEntry]


@dataclass(frozen=True)
class FullInterval:
    """Every ``runs`` runs, or when ``ms`` have passed since the last full listing."""

    runs: int | None = None
    ms: int | None = None

    def due(self, runs_since: int, since_ms: int) -> bool:
        if self.runs is not None:
            return runs_since + 1 >= self.runs
        return self.ms is not None and since_ms >= self.ms


def parse_interval(raw: Any) -> FullInterval:
    """``fullListingInterval``: a whole number of runs (``24``) or a duration (``"12h"``,
    ``"1d"``, ``"30m"``, ``"1w"``); default one day.

    >>> parse_interval("6"), parse_interval("12h").ms
    (FullInterval(runs=6, ms=None), 43200000)
    """
    if raw is None or raw == "":
        raw = DEFAULT_FULL_INTERVAL
    if isinstance(raw, int) and not isinstance(raw, bool):
        text = str(raw)
    else:
        text = str(raw).strip()
    if text.isdigit():
        if int(text) < 1:
            raise ConfigError(f"option fullListingInterval={raw!r} must be at least 1 run")
        return FullInterval(runs=int(text))
    m = _DURATION.match(text)
    if not m or int(m.group(1)) < 1:
        raise ConfigError(f"option fullListingInterval={raw!r} is neither a number of runs nor "
                          "a duration; e.g. fullListingInterval=24 (runs) or 1d, 12h, 30m")
    return FullInterval(ms=int(m.group(1)) * _UNIT_MS[m.group(2).lower()])


def dir_hash(path: str) -> str:
    return hashlib.sha1(path.rstrip("/").encode("utf-8")).hexdigest()[:16]


def roots_hash(roots: Sequence[str]) -> str:
    return hashlib.sha1("\n".join(sorted(roots)).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ListingState:
    """What the next incremental listing needs (see the module docstring)."""

    w: int | None = None
    took: int = 0
    start: int | None = None
    full_ts: int | None = None
    runs: int = 0
    roots: str = ""
    inner: frozenset[str] = field(default_factory=frozenset)
    pending: int = 0
    last: str | None = None  # the greatest key=value directory name under the roots
    parts: bool = False  # the root held nothing but key=value directories (lexical StartAfter)
    name: str | None = None  # lexicalFileNames: the greatest file name of a files-only root

    def to_element(self) -> dict[str, Any]:
        out = {"w": self.w, "took": self.took, "start": self.start, "full_ts": self.full_ts,
               "runs": self.runs,
               "roots": self.roots, "inner": sorted(self.inner),
               "pending": self.pending}
        if self.last is not None:
            out["last"] = self.last
        if self.parts:
            out["parts"] = True
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_element(cls, element: Mapping[str, Any] | None) -> "ListingState | None":
        if not isinstance(element, Mapping):
            return None
        try:
            w = element.get("w")
            ts = element.get("full_ts")
            start = element.get("start")
            return cls(w=None if w is None else int(w), took=int(element.get("took", 0)),
                       start=None if start is None else int(start),
                       full_ts=None if ts is None else int(ts),
                       runs=int(element.get("runs", 0)), roots=str(element.get("roots", "")),
                       inner=frozenset(str(h) for h in element.get("inner") or ()),
                       pending=int(element.get("pending", 0)),
                       last=None if element.get("last") is None else str(element["last"]),
                       parts=element.get("parts") is True,
                       name=None if element.get("name") is None else str(element["name"]))
        except (TypeError, ValueError):
            return None


def scheme_of(path: str) -> str:
    return path.split(":", 1)[0].lower() if re.match(r"^[A-Za-z][\w+.-]*:", path) else "file"


def merge_states(states: Sequence[ListingState]) -> ListingState:
    """One state for several roots walked one after the other."""
    if len(states) == 1:
        return states[0]
    ws = [s.w for s in states if s.w is not None]
    starts = [s.start for s in states if s.start is not None]
    return ListingState(w=max(ws) if ws else None, took=sum(s.took for s in states),
                        start=min(starts) if starts else None, full_ts=states[0].full_ts,
                        runs=states[0].runs, roots=states[0].roots,
                        inner=frozenset().union(*(s.inner for s in states)),
                        pending=states[0].pending)  # no ``last``/``name``: lexical: one root


def choose_listing(previous: ListingState | None, *, enabled: bool, roots: Sequence[str],
                   listing_ts: int, interval: FullInterval, has_sketch: bool,
                   file_names: bool = False) -> tuple[str, str]:
    """``("full" | "incremental" | "lexical", why)`` for this run (``lexical``: object stores,
    see :func:`walk`; ``file_names``: ``lexicalFileNames=true``, a flat root may be listed
    from its greatest file name on).

    >>> choose_listing(None, enabled=True, roots=["file:/in"], listing_ts=0,
    ...                interval=FullInterval(runs=3), has_sketch=True)
    ('full', 'no previous listing')
    """
    if not enabled:
        return "full", "incrementalListing is off"
    stores = sorted({scheme_of(r) for r in roots} & set(OBJECT_STORES))
    if stores:
        return _choose_lexical(previous, stores[0], roots=roots, listing_ts=listing_ts,
                               interval=interval, has_sketch=has_sketch, file_names=file_names)
    if previous is None or previous.w is None or previous.full_ts is None:
        return "full", "no previous listing"
    if previous.roots != roots_hash(roots):
        return "full", "the input paths changed"
    if not has_sketch:
        return "full", "no late-file sketch yet"
    if previous.pending:
        return "full", f"{previous.pending} file(s) left for later by the previous run"
    if len(previous.inner) > MAX_INNER:
        return "full", f"more than {MAX_INNER} directories hold directories"
    if interval.due(previous.runs, listing_ts - previous.full_ts):
        return "full", "fullListingInterval is due"
    return "incremental", "directories changed since the previous listing"


def _choose_lexical(previous: ListingState | None, scheme: str, *, roots: Sequence[str],
                    listing_ts: int, interval: FullInterval, has_sketch: bool,
                    file_names: bool = False) -> tuple[str, str]:
    """Object stores have no directory times: ``lexical`` (descend only into the ``key=value``
    partitions at or after the greatest one the previous listing saw; with ``file_names``, in a
    root that held only files, list only the names after the greatest one seen) when the
    previous full or lexical listing of the same single root left one, else a full listing."""
    base = f"object store ({scheme}:) has no directory times"
    if len(roots) != 1:
        return "full", base + "; lexical listing needs a single input path"
    if previous is None or previous.full_ts is None or previous.roots != roots_hash(roots):
        return "full", base + "; no previous listing of these paths"
    by_name = previous.last is None and file_names and previous.name is not None
    if previous.last is None and not by_name:
        if file_names:
            return "full", base + ("; no key=value partitions to order, and no file name from a "
                                   "previous listing of a root that holds only files")
        return "full", base + "; no key=value partitions to order"
    if not has_sketch:
        return "full", "no late-file sketch yet"
    if previous.pending:
        return "full", f"{previous.pending} file(s) left for later by the previous run"
    if interval.due(previous.runs, listing_ts - previous.full_ts):
        return "full", "fullListingInterval is due"
    if by_name:
        return "lexical", (f"object store ({scheme}:): only file names after {previous.name} "
                           "(lexicalFileNames: lexical order)")
    return "lexical", (f"object store ({scheme}:): only partitions at or after "
                       f"{previous.last} (lexical order)")


def enter(name: str, recurse: bool) -> bool:
    """Spark's rule: ``key=value`` partition directories always, others with ``recurse``."""
    return recurse or "=" in name


def hidden(name: str) -> bool:
    """Spark's rule for files and directories it skips."""
    return ((name.startswith("_") and "=" not in name) or name.startswith(".")
            or name.endswith("._COPYING_"))


@dataclass
class WalkResult:
    """The files a walk found, the directories it listed (``dirs_listed``), the directories
    that hold files (``file_dirs``: ``(dir, one file path)``, for the partition-layout check
    without a pass over every file) and the next state."""

    files: FileColumns
    dirs_listed: int
    state: ListingState
    file_dirs: list[tuple[str, str]] = field(default_factory=list)


def margin_for(roots: Sequence[str]) -> int:
    """The change-time margin: local disks share the driver's clock, others may be skewed."""
    return LOCAL_MARGIN_MS if all(scheme_of(r) == "file" for r in roots) else REMOTE_MARGIN_MS


def threshold_of(previous: ListingState, margin_ms: int) -> int:
    """Directories with a change time above this are listed by an incremental run."""
    base = (previous.w or 0) - previous.took
    if previous.start is not None:
        base = max(base, previous.start)
    return base - margin_ms


def walk(roots: Sequence[str], list_level: Callable[[list[str]], Iterable[Level]], *,
         recurse: bool, previous: ListingState | None,
         mode: str, listing_ts: int, started_ms: int | None = None, margin_ms: int = 0,
         took_ms: Callable[[], int] | None = None, roots_key: Sequence[str] | None = None,
         list_after: Callable[[str, str], Level | None] | None = None,
         file_names: bool = False, name_counts: Callable[[str], bool] | None = None
         ) -> WalkResult:
    """List the directory trees under ``roots`` level by level.

    ``list_level(dirs)`` returns a :class:`Level` for each directory (one call per depth, so a
    Hadoop file system can list a whole level in one request); its files are taken as they are
    (one ``list.extend`` per directory, no per-file work here).  In ``incremental`` mode a
    directory is listed only when it is a root, holds directories (``previous.inner``), or its
    change time is after :func:`threshold_of` the previous state.  In ``lexical`` mode (object
    stores) every directory is listed except the roots' ``key=value`` partitions that sort
    before ``previous.last``; when the previous listing saw nothing but ``key=value``
    directories in the single root (``previous.parts``) and ``list_after(root, name)`` is given,
    the root itself is listed from ``previous.last`` on (S3's ``StartAfter``: the cost no
    longer grows with the number of older partitions; it returns None where the store cannot),
    so a loose file or folder that sorts before it waits for the next full listing too.
    With ``file_names`` (``lexicalFileNames=true``) a single root that holds files and no
    directory the walk enters keeps its greatest file name (``name`` in the state), and a
    ``lexical`` walk after such a listing lists the root from that name on with ``list_after``
    (only the newer names: the cost depends on the new files only; a file whose name sorts
    before it waits for the next full listing); where ``list_after`` returns None the whole
    root is listed; ``name_counts(path)`` is False for a file the source leaves out
    (``exclusions``), whose name must not hold the next listing back.  ``started_ms`` (the driver's
    clock when the listing starts) and ``took_ms`` (its duration, a callable) are kept for the
    next run.
    """
    incremental = mode == "incremental" and previous is not None and previous.w is not None
    threshold = (threshold_of(previous, margin_ms) if incremental and previous is not None
                 else None)
    lexical_from = previous.last if mode == "lexical" and previous is not None else None
    names_from = (previous.name if mode == "lexical" and previous is not None
                  and previous.last is None and file_names else None)
    root_set = {r.rstrip("/") for r in roots}
    last: str | None = None
    inner_prev = previous.inner if incremental and previous else frozenset()
    files = FileColumns()
    file_dirs: list[tuple[str, str]] = []
    inner: set[str] = set()
    w = previous.w if incremental and previous else None
    listed = 0
    level = list(roots)
    first: Iterable[Level] | None = None
    parts = True  # so far the roots hold only key=value directories
    greatest: str | None = None  # file_names: the greatest file name in the root
    root_dirs = False  # file_names: the root holds a directory the walk enters
    start_after = (lexical_from if previous is not None and previous.parts else names_from)
    if (start_after is not None and list_after is not None and len(roots) == 1):
        after = list_after(roots[0], start_after)
        if after is not None:
            first = [after]
    while level:
        nxt: list[str] = []
        batch, first = (first if first is not None else list_level(level)), None
        for d, found, subdirs in batch:
            listed += 1
            at_root = d.rstrip("/") in root_set
            if found and at_root:
                parts = False
            if found:
                files.extend(found)
                file_dirs.append((d.rstrip("/"), found[0].path))
                if file_names and at_root:
                    top_file = max((f.path for f in found if name_counts is None
                                    or name_counts(f.path)), default=None)
                    if top_file is not None:
                        top_file = top_file.rpartition("/")[2]
                        greatest = top_file if greatest is None else max(greatest, top_file)
            has_dirs = False
            for e in subdirs:
                name = e.name or e.path.rstrip("/").rsplit("/", 1)[-1]
                if hidden(name) or not enter(name, recurse):
                    continue
                has_dirs = True
                changed = e.changed if e.changed is not None else e.mtime
                w = changed if w is None else max(w, changed)
                top = "=" in name and at_root
                if at_root and not top:
                    parts = False
                if top:
                    last = name if last is None else max(last, name)
                if lexical_from is not None:
                    if not top or name >= lexical_from:
                        nxt.append(e.path)
                elif (threshold is None or changed > threshold
                        or dir_hash(e.path) in inner_prev):
                    nxt.append(e.path)
            if has_dirs:
                inner.add(dir_hash(d))
                root_dirs = root_dirs or at_root
        level = nxt
    names = [n for n in (greatest, names_from) if n is not None]  # StartAfter: names_from kept
    kept = max(names) if names and file_names and len(roots) == 1 and not root_dirs else None
    if (incremental or lexical_from is not None or names_from is not None) and (
            previous is not None):
        full_ts, runs = previous.full_ts, previous.runs + 1
    else:
        full_ts, runs = listing_ts, 0
    state = ListingState(w=0 if w is None else w, took=took_ms() if took_ms else 0,
                         start=started_ms,
                         full_ts=full_ts, runs=runs,
                         roots=roots_hash(roots if roots_key is None else roots_key),
                         inner=frozenset(inner), last=last,
                         parts=parts and last is not None and len(roots) == 1, name=kept)
    return WalkResult(files=files, dirs_listed=listed, state=state, file_dirs=file_dirs)
