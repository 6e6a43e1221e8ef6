"""The cost benchmark counts what a student's kernel really spends: its children's CPU and memory too."""

import os
import subprocess
import sys
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_notebook_cost as cost  # noqa: E402

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"


def test_cpu_of_a_finished_child_is_counted():
    before = cost.tree_cpu_seconds(os.getpid())
    subprocess.run([sys.executable, "-c", BURN], check=True)  # exits and is reaped before we look
    assert cost.tree_cpu_seconds(os.getpid()) - before >= 0.25


def test_cpu_and_memory_of_a_running_child_are_counted():
    # The child burns, fills 200 MB, says so, then lives until its stdin closes (no sleep that a busy machine outlasts).
    hold = BURN + "b = bytearray(200 * 2**20)\nprint('filled', flush=True)\nimport sys\nsys.stdin.read()\n"
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    with subprocess.Popen([sys.executable, "-c", hold], **pipes) as child:
        try:
            # It samples once more on leaving, while the child still holds its 200 MB: a slow interval suffices
            # (each sample reads every process's smaps; every 0.01 s that was ~0.6 CPU-s of the fast set).
            with cost.PeakSampler(os.getpid(), interval=0.5) as sampler:
                assert child.stdout.readline() == "filled\n"  # the event: the 200 MB are the child's now
            assert cost.tree_cpu_seconds(child.pid) >= 0.25
            own = psutil.Process().memory_info().rss
            assert sampler.peak >= own + 150 * 2**20  # the child's 200 MB are in the tree's peak
        finally:
            child.kill()


def test_missing_process_counts_nothing():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert cost.tree_cpu_seconds(child.pid) == 0.0
    assert cost.tree_rss_and_pss_bytes(child.pid) == (0, 0)
