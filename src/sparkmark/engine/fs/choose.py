"""The one place that chooses a file system by the session's type: :func:`file_system`
(Hadoop's through the JVM for classic sessions, ``pyarrow.fs`` over Spark Connect), and what
looks both ways, :func:`open_fs` and :func:`storage_secrets`.

    fs = file_system(spark, "s3a://bucket/out")
    run.add_secrets(storage_secrets(spark, "s3a://bucket/out"))
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Callable

from sparkmark.engine.compat import is_connect
from sparkmark.engine.fs.arrow import ArrowFS, learn_server_s3, server_s3_conf
from sparkmark.engine.fs.hadoop import HadoopFS
from sparkmark.engine.jvm import java_error_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Hadoop configuration keys whose values are credentials (any bucket's, any connector's)
_SECRET_CONF = (r"^fs\.(s3a|s3|s3n|gs|azure|abfs|oss)\..*(secret\.key|session\.token|access\.key"
                r"|secret|password|token|account\.key.*|sas.*)$")
_SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
               "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN")


def storage_secrets(spark: "SparkSession", path: str) -> dict[str, str]:
    """Credential values for ``path``'s object store that this process knows (the Hadoop
    configuration's ``fs.s3a.*secret.key``/``session.token``/``access.key`` and friends; over
    Spark Connect the ``AWS_*`` variables pyarrow uses), keyed so that
    :meth:`RunContext.add_secrets` scrubs them from every ledger text.  Empty for local paths.

    Example: ``run.add_secrets(storage_secrets(spark, "s3a://lake/in"))``
    """
    scheme = path.partition("://")[0].lower() if "://" in path else ""
    if scheme in ("", "file", "hdfs"):
        return {}
    found: dict[str, str] = {}
    for k in _SECRET_ENV:
        if os.environ.get(k):
            found[f"{k.lower()}_password"] = os.environ[k]
    for i, (k, v) in enumerate(sorted(server_s3_conf().items())):  # a Connect server's s3a settings
        if re.match(_SECRET_CONF, k) and v:
            found[f"server{i}_password"] = v
    if not is_connect(spark):
        try:
            conf = spark.sparkContext._jsc.hadoopConfiguration()
            values = conf.getValByRegex(_SECRET_CONF)
            for i, k in enumerate(values.keySet().toArray()):
                found[f"conf{i}_password"] = str(values.get(k))
        except Exception:  # noqa: BLE001 - the scrubbing must never fail a run
            pass
    return found


def open_fs(spark: "SparkSession", path: str, *, what: str = "path") -> "HadoopFS | ArrowFS":
    """:func:`file_system` for ``path``, or a :class:`SourceError`-free ``ValueError`` naming
    the path when its scheme or URI is bad (callers wrap it in their own error kind)."""
    try:
        return file_system(spark, path)
    except Exception as e:  # noqa: BLE001 - bad scheme, bad URI, missing connector
        raise ValueError(f"cannot open {what} {path!r}: {java_error_text(e)}") from None


#: file systems registered by scheme (:func:`register_scheme`): the one seam a simulation (or
#: a test double) uses to serve a scheme of its own; empty in production
_SCHEMES: dict[str, Callable[[str], Any]] = {}


def register_scheme(scheme: str, factory: Callable[[str], Any] | None) -> None:
    """Serve paths of ``scheme`` (``"sim"`` for ``sim://...``) with ``factory(path)``, an object
    with :class:`HadoopFS`'s interface, whatever the session; ``None`` removes it.  Used by the
    deterministic simulation (``benchmarks/chaos.py --simulate``); production code registers
    nothing, so every other path is chosen by the session's type as before.

    Example: ``register_scheme("sim", lambda path: SimFS(world, path))``
    """
    key = scheme.lower()
    if factory is None:
        _SCHEMES.pop(key, None)
    else:
        _SCHEMES[key] = factory


def file_system(spark: "SparkSession | None", path: str) -> "HadoopFS | ArrowFS":
    """The file system of ``path`` for this session — the one place that chooses by session
    type: Hadoop's through the JVM for classic sessions (every Spark path, with the Hadoop
    configuration's credentials), ``pyarrow.fs`` over Spark Connect (no JVM in this process;
    S3 paths use the Connect server's own ``spark.hadoop.fs.s3a.*`` endpoint and credentials).

    Without a session (``spark=None``: the CLI's dry runs, which never start Spark) it is
    ``pyarrow.fs`` too, with the process's own S3 settings (``AWS_*`` variables).

    Example: ``file_system(spark, "s3a://bucket/out").files("s3a://bucket/out")``.
    """
    if _SCHEMES and "://" in str(path):
        factory = _SCHEMES.get(str(path).partition("://")[0].lower())
        if factory is not None:
            return factory(path)
    if spark is None:
        return ArrowFS(path)
    if is_connect(spark):
        if path.partition("://")[0].lower() in ("s3a", "s3n", "s3"):
            learn_server_s3(spark)
        return ArrowFS(path)
    return HadoopFS(spark, path)

