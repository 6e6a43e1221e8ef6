"""Facts behind sentences of the core lesson that no other test holds and that no one section owns (a section's
own are in its file, tests/test_sNN_*.py): behaviour and numbers, not wording."""

from __future__ import annotations

from pathlib import Path

import pytest

from lesson_lib.models.pretrained import minilm as pt

SRC = Path(__file__).parents[1] / "notebooks" / "src"
SECTION_6 = (SRC / "06_real_heads.md").read_text(encoding="utf-8")


def _section(number: str) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(SRC.glob(f"{number}_*.md")))


def _source_cells():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_notebook", SRC.parents[1] / "scripts" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.source_cells()


@pytest.fixture(scope="module")
def law_run():
    if pt.PACKAGE.folder() is None:
        pytest.skip(f"weights package {pt.PACKAGE.name} not installed: {pt.PACKAGE.install_command}")
    return pt.load().attend(pt.PAPER_SENTENCES["law"])


def test_only_timing_prints_unchecked_text():
    """Checked outputs are the same on every machine without printing anything twice: the one printing cell
    nbval does not compare in the core's own sections is §4's timing."""
    volatile = [c["source"] for c in _source_cells()
                if c["kind"] == "code" and "nbval-ignore-output" in c["tags"] and "print(" in c["source"]
                and c["source"] not in SECTION_6 and c["source"] not in _section("07")]
    assert volatile and all("timing_text(" in source for source in volatile), volatile


def test_every_trained_model_of_the_lesson_adds_positions():
    """The toy model's embedding table has one row per position; a real model embeds one token twice differently."""
    import numpy as np

    from lesson_lib.models.toy import model
    from lesson_lib.models.toy.config import Task

    task = Task()
    assert model.init_params([0], task)["E"].shape[1] == task.V + 2 * task.K + task.T  # the last T rows: positions
    if pt.PACKAGE.folder() is None:
        pytest.skip(f"weights package {pt.PACKAGE.name} not installed: {pt.PACKAGE.install_command}")
    encoder = pt.load()
    _, ids = encoder.tokenizer.encode("law")
    token = ids[1]  # after [CLS]
    hidden = encoder.forward(np.array([token, token]))[1][0]  # (2, d) embeddings of the same token at 0 and 1
    assert np.abs(hidden[0] - hidden[1]).max() > 0.1


def test_the_real_encoder_looks_both_ways(law_run):
    """§3: 编码器的自注意力前后都看 (§6's MiniLM): weight above the diagonal, in every layer."""
    import numpy as np

    later = np.triu(np.ones(law_run.attentions.shape[-2:], dtype=bool), k=1)  # keys after the query
    assert (law_run.attentions[..., later].sum(axis=-1).max(axis=-1) > 1).all()


def test_every_link_to_an_anchor_finds_it():
    """Open item 2.10: each [text](#anchor) of the core lands on an <a id="anchor"> of the same notebook."""
    import re

    text = "\n".join(c["source"] for c in _source_cells() if c["kind"] == "md")
    targets = set(re.findall(r'<a id="([\w-]+)"></a>', text))
    links = re.findall(r"\]\(#([\w-]+)\)", text)
    assert links and set(links) <= targets, set(links) - targets


def test_the_exercise_scaffolds_run_once_uncommented_as_the_prose_says():
    """Exercise 2's scaffold and every exercise's last line (the solution): deleting each line's leading 「# 」, as
    the prose says, leaves code that Python reads; deleting only 「#」 (the old instruction) would not."""
    import re

    cells = [c["source"] for c in _source_cells() if c["kind"] == "code" and "exercises.show_solution" in c["source"]]
    assert len(cells) == 3
    for source in cells:
        compile(re.sub(r"^# (exercises\.show_solution)", r"\1", source, flags=re.M), "<solution line>", "exec")
    loop = next(s for s in cells if "multi_head_attention_loop" in s)
    scaffold = re.sub(r"^(    )# ", r"\1", loop, flags=re.M).replace("……", "None")
    compile(scaffold, "<uncommented scaffold>", "exec")
    with pytest.raises(SyntaxError):  # 「去掉 `#`」 left one space too many
        compile(re.sub(r"^(    )#", r"\1", loop, flags=re.M).replace("……", "None"), "<old>", "exec")


