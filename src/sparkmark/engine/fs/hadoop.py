"""The Hadoop side of :mod:`sparkmark.engine.fs` (classic sessions): :class:`HadoopFS`, Hadoop's
``FileSystem`` in the driver JVM through py4j, so every path Spark can read works with Spark's
own credentials and configuration; statuses cross py4j as one string (:func:`parse_statuses`).

    fs = HadoopFS(spark, "hdfs://nn/data/out")
    fs.mkdirs(fs.path("hdfs://nn/data/out/_tmp"))
    [(path, is_dir, size, mtime)] = fs.statuses(["hdfs://nn/data/out/part-0.parquet"])
"""
from __future__ import annotations

import os
import re
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

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

    def read_text(self, p: Any) -> str | None:
        """A small file's text (UTF-8), or ``None`` when it does not exist.

        Example: ``fs.read_text(fs.path("/t/_delta_log/00000000000000000001.json"))``
        """
        try:
            stream = self.fs.open(p)
        except Exception as e:  # noqa: BLE001 - FileNotFoundException through py4j
            if "FileNotFound" in str(e) or "NoSuchKey" in str(e):
                return None
            raise
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

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


def default_fs(spark: "SparkSession") -> str:
    """The Hadoop configuration's ``fs.defaultFS`` (``file:///`` unless set): where a path
    without a scheme lives.  Classic sessions only.

    Example: ``default_fs(spark)`` -> ``"file:///"``
    """
    value = spark.sparkContext._jsc.hadoopConfiguration().get("fs.defaultFS")
    return str(value) if value is not None else "file:///"


#: Hadoop's S3A connector (hadoop-aws): the file system and the FileContext binding
S3A_FS, S3A_AFS = "org.apache.hadoop.fs.s3a.S3AFileSystem", "org.apache.hadoop.fs.s3a.S3A"


def s3_scheme_on_s3a(spark: "SparkSession") -> bool:
    """Serve Hadoop's ``s3`` scheme with S3A, as Glue and EMR serve ``s3://`` paths, when the
    s3a connector is on the class path and nothing serves ``s3`` yet (``fs.s3.impl`` unset).
    S3A reads its ``fs.s3a.*`` settings (endpoint, credentials) whichever scheme a path uses,
    so plain Spark I/O such as ``df.write.parquet("s3://bucket/out")`` reaches the same store
    as ``s3a://``.  The setting is the session's Hadoop configuration (the whole application's,
    as on EMR).  Returns True when it set it.  Classic sessions only.

    Example: ``s3_scheme_on_s3a(spark)`` -> ``True`` (hadoop-aws on ``spark.jars``)
    """
    sc = spark.sparkContext
    conf, jvm = sc._jsc.hadoopConfiguration(), sc._jvm
    if conf.get("fs.s3.impl") or jvm is None:
        return False
    try:
        jvm.org.apache.spark.util.Utils.classForName(S3A_FS, True, False)
    except Exception:  # noqa: BLE001 - no connector: s3:// stays unserved, as before
        return False
    conf.set("fs.s3.impl", S3A_FS)
    if not conf.get("fs.AbstractFileSystem.s3.impl"):
        conf.set("fs.AbstractFileSystem.s3.impl", S3A_AFS)
    return True



#: Hadoop's view file system that serves an existing scheme through a mount table per authority
VIEW_OVERLOAD_FS = "org.apache.hadoop.fs.viewfs.ViewFileSystemOverloadScheme"


def mount_conf(mapping: Sequence[tuple[str, str]], scheme: str = "s3") -> dict[str, str]:
    """The Hadoop settings that serve ``scheme://bucket/prefix`` paths from the folders of a
    path map (``(prefix, folder)`` pairs, as :func:`sparkmark.glue.paths.parse_path_map` gives
    them) through Hadoop's ``ViewFileSystemOverloadScheme``: one mount table per bucket, a link
    per prefix, a bucket mapped whole as the table's fallback (pure).

    >>> conf = mount_conf([("s3://lake/raw", "/data/raw"), ("s3://lake", "/data/lake")])
    >>> conf["fs.viewfs.mounttable.lake.link./raw"], conf["fs.viewfs.mounttable.lake.linkFallback"]
    ('file:///data/raw', 'file:///data/lake')
    """
    out: dict[str, str] = {}
    for prefix, folder in mapping:
        bucket_path = prefix.split("://", 1)[1]
        bucket, _, rest = bucket_path.partition("/")
        if "://" in folder:
            target = folder
        elif folder.startswith("file:"):
            target = "file:///" + folder[len("file:"):].lstrip("/")
        else:
            target = "file://" + os.path.abspath(folder)
        table = f"fs.viewfs.mounttable.{bucket}"
        if rest.strip("/"):
            out[f"{table}.link./{rest.strip('/')}"] = target
        else:
            out[f"{table}.linkFallback"] = target
    return out


def s3_scheme_on_path_map(spark: "SparkSession", mapping: Sequence[tuple[str, str]]) -> bool:
    """Serve Hadoop's ``s3`` scheme from the local folders of ``SPARKMARK_PATH_MAP``, so that
    a Glue script's plain Spark I/O (``df.write.parquet("s3://lake/out")``) lands where the
    Glue layer's own reads and writes of that path do.  Buckets and prefixes the map does not
    name still reach S3A when the connector is on the class path.  Leaves a scheme someone
    else serves alone (``fs.s3.impl`` set to anything but S3A or this view).  Returns True
    when it set the scheme up.  Classic sessions only.

    Example: ``s3_scheme_on_path_map(spark, [("s3://lake", "/data/lake")])`` -> ``True``
    """
    if not mapping:
        return False
    sc = spark.sparkContext
    conf, jvm = sc._jsc.hadoopConfiguration(), sc._jvm
    current = conf.get("fs.s3.impl")
    if jvm is None or current not in (None, S3A_FS, VIEW_OVERLOAD_FS):
        return False
    try:
        jvm.org.apache.spark.util.Utils.classForName(VIEW_OVERLOAD_FS, True, False)
    except Exception:  # noqa: BLE001 - a Hadoop before 3.3: s3:// stays as it was
        return False
    conf.set("fs.s3.impl", VIEW_OVERLOAD_FS)
    conf.set("fs.s3.impl.disable.cache", "true")  # a new map takes effect for the next path
    if not conf.get("fs.viewfs.overload.scheme.target.s3.impl"):
        conf.set("fs.viewfs.overload.scheme.target.s3.impl", S3A_FS)
    for key, value in mount_conf(mapping).items():
        conf.set(key, value)
    return True
