"""How a ``spark-submit`` launch gets a job script and its state store (pure: no Spark, no
Airflow), for :mod:`sparkmark.integrations.airflow`.

- :func:`script_location`: a script on this worker is checked to exist; ``local:`` (a file on
  every node) and remote URIs (``s3://``, ``s3a://``, ``hdfs://``...) go to spark-submit as
  they are.
- :func:`spark_submit_properties`: the state URL as the Spark conf ``spark.sparkmark.state``
  (and its password as ``spark.sparkmark.state.password``), in a properties file rather than on
  the command line, so that a cluster-mode driver, which does not inherit the submitting
  process's environment, finds the store.

    props = spark_submit_properties("postgresql+psycopg://etl:pw@db/sm", ["--master", "yarn"])
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.state import STATE_CONF, STATE_PASSWORD_CONF, split_password

#: ``scheme:/...``; a scheme has two letters at least, so ``C:/x`` stays a path.
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):/")


def script_location(script: str) -> tuple[str, str]:
    """Where a job script lies: ``("local", path)`` for a path on this worker (a plain path or
    a ``file:`` URI), ``("node", path)`` for ``local:`` (a file already on every node, Spark's
    spelling), ``("remote", script)`` for any other URI (``s3://``, ``s3a://``, ``hdfs://``,
    ``gs://``...): spark-submit fetches it; sparkmark never reads it.

    Example: ``script_location("hdfs://nn/jobs/orders.py") == ("remote",
    "hdfs://nn/jobs/orders.py")``
    """
    m = _URI.match(script)
    if not m:
        return "local", script
    scheme = m.group(1).lower()
    if scheme in ("file", "local"):
        from urllib.parse import unquote, urlsplit
        return ("local" if scheme == "file" else "node"), unquote(urlsplit(script).path)
    return "remote", script


def split_properties_file(args: Sequence[str]) -> tuple[list[str], str | None]:
    """spark-submit arguments without ``--properties-file F``, and F (None when absent).

    Example: ``split_properties_file(["--properties-file", "p.conf", "--master", "yarn"]) ==
    (["--master", "yarn"], "p.conf")``
    """
    out: list[str] = []
    found: str | None = None
    it = iter(args)
    for a in it:
        if a == "--properties-file":
            found = next(it, None)
        elif a.startswith("--properties-file="):
            found = a.split("=", 1)[1]
        else:
            out.append(a)
    return out, found


def _property_value(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ConfigError("the state URL holds a line break; give a URL on one line")
    return value.replace("\\", "\\\\")


def spark_submit_properties(state_url: str, spark_submit_args: Sequence[str] = (),
                            env: Mapping[str, str] | None = None) -> str:
    """The text of the properties file a ``spark-submit`` launch gets (``--properties-file``):
    the properties spark-submit would have read anyway (the ``--properties-file`` among
    ``spark_submit_args``, else ``spark-defaults.conf`` in ``SPARK_CONF_DIR`` or
    ``SPARK_HOME/conf`` of ``env``), then ``spark.sparkmark.state`` (the URL without its
    password) and ``spark.sparkmark.state.password`` (the password, when the URL has one: Spark
    masks a conf named so in its UI, event log and ``--verbose`` output).

    Example: ``"spark.sparkmark.state=postgresql+psycopg://etl@db/sm" in
    spark_submit_properties("postgresql+psycopg://etl:pw@db/sm", [], {})``
    """
    env = os.environ if env is None else env
    _, given = split_properties_file(spark_submit_args)
    text = ""
    if given is not None:
        if not Path(given).is_file():
            raise ConfigError(f"spark_submit_args name --properties-file {given!r}, which "
                              "does not exist on this worker")
        text = Path(given).read_text(encoding="utf-8")
    else:
        conf_dir = env.get("SPARK_CONF_DIR") or (
            os.path.join(env["SPARK_HOME"], "conf") if env.get("SPARK_HOME") else None)
        defaults = Path(conf_dir, "spark-defaults.conf") if conf_dir else None
        if defaults is not None and defaults.is_file():
            text = defaults.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text += "\n"
    bare, password = split_password(state_url)
    text += f"{STATE_CONF}={_property_value(bare)}\n"
    if password is not None:
        text += f"{STATE_PASSWORD_CONF}={_property_value(password)}\n"
    return text
