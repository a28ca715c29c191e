"""The network guard of tests/conftest.py: off-machine addresses are refused, loopback works.

The refused addresses are in TEST-NET-1 (192.0.2.0/24, RFC 5737) and the reserved
``.invalid`` domain, port 9 (discard), so that even a broken guard would reach nobody.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

BLOCKED = "network access is blocked in tests"
TEST_NET = ("192.0.2.1", 9)


def _assert_guard_error(excinfo: pytest.ExceptionInfo, needle: str) -> None:
    # The guard raises its own RuntimeError; a real attempt would give an OSError.
    assert type(excinfo.value).__name__ == "NetworkBlockedError"
    assert not isinstance(excinfo.value, OSError)
    assert BLOCKED in str(excinfo.value) and needle in str(excinfo.value)


@pytest.fixture
def listener():
    """A TCP server on 127.0.0.1 that answers one connection (one per test)."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(5)

    def serve() -> None:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        with conn:
            conn.sendall(b"hello " + conn.recv(64))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()
    srv.close()
    thread.join(5)


def test_connect_to_test_net_is_refused_before_connecting(listener):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setblocking(False)  # a real connect would return EINPROGRESS/ENETUNREACH at once
        t0 = time.monotonic()
        with pytest.raises(RuntimeError) as excinfo:
            s.connect(TEST_NET)
        assert time.monotonic() - t0 < 1.0
        _assert_guard_error(excinfo, "192.0.2.1")
        with pytest.raises(RuntimeError) as excinfo:
            s.connect_ex(TEST_NET)
        _assert_guard_error(excinfo, "192.0.2.1")
        # No connect was started: the socket is still fresh and can be used for loopback.
        with pytest.raises(OSError):
            s.getpeername()
        s.setblocking(True)
        s.settimeout(5)
        s.connect(listener)
        s.sendall(b"again")
        assert s.recv(64) == b"hello again"


def test_create_connection_and_datagrams_are_refused():
    with pytest.raises(RuntimeError) as excinfo:
        socket.create_connection(TEST_NET, timeout=1)
    _assert_guard_error(excinfo, "192.0.2.1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        with pytest.raises(RuntimeError) as excinfo:
            udp.sendto(b"x", TEST_NET)
        _assert_guard_error(excinfo, "192.0.2.1")


def test_host_name_lookups_are_refused():
    for lookup in (
        lambda: socket.getaddrinfo("guard-check.invalid", 9),
        lambda: socket.gethostbyname("guard-check.invalid"),
        lambda: socket.create_connection(("guard-check.invalid", 9), timeout=1),
    ):
        with pytest.raises(RuntimeError) as excinfo:
            lookup()
        _assert_guard_error(excinfo, "guard-check.invalid")
    with pytest.raises(RuntimeError) as excinfo:
        socket.gethostbyaddr("192.0.2.1")
    _assert_guard_error(excinfo, "192.0.2.1")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_loopback_server_still_accepts(listener, host):
    with socket.create_connection((host, listener[1]), timeout=5) as c:
        c.sendall(b"loopback")
        assert c.recv(64) == b"hello loopback"


def test_ipv6_loopback_and_af_unix_still_work(tmp_path):
    if socket.has_ipv6:
        try:
            srv6 = socket.create_server(("::1", 0), family=socket.AF_INET6)
        except OSError:
            srv6 = None  # no IPv6 loopback on this machine
        if srv6 is not None:
            with srv6, socket.create_connection(srv6.getsockname()[:2], timeout=5):
                srv6.accept()[0].close()
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"ping")
        assert b.recv(4) == b"ping"
    path = str(tmp_path / "guard.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(path)
        srv.listen(1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(path)
            srv.accept()[0].close()
