"""Pure tests of pipeline planning: windows, gating, order, selection, rollback cuts, dates.

Exhaustive over small cases, plus hypothesis property tests against simple reference models.
"""
from __future__ import annotations

import itertools
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkmark.core.clock import format_ts
from sparkmark.core.errors import PipelineError
from sparkmark.planning.windows import (DAY_MS, EMPTY, FAILED, NO_PROGRESS, ROLLED_BACK, RUN,
                                        SKIP, SKIPPED, SUCCEEDED, LedgerRun, RunPlanner, Window,
                                        blocked_by, day_start, parse_time,
                                        plan_window, primordial_start, rollback_cut,
                                        select_modules, simulate_run, topo_order)
from sparkmark.planning.windows import (TargetWrite, add_days, after_rollback, local_midnight,
                                        module_start, normalize_target,
                                        owner_by_handoffs, owner_conflict, ownership_conflict,
                                        parse_duration, target_owner)


# ---------------------------------------------------------------------- plan_window
def _reference_window(last_until, primordial, snapshot, max_load, deps):
    """Brute force: the largest u in [start, start + max_load] allowed by every cap."""
    start = primordial if last_until is None else last_until
    best = start
    for u in range(start, start + max_load + 1):
        if u <= snapshot and all(u <= d for d in deps):
            best = u
    return start, best


@pytest.mark.parametrize("max_load", [1, 2, 3])
def test_plan_window_exhaustive(max_load):
    values = range(0, 6)
    for last in [None, *values]:
        for snapshot in values:
            for n_deps in range(0, 3):
                for deps in itertools.product(values, repeat=n_deps):
                    w = plan_window(last_until=last, primordial_ts=1, snapshot_ts=snapshot,
                                    max_load_ms=max_load, dep_untils=deps)
                    start, until = _reference_window(last, 1, snapshot, max_load, deps)
                    assert (w.from_ts, w.until_ts) == (start, until), (last, snapshot, deps)
                    assert w.progress == (until > start)


def test_plan_window_cases():
    # first run: from the primordial start, capped by max_load
    assert plan_window(last_until=None, primordial_ts=0, snapshot_ts=100 * DAY_MS,
                       max_load_ms=5 * DAY_MS) == Window(0, 5 * DAY_MS)
    # capped by the snapshot
    assert plan_window(last_until=10, primordial_ts=0, snapshot_ts=15,
                       max_load_ms=100) == Window(10, 15)
    # capped by the slowest dependency
    assert plan_window(last_until=10, primordial_ts=0, snapshot_ts=50, max_load_ms=100,
                       dep_untils=[40, 20, 30]) == Window(10, 20)
    # from == until: no progress
    assert not plan_window(last_until=15, primordial_ts=0, snapshot_ts=15,
                           max_load_ms=100).progress
    # until < from (a dependency was rolled back behind us): no progress, until == from
    assert plan_window(last_until=30, primordial_ts=0, snapshot_ts=50, max_load_ms=100,
                       dep_untils=[20]) == Window(30, 30)
    # snapshot before the primordial date: no progress
    assert plan_window(last_until=None, primordial_ts=100, snapshot_ts=50,
                       max_load_ms=10) == Window(100, 100)


@given(last=st.one_of(st.none(), st.integers(0, 10**6)), primordial=st.integers(0, 10**6),
       snapshot=st.integers(0, 2 * 10**6), max_load=st.integers(1, 10**6),
       deps=st.lists(st.integers(0, 2 * 10**6), max_size=4))
def test_plan_window_properties(last, primordial, snapshot, max_load, deps):
    w = plan_window(last_until=last, primordial_ts=primordial, snapshot_ts=snapshot,
                    max_load_ms=max_load, dep_untils=deps)
    start = primordial if last is None else last
    assert w.from_ts == start
    assert w.until_ts >= w.from_ts
    if w.progress:
        assert w.until_ts - w.from_ts <= max_load
        assert w.until_ts <= snapshot and all(w.until_ts <= d for d in deps)
        # and it is as far as allowed: one of the caps is hit
        assert w.until_ts in {start + max_load, snapshot, *deps}
    else:
        assert min([start + max_load, snapshot, *deps]) <= start


# ---------------------------------------------------------------------- gating
def test_blocked_by_exhaustive():
    statuses = [None, SUCCEEDED, EMPTY, FAILED, SKIPPED]
    for now_status in statuses:
        for failed_before in (False, True):
            ran_now = {} if now_status is None else {"d": now_status}
            got = blocked_by(["d"], ran_now, {"d"} if failed_before else set())
            if now_status is None:
                expected = failed_before          # not run now: its latest attempt decides
            else:
                expected = now_status in (FAILED, SKIPPED)  # ran now: this run decides
            assert got == (["d"] if expected else []), (now_status, failed_before)


# ---------------------------------------------------------------------- order
def test_topo_order_and_errors():
    g = {3: [1, 2], 1: [], 2: [1], 4: []}
    order = topo_order(g)
    assert order == [1, 2, 3, 4]
    assert topo_order(g, key=lambda m: -m) == [4, 1, 2, 3]
    with pytest.raises(PipelineError, match=r"unknown dependency.*3 -> 9"):
        topo_order({1: [], 3: [9]})
    with pytest.raises(PipelineError, match=r"cycle: (1 -> 2 -> 1|2 -> 1 -> 2)"):
        topo_order({1: [2], 2: [1], 3: []})
    with pytest.raises(PipelineError, match="cycle: 5 -> 5"):
        topo_order({5: [5]})


def _all_graphs(n):
    """Every directed graph on n nodes without self loops (DAGs and cyclic ones)."""
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    for mask in range(1 << len(pairs)):
        g = {i: [] for i in range(n)}
        for k, (a, b) in enumerate(pairs):
            if mask >> k & 1:
                g[a].append(b)
        yield g


def _has_cycle(g):
    color = {}

    def visit(n):
        color[n] = 1
        for d in g[n]:
            if color.get(d) == 1 or (d not in color and visit(d)):
                return True
        color[n] = 2
        return False
    return any(n not in color and visit(n) for n in g)


def test_topo_order_exhaustive_3_nodes():
    for g in _all_graphs(3):  # 64 graphs
        if _has_cycle(g):
            with pytest.raises(PipelineError, match="cycle"):
                topo_order(g)
            continue
        order = topo_order(g)
        assert sorted(order) == sorted(g)
        pos = {m: i for i, m in enumerate(order)}
        assert all(pos[d] < pos[m] for m, deps in g.items() for d in deps)


# ---------------------------------------------------------------------- selection
def test_select_modules():
    layers = {1: "bronze", 2: "silver", 3: "gold", 4: "silver"}
    assert select_modules(layers) == {1, 2, 3, 4}
    assert select_modules(layers, layers=["silver"]) == {2, 4}
    assert select_modules(layers, modules=[3]) == {3}
    assert select_modules(layers, layers=["bronze"], modules=[3]) == {1, 3}
    with pytest.raises(PipelineError, match="unknown layer.*platinum.*bronze, gold, silver"):
        select_modules(layers, layers=["platinum"])
    with pytest.raises(PipelineError, match="unknown module id.*99"):
        select_modules(layers, modules=[99])
    with pytest.raises(PipelineError, match="empty"):
        select_modules(layers, layers=[], modules=[])


# ---------------------------------------------------------------------- whole runs vs a model
def _reference_run(graph, selected, progress, failed_before, failing, primordial, snapshot,
                   max_load):
    """Order-free reference: iterate the rules over all modules, in no particular order, until
    nothing changes.  A module in ``failing`` only fails if it is called (its window moves)."""
    start = {m: (primordial if progress[m] is None else progress[m]) for m in graph}
    until = dict(start)
    skipped: set = set()
    failed: set = set()
    for _ in range(2 * len(graph) + 2):
        for m in sorted(graph, reverse=True):
            if m not in selected:
                continue
            if any((d in selected and d in skipped | failed)
                   or (d not in selected and d in failed_before) for d in graph[m]):
                skipped.add(m)
                failed.discard(m)
                until[m] = start[m]
                continue
            skipped.discard(m)
            cap = min([start[m] + max_load, snapshot] + [until[d] for d in graph[m]])
            if m in failing and cap > start[m]:
                failed.add(m)
                until[m] = start[m]
            else:
                failed.discard(m)
                until[m] = max(start[m], cap)
    return skipped, failed, until, start


def _dags(n):
    for g in _all_graphs(n):
        if not _has_cycle(g):
            yield g


def test_simulate_run_exhaustive_small():
    """Every DAG on 3 modules x every selection x every failing set x failed-before set."""
    checked = 0
    for g in _dags(3):
        nodes = list(g)
        subsets = [set(c) for r in range(4) for c in itertools.combinations(nodes, r)]
        for selected in subsets:
            if not selected:
                continue
            for failing in subsets:
                for failed_before in subsets:
                    progress = {0: None, 1: 3, 2: 5}
                    res, after = simulate_run(g, selected=selected, progress=progress,
                                              failed_before=failed_before, failing=failing,
                                              primordial_ts=0, snapshot_ts=9, max_load_ms=4)
                    skipped, failed, until, start = _reference_run(
                        g, selected, progress, failed_before, failing, 0, 9, 4)
                    assert set(res) == selected
                    assert {m for m, (s, _) in res.items() if s == SKIPPED} == skipped
                    assert {m for m, (s, _) in res.items() if s == FAILED} == failed
                    for m in g:
                        expected = until[m] if m in selected and m not in skipped | failed \
                            else progress[m]
                        got = after[m] if after[m] is not None else None
                        if m in selected and m not in skipped | failed:
                            assert got == expected, (g, selected, failing, m)
                        else:
                            assert got == progress[m]
                    checked += 1
    assert checked > 10_000


dag_strategy = st.integers(2, 6).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n)))


def _dag_from(n, edges):
    g = {i: [] for i in range(n)}
    for a, b in edges:
        if a > b and b not in g[a]:  # only "depends on a lower id": always acyclic
            g[a].append(b)
    return g


@settings(max_examples=150, deadline=None)
@given(spec=dag_strategy, runs=st.lists(st.tuples(st.integers(0, 4 * DAY_MS),
                                                  st.sets(st.integers(0, 5), max_size=2)),
                                        min_size=1, max_size=8),
       max_days=st.integers(1, 3))
def test_repeated_runs_properties(spec, runs, max_days):
    """Many runs with advancing snapshots and random failures: windows are contiguous, never
    longer than max_days, never past the snapshot or a dependency; without failures everyone
    catches up with the snapshot."""
    n, edges = spec
    g = _dag_from(n, edges)
    progress = {m: None for m in g}
    failed_before: set = set()
    history = {m: [] for m in g}
    primordial = 0
    snapshot = 0
    for advance, failing in runs:
        snapshot += advance
        res, progress = simulate_run(g, selected=set(g), progress=progress,
                                     failed_before=failed_before, failing=failing,
                                     primordial_ts=primordial, snapshot_ts=snapshot,
                                     max_load_ms=max_days * DAY_MS)
        for m, (status, w) in res.items():
            if status in (SUCCEEDED, EMPTY):
                history[m].append(w)
            if status == FAILED:
                failed_before.add(m)
            elif status in (SUCCEEDED, EMPTY):
                failed_before.discard(m)
        for m in g:
            if progress[m] is not None:
                assert progress[m] <= snapshot
                for d in g[m]:
                    assert progress[d] is not None and progress[m] <= progress[d]
    for ws in history.values():
        expect_from = primordial
        for w in ws:
            assert w.from_ts == expect_from          # no gap, no overlap
            assert w.until_ts - w.from_ts <= max_days * DAY_MS
            expect_from = w.until_ts
    # healthy catch-up: enough failure-free runs bring every module to the snapshot
    for _ in range(snapshot // (max_days * DAY_MS) + 2):
        res, progress = simulate_run(g, selected=set(g), progress=progress, failed_before=set(),
                                     failing=set(), primordial_ts=primordial,
                                     snapshot_ts=snapshot, max_load_ms=max_days * DAY_MS)
    assert all(progress[m] == snapshot for m in g) or snapshot == 0


def test_failing_upstream_skips_downstream_and_others_go_on():
    g = {1: [], 2: [1], 3: [2], 4: []}
    res, after = simulate_run(g, selected=set(g), progress={m: None for m in g},
                              failed_before=set(), failing={1}, primordial_ts=0,
                              snapshot_ts=10, max_load_ms=100)
    assert {m: s for m, (s, _) in res.items()} == {1: FAILED, 2: SKIPPED, 3: SKIPPED,
                                                   4: SUCCEEDED}
    assert after == {1: None, 2: None, 3: None, 4: 10}
    # next run, only module 2 selected: 1's latest attempt failed -> still skipped
    res, _ = simulate_run(g, selected={2}, progress=after, failed_before={1}, failing=set(),
                          primordial_ts=0, snapshot_ts=20, max_load_ms=100)
    assert res[2][0] == SKIPPED


def test_planner_steps():
    planner = RunPlanner({1: [], 2: [1]}, {1: 10, 2: 10}, set(), 0, 30, 100)
    s = planner.step(1)
    assert (s.action, s.window) == (RUN, Window(10, 30))
    planner.record(1, EMPTY, s.window)             # no rows: EMPTY *with* progress
    s2 = planner.step(2)
    assert (s2.action, s2.window) == (RUN, Window(10, 30))
    planner = RunPlanner({1: [], 2: [1]}, {1: 10, 2: 10}, set(), 0, 10, 100)
    assert planner.step(1).action == NO_PROGRESS
    planner.record(1, FAILED, Window(10, 10))
    assert planner.step(2).action == SKIP and planner.step(2).blocked_by == (1,)


# ---------------------------------------------------------------------- rollback cuts
def _runs(windows, statuses=None):
    statuses = statuses or [SUCCEEDED] * len(windows)
    return [LedgerRun(f"r{i}", f"p{i}", i + 1, s, a, b)
            for i, ((a, b), s) in enumerate(zip(windows, statuses))]


def test_rollback_cut_since_exhaustive():
    windows = [(0, 2), (2, 4), (4, 4), (4, 7), (7, 9)]
    runs = _runs(windows)
    for since in range(-1, 11):
        cut = rollback_cut(runs, since_ts=since)
        first = next((i for i, (_, b) in enumerate(windows) if b > since), None)
        if first is None:
            assert cut is None
            continue
        assert cut.cut_ts == windows[first][0]
        assert [r.run_id for r in cut.rolled] == [f"r{i}" for i in range(first, len(windows))]
        assert cut.keep_run_id == (f"r{first - 1}" if first else None)
        # the cut is a window boundary and every rolled window starts at or after it
        assert cut.cut_ts in {a for a, _ in windows}
        assert all(r.from_ts >= cut.cut_ts for r in cut.rolled)


def test_rollback_cut_ignores_failed_and_rolled_back_and_by_run_id():
    runs = _runs([(0, 2), (2, 2), (2, 5), (5, 8)], [SUCCEEDED, FAILED, ROLLED_BACK, SUCCEEDED])
    runs = runs[:2] + [LedgerRun("r2", "p2", 2, ROLLED_BACK, 2, 5), LedgerRun("r3", "p3", 2,
                                                                               SUCCEEDED, 2, 5),
                       LedgerRun("r4", "p4", 3, EMPTY, 5, 8)]
    cut = rollback_cut(runs, since_ts=3)
    assert cut.cut_ts == 2 and [r.run_id for r in cut.rolled] == ["r3", "r4"]
    assert cut.keep_run_id == "r0"
    cut = rollback_cut(runs, run_id="p4")       # by pipeline run id
    assert cut.cut_ts == 5 and [r.run_id for r in cut.rolled] == ["r4"]
    cut = rollback_cut(runs, run_id="r3")       # by module run id
    assert [r.run_id for r in cut.rolled] == ["r3", "r4"]
    assert rollback_cut(runs, run_id="p1") is None    # a FAILED run cannot be a cut
    assert rollback_cut(runs, since_ts=9) is None
    with pytest.raises(PipelineError, match="exactly one"):
        rollback_cut(runs)
    with pytest.raises(PipelineError, match="exactly one"):
        rollback_cut(runs, since_ts=1, run_id="p1")


# ---------------------------------------------------------------------- dates and zones
def test_dates_and_timezones():
    assert parse_time("2021-01-01") == 1_609_459_200_000
    assert parse_time("2021-01-01", "Europe/Paris") == 1_609_459_200_000 - 3_600_000
    assert parse_time("2021-01-01T06:00:00+00:00", "Europe/Paris") == 1_609_480_800_000
    assert parse_time("2021-01-01T06:00", "UTC") == 1_609_480_800_000
    assert parse_time(1_609_459_200_000) == 1_609_459_200_000
    with pytest.raises(PipelineError, match="looks like epoch seconds"):
        parse_time(1_609_459_200, what="primordial_date")   # seconds, not ms
    for bad in ["2021-13-01", "yesterday", "", "2021-02-30", None, 1.5]:
        with pytest.raises(PipelineError, match="bad --since date.*YYYY-MM-DD"):
            parse_time(bad, what="--since date")
    with pytest.raises(PipelineError, match="unknown timezone 'Mars/Base'"):
        parse_time("2021-01-01", "Mars/Base")
    assert format_ts(1_609_459_200_000, "Europe/Paris") == "2021-01-01 01:00:00.000+01:00"
    assert format_ts(1_609_459_200_123) == "2021-01-01 00:00:00.123+00:00"
    assert format_ts(None) is None
    # day start across a DST change (Paris, 2021-03-28 is 23 hours long)
    t = parse_time("2021-03-28T12:00", "Europe/Paris")
    assert day_start(t, "Europe/Paris") == parse_time("2021-03-28", "Europe/Paris")
    assert primordial_start(None, snapshot_ts=parse_time("2021-03-10T15:00"), max_days=5) == \
        parse_time("2021-03-05")
    assert primordial_start("2020-12-31", snapshot_ts=0, max_days=5) == parse_time("2020-12-31")


@given(st.integers(0, 4_000_000_000_000), st.sampled_from(["UTC", "Europe/Paris",
                                                           "America/New_York", "Asia/Kolkata"]))
def test_format_parse_roundtrip(ts, tz):
    text = format_ts(ts, tz)
    assert parse_time(text.replace(" ", "T"), "UTC") == ts
    start = day_start(ts, tz)
    assert start <= ts < start + 25 * 3_600_000


# ---------------------------------------------------------------------- issue 17: local days
ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Europe/Paris"]


@settings(max_examples=200, deadline=None)
@given(tz=st.sampled_from(ZONES), start_day=st.dates(date(2020, 1, 1), date(2026, 12, 31)),
       max_days=st.integers(1, 5),
       advances=st.lists(st.integers(0, 9 * DAY_MS), min_size=1, max_size=8))
def test_chunks_on_local_midnight_against_a_date_model(tz, start_day, max_days, advances):
    """Days are calendar days of the pipeline's zone: every chunk boundary that is not the
    snapshot is local midnight ``max_days`` dates later (a reference model on plain dates), and
    windows are contiguous across DST changes."""
    zone = ZoneInfo(tz)
    primordial = local_midnight(start_day, tz)
    snapshot = primordial
    last = None
    history = []
    for adv in advances:
        snapshot += adv
        w = plan_window(last_until=last, primordial_ts=primordial, snapshot_ts=snapshot,
                        max_load_ms=max_days * DAY_MS, max_days=max_days, tz=tz)
        start_local = datetime.fromtimestamp(w.from_ts / 1000, tz=zone)
        if start_local.time() == datetime.min.time():        # model: plain date arithmetic
            limit = local_midnight(start_local.date() + timedelta(days=max_days), tz)
            assert w.until_ts == max(w.from_ts, min(limit, snapshot))
        assert w.from_ts == (primordial if last is None else last)
        history.append((w, snapshot))
        last = w.until_ts
    for (a, _), (b, _) in zip(history, history[1:]):
        assert a.until_ts == b.from_ts                         # contiguous
    on_midnight = True     # from the primordial midnight, full chunks end on local midnight
    for w, snap in history:
        if on_midnight and w.until_ts < snap:
            t = datetime.fromtimestamp(w.until_ts / 1000, tz=zone)
            assert t.time() == datetime.min.time(), (w, tz)
        on_midnight = on_midnight and w.until_ts < snap
    # every boundary reached from local midnight by chunks is local midnight
    ts = primordial
    for _ in range(6):
        nxt = add_days(ts, max_days, tz)
        t = datetime.fromtimestamp(nxt / 1000, tz=zone)
        assert nxt > ts and t.date() == datetime.fromtimestamp(ts / 1000, tz=zone).date() \
            + timedelta(days=max_days)
        ts = nxt


def test_default_primordial_is_local_midnight():
    tz = "America/New_York"
    snap = parse_time("2024-03-12T15:00", tz)
    assert primordial_start(None, snapshot_ts=snap, max_days=3, tz=tz) == \
        parse_time("2024-03-09", tz)
    assert primordial_start(None, snapshot_ts=parse_time("2024-11-04T01:00", tz), max_days=1,
                            tz=tz) == parse_time("2024-11-03", tz)


# ---------------------------------------------------------------------- issue 17: restarts
def test_module_start_cut_overrides_the_default_start():
    assert module_start([]) is None
    runs = _runs([(10, 20), (20, 30)])
    assert module_start(runs) == 30
    cut = rollback_cut(runs, since_ts=0)
    assert module_start(after_rollback(runs, cut)) == cut.cut_ts == 10
    cut = rollback_cut(runs, since_ts=25)
    assert module_start(after_rollback(runs, cut)) == cut.cut_ts == 20
    # a module that took a target over starts where the previous owner would
    assert module_start([], inherited=runs) == 30
    assert module_start(_runs([(5, 6)]), inherited=runs) == 6


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.integers(-1, 30),
       st.integers(0, 8))
def test_rollback_then_restart_is_the_cut(lengths, since, reruns):
    """Whatever is rolled back, the module restarts exactly at the cut (no gap, no overlap)."""
    windows, t = [], 0
    for n in lengths:
        windows.append((t, t + n))
        t += n
    runs = _runs(windows)
    cut = rollback_cut(runs, since_ts=since)
    if cut is None:
        assert since >= t
        return
    assert module_start(after_rollback(runs, cut)) == cut.cut_ts
    assert all(r.until_ts > since for r in cut.rolled)


# ---------------------------------------------------------------------- issue 17: ownership
def _owner_model(writes, target):
    owner = None
    for _order, job, tgt, take in sorted(writes):
        if tgt.rstrip("/") != target.rstrip("/"):
            continue
        if owner is None or (take == owner and job != owner):
            owner = job
    return owner


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.sampled_from(["p.1", "p.2", "p.3"]),
                          st.sampled_from(["/t", "/t/", "/u"]),
                          st.sampled_from([None, "p.1", "p.2", "p.3"])), max_size=10),
       st.sampled_from(["p.1", "p.2", "p.3"]), st.sampled_from([None, "p.1", "p.2"]))
def test_target_owner_against_a_model(writes, job, take):
    ws = [TargetWrite((o, i), j, t, k) for i, (o, j, t, k) in enumerate(writes)]
    model = _owner_model([((o, i), j, t, k) for i, (o, j, t, k) in enumerate(writes)], "/t")
    assert target_owner(ws, "/t/") == model
    conflict = ownership_conflict(ws, job=job, target="/t", take_over_from=take)
    assert conflict == (None if model in (None, job, take) else model)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["p.1", "p.2", "p.3", "p.4"]),
                          st.sampled_from([None, "p.1", "p.2", "p.3", "p.4"])), max_size=14))
def test_the_owner_from_the_first_write_and_hand_offs_is_the_owner_of_every_write(writes):
    """``owner_by_handoffs`` asks for the first write and one hand-off at a time (what the
    store answers from its indexes) and finds the owner that walking every write finds."""
    ws = [TargetWrite((o, i), j, "/t", k) for i, (o, j, k) in enumerate(writes)]
    asked = []

    def handoff(w):
        asked.append(w)
        return min((x for x in ws if x.order > w.order and x.job != w.job
                    and x.take_over_from == w.job), key=lambda x: x.order, default=None)
    first = min(ws, key=lambda x: x.order, default=None)
    owner = owner_by_handoffs(first, handoff)
    assert owner == target_owner(ws, "/t")
    assert len(asked) <= 1 + sum(1 for x in ws if x.take_over_from is not None)
    job = "p.2"
    assert owner_conflict(owner, job=job, take_over_from="p.1") == \
        ownership_conflict(ws, job=job, target="/t", take_over_from="p.1")


def test_a_hand_off_that_is_none_is_refused_not_looped_on():
    w = TargetWrite(1, "p.1", "/t")
    with pytest.raises(ValueError, match="not a hand-off"):
        owner_by_handoffs(w, lambda _: TargetWrite(2, "p.1", "/t", "p.1"))
    assert owner_by_handoffs(None, lambda _: None) is None


def test_parse_duration_and_normalize_target():
    assert parse_duration("6 hours") == 6 * 3_600_000
    assert parse_duration("2d") == 2 * DAY_MS
    assert parse_duration(timedelta(minutes=1)) == 60_000 and parse_duration(5) == 5
    for bad in ["a while", "-1 day", "1.5 days", None, -3, "3 fortnights"]:
        with pytest.raises(PipelineError, match="bad lookback"):
            parse_duration(bad)
    assert normalize_target("file:///data/x/") == normalize_target("/data/./x") == "/data/x"
    assert normalize_target("s3a://b/x/") == "s3a://b/x"
