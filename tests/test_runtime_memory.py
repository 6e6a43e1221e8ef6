"""lesson_lib.runtime.memory: what the kernel's size guard reads of the machine."""

from lesson_lib.runtime import memory


def test_free_memory_is_capped_by_a_cgroup_v2_limit(tmp_path, monkeypatch):
    """On a JupyterHub the cgroup kills the kernel at its limit while MemAvailable shows the host's memory."""
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemAvailable:   8388608 kB\n")
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.current").write_text("73741824\n")
    monkeypatch.setattr(memory, "MEMINFO", tmp_path / "meminfo")
    monkeypatch.setattr(memory, "CGROUP", tmp_path)
    assert memory.free_memory() == 1_000_000_000
    (tmp_path / "memory.max").write_text("max\n")
    assert memory.free_memory() == 8 << 30
    monkeypatch.setattr(memory, "CGROUP", tmp_path / "absent")  # no cgroup v2: MemAvailable alone
    assert memory.free_memory() == 8 << 30


def test_free_memory_is_unknown_without_meminfo(tmp_path, monkeypatch):
    """Not Linux: no guess (the allocation itself raises MemoryError there, which the kernel translates)."""
    monkeypatch.setattr(memory, "MEMINFO", tmp_path / "absent")
    assert memory.free_memory() is None
