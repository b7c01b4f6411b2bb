"""A throwaway, real MariaDB server on 127.0.0.1, for tests (no system service needed).

Uses Debian's ``mariadb-server`` binaries: ``mariadb-install-db`` into a temporary folder, then
``mariadbd`` on a free port and a socket in that folder.  A user ``sm`` (password ``sm``) gets
every privilege, for the JDBC driver (``libmariadb-java``: /usr/share/java/mariadb-java-client.jar)::

    server = start_mariadb()
    url = server.create_database("t1")      # jdbc:mariadb://127.0.0.1:PORT/t1
    ...
    server.stop()
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sparkmark.devtools.cluster import free_port

JAR = "/usr/share/java/mariadb-java-client.jar"
USER, PASSWORD = "sm", "sm"


def available() -> str | None:
    """None when a server can be started here, else why not (for ``pytest.skip``)."""
    for exe in ("mariadb-install-db", "mariadbd", "mariadb"):
        if shutil.which(exe) is None and not Path(f"/usr/sbin/{exe}").exists():
            return f"{exe} missing: apt-get install mariadb-server"
    if not Path(JAR).exists():
        return f"MariaDB JDBC driver missing: apt-get install libmariadb-java ({JAR})"
    return None


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


@dataclass
class MariaDBServer:
    root: Path
    port: int
    proc: subprocess.Popen

    @property
    def socket(self) -> str:
        return str(self.root / "s.sock")

    def sql(self, statement: str, database: str | None = None) -> str:
        """Run SQL as root through the socket; returns the client's output."""
        args = [_exe("mariadb"), "-uroot", f"--socket={self.socket}", "-N", "-e", statement]
        if database:
            args.append(database)
        return subprocess.run(args, check=True, capture_output=True, text=True).stdout

    def create_database(self, name: str, scheme: str = "mariadb") -> str:
        """Create a database; its JDBC URL (``jdbc:mariadb:`` or ``jdbc:mysql:``) with user and
        password in the query."""
        self.sql(f"CREATE DATABASE `{name}`")
        return (f"jdbc:{scheme}://127.0.0.1:{self.port}/{name}?user={USER}&password={PASSWORD}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def start_mariadb(timeout: float = 120.0) -> MariaDBServer:
    """Initialise a data folder and start ``mariadbd`` on a free port."""
    why = available()
    if why:
        raise RuntimeError(why)
    root = Path(tempfile.mkdtemp(prefix="sm-mariadb-"))
    data = root / "data"
    user = ["--user=mysql"] if os.geteuid() == 0 else []
    if os.geteuid() == 0:
        shutil.chown(root, "mysql", "mysql")
    subprocess.run([_exe("mariadb-install-db"), *user, f"--datadir={data}",
                    "--auth-root-authentication-method=socket", "--skip-test-db"],
                   check=True, capture_output=True, text=True)
    port = free_port()
    log = open(root / "server.log", "w")
    proc = subprocess.Popen([_exe("mariadbd"), *user, f"--datadir={data}",
                             f"--socket={root / 's.sock'}", f"--port={port}",
                             "--bind-address=127.0.0.1", f"--pid-file={root / 'm.pid'}",
                             "--skip-log-bin", "--innodb-buffer-pool-size=32M"],
                            stdout=log, stderr=subprocess.STDOUT)
    server = MariaDBServer(root=root, port=port, proc=proc)
    deadline = time.time() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"mariadbd exited: {(root / 'server.log').read_text()[-800:]}")
        try:
            server.sql("SELECT 1")
            break
        except subprocess.CalledProcessError:
            if time.time() > deadline:
                server.stop()
                raise RuntimeError("mariadbd did not start in time") from None
            time.sleep(0.5)
    server.sql(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'; "
               f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%'; FLUSH PRIVILEGES")
    return server
