"""A TCP proxy that loses a server's answer on purpose (test infrastructure, not the product).

A database client that sends ``COMMIT`` and loses its connection before the answer arrives
cannot tell whether the transaction landed: the server may have carried it out.  Stopping the
server only hits that window by luck (``benchmarks/chaos.py``'s ``store_down``); this proxy hits
it every time, with the real server and the real client library: it passes bytes both ways
until a client message holding ``marker`` went through, waits for the server's answer to it
(by then the server has carried it out), drops that answer and closes the client's
connection.  With ``down_s`` it also closes every other connection and refuses new ones for
that long, as an outage that starts at that moment would.

    proxy = CutProxy("127.0.0.1", pg.port)
    url = pg_url.replace(f":{pg.port}/", f":{proxy.port}/")
    proxy.cut_after(b"COMMIT")   # the next COMMIT lands; its answer is lost
"""
from __future__ import annotations

import socket
import threading
import time


class CutProxy:
    """Forward ``127.0.0.1:<port>`` to ``host:port``; :meth:`cut_after` arms one cut.

    Example: ``proxy = CutProxy("127.0.0.1", 5432); proxy.cut_after(b"COMMIT"); proxy.close()``
    """

    def __init__(self, host: str, port: int):
        self._to = (host, port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._marker: bytes | None = None
        self._down_s = 0.0
        self._following: bytes | None = None
        self._refuse_until = 0.0
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._closed = False
        #: how many cuts happened (a test checks that its cut really hit)
        self.cuts = 0
        threading.Thread(target=self._accept, name="cutproxy-accept", daemon=True).start()

    def cut_after(self, marker: bytes, down_s: float = 0.0, *, following: bytes | None = None
                  ) -> None:
        """Cut the connection whose next client message holds ``marker``, once, after the
        server answered it; then refuse connections for ``down_s`` seconds.  ``following``:
        only on a connection that sent ``following`` before (the ``COMMIT`` of one
        transaction: ``cut_after(b"COMMIT", following=b"INSERT INTO sm_runs")``)."""
        with self._lock:
            self._marker, self._down_s, self._following = marker, down_s, following

    def wait_accepting(self, timeout: float = 30.0) -> None:
        """Return once the proxy no longer refuses connections (a cut's ``down_s`` is over)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < min(self._refuse_until, deadline):
            time.sleep(0.05)

    def disarm(self) -> None:
        """Forget a cut that has not happened."""
        with self._lock:
            self._marker, self._down_s, self._following = None, 0.0, None

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self._closed = True
        try:
            self._listener.close()
        finally:
            with self._lock:
                pairs, self._pairs = self._pairs, []
            for a, b in pairs:
                _close(a, b)

    # ------------------------------------------------------------------ internals
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if time.monotonic() < self._refuse_until:
                _close(client)
                continue
            try:
                server = socket.create_connection(self._to, timeout=10)
                server.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._pairs.append((client, server))
            state = {"cutting": False}
            threading.Thread(target=self._upstream, args=(client, server, state),
                             daemon=True).start()
            threading.Thread(target=self._downstream, args=(client, server, state),
                             daemon=True).start()

    def _upstream(self, client: socket.socket, server: socket.socket, state: dict) -> None:
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                with self._lock:
                    if self._following is not None and self._following in data:
                        state["primed"] = True
                    if self._marker is not None and self._marker in data:
                        if self._following is None or state.get("primed"):
                            self._marker = None
                            state["cutting"] = True
                        state["primed"] = False  # that transaction is over
                server.sendall(data)
        except OSError:
            pass
        if not state["cutting"]:
            _close(client, server)

    def _downstream(self, client: socket.socket, server: socket.socket, state: dict) -> None:
        try:
            while True:
                data = server.recv(65536)
                if not data:
                    break
                if state["cutting"]:  # the answer to the marked message: never delivered
                    self._cut(client, server)
                    return
                client.sendall(data)
        except OSError:
            pass
        _close(client, server)

    def _cut(self, client: socket.socket, server: socket.socket) -> None:
        with self._lock:
            self.cuts += 1
            down, self._down_s = self._down_s, 0.0
            if down > 0:
                self._refuse_until = time.monotonic() + down
                pairs, self._pairs = self._pairs, []
            else:
                pairs = [(client, server)]
        for a, b in pairs:
            _close(a, b)
        _close(client, server)


def _close(*socks: socket.socket) -> None:
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass
