"""§3: how d_model is cut into heads and glued back, step by step, by the kernel's own functions;
what reshaping without the transpose does; heads that meet only at W^O; and why positions must be
added to X."""

import numpy as np

from lesson_lib.attention import (
    head_width,
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    split_heads,
)
from lesson_lib.checks import check_heads, check_int
from lesson_lib.paper import BASE_D_MODEL, BASE_HEADS
from lesson_lib.show.plotting import describe, use_chinese_font
from lesson_lib.show.tables import text_table

# float64 round-off of these sums is ~1e-15; its digits follow the BLAS kernel and thread count
ROUNDOFF = 1e-12
# Figure 11.1
_HEAD_COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B2", "#937860", "#DA8BC3",
                "#8C8C8C"]


def _layer(n, d_model, h, seed, name="n（词数）", minimum=1):
    """Seeded X (n, d_model), W^Q, W^K, W^V, W^O (each d_model × d_model) and the rng."""
    check_heads(d_model, h)
    n = check_int(n, name, minimum=minimum)
    rng = np.random.default_rng(check_int(seed, "seed", minimum=0))
    x = rng.standard_normal((n, d_model))
    return x, [rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(4)], rng


def shape_steps(n: int = 6, d_model: int = BASE_D_MODEL,
                h: int = BASE_HEADS) -> list[tuple[str, tuple[int, ...], str]]:
    """(code, shape, caption) of every step from X (n, d_model) to the output."""
    x, (w_q, w_k, w_v, w_o), _ = _layer(n, d_model, h, seed=0)
    d_k = d_model // h
    q = x @ w_q  # (n, d_model)
    qh, kh, vh = (split_heads(a, h) for a in (q, x @ w_k, x @ w_v))  # (h, n, d_k) each
    # (h, n, d_v); the weights are section 5's topic
    heads, _ = scaled_dot_product_attention(qh, kh, vh)
    concat = merge_heads(heads)  # (n, h·d_v)
    return [
        ("X", x.shape, "输入 X（自注意力：Q、K、V 都从同一个 X 投影出来）"),
        ("X @ W_Q", q.shape,
         f"投影 Q = X W^Q（K = X W^K、V = X W^V 同样算；{h} 个 W_i^Q 并排成一个矩阵）"),
        ("Q.reshape(n, h, d_k)", (len(x), h, d_k),
         f"切开最后一维：Q 的每行 {d_model} 个数分成 {h} 段，每段 d_k = {d_k}"),
        ("split_heads(Q, h)", qh.shape,
         "转置成 (h, n, d_k)：头放到最前面（上一步的 reshape 加这一步，就是 split_heads）"),
        ("Attention(Q_i, K_i, V_i)", heads.shape, f"每个头各自做注意力：{h} 个 (n × n) 权重矩阵"),
        ("heads.swapaxes(0, 1)", np.swapaxes(heads, 0, 1).shape,
         "转置回 (n, h, d_v)：词元重新放到最前面"),
        ("merge_heads(heads)", concat.shape,
         "拼接 Concat(head_1, …, head_h)（上一步的转置加这一步，就是 merge_heads）"),
        ("concat @ W_O", (concat @ w_o).shape, "乘 W^O：各头的结果第一次混在一起"),
    ]


def heads_mix_only_at_wo(n: int = 5, d_model: int = BASE_D_MODEL, h: int = BASE_HEADS) -> dict:
    """The largest difference between Concat(head_i) W^O and Σ_i head_i W^O_i (W^O_i: rows i·d_v …
    (i+1)·d_v), and how much each head's output moves when only the other heads' W^Q changes."""
    x, (w_q, w_k, w_v, w_o), rng = _layer(n, d_model, h, seed=0)
    d_k = d_model // h

    def heads_of(wq):
        return scaled_dot_product_attention(split_heads(x @ wq, h), split_heads(x @ w_k, h),
                                            split_heads(x @ w_v, h))[0]  # (h, n, d_v)

    heads = heads_of(w_q)
    concat_then_wo = merge_heads(heads) @ w_o  # (n, d_model)
    sum_of_heads = sum(heads[i] @ w_o[i * d_k:(i + 1) * d_k] for i in range(h))  # Σ_i head_i W^O_i
    w_q_changed = w_q.copy()
    # change every head but head 1
    w_q_changed[:, d_k:] += rng.standard_normal((d_model, d_model - d_k))
    heads_changed = heads_of(w_q_changed)
    return {
        "max_difference": float(np.abs(concat_then_wo - sum_of_heads).max()),
        "head1_change": float(np.abs(heads_changed[0] - heads[0]).max()),
        "others_change": float(np.abs(heads_changed[1:] - heads[1:]).max()) if h > 1 else 0.0,
    }


def order_and_position(n: int = 6, d_model: int = BASE_D_MODEL, h: int = BASE_HEADS,
                       seed: int = 0) -> dict:
    """The largest difference between "reverse the tokens, then attend" and "attend, then reverse",
    without and with positions added to X: self-attention sees order only through them."""
    x, ws, rng = _layer(n, d_model, h, seed, "n（词元数）", minimum=2)
    positions = rng.standard_normal(x.shape)  # row t is added to whatever token sits at t

    def moved_only(p):
        out = multi_head_attention(x + p, *ws, h)[0]  # (n, d_model)
        out_reversed = multi_head_attention(x[::-1] + p, *ws, h)[0]  # the reversed sentence
        return float(np.abs(out_reversed - out[::-1]).max())

    return {"without_position": moved_only(0.0), "with_position": moved_only(positions)}


def _bound(value, small: str, large: str, digits: str = ".2f") -> str:
    """``value`` below ROUNDOFF as that bound (its digits follow the CPU), else its digits."""
    return f"< {ROUNDOFF:.0e}，{small}" if value < ROUNDOFF else f"{value:{digits}}{large}"


def order_text(n: int = 6, d_model: int = BASE_D_MODEL, h: int = BASE_HEADS) -> str:
    """order_and_position in two sentences."""
    check = order_and_position(n=n, d_model=d_model, h=h)
    same = _bound(check["without_position"], "每个词元读到的内容一样", "，内容变了！")
    changed = _bound(check["with_position"], "内容没变！", "，每个词元读到的内容变了")
    return "\n".join([
        f"不加位置编码，把 {n} 个词元倒过来排：输出也只是倒过来，同一个词元的输出最大差 {same}",
        f"X 加上位置编码再倒过来排：同一个词元的输出最大差 {changed}",
    ])


def plot_figure_11_1(d_model: int = BASE_D_MODEL, h: int = BASE_HEADS):
    """Figure 11.1 redrawn: X -> h projections -> h heads of d_k -> Concat -> W^O -> output."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex, to_rgb

    use_chinese_font()
    d_k = head_width(d_model, h)
    # 6 in: no scaling in a 592 px output; every text ≥ 9 pt
    fig, ax = plt.subplots(figsize=(6.0, 5.0))
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.99)
    ax.set(xlim=(0, 11), ylim=(-0.75, 4.75))
    ax.axis("off")

    def box(x, y, text, fill, edge="#333333"):  # the theme's text reads on every (pale) fill
        return ax.text(x, y, text, ha="center", va="center", fontsize=9.5, linespacing=1.3,
                       bbox={"boxstyle": "round,pad=0.5", "facecolor": fill, "edgecolor": edge})

    def arrow(a, b):  # from box a to box b, clipped at their borders
        ax.annotate("", b.get_position(), a.get_position(), arrowprops={
            "arrowstyle": "-|>", "color": "#555555", "patchA": a.get_bbox_patch(),
            "patchB": b.get_bbox_patch()})

    x = box(0.85, 2.1, f"输入 X\nd_model\n= {d_model}\nQ=K=V=X", "#E8EEF7")
    concat = box(8.05, 2.1, f"Concat\n{h} × {d_k}\n= {h * d_k}", "#FFF2CC")
    arrow(concat, box(10.1, 2.1, f"× W^O\n{h * d_k} × {d_model}\n输出\n{d_model} 维", "#E2F0D9"))
    # many heads: the first four and the last
    numbers = list(range(1, h + 1)) if h <= 4 else [1, 2, 3, 4, h]
    ys = np.linspace(3.55, 0.3, len(numbers)) if len(numbers) > 1 else [2.1]
    for j, y in zip(numbers, ys):
        colour = _HEAD_COLORS[(j - 1) % len(_HEAD_COLORS)]
        projection = box(3.35, y, f"投影 {j}\nW_{j}^Q,K,V", "#F7F7F7")
        head = box(5.85, y, f"头 {j}\nd_k = {d_k}", to_hex(0.25 * np.array(to_rgb(colour)) + 0.75),
                   colour)
        arrow(x, projection), arrow(projection, head), arrow(head, concat)
    if h > 5:  # the heads left out, in both columns, between head 4 and head h
        for col in (3.35, 5.85):
            ax.text(col, (ys[3] + ys[4]) / 2, "…", ha="center", va="center", fontsize=10,
                    rotation=90)
    ax.text(5.5, 4.7,
            f"图 11.1  多头自注意力：X 经 {h} 组投影切成 {h} 个头\n（每头宽度 d_k = {d_k}），"
            f"各算各的，最后拼回 d_model = {d_model}", ha="center", va="top", fontsize=10.5,
            linespacing=1.4)
    ax.text(5.5, -0.7, "同一层里，各头在注意力阶段互不通信，\n直到 W^O 才把它们的结果混合",
            ha="center", va="bottom", fontsize=9.5, color="#555555", linespacing=1.4)
    shown = "、".join(f"头 {j}" for j in numbers)
    alt = (f"示意图 11.1：输入 X（d_model = {d_model}，Q = K = V = X）经 {h} 组投影分成 {h} 个头"
           f"（图中画出{shown}），每个头 d_k = {d_k}；各头的结果拼接成 {h} × {d_k} = {h * d_k} 维，"
           f"再乘 W^O （{h * d_k} × {d_model}）得到 {d_model} 维输出。各头在 W^O 之前互不通信。")
    return describe(fig, alt)


def steps_text(n: int = 6, d_model: int = BASE_D_MODEL, h: int = BASE_HEADS):
    rows = [[f"{i}.", code, str(shape), title]
            for i, (code, shape, title) in enumerate(shape_steps(n, d_model, h), 1)]
    return text_table(["步", "代码", "形状", "这一步做什么"], rows, code_columns=(1, 2))


def transpose_text(n: int = 6, d_model: int = BASE_D_MODEL, h: int = BASE_HEADS) -> str:
    """Whose columns and tokens head 1 holds, split correctly and with the classic bug of reshaping
    (n, d_model) straight to (h, n, d_k) (1-based, as the lesson counts heads and words)."""
    n = check_int(n, "n（词数）", minimum=1)
    d_k = head_width(d_model, h)
    owner = np.broadcast_to(np.arange(d_model) // d_k + 1, (n, d_model))  # column -> its head
    token = np.broadcast_to(np.arange(n)[:, None] + 1, (n, d_model))  # row -> its token
    return "\n".join([
        f"正确切分时，头 1 里的数来自哪些头的列：头 {np.unique(split_heads(owner, h)[0]).tolist()}",
        "忘了 transpose 时，头 1 里的数来自哪些头的列：头 "
        f"{np.unique(owner.reshape(h, n, d_k)[0]).tolist()}",
        f"忘了 transpose 时，头 1 的 {n} 行分别来自哪些词元：词元 "
        f"{token.reshape(h, n, d_k)[0][:, 0].tolist()}",
    ])


def heads_mix_text(n: int = 5, d_model: int = BASE_D_MODEL, h: int = BASE_HEADS) -> str:
    """heads_mix_only_at_wo as three sentences."""
    check = heads_mix_only_at_wo(n=n, d_model=d_model, h=h)
    same = _bound(check["max_difference"], "只是浮点舍入", "，不止是浮点舍入！", ".1e")

    # what the computation can vouch for: exactly zero, round-off, or a real change
    def change(value):
        return "0（一位都没变）" if value == 0.0 else _bound(value, "只是浮点舍入", "")

    return "\n".join([
        f"Concat·W^O 与 Σ head_i·W^O_i 的最大差：{same}",
        f"改动其他头的 W^Q 后，头 1 的输出变化：{change(check['head1_change'])}",
        f"其他头自己的输出变化：{change(check['others_change'])}",
    ])
