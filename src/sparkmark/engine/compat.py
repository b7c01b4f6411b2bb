"""Which Spark this is and what it can do: the one place in sparkmark that checks versions.

sparkmark supports Spark 3.5.x (AWS Glue 5, EMR 7, Databricks 15.x LTS) and 4.x.
The rest of the code asks this module instead of comparing version strings itself::

    from sparkmark.engine import compat
    compat.check_supported(spark)            # SparkmarkError on Spark 3.4 or 5.0
    compat.spark_version(spark)              # (3, 5)
    compat.has_data_source(spark, "avro")    # is spark-avro on the classpath?
    compat.xml_format(spark)                 # "xml", or a SourceError naming spark-xml on 3.5
    compat.require(spark, (4, 0), "Spark Connect data sources")

What differs between the two lines, and what sparkmark does about it:

- Avro: neither ships the ``avro`` data source in PySpark's jars.  With spark-avro on the
  classpath Spark's reader is used; otherwise sparkmark's fastavro reader, which runs in Python
  workers through ``mapInArrow`` (Spark 3.3+, classic and Connect), the same code on both.
- XML: built into Spark 4.  On 3.5 it needs the spark-xml package (``com.databricks.spark.xml``),
  found through its ``xml`` short name; without it :func:`xml_format` raises a clear error.
- Everything else sparkmark uses (``Observation``, ``mapInArrow``, ``timestamp_millis``,
  ``unionByName(allowMissingColumns=)``, JDBC, Hadoop FileSystem) is the same on 3.5 and 4.x.
"""
from __future__ import annotations

import re
import weakref
from typing import TYPE_CHECKING, Any, Callable

from sparkmark.core.errors import SourceError, SparkmarkError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_VERSION = (3, 5)
MAX_MAJOR = 4  # 5.x is not supported yet (pyproject: pyspark>=3.5,<5)
SUPPORTED = "Spark 3.5.x and 4.x"
SPARK_XML_VERSION = "0.18.0"  # the last spark-xml release (Spark 3.x, Scala 2.12/2.13)


class UnsupportedSparkError(SparkmarkError):
    """This Spark version (or this feature on this Spark version) is not supported.

    Example: ``compat.require(spark, (4, 0), "x")`` on Spark 3.5 raises it, naming both.
    """


def parse_version(text: str) -> tuple[int, int]:
    """``"3.5.9"`` / ``"4.0.0-preview2"`` / ``"3.5.1-amzn-0"`` to ``(major, minor)``.

    >>> parse_version("3.5.1-amzn-0")
    (3, 5)
    """
    m = re.match(r"\s*(\d+)\.(\d+)", str(text))
    if not m:
        raise UnsupportedSparkError(f"cannot read the Spark version {text!r}; sparkmark supports "
                                    f"{SUPPORTED}")
    return int(m.group(1)), int(m.group(2))


def pyspark_version() -> tuple[int, int]:
    """The installed PySpark's ``(major, minor)``, e.g. ``(3, 5)``; no session needed."""
    import pyspark
    return parse_version(pyspark.__version__)


def spark_version(spark: "SparkSession | None" = None) -> tuple[int, int]:
    """The running Spark's ``(major, minor)`` (the server's over Spark Connect).

    Example: ``if compat.spark_version(spark) >= (4, 0): ...``.  Without a session: PySpark's.
    """
    if spark is None:
        return pyspark_version()
    return parse_version(_session_version(spark))


#: session -> its Spark version: a session's version never changes, and asking costs a py4j
#: round trip (or a Connect request) on every Job()
_VERSIONS: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def _session_version(spark: Any) -> str:
    try:
        return _VERSIONS[spark]
    except (KeyError, TypeError):  # TypeError: an object that takes no weak reference
        pass
    version = str(spark.version)
    try:
        _VERSIONS[spark] = version
    except TypeError:
        pass
    return version


def version_text(spark: "SparkSession | None" = None) -> str:
    """The full version string for messages, e.g. ``"3.5.9"``."""
    if spark is None:
        import pyspark
        return str(pyspark.__version__)
    return _session_version(spark)


def is_spark4(spark: "SparkSession | None" = None) -> bool:
    """Spark 4.0 or newer.  Example: ``compat.is_spark4(spark)``."""
    return spark_version(spark) >= (4, 0)


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no py4j, no JVM on this side).

    Decided by the session's type, not by the process: a test process can hold a classic and
    a Connect session at once.  Example: ``compat.is_connect(spark)``.
    """
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
        if isinstance(spark, ConnectSession):
            return True
    except Exception:  # noqa: BLE001 - the Connect client's packages are not installed
        pass
    return type(spark).__module__.startswith("pyspark.sql.connect")


def spark_conf_getter(spark: Any) -> "Callable[[str], str | None]":
    """A function that reads one conf key of ``spark`` (classic or Connect): its value, or
    None when it is not set (or there is no session).  It asks only when called.

    Example: ``open_store(None, conf=compat.spark_conf_getter(spark))``.
    """
    def get(key: str) -> str | None:
        if spark is None:
            return None
        value = spark.conf.get(key, None)
        return None if value is None else str(value)
    return get


def check_supported(spark: "SparkSession | None" = None) -> tuple[int, int]:
    """Raise :class:`UnsupportedSparkError` unless this is Spark 3.5.x or 4.x; return the version.

    Example: ``compat.check_supported(spark)`` at the start of a job.
    """
    version = spark_version(spark)
    if version < MIN_VERSION or version[0] > MAX_MAJOR:
        raise UnsupportedSparkError(
            f"sparkmark supports {SUPPORTED}; this is Spark {version_text(spark)}: run it on a "
            "supported Spark (AWS Glue 5, EMR 7, Databricks 15.4 LTS or newer runtimes)")
    return version


def require(spark: "SparkSession | None", minimum: tuple[int, int], feature: str) -> None:
    """Raise :class:`UnsupportedSparkError` when ``feature`` needs a newer Spark than this one.

    Example: ``compat.require(spark, (4, 0), "the Python data source API")``.
    """
    if spark_version(spark) < minimum:
        raise UnsupportedSparkError(
            f"{feature} needs Spark {minimum[0]}.{minimum[1]} or newer; this is Spark "
            f"{version_text(spark)}")


def observation_ready(jo: Any) -> bool:
    """Whether a classic session's Java ``Observation`` has its metrics, without blocking (its
    ``get`` waits for an action that may never come): Spark 4's ``future()``, else Spark 3.5's
    volatile ``metrics`` field.  False when neither answers.

    Example: ``observation_ready(observation._jo)`` after the action that observed it
    """
    try:
        return bool(jo.future().isCompleted())
    except Exception:  # noqa: BLE001 - Spark 3.5: no future(); its metrics field instead
        pass
    try:
        field = jo.getClass().getDeclaredField("metrics")
        field.setAccessible(True)
        return bool(field.get(jo).isDefined())
    except Exception:  # noqa: BLE001 - another Spark: not known, so not ready
        return False


def default_parallelism(spark: "SparkSession") -> int:
    """How many tasks run at once by default (``local[2]``: 2); over Connect, from the conf."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    try:
        return max(1, int(spark.conf.get("spark.default.parallelism", "2") or 2))
    except (TypeError, ValueError):
        return 2


def parse_type(ddl: str) -> Any:
    """A Spark ``DataType`` from a DDL type name such as ``"decimal(7,2)"`` or ``"long"``.

    ``DataType.fromDDL`` is Spark 4 only; 3.5 parses through PySpark's own DDL parser (it
    needs an active SparkContext, as ``fromDDL`` does).  Example: ``compat.parse_type("long")``.
    """
    from pyspark.sql.types import DataType
    from_ddl = getattr(DataType, "fromDDL", None)
    if from_ddl is not None:
        return from_ddl(ddl)
    from pyspark.sql.types import _parse_datatype_string
    return _parse_datatype_string(ddl)


def try_cast(col: Any, dtype: Any) -> Any:
    """Cast where a value that does not fit becomes null instead of an error.

    ``Column.try_cast`` is Spark 4.0+; on 3.5 a plain cast does the same unless ANSI mode is on
    (off by default there).  The method is looked up on the class: ``col.try_cast`` on a 3.5
    Column is a struct-field reference, not a method.  Example:
    ``compat.try_cast(F.col("id"), LongType())``.
    """
    if callable(getattr(type(col), "try_cast", None)):
        return col.try_cast(dtype)
    return col.cast(dtype)


def scala_binary(spark: "SparkSession") -> str:
    """The Scala binary version of Spark's jars (``"2.12"`` or ``"2.13"``), for package names."""
    if not is_connect(spark):
        try:
            jvm: Any = spark.sparkContext._jvm
            text = jvm.scala.util.Properties.versionNumberString()
            major, minor = parse_version(text)
            return f"{major}.{minor}"
        except Exception:  # noqa: BLE001 - fall back to the default build of this Spark
            pass
    return "2.13" if is_spark4(spark) else "2.12"


def avro_package(spark: "SparkSession") -> str:
    """The Maven coordinate of spark-avro for this Spark, e.g.
    ``org.apache.spark:spark-avro_2.12:3.5.9``."""
    version = version_text(spark).split("-")[0]
    return f"org.apache.spark:spark-avro_{scala_binary(spark)}:{version}"


def has_data_source(spark: "SparkSession", name: str) -> bool:
    """Whether Spark can resolve the data source ``name`` (a short name or a class name).

    Example: ``compat.has_data_source(spark, "avro")`` is True only with spark-avro on the
    classpath.  Over Spark Connect (no JVM here) the answer is False: sparkmark then uses its
    own readers, which work everywhere.
    """
    if is_connect(spark):
        return False
    from sparkmark.engine.jvm import has_data_source as lookup
    return lookup(spark, name)


def xml_package(spark: "SparkSession") -> str:
    """The Maven coordinate of spark-xml for this Spark 3.5, e.g.
    ``com.databricks:spark-xml_2.12:0.18.0``."""
    return f"com.databricks:spark-xml_{scala_binary(spark)}:{SPARK_XML_VERSION}"


def xml_format(spark: "SparkSession") -> str:
    """The reader format for XML on this Spark: built in on 4.x; spark-xml on 3.5.

    Example: ``spark.read.format(compat.xml_format(spark)).option("rowTag", "order")``.
    Raises :class:`~sparkmark.core.errors.SourceError` on 3.5 without spark-xml, naming the package.
    """
    if is_spark4(spark) or is_connect(spark):
        return "xml"  # over Connect the server's classpath cannot be checked from here
    if has_data_source(spark, "xml"):
        return "xml"  # spark-xml registers the short name "xml"
    raise SourceError(
        f"format 'xml' on Spark {version_text(spark)} needs the spark-xml package "
        f"(com.databricks.spark.xml; XML is built into Spark only from 4.0): start Spark with "
        f"--packages {xml_package(spark)} (or spark.jars.packages), or on Databricks install "
        "that Maven library on the cluster; see README, 'Spark versions'")


def load_paths(spark: "SparkSession", reader: Any, paths: list[str]) -> Any:
    """``reader.load(paths)``, with the paths handed to the JVM in one py4j call.

    PySpark's classic ``load(list)`` converts a Python list element by element, one py4j round
    trip per path (about 0.15 ms each: 0.15 s for 1,000 new files).  Here the paths travel as
    one newline-joined string that the JVM splits; the result is the same DataFrame.  Over
    Spark Connect (one request anyway), for a few paths, or for a path holding a newline, it
    is ``reader.load(paths)``.

    Example: ``compat.load_paths(spark, spark.read.format("json"), ["file:/in/a.json"])``
    """
    if len(paths) < 8 or is_connect(spark) or any("\n" in p for p in paths):
        return reader.load(paths)
    jvm: Any = spark.sparkContext._jvm
    if jvm is None:
        return reader.load(paths)
    from sparkmark.engine.jvm import java_class
    array = java_class(spark, "java.util.regex.Pattern").compile("\n").split(
        "\n".join(paths), -1)
    return classic_dataframe(spark, reader._jreader.load(array))


def classic_dataframe(spark: "SparkSession", jdf: Any) -> Any:
    """The classic PySpark DataFrame of a JVM ``Dataset<Row>`` (Spark 4's
    ``pyspark.sql.classic.dataframe``, Spark 3.5's ``pyspark.sql.dataframe``).

    Example: ``classic_dataframe(spark, spark._jsparkSession.range(3).toDF())``
    """
    import importlib
    try:
        module = importlib.import_module("pyspark.sql.classic.dataframe")  # Spark 4
    except ImportError:  # Spark 3.5: the classic DataFrame is pyspark.sql.dataframe's
        module = importlib.import_module("pyspark.sql.dataframe")
    return module.DataFrame(jdf, spark)


def _listed_forms(joined: str) -> set[str]:
    r"""Spark's ``inputFiles`` joined by NUL, as the set of paths a listing spells: a local
    file is ``file:///x`` in Spark and ``file:/x`` in a listing.  Rewritten in the one string
    (C speed, not a call per path); a path spelled any other way is kept as Spark spells it.

    >>> sorted(_listed_forms("file:///in/a.json\0s3a://b/in/a.json"))
    ['file:/in/a.json', 's3a://b/in/a.json']
    """
    return set(("\0" + joined).replace("\0file:///", "\0file:/").split("\0")[1:])


#: Spark's paths brought over per py4j call when a root's files are compared with the plan: a
#: million at once took ~200 MB more at the peak of a first run (the string, its copies and a
#: set of new strings); per slice, only the set of the listing's own paths is whole
_COMPARE_CHUNK = 65_536


def load_root(spark: "SparkSession", reader: Any, root: str, paths: list[str]) -> Any | None:
    """``reader.load(root)`` when the files Spark finds under directory ``root`` are exactly
    ``paths`` (set against set), else ``None``: the caller loads ``paths``.

    Spark lists a directory in one call where explicit paths cost it a status and a file-index
    entry each (about 50 us per file: 1.1 s for 20,000 files against 0.2 s for their
    directory), so a run that reads every file under a root hands Spark the root.  The check
    keeps the run's files the ones it planned: a file that arrived, left or was renamed since
    the listing makes the sets differ, and the explicit paths are read instead.  The DataFrame
    keeps the file index built here (Spark does not list again at the action).  Spark's paths
    come over as one string per :data:`_COMPARE_CHUNK` of them and are compared here, not in
    the JVM, whose heap also holds Spark's file index.  Classic sessions only (``None`` over
    Spark Connect).

    Example: ``compat.load_root(spark, spark.read.format("json"), "file:/in", paths)``
    """
    if is_connect(spark) or spark.sparkContext._jvm is None:
        return None
    from sparkmark.engine.jvm import java_class
    try:
        jdf = reader._jreader.load(root)
        files = jdf.inputFiles()
        count = len(files)
        if count != len(paths):
            return None
        # a String[] travels to no java.util method through py4j (String[] is not matched to
        # Object[]); Hadoop's join takes one.  NUL cannot be in a path.
        join = java_class(spark, "org.apache.hadoop.util.StringUtils").join
        remaining = set(paths)  # the listing's own strings: no second copy of a million paths
        if len(remaining) != count:
            return None
        for start in range(0, count, _COMPARE_CHUNK):  # a slice of Spark's String[] at a time
            chunk = files if count <= _COMPARE_CHUNK else files[start:start + _COMPARE_CHUNK]
            theirs = _listed_forms(join("\0", chunk))
            if not remaining.issuperset(theirs):
                return None  # a file Spark found that the listing did not (or found twice)
            remaining.difference_update(theirs)
        if remaining:
            return None  # a listed file Spark did not find
    except Exception:  # noqa: BLE001 - anything odd: the explicit paths decide, as before
        return None
    return classic_dataframe(spark, jdf)
