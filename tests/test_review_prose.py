"""Facts behind sentences of the core lesson that no other test holds: behaviour and numbers, not wording.

A §6 sentence is checked only while the prose still makes it (§6 is being moved into a lab): if the
claim is there, its number must be the computed one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import assert_numbers, numbers_in, sentence_with

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


def test_section_2_demo_hides_the_pronoun_and_what_follows():
    """§2: the demo's mask hides 「她」 itself and everything after it; the causal rule lets a token see itself."""
    import numpy as np

    from lesson_lib.attention import scaled_dot_product_attention
    from lesson_lib.sections import s02_averaging as averaging

    for heads in (1, 2):
        d = averaging.demo(heads, sharpness=4.0)
        assert (d.weights[:, averaging.QUERY:] == 0).all() and (d.weights[:, : averaging.QUERY] > 0).all()
    causal = np.tril(np.ones((4, 4), dtype=bool))  # the causal rule: itself and before
    _, w = scaled_dot_product_attention(np.ones((4, 2)), np.ones((4, 2)), np.eye(4, 2), causal)
    assert (np.diag(w) > 0).all() and (np.triu(w, k=1) == 0).all()


def test_attention_ignores_order_until_positions_are_added():
    """§3 「方向与位置」: reversing the tokens only reverses the outputs; with a position table it does not."""
    from lesson_lib.sections import s03_heads as heads

    for n, d, h in [(6, 512, 8), (5, 12, 3), (9, 16, 1)]:
        check = heads.order_and_position(n=n, d_model=d, h=h, seed=n)
        assert check["without_position"] < heads.ROUNDOFF and check["with_position"] > 0.1
    check = heads.order_and_position(n=6, d_model=512, h=8)
    reversed_only, with_position = heads.order_text(n=6, d_model=512, h=8).splitlines()
    assert numbers_in(reversed_only) == [6, heads.ROUNDOFF] and f"< {heads.ROUNDOFF:.0e}" in reversed_only
    assert numbers_in(with_position) == [round(check["with_position"], 2)]


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


def test_timing_runs_on_one_blas_thread(monkeypatch):
    """§4 compares head counts under the same conditions: one BLAS thread while timing."""
    import contextlib

    from lesson_lib.runtime import blas
    from lesson_lib.sections import s04_costs

    entered = []

    @contextlib.contextmanager
    def recording():
        entered.append(True)
        yield

    monkeypatch.setattr(blas, "one_blas_thread", recording)
    s04_costs.time_kernel(n=4, d_model=8, heads=[1, 2], repeat=1)
    assert entered == [True]


def test_section_3_residual_stream_keeps_the_token_and_adds_each_head():
    """§3: 新向量 = X + MultiHead(X), and MultiHead(X) = Σ_i head_i W^O_i: each head writes its own share."""
    import numpy as np

    from lesson_lib.attention import multi_head_attention, split_heads

    rng = np.random.default_rng(0)
    n, d, h = 5, 16, 4
    x = rng.standard_normal((n, d))
    w_q, w_k, w_v, w_o = (rng.standard_normal((d, d)) / 4 for _ in range(4))
    out, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, h)
    heads_out = weights @ split_heads(x @ w_v, h)  # (h, n, d_k)
    shares = [heads_out[i] @ w_o[i * d // h:(i + 1) * d // h] for i in range(h)]  # head_i W^O_i, (n, d) each
    np.testing.assert_allclose(out, sum(shares), atol=1e-12)
    np.testing.assert_allclose((x + out) - x, sum(shares), atol=1e-12)


def test_section_6_appendix_facts_are_the_papers():
    """§6's three appendix figures: each page, the layer (of how many) and Figure 4's two heads, read back."""
    from lesson_lib import paper

    figures = [numbers_in(line) for line in SECTION_6.splitlines() if line.startswith("- **")]  # one per figure
    assert {int(n[0]): int(n[1]) for n in figures} == paper.FIGURE_PAGES  # 图 3（第 13 页）…
    pages = paper.FIGURE_PAGES.values()
    said = sentence_with(SECTION_6, "Attention Visualizations")  # （第 13–15 页）…第 5 层（共 6 层）
    assert_numbers(said, min(pages), max(pages), paper.APPENDIX_LAYER, paper.LAYERS)
    its = sentence_with(SECTION_6, "- **", " its ")  # 图 4（第 14 页）：头 5 和头 6 从代词 its …
    assert numbers_in(its)[:4] == [4, paper.FIGURE_PAGES[4], *paper.FIGURE_4_HEADS], its


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


def test_section_2_names_its_second_cue_as_the_demo_prints_it():
    """§2's cue 2 and the two-head demo's second head carry one name."""
    import re

    from lesson_lib.sections import s02_averaging as averaging

    cue = re.search(r"^2\. \*\*(\w+)", _section("02"), flags=re.M).group(1)  # the cue's bold name
    assert averaging.demo(2).names[1].endswith(cue)
