import os

import pytest

from lesson_lib.runtime import cpus


def test_no_quota_uses_affinity(tmp_path, monkeypatch):
    monkeypatch.delenv("LESSON_CPUS", raising=False)
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpus.usable_cpus(tmp_path) == cpus._affinity_cpus()


@pytest.mark.parametrize(("text", "want"), [("50000 100000\n", 1), ("100000 100000\n", 1), ("150000 100000\n", 1)])
def test_v2_quota_caps(tmp_path, monkeypatch, text, want):
    monkeypatch.delenv("LESSON_CPUS", raising=False)
    (tmp_path / "cpu.max").write_text(text)
    assert cpus.usable_cpus(tmp_path) == min(want, cpus._affinity_cpus())


@pytest.mark.parametrize(("value", "capped"), [("1", True), ("0", False), ("abc", False), ("", False)])
def test_env_override(tmp_path, monkeypatch, value, capped):
    monkeypatch.setenv("LESSON_CPUS", value)
    got = cpus.usable_cpus(tmp_path)
    assert got == (1 if capped else cpus._affinity_cpus())


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this platform")
def test_affinity_mask_is_respected(monkeypatch):
    monkeypatch.delenv("LESSON_CPUS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert cpus.usable_cpus() == 1
