"""Widgets: each one only links controls to pure lesson_lib functions and shows their results.

ipywidgets is imported inside the functions, so importing lesson_lib stays light. Every builder
returns the top-level widget; its controls are reachable as attributes (``.controls``) so tests
can set values and read what is shown.
"""

from __future__ import annotations

from .validation import check_choice, check_int, check_number

__all__ = ["averaging_demo", "head_lab", "progress_bar", "shape_stepper"]


def _image(png: bytes):
    import ipywidgets as w

    return w.Image(value=png, format="png", layout=w.Layout(max_width="100%", height="auto"))


def _linked(controls: dict, show):
    """Call ``show()`` now and whenever any control changes; lay the controls out over what show fills."""
    import ipywidgets as w

    summary, picture = w.HTML(), _image(b"")
    for control in controls.values():
        control.observe(lambda _change: show(summary, picture), names="value")
    show(summary, picture)
    box = w.VBox([w.HBox(list(controls.values())), summary, picture])
    box.controls = {**controls, "summary": summary, "picture": picture}
    return box


def head_lab(seed: int = 0, initial: int = 8):
    """Section 5: a slider over the divisors of d_model; shows d_k, the maps and the costs."""
    import ipywidgets as w

    from . import head_lab as lab
    from .blas import one_blas_thread

    seed = check_int(seed, "seed", minimum=0)
    initial = check_choice(initial, "initial（起始头数）", lab.head_choices(),
                           why=f"（滑块只提供能整除 d_model = {lab.BASE_D_MODEL} 的头数）")
    slider = w.SelectionSlider(options=[(str(h), h) for h in lab.head_choices()], value=initial,
                               description="头数 h", continuous_update=False,
                               style={"description_width": "initial"}, layout=w.Layout(width="420px"))

    def show(summary, picture):
        with one_blas_thread():  # tiny matmuls: a second BLAS thread only adds waiting on a busy laptop
            state = lab.lab_state(slider.value, seed=seed)
        summary.value, picture.value = lab.summary_html(state), lab.render_png(state)

    return _linked({"slider": slider}, show)


def averaging_demo(initial_heads: int = 1, initial_sharpness: float = 4.0):
    """Section 2: 1 vs 2 heads and the query's sharpness; shows 她's weights and what survives."""
    import ipywidgets as w

    from . import averaging
    from .plotting import figure_png

    initial_heads = check_choice(initial_heads, "initial_heads（起始头数）", [1, 2])
    initial_sharpness = check_number(initial_sharpness, "initial_sharpness（起始锐度）", *_SHARPNESS_RANGE)
    heads = w.ToggleButtons(options=[("1 个头", 1), ("2 个头", 2)], value=initial_heads, description="头数")
    sharp = w.FloatSlider(value=initial_sharpness, min=_SHARPNESS_RANGE[0], max=_SHARPNESS_RANGE[1], step=0.5,
                          description="锐度", continuous_update=False)

    def show(summary, picture):
        d = averaging.demo(heads.value, sharp.value)
        summary.value, picture.value = averaging.summary_html(d), figure_png(averaging.plot_demo(d))

    return _linked({"heads": heads, "sharpness": sharp}, show)


_SHARPNESS_RANGE = (0.0, 10.0)  # the slider's range: a start outside it would be clamped without a word
_STEPPER_MAX = 16  # the stepper draws one panel per head or per token: more stop being readable


def shape_stepper(n: int = 6, d_model: int = 512, h: int = 8):
    """Section 3: step through the shapes; a checkbox forgets the transpose."""
    import ipywidgets as w

    from . import heads as heads_mod
    from .attention import head_width
    from .plotting import figure_png

    n = check_int(n, "n（词数）", minimum=1, maximum=_STEPPER_MAX)
    head_width(d_model, h)  # d_model and h: positive integers, h divides d_model
    h = check_int(h, "h（头数）", minimum=1, maximum=_STEPPER_MAX)

    forget = w.Checkbox(value=False, description="忘了 transpose", indent=False)
    step = w.IntSlider(value=0, min=0, max=len(heads_mod.shape_steps(n, d_model, h)) - 1, description="步骤",
                       continuous_update=False)

    def show(summary, picture):
        steps = heads_mod.shape_steps(n, d_model, h, forget_transpose=forget.value)
        step.max = len(steps) - 1  # the forgotten path has fewer steps; this may move step.value down
        summary.value = heads_mod.step_summary_html(steps, step.value)
        picture.value = figure_png(heads_mod.plot_step(steps[step.value]))

    return _linked({"step": step, "forget": forget}, show)


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
