"""An Iceberg table's metadata through Iceberg's Java API, for classic (py4j) sessions.

The table source and sink need the current snapshot and the snapshot list (parent links and
summaries).  The ``snapshots``/``history`` metadata tables give them through Spark, one Spark
job per query (a tenth of a second to a second a run, issue 22's benchmark).  Here the table's
metadata is refreshed and read as one JSON document (Iceberg's ``TableMetadataParser``): no
Spark job.  :func:`load` returns ``None`` where that is not at hand (Spark Connect, a name with
a branch, tag or time-travel suffix, a table that is not Iceberg, any error); callers then ask
the metadata tables, which also give the error to show.

Example::

    meta = load(spark, "local.db.orders")
    meta.current, [s.id for s in meta.snapshots], meta.ancestors()
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any, Mapping, NamedTuple

from .compat import is_connect
from .jvm import java_class, java_error_text

log = logging.getLogger("sparkmark.table")

#: the last name part of a branch, tag or time-travel reference (``db.t.branch_audit``)
SELECTOR = re.compile(r"(?i)^(?:branch_|tag_|snapshot_id_|at_timestamp_)")
_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]+`)"


class SnapshotMeta(NamedTuple):
    """One snapshot of the metadata: id, parent id and summary (``operation`` included).

    Example: ``SnapshotMeta(2, 1, {"operation": "append"}).summary["operation"]``
    """

    id: int
    parent: int | None
    summary: Mapping[str, str]


class TableMetadata(NamedTuple):
    """A table's current (``main``) snapshot and every snapshot still in its metadata.

    Example: ``TableMetadata(None, []).ancestors() == set()``
    """

    current: int | None
    snapshots: list[SnapshotMeta]

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
    snaps = []
    for s in doc.get("snapshots") or []:
        parent = s.get("parent-snapshot-id")
        snaps.append(SnapshotMeta(int(s["snapshot-id"]), None if parent is None else int(parent),
                                  {str(k): str(v) for k, v in (s.get("summary") or {}).items()}))
    return TableMetadata(None if current is None or int(current) == -1 else int(current), snaps)


def load(spark: Any, name: str) -> TableMetadata | None:
    """Table ``name``'s metadata, refreshed (the committed state), or ``None`` (see above).

    Example: ``load(spark, "local.db.orders").current``
    """
    parts = re.findall(_PART, name)
    if is_connect(spark) or not parts or SELECTOR.match(parts[-1].strip("`")):
        return None
    try:
        util = java_class(spark, "org.apache.iceberg.spark.Spark3Util")
        table = util.loadIcebergTable(spark._jsparkSession, name)
        metadata = table.operations().refresh()
        text = java_class(spark, "org.apache.iceberg.TableMetadataParser").toJson(metadata)
        return parse(json.loads(text))
    except Exception as e:  # noqa: BLE001 - py4j errors, a table of another kind
        log.debug("metadata of table %s through the Java API: %s", name, java_error_text(e))
        return None
