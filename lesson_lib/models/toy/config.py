"""What one run of the toy ablation is set by, and which values are allowed.

``Task`` sizes the 3-lookup task, ``TrainConfig`` the model width and the optimiser schedule. The
checks below give every argument a learner or instructor passes a Chinese error that names the
argument, the value and what is allowed, before any training starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lesson_lib import checks as validation

__all__ = [
    "TARGETS", "Task", "TrainConfig", "DEFAULT_TASK", "DEFAULT_CONFIG",
    "check_head_list", "check_run", "seed_list",
]

TARGETS = ("prev", "next", "match")

DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class Task:
    """Sizes of the 3-lookup task: T positions, V values, K key symbols.

    K ≫ h matters: with few key symbols a d_k = 1 head can survive by serving a single key.
    """

    T: int = 12
    V: int = 8
    K: int = 64


@dataclass(frozen=True)
class TrainConfig:
    """Model width and the optimiser schedule (Adam, linear warm-up, cosine decay to final_lr_frac·lr)."""

    d_model: int = 32
    steps: int = 700
    batch: int = 32
    lr: float = 3e-2
    warmup: int = 100
    final_lr_frac: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-9
    emb_std: float = 0.5  # 1.0 stalls some seeds
    n_test: int = 2000
    test_seed: int = 20170612  # one fixed test set for every model (the paper's arXiv date)
    dtype: str = "float32"  # half the memory traffic of float64; the gradient check runs in float64


DEFAULT_TASK = Task()
DEFAULT_CONFIG = TrainConfig()


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def check_head_list(heads, cfg: TrainConfig) -> list[int]:
    """A non-empty list of distinct valid head counts."""
    if isinstance(heads, (str, bytes)) or not hasattr(heads, "__iter__"):
        raise ValueError(f"heads（头数列表）应是整数的列表，例如 (1, 2, 4, 8)，收到的是 {heads!r}。")
    heads = [validation.check_heads(cfg.d_model, h) for h in heads]
    if not heads:
        raise ValueError("heads（头数列表）是空的：请至少给一个头数，例如 heads=(1, 4, 32)。")
    if len(set(heads)) != len(heads):
        raise ValueError(f"头数列表里有重复：{heads}。每个头数只需出现一次。")
    return heads


def seed_list(seeds) -> list[int]:
    """``seeds`` as a list: a count n means seeds 0 … n−1; a list must hold non-negative integers."""
    if _is_int(seeds):
        if seeds < 1:
            raise ValueError(f"种子个数 seeds 至少为 1，收到的是 {seeds}。")
        return list(range(int(seeds)))
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(
            f"seeds 应是种子个数（正整数，例如 3）或种子列表（例如 [0, 1, 2]），收到的是 {seeds!r}。"
        )
    seeds = list(seeds)
    if not seeds:
        raise ValueError("种子列表为空：请至少给一个种子，例如 seeds=3 或 seeds=[0, 1, 2]。")
    bad = [s for s in seeds if not _is_int(s) or s < 0]
    if bad:
        raise ValueError(f"种子必须是非负整数（0、1、2……），种子列表 {seeds!r} 里的 {bad[0]!r} 不是。")
    return [int(s) for s in seeds]


def check_run(task: Task, cfg: TrainConfig) -> None:
    """Sizes and schedule a run can use; a Chinese error naming the field otherwise."""
    if not isinstance(task, Task):
        raise ValueError(f"task 应是 Task(...)（lesson_lib.models.toy.config），收到的是 {type(task).__name__}。")
    if not isinstance(cfg, TrainConfig):
        raise ValueError(f"cfg 应是 TrainConfig(...)（lesson_lib.models.toy.config），收到的是 {type(cfg).__name__}。")
    for name in ("T", "V", "K"):
        if not _is_int(getattr(task, name)):
            raise ValueError(f"Task.{name} 应是整数，收到的是 {getattr(task, name)!r}。")
    if task.T < 5 or task.K < task.T or task.V < 2:
        raise ValueError(
            f"任务太小：需要 T ≥ 5 个位置、K ≥ T 个键符号、V ≥ 2 种值，收到 T={task.T}、K={task.K}、V={task.V}。"
        )
    for name in ("d_model", "steps", "batch", "n_test", "warmup"):
        value = getattr(cfg, name)
        least = 0 if name == "warmup" else 1
        if not _is_int(value) or value < least:
            raise ValueError(f"TrainConfig.{name} 应是 ≥ {least} 的整数，收到的是 {value!r}。")
    if cfg.dtype not in DTYPES:
        raise ValueError(
            f"TrainConfig.dtype 只能是 {' 或 '.join(DTYPES)}，收到的是 {cfg.dtype!r}："
            "float16 的范围太小，Adam 的二阶矩会溢出，训练得不到有意义的结果。"
        )
    for name in ("lr", "eps", "emb_std"):
        value = getattr(cfg, name)
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"TrainConfig.{name} 应是正的有限数，收到的是 {value!r}。")
    for name, top in (("beta1", "< 1"), ("beta2", "< 1"), ("final_lr_frac", "≤ 1")):
        value = getattr(cfg, name)
        if not isinstance(value, (int, float)) or not (0 <= value < 1 or (top == "≤ 1" and value == 1)):
            raise ValueError(f"TrainConfig.{name} 应满足 0 ≤ {name} {top}，收到的是 {value!r}。")
