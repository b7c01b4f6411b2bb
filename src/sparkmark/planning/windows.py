"""Pipeline planning, pure: module order, time windows, dependency gating, rollback cuts.

Plain functions over plain data (ints in epoch milliseconds UTC, dicts, tuples): no Spark, no
database.  ``sparkmark.lifecycle.pipeline`` drives them; ``tests/test_windows.py`` checks them exhaustively
over small cases and against a reference model.

Window rules
    A module's window is half-open ``[from, until)``.  ``from`` is the ``until`` of the module's
    latest SUCCEEDED/EMPTY run (the primordial start for a first run).  ``until`` is
    ``min(from + max_load, snapshot, until of every dependency after this run's progress)``.
    A dependency that never progressed counts as being at the primordial start.  ``until <= from``
    means *no progress*: the run is EMPTY and its ``until`` is recorded equal to its ``from``.

Gating
    A module is SKIPPED when a dependency FAILED or was SKIPPED in this run, or -- for a
    dependency that did not run in this run -- when that dependency's latest attempt failed.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone as dt_timezone
from typing import AbstractSet, Any, Callable, Iterable, Mapping, Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sparkmark.core.errors import PipelineError
from sparkmark.core.status import RunStatus

DAY_MS = 86_400_000
MIN_EPOCH_MS = 100_000_000_000   # 1973-03-03: smaller ints given as times look like seconds

# Ledger statuses (sparkmark.core.status is pure too: plain enums).
SUCCEEDED = RunStatus.SUCCEEDED
EMPTY = RunStatus.EMPTY
FAILED = RunStatus.FAILED
SKIPPED = RunStatus.SKIPPED
ROLLED_BACK = RunStatus.ROLLED_BACK
PROGRESS_STATUSES = RunStatus.progress()

# Step actions
RUN = "run"          # call the module for its window
NO_PROGRESS = "empty"  # from == until (or until < from): EMPTY without calling the module
SKIP = "skip"        # a dependency failed: SKIPPED, no progress

ModuleId = Any  # any hashable id; pipelines use ints


# ---------------------------------------------------------------------- time zones and dates
def get_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; a clear error if unknown."""
    if not isinstance(name, str) or not name.strip():
        raise PipelineError("timezone must be an IANA name such as 'UTC' or 'Europe/Paris'")
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise PipelineError(f"unknown timezone {name!r}; use an IANA name such as 'UTC' or "
                            "'Europe/Paris'") from None


def day_start(ts_ms: int, tz: str = "UTC") -> int:
    """Epoch ms of the start (00:00) of the day containing ``ts_ms`` in time zone ``tz``."""
    zone = get_zone(tz)
    local = datetime.fromtimestamp(ts_ms / 1000, tz=zone)
    midnight = datetime(local.year, local.month, local.day, tzinfo=zone)
    return _to_ms(midnight)


def add_days(ts_ms: int, days: int, tz: str = "UTC") -> int:
    """``ts_ms`` moved by ``days`` calendar days in ``tz``: the same wall-clock time that many
    days later (local midnight stays local midnight across DST changes).

    >>> ny = "America/New_York"
    >>> add_days(parse_time("2024-03-09", ny), 1, ny) == parse_time("2024-03-10", ny)
    True
    """
    zone = get_zone(tz)
    local = datetime.fromtimestamp(ts_ms // 1000, tz=zone)
    wall = local.replace(tzinfo=None) + timedelta(days=days)
    return _to_ms(wall.replace(tzinfo=zone)) + ts_ms % 1000


def local_midnight(d: date, tz: str = "UTC") -> int:
    """Epoch ms of 00:00 on date ``d`` in ``tz``."""
    return _to_ms(datetime(d.year, d.month, d.day, tzinfo=get_zone(tz)))


def _to_ms(dt: datetime) -> int:
    delta = dt.astimezone(dt_timezone.utc) - datetime(1970, 1, 1, tzinfo=dt_timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def parse_time(value: Any, tz: str = "UTC", *, what: str = "date") -> int:
    """A date or time given by a user -> epoch ms.

    Accepts ``"YYYY-MM-DD"`` (the start of that day in ``tz``), an ISO date-time
    (``"2021-01-31T12:00"``, in ``tz`` unless it carries an offset), a ``date``/``datetime``
    object, or an int (epoch ms, from 1973-03-03 on: a smaller number looks like epoch
    *seconds* and is refused).  Anything else is a :class:`PipelineError`.
    """
    zone = get_zone(tz)
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, int):
        if abs(value) < MIN_EPOCH_MS:
            raise PipelineError(
                f"bad {what} {value!r}: a number is read as epoch milliseconds, and this one is "
                "before 1973 - it looks like epoch seconds; multiply by 1000 or give "
                "YYYY-MM-DD")
        return value
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=zone)
        return _to_ms(dt)
    if isinstance(value, date):
        return _to_ms(datetime(value.year, value.month, value.day, tzinfo=zone))
    if isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:
                d = date.fromisoformat(text)
                return _to_ms(datetime(d.year, d.month, d.day, tzinfo=zone))
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return _to_ms(dt if dt.tzinfo else dt.replace(tzinfo=zone))
    raise PipelineError(f"bad {what} {value!r}: use YYYY-MM-DD (e.g. 2020-12-31) or an ISO "
                        "date-time such as 2020-12-31T06:00:00+00:00")


def primordial_start(primordial_date: Any, *, snapshot_ts: int, max_days: int,
                     tz: str = "UTC") -> int:
    """Start of the primordial date in ``tz``; default: local midnight ``max_days`` calendar
    days before the snapshot's day (in ``tz``)."""
    if primordial_date is None:
        zone = get_zone(tz)
        today = datetime.fromtimestamp(snapshot_ts // 1000, tz=zone).date()
        return local_midnight(today - timedelta(days=max_days), tz)
    return parse_time(primordial_date, tz, what="primordial_date")


# ---------------------------------------------------------------------- module graph
def topo_order(graph: Mapping[ModuleId, Sequence[ModuleId]],
               key=lambda m: m) -> list[ModuleId]:
    """Modules in dependency order (ties broken by ``key``, default the id itself).

    ``graph`` maps a module id to the ids it depends on.  Unknown dependency ids and cycles are
    a :class:`PipelineError` that names them.
    """
    unknown = sorted({(m, d) for m, deps in graph.items() for d in deps if d not in graph},
                     key=lambda p: (str(p[0]), str(p[1])))
    if unknown:
        listed = ", ".join(f"{m} -> {d}" for m, d in unknown)
        raise PipelineError(f"unknown dependency id(s): {listed}; declare those modules or fix "
                            "depends_on")
    indegree = {m: len(set(deps)) for m, deps in graph.items()}
    users: dict[ModuleId, list[ModuleId]] = {m: [] for m in graph}
    for m, deps in graph.items():
        for d in set(deps):
            users[d].append(m)
    heap = [(key(m), i, m) for i, m in enumerate(graph) if indegree[m] == 0]
    heapq.heapify(heap)
    order: list[ModuleId] = []
    counter = len(graph)
    while heap:
        _, _, m = heapq.heappop(heap)
        order.append(m)
        for u in users[m]:
            indegree[u] -= 1
            if indegree[u] == 0:
                counter += 1
                heapq.heappush(heap, (key(u), counter, u))
    if len(order) != len(graph):
        cycle = find_cycle({m: deps for m, deps in graph.items() if m not in set(order)})
        raise PipelineError("dependency cycle: " + " -> ".join(str(m) for m in cycle)
                            + "; remove one of these depends_on links")
    return order


def find_cycle(graph: Mapping[ModuleId, Sequence[ModuleId]]) -> list[ModuleId]:
    """One cycle (first node repeated at the end) of a graph in which every node is on or
    behind a cycle.  Empty list when there is none."""
    for start in graph:
        path: list[ModuleId] = []
        seen: dict[ModuleId, int] = {}
        node = start
        while node not in seen:
            seen[node] = len(path)
            path.append(node)
            nxt = [d for d in graph.get(node, ()) if d in graph]
            if not nxt:
                break
            node = nxt[0]
        else:
            return path[seen[node]:] + [node]
    return []


def select_modules(layers_of: Mapping[ModuleId, str], layers: Iterable[str] | None = None,
                   modules: Iterable[ModuleId] | None = None) -> set[ModuleId]:
    """Which modules a run covers: all by default, else those in ``layers`` plus ``modules``."""
    layers = None if layers is None else list(layers)
    modules = None if modules is None else list(modules)
    if layers is None and modules is None:
        return set(layers_of)
    known_layers = sorted({lay for lay in layers_of.values()})
    bad_layers = [lay for lay in (layers or []) if lay not in known_layers]
    if bad_layers:
        raise PipelineError(f"unknown layer(s) {', '.join(map(str, bad_layers))}; this pipeline "
                            f"has layers {', '.join(known_layers)}")
    bad_modules = [m for m in (modules or []) if m not in layers_of]
    if bad_modules:
        raise PipelineError(
            f"unknown module id(s) {', '.join(map(str, bad_modules))}; this pipeline has modules "
            f"{', '.join(str(m) for m in sorted(layers_of, key=str))}")
    chosen = {m for m, lay in layers_of.items() if lay in set(layers or [])}
    chosen |= set(modules or [])
    if not chosen:
        raise PipelineError("the selection is empty: give at least one layer or module id")
    return chosen


# ---------------------------------------------------------------------- windows and gating
@dataclass(frozen=True)
class Window:
    from_ts: int
    until_ts: int

    @property
    def progress(self) -> bool:
        return self.until_ts > self.from_ts


def plan_window(*, last_until: int | None, primordial_ts: int, snapshot_ts: int,
                max_load_ms: int, dep_untils: Iterable[int] = (), max_days: int | None = None,
                tz: str = "UTC") -> Window:
    """The module's window ``[from, until)``; ``until == from`` when it cannot progress.

    The load limit is ``max_days`` calendar days in ``tz`` when given (so chunk boundaries stay
    on local midnight across DST changes), else ``max_load_ms``.
    """
    start = primordial_ts if last_until is None else last_until
    limit = add_days(start, max_days, tz) if max_days is not None else start + max_load_ms
    until = min([limit, snapshot_ts, *dep_untils])
    return Window(start, max(until, start))


def blocked_by(deps: Sequence[ModuleId], ran_now: Mapping[ModuleId, str],
               failed_before: AbstractSet[ModuleId]) -> list[ModuleId]:
    """The dependencies that make a module SKIPPED (empty: it may run)."""
    out = []
    for d in deps:
        if d in ran_now:
            if ran_now[d] in (FAILED, SKIPPED):
                out.append(d)
        elif d in failed_before:
            out.append(d)
    return out


@dataclass(frozen=True)
class Step:
    module: ModuleId
    action: str                       # RUN | NO_PROGRESS | SKIP
    window: Window
    blocked_by: tuple = ()


@dataclass
class RunPlanner:
    """Plans one pipeline run module by module, as outcomes come in.

    ``progress``: each module's current ``until`` (``None``: never progressed).
    ``failed_before``: modules whose latest attempt failed (before this run).
    Call :meth:`step` for each selected module in dependency order, then :meth:`record` with
    the module's final status.
    """

    graph: Mapping[ModuleId, Sequence[ModuleId]]
    progress: dict[ModuleId, int | None]
    failed_before: AbstractSet[ModuleId]
    primordial_ts: int
    snapshot_ts: int
    max_load_ms: int
    ran_now: dict[ModuleId, str] = field(default_factory=dict)
    max_days: int | None = None      # when given: the limit in calendar days of ``tz``
    tz: str = "UTC"

    def until_of(self, m: ModuleId) -> int:
        value = self.progress.get(m)
        return self.primordial_ts if value is None else value

    def step(self, m: ModuleId) -> Step:
        deps = list(self.graph[m])
        window = plan_window(last_until=self.progress.get(m), primordial_ts=self.primordial_ts,
                             snapshot_ts=self.snapshot_ts, max_load_ms=self.max_load_ms,
                             dep_untils=[self.until_of(d) for d in deps],
                             max_days=self.max_days, tz=self.tz)
        blockers = blocked_by(deps, self.ran_now, self.failed_before)
        if blockers:
            return Step(m, SKIP, Window(window.from_ts, window.from_ts), tuple(blockers))
        return Step(m, RUN if window.progress else NO_PROGRESS, window)

    def record(self, m: ModuleId, status: str, window: Window) -> None:
        self.ran_now[m] = status
        if status in PROGRESS_STATUSES:
            self.progress[m] = window.until_ts


def simulate_run(graph: Mapping[ModuleId, Sequence[ModuleId]], *, selected: AbstractSet,
                 progress: Mapping[ModuleId, int | None], failed_before: AbstractSet,
                 failing: AbstractSet, primordial_ts: int, snapshot_ts: int,
                 max_load_ms: int, max_days: int | None = None, tz: str = "UTC",
                 ) -> tuple[dict[ModuleId, tuple[str, Window]], dict[ModuleId, int | None]]:
    """A whole run with known outcomes (``failing`` modules raise): what each selected module
    ends as, and everyone's progress afterwards.  Used by tests and dry runs."""
    planner = RunPlanner(graph, dict(progress), failed_before, primordial_ts, snapshot_ts,
                         max_load_ms, max_days=max_days, tz=tz)
    result: dict[ModuleId, tuple[str, Window]] = {}
    for m in topo_order(graph):
        if m not in selected:
            continue
        s = planner.step(m)
        if s.action == SKIP:
            status = SKIPPED
        elif s.action == NO_PROGRESS:
            status = EMPTY
        else:
            status = FAILED if m in failing else SUCCEEDED
        planner.record(m, status, s.window)
        result[m] = (status, s.window)
    return result, planner.progress


# ---------------------------------------------------------------------- rollback
@dataclass(frozen=True)
class LedgerRun:
    """The ledger fields rollback needs."""

    run_id: str
    pipeline_run_id: str | None
    run_number: int
    status: str
    from_ts: int | None
    until_ts: int | None


@dataclass(frozen=True)
class Cut:
    cut_ts: int
    rolled: tuple            # LedgerRun rows to roll back, oldest first
    keep_run_id: str | None  # latest progress run kept (its bookmark is restored); None: none


def rollback_cut(runs: Iterable[LedgerRun], *, since_ts: int | None = None,
                 run_id: str | None = None) -> Cut | None:
    """Where a module's rollback cuts, and which runs it undoes; ``None`` if nothing to undo.

    Only SUCCEEDED/EMPTY runs count.  ``since_ts``: the earliest run with ``until > since``
    gives the cut at its ``from`` (windows are half-open: a ``since`` on a window boundary cuts
    at that boundary; a ``since`` at or after the last ``until`` undoes nothing).
    ``run_id``: the run (module run id or pipeline run id) gives the cut at its ``from``.
    Every progress run from there on is rolled back.
    """
    if (since_ts is None) == (run_id is None):
        raise PipelineError("give exactly one of since (a date) or run_id")
    rows = sorted((r for r in runs if r.status in PROGRESS_STATUSES and r.from_ts is not None
                   and r.until_ts is not None), key=lambda r: r.run_number)
    for i, r in enumerate(rows):
        if r.from_ts is None or r.until_ts is None:  # filtered out above; keeps mypy sure
            continue
        hit = (r.until_ts > since_ts) if since_ts is not None else \
            (run_id in (r.run_id, r.pipeline_run_id))
        if hit:
            return Cut(cut_ts=r.from_ts, rolled=tuple(rows[i:]),
                       keep_run_id=rows[i - 1].run_id if i > 0 else None)
    return None


def module_start(runs: Iterable[LedgerRun], inherited: Iterable[LedgerRun] = ()) -> int | None:
    """Where a module's next window starts, from its ledger rows (``None``: the primordial start).

    * the ``until`` of its latest SUCCEEDED/EMPTY run;
    * else, if runs were rolled back, the earliest ``from`` among them: the cut of a rollback
      to nothing (a rollback reloads from its cut whatever the default start has become);
    * else, for a module that took its target over from another job (``inherited``: that job's
      rows), where that job would have started.

    >>> module_start([LedgerRun("a", None, 1, ROLLED_BACK, 10, 20)])
    10
    """
    rows = [r for r in runs if r.from_ts is not None]
    done = [r for r in rows if r.status in PROGRESS_STATUSES and r.until_ts is not None]
    if done:
        return max(done, key=lambda r: r.run_number).until_ts
    undone = [r.from_ts for r in rows if r.status == ROLLED_BACK and r.from_ts is not None]
    if undone:
        return min(undone)
    inherited = list(inherited)
    return module_start(inherited) if inherited else None


def after_rollback(runs: Iterable[LedgerRun], cut: Cut) -> list[LedgerRun]:
    """``runs`` as they are once ``cut`` is applied (its runs marked ROLLED_BACK)."""
    rolled = {r.run_id for r in cut.rolled}
    return [LedgerRun(r.run_id, r.pipeline_run_id, r.run_number,
                      ROLLED_BACK if r.run_id in rolled else r.status, r.from_ts, r.until_ts)
            for r in runs]


# ---------------------------------------------------------------------- durations
_UNITS = {"ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "sec": 1000,
          "second": 1000, "seconds": 1000, "min": 60_000, "minute": 60_000,
          "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
          "d": DAY_MS, "day": DAY_MS, "days": DAY_MS}


def parse_duration(value: Any, *, what: str = "lookback") -> int:
    """A duration -> ms: a ``timedelta``, an int (ms) or text such as ``"6 hours"``, ``"2d"``.

    >>> parse_duration("2 days") == 2 * DAY_MS
    True
    """
    if isinstance(value, timedelta):
        ms = value // timedelta(milliseconds=1)
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value
    elif isinstance(value, str):
        text = value.strip().lower()
        number = text.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
        unit = text[len(number):].strip() if number else ""
        if not number.isdigit() or unit not in _UNITS:
            raise PipelineError(f"bad {what} {value!r}: give a timedelta, milliseconds, or text "
                                "such as '6 hours' or '2 days'")
        ms = int(number) * _UNITS[unit]
    else:
        raise PipelineError(f"bad {what} {value!r}: give a timedelta, milliseconds, or text "
                            "such as '6 hours' or '2 days'")
    if ms < 0:
        raise PipelineError(f"bad {what} {value!r}: it must not be negative")
    return ms


# ---------------------------------------------------------------------- target ownership
@dataclass(frozen=True)
class TargetWrite:
    """A committed (SUCCEEDED/EMPTY) module run that wrote into a target, in ledger order."""

    order: Any                 # sortable: when the run started (then its run number)
    job: str
    target: str
    take_over_from: str | None = None


def normalize_target(target: str) -> str:
    """A target path in one spelling (no trailing slash, ``file:`` dropped, ``.``/``..`` folded)."""
    import posixpath
    t = str(target).strip()
    if t.startswith("file://"):
        t = t[len("file://"):]
    elif t.startswith("file:"):
        t = t[len("file:"):]
    if "://" in t:
        return t.rstrip("/")
    return posixpath.normpath(t) if t else t


def target_key(pipeline: str, target: str) -> str:
    """The key of a pipeline's target in the ledger (``sm_runs.target_key``): a 64-bit hash of
    the pipeline's name and the target in one spelling (:func:`normalize_target`).

    >>> target_key("p", "file:/t/") == target_key("p", "/t") != target_key("q", "/t")
    True
    """
    from sparkmark.planning.bands import path_hash
    return path_hash(f"{pipeline}\n{normalize_target(target)}")


def target_owner(writes: Iterable[TargetWrite], target: str) -> str | None:
    """The job that owns ``target``: its first writer, handed on by each run that declared
    ``take_over_from`` the owner at the time.  ``None``: nobody wrote stamped output there."""
    t = normalize_target(target)
    owner: str | None = None
    for w in sorted((w for w in writes if normalize_target(w.target) == t),
                    key=lambda w: w.order):
        if owner is None or (w.job != owner and w.take_over_from == owner):
            owner = w.job
    return owner


def ownership_conflict(writes: Iterable[TargetWrite], *, job: str, target: str,
                       take_over_from: str | None = None) -> str | None:
    """The other job that owns ``target`` (``job`` may not write there), or ``None``: ``job`` owns
    it, nobody does, or ``job`` declares it takes the target over from its owner.

    >>> w = [TargetWrite(1, "p.1", "/t")]
    >>> ownership_conflict(w, job="p.2", target="/t"), ownership_conflict(
    ...     w, job="p.2", target="/t/", take_over_from="p.1")
    ('p.1', None)
    """
    return owner_conflict(target_owner(writes, target), job=job, take_over_from=take_over_from)


def owner_conflict(owner: str | None, *, job: str, take_over_from: str | None = None
                   ) -> str | None:
    """``owner`` when it keeps ``job`` from writing its target, else ``None`` (nobody owns the
    target, ``job`` does, or ``job`` declares it takes the target over from ``owner``).

    >>> owner_conflict("p.1", job="p.2"), owner_conflict("p.1", job="p.2", take_over_from="p.1")
    ('p.1', None)
    """
    if owner is None or owner == job or owner == take_over_from:
        return None
    return owner


def owner_by_handoffs(first: TargetWrite | None,
                      handoff: Callable[[TargetWrite], TargetWrite | None]) -> str | None:
    """:func:`target_owner` from two look-ups instead of every write: ``first``, the target's
    first write (``None``: nobody wrote it), and ``handoff(w)``, the first write after ``w``
    (in ``order``) by another job that declared ``take_over_from=w.job`` (``None``: none).
    The owner changes only at those writes, so this asks ``handoff`` once per hand-off plus
    once, whatever the number of writes.  ``handoff`` must answer writes later than ``w``
    only (each answer a hand-off; else ``ValueError``).

    >>> ws = [TargetWrite(1, "p.1", "/t"), TargetWrite(2, "p.2", "/t", "p.1")]
    >>> owner_by_handoffs(ws[0], lambda w: next((x for x in ws if x.order > w.order
    ...     and x.job != w.job and x.take_over_from == w.job), None))
    'p.2'
    """
    w = first
    if w is None:
        return None
    while True:
        nxt = handoff(w)
        if nxt is None:
            return w.job
        if nxt.job == w.job or nxt.take_over_from != w.job:  # it would loop forever
            raise ValueError(f"not a hand-off of {w}: {nxt}")
        w = nxt
