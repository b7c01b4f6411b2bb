"""Listing for ``job.read.files``: every input file once, with its modification time and size,
and the listed files checked again when the run commits.

:func:`list_inputs` walks the roots through Hadoop's FileSystem in the JVM (or ``os.scandir`` for
a plain local directory) with :func:`sparkmark.planning.listing.walk`; :class:`Listing` is what
it found.  :func:`check_partition_layout` refuses a file Spark would leave out, and
:func:`check_unchanged` fails a run whose input changed while it was read.

Example::

    from sparkmark.sources.file_listing import list_inputs
    listing = list_inputs(spark, ["data/in"], BandOptions())
    listing.entries, listing.mode, listing.dirs_listed
"""
from __future__ import annotations

import functools
import logging
import os
import re
import time
from itertools import compress
from typing import TYPE_CHECKING, Any, Callable, Sequence

from sparkmark.core import listing_progress
from sparkmark.core.errors import SourceError
from sparkmark.core.secrets import mask_url
from sparkmark.engine import compat
from sparkmark.engine.fs import default_fs, file_system
from sparkmark.engine.gcpause import gc_paused
from sparkmark.engine.jvm import helper, java_error_text, storage_error_text
from sparkmark.planning.bands import BandOptions, FileEntry, excluded, glob_to_regex
from sparkmark.planning.filecolumns import FileColumns
from sparkmark.planning.listing import ListingState, margin_for, merge_states, walk
from sparkmark.sources.dirlisting import hadoop_after, hadoop_level, local_level, local_root
from sparkmark.sources.fileindex import statuses_text

log = logging.getLogger("sparkmark")

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_GLOB_CHARS = re.compile(r"[*?\[{]")


class Listing:
    """The files under one or more roots, and how they were listed (``mode`` full |
    incremental, ``dirs_listed``, the next ``state``).

    One entry per file and nothing else per file: a file's base path (its root directory, for
    Spark's ``basePath``) is found from the roots when it is read (:meth:`base`), and the
    partition-layout check works on the directories that hold files (``file_dirs``).

    Example: ``list_inputs(spark, ["data/in"], BandOptions()).entries``
    """

    def __init__(self) -> None:
        #: every file listed, as columns (~45 bytes a file: a million listed files are not a
        #: million tuples)
        self.entries = FileColumns()
        self.roots: list[str] = []
        self.dir_roots: list[str] = []       # listed directories (no trailing slash)
        self.file_roots: set[str] = set()    # files given as paths (no basePath)
        self.file_dirs: list[tuple[str, str, str]] = []  # (root, dir, one file path in it)
        #: dir root -> how many files a full listing found under it, none excluded (a read of
        #: that many files from the root may hand Spark the root: :func:`load`)
        self.whole: dict[str, int] = {}
        self.mode = "full"
        self.dirs_listed = 0
        #: LIST requests made on object stores while listing (None: no store counted them)
        self.list_requests: int | None = None
        self.state: ListingState | None = None

    def base(self, path: str) -> str | None:
        """The basePath of a listed file: the root directory it was listed under (the last
        one, when roots overlap), ``None`` for a file given as a path.

        Example: ``listing.base("file:/in/dt=1/a.json") == "file:/in"``
        """
        if path in self.file_roots:
            return None
        for root in reversed(self.dir_roots):
            if path.startswith(root) and path[len(root):len(root) + 1] == "/":
                return root
        return None

    def by_base(self, files: Sequence[FileEntry]) -> dict[str | None, Sequence[FileEntry]]:
        """``files`` grouped by :meth:`base`, in their order.  One listed root and no file
        roots (the common case) is one test of the listing's directories, not one per file.

        Example: ``listing.by_base(files) == {"file:/in": files}``
        """
        if len(self.dir_roots) == 1 and not self.file_roots:
            root = self.dir_roots[0]
            if _all_under(files, root + "/"):
                return {root: files}
        groups: dict[str | None, list[FileEntry]] = {}
        for f in files:
            groups.setdefault(self.base(f.path), []).append(f)
        return dict(groups)


def _all_under(files: Sequence[FileEntry], prefix: str) -> bool:
    """Whether every file's path starts with ``prefix`` (on a FileColumns' directories)."""
    if isinstance(files, FileColumns):
        return files.all_under(prefix)
    return all(f.path.startswith(prefix) for f in files)


def _elapsed_ms(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000) + 1


def list_inputs(spark: "SparkSession | None", paths: Sequence[str], opts: BandOptions, *,
                fast_local: bool = True,
                decide: Callable[[list[str]], tuple[str, ListingState | None]] | None = None,
                listing_ts: int = 0, fs_for: Callable[[str], Any] | None = None) -> Listing:
    """List the files under ``paths`` with :func:`sparkmark.planning.listing.walk`.

    ``decide(roots)`` (given the qualified roots) returns the listing mode (full |
    incremental) and the previous listing state; without it the listing is full.
    ``fs_for(path)`` opens a path's file system (default: the session's, :func:`file_system`;
    the Spark-free new-input check passes ``pyarrow``'s).

    Example: ``list_inputs(spark, ["data/in"], BandOptions()).entries``
    """
    patterns = [glob_to_regex(g) for g in opts.exclusions]
    out = Listing()
    resolved: list[tuple[Any, list[tuple[str, bool, int, int]]]] = []
    list_before: dict[str, tuple[Any, int | None]] = {}  # LIST requests per store, at start
    if fs_for is None:
        assert spark is not None, "list_inputs needs a session or fs_for"
        open_path: Callable[[str], Any] = functools.partial(file_system, spark)
    else:
        open_path = fs_for
    default: list[str] = []  # fs.defaultFS, asked once and only for a bare path

    def default_once() -> str:
        assert spark is not None  # only asked when there is no fs_for
        if not default:
            default.append(default_fs(spark))
        return default[0]

    plain_local = fast_local and fs_for is None and not compat.is_connect(spark)
    for raw in paths:
        if plain_local:  # a plain local directory: no Hadoop round trips
            local = local_root(str(raw), default_once)
            if local is not None:
                if not local:
                    raise _missing_input(raw)
                resolved.append((None, local))
                continue
        try:
            fs = open_path(raw)
            qualified = fs.qualify(raw)
        except Exception as e:  # noqa: BLE001 - bad scheme, bad URI
            raise SourceError(f"cannot open input path {mask_url(raw)!r}: {java_error_text(e)}; "
                              "check the "
                              "path and its scheme (file:, hdfs:, s3a:, ...)") from None
        if "://" in str(raw) and not str(raw).startswith("file:"):  # object stores count LISTs
            key = fs.store_key()
            if key not in list_before:
                list_before[key] = (fs, fs.list_requests())
        try:
            found = fs.glob(qualified) if _GLOB_CHARS.search(raw) else fs.status_of(qualified)
        except Exception as e:  # noqa: BLE001
            raise SourceError(f"cannot list input path {mask_url(raw)!r}: "
                              f"{storage_error_text(e, raw)}; nothing was read or committed: the "
                              "next run reads the same input") from None
        if not found:
            raise _missing_input(raw)
        resolved.append((fs, found))
    roots = [path for _, found in resolved for path, _, _, _ in found]
    out.roots = roots
    mode, previous = decide(roots) if decide is not None else ("full", None)
    margin = margin_for(roots)
    states = []
    for fs, found in resolved:
        for path, is_dir, size, mtime in found:
            if not is_dir:
                out.entries.append(FileEntry(mtime, path, size))
                out.file_roots.add(path)
                continue
            if fast_local and path.startswith("file:/"):
                lister: Callable = functools.partial(local_level, recurse=opts.recurse)
            else:
                lister = hadoop_level(fs.list_level, path)
            after = (hadoop_after(fs.list_after, path) if hasattr(fs, "list_after")
                     and mode == "lexical" else None)
            lister = listing_progress.counting(lister, path)  # long listings show progress
            t0 = time.monotonic()
            with gc_paused():
                res = walk([path], lister, recurse=opts.recurse, previous=previous, mode=mode,
                           listing_ts=listing_ts, started_ms=int(time.time() * 1000),
                           margin_ms=margin,
                           took_ms=functools.partial(_elapsed_ms, t0),
                           roots_key=roots, list_after=after,
                           file_names=opts.lexical_file_names,
                           name_counts=functools.partial(_kept, len(path.rstrip("/")) + 1,
                                                         patterns) if patterns else None)
            listing_progress.finish(lister)
            states.append(res.state)
            out.dirs_listed += res.dirs_listed
            root = path.rstrip("/")
            out.dir_roots.append(root)
            if not patterns:
                out.entries.extend(res.files)
                if mode == "full":
                    out.whole[root] = len(res.files)
                out.file_dirs.extend((root, d, f) for d, f in res.file_dirs)
                continue
            cut = len(root) + 1
            kept_dirs: dict[str, str] = {}
            paths = res.files.paths()
            keep = [not excluded(p, p[cut:], patterns) for p in paths]
            out.entries.extend(res.files.where(keep))
            for p in compress(paths, keep):
                kept_dirs.setdefault(p.rpartition("/")[0], p)
            out.file_dirs.extend((root, d, f) for d, f in kept_dirs.items())
    out.mode = mode
    if states:
        out.state = merge_states(states)
    counted = [(fs.list_requests(), before) for fs, before in list_before.values()
               if before is not None]
    if counted:
        out.list_requests = sum((after or 0) - before for after, before in counted)
    return out


def _missing_input(raw: str) -> SourceError:
    return SourceError(f"input path {mask_url(raw)!r} does not exist (or matches no file); check "
                       "the path, or create the directory before the first run")


def _kept(cut: int, patterns: list, path: str) -> bool:
    """Whether ``exclusions`` keep the file (for lexicalFileNames' greatest name)."""
    return not excluded(path, path[cut:], patterns)


_STAT_EACH_UP_TO = 256  # files of one remote folder checked by a status each, else a listing


def _stat_each(fs: Any, paths: Sequence[str]) -> dict[str, tuple[int, int]]:
    """``{path: (size, mtime)}`` by one status call per path, eight at a time (py4j and
    pyarrow both serve calls from several threads); a path that is gone is left out."""
    from concurrent.futures import ThreadPoolExecutor

    def one(path: str) -> list:
        return fs.status_of(fs.path(path))

    if len(paths) <= 2:
        found = [one(p) for p in paths]
    else:
        with ThreadPoolExecutor(min(8, len(paths))) as pool:
            found = list(pool.map(one, paths))
    return {p: (size, mtime) for statuses in found for p, _, size, mtime in statuses}


def changed_files(spark: "SparkSession", files: Sequence[FileEntry]) -> list[str]:
    """The files among ``files`` whose mtime or size is not what the listing showed (a file
    appended to or rewritten while the run read it).  A file that is gone now is not counted:
    whatever the run read of it cannot be read again."""
    out: list[str] = []
    local: Sequence[FileEntry] = files  # all local (a local read): no copy of a million
    remote: list[FileEntry] = []
    if not _all_under(files, "file:/"):
        local = [f for f in files if f.path.startswith("file:/")]
        remote = [f for f in files if not f.path.startswith("file:/")]
    changed, local = _changed_in_jvm(spark, local)
    out.extend(changed)
    for f in local:
        try:
            st = os.stat(f.path[len("file:"):])
        except FileNotFoundError:
            continue
        except OSError:
            out.append(f.path)
            continue
        if st.st_mtime_ns // 1_000_000 != f.mtime or st.st_size != f.size:
            out.append(f.path)
    by_dir: dict[str, list[FileEntry]] = {}
    for f in remote:
        by_dir.setdefault(f.path.rsplit("/", 1)[0], []).append(f)
    for d, entries in by_dir.items():
        try:
            fs = file_system(spark, d)
            if len(entries) <= _STAT_EACH_UP_TO:
                # a status per file, a few at a time: on S3 a HEAD each (tens of ms) instead of
                # listing the folder, which costs a LIST page per 1,000 keys however few changed
                now = _stat_each(fs, [f.path for f in entries])
            else:
                now = {p: (size, mtime) for p, size, mtime in
                       fs.list_tree(d, descend=lambda _name: False, skip=lambda _name: False)}
        except Exception:  # noqa: BLE001 - the directory is gone: nothing to compare
            continue
        for f in entries:
            if f.path in now and now[f.path] != (f.size, f.mtime):
                out.append(f.path)
    return out


#: local files per call of the JVM's check (text of ~0.6 MB: the check runs next to the
#: commit's audit rows, so it keeps its own memory small)
CHECK_CHUNK = 8_192


def _changed_in_jvm(spark: "SparkSession | None", local: Sequence[FileEntry]
                    ) -> tuple[list[str], Sequence[FileEntry]]:
    """:func:`changed_files` for local files, with the stats made in a classic session's
    driver JVM (``SparkmarkFileHelper.changedLocal``, :data:`CHECK_CHUNK` files a call): the paths
    that changed, and the files left for Python to stat (those the JVM could not check; all of
    them without a JVM or on any error).  The Python thread waits on the JVM's answer without
    the interpreter lock, so the commit's audit rows go in meanwhile (the check of
    200,000 files took 0.54 s of Python)."""
    if len(local) < 1_000 or spark is None or compat.is_connect(spark):
        return [], local
    made = helper(spark, "SparkmarkFileHelper")
    if made is None:
        return [], local
    changed: list[str] = []
    unchecked: list[FileEntry] = []
    try:
        for at in range(0, len(local), CHECK_CHUNK):
            chunk = local[at:at + CHECK_CHUNK]
            text = statuses_text(chunk)
            if text.count("\n") != len(chunk) - 1:  # a path with a newline: Python stats them
                unchecked.extend(chunk)
                continue
            for line in made.changedLocal(text).splitlines():
                kind, _, i = line.partition("\t")
                entry = chunk[int(i)]
                if kind == "C":
                    changed.append(entry.path)
                else:
                    unchecked.append(entry)
    except Exception as e:  # noqa: BLE001 - an old helper class, a JVM error: Python stats
        log.debug("the JVM's check of %d local files failed (%s); stat in Python", len(local),
                  java_error_text(e))
        return [], local
    return changed, unchecked


def check_unchanged(spark: "SparkSession", files: Sequence[FileEntry], what: str) -> None:
    """Raise :class:`SourceError` naming the first file that changed since it was listed."""
    changed = changed_files(spark, files)
    if changed:
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        raise SourceError(
            f"input file {changed[0]}{more} of {what} changed (new modification time or size) "
            "while this run read it, so the rows read may be partial; nothing was committed. "
            "Run the job again: the next run reads the file whole, once")


def check_partition_layout(listing: Listing) -> None:
    """Refuse a file that lies beside ``key=value`` folders (``root/x.json`` next to
    ``root/p=1/``): Spark reads such a mix without that file, so it would be recorded as
    processed while never read.  Works on the directories that hold files, not on every file."""
    with_files: dict[tuple[str, str], str] = {}
    with_parts: dict[tuple[str, str], str] = {}
    for base, d, path in listing.file_dirs:
        rel = d[len(base) + 1:] if len(d) > len(base) else ""
        parts = rel.split("/") if rel else []
        with_files.setdefault((base, rel), path)
        for i, name in enumerate(parts):
            if "=" in name:
                with_parts.setdefault((base, "/".join(parts[:i])), name)
    for key, path in with_files.items():
        if key in with_parts:
            rel = path[len(key[0]) + 1:]
            raise SourceError(
                f"input file {path} lies beside partition folders such as {with_parts[key]}/; "
                "Spark leaves such a file out when it reads the partitions, so it would be "
                "counted as processed without being read. Move it into a partition folder, "
                f"or leave it out with options={{'exclusions': '[\"{rel}\"]'}}")
