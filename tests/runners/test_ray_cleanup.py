"""A driver that started a local Ray instance leaves none of its processes behind when it
is killed (issue 23 item 10): SIGTERM stops Ray and exits 143; after SIGKILL the reaper
stops the agents (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) the raylet leaves.

Truth is the process table: the driver's descendants seen before the kill (``psutil``,
independent of the reaper's own ``/proc`` walk) must all be gone within a bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

psutil = pytest.importorskip("psutil")
pytest.importorskip("ray")

pytestmark = pytest.mark.slow

DRIVER = textwrap.dedent("""
    import time
    from vidmem.runners.execution_spec import ExecutorSpec
    from vidmem.runners.ray_session import connect
    ray = connect(ExecutorSpec(kind="ray", workers=1))
    print("ready", flush=True)
    time.sleep(600)
""")
START_S, EXIT_S, GONE_S = 180.0, 30.0, 15.0


def _ray_descendants(pid: int) -> list:
    procs = []
    for p in psutil.Process(pid).children(recursive=True):
        try:
            text = p.name() + " " + " ".join(p.cmdline())
        except psutil.Error:
            continue
        if "ray" in text:
            procs.append(p)
    return procs


def _alive(procs: list) -> list[str]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {p.name()}")
        except psutil.Error:
            continue
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_driver_leaves_no_ray_process(tmp_path, sig):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: list = []
    try:
        deadline = time.monotonic() + START_S
        line = driver.stdout.readline()
        while line and line.strip() != "ready" and time.monotonic() < deadline:
            line = driver.stdout.readline()
        assert line.strip() == "ready", "the driver did not start Ray"
        # the raylet starts its agents a little after ray.init returns
        while time.monotonic() < deadline:
            seen = _ray_descendants(driver.pid)
            names = " ".join(p.name() for p in seen)
            if "DashboardAgent" in names and "RuntimeEnvAgent" in names:
                break
            time.sleep(0.5)
        names = sorted(p.name() for p in seen)
        assert any("raylet" in n for n in names) and any("Agent" in n for n in names), names
        driver.send_signal(sig)
        rc = driver.wait(timeout=EXIT_S)
        assert rc == (128 + signal.SIGTERM if sig == signal.SIGTERM else -signal.SIGKILL)
        deadline = time.monotonic() + GONE_S
        while _alive(seen) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert _alive(seen) == []
    finally:
        if driver.poll() is None:
            driver.kill()
        for p in seen:  # only the processes this test's driver started
            if _alive([p]):
                p.kill()
