"""How long the core notebook takes a self-paced learner, per section, in class and after class (issue 40).

Not a timing: the instructor's model (lesson review §3), at the midpoint of each of its ranges, read from the
BUILT notebook (its stored outputs are part of what a learner reads). Every parameter is written here:
- reading: Chinese characters of the Markdown at 350 a minute, folds included (a learner is told to open
  them), except a fold labelled 给好奇的你 (for the curious); Chinese characters of the stored outputs at 250;
- a plain code cell: 15 s; +1.5 min when it shows source to read; +0.5 min for each figure it draws;
- a widget to explore: 3 min; each 「试一试」: 1.5 min;
- a question with its explanation: single choice 1.25 min, multiple 1.75, a form 2, free text 4;
- exercises: split_heads 6.5 min, the per-head loop 12.5, counting the multiplies 6.5; the interview 8.
A cell tagged ``homework`` counts after class (课后), every other cell in class.

    python benchmarks/run.py lesson_time
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"
CJK = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]")
PROSE_RATE, OUTPUT_RATE = 350, 250  # Chinese characters read per minute
CELL, SOURCE, FIGURE = 0.25, 1.5, 0.5  # minutes: run a plain cell, read its source, look at one figure
WIDGET, TRY = 3.0, 1.5
QUESTION = {"single": 1.25, "multi": 1.75, "form": 2.0, "self": 4.0}
EXERCISE = {"split_heads": 6.5, "multi_head_attention_loop": 12.5, "count_multiplies": 6.5}
INTERVIEW = 8.0
WIDGETS = ("averaging.demo_widget(", "head_lab.lab_widget(")  # §2 and §5, as their cells call them
SHOWS_SOURCE = ("show_source(", "formula_view(")
CURIOUS = "给好奇的你"
HOMEWORK = "homework"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts = []

    def handle_data(self, data):
        self.parts.append(data)


def _html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "".join(parser.parts)


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def prose_chars(markdown: str) -> int:
    """Chinese characters a learner reads in a Markdown cell: all of it but the folds for the curious."""
    folds = re.findall(r"<details>.*?</details>", markdown, flags=re.S)
    skipped = sum(len(CJK.findall(f)) for f in folds if CURIOUS in f)
    return len(CJK.findall(markdown)) - skipped


def output_chars(cell: dict) -> int:
    """Chinese characters of a code cell's stored outputs: the text a learner reads (one MIME type each)."""
    total = 0
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            total += len(CJK.findall(_joined(output.get("text"))))
            continue
        data = output.get("data", {})
        if WIDGET_MIME in data:
            continue  # a widget's time is WIDGET or its question's, not its placeholder text
        if "text/html" in data:
            total += len(CJK.findall(_html_text(_joined(data["text/html"]))))
        elif "text/plain" in data:
            total += len(CJK.findall(_joined(data["text/plain"])))
    return total


def figures(cell: dict) -> int:
    """Figures a code cell shows: image outputs and inline SVG pictures."""
    count = 0
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if any(mime.startswith("image/") for mime in data):
            count += 1
        elif "<svg" in _joined(data.get("text/html")):
            count += 1
    return count


def doing_minutes(source: str, cell: dict) -> float:
    """Minutes of running, exploring, answering in one code cell (reading its outputs is counted apart)."""
    from lesson_lib.practice import questions

    asked = re.findall(r'\bask\("(\w+)"\)', source)
    checked = re.findall(r'exercises\.check\("(\w+)"', source)
    minutes = sum(QUESTION[questions.question(q).kind] for q in asked)
    minutes += sum(EXERCISE[e] for e in checked)
    if "interview_self_check()" in source:
        return minutes + INTERVIEW
    if any(w in source for w in WIDGETS):
        return minutes + WIDGET
    if asked or checked:
        return minutes
    shows_source = any(s in source for s in SHOWS_SOURCE)
    return CELL + SOURCE * shows_source + FIGURE * figures(cell)


def cell_minutes(cell: dict) -> float:
    source = _joined(cell.get("source"))
    if cell["cell_type"] == "markdown":
        return prose_chars(source) / PROSE_RATE + TRY * len(re.findall(r"\*\*试一试\*\*", source))
    if cell["cell_type"] != "code":
        return 0.0
    return output_chars(cell) / OUTPUT_RATE + doing_minutes(source, cell)


def estimate(nb: dict) -> dict[str, dict[str, float]]:
    """{section title: {'class': minutes, 'home': minutes}} in notebook order; a section opens at '## '."""
    sections: dict[str, dict[str, float]] = {}
    title = "（开头）"
    for cell in nb["cells"]:
        source = _joined(cell.get("source"))
        heading = re.search(r"^## (.+)$", source, flags=re.M) if cell["cell_type"] == "markdown" else None
        if heading:
            title = heading.group(1).strip()
        where = "home" if HOMEWORK in cell.get("metadata", {}).get("tags", []) else "class"
        row = sections.setdefault(title, {"class": 0.0, "home": 0.0})
        row[where] += cell_minutes(cell)
    return sections


def totals(sections: dict[str, dict[str, float]]) -> tuple[float, float]:
    return (sum(r["class"] for r in sections.values()), sum(r["home"] for r in sections.values()))


def run(path: Path = NOTEBOOK) -> list[str]:
    sections = estimate(json.loads(path.read_text(encoding="utf-8")))
    lines = [f"{'section':34} {'课上 min':>8} {'课后 min':>8}"]
    for title, row in sections.items():
        lines.append(f"{title[:32]:34} {row['class']:8.1f} {row['home']:8.1f}")
    in_class, home = totals(sections)
    lines.append(f"{'total':34} {in_class:8.1f} {home:8.1f}   (goal: ≤ 75 in class, ≤ 30 after class)")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
