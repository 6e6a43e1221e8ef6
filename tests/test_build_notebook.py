"""scripts/build_notebook.py and the notebook source it assembles: cell parsing, stable ids, the
section structure (## 0 … ## 10, in order), no lesson logic in code cells, and the nbval-ignore-output tag
on exactly the widget and timing cells (a tag, so the learner never reads test machinery in a cell).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import re
import shutil
import sys
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
    assert all(re.fullmatch(r"c-[0-9a-f]{12}(-\d+)?", i) for i in ids)  # nbformat: 1-64 of [a-zA-Z0-9-_]
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


def test_an_inserted_cell_renames_no_other_cell(monkeypatch):
    """Ids used to start with the cell's index: one inserted cell renamed every later one in the diff."""
    base = [{"kind": "md", "source": text, "tags": []} for text in ("甲", "乙", "甲")]
    monkeypatch.setattr(bn, "source_cells", lambda only=None, src=None: base)
    before = [c["id"] for c in bn.assemble().cells]
    inserted = [base[0], {**base[1], "source": "新"}, *base[1:], base[0]]
    monkeypatch.setattr(bn, "source_cells", lambda only=None, src=None: inserted)
    after = [c["id"] for c in bn.assemble().cells]
    assert len(set(before)) == 3  # the same source twice still gives two ids
    assert after[0] == before[0] and after[2:4] == before[1:]
    assert after[4] not in before  # a third 甲 is a new cell


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


# ---------------------------------------------------------------------------------------------
# Before a build: the question files, and the ids the notebooks ask (README「改编这节课」)
# ---------------------------------------------------------------------------------------------


def _sources(tmp_path, monkeypatch, name: str, old: str, new: str) -> int:
    """The notebooks' sources copied under tmp_path (the build's ROOT now), ``old`` replaced by ``new`` in the core's
    ``name``; the line of the replacement."""
    for folder in ("src", "labs_src"):
        shutil.copytree(ROOT / "notebooks" / folder, tmp_path / "notebooks" / folder)
    monkeypatch.setattr(bn, "ROOT", tmp_path)
    monkeypatch.setattr(bn, "SRC", tmp_path / "notebooks" / "src")
    monkeypatch.setattr(bn, "LABS_SRC", tmp_path / "notebooks" / "labs_src")
    monkeypatch.setattr(sys, "path", list(sys.path))  # check_questions puts ROOT there
    path = bn.SRC / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text.split(old)[0].count("\n") + 1


def test_an_unknown_id_asked_stops_the_build_before_any_kernel_naming_the_file_and_line(tmp_path, monkeypatch, capsys):
    """A typo in ask("S5B") used to end a build in a kernel's 52-line traceback naming no file."""
    line = _sources(tmp_path, monkeypatch, "05_head_lab.md", 'ask("S5")', 'ask("S5B")')
    monkeypatch.setattr(bn, "execute", lambda *args: pytest.fail("a kernel ran"))
    draft = tmp_path / "draft.ipynb"
    assert bn.main(["day11_multi_head_attention", "--out", str(draft)]) == 1
    assert not draft.exists()
    said = [text for text in capsys.readouterr().out.splitlines() if "'S5B'" in text]
    assert len(said) == 1 and said[0].startswith("notebooks/src/05_head_lab.md"), said
    assert re.findall(r"\d+", said[0].split(".md", 1)[1])[0] == str(line)
    assert all(qid in said[0] for qid in ("S2", "S5", "Q7", "L6b"))  # the known ids


def test_a_counted_question_no_notebook_asks_stops_the_build_naming_its_file(tmp_path, monkeypatch, capsys):
    """Its learners would see it as not done forever; an uncounted one (§8's interview) is asked otherwise."""
    _sources(tmp_path, monkeypatch, "02_averaging.md", 'ask("S2")', "None")
    assert bn.check_questions() == 1
    (said,) = capsys.readouterr().out.splitlines()
    assert "s02_averaging.toml" in said and re.findall(r"\b[SQL]\d\w*", said) == ["S2", "S2"], said


@pytest.mark.parametrize(("md", "asked", "folder"), [("src/02_averaging.md", "S2", "notebooks/src/"),
                                                  ("labs_src/lab_real_heads/03_explorer.md", "L6a",
                                                   "notebooks/labs_src/lab_real_heads/")])
def test_an_unasked_question_names_the_folder_its_notebook_is_built_from(tmp_path, monkeypatch, capsys, md, asked,
                                                                          folder):
    """A lab's question is asked in its lab's sources, not the core's: the line names the folder to edit."""
    _sources(tmp_path, monkeypatch, "02_averaging.md", 'ask("S2")', 'ask("S2")')  # a copy to change, as it is
    path = tmp_path / "notebooks" / md
    path.write_text(path.read_text(encoding="utf-8").replace(f'ask("{asked}")', "None"), encoding="utf-8")
    assert bn.check_questions() == 1
    (said,) = capsys.readouterr().out.splitlines()
    assert re.findall(r"notebooks/\S+/", said) == [folder], said


TEST_ANSWERS_SWAPPED = '''
[[questions]]
id = "X1"
kind = "single"
section = "第 5 节"
prompt = "X1"
explanation = "解析。"
answer = "B"
counted = false
right_answers = ["A"]
wrong_answers = ["B"]
options = [{ key = "A", label = "a", why = "不对。" }, { key = "B", label = "b" }]
'''


def test_a_test_answer_judged_otherwise_names_its_file_question_and_answer(tmp_path, monkeypatch, capsys):
    from lesson_lib.practice import questions, quiz

    (tmp_path / "s05_mine.toml").write_text(TEST_ANSWERS_SWAPPED, encoding="utf-8")
    monkeypatch.setattr(questions, "SECTIONS", tmp_path)
    monkeypatch.setattr(bn, "SRC", tmp_path)  # no notebook asks anything: X1 is not counted
    monkeypatch.setattr(bn, "LABS_SRC", tmp_path)
    questions._bank.cache_clear()
    try:
        assert bn.check_questions() == 1
        judged = quiz.check("X1", "A")
        shown = " ".join(judged.message.split())  # what a learner would see for the right answer
    finally:
        monkeypatch.undo()
        questions._bank.cache_clear()
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 2 and all("s05_mine.toml" in s and "X1" in s for s in said), said
    assert said[0].endswith(shown) and judged.verdict not in said[0], said[0]  # the message, not the verdict's id
    assert ["'A'" in said[0], "'B'" in said[1]] == [True, True]  # the right answer, then the wrong one


@pytest.mark.parametrize("minutes", [70, 80])
def test_the_build_says_the_class_time_and_whether_it_is_over_one_class(tmp_path, monkeypatch, capsys, minutes):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## 1 节\n\n" + "字" * (350 * minutes))]  # 350 字 a minute
    nbformat.write(nb, tmp_path / "core.ipynb")
    monkeypatch.setattr(bn, "NOTEBOOK", tmp_path / "core.ipynb")
    bn.report_lesson_time()
    said = capsys.readouterr().out.splitlines()
    assert float(re.findall(r"\d+\.\d", said[0])[0]) == minutes
    assert len(said) == (2 if minutes > bn.CLASS_MINUTES else 1)  # what to do, when over


# ---------------------------------------------------------------------------------------------
# Stored widget ids: the same sources give the same notebook
# ---------------------------------------------------------------------------------------------


def _widget_notebook(view: str, layout: str):
    import nbformat

    nb = nbformat.v4.new_notebook()
    data = {bn.WIDGET_MIME: {"model_id": view, "version_major": 2, "version_minor": 0}, "text/plain": "…"}
    nb.cells = [nbformat.v4.new_code_cell("w", id="c000", outputs=[nbformat.v4.new_output("display_data", data=data)])]
    state = {view: {"state": {"layout": f"IPY_MODEL_{layout}"}}, layout: {"state": {}}}
    nb.metadata["widgets"] = {bn.WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}}
    return nb


def test_stored_widget_ids_depend_on_the_notebook_not_on_the_kernels_uuids():
    import nbformat

    first = nbformat.writes(bn.stable_widget_ids(_widget_notebook("a" * 32, "b" * 32), "core"))
    again = nbformat.writes(bn.stable_widget_ids(_widget_notebook("c" * 32, "d" * 32), "core"))
    other = nbformat.writes(bn.stable_widget_ids(_widget_notebook("a" * 32, "b" * 32), "lab"))
    assert first == again and first != other
    assert not re.search(r"aaaa|bbbb", first)
    stored = json.loads(first)
    state = stored["metadata"]["widgets"][bn.WIDGET_STATE]["state"]
    view = stored["cells"][0]["outputs"][0]["data"][bn.WIDGET_MIME]["model_id"]
    (layout,) = set(state) - {view}
    assert state[view]["state"]["layout"] == f"IPY_MODEL_{layout}"  # a reference follows its model


def _executed(sources: list[str], run: str):
    """A notebook as the kernel leaves it, no kernel needed: each cell whose source starts with "w" displays
    a box of a label (the cell's first line) and a button (each with a layout, the label a style), and the
    kernel also holds a box nobody displayed (the label of the last displayed box and an empty layout); the
    kernel's model ids differ with ``run``, as its uuids do between two builds."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    state = {}
    made = iter(range(10**6))

    def model(name: str, **fields) -> str:
        new = hashlib.sha1(f"{run}:{next(made)}".encode()).hexdigest()[:32]
        state[new] = {"model_name": name, "state": fields}
        return new

    seen: dict[str, int] = {}
    labels = []
    for source in sources:
        outputs = []
        if source.startswith("w"):
            label = model("HTMLModel", value=source.splitlines()[0], layout=f"IPY_MODEL_{model('LayoutModel')}",
                          style=f"IPY_MODEL_{model('HTMLStyleModel')}")
            button = model("ButtonModel", layout=f"IPY_MODEL_{model('LayoutModel')}")
            box = model("VBoxModel", children=[f"IPY_MODEL_{label}", f"IPY_MODEL_{button}"],
                        layout=f"IPY_MODEL_{model('LayoutModel')}")
            labels.append(label)
            view = {bn.WIDGET_MIME: {"model_id": box, "version_major": 2, "version_minor": 0}, "text/plain": "…"}
            outputs = [nbformat.v4.new_output("display_data", data=view)]
        nb.cells.append(nbformat.v4.new_code_cell(source, id=bn.cell_id(source, seen), outputs=outputs))
    model("HBoxModel", children=[f"IPY_MODEL_{labels[-1]}"], layout=f"IPY_MODEL_{model('LayoutModel')}")
    nb.metadata["widgets"] = {bn.WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}}
    return nb


def _widget_state(nb) -> dict:
    return nb.metadata["widgets"][bn.WIDGET_STATE]["state"]


def test_an_inserted_widget_renames_no_other_cell_or_widget():
    """Widgets were numbered in the kernel's creation order across the notebook: one question added to §5
    renamed every later widget, 12,054 changed lines in the stored notebook."""
    before = bn.stable_widget_ids(_executed(["w1", "print(1)", "w2", "w3"], run="a"), "core")
    after = bn.stable_widget_ids(_executed(["w0", "w1", "print(1)", "w2", "w2b", "w3"], run="b"), "core")
    kept = [c["id"] for c in after.cells if c.source not in ("w0", "w2b")]
    assert [c["id"] for c in before.cells] == kept
    assert _widget_state(before).items() < _widget_state(after).items()  # same ids, same state (references)
    assert len(_widget_state(after)) == len(_widget_state(before)) + 2 * 7  # 7 models in each new box


def test_editing_the_cell_that_shows_a_widget_keeps_its_name():
    """README's 「改编这节课」 edits the cell that asks S5 (ask("S5") -> display(ask("S5"), ask("S5b")))."""
    before = bn.stable_widget_ids(_executed(["w1", "w2"], run="a"), "core")
    after = bn.stable_widget_ids(_executed(["w1", "w2\nprint(2)"], run="b"), "core")
    assert before.cells[1]["id"] != after.cells[1]["id"]
    assert _widget_state(before) == _widget_state(after)


def test_rebuilding_gives_identical_text_and_every_widget_reference_resolves():
    import nbformat

    sources = ["w1", "print(1)", "w2", "w1"]  # the same source twice: two cells, two sets of widgets
    first = nbformat.writes(bn.stable_widget_ids(_executed(sources, run="a"), "core"))
    assert nbformat.writes(bn.stable_widget_ids(_executed(sources, run="b"), "core")) == first
    stored = nbformat.reads(first, as_version=4)
    nbformat.validate(stored)
    state = _widget_state(stored)
    assert len(state) == len(_widget_state(_executed(sources, run="a")))  # no two models merged
    assert all(re.fullmatch(r"[0-9a-f]{32}", model) for model in state)  # the uuid's shape nbval sanitizes
    views = [o.data[bn.WIDGET_MIME]["model_id"] for c in stored.cells for o in c.outputs]
    assert len(views) == 3 and set(views) <= set(state)
    assert set(re.findall(r"IPY_MODEL_(\w+)", json.dumps(state))) <= set(state)


WIDGETS_SOURCE = HEADER + '''
```{code-cell}
import ipywidgets as w
w.VBox([w.IntSlider(3), w.Label("标签")])
```
'''


@pytest.mark.slow
def test_a_rebuild_of_unchanged_sources_is_byte_identical(tmp_path, monkeypatch):
    """Each rebuild used to store new random widget ids: thousands of changed lines in notebooks nobody touched."""
    import nbformat

    monkeypatch.setattr(bn, "ROOT", tmp_path)  # where the source's name is said from
    (tmp_path / "00_widgets.md").write_text(WIDGETS_SOURCE, encoding="utf-8")
    built = [nbformat.writes(bn.execute(bn.assemble(src=tmp_path), tmp_path / "tiny.ipynb")) for _ in range(2)]
    assert json.loads(built[0])["metadata"]["widgets"][bn.WIDGET_STATE]["state"]  # widgets were stored
    assert built[0] == built[1]


def test_a_stale_notebook_is_shown_where_it_first_differs_from_its_source(tmp_path, monkeypatch, capsys):
    """The cell's first 60 characters were shown, the same in both when a sentence late in the cell changed."""
    import nbformat

    monkeypatch.setattr(bn, "ROOT", tmp_path)
    (tmp_path / "00_a.md").write_text(HEADER + "x" * 200 + " NEW words\n", encoding="utf-8")
    stale = bn.assemble(src=tmp_path)
    stale.cells[0].source = "x" * 200 + " OLD words"
    nbformat.write(stale, tmp_path / "a.ipynb")
    assert bn._check_one(tmp_path, tmp_path / "a.ipynb") == 1
    said = capsys.readouterr().out.splitlines()[0]
    assert said.index("OLD") < said.index("NEW")  # the stored text, then the source's


@pytest.mark.parametrize("broken", ['kind = "single"\n', 'prompt = "S2　{no_such_value}"\n'])
def test_check_says_a_broken_question_file_in_one_line_as_the_build_does(tmp_path, monkeypatch, capsys, broken):
    """--check used to go on to the class time, which reads the questions, and end in a QuestionDataError
    traceback under the Chinese line."""
    from lesson_lib.practice import questions

    path = tmp_path / "s02_averaging.toml"
    text = (questions.SECTIONS / path.name).read_text(encoding="utf-8")
    field = broken.split(" =")[0]  # the first line that sets it, broken
    path.write_text(re.sub(rf"^{field} = .*\n", broken.replace("single", "singel"), text, count=1, flags=re.M),
                    encoding="utf-8")
    monkeypatch.setattr(questions, "SECTIONS", tmp_path)
    questions._bank.cache_clear()
    try:
        assert bn.main(["--check"]) == 1  # no exception: the line, then the notebooks' own checks
    finally:
        monkeypatch.undo()
        questions._bank.cache_clear()
    said = [line for line in capsys.readouterr().out.splitlines() if path.name in line]
    with pytest.raises(questions.QuestionDataError) as refused:
        questions.read_file(path)
    assert said == [str(refused.value)]  # the loader's own line, once


def test_a_missing_build_package_is_said_in_one_line_with_what_to_run(monkeypatch, capsys):
    """A learner's setup (requirements.txt) has no jupytext: README's build command ended in an English
    ModuleNotFoundError after the question check."""
    monkeypatch.setattr(bn, "BUILD_PACKAGES", (*bn.BUILD_PACKAGES, "no_such_build_package"))
    monkeypatch.setattr(bn, "check_questions", lambda: pytest.fail("went on to the questions"))
    for args in ([], ["--check"]):
        assert bn.main(args) == 1
        (said,) = capsys.readouterr().out.splitlines()
        assert "no_such_build_package" in said and "bash scripts/setup.sh --dev" in said


@pytest.mark.parametrize("script", ["build_notebook.py", "personal_copy.py"])
def test_help_is_headed_as_the_chinese_formatter_heads_it(script):
    import subprocess

    out = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--help"], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    spec = importlib.util.spec_from_file_location("personal_copy", ROOT / "scripts" / "personal_copy.py")
    personal_copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(personal_copy)
    assert out.startswith(personal_copy.USAGE)
    headings = [line[:-1] for line in out.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings and set(headings) <= set(personal_copy.HEADINGS.values()), headings
