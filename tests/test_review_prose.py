"""Sentences of the lesson about outputs beside them that no other test held (found reading it as a learner)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lesson_lib import pretrained as pt
from lesson_lib.pretrained import minilm

SRC = Path(__file__).parents[1] / "notebooks" / "src"
SECTION_6 = (SRC / "06_real_heads.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def making_scores():
    if not pt.available():
        pytest.skip(f"weights package {pt.PACKAGE} not installed: {pt.INSTALL_COMMAND}")
    run = pt.load().encode(pt.PAPER_SENTENCES["making"])
    return run, pt.phrase_scores(run.attentions, run.tokens, "making", ["more", "difficult"])


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
    listed = pt.rank_heads({"making": scores}, top=6)["making"]  # the six heads making_figure prints
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
    assert "第 9 节照出来的" not in SECTION_6 and "第 3 节看过的那几个短函数" in SECTION_6


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
    from lesson_lib.sections import pretrained_views as views

    if not pt.available():
        pytest.skip("weights package not installed")
    model = pt.load()
    text = views.model_text(model)
    assert "sha256" not in text and "pooler" not in text and "M 个参数" not in text
    assert f"约 {round(model.n_parameters / 1e4)} 万个参数" in text
    assert "<summary>给好奇的你：权重是怎么读进来的" in SECTION_6 and "sha256" in SECTION_6.split("<details>")[1]


def test_evidence_boundary_names_both_models():
    """§6 has two models: the English evidence is 6 layers, the Chinese 12 (each 12 heads, d_model 384)."""
    from lesson_lib.pretrained import e5

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
