"""Controls every section and the self-test share: ``linked``, the one place that observes controls and lays
them out over what a pure function fills, and ``slider``, the lesson's one accessible slider.

ipywidgets and anywidget are imported inside the functions, so importing lesson_lib stays light.
"""

from __future__ import annotations

__all__ = ["LABEL_BESIDE", "float_options", "linked", "slider", "unnamed_controls"]

_CONTROL = {"min_width": "300px", "width": "380px"}  # a slider track stays draggable on a 1024 px screen
LABEL_BESIDE = {"description_width": "initial"}  # a control's style: its whole Chinese label, beside it


def _picture_html(margin: str = "0"):
    import ipywidgets as w

    # An HTML picture (themed SVG with its alt text, from plotting.picture_html) fills at most the output's width.
    return w.HTML(layout=w.Layout(max_width="100%", margin=margin))


def linked(controls: dict, show, submit=None, picture: str | None = "html", pictures: int = 1):
    """Call ``show(summary, picture)`` now and whenever any control changes; lay the controls out over what it fills.

    ``show`` may adjust other controls (a slider's range); the changes that causes do not redraw again.
    With ``submit`` (a Button) an answer is checked when the learner says so: ``show`` runs now, on a click,
    and when a one-line text box commits its value (Enter, with ``continuous_update=False``), not on every
    change of a checkbox or radio button.
    ``picture``: None (no picture: a question's form) or "html" (an HTML widget for ``plotting.picture_html``:
    themed SVG with its alt text); with ``pictures`` > 1 a tuple of them in one row, 8 px apart, that never
    wraps (each picture is sized so the row fits JupyterLab's 592 px output: the widget keeps its height).
    The returned box's ``controls`` holds the controls, ``summary`` and ``picture``.
    """
    import ipywidgets as w

    summary = w.HTML()
    if picture not in (None, "html"):
        raise ValueError(f"picture 只能是 None 或 \"html\"，收到的是 {picture!r}。")
    images = [] if picture is None else [_picture_html("0" if i == 0 else "0 0 0 8px") for i in range(pictures)]
    picture = images[0] if len(images) == 1 else (tuple(images) or None)
    busy = []

    def redraw(_change=None):
        if busy:
            return
        busy.append(True)
        try:
            show(summary, picture)
        finally:
            busy.clear()

    for control in controls.values():
        if submit is None or (isinstance(control, w.Text) and not control.continuous_update):
            control.observe(redraw, names="value")
        if not control.layout.flex:  # squeezed, a row of buttons wraps its label above it (「头数」 over 「1 个头」)
            control.layout.flex = "0 0 auto"
    if submit is not None:
        submit.on_click(redraw)
    redraw()
    bar = w.HBox(list(controls.values()) + ([submit] if submit is not None else []),
                 layout=w.Layout(flex_flow="row wrap", align_items="center"))  # fmt: skip
    shown = images if len(images) < 2 else [w.HBox(images, layout=w.Layout(align_items="flex-start"))]
    box = w.VBox([bar, summary, *shown])
    box.controls = {**controls, "summary": summary, "picture": picture}
    if submit is not None:
        box.controls["submit"] = submit
    return box


# ---------------------------------------------------------------------------------------------
# The one accessible slider (ipywidgets' sliders leave their handle unnamed, ipywidgets#2650)
# ---------------------------------------------------------------------------------------------
# A native <input type=range> with a <label for> holding the Chinese description: a screen reader says
# 「头数 h，滑块，8」; Tab reaches it, arrow keys / Home / End move it, and the browser fires one change per key
# press or at the end of a drag (ipywidgets' continuous_update=False). Shipped inline (no CDN): anywidget puts the
# ESM in the widget's own state, so JupyterLab and the static page (scripts/build_static.py) run it offline.
_SLIDER_ESM = r"""
function render({ model, el }) {
  // Unique on the page: each slider may run its own copy of this module, so no shared counter.
  const id = `lesson-slider-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  el.classList.add("lesson-slider");
  // Arrow keys belong to the slider, not to JupyterLab's notebook shortcuts (ArrowUp/Down would move between cells).
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  const label = document.createElement("label");
  const input = document.createElement("input");
  const out = document.createElement("output");
  label.htmlFor = out.htmlFor = input.id = id;
  input.type = "range"; input.min = "0"; input.step = "1";
  const text = (i) => (model.get("labels")[i] ?? "");
  const sync = () => {
    label.textContent = model.get("description");
    input.max = String(Math.max(0, model.get("labels").length - 1));
    input.value = String(model.get("index"));
    input.disabled = model.get("disabled");
    out.textContent = text(model.get("index"));
    input.setAttribute("aria-valuetext", out.textContent);
  };
  input.addEventListener("input", () => { out.textContent = text(Number(input.value)); });
  input.addEventListener("change", () => { model.set("index", Number(input.value)); model.save_changes(); });
  // The keys move the slider here: JupyterLab's output area cancels a range input's own arrow-key step (measured
  // in JupyterLab 4.6: keydown reaches the input, its value does not change).
  const steps = { ArrowRight: 1, ArrowUp: 1, PageUp: 1, ArrowLeft: -1, ArrowDown: -1, PageDown: -1 };
  input.addEventListener("keydown", (event) => {
    const last = model.get("labels").length - 1;
    let i = Number(input.value);
    if (event.key === "Home") i = 0;
    else if (event.key === "End") i = last;
    else if (event.key in steps) i = Math.min(last, Math.max(0, i + steps[event.key]));
    else return;
    event.preventDefault();
    event.stopPropagation();
    if (input.disabled || i === Number(input.value)) return;
    input.value = String(i);
    input.dispatchEvent(new Event("input"));
    input.dispatchEvent(new Event("change"));
  });
  for (const name of ["description", "labels", "index", "disabled"]) model.on(`change:${name}`, sync);
  el.append(label, input, out);
  sync();
  return () => {
    for (const name of ["description", "labels", "index", "disabled"]) model.off(`change:${name}`, sync);
  };
}
export default { render };
"""
# Label beside the track like every other control's description; the readout has a fixed width so a longer
# number never moves the track. Theme colours only (accent-color follows the theme's brand colour).
_SLIDER_CSS = """
.lesson-slider { display: flex; align-items: center; gap: 8px; min-height: var(--jp-widgets-inline-height, 28px);
  color: var(--jp-widgets-label-color, var(--jp-content-font-color1)); font-size: var(--jp-widgets-font-size, 13px); }
.lesson-slider label { white-space: nowrap; }
.lesson-slider input[type=range] { flex: 1 1 auto; min-width: 120px; margin: 0; accent-color: var(--jp-brand-color1); }
.lesson-slider input[type=range]:focus-visible { outline: 2px solid var(--jp-brand-color1); outline-offset: 2px; }
.lesson-slider output { min-width: 3.5em; font-variant-numeric: tabular-nums; }
.lesson-slider input[type=range]:disabled + output { opacity: 0.6; }
"""
_SLIDER_CLASS = []  # built on first use: importing anywidget (and traitlets' metaclass work) stays out of import time


def _slider_class():
    if _SLIDER_CLASS:
        return _SLIDER_CLASS[0]
    import anywidget
    import traitlets as t

    from lesson_lib.show.theme import PAGE_CSS

    class Slider(anywidget.AnyWidget):
        """A slider over a list of ``(label, value)`` options (like ipywidgets' SelectionSlider), named for screen
        readers and driven by the keyboard. ``value`` holds the option's value, ``min``/``max`` the ends of an integer
        range (setting them rebuilds the options and keeps the value inside, as IntSlider does)."""

        _esm = _SLIDER_ESM
        _css = _SLIDER_CSS + PAGE_CSS
        description = t.Unicode("").tag(sync=True)
        labels = t.List(t.Unicode()).tag(sync=True)
        index = t.Int(0).tag(sync=True)
        disabled = t.Bool(False).tag(sync=True)
        value = t.Any()
        continuous_update = False  # the page sends one change per key press or at the end of a drag

        def __init__(self, options, value, description, **kwargs):
            self._values = [v for _label, v in options]
            super().__init__(description=description, labels=[str(label) for label, _v in options], **kwargs)
            self.value = value
            self.index = self._values.index(value)

        @t.validate("value")
        def _known(self, proposal):
            if proposal.value not in self._values:
                raise t.TraitError(f"滑块「{self.description}」没有 {proposal.value!r} 这一档；可选：{self._values}")
            return proposal.value

        @t.observe("value")
        def _to_index(self, change):
            self.index = self._values.index(change.new)

        @t.observe("index")
        def _from_index(self, change):
            self.value = self._values[min(max(change.new, 0), len(self._values) - 1)]

        @property
        def options(self):
            return list(zip(self.labels, self._values))

        @options.setter
        def options(self, options):
            values = [v for _label, v in options]
            keep = self.value if self.value in values else values[_nearest(values, self.value)]
            self._values = values
            self.labels = [str(label) for label, _v in options]
            self.value = keep
            self.index = values.index(keep)

        @property
        def min(self):
            return self._values[0]

        @min.setter
        def min(self, low):
            self.options = _int_options(low, self.max)

        @property
        def max(self):
            return self._values[-1]

        @max.setter
        def max(self, high):
            self.options = _int_options(self.min, high)

    _SLIDER_CLASS.append(Slider)
    return Slider


def _nearest(values, target) -> int:
    try:
        return min(range(len(values)), key=lambda i: abs(values[i] - target))
    except TypeError:  # labels that are not numbers: start over at the first
        return 0


def _int_options(low: int, high: int):
    return [(str(v), v) for v in range(int(low), int(high) + 1)]


def slider(description: str, value, *, options=None, min=None, max=None, layout=None):
    """The lesson's slider: ``options=[(label, value), …]`` or an integer range ``min…max``; ``description`` is the
    Chinese name a screen reader says and the label shown beside the track. Use it instead of ipywidgets' sliders."""
    import ipywidgets as w

    if options is None:
        options = _int_options(min, max)
    return _slider_class()(options, value, description, layout=layout or w.Layout(**_CONTROL))


def float_options(low: float, high: float, step: float, places: int = 1):
    """``(label, value)`` options from ``low`` to ``high`` in ``step``s, labels with ``places`` decimals."""
    count = round((high - low) / step)
    return [(f"{low + i * step:.{places}f}", round(low + i * step, 10)) for i in range(count + 1)]


def unnamed_controls(root) -> list[str]:
    """Controls under ``root`` a screen reader could not name: an ipywidgets slider (its handle stays unnamed,
    ipywidgets#2650: use ``slider``), or a text box, number box, checkbox or dropdown without a ``description``
    (ipywidgets ties the description's <label> to those). Buttons are named by their text, choices by their labels."""
    import ipywidgets as w

    found = []
    for widget in _walk(root):
        kind = type(widget).__name__
        named_slider = isinstance(widget, _slider_class())
        if "Slider" in kind and not named_slider:
            found.append(f"{kind}（{widget.description!r}）：改用 widgets.slider")
        if named_slider and not widget.description.strip():
            found.append("widgets.slider 没有 description")
        needs_description = (w.Text, w.Textarea, w.Checkbox, w.Dropdown, w.IntText, w.FloatText,
                             w.BoundedIntText, w.BoundedFloatText, w.Combobox, w.Password)
        if isinstance(widget, needs_description) and not widget.description.strip():
            found.append(f"{kind} 没有 description（placeholder={getattr(widget, 'placeholder', '')!r}）")
        if isinstance(widget, w.Button) and not (widget.description.strip() or widget.tooltip):
            found.append("Button 没有文字")
        if isinstance(widget, (w.ToggleButtons, w.RadioButtons)) and not all(str(o).strip() for o in widget.options):
            found.append(f"{kind} 有空的选项")
    return found


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from _walk(child)
