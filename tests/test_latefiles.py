"""The late-file detector (pure): the IBLT, the sketch's bounds, and property tests against a
reference model that keeps the whole history (every listing and every file version read)."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note_event
from hypothesis import strategies as st

from sparkmark.core.errors import ConfigError
from sparkmark.planning.filecolumns import FileColumns
from sparkmark.planning.bands import BandOptions, BandState, FileEntry, late_mode, plan_band
from sparkmark.planning.iblt import CAPACITY, IBLT
from sparkmark.planning.latefiles import SettledSketch, build_sketch, plan_late

DT = 100


def F(name: str, mtime: int) -> FileEntry:
    return FileEntry(mtime=mtime, path=f"file:/in/{name}", size=1)


def run(listing, state, sketch, T, *, full=True, mode="warn", opts=BandOptions(max_band=DT)):
    """One run as the source does it: band plan, late plan, late files read when mode=read;
    returns (files read, late files found, the next band state, the next sketch)."""
    plan = plan_band(listing, state, T, opts)
    late = plan_late(listing, state.low if state else None, sketch,
                     state.files if state else {}, plan.selected, plan.state.low, full=full,
                     keep_late=mode == "warn")
    read = list(plan.selected) + list(late.unseen) + (list(late.late) if mode == "read" else [])
    element = {**plan.state.to_element(), "late": late.sketch.to_element()}
    back = json.loads(json.dumps(element))
    return (read, late, BandState.from_element(back), SettledSketch.from_element(back["late"]))


# ---------------------------------------------------------------------- IBLT
def test_iblt_decodes_the_symmetric_difference():
    rng = random.Random(7)
    common = [rng.getrandbits(64) for _ in range(5000)]
    only_a = {rng.getrandbits(64) for _ in range(150)}
    only_b = {rng.getrandbits(64) for _ in range(150)}
    a, b = IBLT(), IBLT()
    a.add_all(common + sorted(only_a))
    b.add_all(common + sorted(only_b))
    plus, minus, complete = a.minus(b).decode()
    assert complete and plus == only_a and minus == only_b


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, (1 << 64) - 1), max_size=120), st.integers(1, 40),
       st.lists(st.integers(0, (1 << 64) - 1), max_size=20), st.integers(1, 50))
def test_iblt_add_all_on_arrays_is_add_of_each_key(keys, threshold, before, chunk):
    """``add_all`` of many keys sums on numpy arrays, batch by batch: the table is the one
    ``add`` of each key makes (the 64-bit products wrap, extreme keys included), on an empty
    table or not."""
    from sparkmark.planning import iblt
    keys = keys + [0, (1 << 64) - 1]
    reference = IBLT()
    for k in before + keys:
        reference.add(k)
    saved = iblt._ARRAY_FROM, iblt._ARRAY_CHUNK
    # arrays from this many keys on, in batches of this many (4,096 and 65,536 in use)
    iblt._ARRAY_FROM, iblt._ARRAY_CHUNK = threshold, chunk
    try:
        table = IBLT()
        table.add_all(before)
        table.add_all(iter(keys))  # any iterable
    finally:
        iblt._ARRAY_FROM, iblt._ARRAY_CHUNK = saved
    assert table == reference
    if len(before) >= threshold or len(keys) >= threshold:
        note_event("arrays used")


def test_iblt_add_all_of_a_first_runs_keys_matches_one_add_each():
    rng = random.Random(17)
    keys = [rng.getrandbits(64) for _ in range(50_000)]
    reference = IBLT()
    for k in keys:
        reference.add(k)
    table = IBLT()
    table.add_all(keys)
    assert table == reference


def test_iblt_capacity_is_as_documented_and_overflow_is_reported_not_guessed():
    rng = random.Random(11)
    for trial in range(5):
        t = IBLT()
        keys = {rng.getrandbits(64) for _ in range(CAPACITY)}
        t.add_all(keys)
        plus, minus, complete = t.decode()
        assert complete and plus == keys and not minus, trial
    t = IBLT()
    t.add_all(rng.getrandbits(64) for _ in range(3 * CAPACITY))
    plus, minus, complete = t.decode()
    assert not complete


def test_sketch_roundtrip_and_bounded_size():
    keys = [random.Random(3).getrandbits(64) for _ in range(100_000)]
    s = build_sketch(keys, at=123)
    text = json.dumps(s.to_element())
    assert len(text) <= 20 * 1024
    back = SettledSketch.from_element(json.loads(text))
    assert back is not None and back.digest == s.digest and back.table == s.table and back.at == 123
    assert SettledSketch.from_element({"at": 1}) is None  # unreadable: check skipped, not a crash


def test_late_mode_option():
    assert late_mode(None) == "warn" and late_mode(" READ ") == "read"
    with pytest.raises(ConfigError, match="lateFiles='sometimes'.*warn, read, fail, ignore"):
        late_mode("sometimes")


# ---------------------------------------------------------------------- examples
def test_preserved_mtime_copy_is_found_once_and_read_once_with_read():
    _, _, s1, k1 = run([F("a", 100), F("b", 900)], None, None, 1000)
    # b2 copied in with its old mtime (cp -p): below low = 900, never listed
    listing = [F("a", 100), F("b", 900), F("b2", 50)]
    read, late, s2, k2 = run(listing, s1, k1, 1200, mode="read")
    assert [f.path for f in late.late] == ["file:/in/b2"] and late.count == 1
    assert read == [F("b2", 50)]
    read, late, _, _ = run(listing, s2, k2, 1400, mode="read")
    assert read == [] and late.count == 0


def test_warned_late_file_is_reported_until_read_or_ignored():
    """lateFiles=warn leaves a late file out of the sketch: every full listing reports it until
    a run reads it (lateFiles=read, as the warning says) or accepts it (lateFiles=ignore)."""
    _, _, s1, k1 = run([F("a", 100)], None, None, 1000)
    listing = [F("a", 100), F("old", 10)]
    _, late, s2, k2 = run(listing, s1, k1, 1200)
    assert late.count == 1
    read, late, s3, k3 = run(listing, s2, k2, 1400)
    assert late.count == 1 and read == []
    read, late, s4, k4 = run(listing, s3, k3, 1600, mode="read")
    assert [f.path for f in read] == ["file:/in/old"]
    assert run(listing, s4, k4, 1800)[1].count == 0
    _, late, s5, k5 = run(listing, s3, k3, 1600, mode="ignore")
    assert late.count == 1 and run(listing, s5, k5, 1800)[1].count == 0


def test_a_file_no_partial_listing_showed_is_read_once_by_the_next_full_listing():
    _, _, s1, k1 = run([F("a", 100)], None, None, 1000)                     # full, low 900
    _, _, s2, k2 = run([F("a", 100), F("b", 1050)], s1, k1, 1200, full=False)  # low 1049
    # "mid" (mtime 1000) arrived in a folder the partial listings did not visit
    listing = [F("a", 100), F("b", 1050), F("mid", 1000), F("old", 10)]
    read, late, s3, k3 = run(listing, s2, k2, 1400)
    assert [f.path for f in late.unseen] == ["file:/in/mid"] and late.info()["backfilled"] == 1
    assert [f.path for f in late.late] == ["file:/in/old"]                 # below full_at
    assert "file:/in/mid" in {f.path for f in read}
    read, late, _, _ = run(listing, s3, k3, 1600)
    assert "file:/in/mid" not in {f.path for f in read} and not late.unseen


def test_a_known_path_whose_mtime_moved_back_is_neither_late_nor_read():
    _, _, s1, k1 = run([F("a", 100), F("b", 950)], None, None, 1000)       # a settled, b in band
    _, _, s2, k2 = run([F("a", 100), F("b", 950), F("c", 1100)], s1, k1, 1200)
    read, late, _, _ = run([F("a", 50), F("b", 60), F("c", 1100)], s2, k2, 1400, mode="read")
    assert read == [] and late.count == 0 and late.moved == 2


def test_first_run_and_missing_sketch_do_not_check():
    _, late, s1, _ = run([F("a", 100)], None, None, 1000)
    assert late.count is None
    _, late, _, k = run([F("a", 100), F("z", 5)], s1, None, 1200)  # element from an old version
    assert late.count is None and k is not None


def test_many_deletions_overflow_then_the_sketch_is_rebuilt():
    files = [F(f"f{i}", i) for i in range(3000)]
    _, _, s1, k1 = run(files, None, None, 10_000)
    kept = files[2000:] + [F("late", 1)]
    _, late, s2, k2 = run(kept, s1, k1, 10_200)
    assert late.count is None and late.info()["late_overflow"] is True
    _, late, _, _ = run(kept + [F("late2", 2)], s2, k2, 10_400)
    assert late.count == 1 and late.late[0].path.endswith("late2")


def test_state_bounded_after_150_runs_of_20_new_and_2_late():
    state, sketch, now, n = None, None, 1_000_000, 0
    files: list[FileEntry] = []
    found = 0
    for _r in range(150):
        for _ in range(20):
            n += 1
            files.append(F(f"n{n}", now - 50))
        for _ in range(2):
            n += 1
            files.append(F(f"late{n}", now - 100 * DT))  # preserved old mtime
        now += 3 * DT
        _, late, state, sketch = run(files, state, sketch, now, mode="read")
        found += late.count or 0
    size = len(json.dumps({**state.to_element(), "late": sketch.to_element()}))
    assert size <= 64 * 1024
    assert found == 2 * 149  # every late file after the first run, exactly once


# ---------------------------------------------------------------------- property tests
event = st.one_of(
    st.tuples(st.just("new"), st.integers(-3 * DT, DT), st.integers(0, 0)),
    st.tuples(st.just("late"), st.integers(-20 * DT, -2 * DT), st.integers(0, 0)),
    st.tuples(st.just("modify"), st.integers(-5 * DT, DT), st.integers(0, 1000)),
    st.tuples(st.just("delete"), st.integers(0, 0), st.integers(0, 1000)),
    st.tuples(st.just("restore"), st.integers(0, 0), st.integers(0, 1000)),
)
step = st.tuples(st.lists(event, max_size=6), st.integers(0, 3 * DT), st.booleans(),
                 st.sampled_from(["warn", "read"]), st.one_of(st.none(), st.integers(1, 3)))


def apply_events(events, files: dict[str, int], deleted: dict[str, int],
                 used: set[tuple[str, int]], now: int, counter: int) -> int:
    """One step's arrivals, late arrivals, modifications (never back to a version the path
    had), deletions and restores, applied to ``files``; returns the new file counter."""
    for kind, offset, x in events:
        if kind in ("new", "late"):
            counter += 1
            files[f"file:/in/f{counter}"] = now + offset
        elif kind == "restore" and deleted:
            p = sorted(deleted)[x % len(deleted)]
            if p not in files:
                files[p] = deleted.pop(p)
        elif files and kind in ("modify", "delete"):
            p = sorted(files)[x % len(files)]
            if kind == "delete":
                deleted[p] = files.pop(p)
            elif (p, now + offset) not in used:
                files[p] = now + offset
        used.update(files.items())
    return counter


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=12))
def test_detector_against_whole_history_model(timeline):
    """Arrivals, late arrivals (old mtimes), modifications (fresh mtimes), deletions, restores of
    deleted files with their old mtime, bounded runs, warn/read, full and incremental listings.

    The model remembers every file version read, every listing, and the last full listing:
    * all runs full: the run reports exactly the visible files with ``mtime <= previous low``
      that were not in the previous listing (the sketch's definition);
    * always: every *late* file (``mtime <=`` the low of the last full listing, never read,
      not in the last full listing, or reported late and not read since) is reported by the
      next full listing, and every reported file is late or a restored file (listed or read
      once, then missing from a later listing, then back with the same mtime: the documented
      false positive);
    * a never-read settled file above the last full listing's low (one a partial listing
      could not show) is read by the next full listing (``unseen``), not reported;
    * a path known with another mtime may be taken as moved back (neither late nor read);
    * no file version is read twice, except a restored one (the same false positive)."""
    files: dict[str, int] = {}
    deleted: dict[str, int] = {}
    used: set[tuple[str, int]] = set()
    ever_read: set[tuple[str, int]] = set()
    seen: set[tuple[str, int]] = set()
    vanished: set[tuple[str, int]] = set()
    prev_listing: set[tuple[str, int]] | None = None
    last_full: set[tuple[str, int]] = set()
    waiting: set[tuple[str, int]] = set()       # reported late under warn, not read since
    full_low: int | None = None
    all_full = True
    state = sketch = None
    now, counter = 10_000, 0
    for i, (events, advance, full, mode, bound) in enumerate(timeline):
        counter = apply_events(events, files, deleted, used, now, counter)
        now += advance
        full = full or i == 0 or sketch is None
        all_full = all_full and full
        opts = BandOptions(max_band=DT, bounded_files=bound)
        listing = [FileEntry(mtime=m, path=p, size=1) for p, m in files.items()]
        visible = set(files.items())
        prev_low = state.low if state else None
        read, late, state2, sketch2 = run(listing, state, sketch, now, full=full, mode=mode,
                                          opts=opts)
        known = ever_read | last_full
        moved_ok = {(p, m) for p, m in visible if any(q == p and n != m for q, n in known)}
        if not full or prev_low is None:
            assert late.count is None and not late.unseen
        else:
            assert not late.overflow  # a few differences always decode
            reported = {(f.path, f.mtime) for f in late.late}
            unseen = {(f.path, f.mtime) for f in late.unseen}
            settled = {(p, m) for p, m in visible if m <= prev_low}
            fresh = {v for v in settled if v not in ever_read
                     and (v not in last_full or v in waiting)}
            late_ref = {v for v in fresh if full_low is None or v[1] <= full_low}
            unseen_ref = fresh - late_ref
            assert late_ref - moved_ok <= reported, "a late file was not reported"
            assert reported <= late_ref | vanished, "a reported file is not late"
            assert unseen_ref - moved_ok <= unseen, "a file no listing showed was not read"
            assert unseen <= unseen_ref | vanished, "a backfill read is not new"
            if all_full:
                assert not unseen
                want = {v for v in settled if v not in prev_listing or v in waiting}
                assert reported <= want and want - reported <= moved_ok
        for f in read:
            assert (f.path, f.mtime) not in ever_read or (f.path, f.mtime) in vanished, \
                "a file version was read twice"
            ever_read.add((f.path, f.mtime))
        if full and mode == "warn":
            waiting = {(f.path, f.mtime) for f in late.late}
        elif full:
            waiting = set()
        waiting &= visible
        seen |= visible | ever_read
        vanished |= {v for v in seen if v not in visible}
        if full:
            last_full = visible
            full_low = state2.low
        prev_listing = visible
        state, sketch = state2, sketch2


# ---------------------------------------------------------------------- the listing-order shortcut
def _plan_parts(late):
    s = late.sketch
    return (late.late, late.count, late.overflow, late.removed, late.unseen, late.moved,
            s.at, s.digest, s.table, s.full_at)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_listing_order_shortcut_plans_what_the_keys_plan(timeline, rnd):
    """A full listing whose settled region has the stored fingerprint skips the per-file keys;
    whatever it plans (late, unseen, moved, removed, the next sketch) is what the keys give
    (the same sketch without its fingerprint).  Listings are sometimes shuffled, so both ways
    are taken: the reference is the plan without the shortcut."""
    from dataclasses import replace as dc_replace
    files: dict[str, int] = {}
    deleted: dict[str, int] = {}
    used: set[tuple[str, int]] = set()
    state = sketch = None
    now, counter = 10_000, 0
    for i, (events, advance, full, mode, bound) in enumerate(timeline):
        counter = apply_events(events, files, deleted, used, now, counter)
        now += advance
        full = full or i == 0 or sketch is None
        listing = [FileEntry(mtime=m, path=p, size=1) for p, m in files.items()]
        if rnd.random() < 0.2:
            rnd.shuffle(listing)
        opts = BandOptions(max_band=DT, bounded_files=bound)
        plan = plan_band(listing, state, now, opts)
        args = (listing, state.low if state else None)
        rest = (state.files if state else {}, plan.selected, plan.state.low)
        kw = {"full": full, "keep_late": mode == "warn"}
        got = plan_late(*args, sketch, *rest, **kw)
        ref = plan_late(*args, None if sketch is None else dc_replace(sketch, order=None),
                        *rest, **kw)
        assert _plan_parts(got) == _plan_parts(ref)
        if full and sketch is not None and sketch.order is not None and state is not None \
                and sketch.at == state.low and got.sketch.order is not None:
            note_event("the stored fingerprint was there to compare")  # --hypothesis-show-statistics
        _, _, state, sketch = run(listing, state, sketch, now, full=full, mode=mode, opts=opts)


def test_listing_order_shortcut_is_taken_and_falls_back():
    """The second full listing of an unchanged directory takes the shortcut (no keys); a late
    file, a deleted file or another listing order each take the keys and say what they find."""
    import sparkmark.planning.latefiles as lf
    listing = [F(f"f{i}", 1000 + i) for i in range(50)]
    _, first, state, sketch = run(listing, None, None, 10_000)
    assert first.count is None and sketch.order is not None
    calls = []
    real = lf.keys_of
    lf.keys_of = lambda entries: calls.append(len(list(entries))) or real(entries)
    try:
        _, second, state2, sketch2 = run(listing, state, sketch, 10_200)
        assert second.count == 0 and max(calls, default=0) == 0, calls  # no settled keys
        assert sketch2.order == sketch.order and sketch2.digest == sketch.digest
        calls.clear()
        late = listing + [F("late", 500)]
        _, found, _, _ = run(late, state, sketch, 10_200)
        assert [f.path for f in found.late] == ["file:/in/late"]
        assert max(calls) == sum(f.mtime <= state.low for f in late)  # every settled file
        _, gone, _, _ = run(listing[1:], state, sketch, 10_200)
        assert gone.count == 0 and gone.removed == 1
        _, shuffled, _, s2 = run(listing[::-1], state, sketch, 10_200)
        assert shuffled.count == 0 and s2.order != sketch.order and s2.digest == sketch.digest
    finally:
        lf.keys_of = real


def _order_reference(entries, chunk):
    """listing_order as first written (2026-11): per chunk, a flag, the mtimes, the lengths
    when a path holds a NUL, the NUL-terminated paths; the fingerprints stored in bookmarks
    were made this way, so the faster code must give the same digest."""
    import hashlib
    from array import array
    h = hashlib.sha1(len(entries).to_bytes(8, "little"))
    for i in range(0, len(entries), chunk):
        part = entries[i:i + chunk]
        paths = [f.path for f in part]
        text = "\0".join(paths) + "\0"
        plain = text.count("\0") == len(paths)
        h.update(b"\0" if plain else b"\1")
        h.update(array("q", [f.mtime for f in part]).tobytes())
        if not plain:
            h.update(array("q", map(len, paths)).tobytes())
        h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


path_text = st.text(st.characters(blacklist_categories=["Cs"]) | st.sampled_from(
    ["\0", "\ud83d", "/", "é"]), max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(path_text, st.integers(-2**63, 2**63 - 1)), max_size=12),
       st.integers(1, 5), st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1))
def test_listing_fingerprints_are_the_stored_encoding(items, chunk, low, high):
    """``listing_order`` (entries, and the listing's columns) gives the digest of
    the original encoding for any paths (NULs, lone surrogates) and mtimes, at any chunk size;
    the fast path's two regions are the filtered listing's own fingerprints."""
    import sparkmark.planning.latefiles as lf
    listing = [FileEntry(m, "file:/" + p, 1) for p, m in items]
    old = lf._ORDER_CHUNK
    lf._ORDER_CHUNK = chunk
    try:
        want = _order_reference(listing, chunk)
        assert lf.listing_order(listing) == want
        low, high = min(low, high), max(low, high)
        settled = [f for f in listing if f.mtime <= low]
        cols = FileColumns.of(listing)
        assert lf.listing_order(cols) == want
        got = lf._unchanged_settled(cols, low, high, _order_reference(settled, chunk))
        assert got == ([f for f in listing if low < f.mtime <= high],
                       _order_reference([f for f in listing if f.mtime <= high], chunk))
        if listing:
            assert lf._unchanged_settled(cols, low, high, "0" * 40) is None
    finally:
        lf._ORDER_CHUNK = old


def test_listing_fingerprint_is_pinned():
    """A fingerprint stored by an earlier release still matches (the digest is state)."""
    from sparkmark.planning.latefiles import listing_order
    listing = [F(f"f{i}", 1000 + i) for i in range(5)] + [
        FileEntry(-3, "file:/in/nul\0x", 1), FileEntry(7, "file:/in/\ud83d\ude42é", 1)]
    assert listing_order(listing) == "ccce212b0cb8bcaf50de84a4b0e6b8c2dd4dc9a8"
