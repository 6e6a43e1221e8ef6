"""§7 evidence: tiny one-layer multi-head models, trained in NumPy, reproduce the SHAPE of Table 3 (A).

One module per idea:

- ``config``   — ``Task`` and ``TrainConfig``, and the checks of every argument
- ``task``     — the 3-lookup task: prev, next and match live in three different places
- ``model``    — embeddings -> one multi-head attention layer (the lesson's kernel) -> read-out,
  and its hand-written backward pass
- ``optim``    — Adam and the learning-rate schedule
- ``training`` — training one head count (all seeds at once) and its test accuracy
- ``sweeping`` — every head count in worker processes, stopped at once by an interrupt
- ``report``   — what §7 prints, at a precision that is the same on every machine
- ``cli``      — ``python -m lesson_lib.ablation --heads 1,2,4,8,16,32 --seeds 3 [--json]``

With d_model fixed, more heads means narrower heads, and a head of width d_k = 1 scores keys with
a scalar product, which cannot single out a key in the middle of the range: too many heads hurts again.
"""

from . import cli, model
from .config import TARGETS, Task, TrainConfig
from .model import attention_maps, init_params, loss_and_grads
from .optim import learning_rate
from .report import (
    ROLE_NAMES,
    accuracy_numbers_text,
    crowded_keys,
    crowded_keys_text,
    diversity,
    diversity_numbers_text,
    diversity_text,
    format_table,
    heads_on_targets,
    main_roles,
    monotone_score_text,
    specialisation_text,
    timing_text,
    weight_on_targets,
    weights_numbers_text,
)
from .sweeping import SweepInterrupted, SweepResult, interrupted_result, sweep
from .task import Batch, held_out_data, make_batch, training_data
from .training import accuracy, example_heads, train

__all__ = [
    "cli", "model",
    "TARGETS", "Task", "TrainConfig", "Batch", "make_batch", "training_data", "held_out_data",
    "init_params", "loss_and_grads", "attention_maps", "learning_rate", "train", "accuracy", "example_heads",
    "SweepResult", "SweepInterrupted", "sweep", "interrupted_result",
    "format_table", "accuracy_numbers_text", "timing_text", "weight_on_targets", "heads_on_targets",
    "specialisation_text", "weights_numbers_text", "crowded_keys", "crowded_keys_text",
    "main_roles", "ROLE_NAMES", "diversity", "diversity_text", "diversity_numbers_text", "monotone_score_text",
]
