import os

import pytest

from lesson_lib.runtime import cpus

AFFINITY = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def test_no_quota_uses_affinity(tmp_path, monkeypatch):
    monkeypatch.delenv("LESSON_CPUS", raising=False)
    (tmp_path / "cpu.max").write_text("max 100000\n")
    monkeypatch.setattr(cpus, "CGROUP", tmp_path)
    assert cpus.usable_cpus() == AFFINITY


@pytest.mark.parametrize(("text", "want"), [("50000 100000\n", 1), ("100000 100000\n", 1), ("150000 100000\n", 1)])
def test_v2_quota_caps(tmp_path, monkeypatch, text, want):
    monkeypatch.delenv("LESSON_CPUS", raising=False)
    (tmp_path / "cpu.max").write_text(text)
    monkeypatch.setattr(cpus, "CGROUP", tmp_path)
    assert cpus.usable_cpus() == min(want, AFFINITY)


@pytest.mark.parametrize(("value", "capped"), [("1", True), ("0", False), ("abc", False), ("", False)])
def test_env_override(tmp_path, monkeypatch, value, capped):
    monkeypatch.setenv("LESSON_CPUS", value)
    monkeypatch.setattr(cpus, "CGROUP", tmp_path)
    got = cpus.usable_cpus()
    assert got == (1 if capped else AFFINITY)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this platform")
def test_affinity_mask_is_respected(monkeypatch):
    monkeypatch.delenv("LESSON_CPUS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert cpus.usable_cpus() == 1
