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
3. *Read* only the selected files, by path, with ``basePath`` set to the root so partition
   columns are kept.  An old file is never opened.

Bad input is one :class:`SourceError`/:class:`ConfigError` raised before anything is read.
Corrupt input: JSON, CSV and XML are read with ``mode=FAILFAST`` unless ``mode`` is given, so a
malformed record fails the run (schema inference at read time raises a ``SourceError``; with a
given schema the action that consumes the DataFrame fails, e.g. ``job.write`` raises a
``SinkError``), and the bookmark does not move.  Ask for Spark's handling instead with
``mode=PERMISSIVE`` (plus ``columnNameOfCorruptRecord``) or ``mode=DROPMALFORMED``, and
``ignoreCorruptFiles=true`` for unreadable parquet/orc/avro files.
"""
from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import ConfigError, SourceError
from ..formats import PARSED_FORMATS, READ_FORMATS
from ..fs import HadoopFS
from ..jvm import has_data_source, java_error_text
from ..planning.bands import (BandOptions, BandState, FileEntry, excluded, glob_to_regex,
                              plan_all, plan_band, plan_replay, split_options)
from ..run import ReadMode, RunContext

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMATS = READ_FORMATS
_GLOB_CHARS = re.compile(r"[*?\[{]")


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


def _parse_schema(schema: Any):
    from pyspark.sql.types import StructType
    text = str(schema).strip()
    try:
        if text.startswith("{"):
            return StructType.fromJson(json.loads(text))
        from pyspark.sql.types import _parse_datatype_string
        parsed = _parse_datatype_string(text)
    except Exception as e:  # noqa: BLE001 - any parse failure is the user's schema
        raise ConfigError(f"option schema {text[:200]!r} cannot be parsed ({java_error_text(e)}); "
                          "give a DDL string such as 'id INT, name STRING' or a StructType") \
            from None
    if not isinstance(parsed, StructType):
        raise ConfigError(f"option schema {text[:200]!r} is not a list of columns; give a DDL "
                          "string such as 'id INT, name STRING'")
    return parsed


# ---------------------------------------------------------------------- listing
def _hidden(name: str) -> bool:
    """Spark's rule for files and directories it skips."""
    return ((name.startswith("_") and "=" not in name) or name.startswith(".")
            or name.endswith("._COPYING_"))


class Listing:
    """The files under one or more roots, with the base path of each file's root."""

    def __init__(self) -> None:
        self.entries: list[FileEntry] = []
        self.base_of: dict[str, str | None] = {}  # file path -> basePath (None: a file root)
        self.roots: list[str] = []


def list_inputs(spark: "SparkSession", paths: Sequence[str], opts: BandOptions, *,
                fast_local: bool = True) -> Listing:
    patterns = [glob_to_regex(g) for g in opts.exclusions]
    out = Listing()
    for raw in paths:
        try:
            fs = HadoopFS(spark, raw)
            qualified = fs.qualify(raw)
        except Exception as e:  # noqa: BLE001 - bad scheme, bad URI
            raise SourceError(f"cannot open input path {raw!r}: {java_error_text(e)}; check the "
                              "path and its scheme (file:, hdfs:, s3a:, ...)") from None
        try:
            found = fs.glob(qualified) if _GLOB_CHARS.search(raw) else fs.status_of(qualified)
        except Exception as e:  # noqa: BLE001
            raise SourceError(f"cannot list input path {raw!r}: {java_error_text(e)}") from None
        if not found:
            raise SourceError(f"input path {raw!r} does not exist (or matches no file); check "
                              "the path, or create the directory before the first run")
        for path, is_dir, size, mtime in found:
            out.roots.append(path)
            if not is_dir:
                out.entries.append(FileEntry(mtime=mtime, path=path, size=size))
                out.base_of[path] = None
                continue
            if fast_local and path.startswith("file:/"):
                files = _list_local(path, opts.recurse)
            else:
                files = _list_hadoop(fs, path, opts.recurse)
            root = path.rstrip("/")
            for fpath, size_, mtime_ in files:
                rel = fpath[len(root) + 1:]
                if patterns and excluded(fpath, rel, patterns):
                    continue
                out.entries.append(FileEntry(mtime=mtime_, path=fpath, size=size_))
                out.base_of[fpath] = root
    return out


def _list_local(root: str, recurse: bool) -> list[tuple[str, int, int]]:
    """``os.scandir`` walk of a ``file:`` directory, same answers as Hadoop's local FS."""
    out = []
    prefix = "file:"
    stack = [root[len(prefix):]]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError as e:
            raise SourceError(f"cannot list directory {d}: {e.strerror}; check its "
                              "permissions") from None
        with it:
            for ent in it:
                name = ent.name
                if _hidden(name):
                    continue
                try:
                    if ent.is_dir():
                        if recurse or "=" in name:
                            stack.append(f"{d.rstrip('/')}/{name}")
                        continue
                    st = ent.stat()
                except FileNotFoundError:
                    continue  # removed while listing
                out.append((f"{prefix}{d.rstrip('/')}/{name}", st.st_size,
                            st.st_mtime_ns // 1_000_000))
    return out


def _list_hadoop(fs: HadoopFS, root: str, recurse: bool) -> list[tuple[str, int, int]]:
    """Level by level through Hadoop: one ``listStatus(Path[])`` call per depth, not per file."""
    try:
        return fs.list_tree(root, descend=lambda name: recurse or "=" in name, skip=_hidden)
    except Exception as e:  # noqa: BLE001
        raise SourceError(f"cannot list {root}: {java_error_text(e)}") from None


# ---------------------------------------------------------------------- reading
def has_spark_avro(spark: "SparkSession") -> bool:
    """Whether Spark's ``avro`` data source (the spark-avro module) can be looked up."""
    return has_data_source(spark, "avro")


_registered: set[int] = set()


def _register_avro(spark: "SparkSession") -> None:
    key = id(spark._jsparkSession)
    if key not in _registered:
        from .avro import AvroDataSource
        spark.dataSource.register(AvroDataSource)
        _registered.add(key)


def load(spark: "SparkSession", fmt: str, files: Sequence[FileEntry], listing: Listing,
         opts: dict[str, str], schema, fallback_schema=None) -> "DataFrame":
    """Read exactly ``files`` (by path); partition columns come from each root's basePath."""
    from pyspark.sql.types import StructType
    if not files:
        use = schema if schema is not None else fallback_schema
        if fmt == "text" and use is None:
            use = StructType.fromDDL("value STRING")
        return spark.createDataFrame([], use if use is not None else StructType([]))
    groups: dict[str | None, list[str]] = {}
    for f in files:
        groups.setdefault(listing.base_of.get(f.path), []).append(f.path)
    frames = []
    avro_fallback = fmt == "avro" and not has_spark_avro(spark)
    for base, paths in groups.items():
        if avro_fallback:
            frames.append(_load_avro_fallback(spark, paths, base, schema, opts))
            continue
        reader = spark.read.format(fmt).options(**opts)
        if base is not None and not any(k.lower() == "basepath" for k in opts):
            reader = reader.option("basePath", base)
        if schema is not None:
            reader = reader.schema(schema)
        try:
            with _serial_listing(spark, len(paths)):
                frames.append(reader.load(paths))
        except Exception as e:  # noqa: BLE001
            raise SourceError(f"cannot read the {fmt} input ({len(paths)} new file(s) under "
                              f"{base or paths[0]}): {java_error_text(e)}; fix or remove the file, "
                              "or see docs/files.md for PERMISSIVE/ignoreCorruptFiles") from None
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other, allowMissingColumns=True)
    return df


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
    from .avro import AvroSchemaError, NAME, file_schema
    bad = [p for p in paths if not p.startswith("file:")]
    if bad:
        raise SourceError(
            f"reading avro from {bad[0]} needs the spark-avro package (the built-in fallback "
            "reads local files only): start Spark with --packages "
            "org.apache.spark:spark-avro_2.13:<your Spark version>")
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
    _register_avro(spark)
    parts = max(1, min(len(paths), spark.sparkContext.defaultParallelism * 2))
    reader = (spark.read.format(NAME).option("paths", json.dumps(paths))
              .option("numPartitions", str(parts)))
    if base is not None:
        reader = reader.option("basePath", base)
    if schema is not None:
        reader = reader.option("schema", schema.json())
    try:
        return reader.load()
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
    opts, schema = reader_options(fmt, rest)
    paths = _as_paths(path)
    listing = list_inputs(run.spark, paths, band_opts)

    bookmark = run.bookmark(transformation_ctx)
    info: dict[str, Any] = {"format": fmt, "path": paths if len(paths) > 1 else paths[0],
                            "read": str(bookmark.mode)}
    previous = None
    plan = None
    selected: list[FileEntry]
    if bookmark.mode is ReadMode.ALL:
        selected = list(plan_all(listing.entries))
    elif bookmark.mode is ReadMode.REPLAY:
        previous = BandState.from_element(bookmark.previous)
        selected = list(plan_replay(listing.entries, previous,
                                    BandState.from_element(bookmark.upper)))
    else:
        previous = BandState.from_element(bookmark.previous)
        assert bookmark.listing_ts is not None  # set for every incremental bookmark
        plan = plan_band(listing.entries, previous, bookmark.listing_ts, band_opts)
        selected = list(plan.selected)
        info.update(plan.info())
    df = load(run.spark, fmt, selected, listing, opts, schema, _stored_schema(previous))
    info.setdefault("files", len(selected))
    info.setdefault("bytes", sum(f.size for f in selected))
    info["new_input"] = bool(selected)
    info["listed"] = len(listing.entries)
    info["sample"] = [f.path.rsplit("/", 1)[-1] for f in selected[:10]]
    element = None
    if plan is not None:  # incremental: the element to commit (saved when enabled)
        state = plan.state
        if df.columns:  # the columns an empty run returns (see docs/files.md)
            state = BandState(low=state.low, high=state.high, listing_ts=state.listing_ts,
                              band=state.band, files=state.files,
                              extra={**dict(state.extra), "schema": df.schema.json()})
        element = state.to_element()
    run.record_read(transformation_ctx, element, info)
    return df


def _stored_schema(state: BandState | None):
    if state is None or not state.extra.get("schema"):
        return None
    from pyspark.sql.types import StructType
    try:
        return StructType.fromJson(json.loads(state.extra["schema"]))
    except Exception:  # noqa: BLE001 - an unreadable schema only loses the empty-run columns
        return None
