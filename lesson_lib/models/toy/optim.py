"""Adam with the paper's β₂ = 0.98 and ε = 1e-9, and its learning-rate schedule (warm-up, then cosine decay)."""

import math

import numpy as np

from lesson_lib.models.toy.config import TrainConfig


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay from lr to final_lr_frac·lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.final_lr_frac + (1 - cfg.final_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


class Adam:
    """Adam on one flat (S, P) buffer: every parameter of every model in a handful of whole-array operations."""

    def __init__(self, flat: np.ndarray, cfg: TrainConfig):
        self.flat, self.cfg, self.m, self.s = flat, cfg, np.zeros_like(flat), np.zeros_like(flat)

    def step(self, grad: np.ndarray, step: int) -> None:
        """Update ``flat`` in place from ``grad`` (same shape) at 0-based ``step``."""
        cfg = self.cfg
        self.m = self.m * cfg.beta1 + grad * (1 - cfg.beta1)  # first moment
        self.s = self.s * cfg.beta2 + grad * grad * (1 - cfg.beta2)  # second moment
        c1, c2 = 1 - cfg.beta1 ** (step + 1), 1 - cfg.beta2 ** (step + 1)  # bias corrections
        self.flat -= self.m / (np.sqrt(self.s) * (1 / math.sqrt(c2)) + cfg.eps) * (learning_rate(step, cfg) / c1)
