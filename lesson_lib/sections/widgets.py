"""Widgets: each one only links controls to pure lesson_lib functions and shows their results.

ipywidgets is imported inside the functions, so importing lesson_lib stays light. Every builder
returns the top-level widget; its controls are reachable as attributes (``.controls``) so tests
can set values and read what is shown.
"""

from __future__ import annotations

from lesson_lib.kernel.validation import check_choice, check_int, check_number

__all__ = ["averaging_demo", "head_lab", "progress_bar", "shape_stepper"]


_CONTROL = {"min_width": "300px", "width": "380px"}  # a slider track stays draggable on a 1024 px screen
_STYLE = {"description_width": "initial"}


def _image(png: bytes):
    import ipywidgets as w

    # align_self: not stretched to the output's width (a small PNG would blow up blurry); max_width: shrinks to fit
    # (margin 0: the default widget margin would push a full-width picture 4 px past the output's edge).
    return w.Image(value=png, format="png",
                   layout=w.Layout(max_width="100%", height="auto", align_self="flex-start", margin="0"))


def _picture_html():
    import ipywidgets as w

    # An HTML picture (themed SVG with its alt text, from plotting.picture_html) fills at most the output's width.
    return w.HTML(layout=w.Layout(max_width="100%", margin="0"))


def linked(controls: dict, show, submit=None, picture: str = "png"):
    """Call ``show()`` now and whenever any control changes; lay the controls out over what show fills.

    ``show`` may adjust other controls (a slider's range); the changes that causes do not redraw again.
    With ``submit`` (a Button) an answer is checked when the learner says so: ``show`` runs now, on a click,
    and when a one-line text box commits its value (Enter, with ``continuous_update=False``), not on every
    change of a checkbox or radio button.
    ``picture``: "png" (an Image) or "html" (an HTML widget for ``plotting.picture_html``).
    """
    import ipywidgets as w

    summary, picture = w.HTML(), (_picture_html() if picture == "html" else _image(b""))
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
    if submit is not None:
        submit.on_click(redraw)
    redraw()
    bar = w.HBox(list(controls.values()) + ([submit] if submit is not None else []),
                 layout=w.Layout(flex_flow="row wrap", align_items="center"))  # fmt: skip
    box = w.VBox([bar, summary, picture])
    box.controls = {**controls, "summary": summary, "picture": picture}
    if submit is not None:
        box.controls["submit"] = submit
    return box


def head_lab(seed: int = 0, initial: int = 8):
    """Section 5: a slider over the divisors of d_model and a head to enlarge; shows d_k, the maps and the costs."""
    import ipywidgets as w

    from lesson_lib.runtime.blas import one_blas_thread

    from . import head_lab as lab

    seed = check_int(seed, "seed", minimum=0)
    initial = check_choice(initial, "initial（起始头数）", lab.head_choices(),
                           why=f"（滑块只提供能整除 d_model = {lab.BASE_D_MODEL} 的头数）")
    slider = w.SelectionSlider(options=[(str(h), h) for h in lab.head_choices()], value=initial,
                               description="头数 h", continuous_update=False, style=_STYLE,
                               layout=w.Layout(**_CONTROL))
    zoom = w.IntSlider(value=1, min=1, max=initial, description="放大第几个头", continuous_update=False,
                       style=_STYLE, layout=w.Layout(**_CONTROL))

    def show(summary, picture):
        zoom.max = slider.value  # fewer heads: the enlarged head moves down to the last one
        zoom.disabled = slider.value == 1
        with one_blas_thread():  # tiny matmuls: a second BLAS thread only adds waiting on a busy laptop
            state = lab.lab_state(slider.value, seed=seed)
        summary.value = lab.summary_html(state)
        for picture, html in zip(pictures.children, lab.lab_pictures(state, zoom=zoom.value)):
            if picture.value != html:
                picture.value = html

    # Zoomed head and overview side by side in 580 px (JupyterLab's output is 592 px at 1024 × 768 with the file
    # browser open), both lab.LAB_HEIGHT tall for every h. The summary keeps the height of its longest reading,
    # so nothing below jumps while the slider moves (only opening the folded table grows the lab).
    pictures = w.HBox([_lab_picture("0"), _lab_picture("0 0 0 8px")], layout=w.Layout(align_items="flex-start"))
    box = linked({"slider": slider, "zoom": zoom}, lambda summary, _picture: show(summary, None), picture="html")
    box.children[1].layout.min_height = _SUMMARY_MIN_HEIGHT
    box.children = (*box.children[:2], pictures)
    box.controls["picture"] = pictures
    box.controls["zoomed"], box.controls["overview"] = pictures.children
    return box


_SUMMARY_MIN_HEIGHT = "250px"  # the lab's summary at its longest reading (h = 64) in a 592 px output


def _lab_picture(margin: str):
    import ipywidgets as w

    return w.HTML(layout=w.Layout(margin=margin, flex="0 0 auto"))


def averaging_demo(initial_heads: int = 1, initial_sharpness: float = 4.0):
    """Section 2: 1 vs 2 heads and the query's sharpness; shows 她's weights and what survives."""
    import ipywidgets as w

    from . import averaging

    initial_heads = check_choice(initial_heads, "initial_heads（起始头数）", [1, 2])
    initial_sharpness = check_number(initial_sharpness, "initial_sharpness（起始锐度）", *_SHARPNESS_RANGE)
    heads = w.ToggleButtons(options=[("1 个头", 1), ("2 个头", 2)], value=initial_heads, description="头数",
                            style={**_STYLE, "button_width": "80px"})
    sharp = w.FloatSlider(value=initial_sharpness, min=_SHARPNESS_RANGE[0], max=_SHARPNESS_RANGE[1], step=0.5,
                          description="锐度", continuous_update=False, style=_STYLE, layout=w.Layout(**_CONTROL))

    def show(summary, picture):
        d = averaging.demo(heads.value, sharp.value)
        summary.value = averaging.summary_html(d)
        picture.value = averaging.demo_html(d)

    return linked({"heads": heads, "sharpness": sharp}, show, picture="html")


_SHARPNESS_RANGE = (0.0, 10.0)  # the slider's range: a start outside it would be clamped without a word
_STEPPER_MAX = 16  # the stepper draws one panel per head or per token: more stop being readable


def shape_stepper(n: int = 6, d_model: int = 512, h: int = 8):
    """Section 3: step through the shapes (counted from 1, like the caption); a checkbox forgets the transpose."""
    import ipywidgets as w

    from lesson_lib.kernel.attention import head_width

    from . import heads as heads_mod

    n = check_int(n, "n（词数）", minimum=1, maximum=_STEPPER_MAX)
    head_width(d_model, h)  # d_model and h: positive integers, h divides d_model
    h = check_int(h, "h（头数）", minimum=1, maximum=_STEPPER_MAX)

    forget = w.Checkbox(value=False, description="忘了 transpose", indent=False)
    step = w.IntSlider(value=1, min=1, max=len(heads_mod.shape_steps(n, d_model, h)), description="第几步",
                       continuous_update=False, style=_STYLE, layout=w.Layout(**_CONTROL))

    def show(summary, picture):
        steps = heads_mod.shape_steps(n, d_model, h, forget_transpose=forget.value)
        step.max = len(steps)  # the forgotten path has fewer steps; this may move step.value down
        summary.value = heads_mod.step_summary_html(steps, step.value - 1)
        picture.value = heads_mod.step_html(n, d_model, h, forget.value, step.value - 1)

    return linked({"step": step, "forget": forget}, show, picture="html")


def progress_bar(description: str = "训练中"):
    """A progress bar and the ``progress(done, total)`` callback that moves it (for long cells)."""
    import ipywidgets as w

    bar = w.IntProgress(value=0, min=0, max=1, description=description, bar_style="info")

    def update(done, total):
        total = check_int(total, "total", minimum=0)
        done = check_int(done, "done", minimum=0, maximum=total)
        bar.max, bar.value = max(1, total), done
        finished = total > 0 and done == total  # 0 of 0 is "nothing yet", not 完成
        bar.description, bar.bar_style = ("完成", "success") if finished else (description, "info")

    bar.update = update
    return bar
