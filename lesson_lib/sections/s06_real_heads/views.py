"""What §6's English lab prints and draws, and the head explorer. What needs the weights takes the
model (or its encodings) first and accepts ``None`` (the cell says it was skipped)."""

import functools
import html
import math
import re

import numpy as np

from lesson_lib.checks import check_int
from lesson_lib.models.pretrained import head_finder as finder
from lesson_lib.models.pretrained import minilm
from lesson_lib.models.toy import training
from lesson_lib.runtime.blas import one_blas_thread
from lesson_lib.sections.s02_averaging import bar_html
from lesson_lib.show.controls import linked, slider
from lesson_lib.show.plotting import heat_map, sentence

# The its→law head on two more sentences: "its" = car (it gets it), "its" = town (it does not)
COREF_SENTENCES = {
    "works": "The company sold the car because its engine was broken.",
    "fails": "The river flooded the town and its streets were empty.",
}
EXPLORER_SENTENCES = (  # (the explorer's label, the sentence), the first one shown first
    ("论文图 4/5：The Law … its application …", minilm.PAPER_SENTENCES["law"]),
    ("论文图 3：… making … more difficult", minilm.PAPER_SENTENCES["making"]),
    ("its = car（这个头猜对）", COREF_SENTENCES["works"]),
    ("its = town（这个头猜错）", COREF_SENTENCES["fails"]),
)
SKIPPED = "（跳过：没有权重包，无法计算真实模型的注意力。安装方法见本节开头。）"
EXPLORER_LINE_PX = 17  # one line of the explorer's text: line-height 1.3 at JupyterLab's 13 px
# the folded table's summary line under the map, with its margins (38 px in Chromium)
EXPLORER_FOLD_PX = 40


def skip_without_model(message, fn):
    """``fn``, but printing ``message`` and returning None when its first argument is None."""

    @functools.wraps(fn)
    def wrapper(first, *args, **kwargs):
        return print(message) if first is None else fn(first, *args, **kwargs)

    return wrapper


_needs_model = functools.partial(skip_without_model, SKIPPED)  # a decorator


def head_label(layer, head):
    return f"第 {layer} 层 · 头 {head}"


def check_layer_head(attentions, layer, head):
    """1-based (layer, head) -> 0-based indices into ``attentions`` (L, H, T, T)."""
    n_layers, n_heads = np.shape(attentions)[:2]
    layer = check_int(layer, "层号 layer（从 1 数起）", minimum=1, maximum=n_layers)
    head = check_int(head, "头号 head（从 1 数起）", minimum=1, maximum=n_heads)
    return layer - 1, head - 1


def describe_row(tokens, attentions, layer, head, qi):
    """One Chinese line: the 3 largest weights of token ``qi``'s (0-based) row in one head."""
    li, hi = check_layer_head(attentions, layer, head)
    row = np.asarray(attentions)[li, hi, qi]  # (T,) sums to 1
    best = "、".join(f"{tokens[j]}（位置 {j + 1}）{row[j]:.2f}"
                    for j in np.argsort(-row, kind="stable")[:3])
    return (f"{head_label(layer, head)}：查询词元「{tokens[qi]}」（位置 {qi + 1}）"
            f"的注意力最多给了 {best}；平均分配的话每个词元只有 {1 / len(tokens):.2f}。")


def model_text(model) -> str:
    if model is None:  # what plot_toy_heads() draws instead
        return ("改为展示第 7 节玩具模型（1 层、4 个头，任务：同时取前一个、后一个和配对位置的"
                "值）训练后的注意力。它不是真实语言模型，只用来说明「训练会让头各自分工」。")
    return (f"all-MiniLM-L6-v2：{size_text(model.config)}，约 {model.n_parameters / 1e4:.0f} "
            "万个参数。")


def size_text(c) -> str:
    return (f"{c.n_layers} 层 × {c.n_heads} 头 = {c.n_layers * c.n_heads} 个头，"
            f"d_model = {c.d_model}，每头宽度 d_k = {c.d_model} / {c.n_heads} = "
            f"{c.d_model // c.n_heads}")


@_needs_model
def run_paper_sentences(model):
    """Both appendix sentences through the model, {'law': Encoding, 'making': …}."""
    with one_blas_thread():
        runs = {name: model.attend(text) for name, text in minilm.PAPER_SENTENCES.items()}
    names = {"law": "图 4/5 的句子", "making": "图 3 的句子"}
    for name, enc in runs.items():
        shape = f"{enc.attentions.shape}（层, 头, 查询, 键）"
        print(f"{names[name]}：{len(enc.tokens)} 个词元，注意力张量形状 {shape}")
        print("  " + " ".join(enc.tokens))
    return runs


def rows_figure(att, tokens, qi, heads, title, named=None):
    """A (heads × tokens) strip: where each head ((layer, head), 1-based) sends token ``qi``'s
    attention. Alt text and table: its weight on each ``named`` ({name: (L, H)}), else its top 2."""
    rows = np.stack([att[layer - 1, head - 1, qi] for layer, head in heads])  # (k, T)
    parts = []
    table = []
    for (layer, head), row in zip(heads, rows):
        if named:
            cells = [(name, float(w[layer - 1, head - 1])) for name, w in named.items()]
        else:
            cells = [(tokens[k], float(row[k])) for k in np.argsort(-row, kind="stable")[:2]]
        given = "，".join(f"给「{t}」{w:.2f}" for t, w in cells)
        parts.append(f"{head_label(layer, head)}：「{tokens[qi]}」{given}")
        table.append([head_label(layer, head), *(f"{w:.2f}（{t}）" for t, w in cells)])
    headers = ["头", "最大的权重", "第二大的权重"]
    if named:
        headers = ["头", *(f"给「{name}」" for name in named)]
    return heat_map(rows, tokens=[f"L{layer}·头{head}" for layer, head in heads], col_tokens=tokens,
                    suptitle=title, alt=sentence(title) + "；".join(parts) + "。",
                    table=(headers, table))


@_needs_model
def making_figure(runs):
    """Figure 3's question: which heads link 'making' to 'more difficult'? Prints the top 6."""
    enc = runs["making"]
    qi = finder.find_token(enc.tokens, "making")
    scores = sum(enc.attentions[..., qi, finder.find_token(enc.tokens, word)]
                 for word in ("more", "difficult"))  # (L, H)
    ranked = finder.rank_heads({"making": scores}, top=6)["making"]
    print("从 making 出发、落在 more + difficult 上的注意力最多的头：")
    print("  " + "；".join(f"{head_label(layer, head)} {s:.2f}" for layer, head, s in ranked))
    return rows_figure(enc.attentions, enc.tokens, qi, [(layer, head) for layer, head, _ in ranked],
                       "图 3 的问题：making 看向哪里？（每行一个头）")


@_needs_model
def its_figure(runs, layer=5):
    """Figure 4: 'its' in every head of one layer; prints those peaking on law or application."""
    enc = runs["law"]
    check_layer_head(enc.attentions, layer, 1)
    qi = finder.find_token(enc.tokens, "its")
    heads = [(layer, h) for h in range(1, enc.attentions.shape[1] + 1)]
    for _, h in heads:
        row = enc.attentions[layer - 1, h - 1, qi]  # (T,)
        tok = enc.tokens[int(row.argmax())]
        w = float(row.max())
        if tok in ("law", "application"):
            share = "超过一半" if w > 0.5 else "最高的一项，但不到一半"
            print(f"{head_label(layer, h)}：its → {tok} {w:.2f}（{share}）")
    title = f"图 4 的问题：第 {layer} 层的 {len(heads)} 个头，its 看向哪里？"
    return rows_figure(enc.attentions, enc.tokens, qi, heads, title)


@_needs_model
def head_finder(runs):
    """All heads on the 'Law' sentence ranked by four behaviours: top 3 each, winners drawn."""
    law = runs["law"]
    making = runs["making"]
    ranking = finder.rank_heads(finder.head_scores(law.attentions, law.tokens), top=3)
    other = finder.head_scores(making.attentions, making.tokens)
    n_heads = law.attentions.shape[0] * law.attentions.shape[1]
    print(f"在图 4/5 的句子上给全部 {n_heads} 个头打分（平均分配时每个词元得 "
          f"{1 / len(law.tokens):.3f}）：")
    for name, best in ranking.items():
        cells = [f"{head_label(layer, head)} {s:.2f}"
                 + ("" if name == "coref"
                    else f"，图 3 句子上 {other[name][layer - 1, head - 1]:.2f}")
                 for layer, head, s in best]
        print(f"· {finder.SCORE_NAMES[name]}：" + "；".join(cells))
    winners = [best[0] for best in ranking.values()]  # in SCORE_NAMES' order
    maps = np.stack([law.attentions[layer - 1, head - 1] for layer, head, _ in winners])
    shorts = ("its → law", "前一个词元", "后一个词元", "[CLS] 注意力汇")
    titles = [f"{short}：{head_label(*best[:2])}" for short, best in zip(shorts, winners)]
    return heat_map(  # one column: four 27-token maps side by side would need labels under 12 px
        maps, tokens=law.tokens, titles=titles,
        suptitle="四种分工，各自得分最高的头（行 = 查询，列 = 键）", cols=1)


@_needs_model
def coref_check(model, layer=4, head=2):
    """The best its→law head where it finds the owner of 'its' and where it does not."""
    with one_blas_thread():
        encs = {name: model.attend(text) for name, text in COREF_SENTENCES.items()}
    verdict = {"works": "「its」指 car，这个头也主要看 car",
               "fails": "「its」指 town，这个头却主要看 river"}
    for name, enc in encs.items():
        print(f"{verdict[name]}：{COREF_SENTENCES[name]}")
        print("  " + describe_row(enc.tokens, enc.attentions, layer, head,
                                  finder.find_token(enc.tokens, "its")))
    return encs


@_needs_model
def explore(runs, sentence, layer, head, query):
    """The explorer in a notebook cell: its line printed, its picture shown."""
    from IPython.display import HTML, display

    if sentence not in runs:
        raise ValueError(f"没有名为 {sentence!r} 的句子：可选的是 {'、'.join(map(repr, runs))}。")
    enc = runs[sentence]
    # No folded table: some float32 weights sit within 1e-4 of a rounding boundary, and a stored
    # output must be the same on every CPU; the row's bars (checked stable) carry the numbers.
    qi = finder.find_token(enc.tokens, query)
    text, bars, picture = explorer_frame(enc, layer, head, qi, table=False)
    print(text)
    # with the map's <img> copy, which a sanitized page keeps
    display(HTML(picture._repr_html_() + bars))


def explorer_frame(enc, layer, head, qi, table=None):
    """(line, token ``qi``'s row as HTML bars, map picture) for the explorer: SVG and HTML take a
    few ms, where a matplotlib figure took ~0.2 s. ``table=False``: no folded numbers."""
    tokens = enc.tokens
    line = describe_row(tokens, enc.attentions, layer, head, qi)  # checks layer and head, once
    row = enc.attentions[layer - 1, head - 1, qi]  # (T,)
    top = np.argsort(-row, kind="stable")[:3]
    given = "，".join(f"「{tokens[qi]}」给「{tokens[k]}」{row[k]:.2f}" for k in top)
    alt = (f"{head_label(layer, head)} 的注意力图（{len(tokens)} 个词，"
           f"红框是「{tokens[qi]}」这一行）：{given}。")
    title = f"{head_label(layer, head)} 的注意力图（行 = 查询，列 = 键）"
    picture = heat_map(enc.attentions[layer - 1, head - 1], tokens=tokens, cell_px=15,
                       highlight_row=qi, alt=alt, table=table, suptitle=title)
    bars = []  # the query's row as bars in the theme's colours (light and dark), the largest in red
    for j, (tok, weight) in enumerate(zip(tokens, row)):
        colour = "var(--jp-error-color1, #d62728)"
        if j != top[0]:
            colour = "var(--jp-brand-color1, #1f77b4)"
        bars.append('<div style="display:flex;align-items:center;gap:6px;line-height:1.3;'
                    'break-inside:avoid">'
                    f'<span style="width:8em;text-align:right;white-space:nowrap">{j + 1} · '
                    f'{html.escape(tok)}</span>'
                    f"<span>{bar_html(weight, colour)}</span></div>")
    heading = (f"<div style='margin-top:4px'>「{html.escape(tokens[qi])}」（位置 {qi + 1}）这一行，"
               "红色是最高的一条：</div>")
    # 3 columns at 1024 px, 2 in a 592 px output
    columns = '<div style="columns:3 17em;column-gap:1.5em">'
    return line, f"{heading}{columns}{''.join(bars)}</div>", picture


@_needs_model
def explorer_widget(model, layer=5, head=12, query="its"):
    """Sliders for layer and head, dropdowns for sentence and query token (a start the first
    sentence does not have is a Chinese error, not a silent clamp)."""
    import ipywidgets as w

    with one_blas_thread():
        encodings = {text: model.attend(text) for _, text in EXPLORER_SENTENCES}
    first = encodings[EXPLORER_SENTENCES[0][1]]
    check_layer_head(first.attentions, layer, head)

    def options(tokens):  # 1-based labels: the position tells repeated tokens (be, ',') apart
        return [(f"{i + 1} · {t}", i) for i, t in enumerate(tokens)]

    # min widths: at 1024 px the row of controls wraps instead of squeezing the slider tracks
    sentence = w.Dropdown(options=EXPLORER_SENTENCES, description="句子",
                          style={"description_width": "3em"},
                          layout=w.Layout(width="min(520px, 100%)"))
    track = {"min_width": "260px", "width": "300px"}
    layer_s = slider("层", layer, min=1, max=model.n_layers, layout=w.Layout(**track))
    head_s = slider("头", head, min=1, max=model.n_heads, layout=w.Layout(**track))
    token = w.Dropdown(options=options(first.tokens), value=finder.find_token(first.tokens, query),
                       description="查询词元", style={"description_width": "4em"},
                       layout=w.Layout(min_width="220px"))
    shown = {"text": sentence.value}

    def redraw(summary, picture):
        enc = encodings[sentence.value]
        # new tokens; linked does not redraw for the list change below
        if sentence.value != shown["text"]:
            shown["text"] = sentence.value
            token.options = options(enc.tokens)
            token.value = enc.tokens.index(query if query in enc.tokens else enc.tokens[1])
        text, bars, picture.value = explorer_frame(enc, layer_s.value, head_s.value, token.value)
        summary.value = f"<b>{html.escape(text)}</b>{bars}"

    box = linked({"sentence": sentence, "layer": layer_s, "head": head_s, "token": token}, redraw)
    # Both parts reserve the longest sentence's height, so choosing it never makes the widget grow.
    # Summary: 3 lines of text, the bars' heading, the bars in 2 columns (a 592 px output); picture:
    # the map and its folded table's line.
    longest = max(encodings.values(), key=lambda enc: len(enc.tokens))
    svg_px = math.ceil(float(re.search(r' height="([\d.]+)"',
                                       explorer_frame(longest, 1, 1, 0)[2].svg)[1]))
    lines = 4 + math.ceil(len(longest.tokens) / 2)
    box.controls["summary"].layout.min_height = f"{lines * EXPLORER_LINE_PX}px"
    box.controls["picture"].layout.min_height = f"{svg_px + EXPLORER_FOLD_PX}px"
    return box


def plot_toy_heads():
    """Without the weights: §7's toy model's 4 heads, trained here in seconds (``model_text``)."""
    return heat_map(training.example_heads(h=4, seed=0),
                    suptitle="玩具模型的 4 个头（训练后，种子 0）")
