"""A quiet local SparkSession for the CLI, the demo, tests and benchmarks."""
from __future__ import annotations

import glob
import os
import sys
from typing import Mapping


def jdbc_jars() -> list[str]:
    """JDBC driver jars installed from Debian packages, when present."""
    env = os.environ.get("SPARKMARK_JDBC_JARS")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    found = []
    for pattern in ("/usr/share/java/postgresql.jar", "/usr/share/java/mariadb-java-client.jar",
                    "/usr/share/java/sqlite-jdbc.jar"):
        found.extend(glob.glob(pattern))
    return found


def jar_urls(jars: "list[str]", master: str | None = None) -> list[str]:
    """``jars`` as Spark should be given them for ``master``.  In local mode (``master`` None
    or ``local...``: the executors live in the driver's JVM) a plain path becomes a ``local:``
    URL, which Spark adds to its class loader where the file is, instead of serving each jar
    from the driver and copying it into a temp folder at every start (~660 MB and ~1.5 s for
    the s3a connector's AWS SDK bundle, and a leftover folder whenever a driver is killed).
    Other masters and other schemes keep the jars as they are.

    >>> jar_urls(["/j/a.jar", "hdfs://nn/b.jar"])
    ['local:/j/a.jar', 'hdfs://nn/b.jar']
    >>> jar_urls(["/j/a.jar"], "spark://127.0.0.1:7077")
    ['/j/a.jar']
    """
    if master is not None and not master.startswith("local"):
        return list(jars)
    out = []
    for j in jars:
        if j.startswith("file:"):
            j = j[len("file:"):]
            j = "/" + j.lstrip("/") if j.startswith("//") else j
        out.append("local:" + j if os.path.isabs(j) else j)
    return out


def default_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings of ``spark-defaults.conf`` (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``),
    as spark-submit reads them (``key value``, ``key=value`` or ``key: value`` lines).

    Example: ``default_conf().get("spark.jars", "")``
    """
    env = os.environ if env is None else env
    conf_dir = env.get("SPARK_CONF_DIR") or (
        os.path.join(env["SPARK_HOME"], "conf") if env.get("SPARK_HOME") else "")
    path = os.path.join(conf_dir, "spark-defaults.conf") if conf_dir else ""
    out: dict[str, str] = {}
    if not path or not os.path.isfile(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            for i, c in enumerate(line):
                if c in " \t=:":
                    key, value = line[:i], line[i + 1:].strip().lstrip("=:").strip()
                    out[key] = value
                    break
    return out


def local_session(app_name: str = "sparkmark", *, cores: int = 2, extra_conf: dict | None = None,
                  master: str | None = None):
    """``local[cores]`` Spark with the UI off, few shuffle partitions and WARN logging.

    ``master`` (e.g. ``spark://127.0.0.1:7077``) replaces ``local[cores]``.
    """
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master or f"local[{cores}]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.default.parallelism", str(cores))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", os.environ.get("SPARKMARK_DRIVER_MEMORY", "2g"))
               .config("spark.sql.sources.partitionOverwriteMode", "dynamic"))
    log_conf = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    builder = builder.config("spark.driver.extraJavaOptions",
                             f"-Dlog4j2.configurationFile=file:{log_conf}")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "hostname resolves to loopback"
    # the JDBC drivers join the jars spark-defaults.conf names (the builder's setting would
    # replace them: e.g. the s3a connector a CLI command needs for an s3a target)
    jars = [j for j in default_conf().get("spark.jars", "").split(",") if j.strip()]
    jars += [j for j in jdbc_jars() if j not in jars]
    extra = dict(extra_conf or {})
    if "spark.jars" in extra:  # the caller's list replaces these
        jars = [j for j in extra.pop("spark.jars").split(",") if j.strip()]
    if jars:
        builder = builder.config("spark.jars", ",".join(jar_urls(jars, master)))
    for k, v in extra.items():
        builder = builder.config(k, v)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
