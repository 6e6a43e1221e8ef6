"""scripts/build_notebook.py and the notebook source it assembles: cell parsing, stable ids, the
section structure (## 0 … ## 10, in order), no lesson logic in code cells, and the nbval-ignore-output tag
on exactly the widget and timing cells (a tag, so the learner never reads test machinery in a cell).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest
from helpers import CJK

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "notebooks" / "src"
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"
IGNORE = "nbval-ignore-output"  # nbval reads this cell tag
SECTIONS = list(range(11))


def _load():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bn = _load()


@pytest.fixture(scope="module")
def nb():
    return bn.assemble()


@pytest.fixture(scope="module")
def code_cells():
    return [c["source"] for c in bn.source_cells() if c["kind"] == "code"]


@pytest.fixture(scope="module")
def tagged_code_cells():
    return [(c["source"], c["tags"]) for c in bn.source_cells() if c["kind"] == "code"]


# ---------------------------------------------------------------------------------------------
# parse_cells
# ---------------------------------------------------------------------------------------------


HEADER = "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n"


def test_parse_cells_splits_kinds_and_tags():
    text = HEADER + ("\n## Title\n\nBody\n\n```{code-cell}\nx = 1\n\ny = 2\n```\n\n"
                     "```{code-cell}\n:tags: [raises-exception, skip]\n\n1 / 0\n```\n")
    cells = bn.parse_cells(text)
    assert cells == [
        {"kind": "md", "source": "## Title\n\nBody", "tags": []},
        {"kind": "code", "source": "x = 1\n\ny = 2", "tags": []},  # inner blank line kept
        {"kind": "code", "source": "1 / 0", "tags": ["raises-exception", "skip"]},
    ]


def test_parse_cells_splits_markdown_at_plus_lines():
    cells = bn.parse_cells(HEADER + "one\n\n+++\n\ntwo\n")
    assert [c["source"] for c in cells] == ["one", "two"]


def test_parse_cells_drops_empty_cells():
    cells = bn.parse_cells(HEADER + "```{code-cell}\n   \n```\n\n```{code-cell}\nprint(1)\n```\n")
    assert cells == [{"kind": "code", "source": "print(1)", "tags": []}]


def test_parse_cells_keeps_magics_as_content():
    cells = bn.parse_cells(HEADER + "```{code-cell}\n%%time\nx = 1\n%matplotlib inline\n```\n")
    assert cells[0]["source"] == "%%time\nx = 1\n%matplotlib inline"


@pytest.mark.parametrize(("text", "message"), [
    ("## 没有头部\n\n```{code-cell}\nx = 1\n```\n", r"f\.md: not a MyST notebook"),
    ("---\njupytext:\n  text_representation:\n    format_name: markdown\n---\nx\n", "not a MyST notebook"),
    (HEADER + "```{raw-cell}\nx\n```\n", r"f\.md: cell 1 is a raw cell"),
])
def test_parse_cells_rejects_bad_input(text, message):
    with pytest.raises(SystemExit, match=message):
        bn.parse_cells(text, "f.md")


def test_every_section_file_round_trips_through_jupytext():
    """What JupyterLab's jupytext writes back after an edit must parse to the same cells."""
    import jupytext

    for path in sorted(SRC.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        again = jupytext.writes(jupytext.reads(text, fmt="md:myst"), fmt="md:myst")
        assert bn.parse_cells(again, path.name) == bn.parse_cells(text, path.name), path.name


# ---------------------------------------------------------------------------------------------
# assemble
# ---------------------------------------------------------------------------------------------


def test_assemble_ids_are_stable_unique_and_valid(nb):
    import nbformat

    again = bn.assemble()
    ids = [c["id"] for c in nb.cells]
    assert ids == [c["id"] for c in again.cells]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"c\d{3}-[0-9a-f]{8}", i) for i in ids)
    nbformat.validate(nb)
    src = bn.source_cells()
    assert [(c.cell_type, c.source) for c in nb.cells] == [
        ("markdown" if s["kind"] == "md" else "code", s["source"]) for s in src
    ]


def test_assemble_id_changes_with_the_cell_source(monkeypatch):
    base = [{"kind": "md", "source": "## 0 甲", "tags": []}, {"kind": "code", "source": "x = 1", "tags": ["t"]}]
    monkeypatch.setattr(bn, "source_cells", lambda only=None, src=None: base)
    first = bn.assemble()
    monkeypatch.setattr(bn, "source_cells", lambda only=None, src=None: [base[0], {**base[1], "source": "x = 2"}])
    second = bn.assemble()
    assert first.cells[0]["id"] == second.cells[0]["id"]
    assert first.cells[1]["id"] != second.cells[1]["id"]
    assert first.cells[1].metadata["tags"] == ["t"] and "tags" not in first.cells[0].metadata


def test_assemble_only_keeps_section_zero():
    assert section_numbers(level2_headings(bn.assemble(["05"]).cells)) == [0, 5]


# ---------------------------------------------------------------------------------------------
# Section structure: exactly one "## N …" per section, 0 … 10 in order
# ---------------------------------------------------------------------------------------------


def level2_headings(cells) -> list[str]:
    """Level-2 headings of the markdown cells (lines inside ``` fences are not headings)."""
    out = []
    for cell in cells:
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and line.startswith("## "):
                out.append(line)
    return out


def section_numbers(headings):
    numbers = []
    for line in headings:
        m = re.fullmatch(r"## (\d+) (\S.*)", line)
        assert m, f"level-2 heading without a section number and title: {line!r}"
        assert CJK.search(m.group(2)), f"section title not in Chinese: {line!r}"
        numbers.append(int(m.group(1)))
    return numbers


def test_source_sections_in_order_once_each(nb):
    numbers = section_numbers(level2_headings(nb.cells))
    assert numbers == sorted(set(numbers)), numbers  # strictly increasing: in order, no repeats
    assert set(numbers) <= set(SECTIONS)
    assert numbers[0] == 0


def test_source_has_all_eleven_sections(nb):
    assert section_numbers(level2_headings(nb.cells)) == SECTIONS


def test_committed_notebook_sections_in_order():
    import nbformat

    numbers = section_numbers(level2_headings(nbformat.read(NOTEBOOK, as_version=4).cells))
    assert numbers and numbers[0] == 0
    assert numbers == sorted(set(numbers)) and set(numbers) <= set(SECTIONS)


class _Md:
    """A parsed cell seen like an nbformat cell."""

    def __init__(self, cell):
        self.cell_type = "markdown" if cell["kind"] == "md" else "code"
        self.source = cell["source"]


def test_each_section_file_starts_with_its_heading():
    for path in sorted(SRC.glob("*.md")):
        cells = bn.parse_cells(path.read_text(encoding="utf-8"), path.name)
        headings = level2_headings([_Md(c) for c in cells])
        number = path.name[:2]
        if path.stem[2:3].isalpha():  # e.g. 08b_…: a continuation of section 8, no heading of its own
            assert headings == [], path.name
        else:
            assert len(headings) == 1 and headings[0].startswith(f"## {int(number)} "), path.name


# ---------------------------------------------------------------------------------------------
# Code cells: short calls into lesson_lib, no lesson maths
# ---------------------------------------------------------------------------------------------

MATHS = re.compile(r"np\.exp\(|math\.exp\(|\bsoftmax\(|np\.log\(|\.swapaxes\(|np\.einsum\(|keepdims=True")


def _python(source):
    """Cell source without IPython magics, parsed."""
    return ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))


def test_code_cells_hold_no_attention_maths(code_cells):
    for source in code_cells:
        assert not MATHS.search(source), source


def test_only_learner_stubs_define_functions(code_cells):
    """Every ``def`` is an exercise stub (my_…) whose body is only ``raise NotImplementedError``."""
    stubs = 0
    for source in code_cells:
        for node in ast.walk(_python(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                assert isinstance(node, ast.FunctionDef) and node.name.startswith("my_"), source
                body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                assert len(body) == 1 and isinstance(body[0], ast.Raise), source
                assert ast.unparse(body[0].exc) == "NotImplementedError", source
                stubs += 1
    assert stubs >= 1  # the check sees the exercise cells


VOLATILE = re.compile(
    r"\bwidgets\.\w+\(|\bask\(|\bprogress_summary\(|\binterview_self_check\(|_widget\(|\bprogress_bar\(|\btime_kernel\("
    r"|perf_counter|%%?timeit|\btime\.time\(|total_seconds|\btiming_text\("
    r"|\b\w+_numbers_text\("  # trained models' exact digits (§7): their last digits follow the CPU
)


def test_nbval_ignore_exactly_on_widget_and_timing_cells(tagged_code_cells):
    marked = [s for s, tags in tagged_code_cells if IGNORE in tags]
    for source, tags in tagged_code_cells:
        assert (IGNORE in tags) == bool(VOLATILE.search(source)), source
    assert any("head_lab.lab_widget()" in s for s in marked)


def test_learner_cells_carry_no_test_machinery(code_cells):
    for source in code_cells:
        assert "NBVAL" not in source and "noqa" not in source, source


FIGURES = re.compile(r"\bplot_\w*\(|_figure\(|\bhead_finder\(|\bexplore\(")


def test_figure_cells_end_without_a_figure_repr(code_cells):
    for source in code_cells:
        if FIGURES.search(source):
            last = source.rstrip().splitlines()[-1]
            assert last == "plt.show()" or last.endswith(";"), source


# ---------------------------------------------------------------------------------------------
# Stored widget outputs: a Chinese line, not the widget's repr, before the first run
# ---------------------------------------------------------------------------------------------


def test_widget_placeholders_replace_only_widget_text():
    import nbformat

    nb = nbformat.v4.new_notebook()
    widget = {bn.WIDGET_MIME: {"model_id": "abc", "version_major": 2, "version_minor": 0},
              "text/plain": "VBox(children=(HBox(children=(SelectionSlider(…"}
    cell = nbformat.v4.new_code_cell("widgets.head_lab()")
    cell.outputs = [nbformat.v4.new_output("display_data", data=dict(widget)),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "42"}, execution_count=1),
                    nbformat.v4.new_output("stream", name="stdout", text="VBox(children= printed on purpose\n")]
    nb.cells.append(cell)
    bn.widget_placeholders(nb)
    shown, result, printed = cell.outputs
    placeholder = shown["data"]["text/plain"]
    assert placeholder == bn.WIDGET_PLACEHOLDER and re.search(r"[\u4e00-\u9fff]", placeholder)  # Chinese, for nbval
    assert shown["data"][bn.WIDGET_MIME]["model_id"] == "abc"  # the live view is kept
    assert result["data"]["text/plain"] == "42" and printed["text"].startswith("VBox(children=")


def test_committed_notebook_stores_no_widget_repr():
    import nbformat

    stored = nbformat.read(NOTEBOOK, as_version=4)
    widget_outputs = [o for c in stored.cells if c.cell_type == "code" for o in c.outputs
                      if bn.WIDGET_MIME in o.get("data", {})]
    assert widget_outputs, "the stored notebook has no widget outputs at all"
    for output in widget_outputs:
        assert output["data"]["text/plain"] == bn.WIDGET_PLACEHOLDER


def test_stream_outputs_are_merged_per_run_of_one_stream():
    """Whether a cell's prints arrive as one stream output or two follows the kernel's flush timing."""
    import nbformat

    out = nbformat.v4.new_output
    cell = nbformat.v4.new_code_cell("print(table)")
    cell.outputs = [out("stream", name="stdout", text="a\n"), out("stream", name="stdout", text="b\n"),
                    out("stream", name="stderr", text="warn\n"), out("stream", name="stdout", text="c\n"),
                    out("display_data", data={"text/plain": "x"}), out("stream", name="stdout", text="d\n")]
    nb = nbformat.v4.new_notebook()
    nb.cells.append(cell)
    bn._merge_streams(nb)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in cell.outputs] == [
        ("stream", "stdout", "a\nb\n"), ("stream", "stderr", "warn\n"), ("stream", "stdout", "c\n"),
        ("display_data", None, None), ("stream", "stdout", "d\n")]


# ---------------------------------------------------------------------------------------------
# Several notebooks: the core and the optional labs, each built from its own source
# ---------------------------------------------------------------------------------------------

LABS = [name for name in bn.NOTEBOOKS if name != NOTEBOOK.stem]


def test_notebooks_list_the_core_first_and_each_source_once():
    assert next(iter(bn.NOTEBOOKS)) == NOTEBOOK.stem and LABS
    sources = [src for src, _, _ in bn.NOTEBOOKS.values()]
    assert len(set(sources)) == len(sources) and all(any(src.glob("*.md")) for src in sources)


@pytest.mark.parametrize("name", LABS)
def test_stored_lab_matches_its_source(name):
    assert bn.check([name]) == 0


def test_an_unknown_notebook_name_is_refused_with_the_list(capsys):
    with pytest.raises(SystemExit):
        bn.main(["no_such_lab", "--check"])
    err = capsys.readouterr().err
    assert all(name in err for name in bn.NOTEBOOKS)


@pytest.mark.parametrize("name", LABS)
def test_each_lab_links_to_the_core_and_the_core_links_to_it(name):
    src, notebook, _ = bn.NOTEBOOKS[name]
    lab_text = "".join(c["source"] for c in bn.source_cells(src=src) if c["kind"] == "md")
    core_text = "".join(c["source"] for c in bn.source_cells() if c["kind"] == "md")
    assert f"]({NOTEBOOK.name})" in lab_text and f"]({notebook.name})" in core_text


@pytest.mark.parametrize("name", LABS)
def test_lab_cells_tag_exactly_their_widget_and_training_cells(name):
    src = bn.NOTEBOOKS[name][0]
    for cell in bn.source_cells(src=src):
        if cell["kind"] == "code":
            volatile = bool(VOLATILE.search(cell["source"])) or "ablation.sweep(" in cell["source"]
            assert (IGNORE in cell["tags"]) == volatile, cell["source"]


def test_every_notebook_that_shows_a_figure_sets_the_inline_backend():
    """plt.show() draws nothing under MPLBACKEND=Agg (what scripts/test.sh exports) unless the notebook sets
    %matplotlib inline before it: lab_ablation's stored training figure was empty."""
    for name, (src, _, _) in bn.NOTEBOOKS.items():
        code = [c["source"] for c in bn.source_cells(src=src) if c["kind"] == "code"]
        shows = next((i for i, s in enumerate(code) if "plt.show()" in s), None)
        if shows is not None:
            assert any("%matplotlib inline" in s for s in code[:shows + 1]), name


@pytest.mark.parametrize("name", list(bn.NOTEBOOKS))
def test_every_stored_figure_cell_shows_its_figure(name):
    """A stored cell that calls plt.show() carries the picture it drew (an SVG page or an image)."""
    import nbformat

    nb = nbformat.read(bn.NOTEBOOKS[name][1], as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "plt.show()" in cell.source:
            shown = [o for o in cell.outputs if {"text/html", "image/png"} & set(o.get("data", {}))]
            assert shown, f"{name}: {cell.source[:60]!r} has no stored figure"
