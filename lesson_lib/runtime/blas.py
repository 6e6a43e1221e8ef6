"""How many threads BLAS may use: one inside the lesson's small matmuls, the student's CPU share overall.

The lesson's matmuls are small; on a shared 2-core machine two BLAS threads mostly wait for each
other (measured in section 6's encoder: median 30 ms with one thread, 230 ms with two, under load).
On a hub the problem is larger: OpenBLAS starts one thread per core of the node, while the student's
cgroup quota may allow one core, so its threads fight the quota and the neighbours' kernels.
``fit_blas_to_cpus()`` caps BLAS to ``usable_cpus()`` for the whole kernel; ``one_blas_thread()``
limits a block to one thread. Without threadpoolctl both do nothing; starting Jupyter with
``OPENBLAS_NUM_THREADS`` set has the same effect (``binder/start`` does that in a hub image).
"""

from __future__ import annotations

import contextlib

import numpy  # noqa: F401  (loads the BLAS that threadpoolctl must see)

from lesson_lib.runtime.cpus import usable_cpus

__all__ = ["blas_threads", "fit_blas_to_cpus", "one_blas_thread"]

_controller = None


def _blas_controller():
    """threadpoolctl's view of the loaded BLAS libraries, or None without threadpoolctl."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    if _controller is None:  # scanning the loaded libraries takes milliseconds: do it once
        _controller = ThreadpoolController()
    return _controller


def one_blas_thread():
    """Context manager: BLAS limited to one thread inside it, if threadpoolctl is installed."""
    controller = _blas_controller()
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


def fit_blas_to_cpus(cpus: int | None = None) -> int | None:
    """Cap BLAS threads for the rest of this process to ``cpus``.

    The default is ``usable_cpus()``, but never more threads than BLAS already runs: a count the
    learner or the hub chose (``OPENBLAS_NUM_THREADS=1``) is a limit too, and is kept.

    Returns the cap set, or None when nothing could be set (no threadpoolctl, or no BLAS loaded);
    the lesson then runs as before, only less politely on a shared node.
    """
    controller = _blas_controller()
    if controller is None:
        return None
    blas = controller.select(user_api="blas")
    if not blas.lib_controllers:
        return None
    if cpus is None:
        limit = min(usable_cpus(), max(lib.num_threads for lib in blas.lib_controllers))
    else:
        limit = max(1, int(cpus))
    blas.limit(limits=limit)  # not used as a context manager: the cap stays
    return limit


def blas_threads() -> int | None:
    """The largest thread count among the loaded BLAS libraries, or None when unknown."""
    controller = _blas_controller()
    if controller is None:
        return None
    counts = [lib.num_threads for lib in controller.select(user_api="blas").lib_controllers]
    return max(counts) if counts else None
