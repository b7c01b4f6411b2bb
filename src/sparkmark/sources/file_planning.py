"""Planning glue for ``job.read.files``: the pure planners of :mod:`sparkmark.planning` applied
to a run (late files, rewritten files), the per-file audit rows the commit writes, and
:func:`plan_pending`, what a run would read, without Spark.

Example::

    from sparkmark.sources.file_planning import plan_pending
    listing, plan, selected = plan_pending(["file:/in"], None, now_ms, BandOptions(), ArrowFS)
"""
from __future__ import annotations

import logging
from array import array
from typing import Any, Callable, Iterator, Sequence, overload

from sparkmark.core.errors import SourceError
from sparkmark.core.run import FileRead, RunContext
from sparkmark.planning.bands import BandOptions, BandState, FileEntry, Plan, plan_band
from sparkmark.planning.filecolumns import FileColumns
from sparkmark.planning.latefiles import SAMPLE, LatePlan, SettledSketch, plan_late
from sparkmark.planning.rewrites import RewritePlan, plan_rewrites
from sparkmark.sources.file_listing import Listing, list_inputs

log = logging.getLogger("sparkmark")


def plan_pending(paths: Sequence[str], previous: BandState | None, listing_ts: int,
                 opts: BandOptions, fs_for: Callable[[str], Any]
                 ) -> tuple[Listing, Plan, Sequence[FileEntry]]:
    """What an incremental run started at ``listing_ts`` would read, without Spark: the
    listing (through ``fs_for``, e.g. ``pyarrow``), the band plan, and the files it selects
    (late files too where ``lateFiles=read``). Nothing is read or committed.

    Example: ``plan_pending(["file:/in"], None, now_ms, BandOptions(), ArrowFS)[2]``
    """
    listing = list_inputs(None, paths, opts, listing_ts=listing_ts, fs_for=fs_for)
    plan = plan_band(listing.entries, previous, listing_ts, opts)
    selected: Sequence[FileEntry] = plan.selected
    sketch = (SettledSketch.from_element(previous.extra.get("late"))
              if previous is not None else None)
    late = plan_late(listing.entries, previous.low if previous else None, sketch,
                     previous.files if previous else {}, plan.selected,
                     -1 if plan.state.low is None else plan.state.low, full=True,
                     keep_late=opts.late_files == "warn")
    extra = set(late.unseen) | (set(late.late) if opts.late_files == "read" else set())
    if extra:
        selected = sorted(set(selected) | extra)
    return listing, plan, selected


def apply_late(mode: str, late: LatePlan, selected: Sequence[FileEntry], info: dict[str, Any],
                paths: Sequence[str]) -> Sequence[FileEntry]:
    """``lateFiles``: report (warn), read once (read), fail the run (fail) or say nothing."""
    if mode == "ignore":
        if late.unseen:
            info["backfilled"] = len(late.unseen)
        return selected
    info.update(late.info())
    where = paths[0] if len(paths) == 1 else f"{len(paths)} paths"
    if late.overflow:
        text = (f"the settled files under {where} changed in more ways than the late-file "
                "sketch can name (many files deleted or added with old modification times); "
                "late files, if any, cannot be listed this run")
        if mode == "fail":
            raise SourceError(text + "; check the input, then run with lateFiles=warn once "
                              "to accept the current listing")
        log.warning("sparkmark: %s", text)
        return selected
    if not late.count:
        return selected
    names = [f.path for f in late.late[:SAMPLE]]
    more = f" (and {late.count - len(names)} more)" if late.count > len(names) else ""
    if mode == "fail":
        raise SourceError(
            f"{late.count} late file(s) under {where}: their modification time is at or below "
            f"the bookmark's low watermark, so the band rule would never read them: "
            f"{', '.join(names)}{more}; read them once with lateFiles=read, or accept skipping "
            "them with lateFiles=ignore")
    if mode == "read":
        return sorted(set(selected) | set(late.late))
    log.warning("sparkmark: %d late file(s) under %s not read (mtime at or below the "
                "bookmark's low); a run with lateFiles=read reads them, lateFiles=ignore "
                "accepts skipping them; until then every full listing reports them: %s%s",
                late.count, where,
                ", ".join(names), more)
    return selected


def apply_rewrites(run: RunContext, ctx: str | None, mode: str, selected: Sequence[FileEntry],
                    info: dict[str, Any], paths: Sequence[str], *, first: bool) -> RewritePlan:
    """``onModified`` (see :mod:`sparkmark.planning.rewrites`): the audit says which selected
    files this job read before in another version (not asked on a first run or after a reset,
    whose million files would be a million lookups for nothing to skip)."""
    before = (run.files_read_before(ctx, [f.path for f in selected])
              if selected and not first else {})
    plan = plan_rewrites(selected, before, mode)
    info.update(plan.info())
    if plan.rewritten and mode == "fail":
        names = [f.path for f in plan.rewritten[:SAMPLE]]
        more = (f" (and {len(plan.rewritten) - len(names)} more)"
                if len(plan.rewritten) > len(names) else "")
        where = paths[0] if len(paths) == 1 else f"{len(paths)} paths"
        raise SourceError(
            f"{len(plan.rewritten)} file(s) under {where} were read by an earlier run of this "
            f"job and have been rewritten since (onModified=fail): {', '.join(names)}{more}; "
            "read them again with onModified=reprocess, or leave them out with "
            "onModified=ignore")
    return plan


class _AuditRows(Sequence[FileRead]):
    """The files read as :class:`FileRead` rows, made when the commit asks for them (a first
    run over a million files holds no second million tuples until then)."""

    def __init__(self, entries: Sequence[FileEntry], kinds: dict[str, str],
                 hashes: "array[int] | None" = None):
        self.entries, self.kinds, self.hashes = entries, kinds, hashes

    def path_keys(self) -> "array[int] | None":
        """The rows' 64-bit path hashes, in order, when the run computed them (a first run:
        :func:`~sparkmark.planning.latefiles.path_keys`), else None: the store hashes."""
        return self.hashes

    def __len__(self) -> int:
        return len(self.entries)

    def _row(self, f: FileEntry) -> FileRead:
        return FileRead(f.path, f.size, f.mtime, self.kinds.get(f.path, "new"))

    @overload
    def __getitem__(self, i: int) -> FileRead: ...

    @overload
    def __getitem__(self, i: slice) -> list[FileRead]: ...

    def __getitem__(self, i: int | slice) -> FileRead | list[FileRead]:
        if isinstance(i, slice):  # the commit takes them in batches: tuple.__new__ is C, the
            # NamedTuple's own __new__ a Python call per row (0.17 s per 100,000 files)
            new, get = tuple.__new__, self.kinds.get
            return [new(FileRead, (f.path, f.size, f.mtime, get(f.path, "new")))
                    for f in self.entries[i]]
        return self._row(self.entries[i])

    def paths(self) -> Iterator[str]:
        """The paths of the files read, in order (no rows made)."""
        entries = self.entries
        if isinstance(entries, FileColumns):
            return (p for at in range(0, len(entries), 65_536)
                    for p in entries.paths(at, at + 65_536))
        return (f.path for f in entries)

    def take(self, indices: Sequence[int]) -> list[FileRead]:
        """The rows at ``indices`` (the commit takes them in path-hash order), made as a
        slice's are."""
        new, get, entries = tuple.__new__, self.kinds.get, self.entries
        chosen = (entries.take(indices) if isinstance(entries, FileColumns)
                  else [entries[j] for j in indices])
        return [new(FileRead, (f.path, f.size, f.mtime, get(f.path, "new"))) for f in chosen]


def audit_rows(selected: Sequence[FileEntry], late: LatePlan | None,
                rewrites: RewritePlan | None) -> _AuditRows:
    """What the per-file audit keeps of this read: each file with how it came to be read."""
    kinds = {f.path: "late" for f in (late.late + late.unseen if late is not None else [])}
    kinds.update((f.path, "rewrite") for f in (rewrites.rewritten if rewrites else []))
    return _AuditRows(selected, kinds)


def with_hashes(audit: _AuditRows, listing: Sequence[FileEntry], hashes: "array[int]",
                 listing_ts: int, eligible: int) -> _AuditRows:
    """The audit rows of a first run in its listing's order with the path hashes it computed,
    when the run reads exactly what it listed up to ``listing_ts`` (the files the band rule
    can select: what it read is a subset of them, so the same number means the same files);
    else ``audit`` as it is (a bounded run, files left out as rewrites: the store hashes).
    ``eligible``: the band plan's count of those files (a first run's candidates)."""
    if eligible != len(audit):
        return audit
    if eligible == len(listing):
        return _AuditRows(listing, audit.kinds, hashes)
    import numpy as np
    cols = FileColumns.of(listing)
    inside = cols.mtimes_np() <= listing_ts
    if int(inside.sum()) != eligible:  # not the plan's candidates after all: the store hashes
        return audit
    return _AuditRows(cols.where(inside), audit.kinds,
                      array("Q", np.frombuffer(hashes, dtype=np.uint64)[inside].tobytes()))
