"""How long the core notebook takes a learner (issue 29: about 75 minutes), per section, from its sources.

Not a timing: a model whose every parameter is written here, so an estimate can be argued with.
- reading: Chinese characters of the Markdown at 300–400 a minute (350 for the total). Text inside folds a
  learner is told to open (answers, follow-ups) counts; the fold labelled 给好奇的你 is optional and does not;
- a code cell: 20 s to run it and read its output; +1 min if it shows source to read; +0.5 min for a figure;
  a widget to explore: 2 min; each 「试一试」 block: 1 min beside its widget or cell;
- a question (answer, then read the explanation): single choice 45 s, multiple choice 1 min, a form 1.5 min,
  free text 3 min; exercises: split_heads 5 min, the per-head loop 8, counting the multiplies 4; the interview 5.

    python benchmarks/run.py lesson_time
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")
RATES = (300, 350, 400)  # Chinese characters read per minute
CELL, SOURCE, FIGURE, WIDGET, TRY = 1 / 3, 1.0, 0.5, 2.0, 1.0  # minutes
QUESTION = {"single": 0.75, "multi": 1.0, "form": 1.5, "self": 3.0}
EXERCISE = {"split_heads": 5, "multi_head_attention_loop": 8, "count_multiplies": 4}
INTERVIEW = 5
WIDGETS = ("averaging_demo(", "head_lab(")


def _build_module():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def section(cells: list[dict]) -> dict:
    """One source file's characters (outside folds, in folds read) and minutes other than reading."""
    from lesson_lib.practice import questions

    md = "\n".join(c["source"] for c in cells if c["kind"] == "md")
    folds = re.findall(r"<details>.*?</details>", md, flags=re.S)
    read_folds = "".join(f for f in folds if "给好奇的你" not in f)
    outside = CJK.findall(re.sub(r"<details>.*?</details>", "", md, flags=re.S))
    doing = TRY * len(re.findall(r"\*\*试一试\*\*", md))
    for cell in (c["source"] for c in cells if c["kind"] == "code"):
        asked = re.findall(r'ask\("(\w+)"\)', cell)
        checked = re.findall(r'exercises\.check\("(\w+)"', cell)
        doing += sum(QUESTION[questions.question(q).kind] for q in asked) + sum(EXERCISE[e] for e in checked)
        if "interview_self_check()" in cell:
            doing += INTERVIEW
        elif any(w in cell for w in WIDGETS):
            doing += WIDGET
        elif not (asked or checked):
            shows_source = "show_source(" in cell or "formula_view(" in cell
            doing += CELL + SOURCE * shows_source + FIGURE * ("plt.show()" in cell)
    return {"cells": len(cells), "outside": len(outside), "folds": len(CJK.findall(read_folds)), "doing": doing}


def run() -> list[str]:
    build = _build_module()
    rows = {path.stem: section(build.parse_cells(path.read_text(encoding="utf-8"), path.name))
            for path in sorted(build.SRC.glob("*.md"))}
    mid = RATES[1]
    lines = [f"{'section':22} {'cells':>5} {'prose':>5} {'folds':>5} {'min':>5}"]
    for name, r in rows.items():
        lines.append(f"{name:22} {r['cells']:5} {r['outside']:5} {r['folds']:5} "
                     f"{(r['outside'] + r['folds']) / mid + r['doing']:5.1f}")
    chars = sum(r["outside"] + r["folds"] for r in rows.values())
    doing = sum(r["doing"] for r in rows.values())
    lines.append(f"{sum(r['cells'] for r in rows.values())} cells; prose outside folds "
                 f"{sum(r['outside'] for r in rows.values()):,} Chinese characters (goal ≤ 6,000)")
    lines.append("estimate: " + ", ".join(f"{chars / rate + doing:.0f} min at {rate} chars/min" for rate in RATES)
                 + " (goal ≈ 75)")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
