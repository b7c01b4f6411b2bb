"""``job.read.files``: bookmarked file sources (SPEC §3), thin adapters around the pure planner.

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
"""
from __future__ import annotations

import functools
import json
import os
import logging
import re
import time
from array import array
from itertools import compress
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, overload

from sparkmark.engine import compat

from sparkmark.core import listing_progress
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.core.formats import PARSED_FORMATS, READ_FORMATS
from sparkmark.engine.fs import default_fs, file_system, storage_secrets
from sparkmark.engine.gcpause import gc_paused
from sparkmark.engine.jvm import helper, java_error_text, storage_error_text
from sparkmark.planning.bands import (BandOptions, BandState, FileEntry, excluded, glob_to_regex,
                              Plan, plan_all, plan_band, plan_replay, split_options)
from sparkmark.planning.filecolumns import FileColumns, total_size
from sparkmark.planning.latefiles import SAMPLE, LatePlan, SettledSketch, path_keys, plan_late
from sparkmark.planning.listing import ListingState, choose_listing, margin_for, merge_states, walk
from sparkmark.planning.rewrites import RewritePlan, plan_rewrites
from sparkmark.core.run import FileRead, ReadMode, RunContext, add_verifying_check
from sparkmark.planning.schema_drift import name_paths, skip_hint, split_drift_option
from sparkmark.core.secrets import mask_url
from sparkmark.sources.dirlisting import hadoop_after, hadoop_level, local_level, local_root
from sparkmark.sources.drift import PROBE_LIMIT, known_from_element, known_json, read_drift
from sparkmark.sources.fileindex import load_listed, statuses_text

log = logging.getLogger("sparkmark")

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMATS = READ_FORMATS
_GLOB_CHARS = re.compile(r"[*?\[{]")
_HADOOP_GLOB_SPECIAL = re.compile(r"([{}\[\]*?\\])")


def escape_glob(path: str) -> str:
    r"""A listed file's path as a Hadoop glob that matches only that file.

    Spark expands every path it is given as a glob, so ``c[1].json`` would read ``c1.json``
    and ``a*.json`` its neighbours.  Hadoop's glob syntax escapes a character with a backslash.

    >>> print(escape_glob("file:/in/report[final].json"))
    file:/in/report\[final\].json
    """
    return _HADOOP_GLOB_SPECIAL.sub(r"\\\1", path)


# ---------------------------------------------------------------------- options
def check_format(fmt: Any) -> str:
    name = str(fmt or "").strip().lower()
    if name not in FORMATS:
        raise SourceError(f"unknown file format {fmt!r}; use one of {', '.join(FORMATS)}")
    return name


def reader_options(fmt: str, options: dict[str, Any]) -> tuple[dict[str, str], Any]:
    """Spark reader options as strings, plus the ``schema`` option (DDL, JSON or StructType)."""
    from pyspark.sql.types import StructType
    opts: dict[str, str] = {}
    schema = None
    for key, value in options.items():
        if key.lower() == "schema":
            schema = value
            continue
        if key.lower() == "badrecordspath":
            raise ConfigError(
                "option badRecordsPath is a Databricks option that open-source Spark ignores; "
                "use mode=PERMISSIVE with columnNameOfCorruptRecord to keep bad records, or "
                "mode=DROPMALFORMED to drop them")
        if key.lower() in ("path", "paths"):
            raise ConfigError(f"option {key!r} is not allowed: give the input as the path "
                              "argument of job.read.files")
        opts[key] = str(value).lower() if isinstance(value, bool) else str(value)
    if fmt == "xml" and not any(k.lower() == "rowtag" for k in opts):
        raise ConfigError("format 'xml' needs the rowTag option (the element that is one row), "
                          "e.g. options={'rowTag': 'order'}")
    if fmt in PARSED_FORMATS and not any(k.lower() == "mode" for k in opts):
        opts["mode"] = "FAILFAST"
    if schema is not None and not isinstance(schema, StructType):
        schema = _parse_schema(schema)
    return opts, schema


@functools.lru_cache(maxsize=64)
def _ddl_json(text: str) -> str:
    """A DDL schema as Spark's JSON for it.  Spark's DDL parser is in the JVM (three py4j round
    trips, ~2-3 ms); a process that runs the same job again (a pipeline, a scheduler's worker)
    parses each schema once.  Failures are not cached."""
    from pyspark.sql.types import _parse_datatype_string
    return _parse_datatype_string(text).json()


def _parse_schema(schema: Any):
    from pyspark.sql.types import StructType
    text = str(schema).strip()
    try:
        if text.startswith("{"):
            return StructType.fromJson(json.loads(text))
        from pyspark.sql.types import _parse_datatype_json_string
        parsed = _parse_datatype_json_string(_ddl_json(text))
    except Exception as e:  # noqa: BLE001 - any parse failure is the user's schema
        raise ConfigError(f"option schema {text[:200]!r} cannot be parsed ({java_error_text(e)}); "
                          "give a DDL string such as 'id INT, name STRING' or a StructType") \
            from None
    if not isinstance(parsed, StructType):
        raise ConfigError(f"option schema {text[:200]!r} is not a list of columns; give a DDL "
                          "string such as 'id INT, name STRING'")
    return parsed


# ---------------------------------------------------------------------- listing
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
        #: million tuples, issue 26)
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
        if plain_local:  # a plain local directory: no Hadoop round trips (issue 26)
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
    the interpreter lock, so the commit's audit rows go in meanwhile (issue 26: the check of
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


# ---------------------------------------------------------------------- reading
def has_spark_avro(spark: "SparkSession") -> bool:
    """Whether Spark's ``avro`` data source (the spark-avro module) can be looked up."""
    return compat.has_data_source(spark, "avro")


#: from how many files a read of every file under a root hands Spark the root (fewer: the
#: explicit paths cost no more than the check)
WHOLE_ROOT_MIN = 256


def load(spark: "SparkSession", fmt: str, files: Sequence[FileEntry], listing: Listing,
         opts: dict[str, str], schema, fallback_schema=None, *,
         hint: Callable[[list[str]], str] | None = None) -> "DataFrame":
    """Read exactly ``files`` (by path); partition columns come from each root's basePath.

    When ``files`` are every file a full listing found under a root (a first run, say), Spark
    gets the root instead of the paths, if it finds the same files there
    (:func:`sparkmark.engine.compat.load_root`).

    A read that fails names the file(s) that fail (each probed alone when several were read)
    and, with ``hint``, the way out (``hint(paths)``: the ``bookmark set`` command)."""
    from pyspark.sql.types import StringType, StructField, StructType
    read_format = compat.xml_format(spark) if fmt == "xml" else fmt  # spark-xml on 3.5
    if not files:
        use = schema if schema is not None else fallback_schema
        if fmt == "text" and use is None:
            use = StructType([StructField("value", StringType(), True)])
        return spark.createDataFrame([], use if use is not None else StructType([]))
    groups = listing.by_base(files)
    frames = []
    avro_fallback = fmt == "avro" and not has_spark_avro(spark)
    for base, group in groups.items():
        if avro_fallback:
            frames.append(_load_avro_fallback(spark, [f.path for f in group], base, schema,
                                              opts))
            continue
        with_base = dict(opts)
        if base is not None and not any(k.lower() == "basepath" for k in opts):
            with_base["basePath"] = base
        with _serial_listing(spark, len(group)):  # (JSON/CSV inference reads by path)
            listed = load_listed(spark, fmt, group, base, with_base, schema)
        if listed is not None:  # Spark got the run's listing: it lists nothing again
            frames.append(listed)
            continue
        paths = [f.path for f in group]
        reader = spark.read.format(read_format).options(**with_base)
        if schema is not None:
            reader = reader.schema(schema)
        try:
            with _serial_listing(spark, len(paths)):
                frame = None
                if base is not None and len(paths) >= WHOLE_ROOT_MIN and \
                        listing.whole.get(base) == len(paths):  # every file under the root
                    frame = compat.load_root(spark, reader, escape_glob(base), paths)
                if frame is None:
                    frame = compat.load_paths(spark, reader, [escape_glob(p) for p in paths])
                frames.append(frame)
        except Exception as e:  # noqa: BLE001
            bad = _failing_files(spark, reader, paths) if len(paths) > 1 else paths
            named = (f"file {bad[0]}" if len(bad) == 1 else f"files {name_paths(bad)}"
                     ) if bad else f"{len(paths)} new file(s) under {base or paths[0]}"
            way_out = f"; or {hint(bad)}" if hint is not None and bad else ""
            raise SourceError(f"cannot read the {fmt} input ({named}): {java_error_text(e)}; "
                              "nothing was committed. Fix or remove the file, see docs/files.md "
                              f"for schemaEvolution/PERMISSIVE/ignoreCorruptFiles{way_out}"
                              ) from None
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other, allowMissingColumns=True)
    return df


def _failing_files(spark: "SparkSession", reader: Any, paths: Sequence[str]) -> list[str]:
    """The files among ``paths`` that fail alone (the first :data:`PROBE_LIMIT` probed)."""
    bad = []
    for p in paths[:PROBE_LIMIT]:
        try:
            compat.load_paths(spark, reader, [escape_glob(p)])
        except Exception:  # noqa: BLE001 - this one is (one of) the culprits
            bad.append(p)
    return bad


_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


class _serial_listing:
    """Spark lists more than 32 explicit paths with a distributed job (one task per path, tens
    of seconds for a thousand files).  The paths are files we just listed, so let the driver
    stat them instead: the threshold is raised while the DataFrame is created (Spark resolves
    the file index eagerly there) and restored right after."""

    def __init__(self, spark: "SparkSession", n: int):
        self.spark, self.n, self.old = spark, n, None

    def __enter__(self):
        if self.n > 32:
            conf = self.spark.conf
            self.old = conf.get(_DISCOVERY_THRESHOLD, None)
            conf.set(_DISCOVERY_THRESHOLD, str(max(self.n + 1, 1_000_000)))
        return self

    def __exit__(self, *exc):
        if self.n > 32:
            if self.old is None:
                self.spark.conf.unset(_DISCOVERY_THRESHOLD)
            else:
                self.spark.conf.set(_DISCOVERY_THRESHOLD, self.old)
        return False


def _load_avro_fallback(spark, paths: list[str], base: str | None, schema, opts) -> "DataFrame":
    from sparkmark.sources.avro import AvroSchemaError, file_schema, read_avro
    bad = [p for p in paths if not p.startswith("file:")]
    if bad:
        raise SourceError(
            f"reading avro from {bad[0]} needs the spark-avro package (the built-in fallback "
            f"reads local files only): start Spark with --packages {compat.avro_package(spark)}")
    ignore = opts.get("ignoreCorruptFiles", "false").lower() == "true"
    if schema is None:
        try:
            file_schema(paths[0])
        except AvroSchemaError as e:
            raise SourceError(f"cannot read avro file {paths[0]}: {e}; the built-in fallback "
                              "reader cannot map it, use spark-avro") from None
        except Exception as e:  # noqa: BLE001
            if not ignore:
                raise SourceError(f"cannot read avro file {paths[0]}: {java_error_text(e)}; fix or "
                                  "remove the file") from None
    parts = max(1, min(len(paths), compat.default_parallelism(spark) * 2))
    try:
        return read_avro(spark, paths, base, schema, num_partitions=parts, ignore_corrupt=ignore)
    except AvroSchemaError as e:
        raise SourceError(f"cannot read the avro input under {base or paths[0]}: {e}") from None
    except Exception as e:  # noqa: BLE001
        raise SourceError(f"cannot read the avro input under {base or paths[0]}: "
                          f"{java_error_text(e)}") from None


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
    """The new input under ``path`` as a DataFrame (SPEC §2, §3). See the module docstring.

    Example: ``read_files(job, "in/orders", format="json", transformation_ctx="src")``
    """
    fmt = check_format(format)
    band_opts, rest = split_options(options)
    drift_mode, rest = split_drift_option(fmt, rest)
    opts, schema = reader_options(fmt, rest)
    paths = _as_paths(path)
    for p in paths:  # s3a keys and tokens never reach the ledger
        run.add_secrets(storage_secrets(run.spark, str(p)))
    bookmark = run.bookmark(transformation_ctx)
    incremental = bookmark.mode is ReadMode.INCREMENTAL
    previous = (BandState.from_element(bookmark.previous)
                if bookmark.mode is not ReadMode.ALL else None)
    sketch = (SettledSketch.from_element(previous.extra.get("late"))
              if incremental and previous is not None else None)
    why = "" if incremental else "bookmarks off" if bookmark.mode is ReadMode.ALL else "replay"

    def decide(roots: list[str]) -> tuple[str, ListingState | None]:
        nonlocal why
        if not incremental:
            return "full", None
        prev = (ListingState.from_element(previous.extra.get("listing"))
                if previous is not None else None)
        mode, why = choose_listing(prev, enabled=band_opts.incremental_listing, roots=roots,
                                   listing_ts=int(bookmark.listing_ts or 0),
                                   interval=band_opts.full_listing_interval,
                                   has_sketch=sketch is not None,
                                   file_names=band_opts.lexical_file_names)
        return mode, prev

    with gc_paused():  # list and plan: a million small tuples, no garbage cycles
        listing = list_inputs(run.spark, paths, band_opts, decide=decide,
                              listing_ts=int(bookmark.listing_ts or 0))
        check_partition_layout(listing)
        if previous is None:  # a run that reads (about) every file: the listing itself in
            # order, once (a view of it is then what the run reads, and a listing that came in
            # another order is not held twice: issue 26)
            listing.entries = listing.entries.in_order()
        info: dict[str, Any] = {"format": fmt, "path": paths if len(paths) > 1 else paths[0],
                                "read": str(bookmark.mode)}
        plan = None
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
            selected = _apply_late(band_opts.late_files, late, selected, info, paths)
            rewrites = _apply_rewrites(run, transformation_ctx, band_opts.on_modified, selected,
                                       info, paths, first=previous is None)
            selected = rewrites.selected
    audit = _audit_rows(selected, late, rewrites)
    if hashes is not None and late is not None and not late.unseen:
        audit = _with_hashes(audit, listing.entries, hashes, int(bookmark.listing_ts or 0),
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
    if plan is not None and late is not None:  # incremental: the element to commit
        extra = {**dict(plan.state.extra), "late": late.sketch.to_element()}
        if listing.state is not None:
            extra["listing"] = ListingState(**{**listing.state.__dict__,
                                               "pending": plan.deferred + plan.waiting}
                                            ).to_element()
        if df.columns:  # the columns an empty run returns (see docs/files.md)
            extra["schema"] = df.schema.json()
        if known_schema is not None:  # schemaEvolution's known schema (docs/files.md)
            extra["known_schema"] = known_schema
        element = BandState(low=plan.state.low, high=plan.state.high,
                            listing_ts=plan.state.listing_ts, band=plan.state.band,
                            files=plan.state.files, extra=extra).to_element()
    run.record_read(transformation_ctx, element, info)
    if element is not None and selected:  # a file changed while read fails the run
        what, spark = f"source {transformation_ctx!r}", run.spark
        # (a view of the columns is read-only: no copy of a million entries)
        chosen = selected if isinstance(selected, FileColumns) else tuple(selected)
        add_verifying_check(run, lambda: check_unchanged(spark, chosen, what))
    return df


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


def _apply_late(mode: str, late: LatePlan, selected: Sequence[FileEntry], info: dict[str, Any],
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


def _apply_rewrites(run: RunContext, ctx: str | None, mode: str, selected: Sequence[FileEntry],
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


def _audit_rows(selected: Sequence[FileEntry], late: LatePlan | None,
                rewrites: RewritePlan | None) -> _AuditRows:
    """What the per-file audit keeps of this read: each file with how it came to be read."""
    kinds = {f.path: "late" for f in (late.late + late.unseen if late is not None else [])}
    kinds.update((f.path, "rewrite") for f in (rewrites.rewritten if rewrites else []))
    return _AuditRows(selected, kinds)


def _with_hashes(audit: _AuditRows, listing: Sequence[FileEntry], hashes: "array[int]",
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


def _stored_schema(state: BandState | None):
    if state is None or not state.extra.get("schema"):
        return None
    from pyspark.sql.types import StructType
    try:
        return StructType.fromJson(json.loads(state.extra["schema"]))
    except Exception:  # noqa: BLE001 - an unreadable schema only loses the empty-run columns
        return None
