"""The sweep over head counts, in this process: Jupyter's ■ or Ctrl-C becomes ``SweepInterrupted``,
which keeps the head counts that finished; ``progress(done, total)`` gets the training steps done,
for a progress bar."""

from collections import namedtuple

from lesson_lib.models.toy.config import (
    DEFAULT_CONFIG,
    DEFAULT_TASK,
    TARGETS,
    Task,
    TrainConfig,
    check_sweep,
)
from lesson_lib.models.toy.training import train_and_score

# One row per head count (JSON-ready), and the trained parameters keyed by h (for the plots).
SweepResult = namedtuple("SweepResult", "results params")


class SweepInterrupted(KeyboardInterrupt):
    """The sweep was interrupted; ``result`` holds the head counts that finished (possibly none)."""

    def __init__(self, result: SweepResult, missing: list):
        self.result = result
        self.missing = missing
        done = [r["h"] for r in result.results]
        finished = "还没有哪个头数训练完"
        if done:
            finished = f"已经训练完的头数：{done}（在这个异常的 .result 里）"
        super().__init__(f"训练被中断了。{finished}；没训练完的头数：{missing}。")


def sweep(heads=(1, 2, 4, 8, 16, 32), seeds=3, task: Task = DEFAULT_TASK,
          cfg: TrainConfig = DEFAULT_CONFIG, progress=None) -> SweepResult:
    """Train ``seeds`` (a count or a list) models for every h in ``heads``, scored on the fixed test
    set; ``accuracy_mean`` / ``accuracy_sd`` (None for one seed): over seeds, of 3 targets' mean."""
    heads, seeds = check_sweep(heads, seeds, task, cfg)
    outcomes = {}
    try:
        for i, h in enumerate(heads):
            report = None if progress is None else (
                lambda steps, i=i: progress(i * cfg.steps + steps, len(heads) * cfg.steps))
            outcomes[h] = train_and_score(h, seeds, task, cfg, progress=report)
    except KeyboardInterrupt:
        raise SweepInterrupted(_result(outcomes, cfg), heads[len(outcomes) :]) from None
    return _result(outcomes, cfg)


def _result(outcomes, cfg) -> SweepResult:
    rows = []
    for h, (_, acc) in outcomes.items():
        per_seed = acc.mean(axis=1)  # (S,) mean over the three targets
        sd = round(float(per_seed.std(ddof=1)), 4) if len(per_seed) > 1 else None
        rows.append({"h": h, "d_k": cfg.d_model // h,
                     "accuracy_mean": round(float(per_seed.mean()), 4),
                     "accuracy_sd": sd,
                     "per_target": {t: round(float(acc[:, i].mean()), 4)
                                    for i, t in enumerate(TARGETS)},
                     "accuracy_per_seed": [round(float(a), 4) for a in per_seed]})
    return SweepResult(rows, {h: params for h, (params, _) in outcomes.items()})
