"""A real Spark standalone cluster and a real Spark Connect server, for tests and benchmarks.

Both are started from pyspark's own launcher scripts and jars (no separate Spark download), bind
to 127.0.0.1 only, listen on free ports, and run each JVM in its own process group so that
``stop()`` (also called at interpreter exit) kills the JVM and everything it started::

    from sparkmark.devtools.cluster import start_standalone, start_connect

    cluster = start_standalone(workers=2)          # master + 2 workers, 1 core / 1g each
    print(cluster.master_url)                      # spark://127.0.0.1:PORT
    server = start_connect()                       # SparkConnectServer, --master local[2]
    print(server.url)                              # sc://127.0.0.1:PORT
    server.stop(); cluster.stop()

Workers are started with ``env`` (default: this process's environment *without*
``SPARKMARK_STATE``), and executors inherit the worker's environment: tests use that to show
that executors never need the state store's URL.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from sparkmark.devtools import jvmcache

LOOPBACK = "127.0.0.1"
STATE_ENV = "SPARKMARK_STATE"


def _ephemeral_floor() -> int:
    """The lowest port the kernel hands to outgoing connections (Linux: the first number of
    ``/proc/sys/net/ipv4/ip_local_port_range``, 32768 by default)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, chosen at random below the
    kernel's range for outgoing connections.

    The caller binds it later (a server started with the port on its command line), so a port
    from that range could meanwhile become the local end of any outgoing connection on the
    machine (a Spark driver's, a client's of another test process); below it, only another
    ``free_port`` caller could take it, one chance in thousands.

    Example: ``port = free_port(); subprocess.Popen(["server", f"--port={port}"])``
    """
    import random
    pick = random.SystemRandom()  # not the module's generator: a test may have seeded it
    floor = _ephemeral_floor()
    low = max(1024, min(20000, floor - 4096))
    for _ in range(200):
        port = pick.randint(low, floor - 1) if floor - 1 > low else 0
        with socket.socket() as s:
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                continue
            return s.getsockname()[1]
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    """pyspark's installation directory (it holds ``bin/`` and ``jars/``)."""
    import pyspark
    return Path(pyspark.__file__).resolve().parent


def connect_jar() -> Path | None:
    """The jar with ``SparkConnectServer``: in pyspark's jars (pyspark 4 ships it), else the
    ``spark-connect`` module of this Spark line from the jar cache (Spark 3.5: ``make jars``
    fetches ``org.apache.spark:spark-connect_2.12``), or None.

    Example: ``connect_jar().name.startswith("spark-connect_")``
    """
    found = sorted((spark_home() / "jars").glob("spark-connect_*.jar"))
    if found:
        return found[0]
    from sparkmark.devtools.jars import jars_for
    try:
        cached = jars_for(["connect"])
    except (LookupError, FileNotFoundError):
        return None
    return Path(cached[0]) if cached else None


def _wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}; see {log}:\n"
                               + _tail(log))
        try:
            with socket.create_connection((LOOPBACK, port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{what} did not listen on {LOOPBACK}:{port} within {timeout:.0f}s; "
                       f"see {log}:\n" + _tail(log))


def _tail(log: Path, n: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def _base_env(env: dict[str, str] | None) -> dict[str, str]:
    out = dict(os.environ if env is None else env)
    if env is None:
        out.pop(STATE_ENV, None)
    home = str(spark_home())
    out.update(SPARK_HOME=home, SPARK_LOCAL_IP=LOOPBACK, SPARK_LOCAL_HOSTNAME=LOOPBACK,
               SPARK_NO_DAEMONIZE="1")
    out.setdefault("PYSPARK_PYTHON", sys.executable)
    out.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return out


def _launch(cmd: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen:
    fh = open(log, "ab")
    try:
        # start_new_session: own session and process group, so killpg reaches the whole tree
        return subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=str(cwd), start_new_session=True)
    finally:
        fh.close()


def _kill_group(proc: subprocess.Popen, grace: float = 5.0) -> None:
    if proc.poll() is not None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # Executors (children of a worker) share its process group and die with it; make sure.
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@dataclass
class _Processes:
    root: Path
    procs: list[subprocess.Popen] = field(default_factory=list)
    stopped: bool = False

    def stop(self) -> None:
        """Kill every JVM (and its process group), newest first; remove the work directory."""
        if self.stopped:
            return
        self.stopped = True
        for proc in reversed(self.procs):
            _kill_group(proc)
        shutil.rmtree(self.root, ignore_errors=True)

    def logs(self) -> str:
        """The last lines of every log, for failure messages."""
        return "\n".join(f"== {p.name}\n{_tail(p)}" for p in sorted(self.root.glob("*.log")))


@dataclass
class Standalone(_Processes):
    """A running standalone master and its workers (see :func:`start_standalone`)."""

    master_port: int = 0
    webui_port: int = 0
    workers: int = 0

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT``, the ``--master`` to give drivers."""
        return f"spark://{LOOPBACK}:{self.master_port}"

    def status(self) -> dict:
        """The master's JSON status (``aliveworkers``, ``activeapps``, ...)."""
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.webui_port}/json/",
                                    timeout=5) as r:
            return json.loads(r.read().decode())

    @property
    def work_dirs(self) -> list[Path]:
        """Each worker's work directory (executors run with it as their cwd)."""
        return sorted(self.root.glob("worker-*"))


def start_standalone(workers: int = 2, *, cores: int = 1, memory: str = "1g",
                     env: dict[str, str] | None = None, timeout: float = 120.0) -> Standalone:
    """Start a master and ``workers`` workers on 127.0.0.1 and wait until all registered.

    ``env`` is the workers' (and so the executors') environment; by default this process's
    environment without ``SPARKMARK_STATE``.  The result is stopped at exit at the latest.
    """
    home = spark_home()
    root = Path(tempfile.mkdtemp(prefix="sparkmark-cluster-"))
    base = _base_env(env)
    base["SPARK_LOG_DIR"] = str(root)
    base["SPARK_WORKER_DIR"] = str(root)
    cds = jvmcache.options()  # the tests' class-data-sharing archive, if they enabled it
    if cds and "JAVA_TOOL_OPTIONS" not in base:  # every JVM reads it: executors too
        base["JAVA_TOOL_OPTIONS"] = " ".join(cds)
    c = Standalone(root=root, master_port=free_port(), webui_port=free_port(), workers=workers)
    atexit.register(c.stop)
    spark_class = str(home / "bin" / "spark-class")
    try:
        log = root / "master.log"
        master = _launch([spark_class, "org.apache.spark.deploy.master.Master",
                          "--host", LOOPBACK, "--port", str(c.master_port),
                          "--webui-port", str(c.webui_port)], base, log, root)
        c.procs.append(master)
        _wait_port(c.master_port, master, log, timeout, "Spark master")
        for i in range(workers):
            wdir = root / f"worker-{i}"
            wdir.mkdir()
            c.procs.append(_launch(
                [spark_class, "org.apache.spark.deploy.worker.Worker",
                 "--host", LOOPBACK, "--port", str(free_port()),
                 "--webui-port", str(free_port()), "--cores", str(cores), "--memory", memory,
                 "--work-dir", str(wdir), c.master_url],
                base, root / f"worker-{i}.log", root))
        deadline = time.time() + timeout
        while True:
            try:
                if c.status().get("aliveworkers", 0) >= workers:
                    return c
            except OSError:
                pass
            dead = [p for p in c.procs if p.poll() is not None]
            if dead or time.time() > deadline:
                raise RuntimeError(f"the standalone cluster did not come up "
                                   f"({workers} workers expected):\n{c.logs()}")
            time.sleep(0.5)
    except BaseException:
        c.stop()
        raise


@dataclass
class ConnectServer(_Processes):
    """A running Spark Connect server (see :func:`start_connect`)."""

    port: int = 0

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:PORT`` for ``SparkSession.builder.remote(url)``."""
        return f"sc://{LOOPBACK}:{self.port}"


def start_connect(*, master: str = "local[2]", conf: dict[str, str] | None = None,
                  jars: list[str] | None = None, env: dict[str, str] | None = None,
                  timeout: float = 180.0) -> ConnectServer:
    """Start ``SparkConnectServer`` from pyspark's jars on 127.0.0.1 and a free port.

    ``jars`` (default: the JDBC drivers of :func:`sparkmark.engine.spark.jdbc_jars`) go on the
    server's classpath, ``conf`` are extra ``--conf`` settings.
    """
    server_jar = connect_jar()
    if server_jar is None:
        raise RuntimeError("pyspark's jars have no spark-connect jar: Spark Connect servers "
                           "ship with pyspark 4; for Spark 3.5 run `make jars` (it fetches "
                           "org.apache.spark:spark-connect_2.12), or add it with --packages")
    from sparkmark.engine.spark import jar_urls, jdbc_jars
    home = spark_home()
    root = Path(tempfile.mkdtemp(prefix="sparkmark-connect-"))
    s = ConnectServer(root=root, port=free_port())
    atexit.register(s.stop)
    log_conf = Path(__file__).resolve().parents[1] / "engine" / "log4j2.properties"
    settings = {
        "spark.connect.grpc.binding.port": str(s.port),
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log_conf}",
        "spark.driver.memory": os.environ.get("SPARKMARK_DRIVER_MEMORY", "1g"),
        **(conf or {}),
    }
    cmd = [str(home / "bin" / "spark-submit"), "--class",
           "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", master,
           "--name", "sparkmark-connect"]
    use_jars = list(jdbc_jars() if jars is None else jars)
    if server_jar.parent != home / "jars" and str(server_jar) not in use_jars:
        use_jars.append(str(server_jar))  # Spark 3.5: the server module from the jar cache
    if use_jars:
        cmd += ["--jars", ",".join(jar_urls(use_jars, master))]
    for k, v in settings.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd.append("spark-internal")
    try:
        log = root / "connect.log"
        proc = _launch(cmd, _base_env(env), log, root)
        s.procs.append(proc)
        _wait_port(s.port, proc, log, timeout, "Spark Connect server")
        return s
    except BaseException:
        s.stop()
        raise


def cluster_session(master_url: str, app_name: str = "sparkmark-cluster", *,
                    extra_conf: dict[str, str] | None = None):
    """A driver on ``master_url`` (2 executors of 1 core, 512m each), UI off, UTC, quiet.

    Example: ``spark = cluster_session(start_standalone().master_url)``.
    """
    conf = {"spark.executor.memory": "512m", "spark.executor.cores": "1",
            "spark.cores.max": "2", "spark.driver.host": LOOPBACK,
            "spark.driver.bindAddress": LOOPBACK,
            "spark.pyspark.python": os.environ.get("PYSPARK_PYTHON", sys.executable),
            **(extra_conf or {})}
    from sparkmark.engine.spark import local_session
    return local_session(app_name, master=master_url, extra_conf=conf)
