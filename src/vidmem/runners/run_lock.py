"""One writer per run directory: an exclusive lock, held while a process writes the run.

Two processes resuming the same run would compute the same items twice and race on
``run.json``. :func:`acquire` takes an advisory ``flock`` on ``RUN/.vidmem.lock``; the
kernel drops it when the holder exits, however it exits, so a killed run never leaves a
stale lock behind. One process may open the same run more than once (the lock is
counted). On systems without ``fcntl`` (Windows) runs are not locked.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from vidmem.errors import StoreError

LOCK_FILE = ".vidmem.lock"

#: resolved run directory -> [lock file descriptor, how many RunDir objects hold it]
_HELD: dict[str, list[int]] = {}


def acquire(root: Path) -> Callable[[], None]:
    """Lock ``root`` (an existing folder) for this process; return the release function.

    Raises:
        StoreError: another live process holds the lock (its pid is named).
    """
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks through fcntl
        return lambda: None
    key = str(root.resolve())
    if key in _HELD:
        _HELD[key][1] += 1
        return lambda: _release(key)
    path = root / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise StoreError(
            f"{root}: another vidmem process (pid {holder}) is writing this run directory",
            hint="wait for it to finish (a second writer would compute the same items "
            "again), or choose another --out; the lock goes away by itself when that "
            "process ends",
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError:  # a full disk: the pid only helps a message, the flock is what locks
        pass
    _HELD[key] = [fd, 1]
    return lambda: _release(key)


def is_held(root: Path) -> bool:
    """Whether a live process (this one included) holds ``root``'s lock.

    A run.json that says ``running`` while nobody holds the lock belongs to a process that
    died (killed, or an error before the run could record it). Without ``fcntl`` the
    answer is ``True``: nothing can be known, so nothing is taken for dead.
    """
    try:
        import fcntl
    except ImportError:
        return True
    if str(root.resolve()) in _HELD:
        return True
    try:
        fd = os.open(root / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # drops the probe's lock, if it got one
    return False


def _release(key: str) -> None:
    held = _HELD.get(key)
    if held is None:
        return
    held[1] -= 1
    if held[1] <= 0:
        del _HELD[key]
        os.close(held[0])  # closing the descriptor drops the flock
