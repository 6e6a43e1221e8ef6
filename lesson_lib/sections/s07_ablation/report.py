"""What §7 prints about the trained models, at the precision that is the same on every machine.

Training amplifies round-off: the BLAS kernel, the thread count and NumPy's SIMD loops move a
trained model's accuracy by up to 0.01 and its entropy by up to 0.2 bits. So the checked outputs
print levels (学会 / 大部分对 …) whose thresholds are far from every observed value, and weights to
one decimal; the exact numbers are printed by the ``*_numbers`` functions, for a cell whose output
is labelled as machine-dependent. Tests hold the thresholds' distance from the computed values.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from lesson_lib.head_stats import mean_pairwise_js, row_entropy
from lesson_lib.models.toy.config import TARGETS
from lesson_lib.models.toy.model import attention_maps
from lesson_lib.models.toy.task import Batch
from lesson_lib.show.tables import text_table

__all__ = [
    "ACCURACY_LEVELS",
    "ENTROPY_LEVELS",
    "JS_LEVELS",
    "ROLE_NAMES",
    "MAIN_ROLE_WEIGHT",
    "level",
    "format_table",
    "accuracy_numbers_text",
    "timing_text",
    "weight_on_targets",
    "heads_on_targets",
    "specialisation_text",
    "weights_numbers_text",
    "main_roles",
    "diversity",
    "diversity_text",
    "diversity_numbers_text",
    "monotone_score_text",
    "crowded_keys",
    "crowded_keys_text",
    "TARGET_NAMES",
    "STORED_SWEEP",
    "STORED_SEEDS",
    "stored_sweep",
    "store_sweep",
    "compare_to_stored",
]

# (lower bound, label), highest first. Chance is 1/V = 0.125.
ACCURACY_LEVELS = ((0.95, "学会"), (0.6, "大部分对"), (0.2, "小部分对"), (0.0, "接近随机水平"))
ENTROPY_LEVELS = ((2.5, "接近平均分配"), (0.8, "较散"), (0.0, "尖"))  # bits; uniform over 12 keys is 3.58
JS_LEVELS = ((0.4, "各看各的"), (0.0, "彼此很像"))  # bits; 1 = disjoint keys
ROLE_NAMES = {0: "前一个", 1: "后一个", 2: "配对查找"}
TARGET_NAMES = dict(zip(TARGETS, ROLE_NAMES.values()))  # the column headers a learner reads
LEAN_GAP = 0.005  # prev vs next: a head "leans" to one side only with this much more weight there
MAIN_ROLE_WEIGHT = 0.6  # a head "mainly serves" a target only with this much of its weight there


def level(value: float, levels) -> str:
    """The label of the highest level whose lower bound ``value`` reaches."""
    return next(label for bound, label in levels if value >= bound)


def _bounds_text(levels) -> str:
    bounds = [b for b, _ in levels]
    parts = [f"{levels[0][1]} ≥ {bounds[0]}"]
    parts += [f"{label} {low}–{high}" for (low, label), high in zip(levels[1:-1], bounds)]
    parts.append(f"{levels[-1][1]} < {bounds[-2]}")
    return "，".join(parts)


def format_table(results) -> str:
    """Sweep rows as levels per target (the same on every machine), with the thresholds."""
    rows = [[r["h"], r["d_k"], *(level(r["per_target"][t], ACCURACY_LEVELS) for t in TARGETS)] for r in results]
    table = text_table(["h", "每头宽度 d_k", *TARGET_NAMES.values()], rows)
    return table.around(after=f"（新序列上的准确率：{_bounds_text(ACCURACY_LEVELS)}；随机水平是 1/8 = 0.125）")


def timing_text(result) -> str:
    """How long the sweep trained (wall time: differs between runs)."""
    return f"{len(result.results)} 个头数在本进程里依次训练，用时 {result.total_seconds:.1f} 秒"


def accuracy_numbers_text(results) -> str:
    """Sweep rows with accuracies to 3 places; the standard deviation only when there were several seeds."""
    several = any(r.get("accuracy_sd") is not None for r in results)
    head = ["h", "d_k", "平均准确率", *(["标准差"] if several else []), *TARGET_NAMES.values()]
    rows = []
    for r in results:
        sd = [f"{r['accuracy_sd']:.3f}"] if several else []
        rows.append([r["h"], r["d_k"], f"{r['accuracy_mean']:.3f}", *sd,
                     *(f"{r['per_target'][t]:.3f}" for t in TARGETS)])
    return text_table(head, rows)


# ---------------------------------------------------------------------------------------------
# Which target each head serves
# ---------------------------------------------------------------------------------------------


def weight_on_targets(maps, batch: Batch) -> np.ndarray:
    """Mean attention each head puts on the three target positions: (h, 3) for prev, next, match.

    ``maps`` (B, h, T, T) are one model's weights on ``batch`` (leading axis 1); positions where
    a target does not exist (prev at 0, next at T−1) are left out of its mean.
    """
    maps = np.asarray(maps, dtype=float)  # (B, h, T, T)
    B, h, T, _ = maps.shape
    i = np.arange(T)
    where = [np.broadcast_to((i - 1) % T, (B, T)), np.broadcast_to((i + 1) % T, (B, T)), batch.pointers[0]]
    out = np.zeros((h, 3))
    for t, keys in enumerate(where):  # keys (B, T): the position query i should read for target t
        picked = np.take_along_axis(maps, keys[:, None, :, None], axis=-1)[..., 0]  # (B, h, T)
        exists = batch.mask[0, :, :, t]  # (B, T)
        out[:, t] = (picked * exists[:, None, :]).sum(axis=(0, 2)) / exists.sum()
    return out


def heads_on_targets(result, batch: Batch, heads=(1, 4)) -> dict:
    """{h: (h, 3) weight_on_targets} of the sweep's first model for each h in ``heads``."""
    return {h: weight_on_targets(attention_maps(result.params[h], h, batch), batch) for h in heads}


def specialisation_text(on_targets: dict) -> str:
    """Per head: mean weight on the three target positions (one decimal) and its main role.

    One decimal is what prints the same on every machine; a head without a main role also says which
    neighbour gets more (trained gaps are ≈ 0.025–0.03, tests hold them far above LEAN_GAP), and
    ``weights_numbers_text`` prints the exact weights in a cell marked as machine-dependent.
    """
    names = " / ".join(ROLE_NAMES.values())
    lines = []
    for h, rows in on_targets.items():
        lines.append(f"h = {h}：每个头放在 {names} 位置上的平均权重")
        for i, row in enumerate(rows):
            lines.append(f"  头 {i + 1}：{row[0]:.1f} / {row[1]:.1f} / {row[2]:.1f}  → {_role_text(row)}")
    return "\n".join(lines)


def _role_text(row) -> str:
    if row.max() >= MAIN_ROLE_WEIGHT:
        return f"主要看「{ROLE_NAMES[int(row.argmax())]}」"
    shared = "".join(f"「{ROLE_NAMES[t]}」" for t in range(3) if row[t] >= 0.25)
    if not shared:
        return "没有主要目标：权重散在别处"
    lean = ""
    if row[0] >= 0.25 and row[1] >= 0.25 and abs(row[0] - row[1]) >= LEAN_GAP:
        lean = f"，「{ROLE_NAMES[0 if row[0] > row[1] else 1]}」略多"
    return f"没有主要目标：{shared}各占一部分{lean}"


def weights_numbers_text(on_targets: dict, heads=(1,)) -> str:
    """The exact mean weights (3 places) of the heads of each h in ``heads``: their last digits vary by machine."""
    names = " / ".join(ROLE_NAMES.values())
    lines = []
    for h in heads:
        for i, row in enumerate(on_targets[h]):
            lines.append(f"h = {h} · 头 {i + 1}：{names} = {row[0]:.3f} / {row[1]:.3f} / {row[2]:.3f}")
    return "\n".join(lines)


def main_roles(on_targets_h) -> list[str]:
    """The role each head mainly serves, from a (h, 3) weight_on_targets array ("分散" when none has 0.6)."""
    return [ROLE_NAMES[int(row.argmax())] if row.max() >= MAIN_ROLE_WEIGHT else "分散" for row in on_targets_h]


# ---------------------------------------------------------------------------------------------
# How sharp the heads are and how different from each other
# ---------------------------------------------------------------------------------------------


def diversity(result, batch: Batch) -> dict:
    """{h: (mean row entropy in bits, mean pairwise JS in bits or None for h = 1)} of every trained h."""
    out = {}
    for h in sorted(result.params):
        maps = attention_maps(result.params[h], h, batch)  # (B, h, T, T)
        out[h] = (float(row_entropy(maps).mean()), mean_pairwise_js(maps) if h > 1 else None)
    return out


def _grouped(values: dict, levels) -> str:
    groups = {}
    for h, v in values.items():
        groups.setdefault(level(v, levels), []).append(h)
    order = sorted(groups, key=lambda label: min(groups[label]))  # the group with the smallest h first
    return "；".join(f"h = {'、'.join(map(str, groups[label]))} {label}" for label in order)


def diversity_text(div: dict) -> str:
    """Each h's entropy and JS as levels (the same on every machine), with the thresholds."""
    entropy = {h: e for h, (e, _) in div.items()}
    js = {h: j for h, (_, j) in div.items() if j is not None}
    return "\n".join([
        f"行熵：{_grouped(entropy, ENTROPY_LEVELS)}",
        f"  （{_bounds_text(ENTROPY_LEVELS)} 比特）",
        f"头间 JS：{_grouped(js, JS_LEVELS)}",
        f"  （{_bounds_text(JS_LEVELS)} 比特）",
    ])


def diversity_numbers_text(div: dict, d_model: int = 32) -> str:
    """Row entropy and mean pairwise JS of every trained head count to 2 places, as a text table."""
    rows = [[h, d_model // h, f"{e:.2f}", "-" if j is None else f"{j:.2f}"] for h, (e, j) in div.items()]
    return text_table(["h", "每头宽度", "行熵（比特）", "头间 JS（比特）"], rows)


def monotone_score_text(points: int = 9, sharpness: float = 4.0) -> str:
    """Why a 1-dimensional head can only pick an end: q·k is monotone in k, unlike a 2-D dot product.

    Keys in 1-D are spread on a line; in 2-D on a circle. For each query, report which key wins the
    kernel's softmax. Keys are counted from 1, as the learner counts them.
    """
    from lesson_lib.attention import softmax

    lines = []
    keys_1d = np.linspace(-1.0, 1.0, points)  # (points,) smallest first
    for q in (-sharpness, -1.0, 1.0, sharpness):
        weights = softmax(q * keys_1d)  # in 1-D the score is just q × k
        lines.append(f"一维：查询 q = {q:+.0f} 时，权重最大的是第 {int(weights.argmax()) + 1} 个键")
    angles = np.linspace(0.0, 2 * np.pi, points, endpoint=False)
    keys_2d = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (points, 2) keys on a circle
    winners = [int(softmax(sharpness * keys_2d @ keys_2d[j]).argmax()) + 1 for j in range(points)]
    lines.append(f"二维：让查询依次指向第 1…{points} 个键，得分最高的键依次是 {winners}")
    return "\n".join(lines)


def crowded_keys(counts=(9, 64), sharpness: float = 4.0) -> dict:
    """{n keys: the winner's softmax weight} when n unit keys share a circle (d_k = 2) and the query points at one.

    ``sharpness`` is the query's length times the key's (the score of the winner): the weight the winner gets
    depends on it as much as on the number of keys. Every key can still win in 2-D, but the more keys share two
    dimensions, the closer the runner-up's score comes to the winner's (the margin shrinks).
    """
    from lesson_lib.attention import softmax

    out = {}
    for n in counts:
        angles = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
        keys = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (n, 2) keys on a circle
        out[n] = float(softmax(sharpness * keys @ keys[0]).max())  # the query points at key 1
    return out


CROWDED_SHARPNESS = (4.0, 16.0, 200.0)  # the query length × key length of §7.4's table (4: the earlier example)


def crowded_keys_text(counts=(9, 64), sharpness=CROWDED_SHARPNESS) -> str:
    """``crowded_keys`` for each length in ``sharpness``, as a text table (two decimals, far from a rounding
    boundary: tested)."""
    won = {s: crowded_keys(counts, s) for s in sharpness}
    rows = [[f"{s:g}", *(f"{won[s][n]:.2f}" for n in counts)] for s in sharpness]
    return text_table(["查询长度 × 键长度", *(f"{n} 个键时赢家的权重" for n in counts)], rows).around(
        before="二维的键排在一个圆上，查询指向第 1 个键（它总是赢家）：")


# ---------------------------------------------------------------------------------------------
# The stored sweep: the run the lab makes (3 seeds), read by the core lesson without training
# ---------------------------------------------------------------------------------------------

STORED_SWEEP = Path(__file__).with_name("toy_sweep.json")
STORED_SEEDS = 3


def store_sweep(result, path: Path = STORED_SWEEP) -> dict:
    """Write a sweep's rows and settings (not its timings, which differ between runs) as the stored run."""
    rows = [{k: v for k, v in r.items() if k != "seconds"} for r in result.results]
    data = {"results": rows, "seeds": len(rows[0]["accuracy_per_seed"]),
            "task": asdict(result.task), "train": asdict(result.config)}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return data


def stored_sweep(path: Path = STORED_SWEEP) -> dict:
    """The stored run: {"results": rows as ``sweep`` returns them, "seeds", "task", "train"}."""
    return json.loads(path.read_text(encoding="utf-8"))


def compare_to_stored(results, stored=None, tolerance: float = 0.03) -> str:
    """One line per head count: this run's mean accuracy beside the stored run's, and whether they agree."""
    stored = stored_sweep() if stored is None else stored
    kept = {r["h"]: r for r in stored["results"]}
    lines = []
    for r in results:
        old = kept.get(r["h"])
        if old is None:
            lines.append(f"h = {r['h']}：保存的结果里没有这个头数")
            continue
        same = abs(r["accuracy_mean"] - old["accuracy_mean"]) <= tolerance
        verdict = "一致" if same else "不一致"
        lines.append(f"h = {r['h']}：三项平均{level(r['accuracy_mean'], ACCURACY_LEVELS)}，"
                     f"与存下的结果（{level(old['accuracy_mean'], ACCURACY_LEVELS)}）{verdict}")
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m lesson_lib.sections.s07_ablation.report``: train the stored run again and write it."""
    from lesson_lib.models.toy.sweeping import sweep

    result = sweep(heads=(1, 2, 4, 8, 16, 32), seeds=STORED_SEEDS)
    store_sweep(result)
    print(accuracy_numbers_text(result.results))
    print(f"wrote {STORED_SWEEP}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
