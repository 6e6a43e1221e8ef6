"""Controls every section and the self-test share: ``linked``, the one place that observes controls and lays
them out over what a pure function fills, and ``slider``, the lesson's one accessible slider.

ipywidgets and anywidget are imported inside the functions, so importing lesson_lib stays light.
"""

from __future__ import annotations

__all__ = ["LABEL_BESIDE", "LIVE", "accessible", "float_options", "linked", "named", "screen_reader_only", "slider",
           "unnamed_controls"]

_CONTROL = {"min_width": "300px", "width": "380px"}  # a slider track stays draggable on a 1024 px screen
LABEL_BESIDE = {"description_width": "initial"}  # a control's style: its whole Chinese label, beside it
KEEP_HEIGHT = "lesson-keep-height"  # class of an output that never shrinks back while its controls move
LIVE = "lesson-live"  # class of an output a screen reader reads out when it changes (feedback, a lab's summary)


def _picture_html(margin: str = "0"):
    import ipywidgets as w

    # An HTML picture (themed SVG with its alt text, from plotting.picture_html) fills at most the output's width.
    return w.HTML(layout=w.Layout(max_width="100%", margin=margin))


def linked(controls: dict, show, submit=None, picture: str | None = "html", pictures: int = 1, reader: bool = True):
    """Call ``show(summary, picture)`` now and whenever any control changes; lay the controls out over what it fills.

    ``show`` may adjust other controls (a slider's range); the changes that causes do not redraw again.
    With ``submit`` (a Button) an answer is checked when the learner says so: ``show`` runs now, on a click,
    and when a one-line text box commits its value (Enter, with ``continuous_update=False``), not on every
    change of a checkbox or radio button.
    ``picture``: None (no picture: a question's form) or "html" (an HTML widget for ``plotting.picture_html``:
    themed SVG with its alt text); with ``pictures`` > 1 a tuple of them in one row, 8 px apart, that never
    wraps (each picture is sized so the row fits JupyterLab's 592 px output: the widget keeps its height).
    The returned box's ``controls`` holds the controls, ``summary`` (a live region) and ``picture``.
    ``reader=False``: the caller lays the controls out in its own box (and makes that box ``accessible``).
    """
    import ipywidgets as w

    summary = w.HTML()
    summary.add_class(LIVE)  # what a control changed is read out after the change (aria-live, by the helper)
    if picture not in (None, "html"):
        raise ValueError(f"picture 只能是 None 或 \"html\"，收到的是 {picture!r}。")
    images = [] if picture is None else [_picture_html("0" if i == 0 else "0 0 0 8px") for i in range(pictures)]
    for shown in (summary, *images) if images else ():  # a picture's area keeps its tallest height: nothing jumps
        shown.add_class(KEEP_HEIGHT)
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
    if reader:
        accessible(box)
    box.controls = {**controls, "summary": summary, "picture": picture}
    if submit is not None:
        box.controls["submit"] = submit
    return box


# ---------------------------------------------------------------------------------------------
# What ipywidgets leaves out for a screen reader and the keyboard, added to the page by one small helper
# ---------------------------------------------------------------------------------------------
# ipywidgets 8 names a text box only by its description's <label> (empty when there is none, hiding the
# placeholder), gives a radio group no group name, toggle buttons no pressed state, and lets JupyterLab take the
# arrow keys (ArrowDown on a radio selects the next cell). ``accessible(box)`` appends an invisible anywidget whose
# script fixes that in the box's DOM (again whenever ipywidgets redraws part of it): names from ``named``,
# role=radiogroup named by the description, aria-pressed on toggle buttons, aria-live="polite" on outputs marked
# ``LIVE``, a ``KEEP_HEIGHT`` output's tallest height as its min-height, and keys kept inside the control
# (``data-lm-suppress-shortcuts``: Lumino stops looking for a shortcut there). On the static page (no kernel:
# scripts/build_static.py's note is on the page) every control is disabled.
_READER_ESM = r"""
const KEYS = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown"]);
const STATIC_TITLE = "静态页面：在 JupyterLab 里运行笔记本后才能操作";
function fix(root, names) {
  for (const [cls, name] of names)
    for (const el of root.querySelectorAll(`.${cls}`))
      for (const c of el.matches("input, textarea, select") ? [el] : el.querySelectorAll("input, textarea, select"))
        if (c.getAttribute("aria-label") !== name) c.setAttribute("aria-label", name);
  for (const group of root.querySelectorAll(".widget-radio-box")) {
    group.setAttribute("role", "radiogroup");
    const label = group.parentElement && group.parentElement.querySelector(":scope > .widget-label");
    const name = label ? label.textContent.trim() : "";
    if (name && group.getAttribute("aria-label") !== name) group.setAttribute("aria-label", name);
  }
  for (const group of root.querySelectorAll(".widget-toggle-buttons")) {
    const label = group.querySelector(":scope > .widget-label");
    const first = group.querySelector(".widget-toggle-button"), buttons = first && first.parentElement;
    if (buttons && label && label.textContent.trim()) {
      buttons.setAttribute("role", "group");
      buttons.setAttribute("aria-label", label.textContent.trim());
    }
  }
  for (const b of root.querySelectorAll("button.widget-toggle-button")) {
    const pressed = String(b.classList.contains("mod-active"));
    if (b.getAttribute("aria-pressed") !== pressed) b.setAttribute("aria-pressed", pressed);
  }
  for (const el of root.querySelectorAll("input[type=radio], input[type=checkbox], select, .widget-radio-box"))
    el.setAttribute("data-lm-suppress-shortcuts", "true");
  for (const el of root.querySelectorAll(".lesson-live")) {
    if (el.getAttribute("aria-live") !== "polite") el.setAttribute("aria-live", "polite");
    el.setAttribute("aria-atomic", "true");
  }
  for (const el of root.querySelectorAll(".lesson-keep-height")) {  // what a control redraws never shrinks back
    if (el.dataset.lessonKept) continue;
    el.dataset.lessonKept = "0";
    new ResizeObserver(() => {
      // at a new width (a resized window, the file browser opened) the tallest height seen is measured afresh:
      // a height kept from a narrower moment would leave a blank gap under the text for good
      const w = Math.round(el.getBoundingClientRect().width);
      if (!w) return;
      if (String(w) !== el.dataset.lessonKeptWidth) {
        el.dataset.lessonKeptWidth = String(w);
        el.dataset.lessonKept = "0";
        el.style.minHeight = "";
      }
      const h = Math.ceil(el.getBoundingClientRect().height);
      if (h > Number(el.dataset.lessonKept)) { el.dataset.lessonKept = String(h); el.style.minHeight = `${h}px`; }
    }).observe(el);
  }
  if (document.querySelector(".lesson-static-note"))
    for (const c of root.querySelectorAll("input, textarea, select, button")) {
      if (!c.disabled) c.disabled = true;
      c.title = STATIC_TITLE;
    }
}
function render({ model, el }) {
  let root = null, tries = 0, observer = null, queued = false;
  const keep = (event) => {  // arrow keys act inside a control, never on the notebook's cells
    if (KEYS.has(event.key) && event.target.closest("input, textarea, select, [role=radiogroup]"))
      event.stopPropagation();
  };
  const apply = () => { queued = false; if (root) fix(root, model.get("names")); };
  const attach = () => {  // the helper's view is put into its box after it renders
    root = el.closest(".lesson-reader");
    if (!root) { if (tries++ < 400) setTimeout(attach, 25); return; }
    root.addEventListener("keydown", keep);
    apply();
    observer = new MutationObserver(() => { if (!queued) { queued = true; queueMicrotask(apply); } });
    observer.observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ["class"] });
  };
  attach();
  model.on("change:names", apply);
  return () => {
    model.off("change:names", apply);
    if (observer) observer.disconnect();
    if (root) root.removeEventListener("keydown", keep);
  };
}
export default { render };
"""
_READER_CLASS = []


def _reader_class():
    if _READER_CLASS:
        return _READER_CLASS[0]
    import anywidget
    import traitlets as t

    from lesson_lib.show.theme import PAGE_CSS

    class Reader(anywidget.AnyWidget):
        """Invisible: its script gives the controls of the box it sits in names, roles and states (see above)."""

        _esm = _READER_ESM
        _css = PAGE_CSS
        names = t.List(t.List(t.Unicode())).tag(sync=True)  # [[css class, accessible name], ...]

    _READER_CLASS.append(Reader)
    return Reader


def named(control, name: str):
    """Give ``control`` an accessible name without a visible label (a text box under its own heading). Returns it."""
    if not str(name).strip():
        raise ValueError("控件的名字不能为空：读屏软件要靠它说出这是哪个控件。")
    control._lesson_name = str(name)
    return control


def screen_reader_only(text: str) -> str:
    """``text`` as HTML a screen reader reads and the page does not show (e.g. a live summary's picture description)."""
    import html

    return ('<span class="lesson-sr-only" style="position:absolute;width:1px;height:1px;overflow:hidden;'
            f'clip:rect(0 0 0 0);clip-path:inset(50%);white-space:nowrap">{html.escape(text)}</span>')


def accessible(box):
    """Append the reader helper to ``box`` (a VBox/HBox shown as one widget) and mark the box; returns ``box``."""
    import ipywidgets as w

    names = []
    for widget in _walk(box):
        name = getattr(widget, "_lesson_name", None)
        if name:
            cls = f"lesson-name-{len(names)}"
            widget.add_class(cls)
            names.append([cls, name])
    box.add_class("lesson-reader")
    # first: the box's own children keep their places (a caller may append more)
    box.children = (_reader_class()(names=names, layout=w.Layout(display="none")), *box.children)
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
    (ipywidgets ties the description's <label> to those) or a ``named`` name. Buttons are named by their text, choices
    by their labels."""
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
        if isinstance(widget, needs_description) and not (widget.description.strip()
                                                          or getattr(widget, "_lesson_name", "")):
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
