"""Every bold or italic span in the lesson's Markdown renders as its source meant (a learner review, round 14).

CommonMark closes `**` only when the delimiter is right-flanking: after a CJK bracket such as 「）」 it must be
followed by a space or punctuation, so `**第 5 层（共 6 层）**的` stays open and the paragraph turns bold up to
the next `**`. JupyterLab (marked) follows the same flanking rules; markdown-it-py (a CommonMark parser that
jupytext already installs, pinned in constraints.txt) renders each Markdown cell here, math removed first as
JupyterLab does. A span that went wrong leaves a literal `*` in the text, or opens a strong inside a strong.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", flags=re.S)  # JupyterLab typesets these; marked never sees them
PARSER = MarkdownIt("commonmark").enable("table")


def _build_module():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _markdown_sources() -> list[tuple[str, str]]:
    """(where, Markdown) for every Markdown cell of the core lesson and the labs, and README.md."""
    build = _build_module()
    found = []
    for name, (src, _, _) in build.NOTEBOOKS.items():
        cells = build.source_cells(src=src)
        found += [(f"{name} cell {i}", c["source"]) for i, c in enumerate(cells) if c["kind"] == "md"]
    return found + [("README.md", (ROOT / "README.md").read_text(encoding="utf-8"))]


def emphasis_problems(markdown: str) -> list[str]:
    """What went wrong with the emphasis of one Markdown text: leftover `*` or a span nested in its own kind."""
    problems = []
    for block in PARSER.parse(MATH.sub("M", markdown)):
        if block.type != "inline":
            continue
        open_now = {"strong": 0, "em": 0}
        for token in block.children:
            kind, _, edge = token.type.partition("_")
            if kind in open_now and edge == "open":
                open_now[kind] += 1
                if open_now[kind] > 1:
                    problems.append(f"{kind} inside {kind}: {block.content[:60]!r}")
            elif kind in open_now and edge == "close":
                open_now[kind] -= 1
            elif token.type == "text" and "*" in token.content:
                problems.append(f"literal * left: {token.content[:60]!r}")
    return problems


def test_the_check_catches_a_bold_span_closed_after_a_cjk_bracket():
    assert emphasis_problems("翻译模型**第 5 层（共 6 层）**的自注意力。") != []
    assert emphasis_problems("翻译模型**第 5 层（共 6 层）**的自注意力，附录里**没有**的。") != []
    assert emphasis_problems("翻译模型**第 5 层**（共 6 层）的自注意力，附录里**没有**的。") == []


def test_every_emphasis_span_renders():
    problems = [f"{where}: {p}" for where, markdown in _markdown_sources() for p in emphasis_problems(markdown)]
    assert problems == []
