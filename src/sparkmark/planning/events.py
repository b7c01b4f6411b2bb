"""File events as a discovery mode for file sources, as pure functions over plain data.

With ``fileDiscovery=events`` a file source learns of new objects from S3 event notifications
(``ObjectCreated:*``, ``ObjectRemoved:*``) that the bucket sends to an SQS queue
(``queueUrl``), instead of listing its paths every run.  The first run, a run after a switch
from listing, and a run every ``backfillInterval`` list in full (a *backfill*) with the band
algorithm of :mod:`sparkmark.planning.bands`; the runs in between take the objects the queue
names.  The functions here decide; :mod:`sparkmark.sources.file_events` does the I/O.

Exactly once does not rest on the events, only on the element (the band invariant of
:mod:`sparkmark.planning.bands`: every file with ``mtime <= low`` was processed, and
``files`` holds the ones processed above ``low`` with their mtime):

* an event names a key, never a version: the run asks the store for the object's current
  status, so an event that is duplicated, reordered or delayed resolves to what the object is
  *now*; an object gone since reads nothing, an overwritten one is read in its new version;
* an object the element covers (already read, by an event run or by a listing) reads nothing;
* an event run never moves ``low``: it only adds the files it read to ``files``.  So a lost
  event leaves its object uncovered, and the next backfill listing reads it like any new file
  (and then settles ``low``, which bounds ``files`` again);
* an object whose mtime is at or below ``low`` is covered: a late object (§3) is left to the
  backfill listing's ``lateFiles`` rule;
* a message is deleted only when every record in it is settled by the element the run
  commits (read, covered, gone, out of scope), and only after the commit; one that names a
  file left for later (mtime after T, a bound) stays in the queue and comes back.  A run that
  dies between its commit and the deletes leaves messages whose objects are covered: the next
  run receives them again and reads nothing.

Example::

    opts, rest = split_event_options({"fileDiscovery": "events", "queueUrl": url})
    due, why = backfill_due(previous, now_ms, opts)
    paths = wanted_paths(messages, roots_of(["s3a://lake/in"]), BandOptions())
    plan = plan_events(messages, roots, {p: stat(p) for p in paths}, previous, now_ms,
                       BandOptions())
    plan.selected, plan.state, plan.delete
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from sparkmark.core.errors import ConfigError
from sparkmark.planning.event_messages import EventMessage, EventRecord
from sparkmark.planning.bands import (EVENT_OPTION_NAMES, BandOptions, BandState, FileEntry,
                                      excluded, glob_to_regex, path_hash)

#: ``fileDiscovery`` values
DISCOVERY_MODES = ("listing", "events")
#: the default ``backfillInterval``: one day
DEFAULT_BACKFILL_MS = 86_400_000
#: the key under which the element remembers the event mode (``extra["events"]``)
EVENTS_KEY = "events"

_UNITS = {"ms": 1, "s": 1_000, "sec": 1_000, "second": 1_000, "seconds": 1_000,
          "m": 60_000, "min": 60_000, "minute": 60_000, "minutes": 60_000,
          "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
          "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
          "w": 604_800_000, "week": 604_800_000, "weeks": 604_800_000}
_DURATION = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


# ---------------------------------------------------------------------- options
@dataclass(frozen=True)
class EventOptions:
    """The discovery options of a file source.

    ``discovery``: ``listing`` (default) or ``events``; ``queue_url``: the SQS queue that
    receives the bucket's notifications; ``backfill_ms``: how often an event-mode source lists
    in full anyway (``backfillInterval``, default one day).

    Example: ``split_event_options({"fileDiscovery": "events", "queueUrl": url})[0].enabled``
    """

    discovery: str = "listing"
    queue_url: str | None = None
    backfill_ms: int = DEFAULT_BACKFILL_MS

    @property
    def enabled(self) -> bool:
        """Whether the source discovers new objects from events."""
        return self.discovery == "events"


def parse_backfill_interval(raw: Any) -> int:
    """``backfillInterval`` in ms: a duration such as ``"1 day"``, ``"12h"``, ``"30 min"``,
    ``"90s"``, or a whole number of seconds; at least one second.

    >>> parse_backfill_interval("1 day"), parse_backfill_interval("30m"), parse_backfill_interval(90)
    (86400000, 1800000, 90000)
    """
    if raw is None or raw == "":
        return DEFAULT_BACKFILL_MS
    text = str(raw) if not isinstance(raw, bool) else "?"
    m = _DURATION.match(text)
    unit = m.group(2).lower() if m else ""
    if m is None or (unit and unit not in _UNITS):
        raise ConfigError(f"option backfillInterval={raw!r} is not a duration; give a number "
                          "with a unit (e.g. backfillInterval='1 day', '12h', '30 min') or a "
                          "whole number of seconds")
    ms = int(m.group(1)) * (_UNITS[unit] if unit else 1_000)
    if ms < 1_000:
        raise ConfigError(f"option backfillInterval={raw!r} is shorter than one second; a "
                          "backfill lists every object under the paths, give e.g. '1 day'")
    return ms


def check_queue_url(raw: Any) -> str:
    """An SQS queue URL (``https://sqs.<region>.amazonaws.com/<account>/<name>``, or any
    ``http(s)://host[:port]/<account>/<name>`` endpoint that speaks SQS).

    >>> check_queue_url("https://sqs.eu-west-1.amazonaws.com/123456789012/lake-events")
    'https://sqs.eu-west-1.amazonaws.com/123456789012/lake-events'
    """
    text = str(raw or "").strip()
    parts = urlsplit(text)
    segments = [s for s in parts.path.split("/") if s]
    if parts.scheme not in ("http", "https") or not parts.netloc or len(segments) != 2:
        raise ConfigError(
            f"option queueUrl={raw!r} is not an SQS queue URL; give the URL SQS shows for the "
            "queue the bucket notifies, e.g. "
            "https://sqs.us-east-1.amazonaws.com/123456789012/lake-events (docs/object-stores.md)")
    return text


def split_event_options(options: Mapping[str, Any] | None
                        ) -> tuple[EventOptions, dict[str, Any]]:
    """Take ``fileDiscovery``, ``queueUrl`` and ``backfillInterval`` (names matched without
    regard to case) out of a file source's ``options``, validated; the rest is returned as
    given.  One clear :class:`ConfigError` for a bad value or combination.

    >>> opts, rest = split_event_options({"fileDiscovery": "events", "header": "true",
    ...     "queueUrl": "https://sqs.us-east-1.amazonaws.com/1/q", "backfillInterval": "6h"})
    >>> opts.enabled, opts.backfill_ms, rest
    (True, 21600000, {'header': 'true'})
    """
    lower = {n.lower(): n for n in EVENT_OPTION_NAMES}
    mine: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in dict(options or {}).items():
        canon = lower.get(str(key).lower())
        if canon is None:
            rest[key] = value
        else:
            mine[canon] = value
    raw_mode = mine.get("fileDiscovery")
    mode = "listing" if raw_mode is None or raw_mode == "" else str(raw_mode).strip().lower()
    if mode not in DISCOVERY_MODES:
        raise ConfigError(f"option fileDiscovery={raw_mode!r} is not one of "
                          f"{', '.join(DISCOVERY_MODES)}; use fileDiscovery=events with "
                          "queueUrl to take new objects from S3 event notifications")
    if mode == "listing":
        given = [n for n in ("queueUrl", "backfillInterval") if mine.get(n) not in (None, "")]
        if given:
            raise ConfigError(f"option {given[0]} only applies with fileDiscovery=events; add "
                              f"fileDiscovery=events, or drop {given[0]} to list the paths")
        return EventOptions(), rest
    if mine.get("queueUrl") in (None, ""):
        raise ConfigError("option fileDiscovery=events needs queueUrl: the URL of the SQS "
                          "queue the bucket's event notifications go to (docs/object-stores.md "
                          "shows how to set one up)")
    return EventOptions("events", check_queue_url(mine["queueUrl"]),
                        parse_backfill_interval(mine.get("backfillInterval"))), rest


def check_event_paths(paths: Sequence[str], band: BandOptions) -> None:
    """Refuse what events cannot serve: a path that is not on S3 (``s3a:``, ``s3:``,
    ``s3n:``), a glob, ``incrementalListing`` (a backfill lists in full).

    >>> check_event_paths(["s3a://lake/in"], BandOptions())
    """
    for p in paths:
        scheme = p.split("://", 1)[0].lower() if "://" in p else ""
        if scheme not in ("s3a", "s3", "s3n"):
            raise ConfigError(f"fileDiscovery=events needs S3 paths (s3a://bucket/prefix), not "
                              f"{p!r}; list other file systems with fileDiscovery=listing")
        if re.search(r"[*?\[{]", p):
            raise ConfigError(f"fileDiscovery=events takes plain prefixes, not the glob {p!r}; "
                              "give the directory, with exclusions for what to leave out")
    if band.incremental_listing:
        raise ConfigError("fileDiscovery=events lists in full at every backfill; "
                          "incrementalListing does not apply: drop one of the two")


# ---------------------------------------------------------------------- scope
@dataclass(frozen=True)
class EventRoot:
    """A source path as events see it: ``scheme://bucket/prefix`` (``prefix`` without
    slashes at its ends; ``is_file``: the path names one object).

    Example: ``roots_of(["s3a://lake/in/"])[0] == EventRoot("s3a", "lake", "in")``
    """

    scheme: str
    bucket: str
    prefix: str
    is_file: bool = False


def roots_of(paths: Sequence[str], files: Sequence[str] = ()) -> list[EventRoot]:
    """The :class:`EventRoot` of each path (``files``: the paths that name one object).

    >>> roots_of(["s3a://lake/in/"])
    [EventRoot(scheme='s3a', bucket='lake', prefix='in', is_file=False)]
    """
    out = []
    for p in paths:
        scheme, _, rest = p.partition("://")
        bucket, _, prefix = rest.partition("/")
        out.append(EventRoot(scheme, bucket, prefix.strip("/"), p in files))
    return out


def event_path(record: EventRecord, roots: Sequence[EventRoot], band: BandOptions
               ) -> str | None:
    """The path of the object ``record`` names when the source reads it (the same rules as a
    listing: under a root, no hidden ``.x``/``_x`` part, sub-directories only ``key=value``
    ones unless ``recurse``, not excluded); ``None`` when the source would not read it.

    >>> rec = EventRecord("created", "lake", "in/dt=1/a.json")
    >>> event_path(rec, roots_of(["s3a://lake/in"]), BandOptions())
    's3a://lake/in/dt=1/a.json'
    >>> event_path(EventRecord("created", "lake", "in/_tmp/a.json"), roots_of(["s3a://lake/in"]),
    ...            BandOptions()) is None
    True
    """
    if not record.key or record.key.endswith("/"):
        return None
    patterns = [glob_to_regex(g) for g in band.exclusions]
    for root in roots:
        if root.bucket != record.bucket:
            continue
        if root.is_file:
            if record.key == root.prefix:
                return f"{root.scheme}://{root.bucket}/{record.key}"
            continue
        if root.prefix and not record.key.startswith(root.prefix + "/"):
            continue
        rel = record.key[len(root.prefix) + 1:] if root.prefix else record.key
        parts = rel.split("/")
        if any(not part or part[0] in "._" for part in parts):
            continue
        if not band.recurse and any("=" not in d for d in parts[:-1]):
            continue
        path = f"{root.scheme}://{root.bucket}/{record.key}"
        if patterns and excluded(path, rel, patterns):
            continue
        return path
    return None


def wanted_paths(messages: Sequence[EventMessage], roots: Sequence[EventRoot],
                 band: BandOptions) -> list[str]:
    """The distinct paths of the objects created in scope, in the order first named: the
    objects whose current status the run asks the store for.

    >>> from sparkmark.planning.event_messages import parse_body
    >>> m = EventMessage("1", "r", parse_body('{"Records": [{"eventName": "ObjectCreated:Put",'
    ...     '"s3": {"bucket": {"name": "lake"}, "object": {"key": "in/a.json"}}}]}'))
    >>> wanted_paths([m, m], roots_of(["s3a://lake/in"]), BandOptions())
    ['s3a://lake/in/a.json']
    """
    seen: dict[str, None] = {}
    for msg in messages:
        for rec in msg.records:
            if rec.kind == "created":
                path = event_path(rec, roots, band)
                if path is not None:
                    seen.setdefault(path, None)
    return list(seen)


# ---------------------------------------------------------------------- backfill
def backfill_due(previous: BandState | None, listing_ts: int, opts: EventOptions
                 ) -> tuple[bool, str]:
    """Whether an event-mode run lists in full, and why: the first run, the first run after
    listing mode (or with another queue), and once ``backfillInterval`` has passed since the
    last backfill.

    >>> opts = EventOptions("events", "https://sqs.x/1/q", 3_600_000)
    >>> backfill_due(None, 0, opts)
    (True, 'first run')
    >>> st = BandState(low=1, extra={"events": {"backfill_ts": 1_000, "queue": "https://sqs.x/1/q"}})
    >>> backfill_due(st, 2_000, opts), backfill_due(st, 3_601_000, opts)[0]
    ((False, 'events'), True)
    """
    if previous is None or previous.low is None and not previous.files:
        return True, "first run"
    marker = previous.extra.get(EVENTS_KEY)
    if not isinstance(marker, Mapping):
        return True, "switched from listing"
    if marker.get("queue") != opts.queue_url:
        return True, "another queue"
    if marker.get("incomplete"):
        return True, "the last backfill left files for later"
    try:
        last = int(marker.get("backfill_ts"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True, "no backfill recorded"
    if listing_ts - last >= opts.backfill_ms:
        return True, "backfillInterval is due"
    return False, "events"


def with_marker(extra: Mapping[str, Any], opts: EventOptions, backfill_ts: int | None,
                roots: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """``extra`` with the event marker set (``opts.enabled``) or removed (listing mode: a
    later switch back to events lists first).  ``backfill_ts``: this run's T when it listed,
    ``None`` to keep the previous one.  ``roots``: the qualified roots the listing found, each
    ``True`` when it names one object (a file root), ``None`` to keep the previous ones; event
    runs take the roots' kinds from here instead of asking the store (on S3 a directory's
    status is a LIST, :func:`known_roots`).

    >>> with_marker({"events": {"backfill_ts": 1}}, EventOptions(), None)
    {}
    >>> with_marker({}, EventOptions("events", "https://sqs.x/1/q"), 5, {"s3a://lake/in": False})
    {'events': {'backfill_ts': 5, 'queue': 'https://sqs.x/1/q', 'dir_roots': ['s3a://lake/in']}}
    """
    out = {k: v for k, v in extra.items() if k != EVENTS_KEY}
    if not opts.enabled:
        return out
    found = extra.get(EVENTS_KEY)
    previous: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    ts = backfill_ts if backfill_ts is not None else previous.get("backfill_ts")
    marker: dict[str, Any] = {"backfill_ts": ts, "queue": opts.queue_url}
    if roots is None:
        for key in ("dir_roots", "file_roots"):
            if isinstance(previous.get(key), list):
                marker[key] = list(previous[key])
    else:
        dirs = sorted(r for r, is_file in roots.items() if not is_file)
        files = sorted(r for r, is_file in roots.items() if is_file)
        if dirs:
            marker["dir_roots"] = dirs
        if files:
            marker["file_roots"] = files
    out[EVENTS_KEY] = marker
    return out


def known_roots(previous: BandState | None) -> dict[str, bool]:
    """The roots the last backfill listing found (qualified, no trailing slash), each ``True``
    when it names one object: an event run takes a root's kind from here and asks the store
    only for a root not known (the paths changed, or an element from before the roots were
    kept).  So an event run makes no LIST: S3A's status of a directory is one.

    >>> st = BandState(low=1, extra={"events": {"dir_roots": ["s3a://lake/in"]}})
    >>> known_roots(st), known_roots(None)
    ({'s3a://lake/in': False}, {})
    """
    marker = previous.extra.get(EVENTS_KEY) if previous is not None else None
    if not isinstance(marker, Mapping):
        return {}
    out: dict[str, bool] = {}
    for key, is_file in (("dir_roots", False), ("file_roots", True)):
        found = marker.get(key)
        if isinstance(found, list):
            out.update((str(r), is_file) for r in found if isinstance(r, str))
    return out


def after_listing(extra: Mapping[str, Any], opts: EventOptions, listing_ts: int,
                  deferred: int, roots: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """The ``extra`` a listing run commits: in event mode the backfill counts as done at
    ``listing_ts`` only when no bound left files for later (``deferred``); else the marker
    says ``incomplete`` and the next run lists again (the events of the files left behind may
    have been lost).  ``roots``: the listed roots' kinds (:func:`with_marker`).  In listing
    mode the marker goes (:func:`with_marker`).

    >>> opts = EventOptions("events", "https://sqs.x/1/q")
    >>> after_listing({}, opts, 5, 0)["events"]["backfill_ts"], after_listing({}, opts, 5, 2)
    (5, {'events': {'backfill_ts': None, 'queue': 'https://sqs.x/1/q', 'incomplete': True}})
    """
    out = with_marker(extra, opts, listing_ts if not deferred else None, roots)
    if deferred and opts.enabled:
        out[EVENTS_KEY]["incomplete"] = True
    return out


# ---------------------------------------------------------------------- planning
@dataclass(frozen=True)
class EventPlan:
    """What an event run reads and commits, and which messages it deletes after the commit.

    ``selected``: the files read, oldest first; ``state``: the element (``low``/``high``
    unchanged, the files read added to ``files``); ``delete``: the ids of the messages every
    record of which is settled by ``state``; ``keep``: the others (they come back).  Counts
    are of records: ``taken`` (led to a file read), ``ignored`` (read nothing: a duplicate,
    covered, gone, out of scope, a removal, a test event), ``kept`` (a file left for later).

    Example: ``plan = plan_events(msgs, roots, current, previous, T); plan.info()``
    """

    selected: tuple[FileEntry, ...]
    state: BandState
    delete: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    records: int = 0
    taken: int = 0
    ignored: int = 0
    kept: int = 0
    covered: int = 0
    waiting: int = 0
    deferred: int = 0
    stopped_by: str | None = None
    why_ignored: Mapping[str, int] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        """The ledger's per-source fields of an event run.

        Example: ``plan.info()["events_taken"]``
        """
        return {"files": len(self.selected), "events": self.records,
                "events_taken": self.taken, "events_ignored": self.ignored,
                "events_kept": self.kept, "events_ignored_why": dict(self.why_ignored),
                "messages": len(self.delete) + len(self.keep),
                "messages_to_delete": len(self.delete), "waiting": self.waiting,
                "deferred": self.deferred, "stopped_by": self.stopped_by,
                "low": self.state.low, "high": self.state.high,
                "band_files": len(self.state.files)}


def _bounded(candidates: list[FileEntry], band: BandOptions) -> tuple[int, str | None]:
    limit, stopped = len(candidates), None
    if band.bounded_files is not None and band.bounded_files < limit:
        limit, stopped = band.bounded_files, "boundedFiles"
    if band.bounded_size is not None:
        total = 0
        for i, f in enumerate(candidates[:limit]):
            total += f.size
            if i > 0 and total > band.bounded_size:
                return i, "boundedSize"
    return limit, stopped


def plan_events(messages: Sequence[EventMessage], roots: Sequence[EventRoot],
                current: Mapping[str, FileEntry | None], previous: BandState, listing_ts: int,
                band: BandOptions = BandOptions()) -> EventPlan:
    """Plan an event run (see the module docstring).  ``current``: each wanted path's status
    now (``None``: the object is gone); ``previous``: the committed element; ``listing_ts``:
    the run's T (an object stamped after it waits, its message kept).

    >>> from sparkmark.planning.event_messages import parse_body
    >>> msg = EventMessage("1", "r", parse_body('{"Records": [{"eventName": '
    ...     '"ObjectCreated:Put", "s3": {"bucket": {"name": "lake"}, "object": {"key": "in/a"}}}]}'))
    >>> a = FileEntry(50, "s3a://lake/in/a", 3)
    >>> plan = plan_events([msg, msg], roots_of(["s3a://lake/in"]), {a.path: a},
    ...                    BandState(low=10, high=10), 100)
    >>> [f.path for f in plan.selected], plan.taken, plan.ignored, plan.delete
    (['s3a://lake/in/a'], 1, 1, ('1', '1'))
    """
    T = int(listing_ts)
    why: dict[str, int] = {}

    def ignore(reason: str) -> None:
        why[reason] = why.get(reason, 0) + 1

    # each record: its path when it names a file this run may read, else why it reads nothing
    per_message: list[tuple[EventMessage, list[str | None]]] = []
    candidates: dict[str, FileEntry] = {}
    records = covered = 0
    for msg in messages:
        paths: list[str | None] = []
        for rec in msg.records:
            records += 1
            path = event_path(rec, roots, band) if rec.kind == "created" else None
            if path is None:
                ignore({"created": "outside the paths", "removed": "removed",
                        "test": "test event"}.get(rec.kind, "not an object event"))
                paths.append(None)
                continue
            entry = current.get(path)
            if entry is None:
                ignore("gone")
                paths.append(None)
                continue
            if previous.covers(entry):
                ignore("already read")
                covered += 1
                paths.append(None)
                continue
            candidates[path] = entry
            paths.append(path)
        per_message.append((msg, paths))
    ready = sorted(f for f in candidates.values() if f.mtime <= T)
    waiting = len(candidates) - len(ready)
    limit, stopped = _bounded(ready, band)
    taken = ready[:limit]
    taken_set = set(taken)
    read = {p for p, f in candidates.items() if f in taken_set}  # by the path events give
    files = dict(previous.files)
    for f in taken:
        files[path_hash(f.path)] = f.mtime
    delete: list[str] = []
    keep: list[str] = []
    n_taken = n_kept = 0
    counted: set[str] = set()
    for msg, paths in per_message:
        left = False
        for path in paths:
            if path is None:
                continue
            if path in read:
                if path in counted:
                    ignore("duplicate")
                else:
                    counted.add(path)
                    n_taken += 1
            else:
                left = True
                n_kept += 1
        (keep if left else delete).append(msg.id)
    state = BandState(low=previous.low, high=previous.high, listing_ts=previous.listing_ts,
                      band=previous.band, files=files, extra=dict(previous.extra))
    return EventPlan(selected=tuple(taken), state=state, delete=tuple(delete), keep=tuple(keep),
                     records=records, taken=n_taken, ignored=sum(why.values()), kept=n_kept,
                     covered=covered, waiting=waiting, deferred=len(ready) - len(taken),
                     stopped_by=stopped, why_ignored=why)


def settled_by_listing(messages: Sequence[EventMessage], roots: Sequence[EventRoot],
                       listed: Mapping[str, FileEntry], state: BandState,
                       band: BandOptions = BandOptions()) -> tuple[tuple[str, ...],
                                                                   tuple[str, ...]]:
    """``(delete, keep)``: of the messages received *before* a backfill listing, those every
    record of which the committed ``state`` settles: the object listed and covered, not listed
    (gone since), or out of scope.  ``listed``: the listing by path.

    >>> from sparkmark.planning.event_messages import parse_body
    >>> m = EventMessage("1", "r", parse_body('{"Records": [{"eventName": "ObjectCreated:Put",'
    ...     '"s3": {"bucket": {"name": "lake"}, "object": {"key": "in/a"}}}]}'))
    >>> a = FileEntry(50, "s3a://lake/in/a", 3)
    >>> settled_by_listing([m], roots_of(["s3a://lake/in"]), {a.path: a}, BandState(low=60))
    (('1',), ())
    """
    delete: list[str] = []
    keep: list[str] = []
    for msg in messages:
        left = False
        for rec in msg.records:
            path = event_path(rec, roots, band) if rec.kind == "created" else None
            entry = listed.get(path) if path is not None else None
            if entry is not None and not state.covers(entry):
                left = True
        (keep if left else delete).append(msg.id)
    return tuple(delete), tuple(keep)
