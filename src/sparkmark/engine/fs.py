"""File-system access: the one home for listing, renaming and deleting files.

Classic sessions go through Hadoop's ``FileSystem`` in the driver JVM, so every path Spark can
read works (``file:``, ``hdfs:``, ``s3a:``, ``abfs:``, ``gs:``...) with Spark's own
credentials and configuration::

    fs = HadoopFS(spark, "hdfs://nn/data/out")
    fs.mkdirs(fs.path("hdfs://nn/data/out/_tmp"))
    [(path, is_dir, size, mtime)] = fs.statuses(["hdfs://nn/data/out/part-0.parquet"])

Listing a directory tree is level by level: one ``listStatus(Path[])`` call per depth, not per
file, and the statuses cross py4j as one string (:func:`parse_statuses`), so 100,000 files list
in seconds.

Spark Connect sessions have no JVM in this process: :class:`ArrowFS` does the same through
``pyarrow.fs``.  :func:`file_system` picks one by the session's type — the only place that does.
"""
from __future__ import annotations

import os
import re
import weakref
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from sparkmark.engine.compat import is_connect
from sparkmark.engine.jvm import java_error_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: one status as Hadoop renders it in ``FileStatus.toString``
_STATUS = re.compile(
    r"\{path=(.*?); isDirectory=(true|false)(?:; length=(\d+))?.*?; modification_time=(-?\d+);",
    re.DOTALL)

Status = tuple[str, bool, int, int]  # (path, is_dir, size, mtime ms)


#: Hadoop's ``Path`` class per py4j gateway (one per driver JVM; forgotten with it)
_PATH_CLASSES: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


class HadoopFS:
    """A thin wrapper over Hadoop's FileSystem for the file system of ``path``."""

    def __init__(self, spark: "SparkSession", path: str):
        sc = spark.sparkContext
        jvm: Any = sc._jvm
        gateway: Any = sc._gateway
        jsc: Any = sc._jsc
        self._jvm, self._gateway = jvm, gateway
        self.conf = jsc.hadoopConfiguration()
        # the class, resolved once per gateway: every ``jvm.org.apache.hadoop.fs.Path`` lookup
        # is a py4j round trip per package level (five)
        path_class = _PATH_CLASSES.get(gateway)
        if path_class is None:
            path_class = _PATH_CLASSES[gateway] = jvm.org.apache.hadoop.fs.Path
        self.path_class: Any = path_class
        self.root = self.path_class(path)
        self.fs = self.root.getFileSystem(self.conf)
        self.own_lists = 0  # LIST requests made through the store's SDK (list_after)

    # -------------------------------------------------------------- paths
    def path(self, p: str) -> Any:
        """A Hadoop ``Path``."""
        return self.path_class(p)

    def qualify(self, p: str) -> Any:
        """The fully qualified path (scheme included), as listings return them."""
        return self.fs.makeQualified(self.path(p))

    # -------------------------------------------------------------- questions
    def exists(self, p: Any) -> bool:
        return bool(self.fs.exists(p))

    def is_file(self, p: Any) -> bool:
        return self.exists(p) and bool(self.fs.getFileStatus(p).isFile())

    def files(self, p: Any) -> list[str]:
        """Every data file below ``p`` (no checksum, marker or hidden files)."""
        out: list[str] = []
        if not self.exists(p):
            return out
        it = self.fs.listFiles(p, True)
        while it.hasNext():
            st = it.next()
            name = st.getPath().getName()
            if name.startswith(".") or name.startswith("_"):
                continue
            out.append(st.getPath().toString())
        return out

    def children(self, p: Any) -> list[str]:
        """Names of the entries directly in ``p``."""
        if not self.exists(p):
            return []
        return [st.getPath().getName() for st in self.fs.listStatus(p)]

    def status_of(self, p: Any) -> list[Status]:
        """``[(path, is_dir, size, mtime)]`` of ``p`` itself, or ``[]`` if it does not exist."""
        try:  # one getFileStatus, not exists() + getFileStatus (each a HEAD + LIST on S3)
            return self.parse([self.fs.getFileStatus(p)])
        except Exception as e:  # noqa: BLE001 - FileNotFoundException comes through py4j
            if "FileNotFoundException" in str(getattr(e, "java_exception", "")) or \
                    "FileNotFoundException" in str(e):
                return []
            raise

    def glob(self, p: Any) -> list[Status]:
        """Statuses of the paths matching the glob ``p`` (Hadoop's glob syntax)."""
        matches = self.fs.globStatus(p)
        return [] if matches is None else self.parse(matches)

    # -------------------------------------------------------------- changes
    def mkdirs(self, p: Any) -> bool:
        return bool(self.fs.mkdirs(p))

    def rename(self, src: Any, dst: Any) -> bool:
        return bool(self.fs.rename(src, dst))

    def delete(self, p: Any) -> None:
        if self.exists(p):
            self.fs.delete(p, True)

    # -------------------------------------------------------------- counting
    def store_key(self) -> str:
        """The file system instance's URI (``s3a://bucket``): one counter per key."""
        return str(self.fs.getUri().toString())

    def list_requests(self) -> int | None:
        """LIST requests this file system instance (one per bucket) has made so far: S3A's
        ``object_list_request`` + ``object_continue_list_request`` IOStatistics counters, or
        ``None`` where the file system keeps no such count (local disks, HDFS).  (Not the
        storage statistics: S3A shares one of those per JVM, bound to the first bucket.)"""
        try:
            counters = self.fs.getIOStatistics().counters()
            seen = False
            total = self.own_lists
            for name in ("object_list_request", "object_continue_list_request"):
                value = counters.get(name)
                if value is not None:
                    seen = True
                    total += int(value)
            return total if seen else None
        except Exception:  # noqa: BLE001 - a file system without IOStatistics
            return None

    # -------------------------------------------------------------- listing
    def list_level(self, dirs: Sequence[str]) -> list[Status]:
        """``[(path, is_dir, size, mtime)]`` of the entries of all ``dirs``: one
        ``listStatus(Path[])`` call for the whole level.

        Example: ``fs.list_level(["hdfs://nn/in/dt=1", "hdfs://nn/in/dt=2"])``
        """
        arr = self._gateway.new_array(self.path_class, len(dirs))
        for i, d in enumerate(dirs):
            arr[i] = self.path(d)
        return self.parse(self.fs.listStatus(arr))

    def list_after(self, root: str, name: str) -> list[Status] | None:
        """The entries of ``root`` that sort after ``name`` (a child's name), for a lexical
        listing: S3's ``ListObjectsV2`` with ``StartAfter`` and ``/`` as delimiter, through
        the S3A file system's own client (its endpoint, credentials and retries), so older
        partitions are never enumerated.  None where the file system is not S3A (the caller
        lists the whole root instead).  Folders come with mtime 0, as S3A lists them.

        Example: ``fs.list_after("s3a://b/daily", "dt=2024-05-01")``
        """
        fs = self.fs
        if str(fs.getClass().getName()) != "org.apache.hadoop.fs.s3a.S3AFileSystem":
            return None
        key = str(fs.pathToKey(self.path(root)))
        prefix = key.rstrip("/") + "/" if key.strip("/") else ""
        base = root.rstrip("/")
        try:  # hadoop-aws 3.4+ (Spark 4): the AWS SDK v2 client S3A hands out for this
            v2 = fs.getS3AInternals().getAmazonS3Client("sparkmark lexical listing")
        except Exception:  # noqa: BLE001 - hadoop-aws 3.3 (Spark 3.5): the SDK v1 client below
            v2 = None
        if v2 is not None:
            return self._list_after_v2(v2, str(fs.getBucket()), prefix, name, base)
        try:  # S3A's own client; its public accessor logs a warning on every call
            getter = fs.getClass().getDeclaredMethod(
                "getAmazonS3Client", self._gateway.new_array(self._jvm.java.lang.Class, 0))
            getter.setAccessible(True)
            client = getter.invoke(fs, self._gateway.new_array(self._jvm.java.lang.Object, 0))
            model = self._jvm.com.amazonaws.services.s3.model
            request_class = model.ListObjectsV2Request
        except Exception:  # noqa: BLE001 - another S3A: list the whole root
            return None
        request = (request_class().withBucketName(fs.getBucket()).withPrefix(prefix)
                   .withDelimiter("/").withStartAfter(prefix + name))
        join = self._jvm.java.lang.String.join
        out: list[Status] = []
        while True:
            result = client.listObjectsV2(request)
            self.own_lists += 1
            text = str(join("\x00", result.getCommonPrefixes()))
            for cp in text.split("\x00") if text else []:
                out.append((f"{base}/{cp[len(prefix):].rstrip('/')}", True, 0, 0))
            sums = result.getObjectSummaries()
            for i in range(sums.size()):
                s = sums.get(i)
                k = str(s.getKey())
                if k != prefix:  # a folder marker
                    out.append((f"{base}/{k[len(prefix):]}", False, int(s.getSize()),
                                int(s.getLastModified().getTime())))
            if not result.isTruncated():
                return out
            request.setContinuationToken(result.getNextContinuationToken())

    def _list_after_v2(self, client: Any, bucket: str, prefix: str, name: str,
                       base: str) -> list[Status]:
        """:meth:`list_after` through an AWS SDK v2 ``S3Client`` (hadoop-aws 3.4+)."""
        model = self._jvm.software.amazon.awssdk.services.s3.model
        token = None
        out: list[Status] = []
        while True:
            builder = (model.ListObjectsV2Request.builder().bucket(bucket).prefix(prefix)
                       .delimiter("/").startAfter(prefix + name))
            if token is not None:
                builder = builder.continuationToken(token)
            result = client.listObjectsV2(builder.build())
            self.own_lists += 1
            prefixes = result.commonPrefixes()
            for i in range(prefixes.size()):
                cp = str(prefixes.get(i).prefix())
                out.append((f"{base}/{cp[len(prefix):].rstrip('/')}", True, 0, 0))
            contents = result.contents()
            for i in range(contents.size()):
                o = contents.get(i)
                k = str(o.key())
                if k != prefix:  # a folder marker
                    out.append((f"{base}/{k[len(prefix):]}", False, int(o.size()),
                                int(o.lastModified().toEpochMilli())))
            if not result.isTruncated():
                return out
            token = result.nextContinuationToken()

    def list_tree(self, root: str, descend: Callable[[str], bool],
                  skip: Callable[[str], bool]) -> list[tuple[str, int, int]]:
        """``[(path, size, mtime)]`` of the files below ``root``.

        Level by level, one ``listStatus(Path[])`` per depth.  ``skip(name)`` drops an entry
        (hidden files); ``descend(name)`` decides whether a directory is entered.
        """
        gateway = self._gateway
        out: list[tuple[str, int, int]] = []
        level = [root]
        while level:
            arr = gateway.new_array(self.path_class, len(level))
            for i, d in enumerate(level):
                arr[i] = self.path(d)
            statuses = self.fs.listStatus(arr)
            level = []
            for path, is_dir, size, mtime in self.parse(statuses):
                name = path.rstrip("/").rsplit("/", 1)[-1]
                if skip(name):
                    continue
                if is_dir:
                    if descend(name):
                        level.append(path)
                else:
                    out.append((path, size, mtime))
        return out

    def parse(self, statuses: Any) -> list[Status]:
        """FileStatus objects to ``(path, is_dir, size, mtime)`` with O(1) py4j calls.

        ``Arrays.toString`` renders every status in the JVM; if the rendering cannot be parsed
        (an odd file system or path) the statuses are read one by one instead.
        """
        if isinstance(statuses, (list, tuple)):
            return [_status_slow(s) for s in statuses]
        n = len(statuses)
        if n == 0:
            return []
        jvm, gateway = self._jvm, self._gateway
        try:
            cls = gateway.new_array(jvm.java.lang.Class, 1)
            cls[0] = jvm.java.lang.Class.forName("[Ljava.lang.Object;")
            method = jvm.java.lang.Class.forName("java.util.Arrays").getMethod("toString", cls)
            args = gateway.new_array(jvm.java.lang.Object, 1)
            args[0] = statuses
            text = method.invoke(None, args)
            parsed = parse_statuses(text)
            if len(parsed) == n:
                return parsed
        except Exception:  # noqa: BLE001 - fall back to the per-status path below
            pass
        return [_status_slow(statuses[i]) for i in range(n)]


def parse_statuses(text: str) -> list[Status]:
    """Parse ``Arrays.toString(FileStatus[])`` into ``(path, is_dir, size, mtime)`` (pure)."""
    return [(p, d == "true", int(size or 0), int(m)) for p, d, size, m in _STATUS.findall(text)]


def _status_slow(st: Any) -> Status:
    return (st.getPath().toString(), bool(st.isDirectory()), int(st.getLen()),
            int(st.getModificationTime()))


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
    for i, (k, v) in enumerate(sorted(_S3_CONF.items())):  # a Connect server's s3a settings
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


def default_fs(spark: "SparkSession") -> str:
    """The Hadoop configuration's ``fs.defaultFS`` (``file:///`` unless set): where a path
    without a scheme lives.  Classic sessions only.

    Example: ``default_fs(spark)`` -> ``"file:///"``
    """
    value = spark.sparkContext._jsc.hadoopConfiguration().get("fs.defaultFS")
    return str(value) if value is not None else "file:///"


def open_fs(spark: "SparkSession", path: str, *, what: str = "path") -> "HadoopFS | ArrowFS":
    """:func:`file_system` for ``path``, or a :class:`SourceError`-free ``ValueError`` naming
    the path when its scheme or URI is bad (callers wrap it in their own error kind)."""
    try:
        return file_system(spark, path)
    except Exception as e:  # noqa: BLE001 - bad scheme, bad URI, missing connector
        raise ValueError(f"cannot open {what} {path!r}: {java_error_text(e)}") from None

# ---------------------------------------------------------------------- without a JVM
# Spark Connect has no py4j, so there is no Hadoop FileSystem to call from Python.  Listing
# input, renaming staged output into targets and deleting for rollback then go through
# ``pyarrow.fs`` (local disks, S3, GCS, HDFS, Azure) in the client process: every path must name
# storage that both the client and the Connect server see (an object store, HDFS, or a local
# directory on a machine or mount they share).  Local paths are spelled ``file:/abs/path``;
# ``s3a://``/``s3n://`` open as ``s3://``, ``abfs(s)://container@account...`` as Azure.
_GLOB_CHARS = re.compile(r"[*?\[{]")
_ARROW_LISTINGS = [0]  # directory listings made through pyarrow (ArrowFS.list_requests)


def file_system(spark: "SparkSession", path: str) -> "HadoopFS | ArrowFS":
    """The file system of ``path`` for this session — the one place that chooses by session
    type: Hadoop's through the JVM for classic sessions (every Spark path, with the Hadoop
    configuration's credentials), ``pyarrow.fs`` over Spark Connect (no JVM in this process;
    S3 paths use the Connect server's own ``spark.hadoop.fs.s3a.*`` endpoint and credentials).

    Example: ``file_system(spark, "s3a://bucket/out").files("s3a://bucket/out")``.
    """
    if is_connect(spark):
        if path.partition("://")[0].lower() in ("s3a", "s3n", "s3"):
            _learn_server_s3(spark)
        return ArrowFS(path)
    return HadoopFS(spark, path)


#: ``spark.hadoop.fs.s3a.*`` of the Connect servers this client talks to (by session id): the
#: client's S3 clients use the server's endpoint and credentials, not only ``AWS_*`` variables
_SERVER_S3: dict[str, dict[str, str]] = {}
_S3_CONF: dict[str, str] = {}  # the settings of the session seen last (one server per client)
_ARROW_S3: dict[tuple, Any] = {}  # pyarrow S3FileSystem per (bucket's options)


def _learn_server_s3(spark: "SparkSession") -> None:
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


__all__: Sequence[str] = ["ArrowFS", "HadoopFS", "Status", "arrow_s3_options", "file_system",
                          "is_connect", "open_fs", "parse_statuses"]
