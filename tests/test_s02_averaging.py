"""lesson_lib.sections.s02_averaging (§2): the sentence's value vectors, the lesson's 40/30/30 blend, 1 vs 2 heads;
then, each under its own heading, its widget, the numbers its prose states and its question (s02_averaging.toml).

Expected numbers come from the closed forms worked out by hand from the keys and queries the module
documents (指代 asks "female person?", 语法角色 asks "clause subject?"), not from a run.
"""

from __future__ import annotations

import html
import itertools
import math
import re

import numpy as np
import pytest
from helpers import (
    CJK,
    assert_numbers,
    in_order,
    numbers_in,
    numerals_in,
    prose_after,
    prose_before,
    section_prose,
    sentence_with,
    sentences,
    unnamed_controls,
)
from own_answers import misjudged, section_questions

from lesson_lib.sections import s02_averaging as averaging
from lesson_lib.sections.s02_averaging import FEATURES, TOKENS

VISIBLE = TOKENS.index("她")  # 她 sees the words before it: 7 of them
IDX = {w: TOKENS.index(w) for w in ("小明", "苹果", "小红", "她")}


def one_head_closed_form(s):
    """One query [1, 0.8]·s against keys 小红 [1, 0], 小明 [0, 1], five zero keys (she is masked)."""
    z = math.exp(s) + math.exp(0.8 * s) + 5
    return math.exp(s) / z, math.exp(0.8 * s) / z


def two_head_closed_form(s):
    """Each head: one matching key at logit s, six at 0."""
    return math.exp(s) / (math.exp(s) + 6)


# ---------------------------------------------------------------------------------------------
# Value vectors and the lesson's blend
# ---------------------------------------------------------------------------------------------


def test_values_rows_carry_the_named_features():
    v = averaging.VALUES
    assert v.shape == (len(TOKENS), len(FEATURES))
    expected = {
        "小明": {"男性", "人物", "主语"},
        "苹果": {"物品", "宾语"},
        "小红": {"女性", "人物"},
    }
    for i, word in enumerate(TOKENS):
        on = {f for f, x in zip(FEATURES, v[i]) if x == 1}
        assert on == expected.get(word, set()), word
        assert set(np.unique(v[i])) <= {0.0, 1.0}


def test_blend_of_lesson_weights_is_the_hand_computed_average():
    out = averaging.blend(averaging.LESSON_WEIGHTS)
    # 0.4·小红 + 0.3·小明 + 0.3·苹果, feature by feature
    want = {"女性": 0.4, "男性": 0.3, "人物": 0.4 + 0.3, "物品": 0.3, "主语": 0.3, "宾语": 0.3}
    assert list(out) == FEATURES
    for name, x in want.items():
        assert out[name] == pytest.approx(x)


def test_blend_one_hot_returns_that_words_row():
    v = averaging.VALUES
    for word in ("小明", "小红", "苹果", "把"):
        out = averaging.blend({word: 1.0})
        assert list(out.values()) == pytest.approx(v[TOKENS.index(word)].tolist())


@pytest.mark.parametrize("weights", [{"小绿": 1.0}, {"小红": 0.5, "香蕉": 0.5}])
def test_blend_rejects_unknown_word_in_chinese(weights):
    unknown = next(word for word in weights if word not in TOKENS)
    with pytest.raises(ValueError, match=unknown) as exc:  # the word, then the words there are
        averaging.blend(weights)
    assert CJK.search(str(exc.value)) and str(TOKENS) in str(exc.value)


@pytest.mark.parametrize(
    "weights",
    [{"小红": 0.5, "小明": 0.3}, {"小红": 0.6, "小明": 0.6}, {"小红": 1.5, "小明": -0.5}, {}],
)
def test_blend_rejects_weights_that_are_not_a_distribution(weights):
    with pytest.raises(ValueError) as exc:
        averaging.blend(weights)
    assert re.findall(r"\d+(?:\.\d+)?", str(exc.value)) == ["1", f"{sum(weights.values()):.3f}"]  # must be 1; is


@pytest.mark.parametrize(("weights", "fragment"), [
    ({"小红": float("nan")}, "nan"), ({"小红": "0.4"}, "'0.4'"), ({"小红": None}, "None"),
    ([("小红", 1.0)], None), ("小红", None),
], ids=repr)
def test_blend_names_a_weight_that_is_not_a_number(weights, fragment):
    """It quotes what it got (the value, or the whole argument when it is not a dict)."""
    with pytest.raises(ValueError) as exc:
        averaging.blend(weights)
    assert (fragment or repr(weights)) in str(exc.value) and CJK.search(str(exc.value))
    if isinstance(weights, dict):
        assert next(iter(weights)) in str(exc.value)  # and whose weight it is


# ---------------------------------------------------------------------------------------------
# demo: one head vs two heads
# ---------------------------------------------------------------------------------------------

SHARPNESS = [0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 20.0, 50.0]


@pytest.mark.parametrize("s", SHARPNESS)
def test_one_head_matches_closed_form_and_cannot_keep_both(s):
    d = averaging.demo(1, s)
    referent, subject = one_head_closed_form(s)
    assert d.weights.shape == (1, len(TOKENS))
    assert d.referent_kept == pytest.approx(referent, abs=1e-12)
    assert d.subject_kept == pytest.approx(subject, abs=1e-12)
    # one row of weights: whatever goes to 小红 cannot also go to 小明
    assert d.referent_kept + d.subject_kept <= 1 + 1e-12
    assert d.weights.sum() == pytest.approx(1.0)


def test_one_head_sharper_means_more_referent_and_eventually_less_subject():
    r = np.array([averaging.demo(1, s).referent_kept for s in SHARPNESS])
    sub = np.array([averaging.demo(1, s).subject_kept for s in SHARPNESS])
    assert (np.diff(r) > 0).all()
    # subject share e^{0.8s}/(e^s + e^{0.8s} + 5) peaks at e^s = 20 (s ≈ 3) and then falls to 0
    peak = SHARPNESS.index(3.0)
    assert (np.diff(sub[: peak + 1]) > 0).all()
    assert (np.diff(sub[peak + 1 :]) < 0).all()
    assert sub[-1] < 1e-3
    assert r[-1] > 0.999


@pytest.mark.parametrize("s", SHARPNESS)
def test_two_heads_each_attend_to_their_own_word(s):
    d = averaging.demo(2, s)
    assert d.weights.shape == (2, len(TOKENS))
    want = two_head_closed_form(s)
    assert d.referent_kept == pytest.approx(want, abs=1e-12)
    assert d.subject_kept == pytest.approx(want, abs=1e-12)
    assert d.weights[0, IDX["小红"]] == pytest.approx(want)
    assert d.weights[1, IDX["小明"]] == pytest.approx(want)
    assert d.weights.sum(axis=1) == pytest.approx([1.0, 1.0])


def test_two_heads_keep_both_answers_as_sharpness_grows():
    kept = [averaging.demo(2, s) for s in SHARPNESS]
    for a, b in itertools.pairwise(kept):
        assert b.referent_kept > a.referent_kept
        assert b.subject_kept > a.subject_kept
    assert kept[-1].referent_kept > 0.999 and kept[-1].subject_kept > 0.999
    # where one head must choose, two heads do not
    one = averaging.demo(1, 10.0)
    two = averaging.demo(2, 10.0)
    assert two.referent_kept + two.subject_kept > 1.9 > one.referent_kept + one.subject_kept


@pytest.mark.parametrize("heads", [1, 2])
def test_zero_sharpness_is_uniform_over_the_visible_words(heads):
    d = averaging.demo(heads, 0.0)
    assert d.weights[:, :VISIBLE] == pytest.approx(np.full((heads, VISIBLE), 1 / VISIBLE))
    assert (d.weights[:, VISIBLE:] == 0).all()


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("s", [0.0, 4.0, 50.0])
def test_she_never_attends_to_herself_or_later(heads, s):
    d = averaging.demo(heads, s)
    assert (d.weights[:, IDX["她"] :] == 0).all()
    assert (d.weights[:, : IDX["她"]] > 0).all()  # softmax: every visible word gets something


@pytest.mark.parametrize("s", [0.0, 1.5, 4.0, 12.0])
def test_two_head_output_is_concat_of_each_heads_subspace_average(s):
    """Head 1 averages the identity features with its weights, head 2 the role features with its own."""
    d = averaging.demo(2, s)
    v = averaging.VALUES
    n_id = len(averaging.IDENTITY_FEATURES)
    # independent weights: softmax over the visible words with the matching key at logit s
    w_ref = np.zeros(len(TOKENS))
    w_ref[:VISIBLE] = 1.0
    w_ref[IDX["小红"]] = math.exp(s)
    w_ref /= w_ref.sum()
    w_sub = np.zeros(len(TOKENS))
    w_sub[:VISIBLE] = 1.0
    w_sub[IDX["小明"]] = math.exp(s)
    w_sub /= w_sub.sum()
    want = np.concatenate([w_ref @ v[:, :n_id], w_sub @ v[:, n_id:]])
    assert list(d.output) == FEATURES
    assert list(d.output.values()) == pytest.approx(want.tolist(), abs=1e-12)


@pytest.mark.parametrize("s", [0.0, 4.0, 12.0])
def test_one_head_output_is_blend_of_its_weights(s):
    d = averaging.demo(1, s)
    by_word = {w: float(x) for w, x in zip(TOKENS, d.weights[0]) if x > 0}
    assert list(d.output.values()) == pytest.approx(list(averaging.blend(by_word).values()), abs=1e-12)


@pytest.mark.parametrize("heads", [0, 3, -1, 8, 1.0, "2", True])
def test_demo_rejects_other_head_counts_in_chinese(heads):
    with pytest.raises(ValueError) as exc:
        averaging.demo(heads)
    message = str(exc.value)
    assert "heads" in message and repr(heads) in message and "[1, 2]" in message and CJK.search(message)


@pytest.mark.parametrize("s", [float("nan"), float("inf"), -0.1, -5.0, 50.5, 1e6, "4", None])
def test_demo_rejects_bad_sharpness_in_chinese(s):
    with pytest.raises(ValueError, match=r"\bsharpness\b") as exc:
        averaging.demo(1, s)
    assert CJK.search(str(exc.value)) and repr(s) in str(exc.value)


# ---------------------------------------------------------------------------------------------
# Figures: drawing raises on any warning (missing CJK glyph included)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("heads", [1, 2])
def test_demo_html_draws_every_weight_and_feature_as_a_bar_named_by_its_numbers(heads):
    d = averaging.demo(heads, 4.0)
    page = averaging.demo_html(d)
    widths = [float(w) for w in re.findall(r"height:0.8em;width:([\d.]+)em", page)]
    expected = [*d.weights[:, :VISIBLE].T.ravel(), *d.output.values()]  # row by row: each word's heads, then features
    assert widths == pytest.approx([8 * x for x in expected], abs=0.006)
    alt = html.unescape(re.search(r'role="img" aria-label="([^"]*)"', page).group(1))
    assert all(f"{v:.2f}" in alt for v in d.output.values())  # named by the numbers it draws
    assert all(name in page for name in d.names)


def test_printed_tables_carry_the_numbers():
    table = averaging.values_table()
    assert table.splitlines()[0].split()[1:] == averaging.FEATURES
    assert len(table.splitlines()) == 2 + averaging.QUERY  # header, rule, one row per visible word
    blended = averaging.blend_table(averaging.LESSON_WEIGHTS)
    assert "40% / 30% / 30%" in blended
    rows = {line.split()[0]: float(line.split()[-1]) for line in blended.splitlines()[2:]}
    assert rows == pytest.approx(averaging.blend(averaging.LESSON_WEIGHTS), abs=0.005)


def test_demo_text_matches_demo():
    text = averaging.demo_text(sharpness=4.0)
    for heads in (1, 2):
        d = averaging.demo(heads, 4.0)
        assert re.search(rf"= {d.referent_kept:.2f}\W+\w+\W+\w+\W+= {d.subject_kept:.2f}", text)  # referent, subject
        for name in d.names:
            assert name in text


# ---------------------------------------------------------------------------------------------
# The widget (demo_widget): what it shows is the pure functions' output
# ---------------------------------------------------------------------------------------------


def _percent(x):
    return f"{x:.0%}"


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_averaging_demo_heads_toggle_changes_numbers():
    box = averaging.demo_widget()
    c = box.controls
    assert [v for _, v in c["heads"].options] == [1, 2]
    assert c["heads"].value == 1 and c["sharpness"].value == 4.0
    # only sharpness values demo() accepts can be chosen
    assert 0 <= c["sharpness"].min and c["sharpness"].max <= 50
    # one head at sharpness 4: 小红 e^4 / (e^4 + e^3.2 + 5), 小明 e^3.2 / (…)
    z = math.exp(4) + math.exp(3.2) + 5
    one = c["summary"].value
    bold = re.findall(r"<b>\D*(\d+%)</b>", one)  # 小红, then 小明
    assert bold == [_percent(math.exp(4) / z), _percent(math.exp(3.2) / z)]

    picture = c["picture"].value
    assert picture == averaging.demo_html(averaging.demo(1, 4.0))  # themed HTML bars named by their alt text
    alt = re.search(r'aria-label="([^"]*)"', picture).group(1)
    query, target = averaging.TOKENS[averaging.QUERY], averaging.TOKENS[4]  # 她 gives 小红 the most
    assert 'role="img"' in picture and alt.index(query) < alt.index(target) < alt.index(f"{math.exp(4) / z:.2f}")

    c["heads"].value = 2
    two = c["summary"].value
    both = _percent(math.exp(4) / (math.exp(4) + 6))  # each head: its word at logit 4, six at 0
    assert two != one
    assert re.findall(r"<b>\D*(\d+%)</b>", two) == [both, both]
    assert c["picture"].value != picture

    c["sharpness"].value = 0.0
    assert c["summary"].value.count(_percent(1 / 7)) == 2  # uniform over the seven earlier words


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_html_pictures_fit_the_output():
    """The demo's bars are HTML that shrinks with the output, never wider than it."""
    picture = averaging.demo_widget().controls["picture"]
    assert picture.layout.max_width == "100%"
    assert "max-width:100%" in picture.value and "<table" in picture.value


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_summaries_are_the_pure_functions_output():
    a = averaging.demo_widget().controls
    a["heads"].value, a["sharpness"].value = 2, 3.0
    assert a["summary"].value == averaging.summary_html(averaging.demo(2, 3.0))


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_every_control_of_the_widget_is_named():
    assert unnamed_controls(averaging.demo_widget()) == []


# ---------------------------------------------------------------------------------------------
# The prose: numbers read back from the section's sentences (found by structure) and recomputed
# ---------------------------------------------------------------------------------------------


def test_section_2_blend_reading(cells):
    """'四成像女人、三成像男人、三成像一只苹果，主语只剩 0.3' is the single head's blend that §2 prints."""
    blend = averaging.blend(averaging.LESSON_WEIGHTS)
    said = sentences(prose_after(cells, "blend_table(averaging.LESSON_WEIGHTS)"))[0]
    tenths = [round(10 * blend[f]) for f in ("女性", "男性", "物品")]  # the order the sentence reads them
    assert in_order(numerals_in(said), tenths), said  # 四成、三成、三成
    assert numbers_in(said) == [round(blend["主语"], 1)]


def test_section_2_demo_reading(cells):
    """'单头读回了小红 0.65、小明 0.29 …… 两个头各拿 0.90' is what demo_text(sharpness=4.0) prints; the prose
    before the cell states that sharpness (锐度固定为 4)."""
    one, two = averaging.demo(1, 4.0), averaging.demo(2, 4.0)
    said = prose_after(cells, "demo_text(sharpness=4.0)")
    assert round(two.referent_kept, 2) == round(two.subject_kept, 2)
    assert_numbers(said, round(one.referent_kept, 2), round(one.subject_kept, 2), round(two.referent_kept, 2))
    before = sentence_with(prose_before(cells, "demo_text(sharpness=4.0)"), "softmax")
    assert numbers_in(before) == [4.0], before


def test_section_2_try_it_answer(cells):
    """§2's 试一试 answer, at the widget's sharpness notches (0.5 apart, as the prose says 0 to 10): one head trades
    小明 for 小红 (peak at sharpness 3), never above 100% together; two heads keep both, towards 100%."""
    low, high = numbers_in(sentence_with(prose_after(cells, "demo_text(sharpness=4.0)"), " / "))[-2:]  # 0 to 10
    notches = np.arange(low, high + 0.25, 0.5)
    one = np.array([[averaging.demo(1, s).referent_kept, averaging.demo(1, s).subject_kept] for s in notches])
    two = np.array([[averaging.demo(2, s).referent_kept, averaging.demo(2, s).subject_kept] for s in notches])
    assert np.all(np.diff(one[:, 0]) > 0)  # 越尖，越只顾「小红」
    peak = int(one[:, 1].argmax())
    answer = sentence_with(prose_after(cells, "demo_widget()"), "%")  # 小明最多 31% 左右（锐度 3 时）
    assert_numbers(answer, round(100 * one[peak, 1]), notches[peak])
    assert np.all(np.diff(one[peak:, 1]) < 0)  # 再尖反而越来越少
    assert np.all(one.sum(axis=1) <= 1 + 1e-12) and not np.any((one > 0.5).all(axis=1))  # 单头不能两个都过半
    np.testing.assert_allclose(two[:, 0], two[:, 1], atol=1e-12)  # 两个头：两条线索一样多
    assert np.all(np.diff(two[:, 0]) > 0) and round(100 * two[-1, 0]) == 100  # 一起趋近 100%


def test_section_2_demo_hides_the_pronoun_and_what_follows():
    """§2: the demo's mask hides 「她」 itself and everything after it (test_she_never_attends_to_herself_or_later);
    the causal rule lets a token see itself."""
    from lesson_lib.attention import scaled_dot_product_attention

    causal = np.tril(np.ones((4, 4), dtype=bool))  # the causal rule: itself and before
    _, w = scaled_dot_product_attention(np.ones((4, 2)), np.ones((4, 2)), np.eye(4, 2), causal)
    assert (np.diag(w) > 0).all() and (np.triu(w, k=1) == 0).all()


def test_section_2_names_its_second_cue_as_the_demo_prints_it(cells):
    """§2's cue 2 and the two-head demo's second head carry one name."""
    cue = re.search(r"^2\. \*\*(\w+)", section_prose(cells, 2), flags=re.M).group(1)  # the cue's bold name
    assert averaging.demo(2).names[1].endswith(cue)


# ---------------------------------------------------------------------------------------------
# The section's questions (sections/s02_averaging.toml), each against the answers kept in its data
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", section_questions("s02_averaging.toml"), ids=lambda q: q.id)
def test_each_question_judges_its_own_answers(question, monkeypatch):
    assert misjudged(question, monkeypatch) == []
