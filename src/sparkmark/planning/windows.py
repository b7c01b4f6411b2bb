"""Pipeline planning, pure: module order, time windows, dependency gating, rollback cuts.

Plain functions over plain data (ints in epoch milliseconds UTC, dicts, tuples): no Spark, no
database.  ``sparkmark.pipeline`` drives them; ``tests/test_windows.py`` checks them exhaustively
over small cases and against a reference model.

Window rules (SPEC §8)
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
from datetime import date, datetime, timezone as dt_timezone
from typing import AbstractSet, Any, Hashable, Iterable, Mapping, Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import PipelineError
from ..status import RunStatus

DAY_MS = 86_400_000

# Ledger statuses (sparkmark.status is pure too: plain enums).
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

ModuleId = Hashable


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


def _to_ms(dt: datetime) -> int:
    delta = dt.astimezone(dt_timezone.utc) - datetime(1970, 1, 1, tzinfo=dt_timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def parse_time(value: Any, tz: str = "UTC", *, what: str = "date") -> int:
    """A date or time given by a user -> epoch ms.

    Accepts ``"YYYY-MM-DD"`` (the start of that day in ``tz``), an ISO date-time
    (``"2021-01-31T12:00"``, in ``tz`` unless it carries an offset), a ``date``/``datetime``
    object, or an int (epoch ms).  Anything else is a :class:`PipelineError`.
    """
    zone = get_zone(tz)
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, int):
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
    """Start of the primordial date in ``tz``; default: the snapshot's day minus ``max_days``."""
    if primordial_date is None:
        return day_start(snapshot_ts, tz) - max_days * DAY_MS
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
                max_load_ms: int, dep_untils: Iterable[int] = ()) -> Window:
    """The module's window ``[from, until)``; ``until == from`` when it cannot progress."""
    start = primordial_ts if last_until is None else last_until
    until = min([start + max_load_ms, snapshot_ts, *dep_untils])
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

    def until_of(self, m: ModuleId) -> int:
        value = self.progress.get(m)
        return self.primordial_ts if value is None else value

    def step(self, m: ModuleId) -> Step:
        deps = list(self.graph[m])
        window = plan_window(last_until=self.progress.get(m), primordial_ts=self.primordial_ts,
                             snapshot_ts=self.snapshot_ts, max_load_ms=self.max_load_ms,
                             dep_untils=[self.until_of(d) for d in deps])
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
                 max_load_ms: int) -> tuple[dict[ModuleId, tuple[str, Window]],
                                            dict[ModuleId, int | None]]:
    """A whole run with known outcomes (``failing`` modules raise): what each selected module
    ends as, and everyone's progress afterwards.  Used by tests and dry runs."""
    planner = RunPlanner(graph, dict(progress), failed_before, primordial_ts, snapshot_ts,
                         max_load_ms)
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

    Only SUCCEEDED/EMPTY runs count.  ``since_ts``: the earliest run with ``until >= since``
    gives the cut at its ``from``.  ``run_id``: the run (module run id or pipeline run id) gives
    the cut at its ``from``.  Every progress run from there on is rolled back.
    """
    if (since_ts is None) == (run_id is None):
        raise PipelineError("give exactly one of since (a date) or run_id")
    rows = sorted((r for r in runs if r.status in PROGRESS_STATUSES and r.from_ts is not None
                   and r.until_ts is not None), key=lambda r: r.run_number)
    for i, r in enumerate(rows):
        hit = (r.until_ts >= since_ts) if since_ts is not None else \
            (run_id in (r.run_id, r.pipeline_run_id))
        if hit:
            return Cut(cut_ts=r.from_ts, rolled=tuple(rows[i:]),
                       keep_run_id=rows[i - 1].run_id if i > 0 else None)
    return None
