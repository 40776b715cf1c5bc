"""Lease owners: a name unique to one process and run, and whether that process is gone.

An owner reads ``host:pid:random``. ``host`` is the host name qualified, on Linux, by
this boot of the machine and the PID namespace (``name/<boot id>.<namespace inode>``):
two machines that share a host name, or two containers that share one but not a
process table, are told apart, so a PID is only judged alive or dead where it belongs.
That is what lets a restarted run take back, at once, the items a killed run on the
same machine still held, instead of waiting out the lease.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid

_MAX_HOST_CHARS = 200  # the owner column holds 255 characters


@functools.cache
def local_host_id() -> str:
    """This machine's host name plus, where the system says, its boot and PID namespace."""
    host = socket.gethostname()[:_MAX_HOST_CHARS] or "localhost"
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip().replace("-", "")[:12]
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return host
    return f"{host}/{boot}.{namespace}"


def new_lease_owner() -> str:
    """A lease owner name unique to this process and call: host:pid:random."""
    return f"{local_host_id()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def local_owner_prefix() -> str:
    """What every owner name made by a process of this host and namespace starts with."""
    return f"{local_host_id()}:"


def is_dead_local_owner(owner: str) -> bool:
    """True when `owner` was made on this host and namespace by a process that has ended."""
    host, _, rest = owner.partition(":")
    pid_text, _, _ = rest.partition(":")
    if host != local_host_id() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    return pid != os.getpid() and not _process_alive(pid)


def _process_alive(pid: int) -> bool:
    """Whether `pid` runs here; a zombie (ended, not yet reaped) counts as ended."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in (b"Z", b"X")
