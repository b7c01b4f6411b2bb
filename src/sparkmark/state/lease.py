"""Lease rules for "one active run per job" (pure functions, no database).

A lease names its holder with a token ``hostname#boot.pidns.start``: the host name, the
kernel's boot id, the inode of the holder's PID namespace and the holder process's start time.
Only a process that shares host name, boot and PID namespace can see whether the holder is
alive (containers that share a host name do not see each other's pids); every other process
waits for the lease to expire.  The start time tells a recycled pid from the holder."""
from __future__ import annotations

import os
import socket

DEFAULT_LEASE_MS = int(os.environ.get("SPARKMARK_LEASE_SECONDS", "120")) * 1000


def this_host() -> str:
    return socket.gethostname()


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def namespace_id() -> str:
    """``boot.pidns``: which kernel boot and PID namespace this process lives in."""
    boot = _read("/proc/sys/kernel/random/boot_id").replace("-", "")[:12] or "noboot"
    try:
        ns = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        ns = "nons"
    return f"{boot}.{ns}"


def process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot ('' when unknown)."""
    text = _read(f"/proc/{int(pid)}/stat")
    try:
        return text.rsplit(") ", 1)[1].split()[19]
    except IndexError:
        return ""


def lease_token(host: str, pid: int) -> str:
    """The lease holder's identity (see the module docstring).

    >>> lease_token("h", os.getpid()).startswith("h#")
    True
    """
    if pid == os.getpid():  # this process's own: the same for its whole life
        own = _OWN.get(pid)
        if own is None:
            own = _OWN[pid] = f"{namespace_id()}.{process_start(pid)}"
        return f"{host}#{own}"
    return f"{host}#{namespace_id()}.{process_start(pid)}"


#: this process's ``boot.pidns.start``, by pid (a forked child has its own pid, so its own)
_OWN: dict[int, str] = {}


def host_name(token: str | None) -> str | None:
    """The host name part of a lease token, for messages."""
    return token.split("#", 1)[0] if token else token


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
    if "#" in host:
        name, ident = host.split("#", 1)
        ns, _, start = ident.rpartition(".")
        if name == my_host and ns == namespace_id() and pid is not None:
            if not is_pid_alive(pid):
                return False
            if start and is_pid_alive is pid_alive and process_start(pid) not in ("", start):
                return False  # the pid now belongs to another process
        return expires_ts > now
    if host == my_host and pid is not None and not is_pid_alive(pid):
        return False
    return expires_ts > now
