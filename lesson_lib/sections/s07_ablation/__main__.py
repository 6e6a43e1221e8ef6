"""``python -m lesson_lib.sections.s07_ablation``: train the lab's sweep again and store it as toy_sweep.json."""
from lesson_lib.models.toy.sweeping import sweep
from lesson_lib.sections.s07_ablation.report import STORED_SEEDS, STORED_SWEEP, format_table, store_sweep

result = sweep(heads=(1, 2, 4, 8, 16, 32), seeds=STORED_SEEDS)
store_sweep(result)
print(format_table(result.results), f"\nwrote {STORED_SWEEP}")
