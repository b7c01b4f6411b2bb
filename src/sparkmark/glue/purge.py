"""``glueContext.purge_s3_path`` and ``purge_table``: delete old files, safely.

:func:`purge` lists the files under the given paths (through Hadoop's file system, or
``pyarrow`` over Spark Connect, or the local disk without following links) and deletes those
older than ``retentionPeriod`` hours, refusing file-system roots and paths that leave their
mapped root; a run's staged output (``_sparkmark_staging``) is never deleted.

    deleted = purge(glueContext, ["s3://b/tmp/"], {"retentionPeriod": 0}, "purge_s3_path")
"""
from __future__ import annotations

import logging
import math
import os
import re
import time
from typing import Any

from sparkmark.core.errors import ConfigError
from sparkmark.glue import paths
from sparkmark.glue._common import GlueUnsupportedError, as_options, unsupported_message
from sparkmark.glue.connection_options import GlueSession, check_scheme

_PURGE_IGNORED = ("excludeStorageClasses",)


def purge(glue: GlueSession, raw_paths: list[str], options: Any, call: str) -> list[str]:
    opts = as_options(options, f"{call} options")
    hours = opts.pop("retentionPeriod", 168)
    for key in _PURGE_IGNORED:
        opts.pop(key, None)  # storage classes do not exist outside S3: nothing is excluded
    if opts:
        raise GlueUnsupportedError(unsupported_message(
            f"{call} option(s) {sorted(opts)}", "sparkmark supports retentionPeriod (and "
            "ignores excludeStorageClasses)"))
    try:
        hours_f = float(hours)
    except (TypeError, ValueError, OverflowError):
        hours_f = -1.0
    if not math.isfinite(hours_f) or hours_f < 0 or isinstance(hours, bool):
        raise ConfigError(f"{call}: retentionPeriod must be a number of hours >= 0, not "
                          f"{hours!r}")
    job = glue.sparkmark_job
    now = job.clock() if job is not None else int(time.time() * 1000)
    cutoff = now - int(hours_f * 3_600_000)
    path_map = paths.load_path_map()
    spark = glue.spark_session
    from sparkmark.engine.fs import is_connect
    if is_connect(spark):  # no JVM here: list and delete through pyarrow (sparkmark.engine.fs)
        gone = _purge_without_jvm(spark, raw_paths, path_map, cutoff, call)
        logging.getLogger("sparkmark.glue").info("%s: deleted %d file(s)", call, len(gone))
        return gone
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    deleted: list[str] = []
    for raw in raw_paths:
        target = _purge_target(raw, path_map, call)
        check_scheme(spark, raw, target, ConfigError, call)
        jpath = jvm.org.apache.hadoop.fs.Path(target)
        fs = jpath.getFileSystem(conf)
        qualified = fs.makeQualified(jpath)
        if qualified.isRoot():
            raise ConfigError(f"{call}: refusing to purge {target!r}, a file-system root")
        uri = qualified.toUri()
        if str(uri.getScheme() or "").lower() == "file":
            deleted += _purge_local(str(uri.getPath()), str(qualified.toString()),
                                    paths.mapped_root(raw, path_map), cutoff, call, raw)
            continue
        if not fs.exists(jpath):
            continue
        it = fs.listFiles(jpath, True)
        while it.hasNext():
            st = it.next()
            p = st.getPath()
            if "/_sparkmark_staging/" in p.toString():
                continue  # output of a run that has not committed yet
            if int(st.getModificationTime()) < cutoff:
                fs.delete(p, False)
                deleted.append(p.toString())
    logging.getLogger("sparkmark.glue").info("%s: deleted %d file(s)", call, len(deleted))
    return deleted


def _purge_without_jvm(spark: Any, raw_paths: list[str], path_map: list, cutoff: int,
                       call: str) -> list[str]:
    """``purge_*`` over Spark Connect: the client lists and deletes through the file system
    sparkmark opens for the session (``pyarrow``: the Connect server's S3 endpoint and keys),
    level by level; a run's staged output is spared, a root refused, as on classic sessions."""
    from sparkmark.engine.fs import file_system
    deleted: list[str] = []
    for raw in raw_paths:
        target = _purge_target(raw, path_map, call)
        try:
            fs = file_system(spark, target)
            qualified = str(fs.qualify(target))
        except (OSError, ValueError) as e:
            raise ConfigError(f"{call}: cannot open {raw!r}: {e}") from None
        if _is_root_spelling(qualified):
            raise ConfigError(f"{call}: refusing to purge {target!r}, a file-system root")
        if qualified.startswith("file:"):
            deleted += _purge_local(qualified[len("file:"):], qualified,
                                    paths.mapped_root(raw, path_map), cutoff, call, raw)
            continue
        found = fs.status_of(qualified)
        if not found:
            continue
        level: list[str] = []
        for path, is_dir, _size, mtime in found:
            if is_dir:
                level.append(path)
            elif mtime < cutoff:
                fs.delete(path)
                deleted.append(path)
        while level:
            below: list[str] = []
            for path, is_dir, _size, mtime in fs.list_level(level):
                if is_dir:
                    if path.rstrip("/").rsplit("/", 1)[-1] != "_sparkmark_staging":
                        below.append(path)
                elif mtime < cutoff:
                    fs.delete(path)
                    deleted.append(path)
            level = below
    return deleted


def _purge_local(path: str, shown: str, root: str | None, cutoff: int, call: str,
                 raw: str) -> list[str]:
    """Purge a local folder without following symbolic links: a link (to a folder or a file)
    is neither entered nor deleted, and a folder whose real location is a file-system root or
    outside its mapped root is refused."""
    real = os.path.realpath(path)
    if os.path.dirname(real) == real:
        raise ConfigError(f"{call}: {raw!r} is a file-system root (through a link); refusing "
                          "to purge it")
    if root is not None:
        base = os.path.realpath(root[5:] if root.startswith("file:") else root)
        if real != base and not real.startswith(base.rstrip("/") + "/"):
            raise ConfigError(f"{call}: {raw!r} leads (through a link) to {real!r}, outside its "
                              f"mapped root {root!r}; refusing to delete there")
    if not os.path.isdir(real):
        if os.path.isfile(path) and not os.path.islink(path) and \
                os.stat(path).st_mtime_ns // 1_000_000 < cutoff:
            os.unlink(path)
            return [shown]
        return []
    deleted: list[str] = []
    stack = [("", real)]
    while stack:
        rel, folder = stack.pop()
        with os.scandir(folder) as entries:
            for e in sorted(entries, key=lambda e: e.name):
                if e.is_symlink():
                    continue  # never followed, never deleted: it may lead out of the root
                name = f"{rel}/{e.name}" if rel else e.name
                if e.is_dir(follow_symlinks=False):
                    if e.name != "_sparkmark_staging":  # output of a run not yet committed
                        stack.append((name, e.path))
                elif e.is_file(follow_symlinks=False) and \
                        e.stat(follow_symlinks=False).st_mtime_ns // 1_000_000 < cutoff:
                    os.unlink(e.path)
                    deleted.append(f"{shown.rstrip('/')}/{name}")
    return sorted(deleted)


def _is_root_spelling(target: str) -> bool:
    """Whether ``target`` names a file-system root in any spelling (pure): ``/``, ``//``,
    ``/./``, ``file:///``, ``FILE:/``, ``s3a://bucket/``...

        _is_root_spelling("file:////")   # True
    """
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", target, re.DOTALL)
    scheme, rest = (m.group(1).lower(), m.group(2)) if m else ("", target)
    path = rest
    if scheme and rest.startswith("//"):  # an authority (host, bucket), then the path
        authority, _, after = rest[2:].partition("/")
        path = rest[2:] if scheme == "file" and not authority else after
    return not [c for c in path.split("/") if c not in ("", ".")]


def _purge_target(raw: Any, path_map: list, call: str) -> str:
    """Where ``raw`` lives, refusing anything that leaves its mapped (or given) root."""
    import posixpath
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError(f"{call} needs a path (an s3:// URI or a folder)")
    root = paths.mapped_root(raw, path_map)
    target = paths.map_path(raw, path_map)
    scheme, sep, rest = target.partition("://")
    local = target[5:] if target.startswith("file:") and not sep else (None if sep else target)
    body = local if local is not None else rest
    norm = posixpath.normpath(body) if body else body
    if ".." in body.split("/"):
        raise ConfigError(f"{call}: {raw!r} leaves its root through '..'; give the folder "
                          "itself")
    if local is not None:
        if not norm or norm == "/" or norm == ".":
            raise ConfigError(f"{call}: refusing to purge {target!r}, a file-system root")
        if root is not None:
            base = posixpath.normpath(root[5:] if root.startswith("file:") else root)
            if norm != base and not norm.startswith(base.rstrip("/") + "/"):
                raise ConfigError(f"{call}: {raw!r} maps to {target!r}, outside its mapped "
                                  f"root {root!r}; refusing to delete there")
    if _is_root_spelling(target):  # a whole bucket too: Glue expects s3://bucket/prefix/
        raise ConfigError(f"{call}: refusing to purge {target!r}, a file-system root")
    return target
