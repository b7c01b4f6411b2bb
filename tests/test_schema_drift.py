"""The pure decisions of schemaEvolution (sparkmark.planning.schema_drift): table-tested, no Spark."""
from __future__ import annotations

import pytest

from sparkmark.core.errors import ConfigError
from sparkmark.planning.schema_drift import (CORRUPT, RESCUED, merge_seen, parse_mode, plan_drift,
                                    skip_hint, split_drift_option)

K = [("id", "bigint"), ("amount", "bigint")]

# (mode, seen) -> (columns, extra, known, new, changed, missing, rescue, fails)
TABLE = [
    ("rescue", [("id", "bigint"), ("amount", "bigint"), ("note", "string")],
     (K, ("note",), K, ("note",), (), (), True, False)),
    ("addNewColumns", [("id", "bigint"), ("amount", "bigint"), ("note", "string")],
     (K + [("note", "string")], (), K + [("note", "string")], ("note",), (), (), True, False)),
    ("failOnNewColumns", [("id", "bigint"), ("note", "string")],
     (K, ("note",), K, ("note",), (), ("amount",), True, True)),
    ("none", [("id", "bigint"), ("amount", "string")],
     (K, (), K, (), (("amount", "bigint", "string"),), (), False, False)),
    ("rescue", [("ID", "bigint")], (K, (), K, (), (), ("amount",), True, False)),
    ("addNewColumns", [("amount", "double"), ("id", "bigint")],
     (K, (), K, (), (("amount", "bigint", "double"),), (), True, False)),
    ("failOnNewColumns", [("id", "string"), ("amount", "bigint")],   # a type change is rescued
     (K, (), K, (), (("id", "bigint", "string"),), (), True, False)),
]


@pytest.mark.parametrize("mode, seen, want", TABLE)
def test_plan_drift_table(mode, seen, want):
    p = plan_drift(K, seen + [(CORRUPT, "string")], mode)
    got = (list(p.columns), p.extra, list(p.known), p.new, p.changed, p.missing, p.rescue,
           p.fails)
    assert got == (list(want[0]), *want[1:2], list(want[2]), *want[3:])


def test_first_run_learns_the_seen_columns_and_drops_internal_ones():
    p = plan_drift(None, [("a", "int"), (RESCUED, "string"), ("A", "int"), ("b", "string")],
                   "rescue")
    assert p.known == (("a", "int"), ("b", "string")) and p.columns == p.known
    assert p.info() == {"schema_evolution": "rescue"}


def test_plan_properties_hold_for_every_mode_and_subset():
    """Over every subset of seen columns: returned columns are the known ones (plus new ones
    only for addNewColumns), every seen value has a place (a column, extra, or a known column),
    and nothing is lost but in mode none."""
    import itertools
    pool = [("id", "bigint"), ("amount", "string"), ("note", "string"), ("x", "int")]
    for mode in ("rescue", "addNewColumns", "failOnNewColumns", "none"):
        for r in range(len(pool) + 1):
            for seen in itertools.combinations(pool, r):
                p = plan_drift(K, list(seen), mode)
                names = {n for n, _ in p.columns}
                assert {"id", "amount"} <= names
                for n, _ in seen:
                    assert n in names or n in p.extra
                assert set(p.new) == {n for n, _ in seen} - {"id", "amount"}
                assert (names - {"id", "amount"} == set(p.new)) == (mode == "addNewColumns"
                                                                    or not p.new)
                assert p.rescue == (mode != "none")
                assert p.fails == (mode == "failOnNewColumns" and bool(p.new))


def test_merge_seen_keeps_order_and_widens_conflicts_to_string():
    assert merge_seen([[("a", "int")], [("A", "int"), ("b", "int")], [("b", "double")]]) == \
        [("a", "int"), ("b", "string")]


@pytest.mark.parametrize("value, want", [(None, "rescue"), ("RESCUE", "rescue"),
                                         (" addnewcolumns ", "addNewColumns"),
                                         ("failOnNewColumns", "failOnNewColumns"),
                                         ("None", "none")])
def test_parse_mode(value, want):
    assert parse_mode(value) == want


@pytest.mark.parametrize("fmt, opts, words", [
    ("json", {"schemaEvolution": "evolve"}, "not a mode"),
    ("json", {"schemaEvolution": ""}, "not a mode"),
    ("parquet", {"schemaEvolution": "rescue"}, "json and csv"),
    ("json", {"schemaEvolution": "rescue", "mode": "FAILFAST"}, "both given"),
    ("csv", {"SchemaEvolution": "none", "columnNameOfCorruptRecord": "_c"}, "both given"),
])
def test_bad_option_values_are_one_clear_error(fmt, opts, words):
    with pytest.raises(ConfigError, match=words):
        split_drift_option(fmt, opts)


def test_spark_mode_given_means_spark_handling_and_other_formats_are_untouched():
    assert split_drift_option("csv", {"mode": "DROPMALFORMED"}) == (None,
                                                                    {"mode": "DROPMALFORMED"})
    assert split_drift_option("parquet", {"x": 1}) == (None, {"x": 1})
    assert split_drift_option("csv", {"schemaevolution": "None"}) == ("none", {})


def test_skip_hint_is_a_command_with_quoted_paths():
    text = skip_hint("my job", "src", ["file:/in/a b.json", "file:/in/c.json",
                                       "file:/in/d.json", "file:/in/e.json"])
    assert text.startswith("skip the files with: sparkmark bookmark set 'my job' --ctx src "
                           "--processed 'file:/in/a b.json' --processed file:/in/c.json")
    assert "(and the 1 other file(s))" in text
    assert skip_hint("j", "c", []) == ""
