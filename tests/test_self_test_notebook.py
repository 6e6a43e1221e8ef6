"""Restart & Run All of the self-test section with a looping exercise body finishes, and says why.

Runs the §10 cells of a copy of the lesson notebook with nbclient, the first §10 exercise's body replaced by
``while True: pass`` (what a learner may leave in the cell): every cell must finish, the checker must record the
exercise as stopped at its time budget and say so in the cell (naming the function), and no traceback may come out.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from helpers import CJK, scaled

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"


def _self_test_cells(nb):
    start = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## 10 "))
    return [copy.deepcopy(c) for c in nb.cells[start:]]


def test_run_all_with_an_endless_exercise_finishes(tmp_path, monkeypatch):
    progress = tmp_path / "progress.json"
    monkeypatch.setenv("LESSON_PROGRESS_FILE", str(progress))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    body = next(copy.deepcopy(c) for c in nb.cells
                if c.cell_type == "code" and "def my_multi_head_attention_loop" in c.source)  # §3, after its idea
    cells = [body, *_self_test_cells(nb)]
    assert "raise NotImplementedError" in body.source
    body.source = body.source.replace("raise NotImplementedError", "while True:\n        pass")
    nb.cells = cells
    client = nbclient.NotebookClient(nb, timeout=int(scaled(120)), kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})  # fmt: skip
    client.execute()  # a hang would end in nbclient's CellTimeoutError instead
    outputs = [o for o in body.outputs if o.output_type in ("execute_result", "stream", "display_data")]
    text = "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)
    assert CJK.search(text) and "my_multi_head_attention_loop" in text, text  # the checker spoke, in Chinese
    saved = json.loads(progress.read_text(encoding="utf-8"))
    assert saved["exercises"]["multi_head_attention_loop"]["result"] == "timeout"
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", out
            assert "Traceback" not in out.get("text", "")
    # the cells after the loop ran too: the summary counts the stopped exercise as tried, not done
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
