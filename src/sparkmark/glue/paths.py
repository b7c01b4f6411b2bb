"""S3 paths outside AWS: ``s3://`` becomes ``s3a://``, or a local folder via a mapping file.

Env ``SPARKMARK_PATH_MAP`` names a JSON or YAML file ``{"s3://bucket/prefix": "/local/dir"}``.
The longest matching prefix wins (matched on whole path segments; ``s3://``, ``s3a://`` and
``s3n://`` are the same bucket); a relative local folder is relative to the mapping file.  A path
no entry matches keeps its place: ``s3://`` and ``s3n://`` are rewritten to ``s3a://`` (Hadoop's
S3 connector), anything else is used as it is.  :func:`map_path` is pure.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.glue._common import load_mapping_file

PATH_MAP_ENV = "SPARKMARK_PATH_MAP"
_S3 = re.compile(r"^s3[an]?://", re.IGNORECASE)


def _canon(uri: str) -> str:
    """``s3a://b/p/`` -> ``s3://b/p`` (the form prefixes are compared in)."""
    uri = uri.strip()
    if _S3.match(uri):
        uri = "s3://" + uri.split("://", 1)[1]
    return uri.rstrip("/") if len(uri.split("://", 1)[-1].rstrip("/")) else uri


def parse_path_map(data: Mapping[str, Any], base_dir: str | None = None,
                   source: str = "path map") -> list[tuple[str, str]]:
    """Validate a path map; returns ``(prefix, target)`` pairs, longest prefix first."""
    out = []
    for key, value in dict(data).items():
        if not isinstance(key, str) or "://" not in key or not key.split("://", 1)[1].strip("/"):
            raise ConfigError(f"{source}: key {key!r} is not a URI prefix such as "
                              "'s3://bucket/prefix'; fix the mapping file")
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{source}: {key!r} maps to {value!r}; give a local folder (or "
                              "another URI) as a string")
        target = value.strip()
        if "://" not in target and not target.startswith("file:") and not os.path.isabs(target):
            target = os.path.normpath(os.path.join(base_dir or os.getcwd(), target))
        out.append((_canon(key), target.rstrip("/") or target))
    out.sort(key=lambda kv: len(kv[0]), reverse=True)
    return out


def map_path(path: str, mapping: Sequence[tuple[str, str]] = ()) -> str:
    """Where ``path`` lives outside AWS (see the module docstring).

        map_path("s3://b/raw/x", [("s3://b", "/lake")])  # "/lake/raw/x"
    """
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"path {path!r} is empty; give an s3:// URI or a local path")
    raw = path.strip()
    canon = _canon(raw)
    for prefix, target in mapping:
        if canon == prefix or canon.startswith(prefix + "/"):
            rest = canon[len(prefix):]
            return target + rest
    if _S3.match(raw):
        return "s3a://" + raw.split("://", 1)[1]
    return raw


def mapped_root(path: str, mapping: Sequence[tuple[str, str]] = ()) -> str | None:
    """The local target of the mapping entry that ``path`` falls under, or ``None`` (pure).

        mapped_root("s3://b/raw/x", [("s3://b", "/lake")])   # "/lake"
    """
    canon = _canon(path)
    for prefix, target in mapping:
        if canon == prefix or canon.startswith(prefix + "/"):
            return target
    return None


def load_path_map(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The mapping named by env ``SPARKMARK_PATH_MAP`` (empty when unset).

        load_path_map()  # [('s3://b', '/lake')] from env SPARKMARK_PATH_MAP
    """
    env = os.environ if env is None else env
    name = env.get(PATH_MAP_ENV)
    if not name:
        return []
    data = load_mapping_file(name, "path map", PATH_MAP_ENV)
    return parse_path_map(data, os.path.dirname(os.path.abspath(name)),
                          source=f"path map {name!r}")


def resolve(path: str) -> str:
    """``map_path`` with the mapping from the environment.

        resolve("s3://b/raw")  # "/lake/raw" with the mapping above
    """
    return map_path(path, load_path_map())
