"""Version planning for bookmarked Delta Lake sources — pure: no Spark, no Delta jar.

A Delta source's bookmark element is the last table version a run processed, with the table's
id (Delta's ``metaData.id``, new when a table is dropped and created again)::

    {"table": "delta.`/lake/orders`", "version": 12, "table_id": "5f0c..."}

A run fixes its upper version at start (the table's latest) and reads what the commits after
the element's version, up to and including it, added.  Each commit is read from the table's
log (``_delta_log/<version>.json``) and classified by its actions, not by its operation's
name:

- **append**: it adds data files (``add`` with ``dataChange``) and removes none: a blind
  append, a streaming append, ``INSERT``;
- **no change**: no action changes data (``OPTIMIZE``, ``VACUUM``, ``SET TBLPROPERTIES``,
  a schema change): it never counts as non-append;
- **non-append**: it removes data (``remove`` with ``dataChange``): ``DELETE``, ``UPDATE``,
  ``MERGE``, an overwrite, ``RESTORE``, ``TRUNCATE``.  Non-append commits follow option
  ``onNonAppend`` (:mod:`sparkmark.planning.snapshots` spells the values): ``fail`` (one clear
  error), ``skip`` (read the files the append commits added, so rows deleted later in the range
  are read too, as for Iceberg) or ``changes`` (Delta's change data feed of the range).

A broken lineage is one clear error naming ``bookmark reset`` / ``bookmark set``: a commit in
range no longer in the log (log clean-up), a table id that changed (dropped and recreated), a
latest version below the bookmark's, or a ``RESTORE`` to a version at or before the bookmark's.

    >>> c1 = parse_commit(1, '{"add": {"path": "a.parquet", "dataChange": true}}')
    >>> plan_delta_read("incremental", [c1], 0, 1, table="t", ctx="src").files
    ('a.parquet',)
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

from sparkmark.core.errors import SourceError, StateCorruptError
from sparkmark.planning import snapshots
from sparkmark.planning.snapshots import (ALL, CHANGES, FAIL, REPLAY, SKIP, parse_on_non_append)

__all__ = ["APPEND", "NO_CHANGE", "NON_APPEND", "AS_OF", "APPENDS", "CHANGELOG", "NOTHING",
           "CHANGE_COLUMNS", "Commit", "DeltaPlan", "parse_commit", "plan_delta_read",
           "read_element", "make_element", "way_out", "parse_on_non_append", "FAIL", "SKIP",
           "CHANGES"]

#: how a commit changed the table's rows
APPEND, NO_CHANGE, NON_APPEND = "append", "no change", "non-append"
#: plan kinds: the table as of a version, the files the append commits of a range added, the
#: change data feed of a range, nothing
AS_OF, APPENDS, CHANGELOG, NOTHING = "as_of", "appends", "changes", "nothing"
#: the columns Delta's change data feed adds after the table's
CHANGE_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def way_out(ctx: str) -> str:
    """What to do about a Delta bookmark that cannot be continued (pure).

    Example: ``way_out("orders_src").startswith("run `sparkmark bookmark reset")``
    """
    return snapshots.way_out(ctx, "version")


class Commit(NamedTuple):
    """One commit of a Delta table's log, as the planner needs it.

    ``files``: the data files it added (paths as the log spells them, relative to the table or
    absolute); ``removed``: the paths it removed with ``dataChange``; ``operation``: commitInfo's
    name; ``restored_to``: for ``RESTORE``, the version restored; ``table_id``: the id of a
    ``metaData`` action it carries (``None``: none); ``cdf``: that action's
    ``delta.enableChangeDataFeed`` (``None``: unchanged); ``timestamp``: commitInfo's, in ms.

    Example: ``Commit(3, ("a.parquet",), (), "WRITE")``
    """

    version: int
    files: tuple[str, ...]
    removed: tuple[str, ...]
    operation: str = ""
    restored_to: int | None = None
    table_id: str | None = None
    cdf: bool | None = None
    timestamp: int | None = None

    @property
    def kind(self) -> str:
        """:data:`APPEND`, :data:`NO_CHANGE` or :data:`NON_APPEND` (see the module docs)."""
        if self.removed:
            return NON_APPEND
        return APPEND if self.files else NO_CHANGE


def parse_commit(version: int, text: str) -> Commit:
    """A commit from its log file's text (newline-delimited JSON actions).

    >>> c = parse_commit(4, '{"commitInfo": {"operation": "DELETE"}}\\n'
    ...                     '{"remove": {"path": "a.parquet", "dataChange": true}}')
    >>> c.kind, c.operation
    ('non-append', 'DELETE')
    """
    files: list[str] = []
    removed: list[str] = []
    operation, table_id, ts = "", None, None
    restored_to: int | None = None
    cdf: bool | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            action = json.loads(line)
        except ValueError:
            raise StateCorruptError(f"version {version} of the Delta log is not JSON: "
                                    f"{line[:80]!r}") from None
        if "add" in action and action["add"].get("dataChange", True):
            files.append(str(action["add"]["path"]))
        elif "remove" in action and action["remove"].get("dataChange", True):
            removed.append(str(action["remove"]["path"]))
        elif "commitInfo" in action:
            info = action["commitInfo"] or {}
            operation = str(info.get("operation") or "")
            ts = info.get("timestamp")
            if operation == "RESTORE":
                raw = (info.get("operationParameters") or {}).get("version")
                restored_to = int(str(raw)) if str(raw).lstrip("-").isdigit() else None
        elif "metaData" in action:
            meta = action["metaData"] or {}
            table_id = meta.get("id")
            conf = meta.get("configuration") or {}
            raw_cdf = conf.get("delta.enableChangeDataFeed")
            cdf = None if raw_cdf is None else str(raw_cdf).lower() == "true"
    return Commit(version, tuple(files), tuple(removed), operation, restored_to, table_id, cdf,
                  int(ts) if isinstance(ts, (int, float)) else None)


def read_element(element: Mapping[str, Any] | None, table: str, ctx: str,
                 which: str = "committed") -> tuple[int | None, str | None]:
    """``(version, table_id)`` of a stored element (``(None, None)``: nothing processed yet).

    Example: ``read_element({"table": "t", "version": 7, "table_id": "x"}, "t", "src")``
    """
    if element is None:
        return None, None
    if not isinstance(element, Mapping) or "version" not in element:
        raise StateCorruptError(f"the {which} bookmark element of {ctx!r} is not a Delta "
                                f"table element ({element!r}); {way_out(ctx)}")
    stored = element.get("table")
    if stored != table:
        raise SourceError(f"the {which} bookmark of {ctx!r} is for table {stored!r}, not "
                          f"{table!r}; give this read its own transformation_ctx, or "
                          f"{way_out(ctx)}")
    version = element["version"]
    if version is None:
        return None, element.get("table_id")
    if isinstance(version, bool) or not isinstance(version, int):
        raise StateCorruptError(f"the {which} bookmark element of {ctx!r} has version "
                                f"{version!r}, not an integer; {way_out(ctx)}")
    return version, element.get("table_id")


def make_element(table: str, version: int | None, table_id: str | None) -> dict[str, Any]:
    """The element a run commits: the table, the last version it processed, the table's id.

    Example: ``make_element("t", 7, "x") == {"table": "t", "version": 7, "table_id": "x"}``
    """
    return {"table": table, "version": version, "table_id": table_id}


@dataclass(frozen=True)
class DeltaPlan:
    """What a run reads from a Delta table.

    ``kind``: :data:`AS_OF` (the table as of ``through``), :data:`APPENDS` (``files``: what the
    append commits after ``after`` up to ``through`` added), :data:`CHANGELOG` (the change data
    feed of that range) or :data:`NOTHING`.  ``commits``: the commits in range, oldest first;
    ``skipped``: the non-append ones ``onNonAppend=skip`` passed over; ``changelog``: the read
    has :data:`CHANGE_COLUMNS` after the table's (``onNonAppend=changes``), whatever the kind.

    Example: ``plan.kind == APPENDS and plan.files == ("part-0.parquet",)``
    """

    mode: str
    kind: str
    after: int | None
    through: int | None
    commits: tuple[Commit, ...] = ()
    skipped: tuple[Commit, ...] = ()
    changelog: bool = False

    @property
    def files(self) -> tuple[str, ...]:
        """The data files the append commits in range added, oldest first."""
        return tuple(f for c in self.commits if c.kind == APPEND for f in c.files)

    @property
    def new_input(self) -> bool:
        """Whether this read can return rows that no earlier run processed."""
        if self.kind == AS_OF:
            return self.through is not None
        if self.kind == CHANGELOG:
            return any(c.kind != NO_CHANGE for c in self.commits)
        return bool(self.files)

    def operations(self) -> dict[str, int]:
        """How many commits of each operation are in range."""
        out: dict[str, int] = {}
        for c in self.commits:
            out[c.operation or c.kind] = out.get(c.operation or c.kind, 0) + 1
        return out


def _broken(table: str, ctx: str, why: str) -> SourceError:
    return SourceError(f"the lineage of Delta table {table} is broken for {ctx!r}: {why}; "
                       f"{way_out(ctx)}")


def plan_delta_read(mode: str, commits: Iterable[Commit], after: int | None,
                    through: int | None, on_non_append: str = FAIL, *, table: str = "",
                    ctx: str = "", after_id: str | None = None,
                    table_id: str | None = None, cdf_enabled: bool = False) -> DeltaPlan:
    """The read of ``table`` for ``mode``, from the commits after ``after`` (pure).

    ``after``: the last processed version (``None``: nothing yet); ``through``: the upper
    version (the latest at run start, or the ``to`` run's for a replay; ``None``: no table
    yet); ``commits``: every commit from ``after + 1`` to ``through`` (a missing one is a log
    clean-up); ``after_id`` / ``table_id``: the bookmark's table id and the table's now;
    ``cdf_enabled``: the table's ``delta.enableChangeDataFeed`` now.

    >>> w = lambda v: Commit(v, (f"f{v}.parquet",), ())
    >>> plan_delta_read("incremental", [w(3), w(4)], 2, 4).files
    ('f3.parquet', 'f4.parquet')
    >>> plan_delta_read("incremental", [], 4, 4).kind
    'nothing'
    """
    cl = on_non_append == CHANGES
    if mode == REPLAY and through is None:
        return DeltaPlan(mode, NOTHING, after, None, changelog=cl)
    if mode == ALL or after is None:
        return DeltaPlan(mode, AS_OF, None, through, changelog=cl)
    if after_id is not None and table_id is not None and after_id != table_id:
        raise _broken(table, ctx, f"the bookmark processed version {after} of table id "
                                  f"{after_id}, and the table now has id {table_id} (it was "
                                  "dropped and created again, or replaced)")
    if through is None or through < after:
        now = "has no version" if through is None else f"is at version {through}"
        raise _broken(table, ctx, f"the bookmark processed version {after}, but the table now "
                                  f"{now} (recreated, or its log was rewritten)")
    if after == through:
        return DeltaPlan(mode, NOTHING, after, through, changelog=cl)
    by_version = {c.version: c for c in commits}
    missing = [v for v in range(after + 1, through + 1) if v not in by_version]
    if missing:
        raise _broken(table, ctx, f"version {missing[0]} is no longer in the table's log (log "
                                  "clean-up after delta.logRetentionDuration, or a VACUUM and "
                                  "clean-up of an old range)")
    rng = tuple(by_version[v] for v in range(after + 1, through + 1))
    for c in rng:
        if c.table_id is not None and after_id is not None and c.table_id != after_id:
            raise _broken(table, ctx, f"version {c.version} ({c.operation or 'a new table'}) "
                                      f"gave the table a new id ({c.table_id})")
        if c.restored_to is not None and c.restored_to <= after:
            raise _broken(table, ctx, f"version {c.version} restored the table to version "
                                      f"{c.restored_to}, at or before the bookmark's version "
                                      f"{after}: rows it processed may come back")
    if cl:
        return _plan_changes(mode, rng, after, through, table, ctx, cdf_enabled)
    other = tuple(c for c in rng if c.kind == NON_APPEND)
    if other and on_non_append != SKIP:
        first = other[0]
        raise SourceError(
            f"Delta table {table} has a non-append commit after the bookmark of {ctx!r}: "
            f"version {first.version} ({first.operation or 'removes data'})"
            + (f" and {len(other) - 1} more" if len(other) > 1 else "")
            + "; rows it changed or deleted cannot be read as new rows. Use option "
            "onNonAppend=skip to read the appended rows only, onNonAppend=changes to read "
            f"change rows (_change_type; needs the change data feed), or {way_out(ctx)}")
    return DeltaPlan(mode, APPENDS, after, through, rng, other)


def _plan_changes(mode: str, rng: tuple[Commit, ...], after: int, through: int, table: str,
                  ctx: str, cdf_enabled: bool) -> DeltaPlan:
    """The change-data-feed read of a range, or one clear error when the feed was off for
    some version in it: off now, or switched on inside the range (pure)."""
    on_from: int | None = None
    for c in rng:
        if c.cdf is not None:
            on_from = c.version if c.cdf else None
    switched_late = any(c.cdf for c in rng) and on_from is not None and on_from > after + 1
    if not cdf_enabled or switched_late:
        since = f" only since version {on_from}" if switched_late else ""
        raise SourceError(
            f"Delta table {table} cannot be read as changes for {ctx!r}: its change data feed "
            f"is {'on' + since if since else 'off'} (table property "
            "delta.enableChangeDataFeed), and versions "
            f"{after + 1}..{through} need it. Run ALTER TABLE ... SET TBLPROPERTIES "
            "(delta.enableChangeDataFeed = true) — the feed covers the commits after that — "
            f"then {way_out(ctx)}; or read with onNonAppend=skip (appended rows only)")
    return DeltaPlan(mode, CHANGELOG, after, through, rng, changelog=True)
