"""Spark's file index built from the run's own listing: Spark lists nothing again.

A run has listed its input before it reads: every file's path, size and modification time.
Spark's ``spark.read.json(paths)`` would stat each path again (~0.1 ms a file: 0.1 s for 1,000
new files), and ``spark.read.json(root)`` would list the whole directory again (~3 s for
200,000 files). :func:`load_listed` hands Spark the statuses the run already holds instead: it
builds what ``DataFrameReader.load`` builds for a file source (Spark's
``DataSource.resolveRelation``): an ``InMemoryFileIndex`` over the root, whose private
``FileStatusCache`` already holds the files to read, a ``HadoopFsRelation`` with the partition
schema that index infers under ``basePath`` and the data schema given (or inferred by the
format from those files), and the DataFrame of that relation. The plan Spark runs is the one
it runs for the same paths (``FileScan``, the same partitions, ``_metadata`` and
``input_file_name()`` as for explicit paths).

It is used only where that holds: a classic session (Spark Connect has no JVM to hand the
statuses to), one of Spark's own file formats that Spark reads through this path (``json``,
``csv``, ``parquet``, ``orc``, ``text``, as listed in ``spark.sql.sources.useV1SourceList``),
files under a listed root on a store whose statuses carry no block locations Spark schedules
by (``file:``, ``s3a:``, ``gs:``, ``abfs:``...; not HDFS), no newline in a path. Anything else,
and any error while building (a schema that cannot be inferred, a corrupt file, a JVM without
these classes), returns ``None``: the caller reads the paths as before, so errors keep their
messages and their named files.

The statuses are the listing's, so Spark reads each file as it was listed (size included); the
commit's check that no file read changed since the listing (``check_unchanged``) still runs.

Example (``files``: a listing's entries under ``file:/in``)::

    df = load_listed(spark, "json", files, "file:/in", {"basePath": "file:/in"}, None)
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Sequence

from sparkmark.engine.compat import classic_dataframe, is_connect
from sparkmark.engine.jvm import helper, java_class
from sparkmark.planning.filecolumns import FileColumns, FileEntry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

_DATASOURCES = "org.apache.spark.sql.execution.datasources."
#: sparkmark format -> Spark's FileFormat class for it (the V1 read path)
FILE_FORMATS = {
    "json": "json.JsonFileFormat",
    "csv": "csv.CSVFileFormat",
    "parquet": "parquet.ParquetFileFormat",
    "orc": "orc.OrcFileFormat",
    "text": "text.TextFileFormat",
}
#: stores whose statuses Spark schedules by nothing but the path (no HDFS block locations)
SCHEMES = ("file:", "s3a:", "s3:", "s3n:", "gs:", "abfs:", "abfss:", "wasb:", "wasbs:")
_V1_DEFAULT = "avro,csv,json,kafka,orc,parquet,text"
#: the block size the statuses report (that of Hadoop's local and S3A file systems); Spark
#: splits files by ``spark.sql.files.maxPartitionBytes``, not by this
BLOCK_SIZE = 32 * 1024 * 1024
#: files per string sent to the JVM: a million files' statuses are ~80 MB of text, which py4j
#: would copy several times over on both sides if sent at once
CHUNK = 65_536


def usable(spark: "SparkSession", fmt: str, base: str | None) -> bool:
    """Whether :func:`load_listed` may build the read of files under ``base`` in ``fmt``.

    Example: ``usable(spark, "json", "file:/in")`` is ``True`` on a classic session.
    """
    if fmt not in FILE_FORMATS or base is None or not base.startswith(SCHEMES):
        return False
    if is_connect(spark) or spark.sparkContext._jvm is None:
        return False
    conf = spark.conf
    v1 = {s.strip().lower() for s in
          str(conf.get("spark.sql.sources.useV1SourceList", _V1_DEFAULT)).split(",")}
    if fmt not in v1:
        return False
    return fmt != "orc" or str(conf.get("spark.sql.orc.impl", "native")).lower() == "native"


def statuses_text(files: Sequence[FileEntry]) -> str:
    """The listing as the JVM helper reads it: ``size TAB mtime TAB path`` per line.

    >>> statuses_text([FileEntry(5, "file:/in/a.json", 3)])
    '3\\t5\\tfile:/in/a.json'
    """
    if isinstance(files, FileColumns):  # from the columns: no entry made per file
        return "\n".join(map("%d\t%d\t%s".__mod__, zip(
            files.sizes_np().tolist(), files.mtimes_np().tolist(), files.paths())))
    return "\n".join(["%d\t%d\t%s" % (f.size, f.mtime, f.path) for f in files])


def load_listed(spark: "SparkSession", fmt: str, files: Sequence[FileEntry], base: str | None,
                options: dict[str, str], schema: "StructType | None") -> "DataFrame | None":
    """The DataFrame of exactly ``files`` (all under directory ``base``), read in ``fmt`` with
    reader ``options`` (``basePath`` among them) and ``schema`` (``None``: the format infers
    it from these files), without Spark listing them again; ``None`` when it cannot be built
    here (see the module's text): the caller then loads the paths.

    Example: ``load_listed(spark, "json", listing.entries, "file:/in", {"basePath": "file:/in"},
    None)``
    """
    if not files or not usable(spark, fmt, base):
        return None
    try:
        return _build(spark, fmt, files, str(base), options, schema)
    except Exception as e:  # noqa: BLE001 - the caller reads the paths; Spark names the error
        log.debug("sparkmark: Spark's own listing used for %d file(s) under %s: %s",
                  len(files), base, e)
        return None


def _build(spark: "SparkSession", fmt: str, files: Sequence[FileEntry], base: str,
           options: dict[str, str], schema: "StructType | None") -> "DataFrame | None":
    from pyspark.sql.types import StructType
    made = helper(spark, "SparkmarkFileHelper")
    if made is None:
        return None
    jss: Any = spark._jsparkSession
    builder = made.builder()
    for at in range(0, len(files), CHUNK):
        chunk = files[at:at + CHUNK]
        text = statuses_text(chunk)
        if text.count("\n") != len(chunk) - 1:  # a path with a newline: one C-level count
            return None                          # per chunk, not a test per path
        builder.add(text, BLOCK_SIZE)
    statuses = builder.statuses()
    root = java_class(spark, "org.apache.hadoop.fs.Path")(base)
    cache = java_class(spark, _DATASOURCES + "SharedInMemoryCache")(1 << 50, -1) \
        .createForNewClient()
    cache.putLeafFiles(root, statuses)
    utils = java_class(spark, "org.apache.spark.api.python.PythonUtils")
    roots = java_class(spark, "java.util.ArrayList")()
    roots.add(root)

    def scala_map(given: dict[str, str]) -> Any:
        jopts = java_class(spark, "java.util.HashMap")()
        for name, value in given.items():
            jopts.put(name, value)
        return utils.toScalaMap(jopts)
    scala_opts = scala_map(options)
    # basePath = the index's own root: Spark would check that it is a directory (on S3A a
    # LIST request each read); without the option the index takes its root as the base path,
    # so the partitions it infers are the same
    index_opts = {k: v for k, v in options.items()
                  if not (k.lower() == "basepath" and str(v).rstrip("/") == base.rstrip("/"))}
    option = java_class(spark, "scala.Option")
    none = option.empty()
    user = jss.parseDataType(schema.json()) if schema is not None else None
    index = java_class(spark, _DATASOURCES + "InMemoryFileIndex")(
        jss, utils.toSeq(roots), scala_map(index_opts) if index_opts != options else scala_opts,
        option.apply(user) if user is not None else none, cache, none, none)
    partition = index.partitionSchema()
    every = index.allFiles()
    if every.length() != len(files):  # e.g. files below the root with no partition columns:
        return None  # Spark's root index reads the root's own files only, explicit paths all
    file_format = java_class(spark, _DATASOURCES + FILE_FORMATS[fmt])()
    case_options = getattr(java_class(
        spark, "org.apache.spark.sql.catalyst.util.CaseInsensitiveMap$"), "MODULE$").apply(scala_opts)
    sensitive = str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"

    def key(name: str) -> str:
        return name if sensitive else name.lower()

    partition_names = [f["name"] for f in json.loads(partition.json())["fields"]]
    if schema is not None:  # the user's schema without the partition columns (Spark's rule)
        taken = {key(n) for n in partition_names}
        data = jss.parseDataType(
            StructType([f for f in schema.fields if key(f.name) not in taken]).json())
    else:
        inferred = file_format.inferSchema(jss, case_options, every)
        if inferred.isEmpty():
            return None  # Spark's own read says "unable to infer schema"
        data = inferred.get()
    data_names = [f["name"] for f in json.loads(data.json())["fields"]]
    for names in (data_names, partition_names):  # Spark refuses duplicates: let it say so
        if len({key(n) for n in names}) != len(names):
            return None
    relation = java_class(spark, _DATASOURCES + "HadoopFsRelation")(
        index, partition, data.asNullable(), none, file_format, case_options, jss)
    _verify(spark, file_format, relation.dataSchema())
    return classic_dataframe(spark, jss.baseRelationToDataFrame(relation))


def _verify(spark: "SparkSession", file_format: Any, data: Any) -> None:
    """Spark's check that the format can read the schema's types (it raises, and the caller
    falls back to Spark's own read, which raises the same)."""
    utils = java_class(spark, _DATASOURCES + "DataSourceUtils")
    try:
        utils.verifySchema(file_format, data, False)  # Spark 4: (format, schema, readOnly)
    except Exception as e:  # noqa: BLE001
        if "does not exist" not in str(e):
            raise
        utils.verifySchema(file_format, data)  # Spark 3.5: (format, schema)
