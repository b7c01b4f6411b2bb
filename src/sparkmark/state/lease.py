"""Lease rules for "one active run per job" (pure functions, no database)."""
from __future__ import annotations

import os
import socket

DEFAULT_LEASE_MS = int(os.environ.get("SPARKMARK_LEASE_SECONDS", "120")) * 1000


def this_host() -> str:
    return socket.gethostname()


def pid_alive(pid: int) -> bool:
    """True when a process with that pid exists on this host (zombies count as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) is gone for our purposes
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return True


def lease_is_alive(*, host: str | None, pid: int | None, expires_ts: int | None, now: int,
                   my_host: str, is_pid_alive=pid_alive) -> bool:
    """A lease is alive until it expires (the heartbeat keeps renewing it); on our own host it
    also dies at once with its process (e.g. after ``kill -9``)."""
    if host is None or expires_ts is None:
        return False
    if host == my_host and pid is not None and not is_pid_alive(pid):
        return False
    return expires_ts > now
