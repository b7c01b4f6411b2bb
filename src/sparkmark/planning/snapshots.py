"""Snapshot planning for bookmarked table sources — pure: no Spark, no Iceberg.

A table source's bookmark element is the last snapshot a run processed::

    {"table": "local.db.orders", "snapshot_id": 4711}

A run fixes its upper snapshot at start (the table's current snapshot) and reads what was
committed after the element's snapshot up to and including it.  Everything here works on the
table's snapshot list as plain ``(snapshot_id, parent_id, operation)`` tuples:

- :func:`between` walks the ancestry from the upper snapshot back to the last processed one
  (``None`` when that one is not an ancestor: expired snapshots, a rollback, a recreated table);
- :func:`plan_read` decides what to read, applying ``onNonAppend`` to the snapshots in range
  that are not appends (``fail``: one clear error; ``skip``: read the appended rows only;
  ``changes``: read Iceberg's changelog of the range, appends included, so that every run of a
  ``changes`` read gives the same columns: the table's plus ``_change_type``,
  ``_change_ordinal`` and ``_commit_snapshot_id``).

``replace`` snapshots (compaction, ``rewrite_data_files``) change files, not rows: they never
count as non-append, and the changelog leaves them out.  Iceberg's changelog scan refuses
snapshots that carry delete files (merge-on-read deletes, updates and merges): with
``changes`` a range holding one is a clear error before anything is read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

from sparkmark.core.errors import ConfigError, SourceError, StateCorruptError

FAIL, SKIP, CHANGES = "fail", "skip", "changes"
ON_NON_APPEND = (FAIL, SKIP, CHANGES)
#: operations that only add rows, or only rewrite files without changing rows
ROW_PRESERVING = ("append", "replace")

#: plan kinds: read the table as of a snapshot, read the appends in a range, read the changelog
#: of a range (``onNonAppend=changes``), read nothing
AS_OF, APPENDS, CHANGELOG, NOTHING = "as_of", "appends", "changes", "nothing"
#: the columns a changelog read adds after the table's, as Iceberg's changelog names them
CHANGE_COLUMNS = ("_change_type", "_change_ordinal", "_commit_snapshot_id")
#: plan modes, as the bookmark's ReadMode spells them
ALL, INCREMENTAL, REPLAY = "all", "incremental", "replay"

def way_out(ctx: str, element: str = "snapshot") -> str:
    """What to do about a table bookmark that cannot be continued (pure); ``element``: what the
    table's bookmark counts (``snapshot`` for Iceberg, ``version`` for Delta).

    Example: ``way_out("orders_src").startswith("run `sparkmark bookmark reset")``
    """
    current, value = ("current", "ID") if element == "snapshot" else ("latest", element.upper())
    return (f"run `sparkmark bookmark reset JOB` to read the table again from its {current} "
            f"{element} (`--run-id R` rewinds to an earlier run), or `sparkmark bookmark set JOB "
            f"--ctx {ctx} --snapshot {value}` to continue after a {element} you choose")


class Snapshot(NamedTuple):
    """One row of a table's ``snapshots`` metadata table; ``delete_files``: the summary's
    ``total-delete-files`` (delete files live in the table as of that snapshot).

    Example: ``Snapshot(2, 1, "append")``
    """

    id: int
    parent: int | None
    operation: str
    delete_files: int = 0


def parse_on_non_append(raw: Any) -> str:
    """The ``onNonAppend`` option: ``fail`` (default), ``skip`` or ``changes``.

    Example: ``parse_on_non_append("Skip") == "skip"``
    """
    if raw is None:
        return FAIL
    value = str(raw).strip().lower()
    if value not in ON_NON_APPEND:
        raise ConfigError(f"option onNonAppend={raw!r} is not one of fail, skip, changes; "
                          "use fail (the default), skip (the appended rows only) or changes "
                          "(change rows with _change_type)")
    return value


def split_read_options(options: dict[str, Any] | None, rejected: Iterable[str],
                       element: str = "snapshots") -> tuple[str, dict[str, str]]:
    """``onNonAppend`` (validated) and the options passed through to the table's reader (pure);
    an option of ``rejected`` (lower-case names) is one :class:`ConfigError`: the bookmark
    decides which ``element`` are read.

    Example: ``split_read_options({"onNonAppend": "Skip", "a": 1}, ()) == ("skip", {"a": "1"})``
    """
    policy: Any = None
    rest: dict[str, str] = {}
    refused = {str(r).lower() for r in rejected}
    for key, value in dict(options or {}).items():
        low = str(key).lower()
        if low == "onnonappend":
            policy = value
        elif low in refused:
            raise ConfigError(f"option {key!r} cannot be used with job.read.table: the bookmark "
                              f"decides which {element} are read (disable bookmarks to read "
                              "the whole table, or use pause with --job-bookmark-from/-to)")
        else:
            rest[str(key)] = str(value)
    return parse_on_non_append(policy), rest


def between(snapshots: Iterable[Snapshot], after: int | None, through: int
            ) -> list[Snapshot] | None:
    """The snapshots after ``after`` up to and including ``through``, oldest first, walking
    parent links back from ``through``; ``None`` when ``after`` is not an ancestor of
    ``through`` (or a snapshot on the way was expired).  ``after=None``: the whole ancestry.

    Example: ``between([Snapshot(1, None, "append"), Snapshot(2, 1, "append")], 1, 2)``
    """
    by_id = {s.id: s for s in snapshots}
    out: list[Snapshot] = []
    seen: set[int] = set()
    cur: int | None = through
    while cur != after:
        if cur is None or cur in seen:
            return None
        snap = by_id.get(cur)
        if snap is None:  # expired (or never part of this table)
            return None
        seen.add(cur)
        out.append(snap)
        cur = snap.parent
    return list(reversed(out))


def read_element(element: Mapping[str, Any] | None, table: str, ctx: str,
                 which: str = "committed") -> int | None:
    """The snapshot id of a stored element (``None``: nothing processed yet).

    Example: ``read_element({"table": "local.db.t", "snapshot_id": 7}, "local.db.t", "src") == 7``
    """
    if element is None:
        return None
    if not isinstance(element, Mapping) or "snapshot_id" not in element:
        raise StateCorruptError(f"the {which} bookmark element of {ctx!r} is not a table "
                                f"element ({element!r}); {way_out(ctx)}")
    stored = element.get("table")
    if stored != table:
        raise SourceError(f"the {which} bookmark of {ctx!r} is for table {stored!r}, not "
                          f"{table!r}; give this read its own transformation_ctx, or "
                          f"{way_out(ctx)}")
    sid = element["snapshot_id"]
    if sid is None:
        return None
    if isinstance(sid, bool) or not isinstance(sid, int):
        raise StateCorruptError(f"the {which} bookmark element of {ctx!r} has snapshot_id "
                                f"{sid!r}, not an integer; {way_out(ctx)}")
    return sid


def make_element(table: str, snapshot_id: int | None) -> dict[str, Any]:
    """The element a run commits: the table and the last snapshot it processed.

    Example: ``make_element("local.db.t", 7) == {"table": "local.db.t", "snapshot_id": 7}``
    """
    return {"table": table, "snapshot_id": snapshot_id}


@dataclass(frozen=True)
class TablePlan:
    """What a run reads from a table.

    ``kind``: :data:`AS_OF` (the table as of ``through``; ``through=None``: the table as it is,
    with no snapshot yet), :data:`APPENDS` (rows appended after ``after`` up to ``through``),
    :data:`CHANGELOG` (Iceberg's change rows after ``after`` up to ``through``) or
    :data:`NOTHING` (no new snapshot).  ``snapshots``: the snapshots in range, oldest first
    (empty for a first read).  ``commit``: the snapshot id the element records.
    ``changelog``: the read has the changelog's columns (:data:`CHANGE_COLUMNS` after the
    table's), whatever the kind: ``onNonAppend=changes``.  An :data:`AS_OF` read then gives every
    row of the table as an ``INSERT`` of snapshot ``through`` (ordinal 0), a :data:`NOTHING`
    read no row.

    Example: ``plan.kind == APPENDS and plan.after == 1 and plan.through == 3``
    """

    mode: str
    kind: str
    after: int | None
    through: int | None
    snapshots: tuple[Snapshot, ...] = ()
    skipped: tuple[Snapshot, ...] = ()
    changelog: bool = False

    @property
    def commit(self) -> int | None:
        """The snapshot id the run's element records (the upper snapshot)."""
        return self.through

    @property
    def new_input(self) -> bool:
        """Whether this read can return rows that no earlier run processed."""
        if self.kind == AS_OF:
            return self.through is not None
        if self.kind == CHANGELOG:  # deleted and changed rows are input too
            return any(s.operation != "replace" for s in self.snapshots)
        return any(s.operation == "append" for s in self.snapshots)

    def operations(self) -> dict[str, int]:
        """How many snapshots of each operation are in range."""
        out: dict[str, int] = {}
        for s in self.snapshots:
            out[s.operation] = out.get(s.operation, 0) + 1
        return out


def plan_read(mode: str, snapshots: Iterable[Snapshot], after: int | None,
              through: int | None, on_non_append: str = FAIL, *, table: str = "",
              ctx: str = "") -> TablePlan:
    """The read of ``table`` for ``mode``, from the snapshot list (pure).

    ``after``: the last processed snapshot (``None``: nothing yet); ``through``: the upper
    snapshot (the current one at run start, or the ``to`` run's for a replay; ``None``: the
    table has no snapshot).  Raises :class:`SourceError` on a broken lineage, on a
    non-append snapshot in range with ``on_non_append="fail"``, and on a snapshot in range
    with delete files with ``on_non_append="changes"`` (Iceberg's changelog refuses them).

    Example::

        snaps = [Snapshot(1, None, "append"), Snapshot(2, 1, "delete"), Snapshot(3, 2, "append")]
        plan_read("incremental", snaps, 1, 3, "skip").kind == "appends"
        plan_read("incremental", snaps, 1, 3, "changes").kind == "changes"
    """
    snaps = list(snapshots)
    cl = on_non_append == CHANGES
    if mode == REPLAY and through is None:
        # the replayed run read no snapshot
        return TablePlan(mode, NOTHING, after, None, changelog=cl)
    if mode == ALL or (after is None and through is not None):
        return TablePlan(mode, AS_OF, None, through, changelog=cl)
    if through is None:
        if after is None:
            # a table with no snapshot yet
            return TablePlan(mode, AS_OF, None, None, changelog=cl)
        raise SourceError(f"table {table} has no current snapshot, but the bookmark of {ctx!r} "
                          f"processed snapshot {after}: the table was recreated or emptied of "
                          f"its history; {way_out(ctx)}")
    if after == through:
        return TablePlan(mode, NOTHING, after, through, changelog=cl)
    assert after is not None
    rng = between(snaps, after, through)
    if rng is None:
        ids = {s.id for s in snaps}
        why = ("it is no longer in the table's snapshots (expired, or the table was recreated)"
               if after not in ids and not any(s.parent == after for s in snaps)
               else "it is not an ancestor of that snapshot (a rollback, or expired snapshots "
                    "in between)")
        raise SourceError(f"the lineage of table {table} is broken for {ctx!r}: the bookmark "
                          f"processed snapshot {after} and the run reads up to snapshot "
                          f"{through}, but {why}; {way_out(ctx)}")
    if cl:
        return plan_changes(mode, tuple(rng), after, through, table=table, ctx=ctx)
    other = tuple(s for s in rng if s.operation not in ROW_PRESERVING)
    if other and on_non_append != SKIP:
        first = other[0]
        raise SourceError(
            f"table {table} has a non-append snapshot after the bookmark of {ctx!r}: snapshot "
            f"{first.id} ({first.operation})" + (f" and {len(other) - 1} more" if len(other) > 1
                                                 else "")
            + "; rows it changed or deleted cannot be read as new rows. Use option "
            "onNonAppend=skip to read the appended rows only, onNonAppend=changes to read "
            "change rows (_change_type), or "
            f"{way_out(ctx)}")
    return TablePlan(mode, APPENDS, after, through, tuple(rng), other)


def plan_changes(mode: str, rng: tuple[Snapshot, ...], after: int, through: int, *,
                 table: str = "", ctx: str = "") -> TablePlan:
    """The changelog read of a range (``onNonAppend=changes``), or one clear error when a
    snapshot in it has delete files (pure).

    Iceberg's changelog scan (1.10) refuses any snapshot in range, ``replace`` ones aside, whose
    table state has delete files (``Delete files are currently not supported in changelog
    scans``): merge-on-read deletes, updates and merges write them, and they stay until
    compaction rewrites them away.

    Example: ``plan_changes("incremental", (Snapshot(2, 1, "delete"),), 1, 2).kind == "changes"``
    """
    blocked = [s for s in rng if s.operation != "replace" and s.delete_files > 0]
    if blocked:
        first = blocked[0]
        raise SourceError(
            f"table {table} cannot be read as changes for {ctx!r}: snapshot {first.id} "
            f"({first.operation}) has {first.delete_files} delete file(s) (merge-on-read "
            "deletes, updates or merges), and Iceberg's changelog scan does not support delete "
            "files. Rewrite them away (CALL <catalog>.system.rewrite_data_files with option "
            "delete-file-threshold=1) and set the table's "
            "write.delete.mode, write.update.mode and write.merge.mode to copy-on-write; the "
            "snapshots already committed keep their delete files, so then "
            f"{way_out(ctx)}; or read with onNonAppend=skip (appended rows only)")
    return TablePlan(mode, CHANGELOG, after, through, rng, changelog=True)
