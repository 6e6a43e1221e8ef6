"""The built notebook reads as one document to a screen reader: one H1, headings that never skip a level (in
Markdown cells and in the HTML the outputs show), and links whose text says where they go."""

from __future__ import annotations

import itertools
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "day11_multi_head_attention.ipynb"
# Link texts that do not say where a link goes (WCAG 2.4.4); compared after stripping spaces and punctuation.
VAGUE = {"这里", "点这里", "点击这里", "此处", "链接", "这个链接", "更多", "详情", "here", "clickhere", "link", "more",
         "readmore", "this"}


class _Html(HTMLParser):
    """Headings (level, text) and links (href, text) in an HTML output."""

    def __init__(self):
        super().__init__()
        self.headings, self.links, self._open = [], [], []

    def handle_starttag(self, tag, attrs):
        if re.fullmatch(r"h[1-6]", tag) or tag == "a":
            self._open.append([tag, dict(attrs), ""])

    def handle_data(self, data):
        for item in self._open:
            item[2] += data

    def handle_endtag(self, tag):
        if self._open and self._open[-1][0] == tag:
            name, attrs, text = self._open.pop()
            if name == "a":
                if "href" in attrs:  # <a id="…"></a> is a link target, not a link
                    self.links.append((attrs["href"], text.strip()))
            else:
                self.headings.append((int(name[1]), text.strip()))


def outline(nb: dict):
    """(where, level, text) of every heading, and (where, href, text) of every link, in reading order."""
    md = MarkdownIt("commonmark")
    headings, links = [], []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            tokens = md.parse("".join(cell["source"]))
            for j, tok in enumerate(tokens):
                if tok.type == "heading_open":
                    headings.append((f"cell {i}", int(tok.tag[1]), tokens[j + 1].content))
                for child in tok.children or []:
                    if child.type == "link_open":
                        links.append((f"cell {i}", child.attrs.get("href", ""), ""))
                    elif links and child.type == "text" and links[-1][0] == f"cell {i}" and links[-1][2] == "" \
                            and tok.children[tok.children.index(child) - 1].type == "link_open":
                        links[-1] = (links[-1][0], links[-1][1], child.content)
            html_blocks = "".join(t.content for t in tokens if t.type in ("html_block", "inline") and "<" in t.content)
        else:
            html_blocks = "".join("".join(o.get("data", {}).get("text/html", "")) for o in cell.get("outputs", []))
        if html_blocks:
            parser = _Html()
            parser.feed(html_blocks)
            headings += [(f"cell {i} (HTML)", level, text) for level, text in parser.headings]
            links += [(f"cell {i} (HTML)", href, text) for href, text in parser.links]
    return headings, links


@pytest.fixture(scope="module")
def nb():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))


def test_one_h1_and_no_skipped_heading_level(nb):
    headings, _links = outline(nb)
    assert len(headings) > 15, "the outline parser found too few headings"  # 11 sections and their parts
    assert [h for h in headings if h[1] == 1] == [headings[0]], "exactly one H1, and it comes first"
    skips = [f"{where}: H{level} 「{text}」 after H{prev[1]}" for prev, (where, level, text) in
             itertools.pairwise(headings) if level > prev[1] + 1]
    assert not skips, "\n".join(skips)


def test_every_link_says_where_it_goes(nb):
    _headings, links = outline(nb)
    bad = []
    for where, href, text in links:
        key = re.sub(r"[\s\W_]+", "", text.lower())
        # phrase kept: the rule is a list of link words that do not say where they go (这里, 链接, …)
        if not key or key in VAGUE or re.fullmatch(r"https?://\S+", text.strip()):
            bad.append(f"{where}: [{text}]({href})")
    assert not bad, "links whose text does not say where they go:\n" + "\n".join(bad)


def test_the_checks_catch_a_skip_and_a_vague_link():
    nb = {"cells": [{"cell_type": "markdown", "source": ["# A\n\n### C\n\n[here](https://example.org)"]},
                    {"cell_type": "code", "outputs": [{"data": {
                        "text/html": "<h1>B</h1><a href='x'>link</a><a id='t'></a>"}}]}]}
    headings, links = outline(nb)
    assert [level for _w, level, _t in headings] == [1, 3, 1]
    assert [text for _w, _h, text in links] == ["here", "link"]


def test_the_core_asks_exactly_the_questions_its_progress_counts(nb):
    """The progress summary counts question_ids(): a question only a lab asks would keep the core from 100 %."""
    from lesson_lib.practice.questions import question_ids

    sources = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert sorted(re.findall(r'\bask\("(\w+)"\)', sources)) == sorted(question_ids())


def test_the_review_asks_in_the_order_of_its_numbers(nb):
    """§10 shows its questions by number (Q1, the summary in the learner's own words, last): the number a learner
    sees never goes back."""
    start = next(i for i, c in enumerate(nb["cells"]) if "".join(c["source"]).startswith("## 10 "))
    sources = "\n".join("".join(c["source"]) for c in nb["cells"][start:] if c["cell_type"] == "code")
    asked = re.findall(r'\bask\("(Q\d)"\)', sources)
    assert asked == sorted(asked, key=lambda q: (q == "Q1", q)) and asked[-1] == "Q1"
