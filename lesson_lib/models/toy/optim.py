"""Adam with the paper's β₂ = 0.98 and ε = 1e-9, and its learning-rate schedule (warm-up, then cosine decay)."""

import math

import numpy as np

from lesson_lib.models.toy.config import TrainConfig

BETA1, BETA2, EPS = 0.9, 0.98, 1e-9  # the paper's (§5.3)
FINAL_LR_FRAC = 0.1  # the schedule ends at a tenth of lr


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay from lr to FINAL_LR_FRAC·lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (FINAL_LR_FRAC + (1 - FINAL_LR_FRAC) * 0.5 * (1 + math.cos(math.pi * progress)))


class Adam:
    """Adam on a dict of (S, …) arrays, updated in place."""

    def __init__(self, params: dict, cfg: TrainConfig):
        self.params, self.cfg = params, cfg
        self.m = {name: np.zeros_like(p) for name, p in params.items()}  # first moments
        self.s = {name: np.zeros_like(p) for name, p in params.items()}  # second moments

    def step(self, grads: dict, step: int) -> None:
        """Update every parameter from its gradient at 0-based ``step``."""
        c1, c2 = 1 - BETA1 ** (step + 1), 1 - BETA2 ** (step + 1)  # bias corrections
        rate = learning_rate(step, self.cfg) / c1
        for name, grad in grads.items():
            self.m[name] = self.m[name] * BETA1 + grad * (1 - BETA1)
            self.s[name] = self.s[name] * BETA2 + grad * grad * (1 - BETA2)
            self.params[name] -= self.m[name] / (np.sqrt(self.s[name]) * (1 / math.sqrt(c2)) + EPS) * rate
