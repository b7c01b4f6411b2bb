"""What the iceberg and s3files jobs need of their environment: whether this Python can run
them (the jars, ``weed``), and the ``spark-defaults.conf`` under a schedule's SPARK_CONF_DIR
that hands the catalog or the s3a settings to the workers and the CLI, as a user's would.

    from chaos_harness.environment import s3files_unavailable
    why = s3files_unavailable()  # None, or "--jobs s3files: ..." (no s3a jars or no weed)
"""
from __future__ import annotations

from pathlib import Path


def iceberg_unavailable() -> str | None:
    """Why the iceberg job kind cannot run in this Python (None when it can)."""
    from sparkmark.devtools.iceberg import iceberg_jars
    try:
        iceberg_jars(fetch=False)
    except LookupError as e:  # no runtime for this Spark line: .venv35 or .venv41 have one
        return f"--jobs iceberg: {e}: run chaos.py with .venv35/bin/python or .venv41/bin/python"
    except FileNotFoundError as e:
        return f"--jobs iceberg: {e}"
    return None


def write_spark_defaults(conf_dir: Path, warehouse: Path) -> None:
    """``spark-defaults.conf`` with the Iceberg jars and the Hadoop catalog ``local`` on
    ``warehouse``: how a user hands the catalog to the CLI (``bookmark reset --remove-output``)
    and to a script started with plain ``python`` (SPARK_CONF_DIR)."""
    from crash import iceberg_conf
    conf_dir.mkdir(parents=True, exist_ok=True)
    conf = iceberg_conf(str(warehouse))
    (conf_dir / "spark-defaults.conf").write_text(
        "".join(f"{k} {v}\n" for k, v in sorted(conf.items())))


def write_s3_spark_defaults(conf_dir: Path, server) -> None:
    """``spark-defaults.conf`` with the s3a jars and the SeaweedFS endpoint, credentials and
    path-style access: how a user hands them to a script started with plain ``python`` and to
    the CLI (SPARK_CONF_DIR)."""
    from sparkmark.devtools.s3 import s3a_jars, s3a_session_conf
    from sparkmark.engine.spark import jdbc_jars
    conf = {**s3a_session_conf(jars=s3a_jars(fetch=False)), **server.spark_conf()}
    conf["spark.jars"] = ",".join(jdbc_jars() + s3a_jars(fetch=False))
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "spark-defaults.conf").write_text(
        "".join(f"{k} {v}\n" for k, v in sorted(conf.items())))


def s3files_unavailable() -> str | None:
    """Why the ``s3files`` job cannot run here (no s3a jars or no ``weed``), or None."""
    from sparkmark.devtools.s3 import s3a_jars, weed_binary
    try:
        s3a_jars(fetch=False)
        weed_binary()
    except FileNotFoundError as e:
        return f"--jobs s3files: {e}"
    return None
