"""The no-copy publish of S3 file targets (``options={"publish": "uploads"}``): each output
byte is written once, as a multipart upload that is completed only after the state commit.

Spark writes the run's files below ``<target>/__magic/<run>/<n>/__base/`` with sparkmark's
do-nothing output committer (``SparkmarkUploadCommitter``, in ``sparkmark-committer.jar``).
Hadoop's S3A connector turns a file created under a ``__magic`` path element into a multipart
upload to the path without the magic elements (the elements after ``__base`` are kept), left
*uncompleted*, plus a small JSON ``<name>.pending`` file describing it.  So after the write:

* the final objects ``<target>/<partition dirs>/part-...-<spark job>-c000...`` do not exist
  yet: a plain reader sees nothing of the run (``__magic`` is skipped as a ``_`` path);
* after the state commit, the publish completes every upload the ``.pending`` files describe
  (S3A's ``CommitOperations``: the JVM's own settings and credentials), aborts any other upload
  of this write, and deletes the run's ``__magic`` folder;
* a run that does not commit has its uploads aborted and its folder deleted.

Every step is idempotent: an upload completed before a crash is recognised by its object (same
key and length) when the publish is done again.  The ledger keeps the staging folder and, once
the write is over, the Spark job id the file names carry (``spark_job``), by which a rollback
finds the run's objects.

    opts = writer_options()        # the committer, for every file format
    check_uploads(spark, fs, root) # one ConfigError when something needed is missing
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from sparkmark.core.errors import ConfigError, SinkError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sparkmark.core.run import FileOutput
    from sparkmark.engine.fs import ArrowFS, HadoopFS

#: the ways a file target publishes: rename (a server-side copy on S3) or completing uploads
PUBLISH_MODES = ("copy", "uploads")
#: the output committer class (default package) and the jar that holds it
COMMITTER_CLASS = "SparkmarkUploadCommitter"
COMMITTER_JAR = Path(__file__).resolve().parent.parent / "engine" / "java" / \
    "sparkmark-committer.jar"
#: the folder below the target where S3A's magic paths live (a ``_`` path: readers skip it)
MAGIC_DIR = "__magic"
#: the magic element of Hadoop 3.4 and later (one per job: ``__magic_job-<run>``)
MAGIC_JOB_PREFIX = "__magic_job-"
PENDING_SUFFIX = ".pending"
_SPARK_JOB = re.compile(
    r"-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?=[.-])")


def committer_jar() -> str:
    """The path of ``sparkmark-committer.jar``, for ``spark.jars`` (the option needs it on
    Spark's class path from the session's start, as ``hadoop-aws``).

    Example: ``SparkSession.builder.config("spark.jars", f"{aws_jars},{committer_jar()}")``
    """
    return str(COMMITTER_JAR)


def publish_mode(options: dict[str, Any]) -> str:
    """Take sparkmark's ``publish`` option out of a target's writer ``options`` (they go to
    Spark otherwise); ``copy`` when absent.

    Example: ``publish_mode({"publish": "uploads", "compression": "zstd"}) == "uploads"``
    """
    mode = str(options.pop("publish", "copy") or "copy").strip().lower()
    if mode not in PUBLISH_MODES:
        raise ConfigError(f"option publish={mode!r} is not known; use 'copy' (the default: "
                          "stage, then rename) or 'uploads' (S3 only: multipart uploads "
                          "completed after the state commit)")
    return mode


def writer_options() -> dict[str, str]:
    """Writer options that make Spark's SQL commit protocol use the do-nothing committer
    (parquet reads its own key; the other formats the generic one)."""
    return {"spark.sql.sources.outputCommitterClass": COMMITTER_CLASS,
            "spark.sql.parquet.output.committer.class": COMMITTER_CLASS}


def upload_staging(spark: "SparkSession", root: str, run_id: str, index: int) -> str:
    """The run's magic folder for its ``index``-th output (Spark writes to ``.../__base``):
    ``<root>/__magic_job-<run>/<n>`` where S3A knows that element (Hadoop 3.4 and later),
    ``<root>/__magic/<run>/<n>`` where it knows ``__magic`` only (Hadoop 3.3)."""
    from sparkmark.engine.jvm import java_class
    newer = f"{root.rstrip('/')}/{MAGIC_JOB_PREFIX}{run_id}/{index}"
    paths = java_class(spark, "org.apache.hadoop.fs.s3a.commit.MagicCommitPaths")
    probe = java_class(spark, "org.apache.hadoop.fs.Path")(f"{newer}/__base/probe")
    if paths.isMagicPath(paths.splitPathToElements(probe)):
        return newer
    return f"{root.rstrip('/')}/{MAGIC_DIR}/{run_id}/{index}"


def check_uploads(spark: "SparkSession", fs: "HadoopFS | ArrowFS", target: str) -> None:
    """One :class:`ConfigError` (nothing changed) when ``publish="uploads"`` cannot work here:
    not a classic session, not an ``s3a://`` target, the committer jar or S3A's commit classes
    not on Spark's class path, magic paths turned off, another commit protocol set."""
    from sparkmark.engine.jvm import is_classic
    why = None
    if not is_classic(spark):
        why = "it needs a classic Spark session (the driver's JVM completes the uploads)"
    elif not str(fs.root.toString()).startswith("s3a://"):
        why = f"the target {target} is not an s3a:// path (other stores publish by rename)"
    if why is None:
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        if conf.getClassByNameOrNull(COMMITTER_CLASS) is None:
            why = (f"{COMMITTER_CLASS} is not on Spark's class path: add sparkmark's "
                   f"committer jar to spark.jars ({committer_jar()}, "
                   "sparkmark.sinks.uploads.committer_jar())")
        elif all(conf.getClassByNameOrNull(c) is None for c in _OPS_CLASSES):
            why = ("hadoop-aws has no S3A commit operations "
                   f"({' or '.join(_OPS_CLASSES)}); use hadoop-aws 3.3 or later")
        elif not fs.fs.hasPathCapability(fs.root, "fs.s3a.capability.magic.committer"):
            why = ("the S3A connector has magic paths turned off for this bucket: set "
                   "fs.s3a.committer.magic.enabled=true (spark.hadoop.fs.s3a...)")
    if why is None:
        protocol = spark.conf.get("spark.sql.sources.commitProtocolClass", None) or ""
        if protocol and not protocol.endswith("SQLHadoopMapReduceCommitProtocol"):
            why = (f"spark.sql.sources.commitProtocolClass is {protocol}; the option works "
                   "with Spark's default SQLHadoopMapReduceCommitProtocol only")
    if why is not None:
        raise ConfigError(f"option publish='uploads' cannot be used: {why}; nothing was "
                          "written or committed (or leave the option out: publish by copy)")


#: S3A's commit operations: Hadoop 3.4 and later, then Hadoop 3.3
_OPS_CLASSES = ("org.apache.hadoop.fs.s3a.commit.impl.CommitOperations",
                "org.apache.hadoop.fs.s3a.commit.CommitOperations")


class _Ops:
    """S3A's commit operations for one file system, whichever Hadoop line is loaded."""

    def __init__(self, spark: "SparkSession", fs: "HadoopFS"):
        from sparkmark.engine.jvm import java_class, java_static
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.fs = fs
        if conf.getClassByNameOrNull(_OPS_CLASSES[0]) is not None:
            self.ops = java_class(spark, _OPS_CLASSES[0])(fs.fs)
            self._commit: Callable[[Any], None] = self.ops.commitOrFail
            self._ctx = None
        else:  # Hadoop 3.3: commits go through a commit context
            self.ops = java_class(spark, _OPS_CLASSES[1])(fs.fs)
            self._ctx = self.ops.initiateCommitOperation(fs.root)
            self._commit = self._ctx.commitOrFail
        self._serializer = java_static(
            spark, "org.apache.hadoop.fs.s3a.commit.files.SinglePendingCommit", "serializer")()

    def load(self, pending: str) -> Any:
        return self._serializer.load(self.fs.fs, self.fs.path(pending))

    def commit(self, commit: Any) -> None:
        self._commit(commit)

    def abort(self, key: str, upload_id: str) -> None:
        """Abort one upload; one that is gone already (aborted, completed) is no error."""
        try:
            (self.ops if self._ctx is None else self._ctx).abortMultipartCommit(key, upload_id)
        except Exception as e:  # noqa: BLE001 - NoSuchUpload: done before
            if "NoSuchUpload" not in str(e) and "404" not in str(e):
                raise

    def uploads_under(self, path: str) -> list[tuple[str, str]]:
        """``(key, upload id)`` of the pending uploads below the folder ``path``."""
        out = []
        for u in self.ops.listPendingUploadsUnderPath(self.fs.path(path)):
            if self._ctx is None:  # Hadoop 3.4+: AWS SDK v2
                out.append((str(u.key()), str(u.uploadId())))
            else:
                out.append((str(u.getKey()), str(u.getUploadId())))
        return out

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.close()


def pending_files(fs: "HadoopFS", staging: str) -> list[str]:
    """The ``.pending`` files below a run's magic folder (hidden names included)."""
    p = fs.path(staging)
    if not fs.exists(p):
        return []
    out: list[str] = []
    it = fs.fs.listFiles(p, True)
    while it.hasNext():
        name = str(it.next().getPath().toString())
        if name.endswith(PENDING_SUFFIX):
            out.append(name)
    return sorted(out)


def spark_jobs(names: list[str]) -> list[str]:
    """The Spark job ids file names carry (``part-00000-<uuid>-c000...``), once each (pure).

    Example: ``spark_jobs(["s3a://b/t/__magic/R/0/__base/part-00000-"
    "ba90328e-6d9c-4459-80f6-0384e87566e9.c000.snappy.parquet.pending"])``
    """
    found: list[str] = []
    for n in names:
        m = _SPARK_JOB.search(n.rsplit("/", 1)[-1])
        if m and m.group(1) not in found:
            found.append(m.group(1))
    return found


def _store_root(fs: "HadoopFS") -> str:
    return str(fs.fs.getUri().toString()).rstrip("/")


def _hadoop_fs(spark: "SparkSession", target: str) -> "HadoopFS":
    from sparkmark.engine.fs import HadoopFS
    from sparkmark.sinks.target_fs import target_fs
    fs = target_fs(spark, target)
    if not isinstance(fs, HadoopFS):
        raise SinkError(f"the uploads of {target} need a classic Spark session (the driver's "
                        "JVM completes or aborts them); run the job, or `sparkmark` commands, "
                        "with one")
    return fs


def _same_object(fs: "HadoopFS", dest: str, length: int) -> bool:
    st = fs.status_of(fs.path(dest))
    return bool(st) and not st[0][1] and int(st[0][2]) == int(length)


def _abort_job_uploads(ops: _Ops, target: str, jobs: list[str]) -> None:
    """Abort the pending uploads below ``target`` whose names carry one of ``jobs`` (a task
    attempt that was retried leaves one whose ``.pending`` the retry replaced)."""
    if not jobs:
        return
    for key, upload_id in ops.uploads_under(target.rstrip("/")):
        if any(f"-{j}" in key.rsplit("/", 1)[-1] for j in jobs):
            ops.abort(key, upload_id)


def _remove_staging(fs: "HadoopFS", out: "FileOutput") -> None:
    """Delete the run's magic folder, then the ``__magic`` root (Hadoop 3.3) when nothing else
    is in it."""
    run_dir = fs.path(out.staging).getParent()
    fs.delete(run_dir)
    root = run_dir.getParent()
    try:
        if str(root.getName()) == MAGIC_DIR and fs.exists(root) and not fs.children(root):
            fs.delete(root)
    except Exception:  # noqa: BLE001, S110 - a concurrent writer may have just made a run dir
        pass


def after_write(spark: "SparkSession", out: "FileOutput") -> "FileOutput":
    """The output record once Spark's write is over: with the Spark job id its file names
    carry (how a rollback finds them).  Example: ``run.stage_output(after_write(spark, out))``
    """
    from dataclasses import replace
    fs = _hadoop_fs(spark, out.target)
    jobs = spark_jobs(pending_files(fs, out.staging))
    return replace(out, spark_job=",".join(jobs) or None)


def publish_uploads(spark: "SparkSession", run_id: str, out: "FileOutput") -> None:
    """Complete a committed run's uploads (idempotent), abort any other upload of its write,
    delete its magic folder."""
    fs = _hadoop_fs(spark, out.target)
    pendings = pending_files(fs, out.staging)
    ops = _Ops(spark, fs)
    try:
        store = _store_root(fs)
        for pending in pendings:
            commit = ops.load(pending)
            dest = f"{store}/{commit.getDestinationKey()}"
            try:
                ops.commit(commit)
            except Exception:
                # completed before a crash: the upload is gone and its object is there
                if not _same_object(fs, dest, commit.getLength()):
                    raise
        jobs = spark_jobs(pendings) + [j for j in (out.spark_job or "").split(",") if j]
        _abort_job_uploads(ops, out.target, sorted(set(jobs)))
    finally:
        ops.close()
    _remove_staging(fs, out)


def discard_uploads(spark: "SparkSession", out: "FileOutput") -> None:
    """Abort the uploads of a run that did not commit and delete its magic folder."""
    fs = _hadoop_fs(spark, out.target)
    pendings = pending_files(fs, out.staging)
    ops = _Ops(spark, fs)
    try:
        for pending in pendings:
            commit = ops.load(pending)
            ops.abort(str(commit.getDestinationKey()), str(commit.getUploadId()))
        jobs = spark_jobs(pendings) + [j for j in (out.spark_job or "").split(",") if j]
        _abort_job_uploads(ops, out.target, sorted(set(jobs)))
    finally:
        ops.close()
    _remove_staging(fs, out)


def remove_uploaded(spark: "SparkSession", run_id: str, out: "FileOutput",
                    dry_run: bool = False) -> list[str]:
    """Rollback: delete the objects a published no-copy run made (their names carry the
    run's Spark job id, ``out.spark_job``)."""
    jobs = [j for j in (out.spark_job or "").split(",") if j]
    if not jobs:
        return []
    fs = _hadoop_fs(spark, out.target)
    removed = []
    for f in fs.files(fs.root):
        if f"/{MAGIC_DIR}/" in f or f"/{MAGIC_JOB_PREFIX}" in f:
            continue
        name = f.rsplit("/", 1)[-1]
        if any(f"-{j}" in name for j in jobs):
            removed.append(f)
            if not dry_run:
                fs.delete(fs.path(f))
    return removed
