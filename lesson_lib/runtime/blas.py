"""BLAS threads: one inside the lesson's small matmuls, the student's CPU share (``usable_cpus``) for the kernel.

Two BLAS threads on a small matmul mostly wait for each other on a shared 2-core machine (§6's encoder: median
30 ms with one thread, 230 ms with two, under load); on a hub OpenBLAS starts one thread per core of the node
while the student's quota may allow one. ``binder/start`` sets ``OPENBLAS_NUM_THREADS`` the same way in a hub image.
"""

import functools

import numpy  # noqa: F401  (loads the BLAS that threadpoolctl must see)

from lesson_lib.runtime.cpus import usable_cpus


@functools.cache
def _blas():
    """threadpoolctl's view of the loaded BLAS libraries (scanning them takes milliseconds: once)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def one_blas_thread():
    """Context manager: BLAS limited to one thread inside it."""
    return _blas().limit(limits=1)


def fit_blas_to_cpus(cpus: int | None = None) -> int | None:
    """Cap BLAS threads for the rest of this process to ``cpus``; the cap set, or None when no BLAS is loaded.

    The default is ``usable_cpus()``, but never more threads than BLAS already runs: a count the learner or the
    hub chose (``OPENBLAS_NUM_THREADS=1``) is a limit too.
    """
    if not _blas().lib_controllers:
        return None
    limit = max(1, int(cpus)) if cpus is not None else min(usable_cpus(), blas_threads())
    _blas().limit(limits=limit)  # not used as a context manager: the cap stays
    return limit


def blas_threads() -> int | None:
    """The largest thread count among the loaded BLAS libraries, or None when none is loaded."""
    return max((lib.num_threads for lib in _blas().lib_controllers), default=None)
