"""Reading for ``job.read.files``: the reader options, and Spark reading exactly the files the
plan selected (never an old one).

:func:`load` hands Spark the run's listing as its file index (:mod:`sparkmark.sources.fileindex`)
or, where that does not apply, the files by path (or their root, when Spark finds exactly them
there), with ``basePath`` set so partition columns are kept.  :func:`reader_options` turns the
user's options into Spark's (``mode=FAILFAST`` for parsed formats unless given).

Example::

    from sparkmark.sources.file_reading import check_format, load, reader_options
    opts, schema = reader_options(check_format("json"), {"multiLine": True})
    df = load(spark, "json", files, listing, opts, schema)
"""
from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any, Callable, Sequence

from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.core.formats import PARSED_FORMATS, READ_FORMATS
from sparkmark.engine import compat
from sparkmark.engine.jvm import java_error_text
from sparkmark.planning.bands import FileEntry
from sparkmark.planning.schema_drift import name_paths
from sparkmark.sources.drift import PROBE_LIMIT
from sparkmark.sources.file_listing import Listing
from sparkmark.sources.fileindex import load_listed

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMATS = READ_FORMATS
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
