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
        self.flat, self.cfg = flat, cfg
        self.m, self.s, self.tmp = np.zeros_like(flat), np.zeros_like(flat), np.empty_like(flat)

    def step(self, grad: np.ndarray, step: int) -> None:
        """Update ``flat`` in place from ``grad`` (same shape) at 0-based ``step``."""
        cfg, m, s, tmp = self.cfg, self.m, self.s, self.tmp
        np.multiply(grad, 1 - cfg.beta1, out=tmp)
        m *= cfg.beta1
        m += tmp  # first moment
        np.multiply(grad, grad, out=tmp)
        tmp *= 1 - cfg.beta2
        s *= cfg.beta2
        s += tmp  # second moment
        c1, c2 = 1 - cfg.beta1 ** (step + 1), 1 - cfg.beta2 ** (step + 1)  # bias corrections
        np.sqrt(s, out=tmp)
        tmp *= 1 / math.sqrt(c2)
        tmp += cfg.eps
        np.divide(m, tmp, out=tmp)
        tmp *= learning_rate(step, cfg) / c1
        self.flat -= tmp
