"""Exactly-once sinks: stamped writes whose output survives only if the run commits.

File targets (any Hadoop path)
    ``write`` stages the run's output under ``<target>/_sparkmark_staging/<run_id>/`` (Spark's
    readers skip paths that start with ``_``), after recording the staging path in the ledger.
    ``commit`` commits the state store first, then *publishes*: every staged file is renamed into
    the target as ``sm-<run_id>-<name>`` (an atomic rename on local disks and HDFS) and the ledger
    row is marked published.  A crash between the two is rolled forward by the job's next
    ``init``; a run that never committed has its staging directory removed by the next ``init``
    (or by ``fail``).  Rollback removes a run's files by their ``sm-<run_id>-`` prefix.

JDBC targets
    ``write_jdbc`` appends the stamped rows to a staging table ``<table>__sm_stage``; publishing
    moves them with ``INSERT INTO <table> SELECT ... WHERE sm_run_id = R; DELETE ...`` in one
    database transaction, so readers of the table never see uncommitted rows and a repeated
    publish inserts nothing twice.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

from .errors import ConfigError, SinkError
from .state.store import EMPTY, FAILED, ROLLED_BACK, SUCCEEDED, StateStore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .job import Job

FILE_FORMATS = ("parquet", "orc", "json", "csv")
STAGING_DIR = "_sparkmark_staging"
RUN_ID_COL = "sm_run_id"
SNAPSHOT_COL = "sm_snapshot_ts"


# ---------------------------------------------------------------------- Hadoop file system
class _FS:
    """A thin wrapper over Hadoop's FileSystem through the JVM (works for every Spark path)."""

    def __init__(self, spark: "SparkSession", path: str):
        jvm = spark.sparkContext._jvm
        self._jvm = jvm
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.root = jvm.org.apache.hadoop.fs.Path(path)
        self.fs = self.root.getFileSystem(self.conf)

    def path(self, p: str):
        return self._jvm.org.apache.hadoop.fs.Path(p)

    def qualify(self, p: str):
        """The fully qualified path (scheme included), as listings return them."""
        return self.fs.makeQualified(self.path(p))

    def exists(self, p) -> bool:
        return bool(self.fs.exists(p))

    def is_file(self, p) -> bool:
        return self.exists(p) and bool(self.fs.getFileStatus(p).isFile())

    def files(self, p) -> list[str]:
        """Every data file below ``p`` (no checksum, marker or hidden files)."""
        out = []
        if not self.exists(p):
            return out
        it = self.fs.listFiles(p, True)
        while it.hasNext():
            st = it.next()
            name = st.getPath().getName()
            if name.startswith(".") or name.startswith("_"):
                continue
            out.append(st.getPath().toString())
        return out

    def children(self, p) -> list[str]:
        if not self.exists(p):
            return []
        return [st.getPath().getName() for st in self.fs.listStatus(p)]

    def mkdirs(self, p) -> bool:
        return bool(self.fs.mkdirs(p))

    def rename(self, src, dst) -> bool:
        return bool(self.fs.rename(src, dst))

    def delete(self, p) -> None:
        if self.exists(p):
            self.fs.delete(p, True)


def _java_error(e: Exception) -> str:
    text = str(e)
    for line in text.splitlines():
        line = line.strip()
        if "Exception:" in line or "Error:" in line:
            return line.split("\tat ")[0][:500]
    return text.splitlines()[0][:500] if text else type(e).__name__


# ---------------------------------------------------------------------- writing
def stamp(df: "DataFrame", run_id: str, snapshot_ts: int) -> "DataFrame":
    """Add ``sm_run_id`` and ``sm_snapshot_ts`` (a UTC timestamp) to every row."""
    from pyspark.sql import functions as F
    return (df.withColumn(RUN_ID_COL, F.lit(run_id))
              .withColumn(SNAPSHOT_COL, F.timestamp_millis(F.lit(int(snapshot_ts)))))


def _count_while(df: "DataFrame", action) -> int:
    """Run ``action(observed_df)`` and return the number of rows it processed (one pass)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F
    obs = Observation("sparkmark_rows")
    action(df.observe(obs, F.count(F.lit(1)).alias("rows")))
    return int(obs.get.get("rows", 0))


def write_files(job: "Job", df: "DataFrame", target: str, *, format: str = "parquet",
                transformation_ctx: str | None = None, partition_by=None, mode: str = "append",
                options: dict[str, Any] | None = None, stamp_rows: bool = True) -> int:
    job._require_active("write")
    fmt = (format or "").lower()
    if fmt not in FILE_FORMATS:
        raise ConfigError(f"unknown sink format {format!r}; use one of {', '.join(FILE_FORMATS)}"
                          " (or job.write_jdbc for a database table)")
    if mode != "append":
        raise ConfigError(f"write mode {mode!r} is not supported: sparkmark sinks append each "
                          "run's output exactly once (mode='append'); use a new target or "
                          "'sparkmark bookmark reset' plus an emptied target to rebuild")
    if not target or not isinstance(target, str):
        raise ConfigError("write needs a target path")
    parts = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
    missing = [c for c in parts if c not in df.columns]
    if missing:
        raise ConfigError(f"partition_by column(s) {missing} are not in the DataFrame "
                          f"(columns: {df.columns})")
    fs = _FS(job.spark, target)
    root = fs.root
    if fs.is_file(root):
        raise SinkError(f"target {target} is a file, not a directory; write to a directory path")
    # Unstamped output (the Glue layer's default) stays exactly-once through the per-run file
    # names sm-<run_id>-...: publish, discard and rollback go by file, never by column.
    stamped = stamp(df, job.run_id, job.snapshot_ts) if stamp_rows else df
    _check_schema(job.spark, fs, target, fmt, stamped.drop(*parts))
    staging = f"{root.toString().rstrip('/')}/{STAGING_DIR}/{job.run_id}/{len(job._outputs)}"
    # In the ledger before anything exists on disk: a crash from here on leaves nothing that the
    # next init does not know about and clean up.
    job._register_output({"kind": "files", "target": root.toString(), "staging": staging,
                          "format": fmt, "ctx": transformation_ctx, "partition_by": parts,
                          "stamped": bool(stamp_rows)})
    try:
        made = fs.mkdirs(fs.path(staging))
    except Exception as e:  # noqa: BLE001 - permission denied and friends come from the JVM
        raise SinkError(f"cannot write to target {target}: {_java_error(e)}; check that the "
                        "directory is writable") from None
    if not made:
        raise SinkError(f"cannot write to target {target}: could not create a directory there "
                        "(permission denied?); check that the directory is writable")

    def action(d: "DataFrame") -> None:
        w = d.write.format(fmt).mode("overwrite").options(**(options or {}))
        if parts:
            w = w.partitionBy(*parts)
        w.save(staging)

    try:
        n = _count_while(stamped, action)
    except Exception as e:  # noqa: BLE001
        fs.delete(fs.path(staging))
        raise SinkError(f"writing to {target} failed: {_java_error(e)}") from None
    job._add_written(n)
    return n


def _check_schema(spark: "SparkSession", fs: _FS, target: str, fmt: str,
                  df: "DataFrame") -> None:
    """Refuse a write whose columns clash with the data already published (parquet/orc)."""
    if fmt not in ("parquet", "orc") or not fs.files(fs.root):
        return
    try:
        existing = spark.read.format(fmt).load(target).schema
    except Exception:  # noqa: BLE001 - an unreadable target shows up at write time
        return
    # partition columns live in folder names, typed by Spark's guess: compare data columns only
    have = {f.name.lower(): f.dataType for f in existing.fields
            if f.name.lower() in {c.lower() for c in df.columns}}
    clashes = [f"{f.name}: target has {have[f.name.lower()].simpleString()}, "
               f"new data has {f.dataType.simpleString()}"
               for f in df.schema.fields
               if f.name.lower() in have and have[f.name.lower()] != f.dataType]
    if clashes:
        raise SinkError(f"target {target} has an incompatible schema ({'; '.join(clashes)}); "
                        "cast the columns to the target's types or write to a new target")


# ---------------------------------------------------------------------- publish / discard
def publish_outputs(spark: "SparkSession", store: StateStore, run_id: str,
                    outputs: Iterable[dict[str, Any]], *, properties: dict | None = None) -> bool:
    """Move a committed run's staged output into its targets (idempotent).

    Returns False when a JDBC output could not be published yet (no credentials at hand); it is
    then retried by the next run that writes to the same table.
    """
    outputs = list(outputs)
    if not outputs:
        return True
    done = True
    for out in outputs:
        if out["kind"] == "files":
            _publish_files(spark, run_id, out)
        elif out["kind"] == "jdbc":
            from .sinks_jdbc import publish_jdbc
            done = publish_jdbc(spark, run_id, out, properties) and done
    if done:
        store.update_run(run_id, publish_state="done")
    return done


def _publish_files(spark: "SparkSession", run_id: str, out: dict[str, Any]) -> None:
    fs = _FS(spark, out["target"])
    staging = fs.qualify(out["staging"])
    staging_str = staging.toString().rstrip("/")
    for f in fs.files(staging):
        rel = f[len(staging_str) + 1:] if f.startswith(staging_str) else f.rsplit("/", 1)[-1]
        rel_dir, _, name = rel.rpartition("/")
        dest_dir = out["target"].rstrip("/") + ("/" + rel_dir if rel_dir else "")
        dest = fs.path(f"{dest_dir}/sm-{run_id}-{name}")
        if fs.exists(dest):
            continue
        fs.mkdirs(fs.path(dest_dir))
        if not fs.rename(fs.path(f), dest):
            raise SinkError(f"could not move {f} to {dest.toString()} while publishing run "
                            f"{run_id}; the next run of the job retries")
    fs.delete(fs.path(out["staging"]).getParent())  # the run's staging directory
    _remove_empty_staging_root(fs, out["target"])


def _remove_empty_staging_root(fs: _FS, target: str) -> None:
    root = fs.path(f"{target.rstrip('/')}/{STAGING_DIR}")
    try:
        if fs.exists(root) and not fs.children(root):
            fs.delete(root)
    except Exception:  # noqa: BLE001 - a concurrent writer may have just created a run dir
        pass


def discard_outputs(spark: "SparkSession", outputs: Iterable[dict[str, Any]],
                    properties: dict | None = None) -> bool:
    """Remove the staged output of a run that did not commit. False if some must wait."""
    done = True
    for out in outputs:
        if out["kind"] == "files":
            fs = _FS(spark, out["target"])
            fs.delete(fs.path(out["staging"]))
            parent = fs.path(out["staging"]).getParent()
            if fs.exists(parent) and not fs.children(parent):
                fs.delete(parent)
            _remove_empty_staging_root(fs, out["target"])
        elif out["kind"] == "jdbc":
            from .sinks_jdbc import discard_jdbc
            done = discard_jdbc(spark, out, properties) and done
    return done


def remove_run_output(spark: "SparkSession", run_id: str,
                      outputs: Iterable[dict[str, Any]], properties: dict | None = None,
                      dry_run: bool = False) -> list[str]:
    """Delete a published run's output from its targets (rollback). Returns what was removed."""
    removed: list[str] = []
    for out in outputs:
        if out["kind"] == "files":
            fs = _FS(spark, out["target"])
            prefix = f"sm-{run_id}-"
            for f in fs.files(fs.root):
                if f.rsplit("/", 1)[-1].startswith(prefix):
                    removed.append(f)
                    if not dry_run:
                        fs.delete(fs.path(f))
        elif out["kind"] == "jdbc":
            from .sinks_jdbc import remove_jdbc_run
            removed.extend(remove_jdbc_run(spark, run_id, out, properties, dry_run=dry_run))
    return removed


def recover_job_outputs(spark: "SparkSession", store: StateStore, job_name: str,
                        properties: dict | None = None) -> None:
    """Called by ``init`` under the job's lease: finish what earlier runs left half done.

    A committed run whose output is not yet published is rolled forward; a run that did not
    commit has its staged output removed.
    """
    for row in store.runs_to_recover(job_name):
        outputs = json.loads(row["outputs"] or "[]")
        if row["status"] in (SUCCEEDED, EMPTY) and row["publish_state"] == "pending":
            publish_outputs(spark, store, row["run_id"], outputs, properties=properties)
        elif row["status"] in (FAILED, ROLLED_BACK, "SKIPPED"):
            if discard_outputs(spark, outputs, properties):
                store.update_run(row["run_id"], publish_state="discarded")
