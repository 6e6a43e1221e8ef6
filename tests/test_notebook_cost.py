"""The cost benchmark counts what a student's kernel really spends: its children's CPU and memory too."""

import os
import subprocess
import sys
from pathlib import Path

import psutil
from helpers import wait_for

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_notebook_cost as cost  # noqa: E402

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"


def test_cpu_of_a_finished_child_is_counted():
    before = cost.tree_cpu_seconds(os.getpid())
    subprocess.run([sys.executable, "-c", BURN], check=True)  # exits and is reaped before we look
    assert cost.tree_cpu_seconds(os.getpid()) - before >= 0.25


def test_cpu_and_memory_of_a_running_child_are_counted():
    child = subprocess.Popen([sys.executable, "-c", BURN + "b = bytearray(200 * 2**20)\nimport time\ntime.sleep(30)"])
    try:
        with cost.PeakSampler(os.getpid(), interval=0.01) as sampler:  # it samples once more on leaving
            wait_for(lambda: cost.tree_rss_bytes(child.pid) >= 150 * 2**20, "the child's 200 MB", stall_s=20,
                     poll_s=0.05)
        assert cost.tree_cpu_seconds(child.pid) >= 0.25
        own = psutil.Process().memory_info().rss
        assert sampler.peak >= own + 150 * 2**20  # the child's 200 MB are in the tree's peak
    finally:
        child.kill()
        child.wait()


def test_missing_process_counts_nothing():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert cost.tree_cpu_seconds(child.pid) == 0.0
    assert cost.tree_rss_bytes(child.pid) == 0
