"""Training one model per seed for a head count with Adam, and scoring it on the fixed test set."""

import math

import numpy as np

from lesson_lib.models.toy import model
from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK, Task, TrainConfig
from lesson_lib.models.toy.task import Batch, held_out_data, training_data
from lesson_lib.runtime.blas import one_blas_thread

BETA1 = 0.9
BETA2 = 0.98  # the paper's, as is EPS (§5.3)
EPS = 1e-9
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

# Identical runs give identical models: each (h, seeds, task, cfg) is trained once per process
# (re-running the lab's training cell costs nothing). A run's models take tens of KB.
_FINISHED: dict = {}


def train(h: int, seeds, task: Task, cfg: TrainConfig, progress=None) -> dict:
    """(S, …) params of one h-head model per seed (``sweep`` checks the arguments)."""
    params = model.init_params(seeds, task, cfg)  # {name: (S, *shape)}
    adam = Adam(params, cfg)
    data = training_data(seeds, task, cfg)
    for step in range(cfg.steps):
        batch = data.rows(slice(step * cfg.batch, (step + 1) * cfg.batch))
        adam.step(model.loss_and_grads(params, batch, h, task)[1], step)
        if progress is not None and ((step + 1) % 25 == 0 or step + 1 == cfg.steps):
            progress(step + 1)
    return params


def accuracy(params, h: int, data: Batch, task: Task = DEFAULT_TASK) -> np.ndarray:
    """Fraction of existing targets predicted right: (S, 3) for prev, next, match."""
    correct = 0
    # (S, 100, h, T, T) weights: 2/3 the CPU of 250
    for start in range(0, data.values.shape[1], 100):
        part = data.rows(slice(start, start + 100))
        logits, _ = model.forward(params, part, h, task)  # (S, b, T, 3, V)
        right = (logits.argmax(axis=-1) == part.targets) * part.mask  # (S, b, T, 3)
        correct = correct + right.sum(axis=(1, 2))  # (S, 3)
    return correct / data.mask.sum(axis=(1, 2))  # (S, 3) / (1 or S, 3) targets that exist


def train_and_score(h: int, seeds, task: Task, cfg: TrainConfig,
                    progress=None) -> tuple[dict, np.ndarray]:
    """(params, (S, 3) test accuracy) of one head count, trained once per process."""
    key = (h, tuple(seeds), task, cfg)
    if key not in _FINISHED:
        # a product split over threads on a busy 2-core machine waits: 6× the CPU time
        with one_blas_thread():
            params = train(h, seeds, task, cfg, progress=progress)
            acc = accuracy(params, h, held_out_data(task, cfg), task)  # (S, 3)
        for array in (*params.values(), acc):
            array.flags.writeable = False  # shared by every caller of an identical run
        _FINISHED[key] = (params, acc)
    elif progress is not None:
        progress(cfg.steps)
    return _FINISHED[key]


def example_heads(h: int, seed: int, task: Task = DEFAULT_TASK, cfg: TrainConfig = DEFAULT_CONFIG):
    """Maps (h, T, T) of an h-head model on held-out sequence 0: §6's stand-in for its weights."""
    params, _ = train_and_score(h, [seed], task, cfg)
    first = held_out_data(task, cfg).rows(slice(0, 1))
    return model.attention_maps(params, h, first, 0, task)[0].copy()
