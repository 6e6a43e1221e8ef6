"""§2 and §5's widgets (controls linked to pure section functions; the top widget keeps them in ``.controls``), and
§7's progress bar."""

from __future__ import annotations

from lesson_lib.show.controls import LABEL_BESIDE, linked, screen_reader_only, slider


def head_lab():
    """Section 5: a slider over the divisors of d_model and a head to enlarge; shows d_k, the maps and the costs."""
    import ipywidgets as w

    from lesson_lib.runtime.blas import one_blas_thread
    from lesson_lib.sections import s05_head_lab as lab

    heads = slider("头数 h", lab.BASE_HEADS, options=[(str(h), h) for h in lab.HEAD_CHOICES])
    zoom = slider("放大第几个头", 1, min=1, max=lab.BASE_HEADS)

    def show(summary, pictures):
        zoom.max = heads.value  # fewer heads: the enlarged head moves down to the last one
        zoom.disabled = heads.value == 1
        with one_blas_thread():  # tiny matmuls: a second BLAS thread only adds waiting on a busy laptop
            state = lab.lab_state(heads.value)
        # One live summary: h, d_k and what the pictures now show (their alt text, for a screen reader only)
        summary.value = lab.summary_html(state) + screen_reader_only(lab.overview_alt(state, zoom.value))
        for picture, html in zip((*pictures, numbers), lab.lab_pictures(state, zoom=zoom.value)):
            picture.value = html  # an unchanged picture is not sent again (traitlets: no change, no message)

    # The two pictures side by side in 580 px, lab.LAB_HEIGHT tall for every h, the numbers folded under both; the
    # summary keeps its longest reading's height, so nothing jumps while the slider moves.
    numbers = w.HTML(layout=w.Layout(margin="0"))
    box = linked({"slider": heads, "zoom": zoom}, show, picture="html", pictures=2)
    box.controls["summary"].layout.min_height = "250px"  # the longest reading (h = 64) in a 592 px output
    box.children = (*box.children, numbers)
    box.controls["numbers"] = numbers
    return box


def averaging_demo():
    """Section 2: 1 vs 2 heads and the query's sharpness; shows 她's weights and what survives."""
    import ipywidgets as w

    from lesson_lib.sections import s02_averaging as averaging

    heads = w.ToggleButtons(options=[("1 个头", 1), ("2 个头", 2)], value=1, description="头数",
                            style={**LABEL_BESIDE, "button_width": "80px"})
    sharp = slider("锐度", 4.0, min=0.0, max=10.0, step=0.5)  # demo() takes 0 … 50

    def show(summary, picture):
        d = averaging.demo(heads.value, sharp.value)
        summary.value = averaging.summary_html(d)
        picture.value = averaging.demo_html(d)

    return linked({"heads": heads, "sharpness": sharp}, show, picture="html")


def progress_bar(description: str = "训练中"):
    """A progress bar and the ``progress(done, total)`` callback the sweep moves it by."""
    import ipywidgets as w

    bar = w.IntProgress(value=0, min=0, max=1, description=description, bar_style="info")

    def update(done, total):
        bar.max, bar.value = max(1, total), done
        finished = total > 0 and done == total  # 0 of 0 is "nothing yet", not 完成
        bar.description, bar.bar_style = ("完成", "success") if finished else (description, "info")

    bar.update = update
    return bar
