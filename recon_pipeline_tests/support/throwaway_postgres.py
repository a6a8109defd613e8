"""A PostgreSQL cluster a test owns outright: initdb in a temp dir, started on a free loopback port, and
frozen on demand (SIGSTOP of the postmaster and every backend) to play a database that stops answering
without closing a socket, which no shared server may be put through.

Always used as a context manager: it thaws and stops the cluster (immediate mode) and removes its files
whatever the test did.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

USER = "recon"


def free_port() -> int:
    """A loopback port that was free a moment ago (for servers that bind it themselves)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (a postmaster's are its backends and auxiliary processes)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _cpu_fields(pid: int) -> list[int]:
    """utime, stime, cutime, cstime of ``pid`` in clock ticks (``proc(5)``); empty once it has ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []
    return [int(value) for value in fields[11:15]]


@dataclass
class ThrowawayCluster:
    url: str
    data_dir: Path

    @property
    def postmaster_pid(self) -> int:
        return int((self.data_dir / "postmaster.pid").read_text().split()[0])

    def freeze(self) -> None:
        """Stop the postmaster first (no new backends), then every process it started."""
        os.kill(self.postmaster_pid, signal.SIGSTOP)
        for pid in _children(self.postmaster_pid):
            os.kill(pid, signal.SIGSTOP)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the cluster has used so far: the postmaster's own, its live
        children's (backends, auxiliary processes) and that of the children it has reaped (a backend's
        whole life once it exits), so the difference of two readings is the cluster's work between them."""
        ticks = os.sysconf("SC_CLK_TCK")
        postmaster = _cpu_fields(self.postmaster_pid)
        own_and_reaped = sum(postmaster[:4])  # utime, stime, cutime, cstime
        live = sum(sum(fields[:2]) for pid in _children(self.postmaster_pid) if (fields := _cpu_fields(pid)))
        return (own_and_reaped + live) / ticks

    def thaw(self) -> None:
        for pid in _children(self.postmaster_pid):
            with contextlib.suppress(ProcessLookupError):  # a backend that ended since it was listed
                os.kill(pid, signal.SIGCONT)
        os.kill(self.postmaster_pid, signal.SIGCONT)


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        if os.environ.get("RECON_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL's {name} is required here but not installed")
        pytest.skip(f"PostgreSQL's {name} is not installed")
    return found[-1]


@contextmanager
def throwaway_cluster() -> Iterator[ThrowawayCluster]:
    """A fresh cluster with trust auth for ``recon`` on 127.0.0.1 (as user postgres when run as root,
    since initdb refuses root)."""
    as_user = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="recon-pg-"))
    data_dir = root / "data"
    if as_user is not None:
        shutil.chown(root, as_user)
    port = free_port()

    def run(command: list[str], check: bool = True) -> None:
        subprocess.run(command, user=as_user, check=check, capture_output=True, timeout=120)

    cluster = ThrowawayCluster(f"postgresql://{USER}@127.0.0.1:{port}/postgres", data_dir)
    started = False
    try:
        run([_bin("initdb"), "-D", str(data_dir), "-A", "trust", "-U", USER, "--no-sync"])
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        start = [_bin("pg_ctl"), "start", "-D", str(data_dir), "-o", options, "-w", "-t", "60"]
        run([*start, "-l", str(root / "log")])
        started = True
        yield cluster
    finally:
        if started:
            try:
                cluster.thaw()
            finally:
                stop = [_bin("pg_ctl"), "stop", "-D", str(data_dir), "-m", "immediate", "-w", "-t", "60"]
                run(stop, check=False)
        shutil.rmtree(root, ignore_errors=True)
