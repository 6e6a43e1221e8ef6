"""The sweep over head counts: its rows, worker processes, argument checks, interrupts and the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import numpy as np
import pytest

from lesson_lib.models.toy import model, training
from lesson_lib.models.toy import sweeping as ablation
from lesson_lib.models.toy import sweeping as sweep_module
from lesson_lib.models.toy import task as toy_task
from lesson_lib.models.toy import training as toy_training
from lesson_lib.models.toy.config import Task, TrainConfig
from lesson_lib.models.toy.sweeping import SweepInterrupted, sweep
from lesson_lib.sections.s07_ablation import cli, report

TINY_TASK = Task(T=7, V=4, K=16)
TINY_CFG = TrainConfig(d_model=8, steps=20, warmup=5, n_test=50)


@pytest.fixture(autouse=True)
def train_afresh():
    """Every test trains its own models: identical runs are otherwise reused within a process."""
    training.forget_runs()
    yield
    training.forget_runs()


def test_sweep_rows_have_the_promised_fields_and_workers_do_not_change_them():
    one = sweep((1, 2, 8), seeds=2, task=TINY_TASK, cfg=TINY_CFG, workers=1)
    training.forget_runs()  # train again, this time in worker processes
    two = sweep((1, 2, 8), seeds=2, task=TINY_TASK, cfg=TINY_CFG, workers=2)
    assert (one.workers, two.workers) == (1, 2)
    for a, b in zip(one.results, two.results):
        assert {k: v for k, v in a.items() if k != "seconds"} == {k: v for k, v in b.items() if k != "seconds"}
    for h in (1, 2, 8):
        for name in one.params[h]:
            np.testing.assert_array_equal(one.params[h][name], two.params[h][name])  # bit for bit
    row = one.results[1]
    assert set(row) >= {"h", "d_k", "accuracy_mean", "accuracy_sd", "per_target", "seconds"}
    assert (row["h"], row["d_k"]) == (2, 4)
    assert row["accuracy_mean"] == pytest.approx(np.mean(row["accuracy_per_seed"]), abs=1e-3)
    assert row["accuracy_mean"] == pytest.approx(np.mean(list(row["per_target"].values())), abs=1e-3)
    assert row["accuracy_sd"] == pytest.approx(np.std(row["accuracy_per_seed"], ddof=1), abs=1e-3)


def test_one_seed_has_no_standard_deviation():
    result = sweep((2,), seeds=1, task=TINY_TASK, cfg=TINY_CFG)
    assert result.results[0]["accuracy_sd"] is None
    assert "标准差" not in report.accuracy_numbers_text(result.results)


def test_progress_reaches_the_total_in_order():
    seen = []
    sweep((1, 2), seeds=1, task=TINY_TASK, cfg=replace(TINY_CFG, steps=30),
          progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (60, 60)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_workers_follow_the_usable_cpus(monkeypatch):
    monkeypatch.setattr(sweep_module, "usable_cpus", lambda: 1)
    assert sweep((1, 2), seeds=1, task=TINY_TASK, cfg=TINY_CFG).workers == 1  # one CPU: no worker processes
    monkeypatch.setattr(sweep_module, "usable_cpus", lambda: 8)
    training.forget_runs()
    assert sweep((1, 2, 4), seeds=1, task=TINY_TASK, cfg=TINY_CFG).workers == 3  # never more than head counts


def test_identical_runs_are_trained_once_per_process(monkeypatch):
    """§6's stand-in heads are §7's h = 4 model; a re-run sweep reuses every model and changes nothing."""
    maps = toy_training.example_heads(h=2, seed=0, task=TINY_TASK, cfg=TINY_CFG)
    trained = []
    real = training.train
    monkeypatch.setattr(training, "train", lambda h, *a, **k: trained.append(h) or real(h, *a, **k))
    seen = []
    first = sweep((1, 2), seeds=1, task=TINY_TASK, cfg=TINY_CFG, workers=1, progress=lambda d, t: seen.append(d))
    assert trained == [1]  # h = 2, seed 0 came from example_heads
    again = sweep((1, 2), seeds=1, task=TINY_TASK, cfg=TINY_CFG, workers=2)
    assert trained == [1] and again.workers == 1  # nothing left to train: no worker processes either
    assert again.results == first.results and seen[-1] == 2 * TINY_CFG.steps
    batch = toy_task.held_out_data(TINY_TASK, TINY_CFG).rows(slice(0, 1))
    np.testing.assert_array_equal(model.attention_maps(first.params[2], 2, batch, task=TINY_TASK)[0], maps)
    with pytest.raises(ValueError, match="read-only"):
        first.params[2]["W_Q"][...] = 0  # shared between callers: nobody may change it


def test_a_script_without_a_main_guard_still_trains_in_workers(tmp_path):
    """loky's workers do not re-run the calling script: a script without ``if __name__ == "__main__":`` trains
    in worker processes too, once, with nothing on stderr."""
    script = tmp_path / "no_guard.py"
    script.write_text("from lesson_lib.models.toy import config as toy_config, sweeping as ablation\n"
                      "from lesson_lib.sections.s07_ablation import report\n"
                      "cfg = toy_config.TrainConfig(d_model=8, steps=10, warmup=2, n_test=10)\n"
                      "r = ablation.sweep((1, 2), seeds=1, task=toy_config.Task(T=7, V=4, K=16), cfg=cfg, workers=2)\n"
                      "print(report.timing_text(r))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("训练") == 1 and "2 个进程" in done.stdout  # ran once, with both workers
    assert done.stderr == ""


def test_falls_back_to_this_process_when_workers_cannot_start(monkeypatch):
    from loky.backend.process import LokyProcess

    def refuse(self):
        raise OSError("no processes in this sandbox")

    monkeypatch.setattr(LokyProcess, "start", refuse)
    result = sweep((1, 2), seeds=1, task=TINY_TASK, cfg=TINY_CFG, workers=2)
    assert result.workers == 1 and [r["h"] for r in result.results] == [1, 2]
    assert "在本进程里依次训练" in report.timing_text(result)


# ---------------------------------------------------------------------------------------------
# Bad arguments: a Chinese error naming the argument, the value and what is allowed
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (dict(heads=()), "heads（头数列表）是空的"),
        (dict(heads="12"), "应是整数的列表"),
        (dict(heads=(3,)), "不能平均分给"),
        (dict(heads=(0,)), "头数 h 必须是 ≥ 1 的整数，收到的是 0"),
        (dict(heads=(2.0,)), r"头数 h 必须是 ≥ 1 的整数，收到的是 2\.0"),
        (dict(heads=(2, 2)), "重复"),
        (dict(seeds=0), "至少为 1"),
        (dict(seeds=1.5), "收到的是 1.5"),
        (dict(seeds=[]), "种子列表为空"),
        (dict(seeds=["a"]), "里的 'a' 不是"),
        (dict(seeds=[-1]), "里的 -1 不是"),
        (dict(seeds="3"), "收到的是 '3'"),
        (dict(workers=0), "workers"),
        (dict(workers=True), "workers"),
        (dict(cfg=replace(TINY_CFG, n_test=0)), "TrainConfig.n_test 应是 ≥ 1 的整数，收到的是 0"),
        (dict(cfg=replace(TINY_CFG, steps=0)), "TrainConfig.steps"),
        (dict(cfg=replace(TINY_CFG, dtype="float16")), "dtype 只能是 float32 或 float64，收到的是 'float16'"),
        (dict(cfg=replace(TINY_CFG, lr=float("nan"))), "TrainConfig.lr"),
        (dict(cfg=replace(TINY_CFG, beta2=1.0)), "TrainConfig.beta2"),
        (dict(cfg={"steps": 3}), "cfg 应是 ablation.TrainConfig"),
        (dict(task=Task(T=3)), "任务太小"),
    ],
)
def test_sweep_rejects_bad_settings_in_chinese(kwargs, words):
    args = dict(heads=(1, 2), seeds=1, task=TINY_TASK, cfg=replace(TINY_CFG, steps=2))
    args.update(kwargs)
    with pytest.raises(ValueError, match=words):
        sweep(**args)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--heads", ""], "--heads 不能为空"),
        (["--heads", ",,,"], "--heads 不能为空"),
        (["--heads", "1,x"], "逗号分隔的整数"),
        (["--heads", "5", "--steps", "2"], "不能平均分给"),
        (["--heads", "1", "--seeds", "0"], "至少为 1"),
        (["--heads", "1", "--workers", "0"], "workers"),
        (["--heads", "1", "--steps", "0"], "TrainConfig.steps"),
    ],
)
def test_cli_rejects_bad_arguments_in_chinese(capsys, argv, words):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    assert words in capsys.readouterr().err


def test_cli_prints_one_json_object(capsys):
    assert cli.main(["--heads", "1,2", "--seeds", "2", "--steps", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["h"] for r in out["results"]] == [1, 2]
    assert [r["d_k"] for r in out["results"]] == [32, 16]
    assert out["config"]["train"]["steps"] == 3 and out["config"]["seeds"] == 2
    assert all(set(r["per_target"]) == {"prev", "next", "match"} for r in out["results"])


def test_cli_table(capsys):
    assert cli.main(["--heads", "4", "--seeds", "2", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "平均准确率" in out and "标准差" in out and "秒" in out


# ---------------------------------------------------------------------------------------------
# Interrupts: real SIGINTs to a real sweep; it stops at once, keeps what finished, leaves no process
# ---------------------------------------------------------------------------------------------

psutil = pytest.importorskip("psutil")

_SCRIPT = textwrap.dedent("""
    import signal
    import sys
    from lesson_lib.models.toy import sweeping as ablation
    from lesson_lib.models.toy.config import Task, TrainConfig

    def progress(done, total):
        print("progress", done, flush=True)

    if __name__ == "__main__":
        cfg = TrainConfig(d_model=8, steps=int(sys.argv[1]), warmup=5, n_test=20)
        try:
            ablation.sweep((1, 2, 4, 8), seeds=1, task=Task(T=7, V=4, K=16), cfg=cfg, progress=progress,
                           workers=int(sys.argv[2]))
        except ablation.SweepInterrupted as stop:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # as the CLI does: ending anyway
            print("interrupted", [r["h"] for r in stop.result.results], stop.missing, flush=True)
            print(stop, flush=True)
            sys.exit(130)
        print("finished", flush=True)
""")


def _start(tmp_path, args):
    script = tmp_path / "interrupt_me.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)


def _wait_for_progress(proc, steps_at_least):
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        if line.startswith("progress") and int(line.split()[1]) >= steps_at_least:
            return
        assert time.monotonic() < deadline, "the sweep never got going"
    pytest.fail(f"the sweep ended before any progress: {proc.stderr.read()}")


def _interrupt(proc, times):
    family = psutil.Process(proc.pid).children(recursive=True)
    for _ in range(times):
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        time.sleep(0.05)
    start = time.monotonic()
    out, err = proc.communicate(timeout=30)
    return time.monotonic() - start, out, err, family


@pytest.mark.parametrize(("workers", "times"), [(2, 1), (2, 3), (1, 1)], ids=["2 workers", "3 Ctrl-C", "in process"])
def test_interrupt_stops_the_sweep_at_once_and_keeps_what_finished(tmp_path, workers, times):
    steps = 600  # each head count takes about a second, so the sweep would run for seconds more
    proc = _start(tmp_path, [str(steps), str(workers)])
    try:
        _wait_for_progress(proc, workers * steps + 25)  # a head count beyond the first batch started
        seconds, out, err, family = _interrupt(proc, times)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert seconds < 1.5, f"took {seconds:.1f} s to stop"
    line = next(line for line in out.splitlines() if line.startswith("interrupted"))
    assert "[]" not in line.split("]")[0] + "]", f"no finished head count was kept: {line}"
    assert "训练被中断，所有训练进程都已停止" in out and "已经训练完的头数" in out
    assert "Traceback" not in err
    time.sleep(0.2)
    alive = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"worker processes left behind: {alive}"
    if workers == 2:
        assert len(family) >= 2  # the test did see the workers it checks


@pytest.mark.parametrize("times", [1, 2], ids=["one Ctrl-C", "two Ctrl-C"])
def test_cli_exits_on_the_first_ctrl_c(tmp_path, times):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "lesson_lib.models.toy", "--heads", "1,2,4,8", "--seeds", "1",
                             "--steps", "3000", "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(psutil.Process(proc.pid).children()) < 2 or time.monotonic() < deadline - 58:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        seconds, _, err, family = _interrupt(proc, times)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and seconds < 1.5
    assert "训练被中断" in err and "Traceback" not in err
    time.sleep(0.2)
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_interrupt_in_this_process_raises_with_the_finished_rows(monkeypatch):
    """The exception is a KeyboardInterrupt (Run All stops) that carries the finished head counts."""
    real = sweep_module._train_and_test

    def second_h_interrupted(h, *args, **kwargs):
        if h == 1:
            raise KeyboardInterrupt
        return real(h, *args, **kwargs)

    monkeypatch.setattr(sweep_module, "_train_and_test", second_h_interrupted)
    with pytest.raises(SweepInterrupted) as stop:
        sweep((1, 2), seeds=1, task=TINY_TASK, cfg=TINY_CFG, workers=1)
    assert isinstance(stop.value, KeyboardInterrupt)
    assert [r["h"] for r in stop.value.result.results] == [2] and stop.value.missing == [1]
    assert "已经训练完的头数：[2]" in str(stop.value)
    assert ablation.interrupted_result() is stop.value.result


def test_interrupting_a_jupyter_kernel_stops_its_workers_and_keeps_the_kernel(tmp_path):
    """Jupyter's ■ (interrupt_kernel), pressed twice: the cell ends at once, no worker trains on, the kernel lives."""
    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        kernel = psutil.Process(km.provisioner.process.pid)
        code = ("from lesson_lib.models.toy import config as toy_config, sweeping as ablation\n"
                "cfg = toy_config.TrainConfig(d_model=8, steps=3000, warmup=5, n_test=20)\n"
                "ablation.sweep((1, 2, 4, 8), seeds=1, task=toy_config.Task(T=7, V=4, K=16), cfg=cfg, workers=2)")
        msg_id = kc.execute(code)
        deadline = time.monotonic() + 60
        while len(kernel.children(recursive=True)) < 2:
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.1)
        time.sleep(0.5)  # the workers are training now
        workers = [p for p in kernel.children(recursive=True)  # the resource tracker idles until the kernel ends
                   if "resource_tracker" not in " ".join(p.cmdline())]
        start = time.monotonic()
        km.interrupt_kernel()
        time.sleep(0.05)
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:  # a late kernel_info reply
            reply = kc.get_shell_msg(timeout=30)
        seconds = time.monotonic() - start
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "SweepInterrupted"
        assert "所有训练进程都已停止" in reply["content"]["evalue"]
        assert seconds < 1.5, f"took {seconds:.1f} s"
        time.sleep(0.2)
        assert len(workers) >= 2  # the test saw the workers it checks
        assert not [p for p in workers if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert kc.execute_interactive("x = 1 + 1", timeout=30)["content"]["status"] == "ok"  # the kernel lives
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
