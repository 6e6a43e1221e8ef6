"""§4 · 计算量守恒: the counts of ``lesson_lib.costs`` tabulated, and the readable kernel timed for
several h; §8's follow-up table of key/value sharing (MHA, GQA, MQA)."""

import functools
import itertools
import timeit

import numpy as np

from lesson_lib import attention
from lesson_lib.attention import head_width
from lesson_lib.checks import check_int
from lesson_lib.costs import SOFTMAX_WORK, SOFTMAX_WORK_FORMULA, count, variants
from lesson_lib.runtime.blas import one_blas_thread
from lesson_lib.show.tables import text_table

# "about as fast": within 25 %, well outside the run-to-run noise of the fastest of a few runs
SIMILAR_TIME = 1.25


def time_kernel(n: int, d_model: int, heads, repeat: int = 3) -> dict[int, float]:
    """Fastest of ``repeat`` runs of the readable kernel per h, one BLAS thread (as §4 says): a
    single run can land on a moment another program took the CPU; the fastest is disturbed least."""
    n = check_int(n, "n", minimum=1)
    d_model = check_int(d_model, "d_model", minimum=1)
    repeat = check_int(repeat, "repeat", minimum=1)
    heads = list(heads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d_model), dtype=np.float32)
    ws = [(rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(np.float32)
          for _ in range(4)]
    result = {}
    with one_blas_thread():
        for h in heads[:1]:
            attention.multi_head_attention(x, *ws, h)  # one warm-up: the first run is slow
        for h in heads:
            run = functools.partial(attention.multi_head_attention, x, *ws, h)
            result[h] = min(timeit.repeat(run, number=1, repeat=repeat))
    return result


def format_table(n: int, d_model: int, heads) -> str:
    """The per-stage counts, one row per h."""
    counts = [count(n, d_model, h) for h in heads]
    rows = [[c.h, c.d_k, c.qkv_projections, c.scores, c.weights_v, c.output_projection,
             c.matmul_total, c.softmax_total] for c in counts]
    return text_table(["h", "d_k", "Q/K/V 投影", "打分 QKᵀ", "权重×V", "W^O 投影", "矩阵乘法合计",
                       f"{SOFTMAX_WORK} {SOFTMAX_WORK_FORMULA}"], rows)


def scores_text(d_model: int, heads) -> str:
    """QKᵀ's multiplies as the coefficient of n² (the count at n = 1): per head, all heads."""
    return "\n".join(f"h = {h}: 每个头打分 {count(1, head_width(d_model, h), 1).scores}n²，"
                     f"{h} 个头共 {count(1, d_model, h).scores}n²" for h in heads)


def timing_text(ns, d_model: int, heads, repeat: int = 3) -> str:
    """Measured kernel time for each n and h, one line per n; then, at the largest n, each h against
    the first, and what all of them say: is "no extra cost" also true of time?"""
    lines = []
    times = {}
    for n in ns:
        times = time_kernel(n=n, d_model=d_model, heads=heads, repeat=repeat)
        lines.append(f"n = {n:>3}: " + "，".join(f"h = {h}: {t * 1e3:.1f} ms"
                                                for h, t in times.items()))
    first, *others = times or [None]
    if others:
        ratios = "，".join(f"h = {h} 是 {times[h] / times[first]:.1f} 倍" for h in others)
        lines.append(f"n = {ns[-1]} 时，以 h = {first} 为 1：{ratios}。{timing_verdict(times)}。")
    return "\n".join(lines)


def timing_verdict(times: dict[int, float]) -> str:
    """What every time ({h: seconds}) says together: more heads never do less work, so an h clearly
    faster than a smaller h means another program took the CPU; else all alike, or more h slower."""
    hs = sorted(times)
    if any(times[a] > SIMILAR_TIME * times[b] for a, b in itertools.combinations(hs, 2)):
        return "头多的反而明显更快，多半是计时受到了干扰（比如电脑正忙）：请再运行一次"
    slowest = max(hs, key=times.get)
    if times[slowest] <= SIMILAR_TIME * times[hs[0]]:
        return f"在这台电脑上，h = {hs[0]} 到 h = {hs[-1]} 差不多快：用时也基本守恒"
    return f"在这台电脑上，h = {slowest} 明显比 h = {hs[0]} 慢：守恒的是乘法次数，不是用时"


def kv_sharing_text(d_model: int, h: int, groups: int) -> str:
    """§8: parameters, numbers cached per token and that cache against MHA's, per layer (short
    headers: 72 monospace columns fit a 592 px output)."""
    rows = list({r.kv_heads: r for r in variants(d_model, h, groups)}.values())  # g = h or 1: once
    full = rows[0].cache_per_token
    body = [[r.name, r.kv_heads, r.projection_params, r.cache_per_token,
             f"1/{full // r.cache_per_token}" if r.cache_per_token < full else "1"] for r in rows]
    title = f"d_model = {d_model}，h = {h} 个查询头，每头宽度 d_k = {rows[0].d_k}（每一层）："
    table = text_table(["方式", "键/值头 g", "投影参数", "每词元缓存", "占多头缓存"], body)
    # a g that is one of the two rows says so, where its own row would be
    same = {h: f"g = {h} = h：这时分组查询就是多头本身（第一行）",
            1: "g = 1：这时分组查询就是多查询（第二行）"}.get(groups)
    return f"{title}\n{table}" + (f"\n{same}" if same else "")
