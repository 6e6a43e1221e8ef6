"""usable_cpus reads the student's OWN cgroup: nested cgroup v2 and cgroup v1, on fixture trees (a fake root)."""

import os

import pytest

from lesson_lib.runtime import cpus

AFFINITY = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
V2_MOUNT = "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V1_MOUNTS = ("31 1 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
             "32 1 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n")
TLJH = "/user.slice/user-1000.slice/jupyter-ada.service"  # The Littlest JupyterHub's per-user unit


@pytest.fixture(autouse=True)
def no_override(monkeypatch):
    monkeypatch.delenv("LESSON_CPUS", raising=False)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def v2_tree(root, own, limits, mountinfo=V2_MOUNT):
    """A fake root whose process sits in cgroup ``own``; ``limits``: {cgroup path: cpu.max text}."""
    _write(root / "proc/self/cgroup", f"0::{own}\n")
    _write(root / "proc/self/mountinfo", mountinfo)
    for path, text in limits.items():
        _write(root / "sys/fs/cgroup" / path.lstrip("/") / "cpu.max", text)
    return root


def v1_tree(root, own, limits):
    """cgroup v1: ``limits``: {cgroup path: (cfs_quota_us, cfs_period_us)} under the cpu,cpuacct mount."""
    _write(root / "proc/self/cgroup", f"5:memory:{own}\n3:cpu,cpuacct:{own}\n1:name=systemd:{own}\n")
    _write(root / "proc/self/mountinfo", V1_MOUNTS)
    for path, (quota, period) in limits.items():
        folder = root / "sys/fs/cgroup/cpu,cpuacct" / path.lstrip("/")
        _write(folder / "cpu.cfs_quota_us", f"{quota}\n")
        _write(folder / "cpu.cfs_period_us", f"{period}\n")
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


def test_v2_without_mountinfo_uses_the_usual_mount(tmp_path):
    root = v2_tree(tmp_path, TLJH, {TLJH: "30000 100000\n"}, mountinfo="")
    (root / "proc/self/mountinfo").unlink()
    assert cpus.cgroup_cpus(root) == pytest.approx(0.3)


def test_v1_nested_quota_under_the_cpu_controller(tmp_path):
    own = "/docker/3f2a"
    root = v1_tree(tmp_path, own, {"/": (-1, 100000), "/docker": (300000, 100000), own: (100000, 100000)})
    assert cpus.cgroup_cpus(root) == 1.0
    assert cpus.usable_cpus(root) == 1


def test_v1_no_quota_is_minus_one(tmp_path):
    root = v1_tree(tmp_path, "/user.slice", {"/": (-1, 100000), "/user.slice": (-1, 100000)})
    assert cpus.cgroup_cpus(root) is None


def test_v1_group_mounted_as_the_root_of_a_container(tmp_path):
    """An older container mounts its own group's folder: mountinfo's root field is that group."""
    own = "/docker/3f2a"
    _write(tmp_path / "proc/self/cgroup", f"3:cpu,cpuacct:{own}\n")
    _write(tmp_path / "proc/self/mountinfo", f"32 1 0:28 {own} /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpuacct,cpu\n")
    _write(tmp_path / "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "250000\n")
    _write(tmp_path / "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
    assert cpus.cgroup_cpus(tmp_path) == 2.5


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
