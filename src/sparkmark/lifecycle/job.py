"""``Job``: the lifecycle of one bookmarked run — init, read, write, commit (or fail).

    job = Job(spark)       # state: URL, env SPARKMARK_STATE, conf spark.sparkmark.state, or default
    job.init("orders", args)               # Glue-style args: dict or argv list
    df = job.read.files("data/in", format="json", transformation_ctx="src")
    job.write(df, "data/out", format="parquet", transformation_ctx="sink")
    job.commit()

or, committing on success and recording FAILED on an exception::

    with Job(spark).run("orders", args) as job:
        ...

``Job`` implements :class:`sparkmark.core.run.RunContext`, the public seam sources and sinks use:
a source asks for its bookmark (``bookmark``) and hands back the element to commit
(``record_read``); a sink records its staged output before writing it (``stage_output``) and
counts rows (``add_written``).  ``commit`` then saves every element, the new version and the
finished ledger row in one transaction, and publishes the staged output.

Why one module: ``Job`` is one state machine over one run's private fields (the lease, the
staged bookmark elements, the sources' reports, the staged outputs, the files read), and every
method here reads or moves them: init, the RunContext calls sources and sinks make, commit with
its in-doubt recovery, fail/skip.  Cutting the class would mean handing those fields to another
module (the architecture forbids reaching into another object's privates) or mixins that share
them invisibly.  What needs none of them is elsewhere: the commit's threads in
:mod:`sparkmark.lifecycle.background`, the sources and sinks themselves in their packages.
"""
from __future__ import annotations

import json
import logging
import os
import time
import traceback
import uuid
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from sparkmark.engine import compat
from sparkmark.core.clock import Clock, checked_now, system_clock
from sparkmark.core.errors import (BookmarkConflictError, ConfigError, JobStateError,
                     StateCorruptError, StateStoreError, UnknownJobError)
from sparkmark.engine.gcpause import gc_paused
from sparkmark.lifecycle.background import ConcurrentChecks, EarlyAudit
from sparkmark.engine.jvm import jdbc_read_error, quick_acks
from sparkmark.core.options import ENABLE, PAUSE, BookmarkArgs, parse_job_args
from sparkmark.core.run import FileRead, ReadMode, SourceBookmark, StagedOutput
from sparkmark.core.secrets import SecretSet
from sparkmark.sinks import publish as publish_
from sparkmark.sinks import write_delta, write_files, write_jdbc, write_table
from sparkmark.sources.files import read_files
from sparkmark.sources.delta import is_delta_table, read_delta
from sparkmark.sources.jdbc import read_jdbc
from sparkmark.sources.table import read_table
from sparkmark.state import StateStore, open_store, refuse_default_on_cluster
from sparkmark.state.heartbeat import Heartbeat
from sparkmark.state.lease import DEFAULT_LEASE_MS
from sparkmark.core.status import PublishState, RunStatus

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("sparkmark.lifecycle.job")

#: How long the per-file audit (``sparkmark files``) keeps a file read, by default (days).
DEFAULT_FILES_RETENTION_DAYS = 30


class JobReader:
    """``job.read``: bookmarked readers.  Each returns a Spark DataFrame of the new input only.

    Example::

        df = job.read.files("data/in/orders", format="json", transformation_ctx="orders_src")
    """

    def __init__(self, job: "Job"):
        self.job = job

    def files(self, path: str | Sequence[str], format: str = "json",
              transformation_ctx: str | None = None,
              options: Mapping[str, Any] | None = None) -> "DataFrame":
        """Files under ``path`` that are new since the last committed run.

        Example: ``job.read.files("in/", format="csv", transformation_ctx="src",
        options={"header": True, "maxBand": 600000})``
        """
        self.job.require_active("read")
        return read_files(self.job, path, format=format, transformation_ctx=transformation_ctx,
                          options=dict(options or {}))

    def jdbc(self, url: str, table: str, transformation_ctx: str | None = None,
             bookmark_keys: Sequence[str] | None = None, sort_order: str = "asc",
             properties: Mapping[str, Any] | None = None,
             options: Mapping[str, Any] | None = None) -> "DataFrame":
        """Rows of a database table whose bookmark key is past the last committed one.

        Example: ``job.read.jdbc(url, table="emp", transformation_ctx="emp_src",
        bookmark_keys=["empno"], properties={"user": "etl", "password": pw})``
        """
        self.job.require_active("read")
        return read_jdbc(self.job, url, table=table, transformation_ctx=transformation_ctx,
                         bookmark_keys=bookmark_keys, sort_order=sort_order,
                         properties=dict(properties or {}), options=dict(options or {}))

    def table(self, name: str, transformation_ctx: str | None = None,
              options: Mapping[str, Any] | None = None,
              format: str | None = None) -> "DataFrame":  # noqa: A002 - Spark's word
        """Rows of an Apache Iceberg or Delta Lake table appended since the last processed
        snapshot (Iceberg) or version (Delta); ``options``: ``onNonAppend`` (``fail``,
        ``skip`` or ``changes``: change rows with ``_change_type``) and the format's read
        options.  ``format``: ``"iceberg"`` or ``"delta"``; by default ``delta.`/path``` and
        catalog tables with Delta's properties are Delta, the rest Iceberg.

        Example: ``job.read.table("local.db.orders", transformation_ctx="orders_src",
        options={"onNonAppend": "skip"})``
        """
        self.job.require_active("read")
        kind = (format or "").strip().lower()
        if kind not in ("", "iceberg", "delta"):
            raise ConfigError(f"job.read.table format={format!r}: give 'iceberg' or 'delta' "
                              "(or leave it out: the table decides)")
        if kind == "delta" or (not kind and is_delta_table(self.job.spark, str(name))):
            return read_delta(self.job, name, transformation_ctx=transformation_ctx,
                              options=dict(options or {}))
        return read_table(self.job, name, transformation_ctx=transformation_ctx,
                          options=dict(options or {}))


class Job:
    """A named unit of incremental work with a bookmark and a ledger row per run.

    Example::

        job = Job(spark, state="sqlite:///state.db")
        job.init("orders", ["--job-bookmark-option", "job-bookmark-enable"])
        df = job.read.files("in/orders", format="json", transformation_ctx="src")
        job.write(df, "out/orders", transformation_ctx="sink")
        job.commit()

    It is also the :class:`~sparkmark.core.run.RunContext` its sources and sinks talk to.
    ``files_retention_days``: how long the per-file audit (``sparkmark files``,
    :meth:`Bookmarks.files`) keeps what file sources read; older rows are deleted at commit.
    """

    def __init__(self, spark: "SparkSession", state: str | StateStore | None = None,
                 clock: Clock | None = None, *, lease_ms: int | None = None,
                 files_retention_days: float = DEFAULT_FILES_RETENTION_DAYS):
        if spark is not None:
            compat.check_supported(spark)  # Spark 3.5.x or 4.x, else one clear error
            quick_acks(spark)  # py4j answers over 8 KB without a 40 ms delayed-ACK stall
        self._spark = spark
        refuse_default_on_cluster(spark, state)  # a throwaway driver's ./.sparkmark: refused
        self.store: StateStore = (state if isinstance(state, StateStore) else
                                  open_store(state, conf=compat.spark_conf_getter(spark)))
        self.clock: Clock = clock or system_clock
        self.lease_ms = lease_ms or DEFAULT_LEASE_MS
        try:
            days = float(files_retention_days)
        except (TypeError, ValueError):
            days = -1.0
        if not 0 < days < float("inf"):  # NaN and infinity fail this too
            raise ConfigError(f"files_retention_days={files_retention_days!r} is not a positive "
                              "number of days; the per-file audit keeps what runs read for "
                              f"that long (default {DEFAULT_FILES_RETENTION_DAYS})")
        #: How long the per-file audit keeps a file read (``sparkmark files``), in ms.
        self.files_retention_ms = int(days * 86_400_000)
        self.read = JobReader(self)
        #: Secret values given to this Job (state URL password, JDBC passwords): scrubbed from
        #: every error text written to the ledger.
        self.secrets = SecretSet()
        self.secrets.add_url(self.store.url)
        self._reset_run_fields()

    def _reset_run_fields(self) -> None:
        self._job_name: str | None = None
        self._run_id: str | None = None
        self.run_number: int | None = None
        self.attempt: int | None = None
        self._snapshot_ts: int | None = None
        self.args: BookmarkArgs | None = None
        self.start_version: int | None = None
        self.previous_run_id: str | None = None
        self._state: dict[str, Any] = {}
        self._from_state: dict[str, Any] | None = None
        self._to_state: dict[str, Any] | None = None
        self._staged: dict[str, Any] = {}
        self._sources: dict[str, dict[str, Any]] = {}
        self._outputs: list[StagedOutput] = []
        self._records_read: int | None = None
        self._records_written = 0
        self._config_extra: dict[str, Any] = {}
        self._active = False
        self._warned_off = False  # the bookmarks-disabled warning, once per run
        self._heartbeat: Heartbeat | None = None
        self._commit_checks: list[Callable[[], None]] = []
        self._concurrent_checks: list[Callable[[], None]] = []
        self._after_commit: list[Callable[[], None]] = []
        self._files_read: list[tuple[str | None, Sequence[FileRead]]] = []
        self._early_audits: list[EarlyAudit] = []
        # files recorded for a ctx whose record_read has not followed yet (record_files)
        self._unconfirmed: list[tuple[str | None, Sequence[FileRead] | EarlyAudit]] = []

    # ------------------------------------------------------------------ properties
    @property
    def spark(self) -> "SparkSession":
        """The Spark session the job reads and writes with."""
        return self._spark

    @property
    def job_name(self) -> str | None:
        """The name of the job of the current (or last) run."""
        return self._job_name

    @property
    def run_id(self) -> str | None:
        """The current (or last) run's id (uuid4 hex)."""
        return self._run_id

    @property
    def snapshot_ts(self) -> int | None:
        """The run's snapshot time in epoch ms (stamped on every row it writes)."""
        return self._snapshot_ts

    @property
    def bookmark_option(self) -> str | None:
        """``job-bookmark-enable``, ``-disable`` or ``-pause`` for the current run."""
        return self.args.option if self.args else None

    @property
    def listing_ts(self) -> int | None:
        """The run's listing time T (epoch ms): files with a later mtime wait for a later run."""
        return self._snapshot_ts

    @property
    def active(self) -> bool:
        """Whether a run is in progress on this object (between ``init`` and commit/fail)."""
        return self._active

    @property
    def staged_state(self) -> dict[str, Any]:
        """The bookmark elements ``commit()`` would save, by transformation_ctx.

        Empty when no bookmarked source staged state, or when the run saves none (bookmarks
        disabled or paused)::

            if not job.staged_state:
                job.commit(keep_bookmark=True, note="not committed: bookmark unchanged")
        """
        if self.args is None or self.args.option != ENABLE:
            return {}
        return dict(self._staged)

    @property
    def reads(self) -> dict[str, dict[str, Any]]:
        """What each bookmarked source read in this run, by ``transformation_ctx`` (a copy of
        what goes into the ledger config under ``sources``).

        Example: ``job.reads["orders_src"]["files"]``
        """
        return {k: dict(v) for k, v in self._sources.items()}

    # ------------------------------------------------------------------ lifecycle
    def init(self, name: str | None = None,
             args: Mapping[str, Any] | Sequence[str] | None = None, *,
             ledger: Mapping[str, Any] | None = None, config: Mapping[str, Any] | None = None,
             snapshot_ts: int | None = None) -> "Job":
        """Start a run: validate ``args``, take the job's lease and open its ledger row.

        ``ledger``: extra ledger columns (pipelines: module columns); ``config``: merged into
        the run's ledger config; ``snapshot_ts``: a shared snapshot time (pipelines).

        Example: ``job.init("orders", {"job_bookmark_option": "job-bookmark-enable"})``
        """
        if self._active:
            raise JobStateError(
                f"job {self.job_name!r} already has run {self.run_id} in progress on this Job; "
                "call commit() or use a new Job object")
        parsed = parse_job_args(args)
        name = name or parsed.job_name
        if not name or not isinstance(name, str):
            raise ConfigError("a job name is required: job.init('orders', args) or "
                              "--JOB_NAME orders in args")
        if len(name) > 255:
            raise ConfigError(f"job name is too long ({len(name)} > 255 characters)")
        if name != name.strip() or any(ord(c) < 32 or ord(c) == 127 for c in name):
            raise ConfigError(
                f"job name {name[:80]!r} has leading/trailing whitespace or a control character "
                "(e.g. NUL); give a plain name such as 'orders'")
        from_state = to_state = None
        if parsed.from_run and parsed.to_run:
            v_from, v_to = self.store.validate_runs(name, [parsed.from_run, parsed.to_run])
            if v_to.version < v_from.version:
                raise ConfigError(
                    f"--job-bookmark-to {parsed.to_run} committed before --job-bookmark-from "
                    f"{parsed.from_run}; give the earlier run as from")
            from_state, to_state = v_from.state, v_to.state
        now = checked_now(self.clock)
        snapshot = now if snapshot_ts is None else snapshot_ts
        run_id = uuid.uuid4().hex
        extra = dict(config or {})
        try:
            start = self.store.begin_run(
                name, run_id=run_id, option=parsed.option, now=now, snapshot_ts=snapshot,
                lease_ms=self.lease_ms, pid=os.getpid(),
                ledger={"config": json.dumps({"args": parsed.as_config(), **extra},
                                             default=str), **dict(ledger or {})})
        except StateStoreError as e:
            self._release_unanswered(name, run_id, e)
            raise
        self._reset_run_fields()
        self._job_name, self._run_id, self.args = name, run_id, parsed
        self.run_number, self.attempt = start.run_number, start.attempt
        self.start_version, self.previous_run_id = start.start_version, start.previous_run_id
        self._snapshot_ts = snapshot
        self._state = start.state
        self._from_state, self._to_state = from_state, to_state
        self._config_extra = extra
        self._active = True
        self._heartbeat = Heartbeat(self)  # renewed by the process's lease thread
        try:
            publish_.recover_job_outputs(self.spark, self.store, name, rows=start.to_recover)
        except BaseException as e:
            self.fail(e)
            raise
        return self

    def _release_unanswered(self, name: str, run_id: str, error: StateStoreError) -> None:
        """``begin_run`` raised: if its transaction landed all the same (the answer to its
        ``COMMIT`` was lost), this live process holds the job's lease for a run nobody runs,
        and a retry from the same process would be refused as a concurrent run until the
        lease expired.  End that run (FAILED; only a RUNNING row of this run id and a lease it
        holds change, so nothing happens when the transaction did not land); a store still out
        of reach leaves it to the lease."""
        if not self.store.answers_can_be_lost:
            return
        try:  # not while a transaction holds the job (fail_run would wait for it)
            if (self.store.run_outcome(name, run_id) or {}).get("status") == RunStatus.RUNNING:
                self.store.fail_run(name, run_id, error=f"its start was not confirmed: {error}",
                                    now=self.clock())
        except Exception as e:  # noqa: BLE001 - the error that matters is the caller's
            log.debug("ending unconfirmed run %s: %s", run_id, e)

    def commit(self, status: RunStatus | str | None = None, *, keep_bookmark: bool = False,
               note: str | None = None) -> int:
        """Save the staged state (enable), finish the ledger row, publish staged output.

        ``status``: ``SUCCEEDED`` or ``EMPTY`` to decide the run's status yourself (pipelines
        do, by their rule); by default a run whose bookmarked sources found no new input and
        that wrote nothing is ``EMPTY``.  ``keep_bookmark=True`` saves no bookmark state (the
        version does not move) but still records the run and publishes its output; ``note`` is
        kept in the ledger row's config.  Returns the bookmark version after the commit.

        Example: ``version = job.commit()``
        """
        self.require_active("commit")
        if status is not None:
            try:
                status = RunStatus(status)
            except ValueError:
                status = None
            if status not in RunStatus.progress():
                raise ConfigError("commit(status=...) takes SUCCEEDED or EMPTY; use fail() or "
                                  "skip() for the other endings")
        empty = self.new_input() is False and self._records_written == 0
        save = self.args is not None and self.args.option == ENABLE and not keep_bookmark
        if note:
            self._config_extra["note"] = str(note)
        new_state = None
        if save:
            new_state = dict(self._state)
            new_state.update(self._staged)
        checks = ConcurrentChecks()
        try:  # what changed while read fails the run; late reports (counts) land in config
            self._withdraw_unconfirmed()
            with gc_paused():  # a stat per file read: no collector passes over the listing
                for check in self._commit_checks:
                    check()
            # the checks that only verify (a stat per file read) run while the audit rows
            # written ahead are finished and the commit's transaction is written; it commits
            # only once they passed
            checks.start(self._concurrent_checks)
            for audit in self._early_audits:  # rows written ahead: all there, or the run fails
                audit.wait()
        except BaseException as e:
            checks.join()
            self.fail(e)
            raise
        fields = {
            "records_written": self._records_written, "records_read": self._records_read,
            "config": json.dumps(self._config(), default=str),
            "outputs": publish_.records(self._outputs),
            "publish_state": PublishState.PENDING if self._outputs else None}
        final = status or (RunStatus.EMPTY if empty else RunStatus.SUCCEEDED)
        name, run_id, start_version = self.run_identity()
        try:
            with gc_paused():  # an audit row per file read (1.6 -> 0.8 s at 1,000,000)
                version = self.store.commit_run(
                    name, run_id, start_version=start_version,
                    new_state=new_state, status=final, now=self.clock(), fields=fields,
                    files_read=self._files_read, files_keep_ms=self.files_retention_ms,
                    before_commit=checks.wait)
        except BaseException as e:
            checks.join()
            if checks.error is not None and e is checks.error:  # nothing was committed
                self.fail(e)
                raise
            landed = self._commit_outcome(e, run_id)
            if landed is None:
                raise
            version = landed
        self._stop()
        # The run is committed: from here on its output must appear (roll forward on crash).
        publish_.publish_outputs(self.spark, self.store, run_id, self._outputs)
        for action in self._after_commit:  # e.g. delete the event messages the run settled
            try:
                action()
            except Exception as e:  # noqa: BLE001 - the run committed; the action is redone
                log.warning("sparkmark: run %s committed, but an after-commit step failed (%s); "
                            "the next run repeats it", run_id, _error_text(e))
        return version

    def _commit_outcome(self, error: BaseException, run_id: str) -> int | None:
        """The state store transaction of :meth:`commit` raised ``error``: did it land?

        A connection lost while the database carried out the ``COMMIT`` (a network fault, the
        server stopping) leaves that unknown to this process, and removing the run's staged
        output then would lose the output of a run the ledger calls SUCCEEDED.  So the run's
        row is read again, under the job row's lock (:meth:`StateStore.run_outcome
        <sparkmark.state.StateStore.run_outcome>`: a COMMIT still in flight holds it):
        committed (the answer was lost) -> the bookmark version, and the
        caller publishes as usual; still RUNNING -> nothing was committed: the run fails as
        any other (``None``); unreadable -> the run is recorded FAILED if the store allows
        (only a RUNNING row changes), its staged output is *kept*, and the error says so:
        the next run of the job publishes it (the commit landed) or removes it (it did not).
        Refusals raised inside the transaction (the lease was taken over, the bookmark moved,
        the store is another one) committed nothing and fail the run at once, as does any
        error on SQLite (a local call: it committed or it raised); an interrupt
        (Ctrl-C) keeps the staged output for the next run without asking the store.
        """
        if isinstance(error, (BookmarkConflictError, UnknownJobError, StateCorruptError,
                              ValueError)) or not self.store.answers_can_be_lost:
            self.fail(error)
            return None
        if not isinstance(error, Exception):  # Ctrl-C, SystemExit: stop; the next run decides
            self._end(RunStatus.FAILED, _error_text(error), keep_staged=True, quiet=True)
            return None
        locked = False
        try:
            row = None
            for wait in (0.0, 0.2, 0.5, 1.0):  # the job row stays locked until the COMMIT ends
                time.sleep(wait)
                row = self.store.run_outcome(self.run_identity()[0], run_id)
                if row is not None:
                    break
            if row is None:
                locked = True
                raise StateStoreError("the job's row stayed locked by another transaction")
        except Exception as e:  # noqa: BLE001 - the store is still out of reach
            log.warning("commit of run %s: %s; its outcome is unknown (%s)", run_id,
                        _error_text(error), _error_text(e))
            # recording it FAILED would wait for that lock: the lease ends the run instead
            self._end(RunStatus.FAILED, _error_text(error), keep_staged=True, quiet=True,
                      record=not locked)
            raise StateStoreError(
                f"{str(error).rstrip('.')}. Whether run {run_id} committed is unknown (the state "
                "store could not be read again), so its staged output is kept: the next run "
                "of the job publishes it if the commit landed and removes it if not; the "
                "bookmark and the ledger say which.") from None
        if row.get("status") in RunStatus.progress():
            log.warning("commit of run %s: %s; the commit had landed (the ledger says %s), "
                        "publishing its output", run_id, _error_text(error), row["status"])
            return int(row.get("end_version") or self.start_version or 0)
        self.fail(error)
        return None

    def fail(self, error: BaseException | str) -> None:
        """Record the run FAILED with the error text; remove its staged output; keep the state.

        Example::

            try:
                ...
            except Exception as e:
                job.fail(e)
                raise
        """
        self._end(RunStatus.FAILED, error if isinstance(error, str) else _error_text(error))

    def skip(self, reason: str) -> None:
        """End the run ``SKIPPED`` (it did not run because a dependency failed), with ``reason``.

        Like a failure it changes no bookmark and removes staged output, but it does not count
        as a failed attempt.  Example: ``job.skip("dependency 1004 failed")``
        """
        self._end(RunStatus.SKIPPED, reason)

    def _end(self, status: RunStatus, text: str, *, keep_staged: bool = False,
             quiet: bool = False, record: bool = True) -> None:
        """Record the run ``status`` (FAILED, SKIPPED) and remove its staged output, unless
        ``keep_staged`` (a commit whose outcome is unknown).  ``quiet``: a store that cannot
        record it is logged, not raised (the caller raises the error that matters);
        ``record=False``: not recorded at all (its lease then ends the run)."""
        if not self._active:
            return
        text = self.secrets.scrub(text)
        name, run_id, _ = self.run_identity()
        for audit in self._early_audits:  # before fail_run deletes what they wrote
            audit.cancel()
        try:
            if not keep_staged:
                publish_.discard_outputs(self.spark, self._outputs)
        finally:
            try:
                if record:
                    self.store.fail_run(
                        name, run_id, error=text, now=self.clock(), status=status,
                        fields={"records_written": self._records_written,
                                "config": json.dumps(self._config(), default=str)})
            except Exception as e:  # noqa: BLE001 - see quiet
                if not quiet:
                    raise
                log.warning("could not record run %s %s: %s", run_id, status.value,
                            _error_text(e))
            finally:
                self._stop()

    @contextmanager
    def run(self, name: str | None = None,
            args: Mapping[str, Any] | Sequence[str] | None = None) -> Iterator["Job"]:
        """Context manager: commit on success, record FAILED (and re-raise) on an exception.

        Example::

            with Job(spark).run("orders", args) as job:
                job.write(job.read.files("in", transformation_ctx="src"), "out",
                          transformation_ctx="sink")
        """
        self.init(name, args)
        try:
            yield self
        except BaseException as e:
            source_error = jdbc_read_error(e, self._jdbc_tables()) if self._active else None
            if source_error is not None:  # a bookmarked JDBC read failed in the user's action
                self.fail(source_error)
                raise source_error from None
            self.fail(e)
            raise
        if self._active:
            self.commit()

    def write(self, df: "DataFrame", target: str, format: str = "parquet",
              transformation_ctx: str | None = None, partition_by: Sequence[str] | None = None,
              mode: str = "append", options: Mapping[str, Any] | None = None,
              stamp: bool = True) -> int:
        """Write ``df`` to ``target`` exactly once; returns the rows written.

        ``stamp=False`` leaves out the ``sm_run_id``/``sm_snapshot_ts`` columns (the files are
        still named ``sm-<run_id>-...``, which is what publish and rollback go by).

        ``format="iceberg"`` with a table name (no ``/``) appends to an Apache Iceberg table
        by write-audit-publish (:mod:`sparkmark.sinks.table`).  ``format="delta"`` with a
        path or a table name appends to a Delta Lake table in one commit stamped with the
        run (:mod:`sparkmark.sinks.delta`).

        Example: ``job.write(df, "out/orders", format="parquet", transformation_ctx="sink",
        partition_by=["day"])`` or ``job.write(df, "local.db.orders", format="iceberg")`` or
        ``job.write(df, "/data/orders_delta", format="delta")``
        """
        self.require_active("write")
        if str(format).lower() == "delta":
            return write_delta(self, df, target, transformation_ctx=transformation_ctx,
                               partition_by=partition_by, mode=mode, options=options,
                               stamp_rows=stamp)
        if str(format).lower() == "iceberg" and "/" not in str(target):
            return write_table(self, df, target, transformation_ctx=transformation_ctx,
                               partition_by=partition_by, mode=mode, options=options,
                               stamp_rows=stamp)
        return write_files(self, df, target, format=format, transformation_ctx=transformation_ctx,
                           partition_by=partition_by, mode=mode, options=dict(options or {}),
                           output_index=len(self._outputs), stamp_rows=stamp)

    def write_jdbc(self, df: "DataFrame", url: str, table: str,
                   properties: Mapping[str, Any] | None = None,
                   transformation_ctx: str | None = None, stamp: bool = True) -> int:
        """Append ``df`` to a database table exactly once; returns the rows written.

        ``stamp=False``: the target gets only ``df``'s columns (the staging table keeps the run
        id, so publishing stays exactly once; such a run cannot be rolled back by run id).

        Example: ``job.write_jdbc(df, "jdbc:postgresql://db/shop", "orders",
        properties={"user": "etl", "password": pw})``
        """
        self.require_active("write_jdbc")
        props = dict(properties or {})
        # Finish earlier runs of this job that wait for credentials to publish to this table.
        publish_.recover_job_outputs(self.spark, self.store, self.run_identity()[0],
                                     credentials={table: {**props, "url": url}},
                                     only_table=table)
        return write_jdbc(self, df, url, table, properties=props,
                          transformation_ctx=transformation_ctx, stamp_rows=stamp)

    # ------------------------------------------------------------------ the RunContext seam
    def require_active(self, what: str) -> None:
        """Raise :class:`JobStateError` unless a run is in progress (``what``: the call)."""
        if not self._active:
            raise JobStateError(f"{what}() needs a running job: call job.init(name, args) first")

    def bookmark(self, ctx: str | None) -> SourceBookmark:
        """The bookmark a source plans with; its mode says how to read (see RunContext)."""
        self.require_active("read")
        if ctx is None:
            return SourceBookmark(ctx=None, mode=ReadMode.ALL, listing_ts=self.snapshot_ts)
        if not isinstance(ctx, str) or not ctx.strip():
            raise ConfigError("transformation_ctx must be a non-empty string")
        if ctx in self._sources:
            raise ConfigError(
                f"transformation_ctx {ctx!r} is used twice in this run; give each bookmarked "
                "source its own transformation_ctx")
        option = self.args.option if self.args else None
        if option not in (ENABLE, PAUSE):
            self._warn_bookmarks_off(ctx)
            return SourceBookmark(ctx=ctx, mode=ReadMode.ALL, listing_ts=self.snapshot_ts)
        if self._from_state is not None:
            return SourceBookmark(ctx=ctx, mode=ReadMode.REPLAY,
                                  previous=self._from_state.get(ctx),
                                  upper=(self._to_state or {}).get(ctx),
                                  listing_ts=self.snapshot_ts, save=False)
        return SourceBookmark(ctx=ctx, mode=ReadMode.INCREMENTAL, previous=self._state.get(ctx),
                              listing_ts=self.snapshot_ts, save=option == ENABLE)

    def _warn_bookmarks_off(self, ctx: str) -> None:
        """A read that names a transformation_ctx expects a bookmark; with bookmarks disabled
        (Glue's default) every run reads everything.  Said once per run, on this module's
        logger (a Glue job's driver log shows it)."""
        if self._warned_off:
            return
        self._warned_off = True
        log.warning(
            "sparkmark: job %r reads transformation_ctx %r with bookmarks disabled "
            "(--job-bookmark-option job-bookmark-disable, also the default when no option is "
            "given): every run of this job re-reads all of its input and saves no bookmark. To "
            "read only new input, pass --job-bookmark-option job-bookmark-enable, e.g. "
            "job.init(%r, {'job_bookmark_option': 'job-bookmark-enable'}); to read everything "
            "on purpose, read without transformation_ctx", self.job_name, ctx, self.job_name)

    def _jdbc_tables(self) -> dict[str, str]:
        """This run's JDBC sources: transformation_ctx -> table."""
        return {ctx: str(r.get("table")) for ctx, r in self._sources.items()
                if r.get("source") == "jdbc"}

    def record_read(self, ctx: str | None, element: Mapping[str, Any] | None,
                    report: Mapping[str, Any]) -> None:
        """What a source read: its element to commit (``None``: keep the committed one) and
        its report for the ledger config."""
        self.require_active("read")
        if self._unconfirmed:  # the files recorded for ctx count now (record_files)
            self._unconfirmed = [(c, f) for c, f in self._unconfirmed if c != ctx]
        if ctx is not None:
            if element is not None:
                self._staged[ctx] = dict(element)
            self._sources.setdefault(ctx, {}).update(report)
        if report.get("records") is not None:
            self._records_read = (self._records_read or 0) + int(report["records"])

    def record_files(self, ctx: str | None, files: Sequence[FileRead]) -> None:
        """The files a source read (:class:`~sparkmark.core.run.FileRead`): kept in the per-file
        audit when the run commits, once the source's :meth:`record_read` for the same ``ctx``
        has followed (a read that fails in between leaves none: RunContext).  A read of
        :data:`EARLY_AUDIT_FILES` files or more has its rows written ahead, by a thread, while
        Spark builds the read; they count only once the run commits."""
        self.require_active("read")
        entry: Sequence[FileRead] | EarlyAudit
        if len(files) >= EARLY_AUDIT_FILES:  # written now, while Spark builds the read
            name, run_id, _ = self.run_identity()
            entry = EarlyAudit(self.store, name, run_id, ctx, files, self.clock())
            self._early_audits.append(entry)
        elif files:
            entry = files
            self._files_read.append((ctx, files))
        else:
            return
        self._unconfirmed.append((ctx, entry))

    def _withdraw_unconfirmed(self) -> None:
        """Leave out of the audit the files of reads that failed after recording them (no
        record_read followed): kept in memory, dropped; written ahead, deleted.  The store
        deletes a run's rows by ctx, so the confirmed reads written ahead under a withdrawn
        ctx (two reads without a transformation_ctx share one) are written again."""
        withdrawn: set[str] = set()
        for ctx, entry in self._unconfirmed:
            if isinstance(entry, EarlyAudit):
                entry.cancel()
                self._early_audits.remove(entry)
                withdrawn.add(ctx or "")
            else:
                self._files_read = [(c, f) for c, f in self._files_read if f is not entry]
        self._unconfirmed = []
        if not withdrawn:
            return
        name, run_id, _ = self.run_identity()
        kept = [a for a in self._early_audits if (a.ctx or "") in withdrawn]
        for audit in kept:
            audit.cancel()
        for ctx in sorted(withdrawn):
            self.store.unstage_files(name, run_id, ctx)
        self._early_audits = [a.again() if a in kept else a for a in self._early_audits]

    def files_read_before(self, ctx: str | None, paths: Sequence[str]
                          ) -> dict[str, set[tuple[int | None, int | None]]]:
        """Which of ``paths`` committed runs of this job read for ``ctx``, with the
        ``(mtime, size)`` they had then (RunContext; the audit's retention applies)."""
        self.require_active("read")
        return self.store.files_read_before(self.run_identity()[0], ctx, list(paths))

    def stage_output(self, output: StagedOutput) -> None:
        """A sink staged output: record it in the ledger first, so a crash can be cleaned up.
        An output with the ``write_id`` of one recorded before replaces it (a Delta write
        records its version once the commit is made)."""
        self.require_active("write")
        key = getattr(output, "write_id", None)
        same = [i for i, o in enumerate(self._outputs)
                if key is not None and getattr(o, "write_id", None) == key]
        if same:
            self._outputs[same[0]] = output
        else:
            self._outputs.append(output)
        name, run_id, _ = self.run_identity()
        others = self.store.record_staged(name, run_id, outputs=publish_.records(self._outputs),
                                          target=output.target)
        self._warn_shared_target(output.target, others)

    def _warn_shared_target(self, target: str, others: list[str]) -> None:
        """Two jobs writing one target: each one's rollback removes only its own runs' output,
        and names that differ only by case or Unicode normalization are separate jobs."""
        import logging
        import unicodedata
        if not others:
            return

        def same(a: str, b: str) -> bool:
            return (unicodedata.normalize("NFKC", a).casefold()
                    == unicodedata.normalize("NFKC", b).casefold())
        alike = [o for o in others if same(o, str(self.job_name))]
        logging.getLogger("sparkmark").warning(
            "sparkmark: job %r writes %s, which job(s) %s also wrote%s; each job has its own "
            "bookmark and rollback, so check that this is meant", self.job_name, target,
            ", ".join(repr(o) for o in others),
            (f" ({', '.join(repr(o) for o in alike)} differ(s) from {self.job_name!r} only by "
             "case or Unicode normalization: job names are compared exactly)") if alike else "")

    def add_commit_check(self, check: Callable[[], None], *, concurrent: bool = False) -> None:
        """Run ``check()`` at :meth:`commit` before anything is saved; an exception from it
        fails the run (FAILED in the ledger, bookmark unchanged).  Sources use it to refuse
        input that changed while the run read it::

            job.add_commit_check(lambda: verify_nothing_changed(), concurrent=True)

        ``concurrent=True``: a check that only verifies (it changes nothing the commit records)
        runs on a thread while the commit's transaction is written, and the transaction
        commits only once it passed (one that fails rolls it back): the same guarantee, in
        less time when the check waits on the file system.
        """
        self.require_active("add_commit_check")
        (self._concurrent_checks if concurrent else self._commit_checks).append(check)

    def new_input(self) -> bool | None:
        """Whether this run's bookmarked sources found new input so far (``None``: it read
        none yet); see :func:`sparkmark.core.run.has_new_input`."""
        if not self._sources:
            return None
        return any(s.get("new_input") for s in self._sources.values())

    def add_after_commit(self, action: Callable[[], None]) -> None:
        """Run ``action()`` once this run's state has committed (and its output published),
        never when the run fails.  For work that must follow the commit and may be lost with
        the process, e.g. deleting the event messages a file source settled: a run that dies
        before it does them leaves them to the next run, which must find them harmless.  An
        exception from it is logged, not raised (the run is committed)::

            job.add_after_commit(lambda: queue.delete(messages))
        """
        self.require_active("add_after_commit")
        self._after_commit.append(action)

    def add_written(self, n: int) -> None:
        """Count ``n`` rows written to a target."""
        self._records_written += int(n)

    def add_secrets(self, properties: Mapping[str, Any] | None = None,
                    url: str | None = None) -> None:
        """Secret values given to this run, scrubbed from ledger error texts (RunContext)."""
        self.secrets.add_properties(properties)
        self.secrets.add_url(url)

    # ------------------------------------------------------------------ internals
    def run_identity(self) -> tuple[str, str, int]:
        """``(job_name, run_id, start_version)`` of the run in progress (a
        :class:`JobStateError` when there is none).  Example: ``name, run_id, _ =
        job.run_identity()``"""
        if self._job_name is None or self._run_id is None or self.start_version is None:
            raise JobStateError("no run in progress on this Job: call job.init(name, args) first")
        return self._job_name, self._run_id, self.start_version

    def _config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"args": self.args.as_config() if self.args else {}}
        if self._sources:
            cfg["sources"] = self._sources
        cfg.update(self._config_extra)
        return cfg

    def _stop(self) -> None:
        self._active = False
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None


#: a source that read this many files or more has its audit rows written ahead of the commit,
#: by a thread, while Spark builds its read (:meth:`StateStore.stage_files
#: <sparkmark.state.StateStore.stage_files>`): a first run over 1,000,000 files spent 6 of its
#: 8 s of commit inserting them; smaller reads go in the commit's own transaction
EARLY_AUDIT_FILES = 100_000


def _error_text(error: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    tb = traceback.extract_tb(error.__traceback__)
    if tb:
        last = tb[-1]
        text += f" (at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    return text[:8000]
