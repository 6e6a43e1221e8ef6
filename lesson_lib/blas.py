"""Run a block with one BLAS thread, so timings on a shared 2-core machine stay steady.

The lesson's matmuls are small; on a shared 2-core machine two BLAS threads mostly wait for each
other (measured in section 6's encoder: median 30 ms with one thread, 230 ms with two, under load).
Without threadpoolctl this does nothing; starting Jupyter with ``OPENBLAS_NUM_THREADS=1`` has the
same effect.
"""

from __future__ import annotations

import contextlib

__all__ = ["one_blas_thread"]

_controller = None


def one_blas_thread():
    """Context manager: BLAS limited to one thread inside it, if threadpoolctl is installed."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return contextlib.nullcontext()
    if _controller is None:  # scanning the loaded libraries takes milliseconds: do it once
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
