"""The Delta version planner (:mod:`sparkmark.planning.versions`, pure) against a simple
reference model: a table is a list of commits, each an append (adds files), a no-change commit
(OPTIMIZE, a property) or a non-append one (removes files); a run after version A up to version
T reads the files the append commits in (A, T] added, or fails, or reads the change feed, as
``onNonAppend`` says; a missing commit, a new table id or a RESTORE to at or before A is a
broken lineage."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkmark.core.errors import ConfigError, SourceError, StateCorruptError
from sparkmark.planning import versions as vp

KINDS = st.sampled_from(["append", "none", "delete", "restore"])


def commit(version: int, kind: str, restored_to: int = 0) -> vp.Commit:
    lines = []
    if kind == "append":
        lines = [{"commitInfo": {"operation": "WRITE"}},
                 {"add": {"path": f"v{version}-a.parquet", "dataChange": True}},
                 {"add": {"path": f"v{version}-b.parquet", "dataChange": True}}]
    elif kind == "none":
        lines = [{"commitInfo": {"operation": "OPTIMIZE"}},
                 {"add": {"path": f"v{version}-c.parquet", "dataChange": False}},
                 {"remove": {"path": "old.parquet", "dataChange": False}}]
    elif kind == "delete":
        lines = [{"commitInfo": {"operation": "DELETE"}},
                 {"remove": {"path": "x.parquet", "dataChange": True}},
                 {"add": {"path": f"v{version}-rest.parquet", "dataChange": True}}]
    else:
        lines = [{"commitInfo": {"operation": "RESTORE",
                                 "operationParameters": {"version": str(restored_to)}}},
                 {"remove": {"path": "y.parquet", "dataChange": True}}]
    return vp.parse_commit(version, "\n".join(json.dumps(x) for x in lines))


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(KINDS, min_size=1, max_size=12), data=st.data(),
       policy=st.sampled_from(["fail", "skip", "changes"]), cdf=st.booleans())
def test_plan_matches_the_reference_model(kinds, data, policy, cdf):
    n = len(kinds)
    after = data.draw(st.integers(0, n))
    through = data.draw(st.integers(after, n))
    restores = [data.draw(st.integers(0, max(0, v - 1))) for v in range(1, n + 1)]
    commits = [commit(v, kinds[v - 1], restores[v - 1]) for v in range(1, n + 1)]
    rng = [c for c in commits if after < c.version <= through]
    bad_restore = [c for c in rng if c.operation == "RESTORE" and c.restored_to <= after]
    non_append = [c for c in rng if c.operation in ("DELETE", "RESTORE")]
    try:
        plan = vp.plan_delta_read("incremental", commits, after, through, policy,
                                  table="t", ctx="src", cdf_enabled=cdf)
    except SourceError as e:
        msg = str(e)
        if bad_restore:
            assert "restored the table" in msg
        elif policy == "changes":
            assert not cdf and "delta.enableChangeDataFeed" in msg
        else:
            assert policy == "fail" and non_append and "non-append commit" in msg
            assert f"version {non_append[0].version}" in msg
        assert "bookmark reset" in msg
        return
    assert not bad_restore
    if after == through:
        assert plan.kind == vp.NOTHING and plan.files == () and not plan.new_input
        return
    expected = tuple(f"v{c.version}-{s}.parquet" for c in rng if c.operation == "WRITE"
                     for s in "ab")
    if policy == "changes":
        assert cdf and plan.kind == vp.CHANGELOG and plan.changelog
        assert plan.new_input == any(c.operation != "OPTIMIZE" for c in rng)
    else:
        assert non_append == [] or policy == "skip"
        assert plan.kind == vp.APPENDS and plan.files == expected
        assert plan.new_input == bool(expected)
        assert [c.version for c in plan.skipped] == [c.version for c in non_append]
    assert (plan.after, plan.through) == (after, through)


@given(n=st.integers(2, 10), data=st.data())
def test_a_missing_commit_is_a_broken_lineage(n, data):
    commits = [commit(v, "append") for v in range(1, n + 1)]
    gone = data.draw(st.integers(2, n))
    left = [c for c in commits if c.version != gone]
    with pytest.raises(SourceError, match=f"version {gone} is no longer in the table's log"):
        vp.plan_delta_read("incremental", left, 1, n, table="t", ctx="src")


def test_first_runs_replays_and_ids():
    commits = [commit(v, "append") for v in (1, 2, 3)]
    assert vp.plan_delta_read("incremental", commits, None, 3).kind == vp.AS_OF
    assert vp.plan_delta_read("all", commits, 1, 3).kind == vp.AS_OF
    assert vp.plan_delta_read("replay", commits, 1, None).kind == vp.NOTHING
    assert vp.plan_delta_read("replay", commits, 1, 2).files == ("v2-a.parquet",
                                                                   "v2-b.parquet")
    with pytest.raises(SourceError, match="now has id new"):
        vp.plan_delta_read("incremental", commits, 1, 3, after_id="old", table_id="new")
    with pytest.raises(SourceError, match="now is at version 0"):
        vp.plan_delta_read("incremental", [], 2, 0)
    swapped = commits[:1] + [commits[1]._replace(table_id="other")] + commits[2:]
    with pytest.raises(SourceError, match="gave the table a new id"):
        vp.plan_delta_read("incremental", swapped, 0, 3, after_id="first")


def test_elements_and_options():
    el = vp.make_element("delta.`/t`", 4, "id-1")
    assert vp.read_element(el, "delta.`/t`", "src") == (4, "id-1")
    assert vp.read_element(None, "delta.`/t`", "src") == (None, None)
    with pytest.raises(SourceError, match="is for table"):
        vp.read_element(el, "delta.`/u`", "src")
    with pytest.raises(StateCorruptError, match="not a Delta table element"):
        vp.read_element({"table": "delta.`/t`", "snapshot_id": 4}, "delta.`/t`", "src")
    with pytest.raises(StateCorruptError, match="not an integer"):
        vp.read_element({"table": "delta.`/t`", "version": "4"}, "delta.`/t`", "src")
    with pytest.raises(ConfigError, match="onNonAppend"):
        vp.parse_on_non_append("sometimes")
    with pytest.raises(StateCorruptError, match="not JSON"):
        vp.parse_commit(3, "{oops")


def test_the_feed_switched_on_inside_the_range_is_refused():
    on = vp.Commit(3, (), (), "SET TBLPROPERTIES", cdf=True)
    commits = [commit(2, "append"), on, commit(4, "append")]
    with pytest.raises(SourceError, match="only since version 3"):
        vp.plan_delta_read("incremental", commits, 1, 4, "changes", cdf_enabled=True)
    ok = vp.plan_delta_read("incremental", commits, 2, 4, "changes", cdf_enabled=True)
    assert ok.kind == vp.CHANGELOG
