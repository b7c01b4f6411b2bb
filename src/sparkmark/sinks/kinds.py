"""One protocol for what every kind of staged output must do after the write: each kind of
:data:`~sparkmark.core.run.StagedOutput` (``files``, ``jdbc``, ``iceberg``, ``delta``) has an
:class:`OutputKind` that publishes, discards and removes it, and says whether its removal can
be finished now.  :mod:`sparkmark.sinks.publish` dispatches on ``out.kind`` through
:func:`kind_of`; a new target is one more entry in :data:`KINDS`, not one more branch there.

    kind_of(out).publish(spark, run_id, out, None)                 # after the state commit
    kind_of(out).remove(spark, run_id, out, None, dry_run=True)    # what a rollback removes
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from sparkmark.core.run import DeltaOutput, FileOutput, JdbcOutput, StagedOutput, TableOutput
from sparkmark.sinks.delta import discard_delta, publish_delta, remove_delta_run
from sparkmark.sinks.files import discard_files, publish_files, remove_published_files
from sparkmark.sinks.jdbc import discard_jdbc, publish_jdbc, remove_jdbc_run
from sparkmark.sinks.table import discard_table, publish_table
from sparkmark.sinks.table_rollback import remove_table_run

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

class OutputKind(Protocol):
    """What a kind of staged output does once the run has decided (every step idempotent: a
    crash at any point is repaired by doing the step again).

    ``credentials`` are those given for the output's target (JDBC only; ``None`` otherwise).
    Example: ``if not kind_of(out).publish(spark, run_id, out, None): ...  # retried later``
    """

    kind: str

    def publish(self, spark: "SparkSession", run_id: str, out: Any,
                credentials: Mapping[str, Any] | None,
                settled: Callable[[list[str]], set[str]] | None = None) -> bool:
        """Make a committed run's output visible; False: it must wait (retried later).
        ``settled(run_ids)``: which runs the ledger has discarded (a kind may sweep what
        they left)."""
        ...

    def discard(self, spark: "SparkSession", out: Any, credentials: Mapping[str, Any] | None,
                run_id: str | None) -> bool:
        """Remove what a run that did not commit left; False: it must wait."""
        ...

    def remove(self, spark: "SparkSession | None", run_id: str, out: Any,
               credentials: Mapping[str, Any] | None, dry_run: bool) -> list[str]:
        """Rollback: remove a published run's output; returns what was (would be) removed.
        ``spark`` is ``None`` only with ``dry_run`` (then described where it cannot be
        listed without a session)."""
        ...

    def reachable(self, out: Any, credentials: Mapping[str, Any] | None) -> bool:
        """Whether an interrupted removal of ``out`` can be finished now."""
        ...


class FilesKind:
    """File targets (:mod:`sparkmark.sinks.files`): publish by rename, remove by file name.

    Example: ``FilesKind().remove(None, run_id, out, None, dry_run=True)  # pyarrow lists``
    """

    kind = "files"

    def publish(self, spark: "SparkSession", run_id: str, out: FileOutput,
                credentials: Mapping[str, Any] | None,
                settled: Callable[[list[str]], set[str]] | None = None) -> bool:
        publish_files(spark, run_id, out, settled)
        return True

    def discard(self, spark: "SparkSession", out: FileOutput,
                credentials: Mapping[str, Any] | None, run_id: str | None) -> bool:
        discard_files(spark, out)
        return True

    def remove(self, spark: "SparkSession | None", run_id: str, out: FileOutput,
               credentials: Mapping[str, Any] | None, dry_run: bool) -> list[str]:
        return remove_published_files(spark, run_id, out,  # type: ignore[arg-type]
                                      dry_run=dry_run)

    def reachable(self, out: FileOutput, credentials: Mapping[str, Any] | None) -> bool:
        return True


class JdbcKind:
    """Database tables (:mod:`sparkmark.sinks.jdbc`): they need the table's credentials.

    Example: ``JdbcKind().reachable(out, {"url": "jdbc:postgresql://db/shop"})  # True``
    """

    kind = "jdbc"

    def publish(self, spark: "SparkSession", run_id: str, out: JdbcOutput,
                credentials: Mapping[str, Any] | None,
                settled: Callable[[list[str]], set[str]] | None = None) -> bool:
        return publish_jdbc(spark, run_id, out, credentials)

    def discard(self, spark: "SparkSession", out: JdbcOutput,
                credentials: Mapping[str, Any] | None, run_id: str | None) -> bool:
        return discard_jdbc(spark, out, credentials, run_id)

    def remove(self, spark: "SparkSession | None", run_id: str, out: JdbcOutput,
               credentials: Mapping[str, Any] | None, dry_run: bool) -> list[str]:
        if dry_run and spark is None and not (out.url or "").lower().startswith(
                ("jdbc:postgresql:", "jdbc:mysql:", "jdbc:mariadb:")):
            return [f"{out.target}: the rows of run {run_id} (sm_run_id = {run_id}; counted "
                    "when the reset runs, through the JDBC driver)"]
        return remove_jdbc_run(spark, run_id, out, credentials, dry_run=dry_run)

    def reachable(self, out: JdbcOutput, credentials: Mapping[str, Any] | None) -> bool:
        return bool(credentials)


class IcebergKind:
    """Apache Iceberg tables (:mod:`sparkmark.sinks.table`): cherry-pick a staged snapshot.

    Example: ``IcebergKind().publish(spark, run_id, out, None)  # True``
    """

    kind = "iceberg"

    def publish(self, spark: "SparkSession", run_id: str, out: TableOutput,
                credentials: Mapping[str, Any] | None,
                settled: Callable[[list[str]], set[str]] | None = None) -> bool:
        publish_table(spark, run_id, out)
        return True

    def discard(self, spark: "SparkSession", out: TableOutput,
                credentials: Mapping[str, Any] | None, run_id: str | None) -> bool:
        return discard_table(spark, out)

    def remove(self, spark: "SparkSession | None", run_id: str, out: TableOutput,
               credentials: Mapping[str, Any] | None, dry_run: bool) -> list[str]:
        if spark is None:
            return [f"{out.target}: the data files run {run_id} added (listed when the reset "
                    "runs, with a Spark session that knows the table's catalog)"]
        return remove_table_run(spark, run_id, out, dry_run=dry_run)

    def reachable(self, out: TableOutput, credentials: Mapping[str, Any] | None) -> bool:
        return True


class DeltaKind:
    """Delta Lake tables (:mod:`sparkmark.sinks.delta`): committed during the run, so the
    publish has nothing to move; a run that did not commit has its rows removed.

    Example: ``DeltaKind().discard(spark, out, None, run_id)  # True``
    """

    kind = "delta"

    def publish(self, spark: "SparkSession", run_id: str, out: DeltaOutput,
                credentials: Mapping[str, Any] | None,
                settled: Callable[[list[str]], set[str]] | None = None) -> bool:
        return publish_delta(spark, run_id, out)

    def discard(self, spark: "SparkSession", out: DeltaOutput,
                credentials: Mapping[str, Any] | None, run_id: str | None) -> bool:
        return discard_delta(spark, out, run_id)

    def remove(self, spark: "SparkSession | None", run_id: str, out: DeltaOutput,
               credentials: Mapping[str, Any] | None, dry_run: bool) -> list[str]:
        if spark is None:
            return [f"{out.target}: the rows run {run_id} appended (Delta version "
                    f"{out.version}; counted when the reset runs, with a Spark session that "
                    "has Delta)"]
        return remove_delta_run(spark, run_id, out, dry_run=dry_run)

    def reachable(self, out: DeltaOutput, credentials: Mapping[str, Any] | None) -> bool:
        return True


#: every kind of staged output, by its ``kind``
KINDS: dict[str, OutputKind] = {k.kind: k for k in (FilesKind(), JdbcKind(), IcebergKind(),
                                                    DeltaKind())}


def kind_of(out: StagedOutput) -> OutputKind:
    """The :class:`OutputKind` of a staged output (by ``out.kind``).

    Example: ``kind_of(FileOutput("file:/out", "file:/out/_sparkmark_staging/R/0",
    "parquet")).kind == "files"``
    """
    try:
        return KINDS[out.kind]
    except KeyError:
        raise ValueError(f"unknown staged output kind {out.kind!r}") from None
