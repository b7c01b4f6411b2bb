"""The file system of a file target, for the sinks that write, publish and remove files
(:mod:`sparkmark.sinks.files`): one clear :class:`~sparkmark.core.errors.SinkError` when it
cannot be opened.

Example: ``fs = target_fs(spark, "s3a://lake/out")``
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from sparkmark.core.errors import SinkError
from sparkmark.core.secrets import mask_url
from sparkmark.engine.fs import ArrowFS, HadoopFS, file_system
from sparkmark.engine.jvm import storage_error_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def target_fs(spark: "SparkSession", target: str) -> "HadoopFS | ArrowFS":
    """The file system of a recorded target, or one clear :class:`SinkError` (no connector on
    the classpath, a missing bucket, refused keys, no endpoint).

    Example: ``target_fs(spark, "s3a://lake/out").exists(...)``
    """
    try:
        return file_system(spark, target)
    except Exception as e:  # noqa: BLE001 - ClassNotFoundException for s3a and friends
        text = storage_error_text(e, target)
        if "ClassNotFound" in text or "No FileSystem for scheme" in text:
            text += (" (this Spark session has no connector for the target's scheme: add its "
                     "jars and settings, e.g. spark.jars and spark.hadoop.fs.s3a.* in "
                     "spark-defaults.conf, as for the job itself)")
        raise SinkError(f"cannot open target {mask_url(target)}: {text}; nothing was "
                        "changed") from None
