"""Stops the processes of a local Ray instance once the driver that started it is gone.

``ray.init()`` starts ``gcs_server`` and ``raylet`` (which die with the driver: Ray binds
them to it) and the raylet starts ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent``
(even without the dashboard), which outlive a driver killed with SIGKILL, or with SIGTERM
during ``ray.init``, by up to a minute. :func:`start` runs this module as a small
separate process: it watches the driver's Ray processes (its descendants with a
``ray::`` name or an executable/script inside the ray package) and, when the driver's
end of its stdin pipe closes (the driver exited, however), terminates those still
alive, then kills what is left after a grace period.

Only processes seen as the driver's Ray descendants are touched, each checked by pid
and start time (a reused pid is never signalled).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["GRACE_SECONDS", "POLL_SECONDS", "is_ray_process", "ray_descendants", "start"]

#: how often the driver's Ray processes are looked up while it lives
POLL_SECONDS = 0.5
#: how long the processes get to exit after SIGTERM before SIGKILL
GRACE_SECONDS = 2.0


def is_ray_process(name: str, cmdline: list[str], ray_dir: str) -> bool:
    """Whether a process (its name and command line) belongs to a Ray instance.

    Example:
        >>> is_ray_process("ray::IDLE", ["ray::IDLE"], "/site/ray")
        True
        >>> is_ray_process("raylet", ["/site/ray/core/src/ray/raylet/raylet", "--x"], "/site/ray")
        True
        >>> is_ray_process("python", ["python", "-u", "/site/ray/dashboard/agent.py"], "/site/ray")
        True
        >>> is_ray_process("python", ["python", "my_script.py"], "/site/ray")
        False
    """
    if name.startswith("ray::"):
        return True
    prefix = ray_dir.rstrip("/") + "/"
    return any(arg.startswith(prefix) for arg in cmdline[:3])


def _stat(pid: int) -> tuple[int, int, str] | None:
    """``(ppid, start time in clock ticks, state)`` of ``pid`` from ``/proc``, or ``None``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name may hold spaces and ')'
    return int(fields[1]), int(fields[19]), fields[0]


def _cmdline(pid: int) -> tuple[str, list[str]]:
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "", []
    return name, [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def ray_descendants(pid: int, ray_dir: str) -> dict[int, int]:
    """The Ray processes under ``pid``: pid -> start time (``/proc``; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    stats = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None:
            stats[int(entry.name)] = st
            children.setdefault(st[0], []).append(int(entry.name))
    found, todo = {}, list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        todo += children.get(child, ())
        name, cmdline = _cmdline(child)
        if is_ray_process(name, cmdline, ray_dir) or (cmdline and is_ray_process(
                cmdline[0], cmdline, ray_dir)):
            found[child] = stats[child][1]
    return found


def _alive(procs: dict[int, int]) -> list[int]:
    """The pids of ``procs`` still running as the same process (start time checked)."""
    out = []
    for pid, started in procs.items():
        st = _stat(pid)
        if st is not None and st[1] == started and st[2] != "Z":
            out.append(pid)
    return out


def reap(procs: dict[int, int], grace: float = GRACE_SECONDS) -> None:
    """SIGTERM every process of ``procs`` still alive, SIGKILL what is left after ``grace``."""
    for pid in _alive(procs):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(procs) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in _alive(procs):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def watch(driver: int, ray_dir: str) -> None:
    """Track ``driver``'s Ray processes until stdin closes, then stop them."""
    seen: dict[int, int] = {}
    fd = sys.stdin.fileno()
    while True:
        seen.update(ray_descendants(driver, ray_dir))
        readable, _, _ = select.select([fd], [], [], POLL_SECONDS)
        if readable and not os.read(fd, 4096):
            break  # the driver's end of the pipe closed: it exited
    reap(seen)


def start(ray_dir: str | os.PathLike[str]) -> subprocess.Popen[bytes]:
    """Start the reaper for this process's Ray processes; keep the returned object alive
    (its stdin pipe is what tells the reaper this process ended)."""
    return subprocess.Popen(
        [sys.executable, "-m", "vidmem.runners.ray_reaper", str(os.getpid()), str(ray_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C to the terminal's group must not stop it first
        close_fds=True,
    )


if __name__ == "__main__":  # pragma: no cover - runs as its own process
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(sys.argv[1]), str(Path(sys.argv[2])))
