"""Pure key-range planning for JDBC bookmarks: exhaustive cases and hypothesis property tests
against a plain reference model (Python tuple comparison), plus the rendered SQL run on a real
SQLite database (stdlib sqlite3) to check quoting and escaping of arbitrary values."""
from __future__ import annotations

import itertools
import json
import sqlite3

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sparkmark.core.errors import ConfigError, StateCorruptError
from sparkmark.planning import keyrange as kr

# ------------------------------------------------------------------ reference model


def ref_after(row, values, order):
    """Strictly after ``values`` in ``order`` — Python's own tuple comparison."""
    return tuple(row) > tuple(values) if order == "asc" else tuple(row) < tuple(values)


def ref_in_range(row, after, through, order):
    if after is not None and not ref_after(row, after, order):
        return False
    if through is not None and ref_after(row, through, order):
        return False
    return True


small_int = st.integers(min_value=-3, max_value=3)
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=6)


def tuples(elem, n):
    return st.tuples(*([elem] * n))


@st.composite
def rows_and_key(draw, elem=small_int):
    n = draw(st.integers(min_value=1, max_value=3))
    rows = draw(st.lists(tuples(elem, n), max_size=25))
    key = draw(tuples(elem, n))
    return n, rows, key


orders = st.sampled_from(["asc", "desc"])

# ------------------------------------------------------------------ lexicographic predicates


@given(rows_and_key(), orders, st.booleans())
def test_lex_after_matches_tuple_order(data, order, inclusive):
    n, rows, key = data
    pred = kr.lex_after(key, order, inclusive=inclusive)
    for row in rows:
        want = ref_after(row, key, order) or (inclusive and tuple(row) == tuple(key))
        assert kr.evaluate(pred, row) == want


@given(rows_and_key(), orders)
def test_lex_through_matches_tuple_order(data, order):
    n, rows, key = data
    pred = kr.lex_through(key, order)
    for row in rows:
        assert kr.evaluate(pred, row) == (not ref_after(row, key, order))


def test_lex_exhaustive_small_domain():
    dom = range(3)
    for n in (1, 2, 3):
        for key in itertools.product(dom, repeat=n):
            for order in ("asc", "desc"):
                after, through = kr.lex_after(key, order), kr.lex_through(key, order)
                for row in itertools.product(dom, repeat=n):
                    assert kr.evaluate(after, row) == ref_after(row, key, order)
                    assert kr.evaluate(through, row) == (not ref_after(row, key, order))
                    # exactly one of: after, or at-or-before
                    assert kr.evaluate(after, row) != kr.evaluate(through, row)


def test_null_keys_are_never_in_a_range():
    pred = kr.range_predicate((1, 1), (5, 5), "asc")
    assert not kr.evaluate(pred, (None, 3))
    assert kr.evaluate(pred, (3, None))  # 1 < 3 < 5 decides on k1 alone
    assert not kr.evaluate(pred, (1, None))  # needs k2 > 1: unknown, so not read
    assert not kr.evaluate(kr.not_null(2), (1, None))


def test_compound_predicate_has_sargable_first_key_bound():
    sql = kr.render(kr.range_predicate((10, "b"), (20, "x"), "asc"), ['"a"', '"b"'],
                    ["int", "string"])
    assert sql.startswith('("a" >= 10 AND ')
    assert '"a" <= 20' in sql
    assert kr.render(kr.range_predicate((10,), (20,), "desc"), ['"a"'], ["int"]) == \
        '("a" < 10 AND "a" >= 20)'


# ------------------------------------------------------------------ read plans across runs


@given(st.lists(st.lists(st.integers(0, 40), max_size=6), min_size=1, max_size=6),
       st.integers(1, 2), orders)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_incremental_runs_read_every_row_exactly_once(batches, n, order):
    """Rows arrive in batches with keys past every earlier key (monotonic); each run reads
    (last, upper]; every row is read by exactly one run."""
    table: list[tuple] = []
    read: list[tuple] = []
    last = None
    base = 0
    for batch in batches:
        # monotonic new keys: each batch strictly after the previous ones in the sort order
        new = sorted({(base + 1 + v, v % 3)[:n] for v in batch})
        base += 50
        if order == "desc":
            new = [tuple(-x for x in k) for k in new]
        table.extend(new)
        upper = (max(table) if order == "asc" else min(table)) if table else None
        plan = kr.plan_read(kr.INCREMENTAL, last, upper)
        pred = plan.predicate(order)
        got = [r for r in table if kr.evaluate(pred, r)]
        assert got == [r for r in table
                       if upper is not None and ref_in_range(r, last, upper, order)]
        assert plan.new_input == bool(got)
        read.extend(got)
        last = plan.commit_last
    assert sorted(read) == sorted(table)


def test_plan_modes():
    assert kr.plan_read(kr.ALL, None, None).predicate("asc") == kr.TRUE
    p = kr.plan_read(kr.INCREMENTAL, None, None)  # empty table, first run
    assert p.empty and not p.new_input and p.commit_last is None
    p = kr.plan_read(kr.INCREMENTAL, (5,), None)  # table emptied: keep the bookmark
    assert p.empty and p.commit_last == (5,)
    p = kr.plan_read(kr.INCREMENTAL, (5,), (5,))
    assert p.empty and not p.new_input and p.commit_last == (5,)
    p = kr.plan_read(kr.INCREMENTAL, (5,), (9,))
    assert not p.empty and p.new_input and p.commit_last == (9,)
    p = kr.plan_read(kr.REPLAY, None, None)  # the "to" run had read nothing
    assert p.empty and p.predicate("asc") == kr.FALSE
    p = kr.plan_read(kr.REPLAY, (2,), (7,))
    assert [r for r in range(10) if kr.evaluate(p.predicate("asc"), (r,))] == [3, 4, 5, 6, 7]
    with pytest.raises(ValueError):
        kr.plan_read("sideways", None, None)


@given(st.lists(st.integers(0, 30), min_size=1, max_size=8), st.data(), orders)
def test_pause_from_to_replays_what_those_runs_read(uppers, data, order):
    """Runs r0..rk commit upper bounds u0..uk (monotonic in ``order``); replaying from run i to
    run j reads exactly the rows that runs i+1..j read."""
    us = sorted(set(uppers), reverse=(order == "desc"))
    rows = list(range(-1, 32))
    committed = [None] + [(u,) for u in us]  # element before the first run: nothing
    reads = []
    for k in range(1, len(committed)):
        p = kr.plan_read(kr.INCREMENTAL, committed[k - 1], committed[k])
        reads.append({r for r in rows if kr.evaluate(p.predicate(order), (r,))})
    i = data.draw(st.integers(0, len(committed) - 1))
    j = data.draw(st.integers(i, len(committed) - 1))
    p = kr.plan_read(kr.REPLAY, committed[i], committed[j])
    got = {r for r in rows if kr.evaluate(p.predicate(order), (r,))}
    want = set().union(*reads[i:j]) if j > i else set()
    assert got == want


# ------------------------------------------------------------------ rendering on a real database


@given(st.lists(st.tuples(text, st.integers(-5, 5)), max_size=15),
       st.tuples(text, st.integers(-5, 5)), st.tuples(text, st.integers(-5, 5)), orders)
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_rendered_sql_selects_the_reference_rows_in_sqlite(rows, after, through, order):
    """Strings with quotes, ``?``, braces, comment markers etc. render as safe literals: the SQL
    selects exactly the reference model's rows (SQLite compares text by code point, as Python)."""
    db = sqlite3.connect(":memory:")
    db.execute('CREATE TABLE "t""x" ("k""1" TEXT, "k 2" INTEGER)')
    db.executemany('INSERT INTO "t""x" VALUES (?, ?)', rows)
    pred = kr.range_predicate(after, through, order)
    cols = [kr.quote_identifier('k"1'), kr.quote_identifier("k 2")]
    sql = f'SELECT "k""1", "k 2" FROM {kr.quote_identifier("t" + chr(34) + "x")} WHERE ' + \
        kr.render(pred, cols, ["string", "int"])
    got = sorted(db.execute(sql).fetchall())
    want = sorted(r for r in rows if ref_in_range(r, after, through, order))
    assert got == want


def test_string_literals_escape_quotes():
    assert kr.render_literal("string", "it's") == "'it''s'"
    assert kr.render_literal("string", "'; DROP TABLE x; --") == "'''; DROP TABLE x; --'"
    assert kr.render_literal("date", "2024-02-29") == "CAST('2024-02-29' AS DATE)"
    assert kr.render_literal("timestamp", "2024-01-05T10:00:00.5") == \
        "CAST('2024-01-05 10:00:00.5' AS TIMESTAMP)"
    assert kr.render_literal("timestamptz", "2024-01-05 08:00:00.5+00") == \
        "CAST('2024-01-05 08:00:00.5+00' AS TIMESTAMP WITH TIME ZONE)"
    assert kr.render_literal("decimal", "-12.50") == "-12.50"
    assert kr.quote_identifier('a"b') == '"a""b"'
    assert kr.quote_identifier("a`b", "`") == "`a``b`"
    for bad in [("int", "1; DROP"), ("int", True), ("decimal", "1e5; x"), ("date", "2024-13-01"),
                ("date", "yesterday"), ("timestamp", "2024-01-05 25:00:00"),
                ("string", "a\x00b"), ("string", 5), ("float", 1.5),
                ("timestamptz", "2024-01-05 10:00:00")]:
        with pytest.raises(ValueError):
            kr.render_literal(*bad)


# ------------------------------------------------------------------ state elements


key_values = {
    "int": st.integers(-(2 ** 70), 2 ** 70),
    "decimal": st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
    "string": text,
    "date": st.dates().map(lambda d: d.isoformat()),
    "timestamp": st.datetimes().map(lambda d: d.isoformat(sep=" ")),
}


@given(st.lists(st.sampled_from(sorted(key_values)), min_size=1, max_size=4), st.data(), orders)
def test_element_round_trips_exactly_through_json(types, data, order):
    last = tuple(data.draw(key_values[t]) for t in types)
    keys = [f"k{i}" for i in range(len(types))]
    el = kr.make_element("s.t", keys, types, order, last)
    back = json.loads(json.dumps(el))
    assert back == el
    assert kr.read_element(back, "ctx", keys, types, order) == tuple(
        kr.canonical(t, v) for t, v in zip(types, last))
    # and the canonical value orders like the raw value
    for t, v in zip(types, last):
        kr.python_value(t, kr.canonical(t, v))


def test_element_mismatches_are_clear_errors():
    el = kr.make_element("s.t", ["a", "b"], ["int", "string"], "asc", (1, "x"))
    with pytest.raises(ConfigError, match="bookmark keys"):
        kr.read_element(el, "src", ["a"], ["int"], "asc")
    with pytest.raises(ConfigError, match="sort order"):
        kr.read_element(el, "src", ["a", "b"], ["int", "string"], "desc")
    with pytest.raises(ConfigError, match="changed type"):
        kr.read_element(el, "src", ["a", "b"], ["int", "int"], "asc")
    with pytest.raises(ConfigError, match="own transformation_ctx"):
        kr.read_element({"low": 1, "high": 2, "files": []}, "src", ["a"], ["int"], "asc")
    with pytest.raises(StateCorruptError):
        kr.read_element(dict(el, last=[1]), "src", ["a", "b"], ["int", "string"], "asc")
    with pytest.raises(StateCorruptError):
        kr.read_element(dict(el, last=["one", "x"]), "src", ["a", "b"], ["int", "string"], "asc")
    with pytest.raises(StateCorruptError):
        kr.read_element("garbage", "src", ["a"], ["int"], "asc")
    assert kr.read_element(None, "src", ["a"], ["int"], "asc") is None
    assert kr.read_element(dict(el, last=None), "src", ["a", "b"], ["int", "string"],
                           "asc") is None


# ------------------------------------------------------------------ options


def test_key_options_glue_spellings():
    o, rest = kr.resolve_key_options(None, "asc", {"jobBookmarkKeys": ["empno"],
                                                   "jobBookmarksKeysSortOrder": "desc",
                                                   "fetchsize": 10})
    assert o == kr.KeyOptions(("empno",), "desc") and rest == {"fetchsize": 10}
    o, _ = kr.resolve_key_options(None, "asc", {"jobbookmarkkeys": '["a", "b"]',
                                                "jobBookmarkKeysSortOrder": "ASC"})
    assert o == kr.KeyOptions(("a", "b"), "asc")
    o, _ = kr.resolve_key_options("a, b", "DESC", None)
    assert o == kr.KeyOptions(("a", "b"), "desc")
    o, _ = kr.resolve_key_options(["a"], "asc", {"jobBookmarkKeys": ["a"]})
    assert o.keys == ("a",)
    assert kr.resolve_key_options(None, None, {})[0] == kr.KeyOptions(None, "asc")


@pytest.mark.parametrize("keys,order,options,match", [
    (["a"], "asc", {"jobBookmarkKeys": ["b"]}, "disagree"),
    (None, "desc", {"jobBookmarkKeysSortOrder": "asc"}, "disagree"),
    (None, "asc", {"jobBookmarkKeysSortOrder": "asc", "jobBookmarksKeysSortOrder": "desc"},
     "twice"),
    (None, "sideways", None, "'asc' or 'desc'"),
    (None, "asc", {"jobBookmarkKeysSortOrder": 1}, "'asc' or 'desc'"),
    ([], "asc", None, "empty"),
    (["a", "A"], "asc", None, "twice"),
    ([""], "asc", None, "non-empty"),
    (None, "asc", {"jobBookmarkKeys": "[oops"}, "JSON list"),
    (None, "asc", {"jobBookmarkKeys": 5}, "list of column names"),
])
def test_key_option_errors(keys, order, options, match):
    with pytest.raises(ConfigError, match=match):
        kr.resolve_key_options(keys, order, options)


# ------------------------------------------------------------------ partitions


def _which(plan, value, key_type):
    return [i for i, p in enumerate(plan.predicates) if kr.evaluate(p, (value,), [key_type])]


@given(st.integers(-10 ** 6, 10 ** 6), st.integers(0, 10 ** 6), st.integers(1, 16),
       st.integers(1, 10 ** 5), st.lists(st.integers(-2 * 10 ** 6, 3 * 10 ** 6), max_size=20))
def test_int_partitions_cover_every_value_exactly_once(lo, span, max_parts, per, probes):
    hi = lo + span
    plan = kr.plan_partitions("int", lo, hi, max_parts, per)
    assert 1 <= plan.count <= max_parts
    assert plan.count == 1 or plan.count <= -(-(span + 1) // per)
    assert list(plan.bounds) == sorted(set(plan.bounds))
    for v in probes + [lo, hi, None]:
        assert len(_which(plan, v, "int")) == 1


def test_partitions_are_even_and_typed():
    plan = kr.plan_partitions("int", 1, 1_000_000, 4, 100_000)
    assert plan.bounds == (250_001, 500_001, 750_001)
    counts = [0] * plan.count
    for v in range(1, 1_000_001, 997):
        counts[_which(plan, v, "int")[0]] += 1
    assert max(counts) - min(counts) <= 2
    assert kr.plan_partitions("int", 1, 10_000, 4, 1_000_000).count == 1  # small: one
    assert kr.plan_partitions("int", 5, 5, 4, 1).count == 1
    assert kr.plan_partitions("string", "a", "z", 4, 1).count == 1  # not partitionable
    assert kr.plan_partitions("int", None, 9, 4, 1).count == 1
    d = kr.plan_partitions("date", "2024-01-01", "2024-01-10", 3, 1)
    assert d.bounds == ("2024-01-04", "2024-01-07")
    assert _which(d, "2023-12-31", "date") == [0] and _which(d, "2024-01-07", "date") == [2]
    t = kr.plan_partitions("timestamp", "2024-01-01 00:00:00", "2024-01-01 00:00:10", 2, 1)
    assert t.bounds == ("2024-01-01 00:00:05.000000",)
    dec = kr.plan_partitions("decimal", "0.5", "99.5", 2, 10)
    assert dec.bounds == ("50",)
    assert _which(dec, "49.99", "decimal") == [0] and _which(dec, "50.00", "decimal") == [1]
    sql = kr.render(d.predicates[0], ['"d"'], ["date"])
    assert sql == "(\"d\" < CAST('2024-01-04' AS DATE) OR \"d\" IS NULL)"


@given(st.dates(), st.integers(0, 4000), st.integers(1, 12), st.lists(st.dates(), max_size=10))
def test_date_partitions_cover_every_value_exactly_once(lo, days, max_parts, probes):
    import datetime as dt
    assume(lo.toordinal() + days <= dt.date.max.toordinal())
    hi = lo + dt.timedelta(days=days)
    plan = kr.plan_partitions("date", lo.isoformat(), hi.isoformat(), max_parts, 1)
    assert 1 <= plan.count <= max_parts
    for v in probes + [lo, hi]:
        assert len(_which(plan, v.isoformat(), "date")) == 1
