"""Controls the sections and the self-test share: ``linked`` wiring, the one accessible ``slider``,
and ``accessible`` (roles, states and keys for a screen reader, by reader.js). ipywidgets and
anywidget are imported when first used."""

import functools
import html
from pathlib import Path

_HERE = Path(__file__).parent
# a control's style: its whole Chinese label, beside it
LABEL_BESIDE = {"description_width": "initial"}
# class of an output that never shrinks back while its controls move (at one width)
KEEP_HEIGHT = "lesson-keep-height"
# class of an output a screen reader reads out when it changes (feedback, a lab's summary)
LIVE = "lesson-live"


def linked(controls: dict, show, submit=None, pictures: int = 1, reader: bool = True):
    """Call ``show(summary, picture)`` now and on each change (with a ``submit`` Button: on its
    click only, which Enter in a text box makes if it is primary), never re-entered; ``picture``:
    None (``pictures=0``), an HTML area, or a tuple of them."""
    import ipywidgets as w

    # a picture's area keeps its tallest height: nothing jumps
    images = [w.HTML(layout=w.Layout(max_width="100%", margin="0 0 0 8px" if i else "0"))
              .add_class(KEEP_HEIGHT) for i in range(pictures)]
    summary = w.HTML().add_class(LIVE)
    if images:
        summary.add_class(KEEP_HEIGHT)
    picture = images[0] if len(images) == 1 else (tuple(images) or None)
    busy = []

    def redraw(_change=None):
        if not busy:
            busy.append(True)
            try:
                show(summary, picture)
            finally:
                busy.clear()

    for control in controls.values():
        if submit is None:  # with one, leaving a text box (its value's commit) checks nothing
            control.observe(redraw, names="value")
        # squeezed, a row of buttons wraps its label above it (「头数」 over 「1 个头」)
        if not control.layout.flex:
            control.layout.flex = "0 0 auto"
    if submit is None:
        redraw()
    else:
        submit.on_click(redraw)
    row = w.Layout(flex_flow="row wrap", align_items="center")
    bar = w.HBox(list(controls.values()), layout=row)
    shown = images
    if len(images) > 1:
        shown = [w.HBox(images, layout=w.Layout(align_items="flex-start"))]
    box = w.VBox([bar, summary, *shown])
    if reader:
        accessible(box)
    box.controls = {**controls, "summary": summary, "picture": picture}
    return box


def _widget_class(name: str, js: str, css: str = ""):
    """An anywidget class running ``js`` (inline: no CDN), styled by ``css`` and the page rules."""
    import anywidget

    from lesson_lib.show.theme import PAGE_CSS

    esm = (_HERE / js).read_text(encoding="utf-8")
    return type(name, (anywidget.AnyWidget,),
                {"__module__": __name__, "_esm": esm, "_css": css + PAGE_CSS})


# built on first use: anywidget and traitlets' metaclass work stay out of import time
@functools.cache
def _reader_class():
    # Invisible: roles, states and keys for the controls of its box
    return _widget_class("Reader", "reader.js")


def screen_reader_only(text: str) -> str:
    """``text`` as HTML a screen reader reads and the page does not show."""
    return ('<span class="lesson-sr-only" style="position:absolute;width:1px;height:1px;'
            'overflow:hidden;clip:rect(0 0 0 0);clip-path:inset(50%);'
            f'white-space:nowrap">{html.escape(text)}</span>')


def accessible(box):
    """``box`` with the reader helper first."""
    import ipywidgets as w

    box.add_class("lesson-reader")
    box.children = (_reader_class()(layout=w.Layout(display="none")), *box.children)
    return box


@functools.cache
def _slider_class():
    import traitlets as t

    class Slider(_widget_class("SliderBase", "slider.js",
                               (_HERE / "slider.css").read_text(encoding="utf-8"))):
        """A slider over ``(label, value)`` options, named for screen readers, keyboard-driven."""

        description = t.Unicode("").tag(sync=True)
        labels = t.List(t.Unicode()).tag(sync=True)
        index = t.Int(0).tag(sync=True)
        disabled = t.Bool(False).tag(sync=True)
        value = t.Any()
        continuous_update = False  # the page sends one change per key press or at the end of a drag

        def __init__(self, options, value, description, **kwargs):
            self._values = [v for _label, v in options]
            super().__init__(description=description, labels=[str(label) for label, _v in options],
                             **kwargs)
            self.value = value

        @t.validate("value")
        def _known(self, proposal):
            if proposal.value not in self._values:
                raise t.TraitError(f"滑块「{self.description}」没有 {proposal.value!r} 这一档；"
                                   f"可选：{self._values}")
            return proposal.value

        @t.observe("value")
        def _to_index(self, change):
            self.index = self._values.index(change.new)

        @t.observe("index")
        def _from_index(self, change):
            self.value = self._values[min(max(change.new, 0), len(self._values) - 1)]

        options = property(lambda self: list(zip(self.labels, self._values)))
        min = property(lambda self: self._values[0])
        max = property(lambda self: self._values[-1])

        # an integer range's new end (§5's zoom): the value stays inside, as in IntSlider
        @max.setter
        def max(self, high):
            self._values = list(range(self.min, int(high) + 1))
            self.labels = [str(v) for v in self._values]
            # an unchanged value keeps its index: the range starts alike
            self.value = min(self.value, self._values[-1])

    return Slider


def slider(description: str, value, *, options=None, min=None, max=None, step=1, layout=None):
    """The lesson's slider (ipywidgets' have no name): ``options=[(label, value), …]`` or
    ``min…max`` in ``step``s (fractional: one decimal); ``description``: a screen reader says it."""
    import ipywidgets as w

    if options is None:
        values = [round(min + i * step, 10) for i in range(round((max - min) / step) + 1)]
        options = [(f"{v:.1f}" if step % 1 else str(v), v) for v in values]
    # 300 px at least: a slider track stays draggable on a 1024 px screen
    layout = layout or w.Layout(min_width="300px", width="380px")
    return _slider_class()(options, value, description, layout=layout)
