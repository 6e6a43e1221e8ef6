"""`python scripts/store_toy_sweep.py` (maintainers): train the lab's sweep again, store it as §7's toy_sweep.json."""
import json
from dataclasses import asdict

from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK
from lesson_lib.models.toy.sweeping import sweep
from lesson_lib.sections.s07_ablation.report import STORED_SEEDS, STORED_SWEEP, format_table

result = sweep(heads=(1, 2, 4, 8, 16, 32), seeds=STORED_SEEDS)
data = {"results": result.results, "seeds": STORED_SEEDS, "task": asdict(DEFAULT_TASK), "train": asdict(DEFAULT_CONFIG)}
STORED_SWEEP.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(format_table(result.results), f"\nwrote {STORED_SWEEP}")
