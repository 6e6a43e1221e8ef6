"""Sentences of the lesson about outputs beside them that no other test held (found reading it as a learner)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lesson_lib.models.pretrained import head_finder, minilm
from lesson_lib.models.pretrained import minilm as pt

SRC = Path(__file__).parents[1] / "notebooks" / "src"
SECTION_6 = (SRC / "06_real_heads.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def making_scores():
    if not pt.available():
        pytest.skip(f"weights package {pt.PACKAGE} not installed: {pt.INSTALL_COMMAND}")
    run = pt.load().encode(pt.PAPER_SENTENCES["making"])
    return run, head_finder.phrase_scores(run.attentions, run.tokens, "making", ["more", "difficult"])


def test_weights_size_in_prose_is_the_file_size():
    """'91 MB 的权重文件不是一口气读进内存': the safetensors file in the weights package, in decimal MB."""
    mb = int(re.search(r"(\d+) MB 的权重文件", SECTION_6).group(1))
    folder = minilm.model_dir()
    if folder is None:
        pytest.skip("weights package not installed")
    assert round((Path(folder) / "model.safetensors").stat().st_size / 1e6) == mb


def test_load_time_is_not_promised_as_a_number():
    """Loading hashes 91 MB: its time follows the machine, so the prose gives an order, not a figure."""
    assert not re.search(r"约 \d+(\.\d+)? 秒", SECTION_6)
    assert "通常不到一秒" in SECTION_6


def test_making_heads_sit_in_several_layers_and_skip_five_words(making_scores):
    """'这些头分散在不同的层' and '中间隔着 the registration or voting process 五个词'."""
    run, scores = making_scores
    listed = head_finder.rank_heads({"making": scores}, top=6)["making"]  # the six heads making_figure prints
    assert len({layer for layer, _head, _score in listed}) >= 3
    gap = run.tokens[run.tokens.index("making") + 1 : run.tokens.index("more")]
    assert gap == "the registration or voting process".split() and "五个词" in SECTION_6


def test_making_heads_are_not_said_to_follow_content(making_scores):
    """No minimal pair was run on Figure 3's sentence: the prose hedges, and its reason is true of the tokens."""
    run, _ = making_scores
    assert "单看位置是连不过去的" not in SECTION_6 and "这些头是按内容在找搭配" not in SECTION_6
    assert "difficult 恰好是句号前的最后一个词" in SECTION_6
    assert run.tokens[run.tokens.index("difficult") + 1] == "."


def test_appendix_model_is_not_named():
    """The captions of Figures 3–5 name no model and no language pair."""
    assert "英→德翻译模型" not in SECTION_6 and "英→德翻译（" not in SECTION_6
    assert "**一个训练好的翻译模型的编码器**" in SECTION_6


def test_direction_and_position_are_said_where_next_word_heads_appear():
    assert SECTION_6.count("(#pos-dir)") >= 2
    assert "编码器的自注意力，每个词元都能看整句话" in SECTION_6 and "加上了它的位置编码" in SECTION_6
    assert "第 9 节照出来的" not in SECTION_6 and "第 2、3 节看过的那几个短函数" in SECTION_6
    shown = {n: (SRC / f).read_text(encoding="utf-8") for n, f in [(2, "02_averaging.md"), (3, "03_heads.md")]}
    assert "show_source(scaled_dot_product_attention)" in shown[2] and "show_source(split_heads" in shown[3]


@pytest.fixture(scope="module")
def law_run():
    if not pt.available():
        pytest.skip(f"weights package {pt.PACKAGE} not installed: {pt.INSTALL_COMMAND}")
    return pt.load().encode(pt.PAPER_SENTENCES["law"])


def test_token_count_includes_the_special_tokens(law_run):
    """'这句话有 27 个词元（含 [CLS] 和 [SEP]）'."""
    n = int(re.search(r"这句话有 (\d+) 个词元（含 `\[CLS\]` 和 `\[SEP\]`）", SECTION_6).group(1))
    assert len(law_run.tokens) == n and law_run.tokens[0] == "[CLS]" and law_run.tokens[-1] == "[SEP]"


def test_application_is_the_word_after_its(law_run):
    """'头 10 把 0.83 给了紧挨着的 application——its 后面的词'."""
    assert "application——its **后面**的词" in SECTION_6
    assert law_run.tokens[law_run.tokens.index("its") + 1] == "application"


def test_model_line_leaves_the_engineering_to_the_box():
    from lesson_lib.sections.s06_real_heads import views

    if not pt.available():
        pytest.skip("weights package not installed")
    model = pt.load()
    text = views.model_text(model)
    assert "sha256" not in text and "pooler" not in text and "M 个参数" not in text
    assert f"约 {round(model.n_parameters / 1e4)} 万个参数" in text
    assert "<summary>给好奇的你：权重是怎么读进来的" in SECTION_6 and "sha256" in SECTION_6.split("<details>")[1]


def test_evidence_boundary_names_both_models():
    """§6 has two models: the English evidence is 6 layers, the Chinese 12 (each 12 heads, d_model 384)."""
    from lesson_lib.models.pretrained import e5

    assert "英文的证据来自一个 6 层、每层 12 头的句向量编码器" in SECTION_6
    assert "中文的证据来自一个 12 层、每层 12 头的检索编码器" in SECTION_6
    if e5.available():
        c = e5.load().config
        assert (c.n_layers, c.n_heads, c.d_model) == (12, 12, 384)
    if pt.available():
        c = pt.load().config
        assert (c.n_layers, c.n_heads, c.d_model) == (6, 12, 384)


def test_day_12_preview_agrees_with_the_position_embeddings():
    """Attention alone is order-blind; every model of the lesson adds positions to its input."""
    preview = (SRC / "10_self_test.md").read_text(encoding="utf-8").split("### 明天 · Day 12")[1]
    assert "如果输入里没有位置信息" in preview and "加上了位置编码" in preview and "(#pos-dir)" in preview


def test_section_9_keeps_engineering_folded():
    section_9 = (SRC / "09_paper.md").read_text(encoding="utf-8")
    assert "base 模型" not in section_9 and "基础模型" in section_9
    folded = section_9.split("<details>")[1]
    assert "attention_fast" in folded and "attention_fast" not in section_9.split("<details>")[0]


# ---------------------------------------------------------------------------------------------
# §0–§5: what the text says about outputs, direction and position
# ---------------------------------------------------------------------------------------------


def _source_cells():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_notebook", SRC.parents[1] / "scripts" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.source_cells()


def _section(number: str) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(SRC.glob(f"{number}_*.md")))


def test_only_the_varying_cells_that_section_0_names_print_varying_text():
    """§0: printed text is the same everywhere except 计时 and numbers marked 「后几位随机器而变」.
    Every printing cell that nbval may not compare is one of those two kinds, and says so."""
    promise = _section("00")
    assert "**计时**" in promise and "「后几位随机器而变」" in promise
    volatile = [c["source"] for c in _source_cells()
                if c["kind"] == "code" and "nbval-ignore-output" in c["tags"] and "print(" in c["source"]]
    assert volatile
    for source in volatile:
        assert "timing_text(" in source or ("后几位" in source and "随机器而变" in source), source


def test_section_2_demo_only_looks_back_through_the_shown_mask():
    """§2: 「她」只看它前面的词元——代码里的 mask 挡住了后面的键; the listing shown holds that mask line."""
    import inspect

    from lesson_lib.attention import scaled_dot_product_attention
    from lesson_lib.sections import s02_averaging as averaging

    for heads in (1, 2):
        d = averaging.demo(heads, sharpness=4.0)
        assert (d.weights[:, averaging.QUERY:] == 0).all() and (d.weights[:, : averaging.QUERY] > 0).all()
    text = _section("02")
    assert "show_source(scaled_dot_product_attention)" in text and "`mask` 挡住了后面的键" in text
    code = [line.split("#")[0] for line in inspect.getsource(scaled_dot_product_attention).splitlines()]
    steps = ["check_qkv(", "math.sqrt(d_k)", "np.where(mask", "= softmax(", "return weights @ v, weights"]
    at = [next(i for i, line in enumerate(code) if step in line) for step in steps]
    assert at == sorted(at)  # 先检查输入，再打分、缩放、（mask）、softmax，最后按权重取值，返回输出和权重


def test_attention_ignores_order_until_positions_are_added():
    """§3 「方向与位置」: reversing the tokens only reverses the outputs; with a position table it does not."""
    from lesson_lib.sections import s03_heads as heads

    for n, d, h in [(6, 512, 8), (5, 12, 3), (9, 16, 1)]:
        check = heads.order_and_position(n=n, d_model=d, h=h, seed=n)
        assert check["without_position"] < heads.ROUNDOFF and check["with_position"] > 0.1
    lines = heads.order_text(n=6, d_model=512, h=8).splitlines()
    assert lines[0].endswith("最大差 < 1e-12，每个词元读到的内容一样") and "内容变了" in lines[1]
    text = _section("03")
    assert "注意力本身不看顺序" in text and '<a id="pos-dir"></a>' in text


def test_every_trained_model_of_the_lesson_adds_positions():
    """§3: 第 6 节的两个真实模型、第 7 节的玩具模型都把位置编码加进 X.
    The toy model's embedding table has one row per position; a real model embeds one token twice differently."""
    import numpy as np

    from lesson_lib.models.toy import model
    from lesson_lib.models.toy.config import Task

    task = Task()
    assert model.param_shapes(task, 8)["E"][0] == task.V + 2 * task.K + task.T  # the last T rows: positions
    assert "第 7 节的玩具模型" in _section("03")
    if not pt.available():
        pytest.skip(f"weights package {pt.PACKAGE} not installed: {pt.INSTALL_COMMAND}")
    encoder = pt.load()
    _, ids = encoder.tokenizer.encode("law")
    token = ids[1]  # after [CLS]
    hidden = encoder.forward(np.array([token, token]))[1][0]  # (2, d) embeddings of the same token at 0 and 1
    assert np.abs(hidden[0] - hidden[1]).max() > 0.1


def test_the_real_encoder_looks_both_ways():
    """§3: 编码器的自注意力前后都看 (§6's MiniLM): weight above the diagonal, in every layer."""
    import numpy as np

    if not pt.available():
        pytest.skip(f"weights package {pt.PACKAGE} not installed: {pt.INSTALL_COMMAND}")
    run = pt.load().encode(pt.PAPER_SENTENCES["law"])
    later = np.triu(np.ones(run.attentions.shape[-2:], dtype=bool), k=1)  # keys after the query
    assert (run.attentions[..., later].sum(axis=-1).max(axis=-1) > 1).all()  # every layer: some head looks ahead
    assert "前后都看" in _section("03") and "编码器" in _section("03")


def test_timing_runs_on_one_blas_thread(monkeypatch):
    """§4's folded box: 计时时课程把它限制成一个线程."""
    import contextlib

    from lesson_lib.runtime import blas
    from lesson_lib.sections import s04_costs as flops

    entered = []

    @contextlib.contextmanager
    def recording():
        entered.append(True)
        yield

    monkeypatch.setattr(blas, "one_blas_thread", recording)
    flops.time_kernel(n=4, d_model=8, heads=[1, 2], repeat=1)
    assert entered == [True]
    assert "限制成一个线程" in _section("04")


def test_section_1_describes_the_appendix_as_it_is():
    """§1: 「论文附录只画了一个翻译模型第 5 层的三张图、两句话」 — no claim about how the figures were chosen."""
    from lesson_lib import paper

    text = _section("01")
    assert "第 5 层的三张图、两句话" in text and "好看" not in text
    assert len(paper.FIGURE_PAGES) == 3 and len(set(pt.PAPER_SENTENCES.values())) == 2
    assert "layer 5 of 6" in (SRC.parents[1] / "lesson_lib" / "paper.py").read_text(encoding="utf-8")
