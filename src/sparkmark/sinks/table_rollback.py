"""Rollback of a run's Iceberg write: the data files it published removed in one table commit
(:func:`remove_table_run`), or refused when later snapshots rewrote them.

The write, the publish and the discard of a run's staged snapshot live in
:mod:`sparkmark.sinks.table`; this is the other direction, used by
:func:`sparkmark.sinks.publish.finish_removals`.

    from sparkmark.sinks.table_rollback import remove_table_run
    remove_table_run(spark, run_id, out, dry_run=True)  # ['local.db.t: 2 data file(s), ...']
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkmark.core.errors import SinkError
from sparkmark.core.run import TableOutput
from sparkmark.engine.jvm import java_error_text
from sparkmark.sinks.stamping import checked_run_id
from sparkmark.sinks.table import RUN_PROP, wap_snapshots

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def remove_table_run(spark: "SparkSession", run_id: str, out: TableOutput,
                     dry_run: bool = False) -> list[str]:
    """Rollback: remove the data files run ``run_id`` published into Iceberg table
    ``out.target`` in one table commit (a ``delete`` snapshot whose summary has
    ``sparkmark.rollback-of``).  Refused, with nothing changed, when later snapshots rewrote
    some of those files (compaction, an overwrite, a delete); nothing to do when they are all
    gone already (a removal a crash interrupted after its commit).  Returns what was removed.

    Example: ``remove_table_run(spark, run_id, out, dry_run=True)  # ['local.db.t: 2 files ...']``
    """
    checked_run_id(run_id)
    try:
        published = [s for s in wap_snapshots(spark, out.target, out.wap_id) if s["published"]]
        if not published:
            return []  # never published (an empty run), or the table's main was rolled back
        snap = published[0]
        live = [str(r[0]) for r in spark.sql(
            f"SELECT data_file.file_path FROM {out.target}.entries "
            f"WHERE snapshot_id = {snap['snapshot_id']} AND status < 2 "
            "AND data_file.content = 0").collect()]
    except SinkError:
        raise
    except Exception as e:  # noqa: BLE001 - the table was dropped, the catalog is gone
        raise SinkError(f"cannot roll back run {run_id} in Iceberg table {out.target}: "
                        f"{java_error_text(e)}; the table was not changed") from None
    if not live and _rolled_back(spark, out.target, run_id):
        return []  # removed by an earlier rollback (a crash interrupted it after its commit)
    if len(live) != snap["added_files"]:
        raise SinkError(
            f"cannot roll back run {run_id} in Iceberg table {out.target}: later snapshots "
            f"rewrote its data files ({snap['added_files'] - len(live)} of "
            f"{snap['added_files']} are no longer live: compaction, an overwrite or a delete), "
            "so its rows cannot be removed exactly; the table was not changed. Delete them by "
            "hand "
            f"(DELETE FROM {out.target} WHERE sm_run_id = '{run_id}' if the rows are stamped) "
            "and reset the bookmark without --remove-output")
    what = [f"{out.target}: {len(live)} data file(s), {snap['added_records']} rows of run "
            f"{run_id} (snapshot {snap['snapshot_id']})"]
    if dry_run:
        return what
    try:
        jvm: Any = spark.sparkContext._jvm
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            spark._jsparkSession, out.target)
        # DataFile objects, never path strings: py4j would pick SnapshotProducer's
        # deleteFile(String), which deletes the file itself and leaves it in the table
        wanted, files = set(live), []
        it = table.snapshot(snap["snapshot_id"]).addedDataFiles(table.io()).iterator()
        while it.hasNext():
            f = it.next()
            if str(f.location()) in wanted:
                files.append(f)
        if len(files) != len(live):
            raise SinkError(f"found {len(files)} of the {len(live)} data files to remove")
        op = table.newDelete()
        for f in files:
            op.deleteFile(f)
        op.validateFilesExist()
        op.set("sparkmark.rollback-of", run_id)
        op.set(RUN_PROP, run_id)
        op.commit()
        spark.sql(f"REFRESH TABLE {out.target}")
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"rolling back run {run_id} in Iceberg table {out.target} failed: "
                        f"{java_error_text(e)}; the table was not changed (its commit is atomic)"
                        ) from None
    return what


def _rolled_back(spark: "SparkSession", table: str, run_id: str) -> bool:
    """Whether the ancestry of ``table``'s current snapshot has the rollback of ``run_id``."""
    return bool(spark.sql(
        f"SELECT 1 FROM {table}.snapshots s JOIN {table}.history h "
        "ON s.snapshot_id = h.snapshot_id WHERE h.is_current_ancestor "
        f"AND s.summary['sparkmark.rollback-of'] = '{checked_run_id(run_id)}'").collect())
