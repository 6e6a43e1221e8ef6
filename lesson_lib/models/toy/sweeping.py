"""The sweep over head counts: train every h, score it, and stop at once when interrupted.

Head counts train in worker processes of a ``loky`` pool (threads would share one interpreter lock,
and a fifth of the training time is Python between NumPy calls), as many as the CPUs this kernel may use
(``cpus.usable_cpus()``: affinity and cgroup quota), largest h first. With one usable CPU, or when
worker processes cannot start, everything trains in this process. A model is the same whether
trained here or in a worker, so the results never depend on the number of workers.

Interrupts (Jupyter's ■ or Ctrl-C) raise ``SweepInterrupted`` within a fraction of a second: the
workers are stopped (none is left behind), and the head counts that finished are kept on the
exception and shown in its message.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
import threading
import time
from dataclasses import dataclass

from lesson_lib.models.toy.config import (
    DEFAULT_CONFIG,
    DEFAULT_TASK,
    TARGETS,
    Task,
    TrainConfig,
    check_head_list,
    check_run,
    seed_list,
)
from lesson_lib.models.toy.training import finished_run, remember_run, train_and_score
from lesson_lib.runtime.cpus import usable_cpus

__all__ = ["SweepResult", "SweepInterrupted", "sweep", "interrupted_result"]

_last_interrupted = None  # the finished part of the most recent interrupted sweep in this process


@dataclass
class SweepResult:
    """One row per head count (JSON-ready) and the trained parameters, keyed by h, for the plots."""

    results: list
    total_seconds: float
    params: dict
    task: Task
    config: TrainConfig
    workers: int = 1  # processes that trained (1 = this process)

    def as_json(self) -> dict:
        return {"results": self.results, "total_seconds": round(self.total_seconds, 3)}

    def row(self, h: int) -> dict:
        for r in self.results:
            if r["h"] == h:
                return r
        raise ValueError(f"这次扫描没有训练 h={h}：训练过的头数是 {[r['h'] for r in self.results]}。")


class SweepInterrupted(KeyboardInterrupt):
    """The sweep was interrupted; ``result`` holds the head counts that finished (possibly none)."""

    def __init__(self, result: SweepResult, missing: list):
        self.result, self.missing = result, missing
        done = [r["h"] for r in result.results]
        finished = (f"已经训练完的头数：{done}（用 ablation.interrupted_result() 取回）" if done
                    else "还没有哪个头数训练完")
        super().__init__(f"训练被中断，所有训练进程都已停止。{finished}；没训练完的头数：{missing}。")


def sweep(heads=(1, 2, 4, 8, 16, 32), seeds=3, task: Task = DEFAULT_TASK, cfg: TrainConfig = DEFAULT_CONFIG,
          progress=None, workers: int | None = None) -> SweepResult:
    """Train ``seeds`` models for every h in ``heads`` and measure them on the fixed test set.

    ``seeds`` is a count (seeds 0 … seeds−1) or a list. ``workers`` caps the processes (default: the
    CPUs this kernel may use); the results do not depend on it. ``progress(steps_done, steps_total)``
    is called from the calling thread. Each row: ``accuracy_mean`` (over seeds of the mean over the
    three targets), ``accuracy_sd`` (sample standard deviation over seeds; None for one seed),
    ``per_target`` (means over seeds), ``accuracy_per_seed`` and ``seconds``, the wall time of that
    h's own training and test (these overlap across processes).
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError(
            "训练进程在启动时又调用了 sweep：脚本里调用 sweep 的代码要放进 if __name__ == \"__main__\": 下面，"
            "否则每个训练进程都会把整个脚本再运行一遍。（在 Jupyter 里不会遇到这个问题。）"
        )
    check_run(task, cfg)
    heads = check_head_list(heads, cfg)
    seeds = seed_list(seeds)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers（并行进程数）必须是正整数或 None（按可用 CPU 自动决定），收到的是 {workers!r}。")
    n_workers = min(len(heads), usable_cpus() if workers is None else workers)
    order = sorted(heads, reverse=True)  # largest h first: it costs the most (h·T² weights per sequence)
    start = time.perf_counter()
    report = _Progress(progress, len(heads) * cfg.steps)
    outcomes = {h: done for h in heads if (done := finished_run(h, seeds, task, cfg)) is not None}
    for h in outcomes:
        report(h, cfg.steps)
    order = [h for h in order if h not in outcomes]
    n_workers = min(n_workers, max(1, len(order)))
    try:
        used = _run_in_workers(order, seeds, task, cfg, n_workers, outcomes, report) if n_workers > 1 else 1
        if used == 1:
            _run_here([h for h in order if h not in outcomes], seeds, task, cfg, outcomes, report)
    except KeyboardInterrupt:
        global _last_interrupted
        with _sigint_deferred():  # a second Ctrl-C must not lose the finished head counts
            done = [h for h in heads if h in outcomes]
            _last_interrupted = _result(done, outcomes, seeds, task, cfg, start, n_workers)
        raise SweepInterrupted(_last_interrupted, [h for h in heads if h not in outcomes]) from None
    return _result(heads, outcomes, seeds, task, cfg, start, used)


def interrupted_result() -> SweepResult | None:
    """The head counts the most recent interrupted sweep had finished (None if no sweep was interrupted)."""
    return _last_interrupted


class _Progress:
    """Steps finished per head count, reported to ``callback(done, total)`` when they change."""

    def __init__(self, callback, total):
        self.callback, self.total, self.done = callback, total, {}

    def __call__(self, h, steps):
        self.done[h] = steps
        if self.callback is not None:
            self.callback(sum(self.done.values()), self.total)


def _train_and_test(h, seeds, task, cfg, progress=None):
    """Train every seed for one h and score it on the fixed test set: (params, (S, 3) accuracy, seconds)."""
    return train_and_score(h, seeds, task, cfg, progress=progress)


def _run_here(order, seeds, task, cfg, outcomes, report):
    for h in order:
        outcomes[h] = _train_and_test(h, seeds, task, cfg, progress=lambda steps, h=h: report(h, steps))


def _result(heads, outcomes, seeds, task, cfg, start, workers) -> SweepResult:
    rows, trained = [], {}
    for h in heads:
        trained[h], acc, seconds = outcomes[h]
        per_seed = acc.mean(axis=1)  # (S,) mean over the three targets
        rows.append(
            {
                "h": h,
                "d_k": cfg.d_model // h,
                "accuracy_mean": round(float(per_seed.mean()), 4),
                "accuracy_sd": round(float(per_seed.std(ddof=1)), 4) if len(seeds) > 1 else None,
                "per_target": {t: round(float(acc[:, i].mean()), 4) for i, t in enumerate(TARGETS)},
                "accuracy_per_seed": [round(float(a), 4) for a in per_seed],
                "seconds": round(seconds, 3),
            }
        )
    return SweepResult(rows, time.perf_counter() - start, trained, task, cfg, workers)


# ---------------------------------------------------------------------------------------------
# Worker processes: a loky pool (spawned, cancelled and killed on an interrupt), progress on a queue
# ---------------------------------------------------------------------------------------------

_steps = None  # in a worker: the queue its progress goes to


def _start_worker(steps) -> None:
    """A worker's first act: ignore Ctrl-C (the parent decides what an interrupt stops), say it is ready."""
    global _steps
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _steps = steps
    steps.put(("ready", None, None))


def _train_in_worker(h, seeds, task, cfg):
    return _train_and_test(h, seeds, task, cfg, progress=lambda steps: _steps.put(("steps", h, steps)))


def _run_in_workers(order, seeds, task, cfg, n_workers, outcomes, report) -> int:
    """Train ``order`` in up to ``n_workers`` processes; returns how many ran (1: none could start)."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from loky import ProcessPoolExecutor
    from loky.backend.context import get_context
    from loky.process_executor import BrokenProcessPool

    ctx = get_context("loky")  # spawned: the same on every OS, and safe inside a Jupyter kernel
    steps = ctx.SimpleQueue()
    try:
        with _children_ignore_sigint():
            pool = ProcessPoolExecutor(n_workers, context=ctx, initializer=_start_worker, initargs=(steps,))
            jobs = {pool.submit(_train_in_worker, h, seeds, task, cfg): h for h in order}
    except (OSError, RuntimeError, ValueError):  # no processes here (sandbox …)
        return 1
    ready, finished = [False], False

    def drain():
        while not steps.empty():
            kind, h, payload = steps.get()
            if kind == "ready":
                ready[0] = True
            else:
                report(h, payload)

    try:
        pending = set(jobs)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            drain()
            for job in done:
                h = jobs[job]
                try:
                    outcomes[h] = remember_run(h, seeds, task, cfg, job.result())
                except BrokenProcessPool:
                    if not ready[0]:  # it died while starting (e.g. a script without a __main__ guard)
                        return 1  # the caller trains what is left in this process
                    raise RuntimeError(
                        f"训练 h={h} 的进程意外退出了（可能是内存不够）：请重新运行，"
                        "或用 workers=1 在本进程里训练。"
                    ) from None
                except Exception as exc:  # raised in the worker, re-raised here with the head count
                    raise RuntimeError(f"训练 h={h} 时出错：{type(exc).__name__}: {exc}") from None
        finished = True
    finally:
        _stop(pool, finished)
    return n_workers


def _stop(pool, finished: bool = False) -> None:
    """End every worker: let finished ones exit, kill busy ones at once; a second Ctrl-C cannot interrupt
    this, so no worker is ever left behind."""
    with _sigint_deferred():
        pool.shutdown(wait=True, kill_workers=not finished)


@contextlib.contextmanager
def _children_ignore_sigint():
    """Fork the workers with SIGINT ignored, a disposition exec keeps: a terminal's Ctrl-C reaches the whole
    process group, and must not kill a worker mid-import with a traceback (Python installs its own handler
    only where SIGINT is not ignored). Held while the processes are forked, milliseconds; main thread only."""
    if threading.current_thread() is not threading.main_thread() or sys.platform == "win32":
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@contextlib.contextmanager
def _sigint_deferred():
    """Hold back SIGINT while workers are being stopped; the interrupt already under way is enough."""
    if threading.current_thread() is not threading.main_thread() or sys.platform == "win32":
        yield
        return
    old = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
