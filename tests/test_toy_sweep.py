"""The sweep over head counts, in the kernel's process: its rows, argument checks, and interrupts."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import numpy as np
import pytest
from helpers import scaled

from lesson_lib.checks import LessonInputError
from lesson_lib.models.toy import model, training
from lesson_lib.models.toy import task as toy_task
from lesson_lib.models.toy.config import Task, TrainConfig
from lesson_lib.models.toy.sweeping import SweepInterrupted, sweep

TINY_TASK = Task(T=7, V=4, K=16)
TINY_CFG = TrainConfig(d_model=8, steps=20, warmup=5, n_test=50)


@pytest.fixture(autouse=True)
def train_afresh(monkeypatch):
    """Every test trains its own models: identical runs are otherwise reused within a process."""
    monkeypatch.setattr(training, "_FINISHED", {})


def test_sweep_rows_have_the_promised_fields_and_do_not_depend_on_the_order():
    one = sweep((1, 2, 8), seeds=2, task=TINY_TASK, cfg=TINY_CFG)
    training._FINISHED.clear()  # train again, in another order
    two = sweep((8, 1, 2), seeds=2, task=TINY_TASK, cfg=TINY_CFG)
    rows = {r["h"]: r for r in two.results}
    for a in one.results:
        assert a == rows[a["h"]]
    for h in (1, 2, 8):
        for name in one.params[h]:
            np.testing.assert_array_equal(one.params[h][name], two.params[h][name])  # bit for bit
    row = one.results[1]
    assert set(row) >= {"h", "d_k", "accuracy_mean", "accuracy_sd", "per_target"}
    assert (row["h"], row["d_k"]) == (2, 4)
    assert row["accuracy_mean"] == pytest.approx(np.mean(row["accuracy_per_seed"]), abs=1e-3)
    assert row["accuracy_mean"] == pytest.approx(np.mean(list(row["per_target"].values())), abs=1e-3)
    assert row["accuracy_sd"] == pytest.approx(np.std(row["accuracy_per_seed"], ddof=1), abs=1e-3)


def test_one_seed_has_no_standard_deviation():
    result = sweep((2,), seeds=1, task=TINY_TASK, cfg=TINY_CFG)
    assert result.results[0]["accuracy_sd"] is None


def test_progress_reaches_the_total_in_order():
    seen = []
    sweep((1, 2), seeds=1, task=TINY_TASK, cfg=replace(TINY_CFG, steps=30),
          progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (60, 60)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_identical_runs_are_trained_once_per_process(monkeypatch):
    """§6's stand-in heads are §7's h = 4 model; a re-run sweep reuses every model and changes nothing."""
    maps = training.example_heads(h=2, seed=0, task=TINY_TASK, cfg=TINY_CFG)
    trained = []
    real = training.train
    monkeypatch.setattr(training, "train", lambda h, *a, **k: trained.append(h) or real(h, *a, **k))
    seen = []
    first = sweep((1, 2), seeds=1, task=TINY_TASK, cfg=TINY_CFG, progress=lambda d, t: seen.append(d))
    assert trained == [1]  # h = 2, seed 0 came from example_heads
    again = sweep((1, 2), seeds=1, task=TINY_TASK, cfg=TINY_CFG)
    assert trained == [1]  # nothing left to train
    assert again.results == first.results and seen[-1] == 2 * TINY_CFG.steps
    batch = toy_task.held_out_data(TINY_TASK, TINY_CFG).rows(slice(0, 1))
    np.testing.assert_array_equal(model.attention_maps(first.params[2], 2, batch, task=TINY_TASK)[0], maps)
    with pytest.raises(ValueError, match="read-only"):
        first.params[2]["W_Q"][...] = 0  # shared between callers: nobody may change it


# ---------------------------------------------------------------------------------------------
# Bad arguments: a Chinese error naming the argument, the value and what is allowed
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (dict(heads=()), "heads"),
        (dict(heads="12"), "heads"),
        (dict(heads=(3,)), "h=3"),
        (dict(heads=(0,)), "头数 h"),
        (dict(heads=(2.0,)), "头数 h"),
        (dict(heads=(2, 2)), "heads"),
        (dict(seeds=0), "seeds"),
        (dict(seeds=1.5), "seeds"),
        (dict(seeds=[]), "seeds"),
        (dict(seeds=["a"]), "seeds"),
        (dict(seeds=[-1]), "seeds"),
        (dict(seeds="3"), "seeds"),
        (dict(cfg=replace(TINY_CFG, n_test=0)), "TrainConfig.n_test"),
        (dict(cfg=replace(TINY_CFG, steps=0)), "TrainConfig.steps"),
        (dict(cfg=replace(TINY_CFG, dtype="float16")), "TrainConfig.dtype"),
        (dict(cfg=replace(TINY_CFG, lr=float("nan"))), "TrainConfig.lr"),
        (dict(cfg=replace(TINY_CFG, lr=0.0)), "TrainConfig.lr"),
        (dict(cfg={"steps": 3}), "cfg"),
        (dict(task=Task(T=3)), "T=3"),
    ],
)
def test_sweep_rejects_bad_settings_in_chinese(kwargs, words):
    args = dict(heads=(1, 2), seeds=1, task=TINY_TASK, cfg=replace(TINY_CFG, steps=2))
    args.update(kwargs)
    with pytest.raises(LessonInputError, match=words):
        sweep(**args)


# ---------------------------------------------------------------------------------------------
# Interrupts: Ctrl-C or Jupyter's ■ is a KeyboardInterrupt in this process; what finished is kept
# ---------------------------------------------------------------------------------------------


def test_interrupt_raises_a_keyboard_interrupt_with_the_finished_rows(monkeypatch):
    """The exception is a KeyboardInterrupt (Run All stops) that carries the finished head counts."""
    real = training.train_and_score

    def second_h_interrupted(h, *args, **kwargs):
        if h == 1:
            raise KeyboardInterrupt
        return real(h, *args, **kwargs)

    monkeypatch.setattr("lesson_lib.models.toy.sweeping.train_and_score", second_h_interrupted)
    with pytest.raises(SweepInterrupted) as stop:
        sweep((2, 1), seeds=1, task=TINY_TASK, cfg=TINY_CFG)
    assert isinstance(stop.value, KeyboardInterrupt)
    assert [r["h"] for r in stop.value.result.results] == [2] and stop.value.missing == [1]
    assert "[2]" in str(stop.value) and "[1]" in str(stop.value)


def test_interrupting_a_jupyter_kernel_ends_the_cell_and_keeps_the_kernel(tmp_path):
    """Jupyter's ■ (interrupt_kernel): the cell ends with SweepInterrupted, and the kernel goes on."""
    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=scaled(60))
        code = textwrap.dedent("""
            from lesson_lib.models.toy.config import Task, TrainConfig
            from lesson_lib.models.toy.sweeping import sweep
            cfg = TrainConfig(d_model=8, steps=100_000, warmup=5, n_test=20)
            sweep((1, 2, 4, 8), seeds=1, task=Task(T=7, V=4, K=16), cfg=cfg, progress=lambda d, t: print(d))
        """)
        # stop_on_error=False: otherwise ipykernel aborts what arrives just after the error, and the check races it
        msg_id = kc.execute(code, stop_on_error=False)
        while True:  # wait until it trains
            msg = kc.get_iopub_msg(timeout=scaled(120))
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                break
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=scaled(120))
        while reply["parent_header"].get("msg_id") != msg_id:  # a late kernel_info reply
            reply = kc.get_shell_msg(timeout=scaled(120))
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "SweepInterrupted"
        assert kc.execute_interactive("x = 1 + 1", timeout=scaled(60))["content"]["status"] == "ok"  # the kernel lives
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
