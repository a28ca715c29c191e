"""How many native threads one worker may use: its share of the CPUs, never more.

Rule: a worker process (a local pool worker, a Ray actor) runs its native thread pools
-- OpenMP/BLAS (numpy, scipy, torch), OpenCV -- with as many threads as the CPUs it
stands for: ``cpu_count // workers`` in a local pool, the actor's ``num_cpus`` (1) on
Ray, as Ray itself does for OpenMP. Without it, N workers each start one thread per
core, N x cores threads fight over the cores, and a second worker adds almost nothing
(OpenCV's SIFT and GrabCut, most of the offline scorer's time, are multi-threaded).
The in-process path (``--workers 1``, local) is left alone: it may use every core.
The offline scorers give the same bytes at any thread count (tests compare them); a
multi-threaded BLAS reduction in a model backend may differ in its last bits.
"""

from __future__ import annotations

import contextlib
import os
import sys

__all__ = ["limit_threads", "share_of_cpus"]

_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS")


def share_of_cpus(workers: int, cpus: int | None = None) -> int:
    """Threads per worker when ``workers`` share ``cpus`` (default: this machine's).

    Example:
        >>> share_of_cpus(2, 2), share_of_cpus(3, 16), share_of_cpus(8, 2)
        (1, 5, 1)
    """
    total = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(1, total // max(1, workers))


def limit_threads(n: int) -> None:
    """Cap this process's native thread pools at ``n`` (libraries loaded now and later)."""
    for name in _ENV:  # read by OpenMP/BLAS libraries when they load
        os.environ[name] = str(n)
    with contextlib.suppress(Exception):  # already-loaded BLAS/OpenMP pools
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=n)
    with contextlib.suppress(Exception):
        import cv2

        cv2.setNumThreads(n)
    if "torch" in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules["torch"].set_num_threads(n)
