"""``Job``: the lifecycle of one bookmarked run — init, read, write, commit (or fail).

    job = Job(spark)                       # state: SQLAlchemy URL, env SPARKMARK_STATE, or default
    job.init("orders", args)               # Glue-style args: dict or argv list
    df = job.read.files("data/in", format="json", transformation_ctx="src")
    job.write(df, "data/out", format="parquet", transformation_ctx="sink")
    job.commit()

or, committing on success and recording FAILED on an exception::

    with Job(spark).run("orders", args) as job:
        ...

Sources ask the job for their bookmark (``_bookmark_for``) and hand back the element to commit
(``_stage_state``); sinks stage their output and register it (``_register_output``).  ``commit``
then saves every element, the new version and the finished ledger row in one transaction, and
publishes the staged output.
"""
from __future__ import annotations

import json
import os
import threading
import traceback
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from .clock import Clock, system_clock
from .errors import ConfigError, JobStateError, SparkmarkError
from .options import ENABLE, PAUSE, BookmarkArgs, parse_job_args
from .state import StateStore, open_store
from .state.lease import DEFAULT_LEASE_MS
from .state.store import EMPTY, FAILED, SUCCEEDED

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class SourceBookmark:
    """What a bookmarked source needs to plan its read.

    ``previous``: the element to continue from (``None``: nothing processed yet, read all).
    ``upper``: for pause with from/to, the element committed by the ``to`` run (read no further).
    ``listing_ts``: the run's listing time T in epoch ms.
    ``save``: whether ``commit()`` will save the element the source stages.
    """

    ctx: str
    previous: dict[str, Any] | None
    upper: dict[str, Any] | None
    listing_ts: int
    save: bool


class JobReader:
    """``job.read``: bookmarked readers.  Each returns a Spark DataFrame of the new input only."""

    def __init__(self, job: "Job"):
        self._job = job

    def files(self, path: str | Sequence[str], format: str = "json",
              transformation_ctx: str | None = None,
              options: Mapping[str, Any] | None = None) -> "DataFrame":
        """Files under ``path`` that are new since the last committed run (SPEC §3)."""
        from .sources.files import read_files
        return read_files(self._job, path, format=format, transformation_ctx=transformation_ctx,
                          options=dict(options or {}))

    def jdbc(self, url: str, table: str, transformation_ctx: str | None = None,
             bookmark_keys: Sequence[str] | None = None, sort_order: str = "asc",
             properties: Mapping[str, Any] | None = None,
             options: Mapping[str, Any] | None = None) -> "DataFrame":
        """Rows of a database table whose bookmark key is past the last committed one (SPEC §4)."""
        from .sources.jdbc import read_jdbc
        return read_jdbc(self._job, url, table=table, transformation_ctx=transformation_ctx,
                         bookmark_keys=bookmark_keys, sort_order=sort_order,
                         properties=dict(properties or {}), options=dict(options or {}))


class Job:
    """A named unit of incremental work with a bookmark and a ledger row per run."""

    def __init__(self, spark: "SparkSession", state: str | None = None,
                 clock: Clock | None = None, *, lease_ms: int | None = None):
        self.spark = spark
        self.store: StateStore = state if isinstance(state, StateStore) else open_store(state)
        self.clock: Clock = clock or system_clock
        self.lease_ms = lease_ms or DEFAULT_LEASE_MS
        self.read = JobReader(self)
        self._reset_run_fields()

    def _reset_run_fields(self) -> None:
        self.job_name: str | None = None
        self.run_id: str | None = None
        self.run_number: int | None = None
        self.attempt: int | None = None
        self.snapshot_ts: int | None = None
        self.args: BookmarkArgs | None = None
        self.start_version: int | None = None
        self.previous_run_id: str | None = None
        self._state: dict[str, Any] = {}
        self._from_state: dict[str, Any] | None = None
        self._to_state: dict[str, Any] | None = None
        self._staged: dict[str, Any] = {}
        self._sources: dict[str, dict[str, Any]] = {}
        self._outputs: list[dict[str, Any]] = []
        self._sink_properties: dict[str, dict[str, Any]] = {}  # JDBC targets' credentials
        self._records_read: int | None = None
        self._records_written = 0
        self._ledger_fields: dict[str, Any] = {}
        self._status_override: str | None = None     # pipelines: SUCCEEDED/EMPTY by their rule
        self._config_extra: dict[str, Any] = {}      # pipelines: merged into the ledger config
        self._active = False
        self._heartbeat: _Heartbeat | None = None

    # ------------------------------------------------------------------ properties
    @property
    def bookmark_option(self) -> str | None:
        return self.args.option if self.args else None

    @property
    def listing_ts(self) -> int | None:
        """The run's listing time T (epoch ms): files with a later mtime wait for a later run."""
        return self.snapshot_ts

    @property
    def active(self) -> bool:
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

    # ------------------------------------------------------------------ lifecycle
    def init(self, name: str | None = None,
             args: Mapping[str, Any] | Sequence[str] | None = None, *,
             ledger: Mapping[str, Any] | None = None, snapshot_ts: int | None = None) -> "Job":
        """Start a run: validate ``args``, take the job's lease and open its ledger row.

        ``ledger`` and ``snapshot_ts`` are used by pipelines (module columns, shared snapshot).
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
        from_state = to_state = None
        if parsed.from_run:
            v_from, v_to = self.store.validate_runs(name, [parsed.from_run, parsed.to_run])
            if v_to.version < v_from.version:
                raise ConfigError(
                    f"--job-bookmark-to {parsed.to_run} committed before --job-bookmark-from "
                    f"{parsed.from_run}; give the earlier run as from")
            from_state, to_state = v_from.state, v_to.state
        now = self.clock()
        snapshot = now if snapshot_ts is None else snapshot_ts
        run_id = uuid.uuid4().hex
        from . import sinks  # recovery of earlier runs' staged output
        start = self.store.begin_run(
            name, run_id=run_id, option=parsed.option, now=now, snapshot_ts=snapshot,
            lease_ms=self.lease_ms, pid=os.getpid(),
            ledger={"config": json.dumps({"args": parsed.as_config()}), **dict(ledger or {})})
        self._reset_run_fields()
        self.job_name, self.run_id, self.args = name, run_id, parsed
        self.run_number, self.attempt = start.run_number, start.attempt
        self.start_version, self.previous_run_id = start.start_version, start.previous_run_id
        self.snapshot_ts = snapshot
        self._state = start.state
        self._from_state, self._to_state = from_state, to_state
        self._active = True
        self._heartbeat = _Heartbeat(self)
        try:
            sinks.recover_job_outputs(self.spark, self.store, name)
        except BaseException as e:
            self.fail(e)
            raise
        return self

    def commit(self, *, keep_bookmark: bool = False, note: str | None = None) -> int:
        """Save the staged state (enable), finish the ledger row, publish staged output.

        ``keep_bookmark=True`` saves no bookmark state (the version does not move) but still
        records the run and publishes its output; ``note`` is kept in the ledger row's config.
        Returns the bookmark version after the commit.
        """
        self._require_active("commit")
        from . import sinks
        empty = (bool(self._sources) and not any(s.get("new_input") for s in self._sources.values())
                 and self._records_written == 0)
        save = self.args is not None and self.args.option == ENABLE and not keep_bookmark
        if note:
            self._config_extra["note"] = str(note)
        new_state = None
        if save:
            new_state = dict(self._state)
            new_state.update(self._staged)
        fields = dict(self._ledger_fields)
        fields.update(records_written=self._records_written,
                      records_read=self._records_read,
                      config=json.dumps(self._config(), default=str),
                      outputs=json.dumps(self._outputs) if self._outputs else None,
                      publish_state="pending" if self._outputs else None)
        try:
            version = self.store.commit_run(
                self.job_name, self.run_id, start_version=self.start_version,
                new_state=new_state, status=self._status_override or (EMPTY if empty else SUCCEEDED),
                now=self.clock(),
                fields=fields)
        except BaseException as e:
            self.fail(e)
            raise
        self._stop()
        # The run is committed: from here on its output must appear (roll forward on crash).
        sinks.publish_outputs(self.spark, self.store, self.run_id, self._outputs,
                              properties=self._sink_properties)
        return version

    def fail(self, error: BaseException | str) -> None:
        """Record the run FAILED with the error text; remove its staged output; keep the state."""
        if not self._active:
            return
        from . import sinks
        text = error if isinstance(error, str) else _error_text(error)
        try:
            sinks.discard_outputs(self.spark, self._outputs, self._sink_properties)
        finally:
            try:
                self.store.fail_run(self.job_name, self.run_id, error=text, now=self.clock(),
                                    fields={"records_written": self._records_written,
                                            "config": json.dumps(self._config(), default=str)})
            finally:
                self._stop()

    @contextmanager
    def run(self, name: str | None = None,
            args: Mapping[str, Any] | Sequence[str] | None = None) -> Iterator["Job"]:
        """Context manager: commit on success, record FAILED (and re-raise) on an exception."""
        self.init(name, args)
        try:
            yield self
        except BaseException as e:
            self.fail(e)
            raise
        if self._active:
            self.commit()

    def write(self, df: "DataFrame", target: str, format: str = "parquet",
              transformation_ctx: str | None = None, partition_by: Sequence[str] | None = None,
              mode: str = "append", options: Mapping[str, Any] | None = None,
              stamp: bool = True) -> int:
        """Write ``df`` to ``target`` exactly once (SPEC §5); returns the rows written.

        ``stamp=False`` leaves out the ``sm_run_id``/``sm_snapshot_ts`` columns (the files are
        still named ``sm-<run_id>-...``, which is what publish and rollback go by).
        """
        from .sinks import write_files
        return write_files(self, df, target, format=format, transformation_ctx=transformation_ctx,
                           partition_by=partition_by, mode=mode, options=dict(options or {}),
                           stamp_rows=stamp)

    def write_jdbc(self, df: "DataFrame", url: str, table: str,
                   properties: Mapping[str, Any] | None = None,
                   transformation_ctx: str | None = None, stamp: bool = True) -> int:
        """Append ``df`` to a database table exactly once (SPEC §5); returns the rows written.

        ``stamp=False``: the target gets only ``df``'s columns (the staging table keeps the run
        id, so publishing stays exactly once; such a run cannot be rolled back by run id).
        """
        from .sinks_jdbc import write_jdbc
        return write_jdbc(self, df, url, table, properties=dict(properties or {}),
                          transformation_ctx=transformation_ctx, stamp_rows=stamp)

    # ------------------------------------------------------------------ for sources and sinks
    def _require_active(self, what: str) -> None:
        if not self._active:
            raise JobStateError(f"{what}() needs a running job: call job.init(name, args) first")

    def _bookmark_for(self, ctx: str | None) -> SourceBookmark | None:
        """The bookmark a source plans with, or ``None`` to read everything."""
        self._require_active("read")
        if ctx is None:
            return None
        if not isinstance(ctx, str) or not ctx.strip():
            raise ConfigError("transformation_ctx must be a non-empty string")
        if ctx in self._sources:
            raise ConfigError(
                f"transformation_ctx {ctx!r} is used twice in this run; give each bookmarked "
                "source its own transformation_ctx")
        self._sources[ctx] = {}
        option = self.args.option
        if option not in (ENABLE, PAUSE):
            return None
        if self._from_state is not None:
            return SourceBookmark(ctx=ctx, previous=self._from_state.get(ctx),
                                  upper=self._to_state.get(ctx), listing_ts=self.snapshot_ts,
                                  save=False)
        return SourceBookmark(ctx=ctx, previous=self._state.get(ctx), upper=None,
                              listing_ts=self.snapshot_ts, save=option == ENABLE)

    def _stage_state(self, ctx: str, element: dict[str, Any], info: dict[str, Any]) -> None:
        """A source's new element (saved at commit when enabled) and what it found."""
        self._staged[ctx] = element
        self._note_source(ctx, info)

    def _note_source(self, ctx: str | None, info: dict[str, Any]) -> None:
        if ctx is not None:
            self._sources.setdefault(ctx, {}).update(info)
        if info.get("records") is not None:
            self._records_read = (self._records_read or 0) + int(info["records"])

    def _register_output(self, output: dict[str, Any]) -> None:
        """A sink staged output: record it in the ledger first, so a crash can be cleaned up."""
        self._outputs.append(output)
        self.store.update_run(self.run_id, outputs=json.dumps(self._outputs),
                              publish_state="staged")

    def _add_written(self, n: int) -> None:
        self._records_written += int(n)

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


class _Heartbeat:
    """Renews the run's lease every third of its length until the run ends."""

    def __init__(self, job: Job):
        self._job = job
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._loop, name=f"sparkmark-lease-{job.run_id}",
                                        daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        job = self._job
        interval = max(job.lease_ms / 3000.0, 0.05)
        while not self._stop.wait(interval):
            try:
                if not job.store.heartbeat(job.job_name, job.run_id, job.clock(), job.lease_ms):
                    self.lost = True
                    return
            except SparkmarkError:
                continue  # transient; the lease may still be renewed next time

    def stop(self) -> None:
        self._stop.set()


def _error_text(error: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    tb = traceback.extract_tb(error.__traceback__)
    if tb:
        last = tb[-1]
        text += f" (at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    return text[:8000]
