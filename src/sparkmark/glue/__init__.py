"""Run AWS Glue bookmark scripts on open-source Spark: change ``awsglue`` to ``sparkmark.glue``.

    from sparkmark.glue.transforms import *
    from sparkmark.glue.utils import getResolvedOptions
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.job import Job

``GlueContext``, ``Job``, ``getResolvedOptions``, ``DynamicFrame`` and ``ApplyMapping`` (plus a few
simple transforms) are backed by sparkmark's bookmarks (``sparkmark.Job``) and exactly-once
sinks.  Tables named in ``from_catalog`` come from the Spark catalog or from the mapping file in
env ``SPARKMARK_GLUE_CATALOG``; ``s3://`` paths become ``s3a://`` or local folders (env
``SPARKMARK_PATH_MAP``).  Any other part of Glue's API raises a
:class:`GlueUnsupportedError` naming the call and, where there is one, the sparkmark way.
See docs/glue-migration.md.

Importing this package makes ``SparkContext()`` with no arguments work, as in a Glue job: when
Spark is not launched by ``spark-submit`` and neither ``PYSPARK_SUBMIT_ARGS`` nor a
``spark-defaults.conf`` sets a master, it sets ``PYSPARK_SUBMIT_ARGS`` for a quiet local Spark
(master from env ``SPARKMARK_GLUE_MASTER``, else ``MASTER``, else ``local[2]``; UI off; UTC
session time zone like Glue; sparkmark's WARN-level log4j2 configuration; the JDBC driver jars
sparkmark knows about on the class path).
"""
from __future__ import annotations

import os
import shlex
import sys
from typing import Mapping, MutableMapping

from sparkmark.glue._common import GlueUnsupportedAttributeError, GlueUnsupportedError, module_getattr

SUBMIT_ENV = "PYSPARK_SUBMIT_ARGS"
MASTER_ENV = "SPARKMARK_GLUE_MASTER"


def _master_in_defaults(env: Mapping[str, str]) -> bool:
    dirs = [env.get("SPARK_CONF_DIR")]
    if env.get("SPARK_HOME"):
        dirs.append(os.path.join(env["SPARK_HOME"], "conf"))
    for d in dirs:
        if not d:
            continue
        try:
            with open(os.path.join(d, "spark-defaults.conf"), encoding="utf-8") as f:
                if any(line.split()[:1] == ["spark.master"] for line in f):
                    return True
        except OSError:
            continue
    return False


def local_submit_args(env: Mapping[str, str]) -> str | None:
    """The ``PYSPARK_SUBMIT_ARGS`` a Glue script run with plain ``python`` gets, or ``None``
    when Spark is already configured (spark-submit, PYSPARK_SUBMIT_ARGS, spark-defaults.conf)."""
    if env.get("PYSPARK_GATEWAY_PORT") or env.get(SUBMIT_ENV) or _master_in_defaults(env):
        return None
    from sparkmark.engine.spark import default_conf, jar_urls, jdbc_jars
    master = env.get(MASTER_ENV) or env.get("MASTER") or "local[2]"
    args = ["--master", master,
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.ui.showConsoleProgress=false",
            "--conf", "spark.sql.shuffle.partitions=4",
            "--conf", "spark.sql.session.timeZone=UTC"]
    log_conf = os.path.join(os.path.dirname(os.path.dirname(__file__)), "engine", "log4j2.properties")
    if os.path.isfile(log_conf):  # sparkmark's WARN-level logging, as in sparkmark.engine.spark
        args += ["--conf", "spark.driver.extraJavaOptions="
                 f"-Dlog4j2.configurationFile=file:{log_conf}"]
    # --jars replaces the spark.jars of spark-defaults.conf (e.g. the s3a connector): keep them
    jars = [j for j in default_conf(env).get("spark.jars", "").split(",") if j.strip()]
    jars += [j for j in jdbc_jars() if j not in jars]
    if jars:
        args += ["--jars", ",".join(jar_urls(jars, master))]
    args.append("pyspark-shell")
    return " ".join(shlex.quote(a) for a in args)


def configure_local_spark(env: MutableMapping[str, str] | None = None) -> bool:
    """Set ``PYSPARK_SUBMIT_ARGS`` for ``SparkContext()`` (see above); True if it did."""
    env = os.environ if env is None else env
    args = local_submit_args(env)
    if args is None:
        return False
    env[SUBMIT_ENV] = args
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "hostname resolves to loopback" warning
    return True


configure_local_spark()

from sparkmark.glue.dynamicframe import DynamicFrame, DynamicFrameCollection  # noqa: E402

__all__ = ["DynamicFrame", "DynamicFrameCollection", "GlueUnsupportedError",
           "GlueUnsupportedAttributeError", "configure_local_spark"]

__getattr__ = module_getattr("sparkmark.glue", {
    "DynamicFrameReader": "use glueContext.create_dynamic_frame",
    "DynamicFrameWriter": "use glueContext.write_dynamic_frame",
})
