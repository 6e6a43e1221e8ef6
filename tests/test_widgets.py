"""The sections' widgets (s02_averaging, s05_head_lab, s07_ablation.report): in-kernel ipywidgets (no
browser). Controls are set from Python and what the widget shows is compared with the pure lesson_lib
function it wires to.
"""

from __future__ import annotations

import html
import math
import re

import pytest
from helpers import unnamed_controls
from traitlets import TraitError

from lesson_lib.sections import s02_averaging as averaging
from lesson_lib.sections import s05_head_lab as lab
from lesson_lib.sections.s07_ablation import report
from lesson_lib.show import controls

pytestmark = pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed


# ---------------------------------------------------------------------------------------------
# §5 head lab
# ---------------------------------------------------------------------------------------------


def test_head_lab_slider_offers_only_divisors():
    c = lab.lab_widget().controls
    slider = c["slider"]
    assert [v for _, v in slider.options] == lab.HEAD_CHOICES == [1, 2, 4, 8, 16, 32, 64]
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


def test_head_lab_initial_shows_the_pure_functions_output():
    c = lab.lab_widget().controls
    state = lab.lab_state(8)
    assert c["summary"].value.startswith(lab.summary_html(state))
    assert html.escape(lab.overview_alt(state, 1)) in c["summary"].value  # what the pictures show, read out too
    assert "d_k = 64" in c["summary"].value
    assert _shown(c) == lab.lab_pictures(state)
    assert all('role="img" aria-label="' in html for html in _shown(c)[:2])  # named pictures, not bare PNGs


def test_head_lab_slider_redraws():
    c = lab.lab_widget().controls
    before = _shown(c)
    c["slider"].value = 4
    assert "d_k = 128" in c["summary"].value
    assert "d_k = 64" not in c["summary"].value
    assert _shown(c) != before
    assert _shown(c) == lab.lab_pictures(lab.lab_state(4))
    c["slider"].value = 64
    assert "d_k = 8" in c["summary"].value and f"{3 * 64 * 121:,}" in c["summary"].value


def test_head_lab_zoom_picks_a_head_and_follows_the_head_count():
    c = lab.lab_widget().controls
    zoom = c["zoom"]
    assert (zoom.min, zoom.max, zoom.value) == (1, 8, 1)  # counted from 1, like the picture's 头 1 … 头 8
    zoom.value = 6
    assert _shown(c) == lab.lab_pictures(lab.lab_state(8), zoom=6)
    c["slider"].value = 4  # head 6 is gone: the last head is enlarged instead
    assert (zoom.max, zoom.value) == (4, 4)
    assert _shown(c) == lab.lab_pictures(lab.lab_state(4), zoom=4)
    c["slider"].value = 1
    assert zoom.value == 1 and zoom.disabled
    c["slider"].value = 64
    assert zoom.max == 64 and not zoom.disabled
    zoom.value = 64
    assert _shown(c) == lab.lab_pictures(lab.lab_state(64), zoom=64)


def test_head_lab_keeps_its_size_while_the_slider_moves():
    """Both pictures keep one size for every h and sit side by side (580 px ≤ JupyterLab's 592 px output at
    1024 × 768 with the file browser open); the summary keeps the height of its longest reading."""
    import re

    box = lab.lab_widget()
    c = box.controls
    row = box.children[-2]
    assert box.children[-1] is c["numbers"]  # the numbers folded under both pictures, as wide as the output
    assert row.children == c["picture"]
    assert row.layout.flex_flow in (None, "row")  # never wraps: the lab's height stays put
    assert c["summary"].layout.min_height
    assert [picture.layout.margin for picture in c["picture"]] == ["0", "0 0 0 8px"]  # zoomed, then overview
    sizes = set()
    for h in lab.HEAD_CHOICES:
        c["slider"].value = h
        sizes.add(tuple(re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', html).groups() for html in _shown(c)[:2]))
    assert len(sizes) == 1, sizes
    (zw, _), (ow, _) = (tuple(map(int, wh)) for wh in sizes.pop())
    assert zw + 8 + ow <= 592


# ---------------------------------------------------------------------------------------------
# §2 averaging demo
# ---------------------------------------------------------------------------------------------


def _percent(x):
    return f"{x:.0%}"


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


def test_html_pictures_fit_the_output():
    """The demo's bars are HTML that shrinks with the output, never wider than it."""
    for box, kind in ((averaging.demo_widget(), "<table"),):
        picture = box.controls["picture"]
        assert picture.layout.max_width == "100%"
        assert "max-width:100%" in picture.value and kind in picture.value


def test_progress_bar_follows_the_callback():
    label = "训练中"
    bar = report.progress_bar(label)
    assert bar.description == label and bar.value == 0
    bar.update(3, 10)
    assert (bar.value, bar.max) == (3, 10) and bar.bar_style == "info"
    bar.update(10, 10)
    assert bar.value == 10 and bar.description != label and bar.bar_style == "success"
    bar.update(0, 5)  # reused for a second run: no longer done
    assert (bar.value, bar.max, bar.description, bar.bar_style) == (0, 5, label, "info")


def test_progress_bar_zero_of_zero_is_not_done():
    bar = report.progress_bar()
    label = bar.description
    bar.update(0, 0)
    assert bar.description == label and bar.bar_style == "info"


def test_summaries_are_the_pure_functions_output():

    a = averaging.demo_widget().controls
    a["heads"].value, a["sharpness"].value = 2, 3.0
    assert a["summary"].value == averaging.summary_html(averaging.demo(2, 3.0))


# ---------------------------------------------------------------------------------------------
# One accessible control mechanism: controls.slider, and a description on every other control
# ---------------------------------------------------------------------------------------------


def test_slider_keeps_value_index_and_range_in_step():
    label = "层"
    s = controls.slider(label, 5, min=1, max=6)
    assert (s.min, s.max, s.value, s.index, s.labels) == (1, 6, 5, 4, ["1", "2", "3", "4", "5", "6"])
    s.index = 0  # what the browser sends
    assert s.value == 1
    s.value = 6
    assert s.index == 5
    s.max = 3  # like IntSlider: the value moves inside the new range
    assert (s.value, s.index, s.labels) == (3, 2, ["1", "2", "3"])
    with pytest.raises(TraitError, match=label):  # names the slider
        s.value = 7
    f = controls.slider("锐度", 4.0, min=0.0, max=10.0, step=0.5)
    assert f.labels[:3] == ["0.0", "0.5", "1.0"] and len(f.labels) == 21 and f.labels[f.index] == "4.0"


def test_slider_is_a_named_native_range_input_shipped_inline():
    """What the browser runs: a <label for> the <input type=range> (its accessible name), the readout tied to it,
    one change per key press; no URL to fetch (the ESM is the widget's own state)."""
    label = "头数 h"
    s = controls.slider(label, 8, options=[("1", 1), ("8", 8)])
    esm = s._esm
    for piece in ('input.type = "range"', "label.htmlFor = out.htmlFor = input.id", 'addEventListener("change"',
                  'addEventListener("keydown"', '"Home"', '"End"', "ArrowLeft",
                  "aria-valuetext", 'model.get("description")'):
        assert piece in esm, piece
    assert "http" not in esm and "import " not in esm
    state = s.get_state()
    assert state["description"] == label and state["labels"] == ["1", "8"] and state["index"] == 1


def test_every_control_of_the_section_widgets_is_named():
    boxes = [lab.lab_widget(), averaging.demo_widget()]
    for box in boxes:
        assert unnamed_controls(box) == []


def test_unnamed_controls_finds_what_a_screen_reader_could_not_name():
    import ipywidgets as w

    box = w.VBox([w.IntSlider(description="层"), w.Text(placeholder="答案"), w.Textarea(description="回答"),
                  w.Button(description="提交"), w.Button(), controls.slider("", 1, min=1, max=2)])
    found = unnamed_controls(box)
    assert len(found) == 4, found
    assert "IntSlider" in found[0] and re.search(r"^Text\b.*\bdescription\b", found[1]) and "Button" in found[2]


def test_the_sliders_stylesheet_carries_the_page_rules():
    """Rules no inline style can express reach the page with the first slider: a placeholder that does not look like
    typed text, toggle-button labels beside their buttons, formulas that scroll instead of being cut."""
    from lesson_lib.show.theme import PAGE_CSS

    css = controls.slider("层", 1, min=1, max=2)._css
    assert PAGE_CSS in css
    for rule in ("::placeholder", "font-style: italic", ".widget-toggle-buttons", "flex-direction: row",
                 'mjx-container[display="true"]', "overflow-x: auto"):
        assert rule in PAGE_CSS, rule


# ---------------------------------------------------------------------------------------------
# What a screen reader gets: names, live regions, one reader helper per shown box
# ---------------------------------------------------------------------------------------------
def test_linked_box_carries_the_reader_helper_and_a_live_summary():
    box = averaging.demo_widget()
    readers = [x for x in controls.walk(box) if isinstance(x, controls._reader_class())]
    assert len(readers) == 1 and readers[0].layout.display == "none"
    assert "lesson-reader" in box._dom_classes and controls.LIVE in box.controls["summary"]._dom_classes
    inner = controls.linked({"x": controls.slider("x", 1, min=1, max=3)}, lambda s, p: None, reader=False)
    assert "lesson-reader" not in inner._dom_classes
    assert not [x for x in controls.walk(inner) if isinstance(x, controls._reader_class())]


def test_named_gives_a_text_box_a_name_the_helper_sets():
    import ipywidgets as w

    bare = w.Textarea(placeholder="写在这里")
    assert unnamed_controls(w.VBox([bare]))  # a placeholder is not a name
    label = "你的回答"
    box = controls.accessible(w.VBox([controls.named(w.Textarea(placeholder="写在这里"), label)]))
    text = box.children[1]
    assert unnamed_controls(box) == []
    (cls, name), = box.children[0].names
    assert name == label and cls in text._dom_classes
    with pytest.raises(ValueError):
        controls.named(w.Text(), " ")


def test_screen_reader_only_text_is_escaped_and_hidden():
    html_text = controls.screen_reader_only("<b>h = 8</b>")
    assert "&lt;b&gt;h = 8&lt;/b&gt;" in html_text and "clip" in html_text and "<b>" not in html_text
