"""Every widget's Python-side redraw: what one control change costs before the browser gets the new output.

Goal: ≤ 150 ms median per change, for every widget of the lesson. Each change is made the way the
browser makes it -- by setting the real control's value (ipywidgets in-process, no front end), so
traitlets, the observer and the PNG encoding are all included. Changes alternate between two values
so every one really redraws (a cached picture is reported as what a learner gets on a revisit).

Baselines, measured in the same run and interleaved with the widget changes:
  §2 demo      the previous redraw: a matplotlib figure of the same bars per change, saved as PNG;
  §5 lab       the static picture a cell shows (lab_state + heat_map);
  §6 explorer  the explorer's own pure function (explorer_frame), without the widget.
"""

from __future__ import annotations

import os
import time

import numpy as np

os.environ.setdefault("MPLBACKEND", "Agg")

GOAL_MS = 150.0
REPEAT = 9


def _median_ms(samples):
    return float(np.median(samples)) * 1e3


def _toggle(control, a, b):
    """A callable that flips ``control`` between a and b: every call is a real change."""
    state = {"next": b}

    def change():
        control.value = state["next"]
        state["next"] = a if state["next"] == b else b

    return change


def _png(fig) -> bytes:
    """The old redraw: a fresh figure saved trimmed to its contents as PNG (two draws: measure, then render)."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _old_demo_redraw(heads, sharpness):
    """§2 before: the two bar charts as a matplotlib figure per change, saved as PNG."""
    import matplotlib.pyplot as plt

    from lesson_lib.sections import s02_averaging as averaging
    from lesson_lib.show.plotting import use_chinese_font

    use_chinese_font()
    d = averaging.demo(heads, sharpness)
    fig, (left, right) = plt.subplots(2, 1, figsize=(6, 5.8))
    for i, row in enumerate(d.weights):
        left.bar(np.arange(averaging.QUERY) + 0.4 * i, row[:averaging.QUERY], 0.4)
    right.barh(list(d.output), list(d.output.values()))
    return _png(fig)


def _cases():
    """(name, change, baseline name, baseline) for every widget that can be built here."""
    from lesson_lib.sections import s02_averaging as averaging
    from lesson_lib.sections import s05_head_lab as head_lab

    cases = []
    demo = averaging.demo_widget().controls
    cases.append(("§2 demo: 锐度", _toggle(demo["sharpness"], 4.0, 6.0),
                  "matplotlib figure + PNG", lambda: _old_demo_redraw(1, 6.0)))
    cases.append(("§2 demo: 1 ↔ 2 个头", _toggle(demo["heads"], 1, 2),
                  "matplotlib figure + PNG", lambda: _old_demo_redraw(2, 4.0)))
    lab = head_lab.lab_widget().controls
    cases.append(("§5 lab: h 8 ↔ 64", _toggle(lab["slider"], 8, 64), "static heat_map",
                  lambda: _lab_reference(head_lab.lab_state(64))))
    cases.append(("§5 lab: 放大头 1 ↔ 8", _toggle(lab["zoom"], 1, 8), "static heat_map",
                  lambda: _lab_reference(head_lab.lab_state(8))))
    cases.extend(_explorer_cases())
    return cases


def _lab_reference(state):
    """The lab's heads as a static cell shows them."""
    from lesson_lib.show.plotting import heat_map

    return heat_map(state.weights, state.tokens, suptitle=f"h = {state.h}")._repr_html_()


def _explorer_cases():
    """§6: only where the weights package is installed (the explorer needs the real model)."""
    from lesson_lib.models.pretrained import minilm as pretrained
    from lesson_lib.sections.s06_real_heads import views

    if pretrained.PACKAGE.folder() is None:
        return []
    model = pretrained.load()
    box = views.explorer_widget(model, layer=4, head=2, query="its")
    sliders = getattr(box, "controls", None) or {
        c.description: c for c in box.children[1].children if hasattr(c, "max")}
    layer = sliders.get("layer") or sliders.get("层")
    head = sliders.get("head") or sliders.get("头")
    enc = model.attend(pretrained.PAPER_SENTENCES["law"])
    query = enc.tokens.index("its")

    def pure():
        return views.explorer_frame(enc, 5, 3, query)

    return [("§6 explorer: 层 4 ↔ 5", _toggle(layer, 4, 5), "explorer_frame", pure),
            ("§6 explorer: 头 2 ↔ 3", _toggle(head, 2, 3), "explorer_frame", pure)]


def run() -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    start = time.perf_counter()
    cases = _cases()
    built = time.perf_counter() - start
    for _name, change, _base, baseline in cases:  # warm: imports, fonts, caches of the two values
        change(), change(), baseline()
    times = {name: ([], []) for name, *_ in cases}
    for _ in range(REPEAT):  # interleaved: a burst of load from other processes hits every path alike
        for name, change, _base, baseline in cases:
            for fn, out in ((change, times[name][0]), (baseline, times[name][1])):
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
    lines = [f"median of {REPEAT} changes per widget (building every widget: {built:.1f} s)",
             f"{'widget change':<28} {'redraw':>9} {'worst':>7}  {'baseline':>9}  {'base/redraw':>11}  baseline"]
    worst = 0.0
    for name, _change, base_name, _ in cases:
        ours, base = _median_ms(times[name][0]), _median_ms(times[name][1])
        worst = max(worst, ours)
        lines.append(f"{name:<28} {ours:6.1f} ms {max(times[name][0]) * 1e3:4.0f} ms  {base:6.1f} ms  "
                     f"{base / ours:10.1f}×  {base_name}")
    if not any(name.startswith("§6") for name, *_ in cases):
        lines.append("§6 explorer: skipped (the weights package is not installed)")
    lines.append(f"slowest median redraw {worst:.1f} ms: {'meets' if worst <= GOAL_MS else 'MISSES'} "
                 f"the ≤ {GOAL_MS:.0f} ms goal")
    return lines
