"""The JVM plumbing for classic (py4j) Spark sessions: the one place where a Java exception
becomes a message, and where Spark's own data-source registry is asked.

    >>> from sparkmark.engine.jvm import java_error_text
    >>> try:
    ...     spark.read.parquet("/no/such/dir").count()
    ... except Exception as e:
    ...     print(java_error_text(e))
    [PATH_NOT_FOUND] Path does not exist: file:/no/such/dir...

Messages keep the Java exception's own words (and those of its causes, up to four), never the
stack trace.
"""
from __future__ import annotations

import io
import os
import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def java_error_text(error: BaseException, *, limit: int = 800) -> str:
    """The useful part of a Spark/py4j error: the Java exception's messages, not its trace.

    For a ``Py4JJavaError`` this is the chain of messages of the exception and its causes
    (``outer <- cause``); for anything else, the first line of its text that is not a stack
    frame.
    """
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            messages: list[str] = []
            cause: Any = java
            while cause is not None and len(messages) < 4:
                msg = cause.getMessage()
                if msg:
                    line = str(msg).strip().splitlines()[0] if str(msg).strip() else ""
                    if line and line not in messages:
                        messages.append(line)
                cause = cause.getCause()
            if messages:
                return " <- ".join(messages)[:limit]
        except Exception:  # noqa: BLE001 - the JVM may be gone; fall back to the text
            pass
    text = str(error).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace", "\tat ")):
            return line[:limit]
    return type(error).__name__


# ---------------------------------------------------------------------- object stores
_NO_BUCKET = ("NoSuchBucket", "NO_SUCH_BUCKET", "bucket does not exist")
_DENIED = ("403 Forbidden", "Status Code: 403", "InvalidAccessKeyId", "SignatureDoesNotMatch",
           "AccessDenied", "ACCESS_DENIED", "INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH",
           "Access Denied", "NoAuthWithAWSException", "No AWS Credentials")
_UNREACHABLE = ("Connection refused", "Unable to execute HTTP request", "Couldn't connect",
                "connect timed out", "UnknownHostException", "Connection reset",
                "NETWORK_CONNECTION", "curlCode: 7")


def storage_hint(text: str, path: str) -> str | None:
    """What to do about an object-store error, from its text (pure), or ``None`` when the
    text is not one of the three kinds people meet first: a missing bucket, refused
    credentials, an endpoint that does not answer.  The store's own words are not kept: the
    SDK's messages run to several lines of request ids.

        >>> storage_hint("... Error Code: NoSuchBucket ...", "s3a://lake/in")
        "the bucket 'lake' does not exist (NoSuchBucket): create it, or fix the path"
    """
    scheme, sep, rest = path.partition("://")
    if not sep:
        return None
    bucket = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    if any(m in text for m in _NO_BUCKET):
        return f"the bucket {bucket!r} does not exist (NoSuchBucket): create it, or fix the path"
    if any(m in text for m in _DENIED):
        return (f"the object store refused the credentials for bucket {bucket!r} (403 / "
                "access denied): check fs.s3a.access.key and fs.s3a.secret.key (or "
                f"fs.s3a.bucket.{bucket}.*) and fs.s3a.aws.credentials.provider in the Spark "
                "configuration (over Spark Connect the client uses the server's settings, else "
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), and that the key may read and write this bucket")
    if any(m in text for m in _UNREACHABLE):
        endpoint = ""
        for word in text.replace("[", " ").split():
            if word.startswith(("http://", "https://")) or (
                    ":" in word and word.split(":")[-1].rstrip(".,]").isdigit()
                    and word[0].isalnum()):
                endpoint = word.rstrip(".,]")
                break
        where = f" ({endpoint})" if endpoint else ""
        return (f"the object store endpoint{where} for {scheme}://{bucket} does not answer "
                "(connection refused or timed out): check fs.s3a.endpoint (or "
                f"fs.s3a.bucket.{bucket}.endpoint) and that the server is up")
    return None


def storage_error_text(error: BaseException, path: str) -> str:
    """:func:`java_error_text`, or :func:`storage_hint`'s advice for object-store errors.

    Example: ``raise SourceError(f"cannot list {p}: {storage_error_text(e, p)}")``
    """
    text = java_error_text(error, limit=4000)
    hint = storage_hint(text, path)
    return hint if hint is not None else text[:800]


#: frames in a Spark error's Java stack trace that show it came from reading a JDBC table
#: (Spark's JDBC RDD), not from writing one (``JdbcUtils.savePartition``) or anything else
_JDBC_READ_MARKERS = ("datasources.jdbc.JDBCRDD",)


def _error_chain(error: BaseException) -> list[BaseException]:
    """``error`` and the errors it was raised from or during (``raise X from None`` hides the
    context from tracebacks but keeps it), oldest last."""
    chain: list[BaseException] = []
    cur: BaseException | None = error
    while cur is not None and cur not in chain and len(chain) < 8:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


def jdbc_read_error(error: BaseException, jdbc_sources: dict[str, str]) -> Exception | None:
    """A :class:`~sparkmark.core.errors.SourceError` naming the JDBC source(s) when ``error`` was
    raised while Spark consumed a bookmarked JDBC read (``df.collect()``, a write of it...),
    else ``None``.  ``jdbc_sources`` maps each JDBC source's ``transformation_ctx`` to its
    table.  The database's own words are kept, the Java stack trace is not.

        >>> jdbc_read_error(ValueError("no"), {"emp_src": "emp"}) is None
        True
    """
    from sparkmark.core.errors import SourceError
    if not jdbc_sources or isinstance(error, SourceError):
        return None
    for err in _error_chain(error):
        text = str(err)
        java = getattr(err, "java_exception", None)
        if java is not None:
            try:
                text += " " + str(java.toString())
            except Exception:  # noqa: BLE001 - the JVM may be gone
                pass
        if any(m in text for m in _JDBC_READ_MARKERS):
            named = ", ".join(f"{ctx!r} (table {table})" for ctx, table in
                              sorted(jdbc_sources.items()))
            which = "JDBC source" if len(jdbc_sources) == 1 else "one of the JDBC sources"
            # the root cause is the database's own words ("Table/View 'APP.EMP' does not
            # exist"); the outer messages are Spark's "Job aborted due to stage failure..."
            cause = java_error_text(err).split(" <- ")[-1].strip().rstrip(".")
            return SourceError(
                f"reading {which} {named} failed while Spark consumed it: "
                f"{cause}. Check that the table and its key columns still exist "
                "and hold values of the declared types; the bookmark is unchanged, so a re-run "
                "reads the same range")
    return None


def java_class(spark: Any, name: str) -> Any:
    """The Java class ``name`` of a classic session's JVM, for static calls and constructors.

    ``spark._jvm.java.lang.Thread`` asks the JVM once per name segment whether it is a package
    or a class (four py4j round trips before the call itself); naming the class directly
    skips those (a JDBC run made ~20 such lookups).

    Example: ``java_class(spark, "java.util.Properties")()``
    """
    from py4j.java_gateway import JavaClass
    return JavaClass(name, spark.sparkContext._gateway._gateway_client)


def java_static(spark: Any, name: str, method: str) -> Any:
    """The static method ``method`` of Java class ``name``, ready to call.

    ``java_class(spark, name).method`` asks the JVM what ``method`` is (a method, a field, a
    nested class) on every access: one py4j round trip before the call itself; a static method
    named as such skips it.

    Example: ``java_static(spark, "java.lang.String", "valueOf")(42)``
    """
    from py4j.java_gateway import JavaMember
    from py4j.protocol import STATIC_PREFIX
    return JavaMember(method, None, STATIC_PREFIX + name,
                      spark.sparkContext._gateway._gateway_client)


#: the package's compiled helper classes (``java/*.java``, Java 8 bytecode)
HELPER_DIR = Path(__file__).parent / "java"
#: class name -> (py4j gateway client, helper instance or None)
_HELPERS: dict[str, tuple[Any, Any]] = {}


def helper(spark: Any, name: str) -> Any:
    """An instance of sparkmark's helper class ``name`` (``java/<name>.class``) in a classic
    session's driver JVM, loaded once per gateway through a class loader whose parent is the
    JVM's context loader (so it sees Spark's and Hadoop's classes).  ``None`` when it cannot be
    loaded (a missing file, an old JVM): callers then do the work call by call, as before.

    Example: ``helper(spark, "SparkmarkFileHelper")``
    """
    client = spark.sparkContext._gateway._gateway_client
    cached = _HELPERS.get(name)
    if cached is not None and cached[0] is client:
        return cached[1]
    found = None
    try:
        if (HELPER_DIR / f"{name}.class").is_file():
            urls = spark.sparkContext._gateway.new_array(java_class(spark, "java.net.URL"), 1)
            urls[0] = java_class(spark, "java.io.File")(str(HELPER_DIR)).toURI().toURL()
            parent = java_class(spark, "java.lang.Thread").currentThread() \
                .getContextClassLoader()
            loader = java_class(spark, "java.net.URLClassLoader")(urls, parent)
            found = loader.loadClass(name).newInstance()
    except Exception:  # noqa: BLE001 - an old JVM, a missing file: the caller's slow path
        found = None
    _HELPERS[name] = (client, found)
    return found


# ------------------------------------------------------------ text to and from the helpers
#: the escapes of helper text (see :func:`decode_rows`)
_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n"}


def decode_rows(text: str) -> list[list[str | None]]:
    """The rows a helper method returned: TAB between values, LF after each row, ``\\N`` for
    NULL, backslash/TAB/LF in values escaped (see the Java source).

    >>> decode_rows("1\\tid\\n\\\\N\\ta\\\\tb\\n")
    [['1', 'id'], [None, 'a\\tb']]
    """
    return [[None if f == "\\N" else re.sub(r"\\(.)", lambda m: _UNESCAPE[m.group(1)], f)
             for f in line.split("\t")]
            for line in text.split("\n")[:-1]]


def encode_rows(rows: Sequence[Sequence[str | None]]) -> str:
    """Rows as the helper methods take them: the reverse of :func:`decode_rows`.

    >>> encode_rows([["user", "a\\tb"], [None]]) == "user\\ta\\\\tb\\n\\\\N\\n"
    True
    >>> decode_rows(encode_rows([["x\\ty", "\\\\N"], [None, ""]]))
    [['x\\ty', '\\\\N'], [None, '']]
    """
    def one(v: str | None) -> str:
        if v is None:
            return "\\N"
        return v.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    return "".join("\t".join(map(one, row)) + "\n" for row in rows)


def is_classic(spark: "SparkSession") -> bool:
    """Whether ``spark`` is a classic session with a py4j gateway (not Spark Connect)."""
    try:
        return getattr(spark, "_jvm", None) is not None or spark.sparkContext is not None
    except Exception:  # noqa: BLE001 - Connect sessions raise on .sparkContext
        return False


def has_data_source(spark: "SparkSession", name: str) -> bool:
    """Whether a classic session's Spark can look up the data source ``name`` (e.g. ``"avro"``
    from spark-avro).  Callers go through :func:`sparkmark.engine.compat.has_data_source`, which
    answers for Spark Connect sessions itself (there is no JVM here to ask).
    Example: ``has_data_source(spark, "avro")``
    """
    try:
        jvm: Any = spark.sparkContext._jvm
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            name, spark._jsparkSession.sessionState().conf())
        return True
    except Exception:  # noqa: BLE001 - DATA_SOURCE_NOT_FOUND / AVRO_DATA_SOURCE_NOT_ENABLED
        return False


class _QuickAckReader(io.RawIOBase):
    """A py4j connection's socket as a raw stream that asks for immediate ACKs before each read.

    py4j's Java side writes an answer of more than 8 KB in two sends and has Nagle's algorithm
    on: the second waits for the ACK of the first, which Linux delays by up to 40 ms on an
    interactive connection.  Every such answer (a table's metadata, a listing, a wide schema)
    cost ~44 ms whatever its size (measured here: 8,000 characters 0.3 ms, 10,000 44 ms,
    64,000 44 ms; with this reader 0.3, 0.4 and 1.2 ms).
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            self._sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        except OSError:
            pass
        return self._sock.recv_into(buffer)


_QUICKACK: int = getattr(socket, "TCP_QUICKACK", 0)


class _QuickAckStream(io.BufferedReader):
    """The buffered stream over a :class:`_QuickAckReader` that a py4j connection reads."""


def quick_acks(spark: Any) -> bool:
    """Have this process's py4j connections ACK answers at once (:class:`_QuickAckReader`), so
    an answer over 8 KB no longer waits ~40 ms for a delayed ACK.  Linux only; classic
    sessions only; once per process (py4j's connection classes are patched: every py4j user in
    the process gains, nothing else changes).  ``SPARKMARK_PY4J_QUICKACK=0`` turns it off.
    Returns whether it is on.

    Example: ``quick_acks(spark)  # True on Linux``
    """
    if not _QUICKACK or os.environ.get("SPARKMARK_PY4J_QUICKACK", "1") == "0":
        return False
    try:
        if getattr(spark, "_jvm", None) is None:
            return False
    except Exception:  # noqa: BLE001 - Spark Connect sessions raise on JVM attributes
        return False
    try:
        from py4j import clientserver, java_gateway
    except ImportError:  # pragma: no cover - classic PySpark always has py4j
        return False
    for cls in (clientserver.ClientServerConnection, java_gateway.GatewayConnection):
        if getattr(cls, "_sparkmark_quick_acks", False) or not hasattr(cls, "send_command"):
            continue
        original = cls.send_command

        def send_command(self: Any, command: Any, _original: Any = original) -> Any:
            stream, sock = getattr(self, "stream", None), getattr(self, "socket", None)
            if sock is not None and stream is not None \
                    and not isinstance(stream, _QuickAckStream):
                # Swapped at the start of a command: the previous answers were read to their
                # ends (py4j's protocol is one line per answer), so nothing is buffered in the
                # old stream; closing it only drops its reference to the socket.
                self.stream = _QuickAckStream(_QuickAckReader(sock))
                try:
                    stream.close()
                except Exception:  # noqa: BLE001, S110 - the socket stays open either way
                    pass
            return _original(self, command)

        cls.send_command = send_command
        cls._sparkmark_quick_acks = True
    return True

