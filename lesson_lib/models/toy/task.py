"""The 3-lookup task: position i outputs the values of its left neighbour, its right neighbour and
the position whose key is its query tag. One attention distribution sits on one of them or averages
them (§2); h heads take one each."""

import functools
from dataclasses import dataclass, fields

import numpy as np

from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK, TEST_SEED, Task, TrainConfig


@dataclass(frozen=True)
class Batch:
    """3-lookup sequences; arrays lead with (S, B) = (seeds, sequences); S may be 1 (shared)."""

    values: np.ndarray  # (S, B, T) int  value v_i in [0, V)
    keys: np.ndarray  # (S, B, T) int  key k_i in [0, K), distinct within a sequence
    queries: np.ndarray  # (S, B, T) int  query tag q_i = k_ptr(i)
    pointers: np.ndarray  # (S, B, T) int  ptr(i): never i−1, i or i+1
    targets: np.ndarray  # (S, B, T, 3) int  (prev, next, match) values
    mask: np.ndarray  # (S, B, T, 3) float  0 where a target does not exist (prev at 0, next at T−1)

    def rows(self, index) -> "Batch":
        return Batch(*(getattr(self, f.name)[:, index] for f in fields(self)))


def make_batch(rngs, n: int, task: Task) -> Batch:
    """``n`` fresh sequences per generator in ``rngs`` (one per seed: S = len(rngs))."""
    T = task.T
    parts = []
    for rng in rngs:
        values = rng.integers(0, task.V, size=(n, T))
        keys = np.argsort(rng.random((n, task.K)), axis=1)[:, :T]  # (n, T) T distinct of K keys
        offsets = rng.integers(0, T - 3, size=(n, T))  # (n, T) U{0..T−4}
        pointers = (np.arange(T) + 2 + offsets) % T  # (n, T) i+2 … i+T−2 (mod T)
        queries = np.take_along_axis(keys, pointers, axis=1)  # (n, T) the key at ptr(i)
        parts.append((values, keys, queries, pointers))
    values, keys, queries, pointers = (np.stack(arrays) for arrays in zip(*parts))  # (S, n, T) each
    matches = np.take_along_axis(values, pointers, axis=-1)
    # (S, n, T, 3) ends masked out below
    targets = np.stack([np.roll(values, 1, axis=-1), np.roll(values, -1, axis=-1), matches], -1)
    mask = np.ones(targets.shape)
    mask[:, :, 0, 0] = 0.0  # position 0 has no left neighbour
    mask[:, :, T - 1, 1] = 0.0  # position T−1 has no right neighbour
    return Batch(values, keys, queries, pointers, targets, mask)


def training_data(seeds, task: Task, cfg: TrainConfig) -> Batch:
    """Every seed's training sequences (its stream 1), (S, steps·batch, T), shared by every h."""
    return _cached(tuple((seed, 1) for seed in seeds), task, cfg.steps * cfg.batch)


def held_out_data(task: Task = DEFAULT_TASK, cfg: TrainConfig = DEFAULT_CONFIG) -> Batch:
    """The fixed test set: ``cfg.n_test`` sequences from ``TEST_SEED``, shape (1, n_test, T)."""
    return _cached((TEST_SEED,), task, cfg.n_test)


@functools.lru_cache(maxsize=8)
def _cached(rng_seeds, task, n):
    data = make_batch([np.random.default_rng(seed) for seed in rng_seeds], n, task)
    for f in fields(data):
        # generated once per process and shared: nobody may change it
        getattr(data, f.name).flags.writeable = False
    return data
