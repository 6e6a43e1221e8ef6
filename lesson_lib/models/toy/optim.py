"""Adam with the paper's β₂ = 0.98 and ε = 1e-9, and its learning-rate schedule (warm-up, then
cosine decay)."""

import math

import numpy as np

from lesson_lib.models.toy.config import TrainConfig

BETA1 = 0.9
BETA2 = 0.98
EPS = 1e-9  # the paper's (§5.3)
FINAL_LR_FRAC = 0.1  # the schedule ends at a tenth of lr


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay from lr to FINAL_LR_FRAC·lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (FINAL_LR_FRAC + (1 - FINAL_LR_FRAC) * 0.5 * (1 + math.cos(math.pi * progress)))


class Adam:
    """Adam on a dict of (S, …) arrays, updated in place. They become views of one flat buffer:
    a step is a few operations on every number at once, not a few per parameter."""

    def __init__(self, params: dict, cfg: TrainConfig):
        self.cfg = cfg
        self.names = list(params)
        self.flat = np.concatenate([p.ravel() for p in params.values()])  # (n,) every parameter
        start = 0
        for name, p in params.items():
            params[name] = self.flat[start : start + p.size].reshape(p.shape)  # a view of flat
            start += p.size
        self.m = np.zeros_like(self.flat)  # (n,) first moments
        self.s = np.zeros_like(self.flat)  # (n,) second moments

    def step(self, grads: dict, step: int) -> None:
        """Update every parameter from its gradient at 0-based ``step``."""
        c1 = 1 - BETA1 ** (step + 1)
        c2 = 1 - BETA2 ** (step + 1)  # bias corrections
        rate = learning_rate(step, self.cfg) / c1
        grad = np.concatenate([grads[name].ravel() for name in self.names])  # (n,) in flat's order
        self.m = self.m * BETA1 + grad * (1 - BETA1)
        self.s = self.s * BETA2 + grad * grad * (1 - BETA2)
        self.flat -= self.m / (np.sqrt(self.s) * (1 / math.sqrt(c2)) + EPS) * rate
