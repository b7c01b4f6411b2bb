"""Snapshot planning for table sources (pure): the ancestry walk and the onNonAppend policy
(fail, skip, changes), property-tested against a model that records each snapshot's full
lineage when it is committed (commits with or without delete files, rollbacks and expiries in
any order), plus the option and element checks."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkmark.core.errors import ConfigError, SourceError, StateCorruptError
from sparkmark.planning.snapshots import (APPENDS, AS_OF, CHANGELOG, NOTHING, Snapshot,
                                          between, make_element, parse_on_non_append,
                                          plan_read, read_element)

OPS = ("append", "delete", "overwrite", "replace")
FOREIGN = 10**9

steps = st.lists(st.one_of(
    # (operation, delete files live in the table as of the snapshot)
    st.tuples(st.just("commit"), st.tuples(st.sampled_from(OPS), st.sampled_from([0, 0, 0, 2]))),
    st.tuples(st.just("rollback"), st.integers(0, 50)),
    st.tuples(st.just("expire"), st.integers(0, 50)),
), max_size=25)


def simulate(script):
    """(visible snapshots, lineage of every snapshot ever made, current id)."""
    made: list[Snapshot] = []
    lineage: dict[int, list[int]] = {}
    expired: set[int] = set()
    current = None
    for kind, arg in script:
        if kind == "commit":
            sid = 1000 + 37 * len(made)  # distinct, not in order of anything meaningful
            op, dels = arg
            made.append(Snapshot(sid, current, op, dels))
            lineage[sid] = (lineage[current] if current is not None else []) + [sid]
            current = sid
        elif made and kind == "rollback":
            current = made[arg % len(made)].id
        elif made and kind == "expire":
            victim = made[arg % len(made)].id
            if victim != current:
                expired.add(victim)
    visible = [s for s in made if s.id not in expired]
    return visible, made, lineage, current


@settings(max_examples=400, deadline=None)
@given(script=steps, pick=st.integers(0, 60),
       policy=st.sampled_from(["fail", "skip", "changes"]))
def test_incremental_plan_matches_the_model(script, pick, policy):
    visible, made, lineage, current = simulate(script)
    choices = [None, FOREIGN] + [s.id for s in made]
    after = choices[pick % len(choices)]
    by_id = {s.id: s for s in made}
    visible_ids = {s.id for s in visible}

    # the model
    expect: object
    if current is None:
        expect = ("as_of", None) if after is None else "error"
    elif after is None:
        expect = ("as_of", current)
    elif after == current:
        expect = ("nothing",)
    else:
        path = lineage[current]
        if after not in path:
            expect = "error"
        else:
            rng = path[path.index(after) + 1:]
            if any(i not in visible_ids for i in rng):
                expect = "error"
            elif policy == "fail" and any(by_id[i].operation in ("delete", "overwrite")
                                          for i in rng):
                expect = "error"
            elif policy == "changes":
                # the changelog refuses delete files, except in replace snapshots (it skips them)
                expect = ("error" if any(by_id[i].operation != "replace"
                                         and by_id[i].delete_files for i in rng)
                          else ("changes", rng))
            else:
                expect = ("appends", rng)

    try:
        plan = plan_read("incremental", visible, after, current, policy, table="t", ctx="c")
    except SourceError:
        assert expect == "error"
        return
    assert expect != "error", (expect, plan)
    assert plan.changelog == (policy == "changes")  # the same columns on every run
    if plan.kind == AS_OF:
        assert expect == ("as_of", plan.through)
    elif plan.kind == NOTHING:
        assert expect == ("nothing",)
    elif plan.kind == CHANGELOG:
        assert expect == ("changes", [s.id for s in plan.snapshots])
        assert plan.new_input == any(s.operation != "replace" for s in plan.snapshots)
        assert plan.skipped == () and plan.commit == current
    else:
        assert plan.kind == APPENDS
        assert expect == ("appends", [s.id for s in plan.snapshots])
        assert plan.new_input == any(s.operation == "append" for s in plan.snapshots)
        assert {s.id for s in plan.skipped} == {s.id for s in plan.snapshots
                                                if s.operation in ("delete", "overwrite")}
        assert plan.commit == current


@settings(max_examples=200, deadline=None)
@given(script=steps)
def test_between_walks_the_whole_lineage_back_to_the_root(script):
    visible, made, lineage, current = simulate(script)
    if current is None:
        return
    got = between(visible, None, current)
    ids = {s.id for s in visible}
    if all(i in ids for i in lineage[current]):
        assert got is not None and [s.id for s in got] == lineage[current]
    else:
        assert got is None


def test_replay_and_all_modes():
    snaps = [Snapshot(1, None, "append"), Snapshot(2, 1, "append"), Snapshot(3, 2, "append")]
    replay = plan_read("replay", snaps, 1, 2)
    assert (replay.kind, [s.id for s in replay.snapshots]) == (APPENDS, [2])
    assert plan_read("replay", snaps, None, 2).kind == AS_OF
    assert plan_read("replay", snaps, None, None).kind == NOTHING
    whole = plan_read("all", snaps, 2, 3)
    assert (whole.kind, whole.through) == (AS_OF, 3)


def test_non_append_fails_with_the_snapshot_and_operation():
    snaps = [Snapshot(1, None, "append"), Snapshot(2, 1, "overwrite"), Snapshot(3, 2, "append")]
    with pytest.raises(SourceError, match=r"snapshot 2 \(overwrite\).*onNonAppend=skip"):
        plan_read("incremental", snaps, 1, 3, table="local.db.t", ctx="src")
    plan = plan_read("incremental", snaps, 1, 3, "skip")
    assert plan.operations() == {"overwrite": 1, "append": 1}
    assert plan.new_input


def test_changes_reads_the_changelog_of_any_range():
    snaps = [Snapshot(1, None, "append"), Snapshot(2, 1, "delete"), Snapshot(3, 2, "append"),
             Snapshot(4, 3, "replace"), Snapshot(5, 4, "overwrite")]
    plan = plan_read("incremental", snaps, 1, 5, "changes")
    assert (plan.kind, plan.after, plan.through, plan.commit) == (CHANGELOG, 1, 5, 5)
    assert [s.id for s in plan.snapshots] == [2, 3, 4, 5] and plan.skipped == ()
    assert plan.operations() == {"delete": 1, "append": 1, "replace": 1, "overwrite": 1}
    # appends only: the changelog too, so every run has the same columns
    appends = plan_read("incremental", snaps[:1] + [Snapshot(2, 1, "append")], 1, 2, "changes")
    assert (appends.kind, appends.changelog) == (CHANGELOG, True)
    # compaction only: a changelog read with nothing new in it
    assert not plan_read("incremental", snaps, 3, 4, "changes").new_input
    first = plan_read("incremental", snaps, None, 3, "changes")
    assert (first.kind, first.through, first.changelog) == (AS_OF, 3, True)
    same = plan_read("incremental", snaps, 5, 5, "changes")
    assert (same.kind, same.changelog, same.new_input) == (NOTHING, True, False)
    assert plan_read("all", snaps, 1, 5, "changes").kind == AS_OF
    replay = plan_read("replay", snaps, 1, 3, "changes")
    assert (replay.kind, [s.id for s in replay.snapshots]) == (CHANGELOG, [2, 3])
    assert plan_read("replay", snaps, None, None, "changes").changelog
    assert not plan_read("incremental", snaps, 1, 3, "skip").changelog


def test_changes_refuses_delete_files_naming_the_snapshot():
    snaps = [Snapshot(1, None, "append"), Snapshot(2, 1, "delete", 1),
             Snapshot(3, 2, "append", 1), Snapshot(4, 3, "replace", 0), Snapshot(5, 4, "append")]
    with pytest.raises(SourceError, match=r"snapshot 2 \(delete\) has 1 delete file.*"
                                          r"bookmark set.*onNonAppend=skip"):
        plan_read("incremental", snaps, 1, 5, "changes", table="local.db.t", ctx="src")
    # after the compaction that rewrote the delete files away, the changelog works again
    assert plan_read("incremental", snaps, 3, 5, "changes").kind == CHANGELOG
    # a replace snapshot is not scanned by the changelog: its delete files do not matter
    snaps[3] = Snapshot(4, 3, "replace", 1)
    assert plan_read("incremental", snaps, 3, 5, "changes").kind == CHANGELOG
    # fail and skip do not read the changelog: delete files are no concern of theirs
    assert plan_read("incremental", snaps, 1, 5, "skip").kind == APPENDS


def test_broken_lineage_names_the_way_out():
    snaps = [Snapshot(1, None, "append"), Snapshot(2, 1, "append"), Snapshot(3, 1, "append")]
    with pytest.raises(SourceError, match=r"lineage.*not an ancestor.*bookmark reset.*"
                                          r"bookmark set"):
        plan_read("incremental", snaps, 2, 3, table="t", ctx="c")
    with pytest.raises(SourceError, match="no longer in the table's snapshots"):
        plan_read("incremental", snaps, 99, 3, table="t", ctx="c")
    with pytest.raises(SourceError, match="no current snapshot"):
        plan_read("incremental", [], 3, None, table="t", ctx="c")


def test_options_and_elements():
    assert parse_on_non_append(None) == "fail"
    assert parse_on_non_append(" SKIP ") == "skip"
    assert parse_on_non_append("Changes") == "changes"
    with pytest.raises(ConfigError, match="onNonAppend='bogus'"):
        parse_on_non_append("bogus")
    el = make_element("local.db.t", 7)
    assert read_element(el, "local.db.t", "src") == 7
    assert read_element(None, "local.db.t", "src") is None
    with pytest.raises(SourceError, match="for table 'local.db.t', not 'local.db.u'"):
        read_element(el, "local.db.u", "src")
    with pytest.raises(StateCorruptError):
        read_element({"table": "local.db.t", "snapshot_id": "x"}, "local.db.t", "src")
    with pytest.raises(StateCorruptError):
        read_element({"files": []}, "local.db.t", "src")


def test_bookmark_set_snapshot_edits_a_table_element_only():
    from sparkmark.ops.bookmark_edit import element_kind, new_element
    el = make_element("local.db.t", 7)
    assert element_kind(el) == "table"
    assert new_element(el, "src", snapshot="42") == {"table": "local.db.t", "snapshot_id": 42}
    with pytest.raises(ConfigError, match="not a snapshot id"):
        new_element(el, "src", snapshot="x")
    with pytest.raises(ConfigError, match="has no bookmark yet"):
        new_element(None, "src", snapshot=1)
    with pytest.raises(ConfigError, match="holds a table bookmark.*--snapshot"):
        new_element(el, "src", after_key=["1"])
