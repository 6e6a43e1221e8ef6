"""The lesson-time estimator follows the instructor's model (issue 40): each kind of cell, in a tiny synthetic
notebook, costs the minutes the model gives it, in class or after class (cells tagged ``homework``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_lesson_time", ROOT / "benchmarks" / "bench_lesson_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def md(text, tags=()):
    return {"cell_type": "markdown", "source": text, "metadata": {"tags": list(tags)}}


def code(source, outputs=(), tags=()):
    return {"cell_type": "code", "source": source, "outputs": list(outputs), "metadata": {"tags": list(tags)}}


def stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def minutes(bench, *cells):
    """In-class and after-class minutes of a notebook made of one section holding ``cells``."""
    title = "1 节"
    sections = bench.estimate({"cells": [md(f"## {title}"), *cells]})
    assert list(sections) == [title]
    return sections[title]["class"] - 1 / 350, sections[title]["home"]  # less the heading's one 字 (节)


HAN = "字"


@pytest.mark.parametrize("cell, expected", [
    (md(HAN * 700), 2.0),  # prose: 350 字 a minute
    (md("<details><summary>答案</summary>" + HAN * 350 + "</details>"), 1.0 + 2 / 350),  # a fold is read
    (md("<details><summary>给好奇的你</summary>" + HAN * 350 + "</details>"), 0.0),  # … unless for the curious
    (md("**试一试**"), 1.5 + 3 / 350),
    (code("x = 1"), 0.25),  # a plain cell
    (code("print(1)", [stream(HAN * 500)]), 0.25 + 2.0),  # output text: 250 字 a minute
    (code("show_source(f)"), 0.25 + 1.5),  # a cell that shows source
    (code("plot()", [{"output_type": "display_data", "data": {"image/png": ""}}]), 0.25 + 0.5),  # one figure
    (code("head_lab.lab_widget()"), 3.0),
    (code('ask("S6")'), 1.25),  # single choice
    (code('ask("S2")'), 1.75),  # multiple choice
    (code('ask("S3")'), 2.0),  # a form
    (code('ask("Q1")'), 4.0),  # free text
    (code('exercises.check("split_heads", f)'), 6.5),
    (code('exercises.check("multi_head_attention_loop", f)'), 12.5),
    (code('exercises.check("count_multiplies", f)'), 6.5),
    (code("interview_self_check()"), 8.0),
])
def test_each_kind_costs_the_models_minutes(bench, cell, expected):
    in_class, home = minutes(bench, cell)
    assert in_class == pytest.approx(expected) and home == 0


def test_a_homework_cell_counts_after_class(bench):
    in_class, home = minutes(bench, code('exercises.check("multi_head_attention_loop", f)', tags=["homework"]))
    assert in_class == pytest.approx(0) and home == pytest.approx(12.5)


def test_sections_split_at_level_2_headings(bench):
    first, second = "0 导读", "1 起点"
    nb = {"cells": [md(f"# 标题\n\n## {first}"), code("x = 1"), md("### 小节"), md(f"## {second}"), code("y = 2")]}
    assert list(bench.estimate(nb)) == [first, second]  # the level-2 headings, as written


def test_the_stored_core_fits_one_class(bench):
    """By the model, the built core takes at most 75 minutes in class and at most 30 after (issue 40)."""
    import json

    in_class, home = bench.totals(bench.estimate(json.loads(bench.NOTEBOOK.read_text(encoding="utf-8"))))
    assert in_class <= 75 and 0 < home <= 30


def test_the_teaching_plan_shows_what_the_model_computes(bench):
    """docs/teaching.md's time plan: each section's row, the totals and the minutes left in class are the
    figures `python benchmarks/run.py lesson_time` prints for the stored core (one decimal, as it prints)."""
    import json
    import re

    sections = bench.estimate(json.loads(bench.NOTEBOOK.read_text(encoding="utf-8")))
    by_number = {title.split()[0]: row for title, row in sections.items()}
    plan = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) [^|]*\|\s*([\d.]+)\s*\|\s*([\d.]*)\s*\|", plan, flags=re.M)
    assert [number for number, _, _ in rows] == list(by_number)  # every section once, in order
    for number, in_class, home in rows:
        assert in_class == f"{by_number[number]['class']:.1f}", number
        assert (home or "0.0") == f"{by_number[number]['home']:.1f}", number
    in_class, home = bench.totals(sections)
    total_row = re.search(r"^\| \*\*[^|*]+\*\* \| \*\*([\d.]+)\*\* \| \*\*([\d.]+)\*\* \|", plan, flags=re.M)
    assert total_row.groups() == (f"{in_class:.1f}", f"{home:.1f}")
    # the paragraph under the table: the class total, the class's 75 minutes, what is left of them
    after = plan[total_row.end():].split("\n\n")[1]
    said_total, class_minutes, left = re.findall(r"\d+(?:\.\d+)?", after)[:3]
    assert (said_total, float(class_minutes)) == (f"{in_class:.1f}", 75)
    assert left == f"{75 - in_class:.1f}"
