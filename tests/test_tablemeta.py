"""sparkmark.engine.tablemeta's pure part: an Iceberg metadata JSON document to the current snapshot,
the snapshot list and the current snapshot's ancestry (the Java API read itself is exercised by
the Iceberg suites, which compare it with the metadata tables' answers)."""
from __future__ import annotations

from sparkmark.engine.tablemeta import SELECTOR, SnapshotMeta, TableMetadata, parse, parse_snapshot


def _doc(current, snaps):
    return {"format-version": 2, "current-snapshot-id": current,
            "snapshots": [{"snapshot-id": i, **({"parent-snapshot-id": p} if p else {}),
                           "summary": {"operation": op, "wap.id": f"w{i}"}}
                          for i, p, op in snaps]}


def test_parse_reads_current_parents_and_summaries():
    meta = parse(_doc(3, [(1, None, "append"), (2, 1, "append"), (3, 2, "delete")]))
    assert meta.current == 3
    assert meta.snapshots[0] == SnapshotMeta(1, None, {"operation": "append", "wap.id": "w1"})
    assert [s.parent for s in meta.snapshots] == [None, 1, 2]
    assert meta.snapshots[2].summary["operation"] == "delete"


def test_no_snapshot_yet_is_none():
    assert parse({"current-snapshot-id": -1, "snapshots": []}) == TableMetadata(None, [])
    assert parse({}) == TableMetadata(None, [])


def test_ancestors_follow_parent_links_only():
    # 1 <- 2 <- 4 (current); 3 is a staged snapshot on 2 that was never published
    meta = parse(_doc(4, [(1, None, "append"), (2, 1, "append"), (3, 2, "append"),
                          (4, 2, "append")]))
    assert meta.ancestors() == {1, 2, 4}
    # an expired parent ends the walk; a cycle (damaged metadata) does not hang it
    assert parse(_doc(4, [(4, 2, "append")])).ancestors() == {4}
    assert TableMetadata(1, [SnapshotMeta(1, 2, {}), SnapshotMeta(2, 1, {})]).ancestors() == {1, 2}
    assert TableMetadata(None, [SnapshotMeta(1, None, {})]).ancestors() == set()


def test_selector_names_are_left_to_the_metadata_tables():
    assert SELECTOR.match("branch_audit") and SELECTOR.match("tag_v1")
    assert not SELECTOR.match("orders")


def test_one_snapshots_json_as_iceberg_s_snapshot_parser_writes_it():
    doc = {"sequence-number": 3, "snapshot-id": 9, "parent-snapshot-id": 8, "timestamp-ms": 1,
           "summary": {"operation": "append", "added-records": 2}, "manifest-list": "x"}
    assert parse_snapshot(doc) == SnapshotMeta(9, 8, {"operation": "append",
                                                      "added-records": "2"})
    assert parse_snapshot({"snapshot-id": 1}) == SnapshotMeta(1, None, {})
