"""``job.read.files``: bookmarked file sources, thin adapters around the pure planner.

1. *List* every input file once, with its modification time and size, through Hadoop's
   FileSystem in the JVM (any Spark path: ``file:``, ``hdfs:``, ``s3a:``, ``abfs:``, ``gs:``...).
   One ``listStatus`` call per directory level, its statuses handed to Python as one string, so
   100,000 files list in seconds; local directories are listed with ``os.scandir`` (the same
   paths, times and sizes, faster).  Hidden files and directories (``.x``, ``_x``) are skipped
   like Spark skips them; ``key=value`` directories are always entered (partitions), other
   directories only with ``recurse=true``; ``exclusions`` globs match the path relative to the
   root (or the full path).
2. *Plan* with :func:`sparkmark.planning.bands.plan_band` (or ``plan_replay`` for pause with
   from/to, or everything when bookmarks are off).
3. *Read* only the selected files, with ``basePath`` set to the root so partition columns are
   kept: Spark's file index is built from the listing (:mod:`sparkmark.sources.fileindex`;
   Spark lists nothing again), or, where that does not apply (Spark Connect, avro/xml, HDFS),
   Spark gets the files by path (or their root, when it finds exactly them there).  An old
   file is never opened.

Bad input is one :class:`SourceError`/:class:`ConfigError` raised before anything is read.
Corrupt input: JSON, CSV and XML are read with ``mode=FAILFAST`` unless ``mode`` is given, so a
malformed record fails the run (schema inference at read time raises a ``SourceError``; with a
given schema the action that consumes the DataFrame fails, e.g. ``job.write`` raises a
``SinkError``), and the bookmark does not move.  Ask for Spark's handling instead with
``mode=PERMISSIVE`` (plus ``columnNameOfCorruptRecord``) or ``mode=DROPMALFORMED``, and
``ignoreCorruptFiles=true`` for unreadable parquet/orc/avro files.

This module is the source the job calls (:func:`read_files`) and the names other modules
import; each step lives in its own module: listing in :mod:`sparkmark.sources.file_listing`,
the planners applied to a run (late and rewritten files, the audit rows, :func:`plan_pending`)
in :mod:`sparkmark.sources.file_planning`, and reading with Spark in
:mod:`sparkmark.sources.file_reading`.
"""
from __future__ import annotations

import functools
import json
from array import array
from typing import TYPE_CHECKING, Any, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.core.run import ReadMode, RunContext, add_verifying_check
from sparkmark.engine.fs import storage_secrets
from sparkmark.engine.gcpause import gc_paused
from sparkmark.planning.bands import (BandState, FileEntry, plan_all, plan_band, plan_replay,
                                      split_options)
from sparkmark.planning.events import (EventPlan, after_listing, check_event_paths,
                                       known_roots, plan_events, split_event_options,
                                       with_marker)
from sparkmark.planning.filecolumns import FileColumns, total_size
from sparkmark.planning.latefiles import LatePlan, SettledSketch, path_keys, plan_late
from sparkmark.planning.listing import ListingState, choose_listing
from sparkmark.planning.rewrites import RewritePlan
from sparkmark.planning.schema_drift import skip_hint, split_drift_option
from sparkmark.sources.drift import known_from_element, known_json, read_drift
from sparkmark.sources.file_events import (EventDiscovery, backfill_settles,
                                           delete_after_commit, event_listing, start_discovery)
from sparkmark.sources.file_listing import (CHECK_CHUNK, Listing, changed_files, check_partition_layout,
                                            check_unchanged, list_inputs)
from sparkmark.sources.file_planning import (apply_late, apply_rewrites, audit_rows, plan_pending,
                                             with_hashes)
from sparkmark.sources.file_reading import (FORMATS, WHOLE_ROOT_MIN, check_format, escape_glob,
                                            has_spark_avro, load, reader_options)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: the names other modules, tests and docs import from here (they live in the modules above)
__all__ = ["CHECK_CHUNK", "FORMATS", "WHOLE_ROOT_MIN", "Listing", "changed_files", "check_format",
           "check_partition_layout", "check_unchanged", "escape_glob", "has_spark_avro",
           "list_inputs", "load", "plan_pending", "read_files", "reader_options"]


# ---------------------------------------------------------------------- the source
def _as_paths(path: Any) -> list[str]:
    if isinstance(path, str):
        paths = [path]
    elif isinstance(path, (list, tuple)):
        paths = list(path)
    else:
        raise ConfigError(f"path must be a string or a list of strings, not {type(path).__name__}")
    if not paths or any(not isinstance(p, str) or not p.strip() for p in paths):
        raise ConfigError(f"path {path!r} is empty; give the input directory (or files)")
    return [p.strip() for p in paths]


def read_files(run: RunContext, path: str | Sequence[str], *, format: str = "json",
               transformation_ctx: str | None = None,
               options: dict[str, Any] | None = None) -> "DataFrame":
    """The new input under ``path`` as a DataFrame. See the module docstring.

    Example: ``read_files(job, "in/orders", format="json", transformation_ctx="src")``
    """
    fmt = check_format(format)
    ev_opts, options = split_event_options(options)
    band_opts, rest = split_options(options)
    drift_mode, rest = split_drift_option(fmt, rest)
    opts, schema = reader_options(fmt, rest)
    paths = _as_paths(path)
    if ev_opts.enabled:
        check_event_paths(paths, band_opts)
    for p in paths:  # s3a keys and tokens never reach the ledger
        run.add_secrets(storage_secrets(run.spark, str(p)))
    bookmark = run.bookmark(transformation_ctx)
    incremental = bookmark.mode is ReadMode.INCREMENTAL
    previous = (BandState.from_element(bookmark.previous)
                if bookmark.mode is not ReadMode.ALL else None)
    sketch = (SettledSketch.from_element(previous.extra.get("late"))
              if incremental and previous is not None else None)
    why = "" if incremental else "bookmarks off" if bookmark.mode is ReadMode.ALL else "replay"
    # fileDiscovery=events: the queue is received before anything is listed
    discovery: EventDiscovery | None = None
    if ev_opts.enabled and incremental:
        discovery = start_discovery(ev_opts, previous, int(bookmark.listing_ts or 0))
    from_events = discovery is not None and not discovery.backfill

    def decide(roots: list[str]) -> tuple[str, ListingState | None]:
        nonlocal why
        if not incremental:
            return "full", None
        prev = (ListingState.from_element(previous.extra.get("listing"))
                if previous is not None else None)
        if discovery is not None:  # a backfill lists in full
            why = f"backfill: {discovery.reason}"
            return "full", prev
        mode, why = choose_listing(prev, enabled=band_opts.incremental_listing, roots=roots,
                                   listing_ts=int(bookmark.listing_ts or 0),
                                   interval=band_opts.full_listing_interval,
                                   has_sketch=sketch is not None,
                                   file_names=band_opts.lexical_file_names)
        return mode, prev

    with gc_paused():  # list and plan: a million small tuples, no garbage cycles
        if from_events:  # the objects the messages name, as they are now
            assert discovery is not None
            listing, ev_roots, current = event_listing(run.spark, paths, discovery.messages,
                                                       band_opts, known_roots(previous))
            why = "events"
        else:
            listing = list_inputs(run.spark, paths, band_opts, decide=decide,
                                  listing_ts=int(bookmark.listing_ts or 0))
        check_partition_layout(listing)  # (events: among the objects the messages name)
        if previous is None:  # a run that reads (about) every file: the listing itself in
            # order, once (a view of it is then what the run reads, and a listing that came in
            # another order is not held twice)
            listing.entries = listing.entries.in_order()
        info: dict[str, Any] = {"format": fmt, "path": paths if len(paths) > 1 else paths[0],
                                "read": str(bookmark.mode)}
        plan = None
        ev_plan: EventPlan | None = None
        late: LatePlan | None = None
        rewrites: RewritePlan | None = None
        hashes: "array[int] | None" = None
        #: the files read: a view of the listing's columns (a list where late files join)
        selected: Sequence[FileEntry]
        if bookmark.mode is ReadMode.ALL:
            selected = plan_all(listing.entries)
        elif bookmark.mode is ReadMode.REPLAY:
            selected = plan_replay(listing.entries, previous,
                                   BandState.from_element(bookmark.upper))
        elif from_events:
            assert discovery is not None and previous is not None and bookmark.listing_ts
            ev_plan = plan_events(discovery.messages, ev_roots, current, previous,
                                  bookmark.listing_ts, band_opts)
            info.update(ev_plan.info())
            rewrites = apply_rewrites(run, transformation_ctx, band_opts.on_modified,
                                      ev_plan.selected, info, paths, first=False)
            selected = rewrites.selected
        else:
            assert bookmark.listing_ts is not None  # set for every incremental bookmark
            plan = plan_band(listing.entries, previous, bookmark.listing_ts, band_opts)
            selected = plan.selected
            info.update(plan.info())
            # a first run hashes each path once: for its sketch keys and its audit rows
            hashes = (path_keys(listing.entries) if previous is None and listing.mode == "full"
                      else None)
            late = plan_late(listing.entries, previous.low if previous else None, sketch,
                             previous.files if previous else {}, plan.selected,
                             -1 if plan.state.low is None else plan.state.low,  # None: nothing read
                             full=listing.mode == "full",
                             keep_late=band_opts.late_files == "warn", hashes=hashes)
            if late.unseen:  # a partial listing could not show them: new input, read once
                selected = sorted(set(selected) | set(late.unseen))
            selected = apply_late(band_opts.late_files, late, selected, info, paths)
            rewrites = apply_rewrites(run, transformation_ctx, band_opts.on_modified, selected,
                                       info, paths, first=previous is None)
            selected = rewrites.selected
    audit = audit_rows(selected, late, rewrites)
    if hashes is not None and late is not None and not late.unseen:
        audit = with_hashes(audit, listing.entries, hashes, int(bookmark.listing_ts or 0),
                             plan.eligible if plan is not None else -1)
    # before Spark builds the read: a large audit is written meanwhile (RunContext)
    run.record_files(transformation_ctx, audit)
    hint = functools.partial(skip_hint, run.job_name, transformation_ctx)
    known_schema = None
    if drift_mode is None:
        df = load(run.spark, fmt, selected, listing, opts, schema, _stored_schema(previous),
                  hint=hint)
    else:
        df, drift, counts = read_drift(
            run.spark, fmt, selected, listing, opts, schema,
            known_from_element(previous.extra.get("known_schema") if previous else None),
            drift_mode, load=functools.partial(load, hint=hint), job=run.job_name,
            ctx=transformation_ctx)
        info.update(drift.info())
        # malformed/rescued counts: observed on the job's own action, final at commit
        run.add_commit_check(lambda: run.record_read(transformation_ctx, None, counts()))
        known_schema = known_json(df) if df.columns else None
    info["files"] = len(selected)
    info["bytes"] = total_size(selected)
    info["new_input"] = bool(selected)
    info["listing"] = listing.mode
    if why:
        info["listing_reason"] = why
    info["dirs_listed"] = listing.dirs_listed
    if listing.list_requests is not None:
        info["list_requests"] = listing.list_requests
    info["listed"] = len(listing.entries)
    info["sample"] = [f.path.rsplit("/", 1)[-1] for f in selected[:10]]
    element = None
    state: BandState | None = None  # incremental: the element to commit
    if plan is not None and late is not None:
        state = plan.state
        extra = {**dict(plan.state.extra), "late": late.sketch.to_element()}
    elif ev_plan is not None:
        state = ev_plan.state
        extra = dict(ev_plan.state.extra)
    if state is not None:
        # (a backfill keeps its roots' kinds: the event runs after it ask S3 for none)
        extra = (with_marker(extra, ev_opts, None) if plan is None else
                 after_listing(extra, ev_opts, int(bookmark.listing_ts or 0), plan.deferred,
                               {**{r: False for r in listing.dir_roots},
                                **{r: True for r in listing.file_roots}}))
        if listing.state is not None and plan is not None:
            extra["listing"] = ListingState(**{**listing.state.__dict__,
                                               "pending": plan.deferred + plan.waiting}
                                            ).to_element()
        if df.columns:  # the columns an empty run returns (see docs/files.md)
            extra["schema"] = df.schema.json()
        if known_schema is not None:  # schemaEvolution's known schema (docs/files.md)
            extra["known_schema"] = known_schema
        state = BandState(low=state.low, high=state.high, listing_ts=state.listing_ts,
                          band=state.band, files=state.files, extra=extra)
        element = state.to_element()
    if discovery is not None:
        info.update(discovery.info())
        if ev_plan is not None:
            done = set(ev_plan.delete)
            settled = [m for m in discovery.messages if m.id in done]
        elif state is not None:
            settled, ev_counts = backfill_settles(listing, discovery, state, band_opts,
                                                  selected)
            info.update(ev_counts)
        else:
            settled = []
        if bookmark.save:  # deleted once the state has committed (never on pause)
            delete_after_commit(run, discovery, settled)
    run.record_read(transformation_ctx, element, info)
    if element is not None and selected:  # a file changed while read fails the run
        what, spark = f"source {transformation_ctx!r}", run.spark
        # (a view of the columns is read-only: no copy of a million entries)
        chosen = selected if isinstance(selected, FileColumns) else tuple(selected)
        add_verifying_check(run, lambda: check_unchanged(spark, chosen, what))
    return df


def _stored_schema(state: BandState | None):
    if state is None or not state.extra.get("schema"):
        return None
    from pyspark.sql.types import StructType
    try:
        return StructType.fromJson(json.loads(state.extra["schema"]))
    except Exception:  # noqa: BLE001 - an unreadable schema only loses the empty-run columns
        return None
