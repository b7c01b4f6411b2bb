"""An Iceberg table's metadata through Iceberg's Java API, for classic (py4j) sessions.

The table source and sink need the current snapshot and the snapshot list (parent links and
summaries).  The ``snapshots``/``history`` metadata tables give them through Spark, one Spark
job per query (a tenth of a second to a second a run in the Iceberg benchmark).  Here the table's
metadata is refreshed and read as one JSON document (Iceberg's ``TableMetadataParser``): no
Spark job.  :func:`load` returns ``None`` where that is not at hand (Spark Connect, a name with
a branch, tag or time-travel suffix, a table that is not Iceberg, any error); callers then ask
the metadata tables, which also give the error to show.

A run needs a few snapshots, while the document grows with the table's history (~0.75 KB a
snapshot: 22 ms to read whole at 1,000 snapshots, 45 ms at 3,000).  So the source reads the
current snapshot and walks its range back through parent links one snapshot at a time
(:meth:`TableHandle.walk`), and the sink reads the schema, one property and the newest
snapshots (:meth:`TableHandle.staged`); the whole document only where every snapshot counts
(a broken lineage, a long range, the ancestry walk of a recovery).  Where sparkmark's Java
helper loads, the source's look (load, refresh, current snapshot, walk) is one py4j round trip
(:func:`look_range`) instead of five and more.

The sink keeps the Java table of :func:`open_table` for a run's three looks at its target
(the checks before the write, the staged snapshot after it, the cherry-pick at commit), so a
write pays one catalog lookup, not three; where sparkmark's Java helper loads, the sink makes
those looks through it instead (:mod:`sparkmark.sinks.table`, one py4j round trip each) and
comes back to a :class:`TableHandle` for any other answer.

Example::

    meta = load(spark, "local.db.orders")
    meta.current, [s.id for s in meta.snapshots], meta.ancestors(), meta.columns
"""
from __future__ import annotations

import json
import logging
import re
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from sparkmark.engine.compat import is_connect
from sparkmark.engine.jvm import helper, java_error_text, java_static

log = logging.getLogger("sparkmark.table")

#: the last name part of a branch, tag or time-travel reference (``db.t.branch_audit``)
SELECTOR = re.compile(r"(?i)^(?:branch_|tag_|snapshot_id_|at_timestamp_)")
_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)"
#: how many of the newest snapshots a write's look for its staged one reads before it reads
#: the whole document (:meth:`TableHandle.staged`)
STAGED_LIMIT = 8


class SnapshotMeta(NamedTuple):
    """One snapshot of the metadata: id, parent id and summary (``operation`` included).

    Example: ``SnapshotMeta(2, 1, {"operation": "append"}).summary["operation"]``
    """

    id: int
    parent: int | None
    summary: Mapping[str, str]


_NO_PROPERTIES: Mapping[str, str] = MappingProxyType({})


class TableMetadata(NamedTuple):
    """A table's current (``main``) snapshot, every snapshot still in its metadata, the
    current schema's column names and the table properties.

    Example: ``TableMetadata(None, []).ancestors() == set()``
    """

    current: int | None
    snapshots: list[SnapshotMeta]
    columns: tuple[str, ...] = ()
    properties: Mapping[str, str] = _NO_PROPERTIES

    def ancestors(self) -> set[int]:
        """The current snapshot and its ancestors still in the metadata (parent links)."""
        parent = {s.id: s.parent for s in self.snapshots}
        out: set[int] = set()
        at = self.current
        while at is not None and at in parent and at not in out:
            out.add(at)
            at = parent[at]
        return out


def parse(doc: Mapping[str, Any]) -> TableMetadata:
    """:class:`TableMetadata` from an Iceberg table metadata JSON document (pure).

    Example: ``parse({"current-snapshot-id": -1, "snapshots": []}).current is None``
    """
    current = doc.get("current-snapshot-id")
    snaps = [parse_snapshot(s) for s in doc.get("snapshots") or []]
    schema = doc.get("schema") or {}  # format v1; v2 keeps every schema and the current id
    for sc in doc.get("schemas") or []:
        if sc.get("schema-id") == doc.get("current-schema-id"):
            schema = sc
    columns = tuple(str(f["name"]) for f in schema.get("fields") or [])
    props = {str(k): str(v) for k, v in (doc.get("properties") or {}).items()}
    return TableMetadata(None if current is None or int(current) == -1 else int(current), snaps,
                         columns, props)


class TableHandle:
    """An Iceberg table loaded through the session's catalog (the Java ``Table``) and its
    metadata as last read.  :meth:`reread` reads it again; :attr:`table` is for commits
    (``manageSnapshots``).

    Example: ``h = open_table(spark, "local.db.t"); h.meta.columns; h.reread().current``
    """

    def __init__(self, spark: Any, name: str, table: Any, meta: TableMetadata) -> None:
        self.spark, self.name, self.table, self.meta = spark, name, table, meta
        #: the Java ``TableMetadata`` :attr:`meta` was read from (the base of a commit that
        #: must fail when the table changed since)
        self.base: Any = None

    def reread(self, refresh: bool = True) -> TableMetadata:
        """The metadata again: refreshed from the catalog (``refresh``), or as this process
        last saw it (its own commits through the same catalog included, no I/O)."""
        ops = self.table.operations()
        metadata = ops.refresh() if refresh else ops.current()
        text = java_static(self.spark, "org.apache.iceberg.TableMetadataParser", "toJson")(metadata)
        self.meta = parse(json.loads(text))
        self.base = metadata
        return self.meta


    # ---------------------------------------------------------------- a few snapshots
    # A table's metadata document grows with its history (~0.75 KB per snapshot: 0.74 MB and
    # 22 ms to read whole at 1,000 snapshots, 2.2 MB and 45 ms at 3,000, measured here), while a
    # run needs its few newest snapshots.  These read single snapshots from the Java metadata
    # (``SnapshotParser``, two py4j calls each) and give up after ``limit`` (the caller then
    # reads the whole document, which is cheaper by then).

    def refreshed(self) -> Any:
        """The table's metadata refreshed from the catalog (the Java object, kept as
        :attr:`base`); :attr:`meta` is not re-read.

        Example: ``md = handle.refreshed(); handle.current(md)``
        """
        self.base = self.table.operations().refresh()
        return self.base

    def snapshot(self, metadata: Any, snapshot_id: int) -> SnapshotMeta | None:
        """Snapshot ``snapshot_id`` of the Java ``metadata`` (``None``: not in it).

        Example: ``handle.snapshot(handle.base, 42).parent``
        """
        found = metadata.snapshot(snapshot_id)
        return None if found is None else self._parsed(found)

    def current(self, metadata: Any) -> SnapshotMeta | None:
        """The ``main`` branch's snapshot of the Java ``metadata`` (``None``: none yet).

        Example: ``handle.current(handle.base).summary["operation"]``
        """
        found = metadata.currentSnapshot()
        return None if found is None else self._parsed(found)

    def walk(self, metadata: Any, through: SnapshotMeta | int | None, after: int,
             limit: int = 64) -> list[SnapshotMeta] | None:
        """The snapshots after ``after`` up to ``through``, newest first, following parent
        links in the Java ``metadata`` (``after`` itself is not read); ``None`` when ``after``
        is not reached within ``limit`` snapshots (not an ancestor, an expired snapshot on the
        way, or a long way: the caller then reads the whole document).

        Example: ``[s.id for s in h.walk(h.refreshed(), 9, after=7)]  # [9, 8]``
        """
        out: list[SnapshotMeta] = []
        at = self.snapshot(metadata, through) if isinstance(through, int) else through
        while at is not None and len(out) < limit:
            if at.id == after:
                return out
            out.append(at)
            if at.parent == after:
                return out
            if at.parent is None:
                return None
            at = self.snapshot(metadata, at.parent)
        return None

    def staged(self, metadata: Any, wap_id: str, limit: int = 0) -> SnapshotMeta | None:
        """The snapshot staged under ``wap_id`` among the ``limit`` newest of the Java
        ``metadata`` (snapshots are kept in the order they were added).

        Example: ``handle.staged(handle.table.operations().current(), wap_id).id``
        """
        limit = limit or STAGED_LIMIT
        snaps = metadata.snapshots()
        n = int(snaps.size())
        for i in range(n - 1, max(-1, n - 1 - limit), -1):
            snap = self._parsed(snaps.get(i))
            if snap.summary.get("wap.id") == wap_id:
                return snap
        return None

    def columns(self, metadata: Any) -> tuple[str, ...]:
        """The current schema's column names of the Java ``metadata``.

        Example: ``"sm_run_id" in handle.columns(handle.base)``
        """
        text = java_static(self.spark, "org.apache.iceberg.SchemaParser", "toJson")(
            metadata.schema())
        return tuple(str(f["name"]) for f in json.loads(text).get("fields") or [])

    def _parsed(self, snapshot: Any) -> SnapshotMeta:
        doc = json.loads(java_static(self.spark, "org.apache.iceberg.SnapshotParser",
                                     "toJson")(snapshot))
        return parse_snapshot(doc)


def parse_snapshot(doc: Mapping[str, Any]) -> SnapshotMeta:
    """:class:`SnapshotMeta` from one snapshot's JSON (Iceberg's ``SnapshotParser``; pure).

    Example: ``parse_snapshot({"snapshot-id": 2, "parent-snapshot-id": 1}).parent == 1``
    """
    parent = doc.get("parent-snapshot-id")
    return SnapshotMeta(int(doc["snapshot-id"]), None if parent is None else int(parent),
                        {str(k): str(v) for k, v in (doc.get("summary") or {}).items()})


def open_table(spark: Any, name: str, *, read: bool = True) -> TableHandle | None:
    """Table ``name`` loaded, its metadata refreshed (the committed state), or ``None`` (see
    the module's docstring).  ``read=False``: refreshed only (:attr:`TableHandle.base`), the
    whole document not read (:attr:`TableHandle.meta` stays empty).

    Example: ``open_table(spark, "local.db.orders").meta.current``
    """
    parts = re.findall(_PART, name)
    if is_connect(spark) or not parts or SELECTOR.match(parts[-1].strip("`")):
        return None
    try:
        table = java_static(spark, "org.apache.iceberg.spark.Spark3Util", "loadIcebergTable")(
            spark._jsparkSession, name)
        handle = TableHandle(spark, name, table, TableMetadata(None, []))
        if read:
            handle.reread()
        else:
            handle.refreshed()
        return handle
    except Exception as e:  # noqa: BLE001 - py4j errors, a table of another kind
        log.debug("metadata of table %s through the Java API: %s", name, java_error_text(e))
        return None


class RangeLook(NamedTuple):
    """What :func:`look_range` read: the ``main`` branch's snapshot (``None``: none yet) and,
    when a range was asked, its snapshots newest first (``chain``) or, when the walk did not
    reach its start, the whole metadata (``meta``).

    Example: ``RangeLook(None, None, None).chain is None``
    """

    current: SnapshotMeta | None
    chain: list[SnapshotMeta] | None
    meta: TableMetadata | None


def look_range(spark: Any, name: str, after: int, through: int | None = None,
               limit: int = 64) -> RangeLook | None:
    """The source's look at table ``name`` in one py4j round trip (sparkmark's Java helper,
    ``SparkmarkTableHelper.range``): the table loaded and refreshed, its current snapshot and,
    when the range's top (``through``, else the current snapshot) is not ``after``, what
    :meth:`TableHandle.walk` gives from the top back to ``after`` (at most ``limit``), else the
    whole metadata document, as :func:`open_table`, :meth:`TableHandle.current`,
    :meth:`TableHandle.walk` and :meth:`TableHandle.reread` read them call by call (five
    round trips and more).  ``None`` where the helper is not at hand (Spark Connect, a name
    with a branch, tag or time-travel suffix, no helper) or raised (not an Iceberg table, any
    error): the caller takes that py4j path, which gives the error to show.

    Example: ``look_range(spark, "local.db.orders", after=41).chain``
    """
    parts = re.findall(_PART, name)
    if is_connect(spark) or not parts or SELECTOR.match(parts[-1].strip("`")):
        return None
    made = helper(spark, "SparkmarkTableHelper")
    if made is None:
        return None
    try:
        doc = json.loads(made.range(spark._jsparkSession, name, str(after),
                                    None if through is None else str(through), limit))
        cur = doc.get("current")
        chain = doc.get("chain")
        whole = doc.get("metadata")
        return RangeLook(None if cur is None else parse_snapshot(cur),
                         None if chain is None else [parse_snapshot(s) for s in chain],
                         None if whole is None else parse(whole))
    except Exception as e:  # noqa: BLE001 - not an Iceberg table, no such table, py4j errors
        log.debug("metadata of table %s through the helper: %s", name, java_error_text(e))
        return None


def load(spark: Any, name: str) -> TableMetadata | None:
    """Table ``name``'s metadata, refreshed (the committed state), or ``None`` (see above).

    Example: ``load(spark, "local.db.orders").current``
    """
    handle = open_table(spark, name)
    return None if handle is None else handle.meta
