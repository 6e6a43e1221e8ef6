"""The README's measured figures: stated once in Chinese and once in English, the same numbers, with the date and
the command that measures them all (``python benchmarks/run.py readme``, benchmarks/bench_readme.py)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMAND = "benchmarks/run.py readme"
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _block(start: str, end: str) -> str:
    assert README.count(start) == 1, f"README states {start!r} {README.count(start)} times"
    at = README.index(start)
    return README[at : README.index(end, at + len(start))]


def test_both_languages_state_the_same_figures_with_date_and_command():
    chinese = _block("**实测数字**", "\n\n**")  # the paragraph and its table, up to the next bold heading
    english = _block("- Measured figures", "\n- ")
    for block in (chinese, english):
        assert COMMAND in block and re.search(r"\d{4}-\d{2}-\d{2}", block)
    assert sorted(set(NUMBER.findall(chinese))) == sorted(set(NUMBER.findall(english)))
    assert len(set(NUMBER.findall(chinese))) >= 8  # date (3), cores, setup (2), tests, fast set, run all (2)



def test_the_hub_benchmark_figures_are_the_same_in_both_languages():
    """The classroom benchmark's figures (benchmarks/classroom.py), dated, with the command that measured them."""
    command = "benchmarks/classroom.py --students 8 --lesson-cpus 1"
    chinese = _block("在本仓库的 2 核、24 GB 开发机上，用", "课程在第 0 节")
    english = _block("  Measured with `benchmarks/classroom.py", "Rule of thumb")
    for block in (chinese, english):
        assert command in block and re.search(r"\d{4}-\d{2}-\d{2}", block)
    assert sorted(set(NUMBER.findall(chinese))) == sorted(set(NUMBER.findall(english)))
    assert len(set(NUMBER.findall(chinese))) >= 20  # date, cells, load, wall times, CPU-s, memory, latencies
