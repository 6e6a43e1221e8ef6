"""§2: why one head must average. 她 needs two answers at once, who it is (指代 → 小红) and the
subject it lines up with (语法角色 → 小明); one head returns one weighted average of the values'
features, two keep one answer each."""

import html
from dataclasses import dataclass

import numpy as np

from lesson_lib.attention import scaled_dot_product_attention
from lesson_lib.checks import LessonInputTypeError, check_choice, check_number
from lesson_lib.show.controls import LABEL_BESIDE, linked, slider
from lesson_lib.show.plotting import largest
from lesson_lib.show.tables import text_table
from lesson_lib.show.theme import box

# The sentence up to the pronoun: attention only looks back, so these are all 她 can see.
TOKENS = ["小明", "把", "苹果", "递给了", "小红", "，", "因为", "她"]
QUERY = TOKENS.index("她")
REFERENT = TOKENS.index("小红")
SUBJECT = TOKENS.index("小明")

# Value features: identity answers "who is it", role "what role does it play".
IDENTITY_FEATURES = ["女性", "男性", "人物", "物品"]
ROLE_FEATURES = ["主语", "宾语"]
FEATURES = IDENTITY_FEATURES + ROLE_FEATURES

# word -> 1 for each feature it carries, in FEATURES order; other words carry none
_VALUE_ROWS = {
    "小明": [0, 1, 1, 0, 1, 0],
    "苹果": [0, 0, 0, 1, 0, 1],
    "小红": [1, 0, 1, 0, 0, 0],  # the receiver: neither the subject nor the thing handed over
}
VALUES = np.array([_VALUE_ROWS.get(t, [0] * len(FEATURES)) for t in TOKENS], dtype=float)
VALUES.flags.writeable = False

# The lesson's illustration of one head: 小红 40 %, 小明 30 %, 苹果 30 %.
LESSON_WEIGHTS = {"小红": 0.4, "小明": 0.3, "苹果": 0.3}

# Keys and queries, one dimension per question: [is a female person?, is a clause subject?]
_KEY_ROWS = {"小明": [0.0, 1.0], "苹果": [0.0, 0.0], "小红": [1.0, 0.0], "她": [1.0, 1.0]}
_QUESTION = {"指代": np.array([1.0, 0.0]), "语法角色": np.array([0.0, 1.0])}


def blend(weights_by_word: dict[str, float]) -> dict[str, float]:
    """The output of one head with the given weights: Σ_j w_j v_j, per named feature."""
    if not isinstance(weights_by_word, dict):
        raise LessonInputTypeError(f"权重应是「词 → 权重」的字典，例如 {LESSON_WEIGHTS}，"
                                   f"收到的是 {weights_by_word!r}。")
    w = np.zeros(len(TOKENS))  # (n,)
    for word, x in weights_by_word.items():
        if word not in TOKENS:
            raise ValueError(f"「{word}」不在句子里：可选的词是 {TOKENS}。")
        w[TOKENS.index(word)] = check_number(x, f"「{word}」的权重")
    if not np.isclose(w.sum(), 1.0) or (w < 0).any():
        raise ValueError(f"注意力权重应非负且加起来等于 1，现在的和是 {w.sum():.3f}。")
    out = w @ VALUES  # (6,) the weighted average the single head returns
    return {name: float(x) for name, x in zip(FEATURES, out)}


@dataclass(frozen=True)
class Demo:
    """What 她 reads from the sentence with ``heads`` heads at a given sharpness."""

    heads: int
    sharpness: float
    names: list[str]  # one name per head
    weights: np.ndarray  # (heads, n) 她's attention row in each head
    output: dict[str, float]  # the concatenated output, per feature
    referent_kept: float  # how much of 小红's identity reaches the output (0..1)
    subject_kept: float  # how much of 小明's subject role reaches the output (0..1)


def demo(heads: int, sharpness: float = 4.0) -> Demo:
    """她's query, times ``sharpness``, through one head (both questions) or two (one each)."""
    heads = check_choice(heads, "heads（头数）", [1, 2], why="（这个演示只比较 1 个头和 2 个头）")
    # beyond 50 every weight is one-hot to every printed digit
    sharpness = check_number(sharpness, "锐度 sharpness", minimum=0, maximum=50.0)
    k = np.array([_KEY_ROWS.get(t, [0.0, 0.0]) for t in TOKENS])  # (n, 2)
    mask = (np.arange(len(TOKENS)) < QUERY)[None]  # (1, n) 她 sees only the words before it
    scale = sharpness * np.sqrt(2.0)  # undo the kernel's 1/√d_k so `sharpness` is the logit gap
    if heads == 1:
        # One query asks both questions at once: one softmax, one weighted average of whole rows.
        q = scale * (_QUESTION["指代"] + 0.8 * _QUESTION["语法角色"])[None]  # (1, 2)
        out, w = scaled_dot_product_attention(q, k, VALUES, mask)  # (1, 6), (1, n)
        names = ["单头（两个问题挤在一起）"]
        output = out[0]
    else:
        # Each head owns one question and one feature subspace (its slice of W^Q, W^K, W^V).
        q = scale * np.stack([_QUESTION["指代"], _QUESTION["语法角色"]])[:, None]  # (2, 1, 2)
        k2 = np.stack([k * [1, 0], k * [0, 1]])  # (2, n, 2) each head's key subspace
        n_id = len(IDENTITY_FEATURES)
        roles = np.pad(VALUES[:, n_id:], ((0, 0), (0, n_id - len(ROLE_FEATURES))))  # (n, 4)
        v2 = np.stack([VALUES[:, :n_id], roles])  # (2, n, 4)
        heads_out, w = scaled_dot_product_attention(q, k2, v2, mask)  # (2, 1, 4), (2, 1, n)
        # (6,) Concat
        output = np.concatenate([heads_out[0, 0], heads_out[1, 0, : len(ROLE_FEATURES)]])
        names = ["头 1：指代", "头 2：句法"]
        w = w[:, 0]  # (2, n)
    output = dict(zip(FEATURES, map(float, output)))
    # the first head answers 指代, the last one 语法角色 (one head: the same head)
    return Demo(heads, float(sharpness), names, w, output, float(w[0, REFERENT]),
                float(w[-1, SUBJECT]))


def bar_html(value: float, colour: str) -> str:
    """One bar in a theme colour (a CSS variable) with its number beside it (§2's and §6's)."""
    return (f'<span style="display:inline-block;height:0.8em;width:{value * 8:.2f}em;'
            f'background:{colour};vertical-align:middle"></span> {value:.2f}')


def demo_html(d: Demo) -> str:
    """The widget's picture as themed HTML bars (a click costs ~1 ms, not a figure's redraw), one
    column per head: its height stays when h changes; named by each head's two largest weights."""
    def table(headers, rows):
        head = "".join(f"<th style='text-align:left;padding:0 1em 0 0'>{h}</th>"
                       for h in ("", *headers))
        body = "".join(f"<tr><td style='text-align:right;padding-right:0.6em'>{label}</td>"
                       + "".join(f"<td style='padding-right:1em;min-width:11em'>{bar}</td>"
                                 for bar in bars) + "</tr>"
                       for label, bars in rows)
        return ("<table style='color:inherit;border-collapse:collapse;margin:2px 0 "
                f"8px'><tr>{head}</tr>{body}</table>")

    colours = ("var(--jp-brand-color1, #1f77b4)", "var(--jp-warn-color1, #f57c00)")
    weights = table(d.names, [(t, [bar_html(row[j], c) for row, c in zip(d.weights, colours)])
                              for j, t in enumerate(TOKENS[:QUERY])])
    features = table(["输出里读得出的特征（理想：女性=1、人物=1、主语=1）"],
                     [(k, [bar_html(v, "var(--jp-success-color1, #4caf50)")])
                      for k, v in d.output.items()])
    gives = [largest(row[:QUERY], TOKENS) for row in d.weights]  # each head's two largest weights
    heads = "；".join(f"{name}：「她」{top}" for name, top in zip(d.names, gives))
    read = "，".join(f"{k} {v:.2f}" for k, v in d.output.items())
    alt = html.escape(f"条形图（{d.heads} 个头，锐度 {d.sharpness:g}）。{heads}。"
                      f"输出里读得出的特征：{read}。")
    return (f'<div role="img" aria-label="{alt}" style="max-width:100%;overflow-x:auto">'
            f"<b>「她」往回看时，每个头把注意力给了谁</b>{weights}{features}</div>")


def values_table() -> str:
    rows = [[word, *VALUES[i].astype(int).tolist()] for i, word in enumerate(TOKENS[:QUERY])]
    return text_table(["词元", *FEATURES], rows)


def blend_table(weights_by_word: dict[str, float]) -> str:
    label = " / ".join(f"{x:.0%}" for x in weights_by_word.values())
    return text_table(["特征", f"单头输出（{label}）"],
                      [[k, round(x, 2)] for k, x in blend(weights_by_word).items()])


def summary_html(d: Demo) -> str:
    return box(f"能从输出读回：<b>指代（小红）{d.referent_kept:.0%}</b>，<b>句法（主语小明）"
               f"{d.subject_kept:.0%}</b>。")


def demo_text(sharpness: float = 4.0) -> str:
    """她's weights in each head and what reaches the output, for 1 head and for 2 heads."""
    lines = []
    for heads in (1, 2):
        d = demo(heads, sharpness)
        lines.append(f"{heads} 个头：")
        for name, row in zip(d.names, d.weights):
            weights = " ".join(f"{t}={w:.2f}" for t, w in zip(TOKENS, row[:QUERY]))
            lines.append(f"    {name} {weights}")
        lines.append(f"    能读回的指代（小红）= {d.referent_kept:.2f}，句法（主语小明）= "
                     f"{d.subject_kept:.2f}")
    return "\n".join(lines)


def demo_widget():
    """1 vs 2 heads and the query's sharpness; shows 她's weights and what survives."""
    import ipywidgets as w

    heads = w.ToggleButtons(options=[("1 个头", 1), ("2 个头", 2)], value=1, description="头数",
                            style={**LABEL_BESIDE, "button_width": "80px"})
    sharp = slider("锐度", 4.0, min=0.0, max=10.0, step=0.5)  # demo() takes 0 … 50

    def show(summary, picture):
        d = demo(heads.value, sharp.value)
        summary.value = summary_html(d)
        picture.value = demo_html(d)

    return linked({"heads": heads, "sharpness": sharp}, show)
