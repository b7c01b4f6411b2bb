"""Exactly-once file targets (any Hadoop path): stage aside, publish by rename after commit.

``write_files`` stages the run's output under ``<target>/_sparkmark_staging/<run_id>/<n>/``
(Spark's readers skip paths that start with ``_``), after recording the staging path in the
ledger through :meth:`RunContext.stage_output`.  After the state store commit,
:mod:`sparkmark.sinks.publish` renames every staged file into the target as
``sm-<run_id>-<name>`` (an atomic rename on local disks and HDFS).  Rollback removes a run's
files by that prefix.

    n = write_files(run, df, "data/out/orders", format="parquet", transformation_ctx="sink")
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from sparkmark.core.errors import ConfigError, JobStateError, SinkError
from sparkmark.core.formats import WRITE_FORMATS
from sparkmark.engine.fs import ArrowFS, HadoopFS, file_system, storage_secrets
from sparkmark.engine.jvm import storage_error_text
from sparkmark.core.run import FileOutput, RunContext
from sparkmark.planning.schema_drift import name_paths, skip_hint
from sparkmark.core.secrets import mask_url
from sparkmark.sinks.target_fs import target_fs
from sparkmark.sinks.stamping import STAGING_DIR, count_while, published_prefix, stamp

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def write_files(run: RunContext, df: "DataFrame", target: str, *, format: str = "parquet",
                transformation_ctx: str | None = None,
                partition_by: str | Sequence[str] | None = None, mode: str = "append",
                options: dict[str, Any] | None = None, output_index: int = 0,
                stamp_rows: bool = True) -> int:
    """Stage ``df`` (stamped) for ``target``; returns the rows written.

    ``output_index`` numbers this run's outputs (each gets its own staging folder).
    ``stamp_rows=False`` (the Glue layer's default) writes ``df``'s columns only: exactly once
    still holds, because publish, discard and rollback go by the per-run file names.
    """
    fmt = (format or "").lower()
    if fmt not in WRITE_FORMATS:
        raise ConfigError(f"unknown sink format {format!r}; use one of {', '.join(WRITE_FORMATS)}"
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
    run_id, snapshot_ts = run.run_id, run.snapshot_ts
    if run_id is None or snapshot_ts is None:
        raise JobStateError("write() needs a running job: call job.init(name, args) first")
    run.add_secrets(storage_secrets(run.spark, target))  # s3a keys never reach the ledger
    try:
        fs = file_system(run.spark, target)
        root = fs.root
        target_is_file = fs.is_file(root)
    except Exception as e:  # noqa: BLE001 - a missing bucket, refused keys, no endpoint
        raise SinkError(f"cannot open target {mask_url(target)}: {storage_error_text(e, target)}"
                        "; nothing was written or committed") from None
    if target_is_file:
        raise SinkError(f"target {target} is a file, not a directory; write to a directory path")
    stamped = stamp(df, run_id, snapshot_ts) if stamp_rows else df
    # partition columns live in folder names, typed by Spark's guess: compare data columns only
    try:
        check_schema(run.spark, fs, target, fmt, stamped.drop(*parts))
    except SinkError as e:
        raise SinkError(f"{e}{_input_hint(run, df)}") from None
    published_prefix(run_id)  # a real run id: it becomes part of paths
    staging = f"{root.toString().rstrip('/')}/{STAGING_DIR}/{run_id}/{output_index}"
    # In the ledger before anything exists on disk: a crash from here on leaves nothing that the
    # next init does not know about and clean up.
    run.stage_output(FileOutput(target=root.toString(), staging=staging, format=fmt,
                                ctx=transformation_ctx, partition_by=tuple(parts)))
    try:
        made = fs.mkdirs(fs.path(staging))
    except Exception as e:  # noqa: BLE001 - permission denied and friends come from the JVM
        raise SinkError(f"cannot write to target {mask_url(target)}: "
                        f"{storage_error_text(e, target)}; check that the directory is "
                        "writable") from None
    if not made:
        raise SinkError(f"cannot write to target {target}: could not create a directory there "
                        "(permission denied?); check that the directory is writable")

    def action(d: "DataFrame") -> None:
        w = d.write.format(fmt).mode("overwrite").options(**(options or {}))
        if parts:
            w = w.partitionBy(*parts)
        w.save(staging)

    try:
        n = count_while(stamped, action)
    except Exception as e:  # noqa: BLE001
        try:  # best effort: with the store unreachable the next run discards the staging
            fs.delete(fs.path(staging))
        except Exception:  # noqa: BLE001, S110 - the write's error is the one to report
            pass
        raise SinkError(f"writing to {mask_url(target)} failed: {storage_error_text(e, target)}"
                        "; nothing was committed: the next run writes the same input") from None
    if n == 0:  # no rows: no file either (Spark writes a schema-only one, which a plain reader
        fs.delete(fs.path(staging))  # could sample as the target's schema); publish moves none
    run.add_written(n)
    return n


def _input_hint(run: RunContext, df: "DataFrame") -> str:
    """Where a clashing write's data came from, and the way out when one file brought the
    change (the ``bookmark set`` command): the input files of ``df`` (the first 3)."""
    try:
        files = sorted(df.inputFiles())
    except Exception:  # noqa: BLE001 - not a file-backed DataFrame
        return ""
    if not files:
        return ""
    reads = getattr(run, "reads", None)
    ctxs = [c for c, r in (reads or {}).items() if "listed" in r]
    hint = skip_hint(run.job_name, ctxs[0] if len(ctxs) == 1 else None, ["PATH"])
    return (f". This run's data came from {len(files)} file(s): {name_paths(files, 3)}; if one "
            f"of them brought the change, {hint} (or read json/csv with schemaEvolution, see "
            "docs/files.md)")


def check_schema(spark: "SparkSession", fs: "HadoopFS | ArrowFS", target: str, fmt: str,
                 df: "DataFrame") -> None:
    """Refuse a write whose columns clash with the data already published (parquet/orc)."""
    if fmt not in ("parquet", "orc") or not fs.files(fs.root):
        return
    try:
        existing = spark.read.format(fmt).load(target).schema
    except Exception:  # noqa: BLE001 - an unreadable target shows up at write time
        return
    wanted = {c.lower() for c in df.columns}
    have = {f.name.lower(): f.dataType for f in existing.fields if f.name.lower() in wanted}
    clashes = [f"{f.name}: target has {have[f.name.lower()].simpleString()}, "
               f"new data has {f.dataType.simpleString()}"
               for f in df.schema.fields
               if f.name.lower() in have
               and _without_nulls(have[f.name.lower()]) != _without_nulls(f.dataType)]
    if clashes:
        raise SinkError(f"target {target} has an incompatible schema ({'; '.join(clashes)}); "
                        "cast the columns to the target's types or write to a new target")


def _without_nulls(t: Any) -> Any:
    """``t`` with every nullability flag set to True: parquet and orc do not keep them (a
    ``collect_list`` column reads back with ``containsNull``), so types compare without them."""
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType
    if isinstance(t, ArrayType):
        return ArrayType(_without_nulls(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(_without_nulls(t.keyType), _without_nulls(t.valueType), True)
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _without_nulls(f.dataType), True)
                           for f in t.fields])
    return t


# ---------------------------------------------------------------------- publish / discard / remove
@contextmanager
def _storage_errors(doing: str, target: str, then: str) -> Iterator[None]:
    """py4j/Hadoop errors inside (an endpoint gone, a refusal) as one :class:`SinkError`:
    ``<doing> <target> failed: <what the store said, or advice>; <then>``."""
    try:
        yield
    except SinkError:
        raise
    except Exception as e:  # noqa: BLE001
        raise SinkError(f"{doing} {mask_url(target)} failed: {storage_error_text(e, target)}; "
                        f"{then}") from None


def publish_files(spark: "SparkSession", run_id: str, out: FileOutput,
                  settled: "Callable[[list[str]], set[str]] | None" = None) -> None:
    """Rename a committed run's staged files into the target (idempotent); a storage error is
    one :class:`SinkError` saying the next run retries.

    ``settled(run_ids)``: which of the other runs still staged under the target the ledger has
    already discarded; their folders are swept (a run stalled past its lease can go on
    writing after a takeover discarded its staging, then die before its commit, which the
    lease check would refuse: nothing else would ever remove those files).
    """
    with _storage_errors(f"publishing run {run_id} to", out.target,
                         "the run is committed and its publish is retried by the next run of "
                         "the job"):
        _publish_files(spark, run_id, out, settled)


def _publish_files(spark: "SparkSession", run_id: str, out: FileOutput,
                   settled: "Callable[[list[str]], set[str]] | None" = None) -> None:
    prefix = published_prefix(run_id)
    fs = target_fs(spark, out.target)
    staging = fs.qualify(out.staging)
    staging_str = staging.toString().rstrip("/")
    for f in fs.files(staging):
        rel = f[len(staging_str) + 1:] if f.startswith(staging_str) else f.rsplit("/", 1)[-1]
        rel_dir, _, name = rel.rpartition("/")
        dest_dir = out.target.rstrip("/") + ("/" + rel_dir if rel_dir else "")
        dest = fs.path(f"{dest_dir}/{prefix}{name}")
        if fs.exists(dest):
            continue
        fs.mkdirs(fs.path(dest_dir))
        if not fs.rename(fs.path(f), dest):
            raise SinkError(f"could not move {f} to {dest.toString()} while publishing run "
                            f"{run_id}; the next run of the job retries")
    fs.delete(fs.path(out.staging).getParent())  # the run's staging directory
    others = _remove_empty_staging_root(fs, out.target)
    if others and settled is not None:
        _sweep_settled(fs, out.target, others, settled)


def _sweep_settled(fs: "HadoopFS | ArrowFS", target: str, names: list[str],
                   settled: "Callable[[list[str]], set[str]]") -> None:
    """Best effort: delete the staging folders (of ``names``) of runs the ledger settled."""
    try:
        gone = settled(sorted(names))
        for name in sorted(gone):
            fs.delete(fs.path(f"{target.rstrip('/')}/{STAGING_DIR}/{name}"))
        if gone:
            _remove_empty_staging_root(fs, target)
    except Exception:  # noqa: BLE001, S110 - the next publish to this target sweeps again
        pass


def discard_files(spark: "SparkSession", out: FileOutput) -> None:
    """Remove the staged files of a run that did not commit; a storage error is one
    :class:`SinkError` (the staged files are removed by a later run's recovery)."""
    with _storage_errors("removing the staged files of a failed run from", out.target,
                         "a later run of the job removes them"):
        _discard_files(spark, out)


def _discard_files(spark: "SparkSession", out: FileOutput) -> None:
    fs = target_fs(spark, out.target)
    fs.delete(fs.path(out.staging))
    parent = fs.path(out.staging).getParent()
    if fs.exists(parent) and not fs.children(parent):
        fs.delete(parent)
    _remove_empty_staging_root(fs, out.target)


def remove_published_files(spark: "SparkSession", run_id: str, out: FileOutput,
                           dry_run: bool = False) -> list[str]:
    """Delete run ``run_id``'s published files (``sm-<run_id>-*``) from the target."""
    prefix = published_prefix(run_id)
    fs = target_fs(spark, out.target)
    removed = []
    for f in target_files(fs):
        if f.rsplit("/", 1)[-1].startswith(prefix):
            removed.append(f)
            if not dry_run:
                fs.delete(fs.path(f))
    return removed


def target_files(fs: "HadoopFS | ArrowFS") -> list[str]:
    """Every data file below the target ``fs.root`` (see ``fs.files``), except that on a local
    disk symbolic links are never followed: a link loop cannot hang a removal and a link cannot
    lead it out of the target.

        target_files(file_system(spark, "/data/out"))   # ["file:/data/out/sm-...parquet"]
    """
    root = str(fs.qualify(str(fs.root.toString())).toString())
    if not root.startswith("file:"):
        return fs.files(fs.root)
    local = root[len("file://"):] if root.startswith("file://") else root[len("file:"):]
    out: list[str] = []
    for folder, dirs, names in os.walk(local, followlinks=False):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in names:
            full = os.path.join(folder, name)
            if name.startswith((".", "_")) or os.path.islink(full):
                continue
            out.append("file:" + full)
    return out


def _remove_empty_staging_root(fs: "HadoopFS | ArrowFS", target: str) -> list[str]:
    """Delete the target's staging root if it is empty; else return what is in it (the run
    ids of other staged output)."""
    root = fs.path(f"{target.rstrip('/')}/{STAGING_DIR}")
    try:
        if not fs.exists(root):
            return []
        names = fs.children(root)
        if not names:
            fs.delete(root)
        return names
    except Exception:  # noqa: BLE001 - a concurrent writer may have just created a run dir
        return []
