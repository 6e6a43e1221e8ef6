"""Task and TrainConfig, what one run of §7's toy ablation is set by, and their Chinese checks."""

from dataclasses import dataclass

import numpy as np

from lesson_lib.checks import (
    LessonInputError,
    LessonInputTypeError,
    check_choice,
    check_heads,
    check_int,
    check_number,
)

TARGETS = ("prev", "next", "match")


@dataclass(frozen=True)
class Task:
    """T positions, V values, K key symbols; K ≫ h, or a d_k = 1 head survives serving one key."""

    T: int = 12
    V: int = 8
    K: int = 64


@dataclass(frozen=True)
class TrainConfig:
    """Model width and Adam's schedule: warm-up, then cosine decay (training.learning_rate)."""

    d_model: int = 32
    steps: int = 700
    batch: int = 32
    lr: float = 3e-2
    warmup: int = 100
    n_test: int = 2000
    dtype: str = "float32"  # half the memory traffic of float64; the gradient check runs in float64


EMB_STD = 0.5  # the embeddings' initial scale; 1.0 stalls some seeds
TEST_SEED = 20170612  # one fixed test set for every model (the paper's arXiv date)
DEFAULT_TASK = Task()
DEFAULT_CONFIG = TrainConfig()


def _int_list(values, name, example) -> list:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise LessonInputTypeError(f"{name} 应是整数的列表，例如 {example}，收到的是 {values!r}。")
    values = list(values)
    if not values:
        raise LessonInputError(f"{name} 是空的：请至少给一个，例如 {example}。")
    return values


def check_sweep(heads, seeds, task: Task, cfg: TrainConfig) -> tuple[list[int], list[int]]:
    """``heads`` and ``seeds`` as lists (a seed count n means seeds 0 … n−1), once every setting is
    one a run can use; a Chinese error naming the field otherwise."""
    for value, name, kind in ((task, "task", Task), (cfg, "cfg", TrainConfig)):
        if not isinstance(value, kind):
            raise LessonInputTypeError(f"{name} 应是 {kind.__name__}(...)（lesson_lib.models.toy"
                                       f".config），收到的是 {type(value).__name__}。")
    T, V, K = (check_int(getattr(task, name), f"Task.{name}", minimum=1) for name in "TVK")
    if T < 5 or K < T or V < 2:
        raise LessonInputError("任务太小：需要 T ≥ 5 个位置、K ≥ T 个键符号、V ≥ 2 种值，收到 "
                               f"T={T}、K={K}、V={V}。")
    for name in ("d_model", "steps", "batch", "n_test", "warmup"):
        check_int(getattr(cfg, name), f"TrainConfig.{name}", minimum=0 if name == "warmup" else 1)
    check_choice(cfg.dtype, "TrainConfig.dtype", ("float32", "float64"),
                 "（float16 的范围太小，Adam 的二阶矩会溢出）")
    if check_number(cfg.lr, "TrainConfig.lr", minimum=0) == 0:
        raise LessonInputError("TrainConfig.lr 不能等于 0：学习率为 0 时训练不动。")
    heads = [check_heads(cfg.d_model, h)
             for h in _int_list(heads, "heads（头数列表）", "heads=(1, 4, 32)")]
    if len(set(heads)) != len(heads):
        raise LessonInputError(f"heads（头数列表）里有重复：{heads}。每个头数只需出现一次。")
    if isinstance(seeds, (int, np.integer)):
        return heads, list(range(check_int(seeds, "种子个数 seeds", minimum=1)))
    seeds = _int_list(seeds, "seeds（种子个数或列表）", "seeds=3 或 seeds=[0, 1, 2]")
    return heads, [check_int(s, "seeds 里的种子", minimum=0) for s in seeds]
