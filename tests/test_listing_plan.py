"""Incremental listing (pure): the listing choice, the interval option, and property tests of
the walk over an in-memory file system with directory times, against the full listing."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkmark.core.errors import ConfigError
from sparkmark.planning.listing import (DirEntry, FileEntry, FullInterval, Level, ListingState,
                                        choose_listing, dir_hash, parse_interval, roots_hash,
                                        threshold_of, walk)


class MemFS:
    """Directories with an mtime (changed by adding, removing or renaming an entry) and a ctime
    (also set when the directory itself is created or moved in); a clock that ticks on every
    operation and on every directory listed."""

    def __init__(self, ctime: bool = True):
        self.t = 1_000_000
        self.ctime = ctime
        self.dirs: dict[str, dict] = {"file:/r": {"m": self.t, "c": self.t, "e": {}}}
        self.listed: list[str] = []

    def tick(self, n: int = 1) -> int:
        self.t += n
        return self.t

    def mkdir(self, parent: str, name: str, preserved: int | None = None) -> str:
        t = self.tick()
        path = f"{parent}/{name}"
        if path in self.dirs:
            return path
        self.dirs[path] = {"m": preserved if preserved is not None else t, "c": t, "e": {}}
        self.dirs[parent]["e"][name] = "dir"
        self.dirs[parent]["m"] = self.dirs[parent]["c"] = t
        return path

    def add(self, d: str, name: str, mtime: int | None = None) -> None:
        t = self.tick()
        self.dirs[d]["e"][name] = ("file", t if mtime is None else mtime)
        self.dirs[d]["m"] = self.dirs[d]["c"] = t

    def rewrite(self, d: str, name: str) -> None:  # in place: the directory does not change
        if isinstance(self.dirs[d]["e"].get(name), tuple):
            self.dirs[d]["e"][name] = ("file", self.tick())

    def remove(self, d: str, name: str) -> None:
        if isinstance(self.dirs[d]["e"].get(name), tuple):
            del self.dirs[d]["e"][name]
            self.dirs[d]["m"] = self.dirs[d]["c"] = self.tick()

    def list_level(self, dirs):
        for d in dirs:
            self.tick(3)  # listing takes time
            self.listed.append(d)
            files, subdirs = [], []
            for name, v in self.dirs[d]["e"].items():
                p = f"{d}/{name}"
                if v == "dir":
                    dd = self.dirs[p]
                    changed = max(dd["m"], dd["c"]) if self.ctime else dd["m"]
                    subdirs.append(DirEntry(p, True, dd["m"], 0, changed))
                else:
                    files.append(FileEntry(v[1], p, 1))
            yield Level(d, files, subdirs)

    def files(self) -> set[tuple[str, int]]:
        out = set()
        for d, v in self.dirs.items():
            for name, e in v["e"].items():
                if isinstance(e, tuple):
                    out.add((f"{d}/{name}", e[1]))
        return out


def run_walk(fs: MemFS, previous, mode, recurse=True, ts=0):
    start = fs.t
    fs.listed = []
    res = walk(["file:/r"], fs.list_level, recurse=recurse, previous=previous, mode=mode,
               listing_ts=ts, started_ms=start, margin_ms=0, took_ms=lambda: fs.t - start)
    back = ListingState.from_element(json.loads(json.dumps(res.state.to_element())))
    return res, back


def test_interval_option():
    assert parse_interval(None) == FullInterval(ms=86_400_000)
    assert parse_interval(24) == FullInterval(runs=24)
    assert parse_interval(" 30m ").ms == 1_800_000
    for bad in ("0", "soon", "5 years", "-1"):
        with pytest.raises(ConfigError, match="fullListingInterval"):
            parse_interval(bad)
    assert FullInterval(runs=3).due(2, 0) and not FullInterval(runs=3).due(1, 0)
    assert FullInterval(ms=10).due(0, 10) and not FullInterval(ms=10).due(99, 9)


def test_choose_listing_reasons():
    prev = ListingState(w=5, took=1, full_ts=100, runs=0, roots=roots_hash(["file:/r"]))
    kw = dict(enabled=True, roots=["file:/r"], listing_ts=200, interval=FullInterval(ms=1000),
              has_sketch=True)
    assert choose_listing(prev, **kw)[0] == "incremental"
    assert choose_listing(prev, **{**kw, "enabled": False}) == ("full",
                                                                 "incrementalListing is off")
    assert "object store" in choose_listing(prev, **{**kw, "roots": ["s3a://b/k"]})[1]
    assert "paths changed" in choose_listing(prev, **{**kw, "roots": ["file:/x"]})[1]
    pending = ListingState(**{**prev.__dict__, "pending": 2})
    assert "left for later" in choose_listing(pending, **kw)[1]
    assert "due" in choose_listing(prev, **{**kw, "listing_ts": 1100})[1]
    assert "sketch" in choose_listing(prev, **{**kw, "has_sketch": False})[1]


def test_p6_shape_1000_partitions_three_changed_lists_four_directories():
    fs = MemFS()
    parts = [fs.mkdir("file:/r", f"dt=2020-{i // 28 + 1:02d}-{i % 28 + 1:02d}")
             for i in range(1000)]
    for p in parts:
        fs.add(p, "a.json")
    res, st1 = run_walk(fs, None, "full", recurse=False)
    assert res.dirs_listed == 1001 and len(res.files) == 1000
    fs.tick(10_000)
    for p in (parts[0], parts[998], parts[999]):  # one old partition, two recent ones
        fs.add(p, "new.json")
    res, _ = run_walk(fs, st1, "incremental", recurse=False)
    assert res.dirs_listed == 4
    assert {e.path for e in res.files if e.path.endswith("new.json")} == {
        f"{parts[i]}/new.json" for i in (0, 998, 999)}


def test_nested_layout_lists_inner_levels_and_changed_leaves():
    fs = MemFS()
    years = [fs.mkdir("file:/r", f"year={y}") for y in (2024, 2025)]
    days = [fs.mkdir(y, f"day={d}") for y in years for d in range(30)]
    for d in days:
        fs.add(d, "x.json")
    _, st1 = run_walk(fs, None, "full", recurse=False)
    assert st1.inner == {dir_hash("file:/r"), *(dir_hash(y) for y in years)}
    fs.tick(10_000)
    fs.add(days[3], "late.json", mtime=5)  # preserved old mtime: the directory still changes
    res, _ = run_walk(fs, st1, "incremental", recurse=False)
    assert res.dirs_listed == 1 + 2 + 1
    assert (f"{days[3]}/late.json", 5) in {(e.path, e.mtime) for e in res.files}


def test_directory_moved_in_with_preserved_mtime_is_found_by_its_ctime():
    fs = MemFS(ctime=True)
    fs.mkdir("file:/r", "dt=1")
    _, st1 = run_walk(fs, None, "full", recurse=False)
    fs.tick(10_000)
    d = fs.mkdir("file:/r", "dt=0", preserved=10)  # copytree: the old directory time is kept
    fs.add(d, "old.json", mtime=10)
    fs.dirs[d]["m"] = 10
    res, _ = run_walk(fs, st1, "incremental", recurse=False)
    assert (f"{d}/old.json", 10) in {(e.path, e.mtime) for e in res.files}


op = st.one_of(
    st.tuples(st.just("mkdir"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("add"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("rewrite"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("remove"), st.integers(0, 50), st.booleans()),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(op, max_size=8), st.integers(0, 5_000), st.booleans()),
                min_size=1, max_size=10), st.booleans())
def test_incremental_walk_against_full_listing(timeline, with_ctime):
    """Random trees (nested directories, files with new or preserved old mtimes, in-place
    rewrites, removals).  An incremental walk returns a subset of the full listing that holds
    every file version not in the previous listing, except in-place rewrites (and, without
    ctime, files in directories created with a preserved old mtime); it lists only the roots,
    the directories that hold directories and the directories changed since."""
    fs = MemFS(ctime=with_ctime)
    state = None
    prev_files: set[tuple[str, int]] = set()
    rewritten: set[str] = set()
    preserved_dirs: set[str] = set()
    n = 0
    for ops, pause, full in timeline:
        for kind, x, flag in ops:
            dirs = sorted(fs.dirs)
            d = dirs[x % len(dirs)]
            n += 1
            if kind == "mkdir":
                p = fs.mkdir(d, f"d{n}", preserved=5 if flag else None)
                if flag:
                    preserved_dirs.add(p)
            elif kind == "add":
                fs.add(d, f"f{n}", mtime=7 if flag else None)
            else:
                names = sorted(k for k, v in fs.dirs[d]["e"].items() if isinstance(v, tuple))
                if names:
                    name = names[x % len(names)]
                    if kind == "rewrite":
                        fs.rewrite(d, name)
                        rewritten.add(f"{d}/{name}")
                    else:
                        fs.remove(d, name)
        fs.tick(pause)
        before = {d: (max(v["m"], v["c"]) if with_ctime else v["m"]) for d, v in fs.dirs.items()}
        mode = "full" if (state is None or full) else "incremental"
        res, new_state = run_walk(fs, state, mode)
        got = {(e.path, e.mtime) for e in res.files}
        truth = fs.files()
        assert got <= truth
        if mode == "full":
            assert got == truth and res.dirs_listed == len(fs.dirs)
            rewritten, preserved_dirs = set(), set()
        else:
            excused = {v for v in truth if v[0] in rewritten
                       or (not with_ctime and any(v[0].startswith(p + "/")
                                                  for p in preserved_dirs))}
            assert (truth - prev_files) - excused <= got
            threshold = threshold_of(state, 0)
            allowed = {"file:/r"} | {d for d in fs.dirs if dir_hash(d) in state.inner} | {
                d for d, c in before.items() if c > threshold}
            assert set(fs.listed) <= allowed
        prev_files = truth if mode == "full" else (prev_files | got)
        state = new_state


def test_object_store_lexical_listing_descends_only_from_the_last_partition():
    """Object stores have no directory times: with incrementalListing a run lists the root and
    only the key=value partitions that sort at or after the greatest one seen before; a new file
    in an older partition waits for the next full listing (fullListingInterval)."""
    fs = MemFS()
    parts = [fs.mkdir("file:/r", f"dt=2024-01-{d:02d}") for d in range(1, 29)]
    for p in parts:
        fs.add(p, "a.json")
    res, st1 = run_walk(fs, None, "full", recurse=False)
    assert st1.last == "dt=2024-01-28" and res.dirs_listed == 29
    fs.add(parts[-1], "late-in-last.json")
    new_part = fs.mkdir("file:/r", "dt=2024-01-29")
    fs.add(new_part, "n.json")
    fs.add(parts[0], "old.json")
    roots = ["s3a://bucket/r"]
    prev = ListingState(**{**st1.__dict__, "roots": roots_hash(roots)})
    kw = dict(enabled=True, roots=roots, listing_ts=10, interval=FullInterval(runs=24),
              has_sketch=True)
    mode, why = choose_listing(prev, **kw)
    assert mode == "lexical" and "dt=2024-01-28" in why
    res, st2 = run_walk(fs, st1, "lexical", recurse=False)
    assert fs.listed == ["file:/r", "file:/r/dt=2024-01-28", "file:/r/dt=2024-01-29"]
    found = {e.path.rsplit("/", 2)[-2] + "/" + e.path.rsplit("/", 1)[-1] for e in res.files}
    assert found == {"dt=2024-01-28/a.json", "dt=2024-01-28/late-in-last.json",
                     "dt=2024-01-29/n.json"}
    assert st2.last == "dt=2024-01-29" and st2.runs == st1.runs + 1
    full, _ = run_walk(fs, st2, "full", recurse=False)
    assert "file:/r/dt=2024-01-01/old.json" in {e.path for e in full.files}
    # when a full listing is due, or there is nothing to order, or several roots: full
    assert choose_listing(prev, **{**kw, "interval": FullInterval(runs=1)})[0] == "full"
    assert choose_listing(ListingState(**{**prev.__dict__, "last": None}), **kw)[0] == "full"
    assert choose_listing(prev, **{**kw, "roots": roots + ["s3a://bucket/q"]})[0] == "full"
    assert choose_listing(None, **kw) == ("full", "object store (s3a:) has no directory times; "
                                                   "no previous listing of these paths")


def _after(fs: MemFS, calls: list):
    """S3's StartAfter over MemFS: the root's entries whose name sorts after ``name`` (a
    folder ``n`` is listed as ``n/``, so it sorts after ``n`` itself)."""
    def after(root, name):
        calls.append((root, name))
        seen = list(fs.listed)
        (lv,) = list(fs.list_level([root]))
        fs.listed[:] = seen  # a LIST from ``name`` on, not the root's whole listing
        return Level(lv.dir, [f for f in lv.files if f.path.rsplit("/", 1)[1] > name],
                     [d for d in lv.dirs if d.path.rsplit("/", 1)[1] + "/" > name])
    return after


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(days=st.lists(st.integers(1, 60), min_size=1, max_size=12, unique=True),
       new=st.lists(st.tuples(st.integers(1, 70), st.booleans()), max_size=6),
       loose=st.booleans())
def test_lexical_start_after_lists_what_the_whole_root_listing_would(days, new, loose):
    """A lexical run that lists the root from the last partition on (StartAfter) finds the same
    files as one that lists the whole root, whenever the previous listing saw nothing but
    key=value folders there (``parts``); a loose file in the root turns that off, so the next
    lexical run lists the whole root again."""
    fs = MemFS()
    for d in days:
        fs.add(fs.mkdir("file:/r", f"dt={d:03d}"), "a.json")
    if loose:
        fs.add("file:/r", "loose.json")
    _, st1 = run_walk(fs, None, "full", recurse=False)
    assert st1.parts is (not loose)
    for d, second in new:
        fs.add(fs.mkdir("file:/r", f"dt={d:03d}"), "b.json" if second else "c.json")
    plain, st_plain = run_walk(fs, st1, "lexical", recurse=False)
    calls: list = []
    fs.listed = []
    res = walk(["file:/r"], fs.list_level, recurse=False, previous=st1, mode="lexical",
               listing_ts=0, started_ms=fs.t, margin_ms=0, took_ms=lambda: 0,
               list_after=_after(fs, calls))
    assert sorted(res.files) == sorted(plain.files)
    assert res.state.last == st_plain.last and res.state.parts == st_plain.parts
    assert calls == ([] if loose else [("file:/r", st1.last)])
    if not loose:
        assert "file:/r" not in fs.listed  # the root was not enumerated whole


# ---------------------------------------------------------------- lexicalFileNames (flat roots)
def test_choose_listing_by_file_names_only_with_the_option_and_a_flat_previous_listing():
    roots = ["s3a://bucket/flat"]
    prev = ListingState(w=0, full_ts=100, runs=0, roots=roots_hash(roots),
                        name="events-20241105T101500-0001.json")
    kw = dict(enabled=True, roots=roots, listing_ts=200, interval=FullInterval(runs=24),
              has_sketch=True, file_names=True)
    mode, why = choose_listing(prev, **kw)
    assert mode == "lexical" and "file names after events-20241105T101500-0001.json" in why
    assert "lexicalFileNames" in why
    # without the option, without a name (the root held directories), or for the usual
    # reasons (no sketch, files left for later, interval due, other roots, local disks): full
    assert choose_listing(prev, **{**kw, "file_names": False})[0] == "full"
    assert "no file name" in choose_listing(ListingState(**{**prev.__dict__, "name": None}),
                                            **kw)[1]
    assert "sketch" in choose_listing(prev, **{**kw, "has_sketch": False})[1]
    assert "left for later" in choose_listing(ListingState(**{**prev.__dict__, "pending": 1}),
                                              **kw)[1]
    assert "due" in choose_listing(prev, **{**kw, "interval": FullInterval(runs=1)})[1]
    assert choose_listing(prev, **{**kw, "roots": roots + ["s3a://bucket/q"]})[0] == "full"
    assert choose_listing(prev, **{**kw, "roots": ["s3a://bucket/other"]})[0] == "full"
    assert choose_listing(prev, **{**kw, "roots": ["file:/flat"]})[0] != "lexical"
    back = ListingState.from_element(json.loads(json.dumps(prev.to_element())))
    assert back == prev and "name" not in ListingState().to_element()


class FlatStore:
    """One flat object-store prefix: file name -> mtime, listed whole (``list_level``) or from a
    name on (``after``, S3's StartAfter); records which listing was made and what it returned.
    Names starting with ``_`` or ``.`` are hidden (Spark's rule), as the real listers do."""

    root = "s3a://bucket/flat"

    def __init__(self):
        self.files: dict[str, int] = {}
        self.calls: list[tuple[str, str | None, int]] = []  # (kind, start after, entries)

    def _entries(self, keep) -> list[FileEntry]:
        return [FileEntry(m, f"{self.root}/{n}", 1) for n, m in sorted(self.files.items())
                if keep(n) and n[0] not in "._"]

    def list_level(self, dirs):
        assert list(dirs) == [self.root]
        found = self._entries(lambda n: True)
        self.calls.append(("whole", None, len(found)))
        yield Level(self.root, found, [])

    def after(self, root, name):
        assert root == self.root
        found = self._entries(lambda n: n > name)
        self.calls.append(("after", name, len(found)))
        return Level(root, found, [])


def _flat_run(store: FlatStore, element: dict | None, T: int, *, interval: int,
              start_after: bool, force_full: bool = False):
    """One incremental run of a source with incrementalListing + lexicalFileNames +
    lateFiles=read over ``store``, as sources/files.py does it (listing choice, walk, band plan,
    late plan, the element to commit); returns (mode, files read, late plan, element)."""
    from sparkmark.planning.bands import BandOptions, BandState, plan_band
    from sparkmark.planning.latefiles import SettledSketch, plan_late
    previous = BandState.from_element(element)
    sketch = (SettledSketch.from_element(previous.extra.get("late"))
              if previous is not None else None)
    prev = (ListingState.from_element(previous.extra.get("listing"))
            if previous is not None else None)
    mode, _ = choose_listing(prev, enabled=True, roots=[store.root], listing_ts=T,
                             interval=FullInterval(runs=interval), has_sketch=sketch is not None,
                             file_names=True)
    if force_full:
        mode = "full"
    res = walk([store.root], store.list_level, recurse=False, previous=prev, mode=mode,
               listing_ts=T, started_ms=T, took_ms=lambda: 0, roots_key=[store.root],
               list_after=store.after if start_after else None, file_names=True)
    opts = BandOptions(max_band=100, late_files="read", incremental_listing=True,
                       lexical_file_names=True)
    plan = plan_band(res.files, previous, T, opts)
    late = plan_late(res.files, previous.low if previous else None, sketch,
                     previous.files if previous else {}, plan.selected,
                     -1 if plan.state.low is None else plan.state.low, full=mode == "full",
                     keep_late=False)
    read = sorted(set(plan.selected) | set(late.unseen) | set(late.late))
    extra = {**dict(plan.state.extra), "late": late.sketch.to_element(),
             "listing": ListingState(**{**res.state.__dict__,
                                        "pending": plan.deferred + plan.waiting}).to_element()}
    new = BandState(low=plan.state.low, high=plan.state.high, listing_ts=plan.state.listing_ts,
                    band=plan.state.band, files=plan.state.files, extra=extra).to_element()
    return mode, res, read, late, json.loads(json.dumps(new)), prev


flat_event = st.tuples(st.sampled_from(["grow", "grow", "older", "hidden"]),
                       st.integers(0, 3),    # how far back the name goes (older)
                       st.booleans())        # an old mtime (a long multipart upload)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(flat_event, max_size=6), st.integers(1, 300),
                          st.integers(0, 2)), min_size=1, max_size=12),
       st.integers(1, 4), st.booleans())
def test_lexical_file_names_read_every_file_once_against_a_model(timeline, interval,
                                                                 start_after):
    """A flat prefix with time-stamped names (``events-000007.json``), incrementalListing +
    lexicalFileNames, lateFiles=read.  Random uploads: names that grow, names that sort before
    the greatest one (a writer that finished late), hidden files, some with old mtimes (a long
    multipart upload), the run's T sometimes behind the newest upload (files left waiting), a
    random fullListingInterval; the store may not support StartAfter (``start_after``).

    The model: a lexical run lists only the names after the greatest one the previous listing
    saw (one ``after`` call, nothing else: the listing depends on the new files only) and
    reads every new file it lists whose mtime is in its band; a file it could not list is
    read by the next full listing, and reported there (``backfilled`` or late) when its mtime
    is settled; no file is read twice; a last full listing leaves nothing unread."""
    store = FlatStore()
    element = None
    read_by: dict[str, int] = {}
    counter, uid, now = 0, 0, 10_000
    for step, (events, advance, lag) in enumerate(timeline):
        for kind, back, old in events:
            uid += 1
            mtime = now - 500 if old else now
            if kind == "grow" or (kind == "older" and counter == 0):
                counter += 1
                store.files[f"events-{counter:06d}.json"] = mtime
            elif kind == "older":  # sorts before events-{counter}.json ("-" < ".")
                store.files[f"events-{max(0, counter - back):06d}-{uid}.json"] = mtime
            else:
                store.files[f"_events-{uid}.tmp"] = mtime
            now += 1
        now += advance
        T = now - lag
        prev_state = json.loads(json.dumps(element)) if element else None
        prev_low = prev_state["low"] if prev_state else None
        store.calls = []
        mode, res, read, late, element, prev = _flat_run(store, element, T, interval=interval,
                                                         start_after=start_after)
        visible = {n: m for n, m in store.files.items() if n[0] not in "._"}
        listed = {e.path.rsplit("/", 1)[1] for e in res.files}
        if mode == "lexical" and start_after:
            assert prev is not None and prev.name is not None
            assert listed == {n for n in visible if n > prev.name}
            assert [c[:2] for c in store.calls] == [("after", prev.name)]
        else:  # a full listing, or a store without StartAfter: the whole root
            assert listed == set(visible) and [c[0] for c in store.calls] == ["whole"]
            assert res.state.name == (max(visible) if visible else None)
        for f in read:
            name = f.path.rsplit("/", 1)[1]
            assert name not in read_by, f"{name} read twice"
            read_by[name] = step
        for n in listed:  # a listed new file in the band is read by this run
            if n not in read_by and prev_low is not None and prev_low < visible[n] <= T:
                pytest.fail(f"{n} was listed in the band and not read")
        if mode == "full" and prev_low is not None:
            reported = {f.path.rsplit("/", 1)[1] for f in late.unseen + late.late}
            for n, m in visible.items():
                if m <= prev_low:  # settled: read now or before, and reported if now
                    assert n in read_by
                    if read_by[n] == step:
                        assert n in reported
    _, _, read, _, element, _ = _flat_run(store, element, now + 1_000, interval=interval,
                                          start_after=start_after, force_full=True)
    for f in read:
        name = f.path.rsplit("/", 1)[1]
        assert name not in read_by, f"{name} read twice"
        read_by[name] = len(timeline)
    assert set(read_by) == {n for n in store.files if n[0] not in "._"}


def test_lexical_file_names_an_older_name_waits_for_the_full_listing_and_is_backfilled():
    store = FlatStore()
    for i in range(50):
        store.files[f"events-20241105T10{i:02d}00-0001.json"] = 1_000 + i
    mode, res, read, _, element, _ = _flat_run(store, None, 2_000, interval=2,
                                               start_after=True)
    assert mode == "full" and len(read) == 50
    assert res.state.name == "events-20241105T104900-0001.json"
    for i in range(5):
        store.files[f"events-20241105T11{i:02d}00-0001.json"] = 2_100 + i
    store.files["events-20241105T100000-0002.json"] = 2_050  # an older name, uploaded before
    store.calls = []
    mode, res, read, late, element, _ = _flat_run(store, element, 2_200, interval=2,
                                                  start_after=True)
    assert mode == "lexical"
    assert store.calls == [("after", "events-20241105T104900-0001.json", 5)]
    assert [f.path.rsplit("/", 1)[1] for f in read] == [
        f"events-20241105T11{i:02d}00-0001.json" for i in range(5)]
    assert res.state.name == "events-20241105T110400-0001.json" and late.count is None
    mode, _, read, late, element, _ = _flat_run(store, element, 2_400, interval=2,
                                                start_after=True)  # one run in 2: full
    assert mode == "full"
    assert [f.path.rsplit("/", 1)[1] for f in read] == ["events-20241105T100000-0002.json"]
    assert late.info()["backfilled"] == 1
    mode, _, read, late, _, _ = _flat_run(store, element, 2_600, interval=2, start_after=True)
    assert mode == "lexical" and read == [] and not late.unseen


def test_lexical_file_names_an_excluded_file_does_not_set_the_greatest_name():
    """``exclusions``: a file the source leaves out (an upload in progress under a temporary
    name that sorts after the finished one) must not hold the next listing back."""
    store = FlatStore()
    store.files = {"events-0001.json": 1, "events-0002.json.tmp": 2}
    res = walk([store.root], store.list_level, recurse=False, previous=None, mode="full",
               listing_ts=10, file_names=True, name_counts=lambda p: not p.endswith(".tmp"))
    assert res.state.name == "events-0001.json"
    store.files["events-0002.json"] = 3
    res = walk([store.root], store.list_level, recurse=False, previous=res.state,
               mode="lexical", listing_ts=20, list_after=store.after, file_names=True,
               name_counts=lambda p: not p.endswith(".tmp"))
    assert {e.path.rsplit("/", 1)[1] for e in res.files} == {"events-0002.json",
                                                             "events-0002.json.tmp"}
    assert res.state.name == "events-0002.json"
    no_filter = walk([store.root], store.list_level, recurse=False, previous=None, mode="full",
                     listing_ts=10, file_names=True)
    assert no_filter.state.name == "events-0002.json.tmp"
