"""Test-wide settings: never touch the network, never write to the user's caches.

The network guard (:func:`pytest_configure`) refuses, with a ``NetworkBlockedError``
naming the address, every socket connection, datagram and host-name lookup that is not
to this machine: only loopback (127.0.0.0/8, ::1, ``localhost``) and AF_UNIX pass. It
is a :func:`sys.addaudithook` hook, so it fires inside the C socket functions before the
connect/send system call, whoever holds a reference to them (``socket.create_connection``,
urllib3, httpx, asyncio, ssl). One gap: a host name passed straight to
``socket.connect()`` is resolved by C before the audit event, so that one lookup may go
out; the connection is still refused. Spawned worker processes do not load this file;
they talk to the parent over pipes and AF_UNIX sockets.
"""

from __future__ import annotations

import os

# Set before any test imports transformers/huggingface_hub: no test may download.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")

import ipaddress  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from vidmem.generators.protocol import GenerationRequest, GenerationResult  # noqa: E402
from vidmem.generators.sim import SimGenerator  # noqa: E402
from vidmem.runners.sim_build import build  # noqa: E402

# -- network guard --------------------------------------------------------------------


class NetworkBlockedError(RuntimeError):
    """A test tried to reach a host other than this machine.

    A RuntimeError, not an OSError, so that retry loops and ``except OSError`` fallbacks
    in the code under test do not swallow it.
    """


_GUARD = {"on": False, "hooked": False}
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_LOOKUP_EVENTS = frozenset(
    {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"}
)
_REVERSE_EVENTS = frozenset({"socket.gethostbyaddr", "socket.getnameinfo"})
_SEND_EVENTS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})


def _host_text(host: object) -> str | None:
    if isinstance(host, bytes | bytearray):
        host = bytes(host).decode("ascii", "replace")
    if not isinstance(host, str):
        return None
    return host.strip().strip("[]").split("%", 1)[0].rstrip(".").lower()


def _is_loopback(host: object) -> bool:
    """127.0.0.0/8, ::1 (also as ::ffff:127.x.x.x) or a localhost name."""
    text = _host_text(host)
    if text is None:
        return False
    if text in _LOOPBACK_NAMES or text.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _lookup_is_local(host: object) -> bool:
    """Resolving these sends nothing: no host (bind), an IP literal, loopback, ourselves."""
    if host is None:
        return True
    text = _host_text(host)
    if text is None:
        return False
    if text in ("", "*") or _is_loopback(text):
        return True
    try:
        ipaddress.ip_address(text)
        return True  # a literal is parsed, not looked up; connecting to it is checked apart
    except ValueError:
        pass
    return text == socket.gethostname().lower()


def _network_guard(event: str, args: tuple) -> None:
    if not _GUARD["on"] or not event.startswith("socket."):
        return
    if event in _LOOKUP_EVENTS:
        host = args[0] if args else None
        if not _lookup_is_local(host):
            raise NetworkBlockedError(
                f"network access is blocked in tests: {event}({host!r}) would look up a "
                "host that is not this machine; only loopback (127.0.0.0/8, ::1, localhost) "
                "and AF_UNIX are allowed (guard in tests/conftest.py)"
            )
        return
    if event in _REVERSE_EVENTS:  # a reverse lookup of any address but ours is a query
        host = args[0][0] if args and isinstance(args[0], tuple) and args[0] else args[0]
        text = _host_text(host)
        if not (_is_loopback(host) or text == socket.gethostname().lower()):
            raise NetworkBlockedError(
                f"network access is blocked in tests: {event}({host!r}) would query a "
                "name server; only loopback (127.0.0.0/8, ::1, localhost) and AF_UNIX are "
                "allowed (guard in tests/conftest.py)"
            )
        return
    if event not in _SEND_EVENTS:
        return
    sock, address = args[0], args[-1]
    if event != "socket.connect" and address is None:
        return  # send on an already connected socket: its connect was checked
    family = getattr(sock, "family", None)
    if family == socket.AF_UNIX:
        return
    inet = family in (socket.AF_INET, socket.AF_INET6)
    if inet and isinstance(address, tuple) and address and _is_loopback(address[0]):
        return
    raise NetworkBlockedError(
        f"network access is blocked in tests: {event} to {address!r} "
        f"(family {getattr(family, 'name', family)}); only loopback (127.0.0.0/8, ::1, "
        "localhost) and AF_UNIX are allowed (guard in tests/conftest.py)"
    )


def pytest_configure(config):
    """Turn the network guard on for the whole run (audit hooks cannot be removed)."""
    if not _GUARD["hooked"]:
        sys.addaudithook(_network_guard)
        _GUARD["hooked"] = True
    _GUARD["on"] = True


def pytest_unconfigure(config):
    _GUARD["on"] = False


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Point vidmem's caches (arrays, judge answers) at a per-session temp dir."""
    monkeypatch.setenv("VIDMEM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "vidmem-cache"))
    monkeypatch.delenv("VIDMEM_JUDGE_CACHE", raising=False)


# -- shared sim builds (built once per session: they take seconds) -----------------------


@pytest.fixture(scope="session")
def cmbench_root(tmp_path_factory) -> Path:
    """A CMBench build with 2 context videos (4 tasks), seed 0."""
    root = tmp_path_factory.mktemp("sim_cmbench")
    build("cmbench", root, seed=0, n_cases=2)
    return root


@pytest.fixture(scope="session")
def cmbench_rows(cmbench_root) -> list[dict[str, Any]]:
    lines = (cmbench_root / "metadata.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="session")
def cmbench_truth(cmbench_root) -> Callable[[str], dict[str, Any]]:
    def load(video_id: str) -> dict[str, Any]:
        return json.loads((cmbench_root / "_truth" / f"{video_id}.json").read_text("utf-8"))

    return load


@pytest.fixture(scope="session")
def loop_root(tmp_path_factory) -> Path:
    """A memory-loop build with 1 start image (6 cases), seed 0."""
    root = tmp_path_factory.mktemp("sim_loops")
    build("memory_loop", root, seed=0, n_cases=1)
    return root


@pytest.fixture(scope="session")
def continuation(cmbench_root, cmbench_rows, tmp_path_factory) -> Callable[..., GenerationResult]:
    """Generate (once per arguments) the continuation of a CMBench task."""
    out_dir = tmp_path_factory.mktemp("sim_continuations")
    cache: dict[tuple[Any, ...], GenerationResult] = {}

    def run(task_type: str, memory: str, *, video: int = 0, seed: int = 0,
            duration: float | None = None, tag: str = "") -> GenerationResult:
        key = (task_type, memory, video, seed, duration, tag)
        if key not in cache:
            row = [r for r in cmbench_rows if r["task_type"] == task_type][video]
            req = GenerationRequest(
                request_id=row["task_id"], benchmark="cmbench", prompt=row["continue_prompt"],
                out_path=str(out_dir / f"{row['task_id']}_{memory}_{seed}_{duration}{tag}.mp4"),
                context_video=str(cmbench_root / row["video"]), duration_seconds=duration)
            cache[key] = SimGenerator(memory=memory, seed=seed).generate(req)
        return cache[key]

    return run


def colour_hist(img: np.ndarray) -> np.ndarray:
    """L2-normalised 12 x 4 x 4 HSV histogram of an RGB uint8 image."""
    hsv = cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2HSV)
    h = cv2.calcHist([hsv], [0, 1, 2], None, [12, 4, 4], [0, 180, 0, 256, 0, 256]).ravel()
    return h / max(float(np.linalg.norm(h)), 1e-12)


@pytest.fixture(scope="session")
def hist_cosine() -> Callable[[np.ndarray, np.ndarray], float]:
    return lambda a, b: float(colour_hist(a) @ colour_hist(b))
