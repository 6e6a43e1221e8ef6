"""§7's toy model: tiny one-layer multi-head models, trained in NumPy, reproduce the SHAPE of Table 3 (A).

- ``config``   — ``Task`` and ``TrainConfig``, and the checks of every argument
- ``task``     — the 3-lookup task: prev, next and match live in three different places
- ``model``    — embeddings -> one multi-head attention layer (the lesson's kernel) -> read-out,
  and its hand-written backward pass
- ``optim``    — Adam and the learning-rate schedule
- ``training`` — training one head count (all seeds at once) and its test accuracy
- ``sweeping`` — every head count of the sweep

What §7 prints and draws from these, and its command line, live in ``lesson_lib.sections.s07_ablation``.
With d_model fixed, more heads means narrower heads, and a head of width d_k = 1 scores keys with
a scalar product, which cannot single out a key in the middle of the range: too many heads hurts again.
"""
