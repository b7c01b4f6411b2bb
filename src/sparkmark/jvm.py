"""The JVM plumbing for classic (py4j) Spark sessions: the one place where a Java exception
becomes a message, and where Spark's own data-source registry is asked.

    >>> from sparkmark.jvm import java_error_text
    >>> try:
    ...     spark.read.parquet("/no/such/dir").count()
    ... except Exception as e:
    ...     print(java_error_text(e))          # "[PATH_NOT_FOUND] Path does not exist: ..."

Messages keep the Java exception's own words (and those of its causes, up to four), never the
stack trace.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def java_error_text(error: BaseException, *, limit: int = 800) -> str:
    """The useful part of a Spark/py4j error: the Java exception's messages, not its trace.

    For a ``Py4JJavaError`` this is the chain of messages of the exception and its causes
    (``outer <- cause``); for anything else, the first line of its text that is not a stack
    frame.
    """
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            messages: list[str] = []
            cause: Any = java
            while cause is not None and len(messages) < 4:
                msg = cause.getMessage()
                if msg:
                    line = str(msg).strip().splitlines()[0] if str(msg).strip() else ""
                    if line and line not in messages:
                        messages.append(line)
                cause = cause.getCause()
            if messages:
                return " <- ".join(messages)[:limit]
        except Exception:  # noqa: BLE001 - the JVM may be gone; fall back to the text
            pass
    text = str(error).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace", "\tat ")):
            return line[:limit]
    return type(error).__name__


def is_classic(spark: "SparkSession") -> bool:
    """Whether ``spark`` is a classic session with a py4j gateway (not Spark Connect)."""
    try:
        return getattr(spark, "_jvm", None) is not None or spark.sparkContext is not None
    except Exception:  # noqa: BLE001 - Connect sessions raise on .sparkContext
        return False


def has_data_source(spark: "SparkSession", name: str) -> bool:
    """Whether Spark can look up the data source ``name`` (e.g. ``"avro"`` from spark-avro)."""
    try:
        jvm: Any = spark.sparkContext._jvm
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            name, spark._jsparkSession.sessionState().conf())
        return True
    except Exception:  # noqa: BLE001 - DATA_SOURCE_NOT_FOUND / AVRO_DATA_SOURCE_NOT_ENABLED
        return False
