"""BLAS threads: two on a small matmul mostly wait for each other on a shared 2-core machine (§6's
encoder: median 30 ms with one thread, 230 ms with two, under load), so the lesson runs one."""

import functools

import numpy  # noqa: F401  (loads the BLAS that threadpoolctl must see)


@functools.cache  # the scan takes milliseconds
def _blas():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def one_blas_thread():
    return _blas().limit(limits=1)


def fit_blas_to_cpus(cpus: int) -> None:
    """Cap BLAS threads to ``cpus`` (at least 1) for the rest of this process."""
    _blas().limit(limits=max(1, int(cpus)))  # not used as a context manager: the cap stays


def blas_threads() -> int | None:
    return max((lib.num_threads for lib in _blas().lib_controllers), default=None)
