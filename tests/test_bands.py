"""The band algorithm (pure): Glue's example, bounds, ties, the cap, options, and property tests
against a simple reference model that keeps the whole history."""
from __future__ import annotations

import json
from operator import itemgetter
from typing import Iterable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sparkmark.core.errors import ConfigError
from sparkmark.planning.listing import FullInterval
from sparkmark.planning.filecolumns import FileColumns
from sparkmark.planning.bands import (BandOptions, BandState, FileEntry, excluded, glob_to_regex,
                                      parse_exclusions, path_hash, plan_all, plan_band,
                                      Plan, plan_replay, split_options)

DT = 100


def F(name: str, mtime: int, size: int = 10) -> FileEntry:
    return FileEntry(mtime=mtime, path=f"file:/in/{name}", size=size)


def names(entries) -> list[str]:
    return [e.path.rsplit("/", 1)[-1] for e in entries]


def roundtrip(state: BandState) -> BandState:
    return BandState.from_element(json.loads(json.dumps(state.to_element())))


# ---------------------------------------------------------------------- Glue's example
def test_glue_seed_example_late_files_inside_the_band_are_caught():
    """The seed's diagram: run at T1 reads F2..F5, saves the in-band ones; the run at T2 reads
    the late F3', F4', F5' (mtime inside (T1-dt, T1]), F7, F8 and F9, F10, and saves F9, F10."""
    opts = BandOptions(max_band=DT)
    run1 = [F("F1", 0), F("F2", 850), F("F3", 920), F("F4", 950), F("F5", 990)]
    p1 = plan_band(run1, None, 1000, opts)
    assert names(p1.selected) == ["F1", "F2", "F3", "F4", "F5"]
    s1 = roundtrip(p1.state)
    assert (s1.low, s1.high) == (900, 1000)
    assert set(s1.files) == {path_hash(f"file:/in/{n}") for n in ("F3", "F4", "F5")}

    run2 = run1 + [F("F3'", 910), F("F4'", 960), F("F5'", 995), F("F7", 1050), F("F8", 1080),
                   F("F9", 1150), F("F10", 1190), F("F11", 1250)]  # F11: mtime after T2
    p2 = plan_band(run2, s1, 1200, opts)
    assert names(p2.selected) == ["F3'", "F4'", "F5'", "F7", "F8", "F9", "F10"]
    assert p2.waiting == 1
    s2 = roundtrip(p2.state)
    assert (s2.low, s2.high) == (1100, 1200)
    assert set(s2.files) == {path_hash("file:/in/F9"), path_hash("file:/in/F10")}

    p3 = plan_band(run2, s2, 1300, opts)
    assert names(p3.selected) == ["F11"]


def test_modified_file_is_reprocessed_and_unmodified_is_not():
    opts = BandOptions(max_band=DT)
    p1 = plan_band([F("a", 990), F("b", 995)], None, 1000, opts)
    p2 = plan_band([F("a", 1010), F("b", 995)], p1.state, 1020, opts)  # a modified in the band
    assert names(p2.selected) == ["a"]
    p3 = plan_band([F("a", 1010), F("b", 2000)], p2.state, 3000, opts)  # b modified much later
    assert names(p3.selected) == ["b"]
    p4 = plan_band([F("a", 1010), F("b", 2000)], p3.state, 3001, opts)
    assert p4.selected == ()


def test_file_from_the_future_waits_and_is_never_lost():
    opts = BandOptions(max_band=DT)
    p1 = plan_band([F("skewed", 5000), F("now", 999)], None, 1000, opts)
    assert names(p1.selected) == ["now"] and p1.waiting == 1
    p2 = plan_band([F("skewed", 5000), F("now", 999)], p1.state, 4000, opts)
    assert p2.selected == () and p2.waiting == 1
    p3 = plan_band([F("skewed", 5000), F("now", 999)], p2.state, 5000, opts)
    assert names(p3.selected) == ["skewed"]


def test_clock_going_back_never_moves_low_backwards():
    opts = BandOptions(max_band=DT)
    p1 = plan_band([F("a", 990)], None, 1000, opts)
    p2 = plan_band([F("a", 990), F("b", 950)], p1.state, 700, opts)  # T went back
    assert p2.state.low == p1.state.low == 900
    assert p2.selected == ()  # b is in the future for this run
    p3 = plan_band([F("a", 990), F("b", 950)], p2.state, 1000, opts)
    assert names(p3.selected) == ["b"]


def test_file_older_than_the_band_arriving_late_is_lost_as_in_glue():
    """Glue's consistency assumption: a listing at T is complete for mtime <= T - dt."""
    opts = BandOptions(max_band=DT)
    p1 = plan_band([F("a", 990)], None, 1000, opts)
    p2 = plan_band([F("a", 990), F("late", 850)], p1.state, 1100, opts)
    assert p2.selected == ()


def test_state_is_bounded_by_one_band_not_by_history():
    opts = BandOptions(max_band=DT)
    state = None
    for run in range(1, 60):
        T = run * 1000
        listing = [F(f"r{r}_{i}", r * 1000 - 50 * i) for r in range(1, run + 1) for i in range(5)]
        plan = plan_band(listing, state, T, opts)
        assert len(plan.selected) == 5
        state = roundtrip(plan.state)
        assert len(state.files) == 2  # the files with mtime in (T - 100, T]
        assert all(m > T - DT for m in state.files.values())
    assert len(json.dumps(state.to_element())) < 400


# ---------------------------------------------------------------------- bounds and ties
def test_bounded_files_takes_oldest_first_and_the_rest_later():
    opts = BandOptions(max_band=DT, bounded_files=2)
    listing = [F("c", 30), F("a", 10), F("d", 40), F("b", 20), F("e", 50)]
    got = []
    state = None
    for _ in range(3):
        plan = plan_band(listing, state, 1000, opts)
        got.append(names(plan.selected))
        state = roundtrip(plan.state)
    assert got == [["a", "b"], ["c", "d"], ["e"]]
    assert plan.stopped_by is None and plan_band(listing, state, 1000, opts).selected == ()


def test_ties_on_the_same_mtime_across_the_bound():
    opts = BandOptions(max_band=DT, bounded_files=3)
    listing = [F(n, 10) for n in "abcde"] + [F("f", 11)]
    p1 = plan_band(listing, None, 1000, opts)
    assert names(p1.selected) == ["a", "b", "c"] and p1.stopped_by == "boundedFiles"
    s1 = roundtrip(p1.state)
    assert s1.low == 9 and s1.high == 9  # nothing with mtime 10 is settled as a whole
    late = listing + [F("late_tie", 10), F("older", 5)]  # 'older' is below low: settled
    p2 = plan_band(late, s1, 1000, opts)
    assert names(p2.selected) == ["d", "e", "late_tie"]
    p3 = plan_band(late, roundtrip(p2.state), 1000, opts)
    assert names(p3.selected) == ["f"]


def test_bounded_size_takes_at_least_one_file_and_stops_before_the_bound():
    opts = BandOptions(max_band=DT, bounded_size=25)
    listing = [F("big", 1, size=100), F("a", 2, size=10), F("b", 3, size=10), F("c", 4, size=10)]
    p1 = plan_band(listing, None, 1000, opts)
    assert names(p1.selected) == ["big"]
    p2 = plan_band(listing, p1.state, 1000, opts)
    assert names(p2.selected) == ["a", "b"] and p2.stopped_by == "boundedSize"
    p3 = plan_band(listing, p2.state, 1000, opts)
    assert names(p3.selected) == ["c"]


def test_max_files_in_band_defers_the_extra_band_files_to_the_next_run():
    opts = BandOptions(max_band=DT, max_files_in_band=2)
    listing = [F("old", 100), F("b1", 910), F("b2", 920), F("b3", 930), F("b4", 940)]
    p1 = plan_band(listing, None, 1000, opts)
    assert names(p1.selected) == ["old", "b1", "b2"] and p1.stopped_by == "maxFilesInBand"
    assert len(p1.state.files) == 2
    p2 = plan_band(listing, p1.state, 1005, opts)  # b1, b2 still saved in the band: cap reached
    assert p2.selected == ()
    p3 = plan_band(listing, p2.state, 1100, opts)  # the band moved past them
    assert names(p3.selected) == ["b3", "b4"]
    assert plan_band(listing, p3.state, 1200, opts).selected == ()


# ---------------------------------------------------------------------- replay and disable
def test_replay_reads_what_the_runs_after_from_up_to_to_processed():
    opts = BandOptions(max_band=DT)
    listing, states, selections = [], [None], []
    for run in range(1, 6):
        listing += [F(f"r{run}_{i}", run * 1000 - 30 * i) for i in range(4)]
        plan = plan_band(listing, states[-1], run * 1000, opts)
        selections.append(set(plan.selected))
        states.append(roundtrip(plan.state))
    listing += [F("after", 5500)]
    for i in range(1, 5):
        for j in range(i, 6):
            want = set().union(*selections[i:j])
            assert set(plan_replay(listing, states[i], states[j])) == want, (i, j)
    assert set(plan_replay(listing, None, states[2])) == selections[0] | selections[1]
    assert plan_replay(listing, states[1], None) == ()
    assert plan_all(listing)[0] == min(listing)


# ---------------------------------------------------------------------- options
def test_split_options_separates_glue_options_from_reader_options():
    opts, reader = split_options({"maxBand": "1000", "boundedFiles": 5, "header": "true",
                                  "exclusions": '["**.tmp"]', "recurse": "true",
                                  "maxfilesinband": 3, "rowTag": "order", "lateFiles": "read",
                                  "incrementalListing": "true", "fullListingInterval": "12"})
    assert opts == BandOptions(max_band=1000, bounded_files=5, max_files_in_band=3,
                               exclusions=("**.tmp",), recurse=True, late_files="read",
                               incremental_listing=True,
                               full_listing_interval=FullInterval(runs=12))
    assert reader == {"header": "true", "rowTag": "order"}
    assert split_options(None)[0] == BandOptions()
    opts, _ = split_options({"incrementalListing": "true", "LEXICALFILENAMES": "True"})
    assert opts.lexical_file_names and opts.incremental_listing
    assert not split_options({"lexicalFileNames": "false"})[0].lexical_file_names


@pytest.mark.parametrize("options, words", [
    ({"boundedFiles": 10, "boundedSize": 100}, "both"),
    ({"maxBand": "soon"}, "maxBand"),
    ({"maxBand": -1}, "at least 0"),
    ({"boundedFiles": 0}, "at least 1"),
    ({"boundedSize": 1.5}, "boundedSize"),
    ({"maxFilesInBand": True}, "maxFilesInBand"),
    ({"recurse": "maybe"}, "recurse"),
    ({"lateFiles": "later"}, "lateFiles"),
    ({"incrementalListing": "sure"}, "incrementalListing"),
    ({"lexicalFileNames": "true"}, "lexicalFileNames=true needs incrementalListing=true"),
    ({"lexicalFileNames": True, "incrementalListing": "false"}, "needs incrementalListing"),
    ({"incrementalListing": "true", "lexicalFileNames": "sorted"}, "lexicalFileNames"),
    ({"fullListingInterval": "often"}, "fullListingInterval"),
    ({"exclusions": "**.tmp"}, "not valid JSON"),
    ({"exclusions": '{"a": 1}'}, "JSON list"),
    ({"exclusions": '["ok", 3]'}, "non-empty glob"),
    ({"exclusions": '["[abc"]'}, "closing ']'"),
    ({"exclusions": '["{a,b"]'}, "closing '}'"),
    ({"exclusions": '["a}"]'}, "unmatched"),
])
def test_bad_options_are_one_clear_config_error(options, words):
    with pytest.raises(ConfigError, match=None) as e:
        split_options(options)
    assert words in str(e.value)


@pytest.mark.parametrize("glob, path, hit", [
    ("**.tmp", "a/b/c.tmp", True), ("*.tmp", "a/c.tmp", False), ("*.tmp", "c.tmp", True),
    ("logs/**", "logs/x/y.json", True), ("logs/*", "logs/x/y.json", False),
    ("data?.csv", "data1.csv", True), ("data?.csv", "data12.csv", False),
    ("[!a]*.csv", "b.csv", True), ("[!a]*.csv", "a.csv", False),
    ("**.{csv,tsv}", "x/y.tsv", True), ("**.{csv,tsv}", "x/y.json", False),
    ("file\\[1\\].json", "file[1].json", True),
])
def test_globs(glob, path, hit):
    assert bool(glob_to_regex(glob).match(path)) is hit
    assert excluded("file:/root/" + path, path, [glob_to_regex(glob)]) is hit


def test_exclusions_accept_a_python_list():
    assert parse_exclusions(["**.tmp"]) == ("**.tmp",)
    assert parse_exclusions(None) == () and parse_exclusions("[]") == ()


def test_undecodable_or_foreign_state_is_a_clear_error():
    with pytest.raises(ConfigError, match="reset"):
        BandState.from_element({"kind": "files", "low": "x"})
    with pytest.raises(ConfigError, match="jdbc"):
        BandState.from_element({"kind": "jdbc", "last": [1]})
    with pytest.raises(ConfigError, match="transformation_ctx"):
        BandState.from_element([1, 2])
    assert BandState.from_element(None) is None


# ---------------------------------------------------------------------- property tests
class Reference:
    """The simple model: it remembers the mtime every path had when it was last processed, and
    which files are owed (seen as new in a run but left for later by a bound or a future mtime).

    A file version is *required* in a run when it is visible, its mtime is <= T, it was not
    processed with that mtime, and either its mtime lies after the band start of every earlier
    run (``max(T_prev) - dt``) or it is owed.  Everything the planner reads must be new to the
    model; an unbounded run must read everything required."""

    def __init__(self, dt: int):
        self.dt = dt
        self.last: dict[str, int] = {}
        self.owed: set[tuple[str, int]] = set()
        self.band_start: int | None = None

    def new(self, f: FileEntry, T: int) -> bool:
        return f.mtime <= T and self.last.get(f.path) != f.mtime

    def required(self, f: FileEntry, T: int) -> bool:
        return self.new(f, T) and (self.band_start is None or f.mtime > self.band_start
                                   or (f.path, f.mtime) in self.owed)

    def after_run(self, visible: list[FileEntry], selected, T: int) -> None:
        for f in selected:
            self.last[f.path] = f.mtime
        owed = set()
        for f in visible:
            if self.last.get(f.path) == f.mtime:
                continue
            if (self.band_start is None or f.mtime > self.band_start
                    or (f.path, f.mtime) in self.owed):
                owed.add((f.path, f.mtime))
        self.owed = owed
        if not visible:  # nothing listed: the file system shows no time, nothing settles
            return
        bs = state_ts(visible, T, self.dt) - self.dt
        self.band_start = bs if self.band_start is None else max(self.band_start, bs)


def state_ts(visible: list[FileEntry], T: int, dt: int) -> int:
    """The T a run's state settles: the driver's T bounded by the newest listed mtime + dt - 1
    (a clock running ahead of the storage must not move low past files written later)."""
    return min(T, max(f.mtime for f in visible) + dt - 1)


event = st.one_of(
    st.tuples(st.just("new"), st.integers(-3 * DT, DT), st.integers(1, 50)),
    st.tuples(st.just("modify"), st.integers(-DT, DT), st.integers(0, 1000)),
    st.tuples(st.just("delete"), st.integers(0, 0), st.integers(0, 1000)),
)
run_options = st.one_of(
    st.just(BandOptions(max_band=DT)),
    st.builds(lambda n: BandOptions(max_band=DT, bounded_files=n), st.integers(1, 4)),
    st.builds(lambda n: BandOptions(max_band=DT, bounded_size=n), st.integers(1, 80)),
    st.builds(lambda n: BandOptions(max_band=DT, max_files_in_band=n), st.integers(1, 3)),
)
step = st.tuples(st.lists(event, max_size=6), st.integers(-DT // 2, 2 * DT), run_options)


def tuple_plan_band(listing: Iterable[FileEntry], previous: BandState | None, listing_ts: int,
              options: BandOptions = BandOptions()) -> Plan:
    """The planner as it was before the columns (2026-11-30): every file a FileEntry tuple,
    one loop. The columnar planner must give exactly its plans."""
    T = int(listing_ts)
    dt = int(options.max_band)
    prev_low = previous.low if previous is not None else None
    prev_files: dict[str, int] = dict(previous.files) if previous is not None else {}
    listing = list(listing)
    # The driver's clock alone must not settle anything: a clock that runs ahead would move
    # ``low`` past files the storage stamps later.  The state's T is bounded by what the file
    # system shows: at most the newest listed mtime + dt - 1, so low = T_state - dt stays below
    # every file written from now on (docs/files.md, "Clocks").  Selection still uses T.
    newest = max(map(itemgetter(0), listing), default=None)  # FileEntry[0] is its mtime
    T_state = T if newest is None else min(T, newest + dt - 1)
    band_start = T_state - dt

    # Path hashes only where they are needed: to check a file against the band's ``files``
    # (none on a first run), for ``maxFilesInBand``, and for the files the next state keeps.
    # A first run over a million files then hashes a band's worth, not a million.
    candidates: list[FileEntry] = []
    waiting = 0
    check_files = bool(prev_files)
    # settled files (mtime <= prev_low) are not even hashed, so a big old directory costs little
    unsettled = listing if prev_low is None else [e for e in listing if e[0] > prev_low]
    for entry in unsettled:
        if check_files and prev_files.get(path_hash(entry.path)) == entry.mtime:
            continue
        if entry.mtime > T:
            waiting += 1
            continue
        candidates.append(entry)
    candidates.sort()  # oldest first: (mtime, path)

    # files already saved inside the new band count against maxFilesInBand
    in_band = {k for k, m in prev_files.items() if m > band_start}
    cap = options.max_files_in_band
    n_taken = 0
    size = 0
    stopped_by = None
    for entry in candidates:
        if options.bounded_files is not None and n_taken >= options.bounded_files:
            stopped_by = "boundedFiles"
            break
        if (options.bounded_size is not None and n_taken
                and size + entry.size > options.bounded_size):
            stopped_by = "boundedSize"
            break
        if cap is not None and entry.mtime > band_start:
            key = path_hash(entry.path)
            if key not in in_band and len(in_band) >= cap:
                stopped_by = "maxFilesInBand"
                break
            in_band.add(key)
        n_taken += 1
        size += entry.size
    taken = candidates[:n_taken] if n_taken < len(candidates) else candidates

    if newest is None:  # nothing listed: nothing the file system shows settles anything
        state = BandState(low=prev_low, high=previous.high if previous is not None else None,
                          listing_ts=T, band=dt, files=prev_files,
                          extra=dict(previous.extra) if previous is not None else {})
        return Plan(selected=(), state=state, eligible=0, deferred=0, waiting=0)
    if len(taken) == len(candidates):
        high = T_state
        low_candidate = band_start
    else:
        cut = candidates[len(taken)].mtime   # oldest file left behind
        high = cut - 1
        low_candidate = min(cut - 1, band_start)
    low = low_candidate if prev_low is None else max(prev_low, low_candidate)
    high = max(high, low)  # everything up to low is settled too (the clock may have gone back)

    files = {k: m for k, m in prev_files.items() if m > low}
    for entry in taken:
        if entry.mtime > low:
            files[path_hash(entry.path)] = entry.mtime
        elif files:
            files.pop(path_hash(entry.path), None)
    extra = dict(previous.extra) if previous is not None else {}
    state = BandState(low=low, high=high, listing_ts=T, band=dt, files=files, extra=extra)
    return Plan(selected=tuple(taken), state=state, eligible=len(candidates),
                deferred=len(candidates) - len(taken), waiting=waiting, stopped_by=stopped_by)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=12))
def test_planner_against_reference_model(timeline):
    """Arrivals, late arrivals inside and outside the band, modified and deleted files, clock
    skew (mtimes after T, T going back), bounded runs and the band cap."""
    files: dict[str, FileEntry] = {}
    model = Reference(DT)
    state = None
    now = 10_000
    counter = 0
    for events, advance, opts in timeline:
        for kind, offset, x in events:
            if kind == "new":
                counter += 1
                p = f"file:/in/f{counter}"
                files[p] = FileEntry(mtime=now + offset, path=p, size=x)
            elif files:
                p = sorted(files)[x % len(files)]
                if kind == "delete":
                    del files[p]
                elif now + offset != files[p].mtime:
                    files[p] = FileEntry(mtime=now + offset, path=p, size=files[p].size)
        now += advance
        visible = list(files.values())
        plan = plan_band(visible, state, now, opts)
        # exactly the plan of the tuple planner, whatever the listing's order or form
        oracle = tuple_plan_band(visible, state, now, opts)
        assert (plan.selected, plan.state, plan.eligible, plan.deferred, plan.waiting,
                plan.stopped_by) == (oracle.selected, oracle.state, oracle.eligible,
                                     oracle.deferred, oracle.waiting, oracle.stopped_by)
        shuffled = FileColumns.of(visible[len(visible) // 2:] + visible[:len(visible) // 2])
        assert plan_band(shuffled, state, now, opts) == plan
        selected = list(plan.selected)
        # never an unmodified file twice, never a file twice in one run
        assert all(model.new(f, now) for f in selected)
        assert len({f.path for f in selected}) == len(selected)
        assert selected == sorted(selected)
        required = sorted(f for f in visible if model.required(f, now))
        missing = [f for f in required if f not in selected]
        if plan.stopped_by is None:
            assert missing == [], "an unbounded run missed a file"
        else:  # oldest first: whatever a bound left behind is newer than what was read
            assert all(max(selected) < f for f in missing) if selected else (
                plan.stopped_by == "maxFilesInBand")  # a full band may stop a run at once
            if opts.bounded_files is not None:
                assert len(selected) <= opts.bounded_files
            if opts.bounded_size is not None and len(selected) > 1:
                assert sum(f.size for f in selected) <= opts.bounded_size
        new_state = roundtrip(plan.state)
        # the state holds only the band: files with mtime > low
        if new_state.low is None:
            assert not visible and (state is None or state.low is None)
        else:
            assert all(m > new_state.low for m in new_state.files.values())
        if state is not None and state.low is not None:
            assert new_state.low >= state.low
        if visible and plan.stopped_by is None and (state is None or now >= state.listing_ts):
            assert new_state.low >= state_ts(visible, now, DT) - DT
        if opts.max_files_in_band is not None and (
                state is None or sum(m > now - DT for m in state.files.values())
                <= opts.max_files_in_band):
            assert sum(m > now - DT for m in new_state.files.values()) <= opts.max_files_in_band
        model.after_run(visible, selected, now)
        state = new_state
    # a final unbounded run far in the future reads everything still owed
    now += 100 * DT
    visible = list(files.values())
    for _ in range(2):  # the first run may be stopped by nothing: one is enough, two is safe
        plan = plan_band(visible, state, now, BandOptions(max_band=DT))
        assert all(model.new(f, now) for f in plan.selected)
        model.after_run(visible, plan.selected, now)
        state = roundtrip(plan.state)
    assert not model.owed


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(-DT, DT), max_size=5), st.integers(1, 3 * DT)),
                min_size=2, max_size=8), st.data())
def test_replay_equals_the_union_of_the_runs_in_between(timeline, data):
    """Timely arrivals (mtime after the previous band start): pause with from/to reads exactly
    what the enabled runs after ``from`` up to and including ``to`` read."""
    files: list[FileEntry] = []
    state, states, selections = None, [None], []
    now, counter = 10_000, 0
    for offsets, advance in timeline:
        for off in offsets:
            m = now + off
            if state is not None and state.low is not None and m <= state.low:
                continue  # keep arrivals timely
            counter += 1
            files.append(FileEntry(mtime=m, path=f"file:/in/f{counter}", size=1))
        now += advance
        plan = plan_band(files, state, now, BandOptions(max_band=DT))
        selections.append(set(plan.selected))
        state = roundtrip(plan.state)
        states.append(state)
    i = data.draw(st.integers(0, len(selections) - 1))
    j = data.draw(st.integers(i + 1, len(selections)))
    assume(i < j)
    want = set().union(*selections[i:j])
    assert set(plan_replay(files, states[i], states[j])) == want


@pytest.mark.parametrize("key, meant", [
    ("incrementalListings", "incrementalListing"), ("lateFile", "lateFiles"),
    ("LATEFILE", "lateFiles"), ("boundedFile", "boundedFiles"), ("maxBands", "maxBand"),
    ("onModify", "onModified"), ("exclusion", "exclusions"),
    ("schemaEvolutions", "schemaEvolution"), ("fullListingIntervals", "fullListingInterval"),
])
def test_a_near_miss_of_a_sparkmark_option_is_refused_with_a_did_you_mean(key, meant):
    with pytest.raises(ConfigError) as e:
        split_options({key: "true", "header": "true"})
    assert str(e.value).startswith(f"unknown option {key!r}; did you mean {meant!r}?")


@pytest.mark.parametrize("key", [
    "header", "multiLine", "mode", "inferSchema", "samplingRatio", "recursiveFileLookup",
    "pathGlobFilter", "modifiedAfter", "modifiedBefore", "ignoreMissingFiles", "rowTag",
    "MULTILINE", "maxFilesPerTrigger", "recurseFileLookup", "lateness", "excludes",
    "mycompany.customOption", "schemaEvolution",
])
def test_spark_reader_options_and_unrelated_names_still_go_to_spark(key):
    _, reader = split_options({key: "x", "maxBand": 1000})
    assert reader == {key: "x"}
