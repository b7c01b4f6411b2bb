"""A file-system layer that needs no JVM, for Spark Connect sessions (SPEC §11).

Spark Connect has no py4j: there is no Hadoop ``FileSystem`` to call from Python.  Listing input,
renaming staged output into targets and deleting for rollback then go through ``pyarrow.fs``
(local disks, S3, GCS, HDFS, Azure), in the client process.  So over Connect every path must
name storage that both the client and the Connect server see: an object store, HDFS, or a local
directory on a machine (or mount) they share.

Paths keep Hadoop's spelling, so state and ledger entries are the same whichever session wrote
them: local paths are ``file:/abs/path``; ``s3a://`` and ``s3n://`` are opened as ``s3://``,
``gs://`` as GCS, ``hdfs://`` as HDFS, ``abfs://``/``abfss://`` as Azure::

    from sparkmark.fs_arrow import ArrowFS, is_connect
    if is_connect(spark):
        fs = ArrowFS("s3a://bucket/out")
        fs.files(fs.root)          # every data file below the target, qualified
"""
from __future__ import annotations

import os
import re
from typing import Any

_GLOB_CHARS = re.compile(r"[*?\[{]")


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM behind it in this process).

    Example: ``is_connect(SparkSession.builder.remote("sc://host:15002").getOrCreate())`` is
    True; a classic ``local[*]`` session gives False.
    """
    if spark is None:
        return False
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except Exception:  # noqa: BLE001 - the Connect client's dependencies are not installed
        return False
    return isinstance(spark, ConnectSession)


class ArrowPath(str):
    """A qualified path string with the two Hadoop ``Path`` methods the sinks use."""

    def toString(self) -> str:  # noqa: N802 - Hadoop's name
        return str(self)

    def getParent(self) -> "ArrowPath":  # noqa: N802
        head = str(self).rstrip("/").rsplit("/", 1)[0]
        return ArrowPath(head)

    def getName(self) -> str:  # noqa: N802
        return str(self).rstrip("/").rsplit("/", 1)[-1]


def qualify(path: str) -> str:
    """Hadoop's spelling of ``path``: ``file:/abs`` for local paths, others unchanged."""
    p = str(path).strip()
    if p.startswith("file://"):
        p = "file:" + p[len("file://"):]
    if p.startswith("file:"):
        rest = p[len("file:"):]
        return "file:" + os.path.normpath(os.path.abspath(rest))
    if "://" in p or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:/", p):
        return p.rstrip("/") if p.count("/") > 3 else p
    return "file:" + os.path.normpath(os.path.abspath(p))


def _open(qualified: str):
    """(pyarrow FileSystem, native path) for a qualified path."""
    from pyarrow import fs as pafs
    if qualified.startswith("file:"):
        return pafs.LocalFileSystem(), qualified[len("file:"):]
    scheme, _, rest = qualified.partition("://")
    scheme = scheme.lower()
    if scheme in ("s3a", "s3n", "s3"):
        f, native = pafs.FileSystem.from_uri("s3://" + rest)
        return f, native
    if scheme in ("abfs", "abfss", "wasb", "wasbs"):
        # abfs://container@account.dfs.core.windows.net/path
        container_account, _, path = rest.partition("/")
        container, _, host = container_account.partition("@")
        account = host.split(".", 1)[0]
        f = pafs.AzureFileSystem(account_name=account)
        return f, f"{container}/{path}"
    try:
        return pafs.FileSystem.from_uri(qualified)
    except Exception as e:  # noqa: BLE001
        raise OSError(f"no JVM-free file system for {qualified!r} ({e}); over Spark Connect "
                      "use file:, s3a:/s3:, gs:, hdfs: or abfs: paths") from None


def _rebuild(qualified_root: str, native_root: str, native: str) -> str:
    """A native path below ``native_root`` spelled like ``qualified_root``."""
    native_root = native_root.rstrip("/")
    if native == native_root:
        return qualified_root.rstrip("/") if qualified_root.count("/") > 1 else qualified_root
    rel = native[len(native_root):].lstrip("/")
    return f"{qualified_root.rstrip('/')}/{rel}"


class ArrowFS:
    """The Hadoop-FileSystem wrapper's interface (sinks), over ``pyarrow.fs``."""

    def __init__(self, path: str):
        self.root = ArrowPath(qualify(path))
        self.fs, self._native_root = _open(self.root)

    def path(self, p: Any) -> ArrowPath:
        return ArrowPath(qualify(str(p)))

    qualify = path

    def _native(self, p: Any) -> str:
        q = qualify(str(p))
        if q.startswith("file:"):
            return q[len("file:"):]
        _, native = _open(q)
        return native

    def _info(self, p: Any):
        return self.fs.get_file_info(self._native(p))

    def exists(self, p: Any) -> bool:
        from pyarrow import fs as pafs
        return self._info(p).type != pafs.FileType.NotFound

    def is_file(self, p: Any) -> bool:
        from pyarrow import fs as pafs
        return self._info(p).type == pafs.FileType.File

    def _walk(self, p: Any, recursive: bool):
        from pyarrow import fs as pafs
        q = qualify(str(p))
        native = self._native(q)
        sel = pafs.FileSelector(native, recursive=recursive, allow_not_found=True)
        for info in self.fs.get_file_info(sel):
            yield info, _rebuild(q, native, info.path)

    def files(self, p: Any) -> list[str]:
        """Every data file below ``p`` (no checksum, marker or hidden files)."""
        from pyarrow import fs as pafs
        out = []
        for info, path in self._walk(p, True):
            if info.type != pafs.FileType.File:
                continue
            name = info.base_name
            if name.startswith((".", "_")):
                continue
            out.append(path)
        return out

    def children(self, p: Any) -> list[str]:
        return [info.base_name for info, _ in self._walk(p, False)]

    def mkdirs(self, p: Any) -> bool:
        self.fs.create_dir(self._native(p), recursive=True)
        return True

    def rename(self, src: Any, dst: Any) -> bool:
        if self.exists(dst):
            return False
        self.fs.move(self._native(src), self._native(dst))
        return True

    def delete(self, p: Any) -> None:
        from pyarrow import fs as pafs
        info = self._info(p)
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(self._native(p))
        elif info.type != pafs.FileType.NotFound:
            self.fs.delete_file(self._native(p))


# ---------------------------------------------------------------------- source listing
def stat_roots(raw: str) -> list[tuple[str, bool, int, int]]:
    """(path, is_dir, size, mtime ms) of a root path or of every match of a glob pattern."""
    from pyarrow import fs as pafs
    q = qualify(raw)
    if not _GLOB_CHARS.search(q):
        f, native = _open(q)
        info = f.get_file_info(native)
        if info.type == pafs.FileType.NotFound:
            return []
        return [(q, info.type == pafs.FileType.Directory, int(info.size or 0),
                 _mtime_ms(info))]
    # a glob: list below its longest literal prefix, match component by component
    parts = q.split("/")
    first = next(i for i, s in enumerate(parts) if _GLOB_CHARS.search(s))
    prefix = "/".join(parts[:first])
    pattern = parts[first:]
    f, native_prefix = _open(prefix)
    out = []
    level = [(native_prefix, prefix)]
    for depth, comp in enumerate(pattern):
        rx = _component_regex(comp)
        nxt = []
        for native, qual in level:
            try:
                infos = f.get_file_info(pafs.FileSelector(native, recursive=False,
                                                          allow_not_found=True))
            except (NotADirectoryError, OSError):
                continue
            for info in infos:
                if rx.fullmatch(info.base_name):
                    nq = f"{qual.rstrip('/')}/{info.base_name}"
                    if depth == len(pattern) - 1:
                        out.append((nq, info.type == pafs.FileType.Directory,
                                    int(info.size or 0), _mtime_ms(info)))
                    elif info.type == pafs.FileType.Directory:
                        nxt.append((info.path, nq))
        level = nxt
    return sorted(out)


def _component_regex(comp: str) -> re.Pattern:
    """Hadoop glob of one path component (``*``, ``?``, ``[..]``, ``{a,b}``) as a regex."""
    out, i = [], 0
    while i < len(comp):
        c = comp[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = comp.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = comp[i + 1:j]
                out.append("[" + ("^" + body[1:] if body.startswith(("!", "^")) else body) + "]")
                i = j
        elif c == "{":
            j = comp.find("}", i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                alts = comp[i + 1:j].split(",")
                out.append("(?:" + "|".join(_component_regex(a).pattern for a in alts) + ")")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def list_files(root: str, recurse: bool, hidden) -> list[tuple[str, int, int]]:
    """Files below a directory root: Spark's hidden-file rule, ``key=value`` directories always
    entered, other directories only with ``recurse``.  (path, size, mtime ms)."""
    from pyarrow import fs as pafs
    f, native_root = _open(root)
    out = []
    stack = [(native_root, root.rstrip("/"))]
    while stack:
        native, qual = stack.pop()
        for info in f.get_file_info(pafs.FileSelector(native, recursive=False,
                                                      allow_not_found=True)):
            name = info.base_name
            if hidden(name):
                continue
            path = f"{qual}/{name}"
            if info.type == pafs.FileType.Directory:
                if recurse or "=" in name:
                    stack.append((info.path, path))
            elif info.type == pafs.FileType.File:
                out.append((path, int(info.size or 0), _mtime_ms(info)))
    return out


def _mtime_ms(info) -> int:
    ns = info.mtime_ns
    return int(ns // 1_000_000) if ns is not None else 0
