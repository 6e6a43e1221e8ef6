"""`python scripts/store_toy_sweep.py` (maintainers): train the lab's sweep again, store it as §7's toy_sweep.json,
and seed 0's trained weights (the models the lab draws) as tests/fixtures/toy_sweep_params.npz: the fast tests read
them instead of training."""
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK
from lesson_lib.models.toy.sweeping import sweep
from lesson_lib.sections.s07_ablation.report import STORED_SEEDS, STORED_SWEEP, format_table

PARAMS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "toy_sweep_params.npz"

result = sweep(heads=(1, 2, 4, 8, 16, 32), seeds=STORED_SEEDS)
data = {"results": result.results, "seeds": STORED_SEEDS, "task": asdict(DEFAULT_TASK), "train": asdict(DEFAULT_CONFIG)}
STORED_SWEEP.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
weights = {f"{name}@{h}": p[:1] for h, params in result.params.items() for name, p in params.items()}  # (1, ...)
np.savez_compressed(PARAMS, **weights)
print(format_table(result.results), f"\nwrote {STORED_SWEEP} and {PARAMS}")
