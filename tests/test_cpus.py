"""usable_cpus reads the student's OWN cgroup: nested cgroup v2, on fixture trees (a fake root).
scripts/cpus.py is a deployment script (binder/start, scripts/test.sh), so it is loaded from its file."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "cpus.py"
spec = importlib.util.spec_from_file_location("cpus", SCRIPT)
cpus = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cpus)

AFFINITY = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
TLJH = "/user.slice/user-1000.slice/jupyter-ada.service"  # The Littlest JupyterHub's per-user unit


@pytest.fixture(autouse=True)
def no_override(monkeypatch):
    monkeypatch.delenv("LESSON_CPUS", raising=False)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def v2_tree(root, own, limits):
    """A fake root whose process sits in cgroup ``own``; ``limits``: {cgroup path: cpu.max text}."""
    _write(root / "proc/self/cgroup", f"0::{own}\n")
    for path, text in limits.items():
        _write(root / "sys/fs/cgroup" / path.lstrip("/") / "cpu.max", text)
    return root


def test_no_quota_anywhere_uses_affinity(tmp_path):
    root = v2_tree(tmp_path, TLJH, {"/": "max 100000\n", TLJH: "max 100000\n"})
    assert cpus.cgroup_cpus(root) is None
    assert cpus.usable_cpus(root) == AFFINITY


def test_v2_nested_quota_of_the_own_group_is_found(tmp_path):
    root = v2_tree(tmp_path, TLJH, {"/": "max 100000\n", TLJH: "50000 100000\n"})
    assert cpus.cgroup_cpus(root) == 0.5
    assert cpus.usable_cpus(root) == 1


def test_v2_smallest_ancestor_quota_wins(tmp_path):
    limits = {"/user.slice": "150000 100000\n", "/user.slice/user-1000.slice": "400000 100000\n",
              TLJH: "max 100000\n"}
    root = v2_tree(tmp_path, TLJH, limits)
    assert cpus.cgroup_cpus(root) == 1.5


def test_v2_a_sibling_groups_quota_does_not_count(tmp_path):
    root = v2_tree(tmp_path, TLJH, {"/user.slice/user-1001.slice": "10000 100000\n"})
    assert cpus.cgroup_cpus(root) is None


def test_v2_inside_a_cgroup_namespace_the_mount_root_is_the_own_group(tmp_path):
    """A container sees ``0::/`` and its own group mounted at /sys/fs/cgroup."""
    root = v2_tree(tmp_path, "/", {"/": "200000 100000\n"})
    assert cpus.cgroup_cpus(root) == 2.0


def test_unreadable_or_garbled_files_mean_no_quota(tmp_path):
    assert cpus.cgroup_cpus(tmp_path) is None  # no /proc at all (macOS, Windows)
    root = v2_tree(tmp_path, TLJH, {TLJH: "garbage\n"})
    assert cpus.cgroup_cpus(root) is None


@pytest.mark.parametrize(("value", "capped"), [("1", True), ("0", False), ("abc", False), ("", False)])
def test_env_override(tmp_path, monkeypatch, value, capped):
    monkeypatch.setenv("LESSON_CPUS", value)
    assert cpus.usable_cpus(tmp_path) == (1 if capped else AFFINITY)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this platform")
def test_affinity_mask_is_respected(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert cpus.usable_cpus(tmp_path) == 1


def test_this_machine_reads_without_error():
    assert cpus.usable_cpus() >= 1


def test_cgroup_v1_is_not_read(tmp_path):
    """Only v2 is read: a v1 machine's quota is left to the affinity mask and LESSON_CPUS."""
    _write(tmp_path / "proc/self/cgroup", "3:cpu,cpuacct:/docker/3f2a\n")
    _write(tmp_path / "sys/fs/cgroup/cpu,cpuacct/docker/3f2a/cpu.cfs_quota_us", "100000\n")
    assert cpus.cgroup_cpus(tmp_path) is None


@pytest.mark.parametrize("cap", ["1", ""])
def test_the_script_prints_the_whole_cpus_for_shell_callers(cap):
    """binder/start and scripts/test.sh read one number from ``python cpus.py``; LESSON_CPUS=1 caps it to 1."""
    env = {**os.environ, "LESSON_CPUS": cap}
    out = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout == f"{1 if cap else cpus.usable_cpus()}\n"
