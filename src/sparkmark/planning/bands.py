"""The band algorithm for file sources, as pure functions over plain data.

This is AWS Glue's "Tracking Files Using Modification Timestamps": a run that lists its input at
time ``T`` reads the files with ``low < mtime <= T`` that it has not read before, where ``low`` is
the previous run's high timestamp minus the band ``dt`` (``maxBand``).  Files whose mtime lies
inside the band, ``(T - dt, T]``, may still show up late in a listing (eventual consistency, slow
writers), so the state also keeps the *files* processed inside that band, as a path hash and the
mtime they had.  A file in that list is not read again; a file whose mtime changed is (a modified
file is reprocessed); a file with ``mtime > T`` waits for a later run.

The state element is stated as an invariant, which makes bounded runs and ties easy to get right:

* ``low``: every file with ``mtime <= low`` has been processed (the "consistent" range);
* ``files``: ``{path_hash: mtime}`` of the files processed with ``mtime > low``.

A file is *covered* by a state when ``mtime <= low`` or ``files[hash(path)] == mtime``.  A run
reads the files with ``mtime <= T`` that are not covered, oldest first.  After a run that read
everything it was allowed to, ``low = T - dt``, which is Glue's rule and keeps ``files`` bounded by
one band.  When a bound (``boundedFiles``, ``boundedSize``, ``maxFilesInBand``) stops the run at
the first file left behind, with mtime ``m``, ``low`` stops at ``min(m - 1, T - dt)``: everything
older than ``m`` was read, the files that share ``m`` and were read are in ``files``, and the ones
that were not are read by the next run.  ``low`` never moves backwards, even when the clock does.

Nothing here touches Spark, a file system or a database: :func:`plan_band` takes the listing,
the previous element, ``T`` and the options, and returns the files to read plus the next element.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.planning.filecolumns import FileColumns, total_size
from sparkmark.planning.listing import FileEntry, FullInterval, parse_interval
from sparkmark.planning.option_names import refuse_near_miss
from sparkmark.planning.rewrites import modified_mode

DEFAULT_MAX_BAND_MS = 900_000
STATE_KIND = "files"
STATE_VERSION = 1

#: Glue's bookmark options for file sources (the rest of ``options`` goes to Spark's reader).
BOOKMARK_OPTION_NAMES = ("maxBand", "maxFilesInBand", "boundedFiles", "boundedSize",
                         "exclusions", "recurse", "lateFiles", "incrementalListing",
                         "fullListingInterval", "onModified", "lexicalFileNames")
#: how a file source discovers new input (:mod:`sparkmark.planning.events`)
EVENT_OPTION_NAMES = ("fileDiscovery", "queueUrl", "backfillInterval")
#: every option name a file source takes itself (the band's, the drift handling's, discovery's)
OWN_OPTION_NAMES = BOOKMARK_OPTION_NAMES + ("schemaEvolution",) + EVENT_OPTION_NAMES


# ---------------------------------------------------------------------- data
@dataclass(frozen=True)
class BandOptions:
    max_band: int = DEFAULT_MAX_BAND_MS
    max_files_in_band: int | None = None
    bounded_files: int | None = None
    bounded_size: int | None = None
    exclusions: tuple[str, ...] = ()
    recurse: bool = False
    late_files: str = "warn"                 # warn | read | fail | ignore (see latefiles.py)
    incremental_listing: bool = False
    lexical_file_names: bool = False         # flat object-store prefixes: StartAfter a name
    full_listing_interval: FullInterval = field(default_factory=lambda: parse_interval(None))
    on_modified: str = "reprocess"           # reprocess | ignore | fail (see rewrites.py)

    @property
    def bounded(self) -> bool:
        return self.bounded_files is not None or self.bounded_size is not None


@dataclass(frozen=True)
class BandState:
    """A file source's state element (see the module docstring for the invariant)."""

    low: int | None = None           # None: nothing processed yet
    high: int | None = None          # every file with mtime <= high (seen at T) was processed
    listing_ts: int | None = None    # T of the run that committed this element
    band: int = DEFAULT_MAX_BAND_MS  # dt used by that run
    files: Mapping[str, int] = field(default_factory=dict)  # path hash -> mtime, mtime > low
    extra: Mapping[str, Any] = field(default_factory=dict)  # kept as is (e.g. the schema)

    def covers(self, entry: FileEntry, key: str | None = None) -> bool:
        """Whether the file (with this mtime) was processed according to this state."""
        if self.low is not None and entry.mtime <= self.low:
            return True
        return self.files.get(key or path_hash(entry.path)) == entry.mtime

    def to_element(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": STATE_KIND, "v": STATE_VERSION, "low": self.low,
                               "high": self.high, "listing_ts": self.listing_ts,
                               "band": self.band, "files": dict(sorted(self.files.items()))}
        out.update(self.extra)
        return out

    @classmethod
    def from_element(cls, element: Mapping[str, Any] | None) -> "BandState | None":
        """Decode a stored element; ``None`` stays ``None`` (nothing processed yet)."""
        if element is None:
            return None
        if not isinstance(element, Mapping):
            raise ConfigError(
                f"the stored bookmark element is not a file-source element ({element!r}); "
                "was this transformation_ctx used by another kind of source? Use a new "
                "transformation_ctx or 'sparkmark bookmark reset' the job")
        if element.get("kind", STATE_KIND) != STATE_KIND:
            raise ConfigError(
                f"the stored bookmark element belongs to a {element.get('kind')!r} source, not a "
                "file source; give this read its own transformation_ctx or reset the bookmark")
        try:
            files = {str(k): int(v) for k, v in dict(element.get("files") or {}).items()}
            low = element.get("low")
            high = element.get("high")
            ts = element.get("listing_ts")
            extra = {k: v for k, v in element.items()
                     if k not in ("kind", "v", "low", "high", "listing_ts", "band", "files")}
            return cls(low=None if low is None else int(low),
                       high=None if high is None else int(high),
                       listing_ts=None if ts is None else int(ts),
                       band=int(element.get("band", DEFAULT_MAX_BAND_MS)), files=files,
                       extra=extra)
        except (TypeError, ValueError, AttributeError) as e:
            raise ConfigError(f"the stored file-source bookmark element cannot be decoded ({e}); "
                              "reset the job's bookmark with 'sparkmark bookmark reset'") from None


@dataclass(frozen=True)
class Plan:
    """What a run reads, and the element it commits."""

    selected: Sequence[FileEntry]     # oldest first (a view of the listing's columns)
    state: BandState
    eligible: int = 0                 # files the run could have read (before bounds)
    deferred: int = 0                 # eligible files left to later runs by a bound or the cap
    waiting: int = 0                  # new files with mtime > T (clock skew, still written)
    stopped_by: str | None = None     # which bound stopped the run, if any

    def info(self) -> dict[str, Any]:
        return {"files": len(self.selected), "bytes": total_size(self.selected),
                "eligible": self.eligible, "deferred": self.deferred, "waiting": self.waiting,
                "stopped_by": self.stopped_by, "low": self.state.low, "high": self.state.high,
                "band_files": len(self.state.files)}


# ---------------------------------------------------------------------- helpers
def path_hash(path: str) -> str:
    """A short, stable hash of a file's fully qualified path (64 bits, hex)."""
    return hashlib.sha1(path.encode("utf-8")).hexdigest()[:16]


def _int_option(options: Mapping[str, Any], name: str, *, minimum: int) -> int | None:
    if name not in options or options[name] is None:
        return None
    raw = options[name]
    try:
        if isinstance(raw, bool):
            raise ValueError
        if isinstance(raw, float):
            if not raw.is_integer():
                raise ValueError
            value = int(raw)
        else:
            value = int(str(raw).strip())
    except (TypeError, ValueError):
        raise ConfigError(f"option {name}={raw!r} is not an integer; give a whole number "
                          f"(at least {minimum})") from None
    if value < minimum:
        raise ConfigError(f"option {name}={value} is too small; it must be at least {minimum}")
    return value


def _bool_option(options: Mapping[str, Any], name: str, default: bool) -> bool:
    if name not in options or options[name] is None:
        return default
    raw = options[name]
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ConfigError(f"option {name}={raw!r} is not a boolean; use true or false")


def parse_exclusions(raw: Any) -> tuple[str, ...]:
    """Glue's ``exclusions``: a JSON list of Unix-style globs (a Python list is accepted too)."""
    if raw is None or raw == "":
        return ()
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ConfigError(
                f"option exclusions={raw!r} is not valid JSON ({e.msg}); give a JSON list of "
                'globs, e.g. exclusions=\'["**.tmp", "logs/**"]\'') from None
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"option exclusions must be a JSON list of globs, not "
                          f"{type(value).__name__} ({raw!r}); e.g. '[\"**.tmp\"]'")
    out = []
    for item in value:
        if not isinstance(item, str) or not item:
            raise ConfigError(f"option exclusions contains {item!r}; every item must be a "
                              "non-empty glob string such as \"**.tmp\"")
        glob_to_regex(item)  # validates
        out.append(item)
    return tuple(out)


def glob_to_regex(glob: str) -> "re.Pattern[str]":
    """Translate a Unix glob to a regex: ``**`` crosses ``/``, ``*`` and ``?`` do not,
    ``[...]`` is a character class (``[!...]`` negated), ``{a,b}`` alternatives."""
    i, n, out, depth = 0, len(glob), [], 0
    while i < n:
        c = glob[i]
        if c == "*":
            if i + 1 < n and glob[i + 1] == "*":
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                raise ConfigError(f"exclusion glob {glob!r} has a '[' without a closing ']'; "
                                  "close the character class or escape it as \\[")
            body = glob[i + 1:j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        elif c == "]" or c == "}":
            raise ConfigError(f"exclusion glob {glob!r} has an unmatched {c!r}; remove it or "
                              f"escape it as \\{c}")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise ConfigError(f"exclusion glob {glob!r} has a '{{' without a closing '}}'; "
                          "close the alternatives, e.g. {a,b}")
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error as e:
        raise ConfigError(f"exclusion glob {glob!r} is malformed ({e}); fix the pattern") from None


def excluded(path: str, relative: str, patterns: Sequence["re.Pattern[str]"]) -> bool:
    """Whether a file matches an exclusion, by its path relative to the root or its full path."""
    return any(p.match(relative) or p.match(path) for p in patterns)


#: values of the ``lateFiles`` option (see latefiles.py)
LATE_MODES = ("warn", "read", "fail", "ignore")


def late_mode(raw: Any) -> str:
    """Validate the ``lateFiles`` option (``warn`` when not given).

    Example: ``late_mode("READ") == "read"``
    """
    if raw is None or raw == "":
        return "warn"
    value = str(raw).strip().lower()
    if value not in LATE_MODES:
        raise ConfigError(f"option lateFiles={raw!r} is not one of {', '.join(LATE_MODES)}; "
                          "e.g. lateFiles=warn (report them) or lateFiles=read (read them once)")
    return value


def split_options(options: Mapping[str, Any] | None) -> tuple[BandOptions, dict[str, Any]]:
    """Separate Glue's bookmark options (validated) from the reader options for Spark.

    A name close to one of sparkmark's own (``incrementalListings``, ``lateFile``) that Spark's
    readers do not know is refused with a did-you-mean: Spark would ignore it silently.
    """
    options = dict(options or {})
    lower = {k.lower(): k for k in BOOKMARK_OPTION_NAMES}
    bm: dict[str, Any] = {}
    reader: dict[str, Any] = {}
    for key, value in options.items():
        canon = lower.get(str(key).lower())
        if canon is None:
            refuse_near_miss(str(key), OWN_OPTION_NAMES)
            reader[str(key)] = value
        else:
            bm[canon] = value
    max_band = _int_option(bm, "maxBand", minimum=0)
    bounded_files = _int_option(bm, "boundedFiles", minimum=1)
    bounded_size = _int_option(bm, "boundedSize", minimum=1)
    if bounded_files is not None and bounded_size is not None:
        raise ConfigError("options boundedFiles and boundedSize were both given; Glue allows one "
                          "bound per source: keep boundedFiles (a number of files) or "
                          "boundedSize (bytes)")
    incremental_listing = _bool_option(bm, "incrementalListing", False)
    lexical_file_names = _bool_option(bm, "lexicalFileNames", False)
    if lexical_file_names and not incremental_listing:
        raise ConfigError("option lexicalFileNames=true needs incrementalListing=true (it makes "
                          "an incremental listing of a flat object-store prefix list only the "
                          "file names after the greatest one seen); add incrementalListing=true "
                          "or drop lexicalFileNames")
    opts = BandOptions(
        max_band=DEFAULT_MAX_BAND_MS if max_band is None else max_band,
        max_files_in_band=_int_option(bm, "maxFilesInBand", minimum=1),
        bounded_files=bounded_files, bounded_size=bounded_size,
        exclusions=parse_exclusions(bm.get("exclusions")),
        recurse=_bool_option(bm, "recurse", False),
        late_files=late_mode(bm.get("lateFiles")),
        incremental_listing=incremental_listing, lexical_file_names=lexical_file_names,
        full_listing_interval=parse_interval(bm.get("fullListingInterval")),
        on_modified=modified_mode(bm.get("onModified")))
    return opts, reader


# ---------------------------------------------------------------------- planning
def plan_band(listing: Iterable[FileEntry], previous: BandState | None, listing_ts: int,
              options: BandOptions = BandOptions()) -> Plan:
    """Choose the files a run at listing time ``listing_ts`` reads, and the next state.

    ``listing``: every file visible now (after exclusions): a :class:`FileColumns` (as the
    listers make it) or any iterable of FileEntry.  ``previous``: the committed state
    (``None`` on a first run or after a reset: everything up to ``T`` is read).  The plan's
    ``selected`` is a view of the listing's columns, oldest first (sorted FileEntry order).

    The selection works on the mtime column; paths are made and hashed only where the state
    needs them (a file against the band's ``files``, ``maxFilesInBand``, the files the next
    state keeps), so a first run over a million files hashes a band's worth, not a million.
    """
    np = _np()
    T = int(listing_ts)
    dt = int(options.max_band)
    prev_low = previous.low if previous is not None else None
    prev_files: dict[str, int] = dict(previous.files) if previous is not None else {}
    files = FileColumns.of(listing)
    m = files.mtimes_np()
    # The driver's clock alone must not settle anything: a clock that runs ahead would move
    # ``low`` past files the storage stamps later.  The state's T is bounded by what the file
    # system shows: at most the newest listed mtime + dt - 1, so low = T_state - dt stays below
    # every file written from now on (docs/files.md, "Clocks").  Selection still uses T.
    newest = int(m.max()) if len(m) else None
    T_state = T if newest is None else min(T, newest + dt - 1)
    band_start = T_state - dt
    if newest is None:  # nothing listed: nothing the file system shows settles anything
        state = BandState(low=prev_low, high=previous.high if previous is not None else None,
                          listing_ts=T, band=dt, files=prev_files,
                          extra=dict(previous.extra) if previous is not None else {})
        return Plan(selected=(), state=state, eligible=0, deferred=0, waiting=0)

    # settled files (mtime <= prev_low) are not even hashed, so a big old directory costs little
    unsettled = np.ones(len(m), dtype=bool) if prev_low is None else m > prev_low
    if prev_files:  # in the band's files with the same mtime: read already
        at = np.flatnonzero(unsettled)
        unsettled[at[_in_band(files.take(at), prev_files)]] = False
    waiting = int((unsettled & (m > T)).sum())
    candidates = files.where(unsettled & (m <= T)).in_order()  # oldest first: (mtime, path)
    cm = candidates.mtimes_np()

    # where a bound stops the run: the first candidate it leaves behind (files before size
    # before maxFilesInBand, as one loop over the candidates would check them)
    limit, stopped_by = len(candidates), None
    if options.bounded_files is not None and options.bounded_files < limit:
        limit, stopped_by = options.bounded_files, "boundedFiles"
    if options.bounded_size is not None and limit > 1:
        over = np.flatnonzero(np.cumsum(candidates.sizes_np()[:limit])[1:] > options.bounded_size)
        if len(over):  # (the first file is read whatever its size)
            limit, stopped_by = int(over[0]) + 1, "boundedSize"
    cap = options.max_files_in_band
    if cap is not None:
        # files already saved inside the new band count against maxFilesInBand; the candidates
        # inside the band are the newest, a suffix of the sorted candidates
        in_band = {k for k, mt in prev_files.items() if mt > band_start}
        first = int(np.searchsorted(cm[:limit], band_start, side="right"))
        for j, path in enumerate(candidates.paths(first, limit), first):
            key = path_hash(path)
            if key not in in_band and len(in_band) >= cap:
                limit, stopped_by = j, "maxFilesInBand"
                break
            in_band.add(key)
    taken = candidates[:limit]

    if limit == len(candidates):
        high = T_state
        low_candidate = band_start
    else:
        cut = int(cm[limit])   # oldest file left behind
        high = cut - 1
        low_candidate = min(cut - 1, band_start)
    low = low_candidate if prev_low is None else max(prev_low, low_candidate)
    high = max(high, low)  # everything up to low is settled too (the clock may have gone back)

    files_state = {k: mt for k, mt in prev_files.items() if mt > low}
    tm = cm[:limit]
    below = int(np.searchsorted(tm, low, side="right"))  # taken files with mtime <= low
    if files_state and below:  # an older version of such a path inside the band: forgotten
        for path in taken.paths(0, below):
            files_state.pop(path_hash(path), None)
    for path, mt in zip(taken.paths(below), tm[below:].tolist()):
        files_state[path_hash(path)] = mt
    extra = dict(previous.extra) if previous is not None else {}
    state = BandState(low=low, high=high, listing_ts=T, band=dt, files=files_state, extra=extra)
    return Plan(selected=taken, state=state, eligible=len(candidates),
                deferred=len(candidates) - len(taken), waiting=waiting, stopped_by=stopped_by)


def _in_band(files: FileColumns, band: Mapping[str, int]) -> Any:
    """Which of ``files`` the band's ``files`` hold with their mtime (a bool array)."""
    np = _np()
    get = band.get
    return np.fromiter((get(path_hash(p)) == mt for p, mt in
                        zip(files.paths(), files.mtimes_np().tolist())), dtype=bool,
                       count=len(files))


def _np() -> Any:
    import numpy as np
    return np


def plan_replay(listing: Iterable[FileEntry], previous: BandState | None,
                upper: BandState | None) -> tuple[FileEntry, ...]:
    """Pause with from/to: the files that the runs after ``from`` up to ``to`` processed.

    ``previous`` is the element committed by ``from`` and ``upper`` the one committed by ``to``:
    a file is selected when ``upper`` covers it and ``previous`` does not.  ``upper`` of
    ``None`` (``to`` committed nothing for this source) selects nothing.
    """
    if upper is None:
        return ()
    out = []
    for entry in listing:
        key = path_hash(entry.path)
        if upper.covers(entry, key) and not (previous is not None and previous.covers(entry, key)):
            out.append(entry)
    return tuple(sorted(out))


def plan_all(listing: Iterable[FileEntry]) -> Sequence[FileEntry]:
    """Bookmarks disabled, or no transformation_ctx: every file present, oldest first (a
    view of the listing's columns).

    >>> [f.path for f in plan_all([FileEntry(7, "b"), FileEntry(5, "a")])]
    ['a', 'b']
    """
    return FileColumns.of(listing).in_order()
