"""The Arrow side of :mod:`sparkmark.engine.fs` (Spark Connect: no JVM in this process):
:class:`ArrowFS`, :class:`~sparkmark.engine.fs.hadoop.HadoopFS`'s interface over ``pyarrow.fs``,
with paths in Hadoop's spelling, S3 settings learnt from the Connect server, and glob matching
(:func:`stat_roots`).

    fs = ArrowFS("s3a://bucket/out", {"fs.s3a.endpoint": "http://127.0.0.1:9000"})
    fs.files(fs.root)          # every data file below the target, qualified
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from sparkmark.engine.fs.hadoop import Status

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# ---------------------------------------------------------------------- without a JVM
# Spark Connect has no py4j, so there is no Hadoop FileSystem to call from Python.  Listing
# input, renaming staged output into targets and deleting for rollback then go through
# ``pyarrow.fs`` (local disks, S3, GCS, HDFS, Azure) in the client process: every path must name
# storage that both the client and the Connect server see (an object store, HDFS, or a local
# directory on a machine or mount they share).  Local paths are spelled ``file:/abs/path``;
# ``s3a://``/``s3n://`` open as ``s3://``, ``abfs(s)://container@account...`` as Azure.
_GLOB_CHARS = re.compile(r"[*?\[{]")
_ARROW_LISTINGS = [0]  # directory listings made through pyarrow (ArrowFS.list_requests)


#: ``spark.hadoop.fs.s3a.*`` of the Connect servers this client talks to (by session id): the
#: client's S3 clients use the server's endpoint and credentials, not only ``AWS_*`` variables
_SERVER_S3: dict[str, dict[str, str]] = {}
_S3_CONF: dict[str, str] = {}  # the settings of the session seen last (one server per client)
_ARROW_S3: dict[tuple, Any] = {}  # pyarrow S3FileSystem per (bucket's options)


def learn_server_s3(spark: "SparkSession") -> None:
    """Remember the Connect server's ``spark.hadoop.fs.s3a.*`` settings (asked once per
    session): S3 paths then open with its endpoint and keys (:func:`server_s3_conf`).

    Example: ``learn_server_s3(spark); ArrowFS("s3a://lake/in")``
    """
    key = str(getattr(spark, "session_id", id(spark)))
    if key not in _SERVER_S3:
        conf: dict[str, str] = {}
        every: Any = {}
        try:
            every = spark.conf.getAll  # Spark 4's Connect client: a dict of the session's conf
        except Exception:  # noqa: BLE001 - older clients: nothing to learn, AWS_* env applies
            pass
        for k, v in (every.items() if isinstance(every, dict) else []):
            if k.startswith("spark.hadoop.fs.s3a."):
                conf[k[len("spark.hadoop."):]] = str(v)
        _SERVER_S3[key] = conf
    _S3_CONF.clear()
    _S3_CONF.update(_SERVER_S3[key])


def server_s3_conf() -> Mapping[str, str]:
    """The ``fs.s3a.*`` settings of the Connect server seen last (:func:`learn_server_s3`),
    empty until one is learnt.

    Example: ``sorted(server_s3_conf())`` -> ``['fs.s3a.access.key', 'fs.s3a.endpoint', ...]``
    """
    return _S3_CONF


def arrow_s3_options(conf: Mapping[str, str], bucket: str) -> dict[str, Any] | None:
    """``pyarrow.fs.S3FileSystem`` arguments from s3a's Hadoop settings for ``bucket`` (its
    ``fs.s3a.bucket.<bucket>.*`` keys win), or ``None`` when they name neither an endpoint nor
    keys (pyarrow then uses the ``AWS_*`` variables and its own chain) (pure).

        arrow_s3_options({"fs.s3a.endpoint": "http://127.0.0.1:9000",
                          "fs.s3a.access.key": "k", "fs.s3a.secret.key": "s"}, "lake")
        # {"endpoint_override": "127.0.0.1:9000", "scheme": "http", "access_key": "k", ...}
    """
    def get(name: str) -> str | None:
        v = conf.get(f"fs.s3a.bucket.{bucket}.{name}", conf.get(f"fs.s3a.{name}"))
        return v.strip() if isinstance(v, str) and v.strip() else None

    endpoint, access, secret = get("endpoint"), get("access.key"), get("secret.key")
    if not (endpoint or access):
        return None
    opts: dict[str, Any] = {}
    if endpoint:
        scheme, sep, host = endpoint.partition("://")
        ssl = (get("connection.ssl.enabled") or "true").lower() != "false"
        opts["endpoint_override"] = host if sep else endpoint
        opts["scheme"] = scheme.lower() if sep else ("https" if ssl else "http")
        opts["force_virtual_addressing"] = (get("path.style.access") or "false").lower() != "true"
    if access and secret:
        opts["access_key"], opts["secret_key"] = access, secret
        token = get("session.token")
        if token:
            opts["session_token"] = token
    opts["region"] = get("endpoint.region") or os.environ.get("AWS_REGION") or "us-east-1"
    return opts


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


def _open(qualified: str, s3_conf: Mapping[str, str] | None = None):
    """(pyarrow FileSystem, native path) for a qualified path; ``s3_conf`` (s3a's Hadoop keys)
    names the S3 endpoint and keys, else those of the Connect server seen last."""
    from pyarrow import fs as pafs
    if qualified.startswith("file:"):
        return pafs.LocalFileSystem(), qualified[len("file:"):]
    scheme, _, rest = qualified.partition("://")
    scheme = scheme.lower()
    if scheme in ("s3a", "s3n", "s3"):
        conf = _S3_CONF if s3_conf is None else s3_conf
        opts = arrow_s3_options(conf, rest.split("/", 1)[0]) if conf else None
        if opts is None:
            f, native = pafs.FileSystem.from_uri("s3://" + rest)
            return f, native
        key = tuple(sorted(opts.items()))
        if key not in _ARROW_S3:
            _ARROW_S3[key] = pafs.S3FileSystem(**opts)
        return _ARROW_S3[key], rest.rstrip("/") if rest.count("/") else rest
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
    """:class:`HadoopFS`'s interface over ``pyarrow.fs``, for sessions without a JVM (Spark
    Connect).  Paths keep Hadoop's spelling (``file:/abs``, ``s3a://b/k``)::

        fs = ArrowFS("s3a://bucket/out")
        fs.files(fs.root)          # every data file below the target, qualified
    """

    def __init__(self, path: str, s3_conf: Mapping[str, str] | None = None):
        self.root = ArrowPath(qualify(path))
        self._s3_conf = s3_conf  # s3a's Hadoop keys (fs.s3a.endpoint, ...); None: the server's
        self.fs, self._native_root = _open(self.root, s3_conf)

    def path(self, p: Any) -> ArrowPath:
        return ArrowPath(qualify(str(p)))

    def store_key(self) -> str:
        return str(self.root).split("/", 3)[2] if "://" in str(self.root) else "file"

    def list_requests(self) -> int | None:
        """Directory listings this client made on an object store (each at least one LIST
        request; pyarrow pages long ones on its own), ``None`` on local disks."""
        return None if str(self.root).startswith("file:") else _ARROW_LISTINGS[0]

    qualify = path

    def _native(self, p: Any) -> str:
        q = qualify(str(p))
        if q.startswith("file:"):
            return q[len("file:"):]
        _, native = _open(q, self._s3_conf)
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

    def status_of(self, p: Any) -> list[Status]:
        """``[(path, is_dir, size, mtime)]`` of ``p`` itself, or ``[]`` if it does not exist."""
        return stat_roots(str(p), self._s3_conf) if not _GLOB_CHARS.search(str(p)) else []

    def glob(self, p: Any) -> list[Status]:
        """Statuses of the paths matching the glob ``p`` (Hadoop's glob syntax)."""
        return stat_roots(str(p), self._s3_conf)

    def list_level(self, dirs: Sequence[str]) -> list[Status]:
        """``[(path, is_dir, size, mtime)]`` of the entries of all ``dirs`` (see
        HadoopFS.list_level); a directory's mtime is 0 where the store keeps none."""
        from pyarrow import fs as pafs
        out: list[Status] = []
        for d in dirs:
            f, native = _open(d, self._s3_conf)
            qual = d.rstrip("/")
            _ARROW_LISTINGS[0] += 1
            for info in f.get_file_info(pafs.FileSelector(native, recursive=False,
                                                          allow_not_found=True)):
                is_dir = info.type == pafs.FileType.Directory
                if is_dir or info.type == pafs.FileType.File:
                    out.append((f"{qual}/{info.base_name}", is_dir,
                                0 if is_dir else int(info.size or 0), _mtime_ms(info)))
        return out

    def list_tree(self, root: str, descend: Callable[[str], bool],
                  skip: Callable[[str], bool]) -> list[tuple[str, int, int]]:
        """``[(path, size, mtime)]`` of the files below ``root`` (see HadoopFS.list_tree)."""
        return _list_tree(root, descend, skip)

    def mkdirs(self, p: Any) -> bool:
        self.fs.create_dir(self._native(p), recursive=True)
        return True

    def rename(self, src: Any, dst: Any) -> bool:
        if self.exists(dst):
            return False
        self.fs.move(self._native(src), self._native(dst))
        return True

    def read_text(self, p: Any) -> str | None:
        """A small file's text (UTF-8), or ``None`` when it does not exist.

        Example: ``ArrowFS("/t").read_text("/t/_delta_log/00000000000000000001.json")``
        """
        try:
            with self.fs.open_input_stream(self._native(p)) as stream:
                return bytes(stream.read()).decode("utf-8")
        except FileNotFoundError:
            return None

    def delete(self, p: Any) -> None:
        from pyarrow import fs as pafs
        info = self._info(p)
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(self._native(p))
        elif info.type != pafs.FileType.NotFound:
            self.fs.delete_file(self._native(p))


# ---------------------------------------------------------------------- source listing
def stat_roots(raw: str, s3_conf: Mapping[str, str] | None = None) -> list[Status]:
    """(path, is_dir, size, mtime ms) of a root path or of every match of a glob pattern."""
    from pyarrow import fs as pafs
    q = qualify(raw)
    if not _GLOB_CHARS.search(q):
        f, native = _open(q, s3_conf)
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
    f, native_prefix = _open(prefix, s3_conf)
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


def _list_tree(root: str, descend: Callable[[str], bool],
               skip: Callable[[str], bool]) -> list[tuple[str, int, int]]:
    from pyarrow import fs as pafs
    f, native_root = _open(root)
    out = []
    stack = [(native_root, root.rstrip("/"))]
    while stack:
        native, qual = stack.pop()
        _ARROW_LISTINGS[0] += 1
        for info in f.get_file_info(pafs.FileSelector(native, recursive=False,
                                                      allow_not_found=True)):
            name = info.base_name
            if skip(name):
                continue
            path = f"{qual}/{name}"
            if info.type == pafs.FileType.Directory:
                if descend(name):
                    stack.append((info.path, path))
            elif info.type == pafs.FileType.File:
                out.append((path, int(info.size or 0), _mtime_ms(info)))
    return out


def _mtime_ms(info) -> int:
    ns = info.mtime_ns
    return int(ns // 1_000_000) if ns is not None else 0
