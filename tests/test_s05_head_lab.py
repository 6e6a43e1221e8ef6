"""lesson_lib.sections.s05_head_lab (§5) and its two pictures (plotting.heat_map: the zoomed head, and every head
in a fixed box=).

The lab's promises: the slider only offers head counts that divide d_model; for every h the
parameters and matmul multiplies stay put while softmax work grows as 3·h·n²; one fixed set of
parameters is only cut differently; the pictures show each head's weights in the colours
of matplotlib's colormap, are named by alt text made from those numbers, keep one size and fit 592 px.
Then, each under its own heading: the widget, the numbers the prose states, and the question (s05_head_lab.toml).
"""

from __future__ import annotations

import html
import io
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from helpers import (
    CJK,
    assert_numbers,
    numbers_in,
    prose_after,
    section_prose,
    sentence_with,
    unnamed_controls,
)
from own_answers import misjudged, section_questions
from traitlets import TraitError

from lesson_lib import costs, paper
from lesson_lib.checks import AttentionInputError
from lesson_lib.head_stats import mean_pairwise_js, row_entropy
from lesson_lib.sections import s05_head_lab as head_lab
from lesson_lib.show import plotting

N = len(head_lab.SENTENCE)  # 11 tokens
D = 512
H = paper.BASE_HEADS  # the base model's, as §5's prose compares with it
CHOICES = [1, 2, 4, 8, 16, 32, 64]  # divisors of 512 = 2^9 up to 64


@pytest.fixture(scope="module")
def states():
    return {h: head_lab.lab_state(h) for h in CHOICES}


# ---------------------------------------------------------------------------------------------
# Slider choices
# ---------------------------------------------------------------------------------------------


def test_head_choices_are_divisors_of_512_up_to_64():
    assert head_lab.HEAD_CHOICES == CHOICES


# ---------------------------------------------------------------------------------------------
# lab_state
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("h", CHOICES)
def test_lab_state_numbers(states, h):
    s = states[h]
    assert s.h == h and s.d_k == D // h and s.d_k * h == D
    assert s.tokens == head_lab.SENTENCE
    assert s.weights.shape == (h, N, N)
    assert (s.weights >= 0).all()
    np.testing.assert_allclose(s.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert s.parameters == 4 * D * D == 1_048_576
    assert s.matmul_multiplies == 4 * N * D * D + 2 * N * N * D  # projections + QKᵀ + weights·V
    assert s.softmax_ops == 3 * h * N * N
    assert 0 <= s.mean_entropy_bits <= math.log2(N)


def test_costs_constant_except_softmax(states):
    assert len({s.parameters for s in states.values()}) == 1
    assert len({s.matmul_multiplies for s in states.values()}) == 1
    softmax = [states[h].softmax_ops for h in CHOICES]
    assert softmax == sorted(softmax) and softmax[-1] == 64 * softmax[0]


def test_same_parameters_only_cut_differently(states):
    """Σ_i √d_k · log w_i equals X W^Q (X W^K)ᵀ up to a per-row constant, whatever h is.

    log softmax(S_i) = S_i - c(row), and Σ_i √d_k·S_i = Σ_i Q_i K_iᵀ = Q Kᵀ: the full-width scores.
    So if every h cuts the same W^Q, W^K, this row-centred sum is the same matrix for every h.
    """
    def full_scores(s):
        z = (math.sqrt(s.d_k) * np.log(s.weights)).sum(axis=0)  # (n, n)
        return z - z.mean(axis=-1, keepdims=True)

    ref = full_scores(states[1])
    for h in CHOICES[1:]:
        np.testing.assert_allclose(full_scores(states[h]), ref, atol=1e-8, err_msg=f"h={h}")


def test_heads_differ_and_diversity(states):
    for h in CHOICES[1:]:
        d = mean_pairwise_js(states[h].weights)
        assert 0 < d <= 1, h
        w = states[h].weights
        assert not np.allclose(w[0], w[1])  # different column blocks, different maps


@pytest.mark.parametrize("h", CHOICES)
def test_reading_names_d_k_in_chinese(states, h):
    r = states[h].reading
    assert f"d_k = {D // h}" in r
    assert CJK.search(r)
    if h > 1:
        assert f"{mean_pairwise_js(states[h].weights):.2f}" in re.findall(r"\d+\.\d+", r)
    if h not in (1, 8):
        assert re.search(rf"\b8\D+{re.escape(f'{h / 8:g}')}\D", r)  # softmax work relative to the base's 8 heads


def test_lab_state_is_deterministic():
    a, b = head_lab.lab_state(8), head_lab.lab_state(8)
    assert np.array_equal(a.weights, b.weights) and a.reading == b.reading


@pytest.mark.parametrize("h", [3, 5, 7, 48, 0, -8, 2.0, "8"])
def test_lab_state_rejects_heads_that_do_not_divide_in_chinese(h):
    with pytest.raises(AttentionInputError) as exc:
        head_lab.lab_state(h)
    assert str(h) in str(exc.value)  # it quotes the head count it was given
    assert CJK.search(str(exc.value))


# ---------------------------------------------------------------------------------------------
# summary_html and the lab's two pictures (lab_pictures: themed SVG, alt text, folded table)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("h", CHOICES)
def test_summary_html(states, h):
    s = states[h]
    html = head_lab.summary_html(s)
    assert f"d_k = {D // h}" in html
    assert "1,048,576" in html
    assert f"{3 * h * N * N:,}" in html
    assert s.reading in html
    assert "<script" not in html.lower()
    assert not re.search(r"\bid\s*=", html)  # no ids: two lab widgets on a page must not clash
    ET.fromstring(f"<div>{html}</div>")  # balanced, well-formed markup


SVG = "{http://www.w3.org/2000/svg}"
OUTPUT_WIDTH = 592  # JupyterLab's output area at 1024 × 768 with the file browser open


def svg_of(html: str) -> ET.Element:
    return ET.fromstring(html[html.index("<svg"):html.index("</svg>") + len("</svg>")])


def font_px(svg: ET.Element) -> list[float]:
    """The font size in CSS px of every <text>: its own style, else the <svg>'s."""
    def size(style, default=None):
        m = re.search(r"font-size:([\d.]+)px", style or "")
        return float(m.group(1)) if m else default

    root = size(svg.get("style"))
    return [size(t.get("style"), root) for t in svg.iter(f"{SVG}text")]


def embedded_png(image: ET.Element) -> np.ndarray:
    import base64

    from PIL import Image

    data = base64.b64decode(image.get("href").split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def viridis(w) -> np.ndarray:
    return plotting.colormap_lut()[np.rint(np.asarray(w) * 255).astype(int)].astype(int)


@pytest.fixture(scope="module")
def pictures(states):
    """(h, zoom) -> (zoomed html, overview html) for every h, zooming on the first and the last head."""
    return {(h, z): head_lab.lab_pictures(states[h], zoom=z)[:2] for h in CHOICES for z in sorted({1, h})}


def test_pictures_one_size_for_every_h_and_fit_592_px(pictures):
    """The page must not jump as the slider moves, and nothing is scaled down at 1024 × 768 with the file browser."""
    sizes = {key: tuple((int(svg_of(p).get("width")), int(svg_of(p).get("height"))) for p in pair)
             for key, pair in pictures.items()}
    assert len(set(sizes.values())) == 1, sizes
    (zw, zh), (ow, oh) = next(iter(sizes.values()))
    assert zh == oh == head_lab.LAB_HEIGHT and ow == head_lab.OVERVIEW_WIDTH
    assert zw + 8 + ow <= OUTPUT_WIDTH  # side by side, the widget's 8 px gap between


def test_pictures_text_is_at_least_11_px(pictures):
    for key, pair in pictures.items():
        for page in pair:
            sizes = font_px(svg_of(page))
            assert sizes and None not in sizes and min(sizes) >= 11, (key, sorted(set(sizes)))


def test_pictures_are_the_same_html_for_the_same_state(states, pictures):
    assert head_lab.lab_pictures(head_lab.lab_state(8), zoom=1)[:2] == pictures[(8, 1)]
    assert pictures[(8, 1)][0] != pictures[(8, 8)][0] and pictures[(8, 1)][1] != pictures[(8, 8)][1]
    assert pictures[(8, 1)] != pictures[(16, 1)]


@pytest.mark.parametrize(("h", "zoom"), [(1, 1), (8, 3), (64, 64), (64, 17)])
def test_zoomed_picture_is_that_heads_map_named_by_its_numbers(states, h, zoom):
    s = states[h]
    zoomed, _, _ = head_lab.lab_pictures(s, zoom=zoom)
    svg = svg_of(zoomed)
    cells = embedded_png(next(svg.iter(f"{SVG}image")))
    assert np.array_equal(cells, viridis(s.weights[zoom - 1]))  # the cells are head ``zoom``'s weights
    alt = svg.get("aria-label")
    assert alt == svg.find(f"{SVG}title").text and CJK.search(alt)
    assert re.findall(r"\d+", alt)[:3] == [str(zoom), str(h), str(D // h)]  # the head, of h, each d_k wide
    for i, word in enumerate(s.tokens):  # every row: the word it gives most to, with that weight
        k = int(np.argmax(s.weights[zoom - 1, i]))
        weight = f"{s.weights[zoom - 1, i, k]:.2f}"
        assert re.search(rf"{re.escape(word)}\W+\w+\W+{re.escape(s.tokens[k])}\W+{weight}\D", alt), word
    labels = [t.text for t in svg.iter(f"{SVG}text")]
    assert all(word in labels for word in s.tokens if len(word) == 1)  # row labels as text


def test_zoomed_heads_weights_are_a_folded_table(states):
    s, zoom = states[8], 5
    *pictures, folded = head_lab.lab_pictures(s, zoom=zoom)
    table = ET.fromstring(folded[folded.index("<table"):folded.index("</table>") + len("</table>")])
    assert folded.startswith("<details><summary>")
    assert re.findall(r"\d+", folded[: folded.index("</summary>")]) == [str(zoom)]  # names the zoomed head
    assert all("<details>" not in html for html in pictures)  # under both, not beside
    header = [th.text for th in table.iter("th")]
    assert header[1:] == s.tokens
    rows = [[td.text for td in tr.iter("td")] for tr in table.find("tbody")]
    assert [r[0] for r in rows] == s.tokens
    got = np.array([[float(v) for v in r[1:]] for r in rows])
    np.testing.assert_allclose(got, s.weights[zoom - 1], atol=0.005 + 1e-12)


@pytest.mark.parametrize("h", [2, 16, 64])
def test_overview_tiles_every_head_frames_the_zoomed_one_and_says_how_concentrated(states, h):
    s, zoom = states[h], h // 2
    _, overview, _ = head_lab.lab_pictures(s, zoom=zoom)
    svg = svg_of(overview)
    images = list(svg.iter(f"{SVG}image"))
    assert len(images) == h
    for k, image in enumerate(images):
        assert np.array_equal(embedded_png(image), viridis(s.weights[k])), f"head {k + 1}"
    frame = svg.find(f"{SVG}rect")
    framed = images[zoom - 1]
    assert float(frame.get("x")) + 2 == float(framed.get("x")) and float(frame.get("y")) + 2 == float(framed.get("y"))
    assert "#d62728" in frame.get("style")
    alt = svg.get("aria-label")
    conc = s.weights.max(axis=-1).mean(axis=-1)  # (h,) each head's mean largest row weight
    most, least = int(np.argmax(conc)), int(np.argmin(conc))
    numbers = re.findall(r"\d+(?:\.\d+)?", alt)
    assert numbers[:3] == [str(h), str(D // h), str(zoom)]  # all h heads, d_k each, the framed one
    assert numbers[3:9] == [str(most + 1), f"{conc[most]:.2f}", str(least + 1), f"{conc[least]:.2f}", str(h),
                            f"{conc.mean():.2f}"]  # the most and least concentrated heads, the mean of h


def test_overview_with_one_head_says_so_instead_of_repeating_the_map(states):
    _, overview, _ = head_lab.lab_pictures(states[1])
    svg = svg_of(overview)
    assert list(svg.iter(f"{SVG}image")) == []
    assert re.findall(r"\d+", svg.get("aria-label")) == ["1", "512"]  # h = 1, d_k = 512, and nothing else
    text = "".join(t.text for t in svg.iter(f"{SVG}text"))
    assert re.findall(r"\d+", text) == ["1", "1", "2"]  # one head, h = 1; drag the slider to 2 for more


def test_zoomed_colours_are_matplotlibs(states):
    """The lab's cells are what matplotlib's viridis maps the same weights to, within a step."""
    from matplotlib import colormaps

    s = states[64]
    cells = embedded_png(next(svg_of(head_lab.lab_pictures(s, zoom=9)[0]).iter(f"{SVG}image")))
    mpl = np.rint(colormaps["viridis"](s.weights[8])[..., :3] * 255).astype(int)
    assert np.abs(cells - mpl).max() <= 3


@pytest.mark.parametrize("zoom", [0, 9, -1])
def test_pictures_reject_a_head_that_is_not_there_in_chinese(raises_chinese, states, zoom):
    raises_chinese(lambda: head_lab.lab_pictures(states[8], zoom=zoom), "zoom", zoom)


def test_comparison_table_uses_lab_state():
    text = head_lab.comparison_table(heads=(1, 64))
    rows = [line.split() for line in text.splitlines()[2:]]
    for row, h in zip(rows, (1, 64)):
        s = head_lab.lab_state(h)
        assert row[:5] == [str(h), str(s.d_k), f"{s.parameters:,}", f"{s.matmul_multiplies:,}", f"{s.softmax_ops:,}"]


# ---------------------------------------------------------------------------------------------
# The widget (lab_widget): in-kernel ipywidgets, compared with the pure functions it wires to
# ---------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_head_lab_slider_offers_only_divisors():
    c = head_lab.lab_widget().controls
    slider = c["slider"]
    assert [v for _, v in slider.options] == head_lab.HEAD_CHOICES == [1, 2, 4, 8, 16, 32, 64]
    assert [label for label, _ in slider.options] == ["1", "2", "4", "8", "16", "32", "64"]
    assert slider.value == 8
    assert slider.continuous_update is False  # redraw on release, not on every step of a drag
    for bad in (3, 5, 12, 128, 0):
        with pytest.raises(TraitError):
            slider.value = bad
    assert slider.value == 8


def _shown(controls) -> tuple[str, str, str]:
    """The lab's two pictures (zoomed head, overview) and the numbers under them, as shown."""
    return (*(picture.value for picture in controls["picture"]), controls["numbers"].value)


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_head_lab_initial_shows_the_pure_functions_output():
    c = head_lab.lab_widget().controls
    state = head_lab.lab_state(8)
    assert c["summary"].value.startswith(head_lab.summary_html(state))
    assert html.escape(head_lab.overview_alt(state, 1)) in c["summary"].value  # what the pictures show, read out too
    assert "d_k = 64" in c["summary"].value
    assert _shown(c) == head_lab.lab_pictures(state)
    assert all('role="img" aria-label="' in html for html in _shown(c)[:2])  # named pictures, not bare PNGs


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_head_lab_slider_redraws():
    c = head_lab.lab_widget().controls
    before = _shown(c)
    c["slider"].value = 4
    assert "d_k = 128" in c["summary"].value
    assert "d_k = 64" not in c["summary"].value
    assert _shown(c) != before
    assert _shown(c) == head_lab.lab_pictures(head_lab.lab_state(4))
    c["slider"].value = 64
    assert "d_k = 8" in c["summary"].value and f"{3 * 64 * 121:,}" in c["summary"].value


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_head_lab_zoom_picks_a_head_and_follows_the_head_count():
    c = head_lab.lab_widget().controls
    zoom = c["zoom"]
    assert (zoom.min, zoom.max, zoom.value) == (1, 8, 1)  # counted from 1, like the picture's 头 1 … 头 8
    zoom.value = 6
    assert _shown(c) == head_lab.lab_pictures(head_lab.lab_state(8), zoom=6)
    c["slider"].value = 4  # head 6 is gone: the last head is enlarged instead
    assert (zoom.max, zoom.value) == (4, 4)
    assert _shown(c) == head_lab.lab_pictures(head_lab.lab_state(4), zoom=4)
    c["slider"].value = 1
    assert zoom.value == 1 and zoom.disabled
    c["slider"].value = 64
    assert zoom.max == 64 and not zoom.disabled
    zoom.value = 64
    assert _shown(c) == head_lab.lab_pictures(head_lab.lab_state(64), zoom=64)


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_head_lab_keeps_its_size_while_the_slider_moves():
    """Both pictures keep one size for every h and sit side by side (580 px ≤ JupyterLab's 592 px output at
    1024 × 768 with the file browser open); the summary keeps the height of its longest reading."""
    box = head_lab.lab_widget()
    c = box.controls
    row = box.children[-2]
    assert box.children[-1] is c["numbers"]  # the numbers folded under both pictures, as wide as the output
    assert row.children == c["picture"]
    assert row.layout.flex_flow in (None, "row")  # never wraps: the lab's height stays put
    assert c["summary"].layout.min_height
    assert [picture.layout.margin for picture in c["picture"]] == ["0", "0 0 0 8px"]  # zoomed, then overview
    sizes = set()
    for h in head_lab.HEAD_CHOICES:
        c["slider"].value = h
        sizes.add(tuple(re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', html).groups() for html in _shown(c)[:2]))
    assert len(sizes) == 1, sizes
    (zw, _), (ow, _) = (tuple(map(int, wh)) for wh in sizes.pop())
    assert zw + 8 + ow <= 592


@pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed
def test_every_control_of_the_widget_is_named():
    assert unnamed_controls(head_lab.lab_widget()) == []


# ---------------------------------------------------------------------------------------------
# The prose: numbers read back from the section's sentences (found by structure) and recomputed
# ---------------------------------------------------------------------------------------------


def test_section_5_defines_entropy_and_js_where_it_prints_them(cells):
    """§5 prints 熵（比特） and JS 散度: its prose defines both with their ends, which attention_stats computes."""
    section = section_prose(cells, 5)
    ends = sentence_with(section, "log₂")  # 全压在一个词元上是 0，平均分给 n 个词元是 log₂n ≈ …
    uniform = round(float(row_entropy(np.full((1, N), 1 / N))[0]), 2)
    assert numbers_in(ends)[-4:] == [row_entropy(np.eye(N)[:1])[0], N, N, uniform], ends
    assert numbers_in(sentence_with(section, "**JS")) == [0, 1]  # 完全一样是 0，毫不重叠是 1
    same, apart = np.eye(N)[None, :2].repeat(2, axis=0), np.stack([np.eye(N)[:2], np.eye(N)[2:4]])  # (2, 2, n)
    assert mean_pairwise_js(same) == 0 and mean_pairwise_js(apart) == 1


def test_section_5_try_it_answers(cells):
    """The folded answers to §5's 「试一试」 are lab_state's numbers (the cell prints h = 2 and h = 64)."""
    s2, s8, s64 = (head_lab.lab_state(h) for h in (2, 8, 64))
    answers = prose_after(cells, ".reading)")  # the folded answers after the cell that prints h = 2 and h = 64
    said = sentence_with(answers, "JS")
    js64, js2 = (mean_pairwise_js(s.weights) for s in (s64, s2))
    assert_numbers(said, 64, round(js64, 2), 2, round(js2, 2))
    assert js64 < js2
    said = sentence_with(answers, "3·h·n²")  # … 是 8 头的 8 倍（23,232 对 2,904）
    assert_numbers(said, 8, s64.softmax_ops // s8.softmax_ops, s64.softmax_ops, s8.softmax_ops)
    assert s64.softmax_ops % s8.softmax_ops == 0
    assert s64.d_k == D // 64 and s8.parameters == s64.parameters == costs.parameters(D, H)


# ---------------------------------------------------------------------------------------------
# The section's questions (sections/s05_head_lab.toml), each against the answers kept in its data
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", section_questions("s05_head_lab.toml"), ids=lambda q: q.id)
def test_each_question_judges_its_own_answers(question, monkeypatch):
    assert misjudged(question, monkeypatch) == []
