"""lesson_lib.show.controls: the one named slider, the wiring helper and what a screen reader gets, in-kernel
(no browser). Each section's own widget is tested in its section's file (test_s02_averaging, test_s05_head_lab,
test_s07_ablation).
"""

from __future__ import annotations

import re

import pytest
from helpers import unnamed_controls, walk
from traitlets import TraitError

from lesson_lib.sections import s02_averaging as averaging
from lesson_lib.show import controls

pytestmark = pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed


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
    readers = [x for x in walk(box) if isinstance(x, controls._reader_class())]
    assert len(readers) == 1 and readers[0].layout.display == "none"
    assert "lesson-reader" in box._dom_classes and controls.LIVE in box.controls["summary"]._dom_classes
    inner = controls.linked({"x": controls.slider("x", 1, min=1, max=3)}, lambda s, p: None, reader=False)
    assert "lesson-reader" not in inner._dom_classes
    assert not [x for x in walk(inner) if isinstance(x, controls._reader_class())]


def test_screen_reader_only_text_is_escaped_and_hidden():
    html_text = controls.screen_reader_only("<b>h = 8</b>")
    assert "&lt;b&gt;h = 8&lt;/b&gt;" in html_text and "clip" in html_text and "<b>" not in html_text
