"""Build the course's notebooks from their sources and (re)generate their stored outputs.

``NOTEBOOKS`` lists every notebook: the core lesson and the optional labs. Each has one source of truth, a
folder of ``NN_*.md`` files (the core: ``notebooks/src/``, one file per section; a lab:
``notebooks/labs_src/<name>/``), read in name order, each a notebook in jupytext's MyST Markdown: prose as
Markdown, code in ```{code-cell}``` blocks (``:tags: [raises-exception]`` under the opening line sets tags),
``+++`` between two Markdown cells. JupyterLab with jupytext opens these files as notebooks.

Usage:
    python scripts/build_notebook.py                    # every notebook: assemble + execute, store outputs
    python scripts/build_notebook.py lab_ablation       # only the notebooks named
    python scripts/build_notebook.py --check            # exit 1 if any .ipynb's cells differ from its source
    python scripts/build_notebook.py --no-execute
    python scripts/build_notebook.py --only 06 --out /tmp/draft.ipynb   # draft core sections (+ 00)

Every run first reads the question files (``lesson_lib/sections/*.toml``) and checks each question against its own
right and wrong answers (``check_questions``): a mistake in a file, or a right answer the lesson would call wrong,
stops it with a Chinese message naming the file, the question and the field or answer (README「改编这节课」). So
does, before any kernel starts, an ``ask("…")`` in a .md whose id no file has (named with its file and line), or a
counted question no notebook asks. Then it says the core's class time by the instructor's model (what
tests/test_lesson_time.py holds to 75 minutes). Stored cell and widget ids are derived from what a cell and
a widget are, not where they stand (``cell_id``, ``stable_widget_ids``): rebuilding unchanged sources changes
only what a cell measures (a timing), and an added cell or question changes the lines about it, not every
later id.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "notebooks" / "src"
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"
LABS_SRC = ROOT / "notebooks" / "labs_src"
# name -> (source folder, stored notebook, Chinese title): the core first, then the optional labs.
# The static page and the personal copies read this list.
NOTEBOOKS = {
    NOTEBOOK.stem: (SRC, NOTEBOOK, "Day 11 · 多头注意力"),
    "lab_real_heads": (LABS_SRC / "lab_real_heads", ROOT / "notebooks" / "lab_real_heads.ipynb",
                       "选做实验 · 训练好的真实模型里的头"),
    "lab_ablation": (LABS_SRC / "lab_ablation", ROOT / "notebooks" / "lab_ablation.ipynb",
                     "选做实验 · 表 3 (A) 的玩具重现"),
}
KERNEL_TIMEOUT = 600


def parse_cells(text: str, origin: str = "<section>") -> list[dict]:
    """A section file's cells as [{'kind': 'md' | 'code', 'source', 'tags'}], read by jupytext as MyST."""
    import jupytext

    front = text.split("\n---", 1)[0] if text.startswith("---\n") else ""
    if "format_name: myst" not in front:
        raise SystemExit(f"{origin}: not a MyST notebook (it must start with jupytext's header naming "
                         "format_name: myst; open it in JupyterLab with jupytext, or copy a section's header)")
    out = []
    for index, cell in enumerate(jupytext.reads(text, fmt="md:myst").cells, 1):
        if cell.cell_type not in ("markdown", "code"):
            raise SystemExit(f"{origin}: cell {index} is a {cell.cell_type} cell; use markdown or code cells")
        if cell.source.strip():
            out.append({"kind": "md" if cell.cell_type == "markdown" else "code",
                        "source": cell.source, "tags": list(cell.metadata.get("tags", []))})
            if cell.metadata.get("jupyter"):  # e.g. {"source_hidden": true}: §0's check, out of the learner's way
                out[-1]["jupyter"] = dict(cell.metadata["jupyter"])
    return out


def source_cells(only: list[str] | None = None, src: Path = SRC) -> list[dict]:
    """Cells of every file in ``src``, or only of files whose name starts with one of ``only`` (plus 00)."""
    cells = []
    for path in sorted(src.glob("*.md")):
        if only and not any(path.name.startswith(p) for p in ["00", *only]):
            continue
        cells.extend(parse_cells(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))))
    return cells


def cell_id(source: str, seen: dict[str, int]) -> str:
    """A cell's id from what it says, not where it stands: ``c-`` and 12 hex digits of its source's sha1,
    then ``-2``, ``-3``… for the second, third… cell with the same source (``seen`` counts them). Ids used to
    start with the cell's index, so one inserted cell renamed every later one, and the stored widgets keyed
    by them (``stable_widget_ids``): an instructor's one added question showed as 12,054 changed lines.
    nbformat allows 1-64 characters of [a-zA-Z0-9-_]; this is at most 14 plus the count."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    seen[digest] = seen.get(digest, 0) + 1
    return f"c-{digest}" if seen[digest] == 1 else f"c-{digest}-{seen[digest]}"


def assemble(only: list[str] | None = None, src: Path = SRC):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    seen: dict[str, int] = {}
    for cell in source_cells(only, src):
        make = nbformat.v4.new_markdown_cell if cell["kind"] == "md" else nbformat.v4.new_code_cell
        nb_cell = make(cell["source"])
        nb_cell["id"] = cell_id(cell["source"], seen)
        if cell["tags"]:
            nb_cell.metadata["tags"] = cell["tags"]
        if cell.get("jupyter"):
            nb_cell.metadata["jupyter"] = cell["jupyter"]
        nb.cells.append(nb_cell)
    return nb


def _strip_volatile(nb):
    """Execution timestamps change every run; drop them so regenerating gives a clean diff."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def _merge_streams(nb):
    """A cell's prints arrive as one or several stream outputs depending on when the kernel flushed: store one
    output per run of the same stream, so regenerating does not split a table between two outputs by chance."""
    for cell in nb.cells:
        merged = []
        for output in cell.get("outputs", []):
            if merged and output.get("output_type") == "stream" == merged[-1].get("output_type") \
                    and output.get("name") == merged[-1].get("name"):
                merged[-1]["text"] += output["text"]
            else:
                merged.append(output)
        if "outputs" in cell:
            cell["outputs"] = merged
    return nb


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_PLACEHOLDER = "运行这一格后会显示交互控件"


def widget_placeholders(nb):
    """A stored widget's plain-text fallback is its repr (``VBox(children=…``); before the first run a learner
    sees that text, so store one Chinese line instead. The widget view itself is kept."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_MIME in data:
                data["text/plain"] = WIDGET_PLACEHOLDER
    return nb


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _references(value, state: dict) -> list[str]:
    """The models ``value`` (a model's state, or part of it) names, in a fixed order (dict keys sorted, lists
    in order): "IPY_MODEL_<id>" (children, layout, style…) and an Output widget's stored views' model_id."""
    if isinstance(value, dict):
        return [ref for key in sorted(value) for ref in _references(value[key], state)]
    if isinstance(value, list):
        return [ref for item in value for ref in _references(item, state)]
    if isinstance(value, str):
        model = value.removeprefix("IPY_MODEL_")
        return [model] if model in state else []
    return []


def _walk(key: str, root: str, state: dict, found: dict[str, str]) -> None:
    """Give ``root`` and each model reached from it not found before ``key`` in ``found``, depth first (a
    model, then the models it names): the order ``_numbered`` numbers them in."""
    stack = [root]
    while stack:
        model = stack.pop()
        if model in state and model not in found:
            found[model] = key
            stack.extend(reversed(_references(state[model], state)))


def _digest(model: str, state: dict, memo: dict[str, str]) -> str:
    """A hash of what ``model`` shows: its state, each model it names replaced by that model's digest
    (so the kernel's random ids drop out); a model naming itself through others counts as "ring"."""
    if model not in memo:
        memo[model] = "ring"
        text = json.dumps(state[model], sort_keys=True)
        for ref in _references(state[model], state):
            text = text.replace(ref, _digest(ref, state, memo))
        memo[model] = hashlib.sha1(text.encode()).hexdigest()
    return memo[model]


def _widget_keys(nb, state: dict, name: str) -> dict[str, str]:
    """{model: what its stable name is hashed from}: its root's key and its number among that root's models.

    A root is a widget a cell's outputs display (in cell order), then a model the kernel still holds that
    no other model names and nobody displayed, then (models naming each other in a ring) any model left, in
    creation order. A root's key is what it shows, itself and all it contains (``_digest``), counted when
    the same widget is shown twice; the models under it take its key and their order in it. Not the
    cell's id: README's 「改编这节课」 adds a question by editing the cell that asks S5, so a key by cell
    renamed all of S5's 49 models (most of 5,551 changed lines); by content, a widget keeps its name
    wherever it moves and whatever cell shows it, and only a widget that shows something else is renamed."""
    memo: dict[str, str] = {}
    views = [output.get("data", {}).get(WIDGET_MIME, {}).get("model_id")
             for cell in nb.cells for output in cell.get("outputs", [])]
    named = {ref for model in state for ref in _references(state[model], state) if ref != model}
    roots = [view for view in views if view in state] + [model for model in state if model not in named]
    found: dict[str, str] = {}
    repeats: dict[str, int] = {}
    for root in [*roots, *state]:
        if root not in found:
            digest = _digest(root, state, memo)
            repeats[digest] = repeats.get(digest, 0) + 1
            _walk(f"{digest}:{repeats[digest]}", root, state, found)
    return {model: f"{name}:{key}" for model, key in _numbered(found).items()}


def _numbered(found: dict[str, str]) -> dict[str, str]:
    """{model: its key and its number among the models with that key, in the order they were found}."""
    counts: dict[str, int] = {}
    numbered = {}
    for model, key in found.items():
        counts[key] = counts.get(key, 0) + 1
        numbered[model] = f"{key}:{counts[key]}"
    return numbered


def stable_widget_ids(nb, name: str):
    """The kernel names each widget model with a random uuid, so every rebuild rewrote every stored widget
    (thousands of changed lines in notebooks nobody touched): rename each, everywhere it is written (its view
    in an output, its state, another model's "IPY_MODEL_<id>"), to 32 hex digits (a uuid's shape, which
    notebooks/nbval_sanitize.cfg matches) of a hash of the notebook's name and what the model is.

    They used to be numbered in the order the kernel made them, across the notebook, so one new widget
    renamed every later one: an instructor's one added question showed as 12,054 changed lines. Now a
    model is named by what the widget it belongs to shows and its place in that widget (``_widget_keys``),
    so a new widget changes the lines about it and no other widget's name."""
    import nbformat

    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    if not state:
        return nb
    new = {model: hashlib.sha1(key.encode()).hexdigest()[:32] for model, key in _widget_keys(nb, state, name).items()}
    text = re.sub("|".join(map(re.escape, new)), lambda m: new[m[0]], nbformat.writes(nb))
    return nbformat.reads(text, as_version=4)


def execute(nb, notebook: Path = NOTEBOOK):
    from nbclient import NotebookClient

    env_before = dict(os.environ)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # scripts/test.sh exports MPLBACKEND=Agg: a kernel started under it draws nothing on plt.show() unless its
    # notebook says %matplotlib inline (lab_ablation's stored figure was empty for this reason)
    os.environ.pop("MPLBACKEND", None)
    # A fresh progress file: the stored outputs and widget state never carry a developer's own answers.
    scratch = tempfile.mkdtemp(prefix="day11-build-")  # removed after the run: one per build would pile up in /tmp
    os.environ["LESSON_PROGRESS_FILE"] = os.path.join(scratch, "progress.json")
    # The kernel imports this checkout's lesson_lib (and its question files), whichever one the venv installed.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env_before.get("PYTHONPATH")) if p)
    try:
        client = NotebookClient(
            nb,
            timeout=KERNEL_TIMEOUT,
            kernel_name="python3",
            resources={"metadata": {"path": str(notebook.parent)}},
            store_widget_state=True,
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
        shutil.rmtree(scratch, ignore_errors=True)
    nb = widget_placeholders(_merge_streams(_strip_volatile(nb)))
    return stable_widget_ids(nb, notebook.stem)


ASK = re.compile(r"""\bask\(\s*["']([^"']*)["']""")


def asked() -> list[tuple[Path, int, str]]:
    """Every ``ask("…")`` in the notebooks' sources: (its .md file, its line, the id it asks)."""
    found = []
    for src in (SRC, LABS_SRC):
        for path in sorted(src.rglob("*.md")):
            for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                found += [(path, line, qid) for qid in ASK.findall(text)]
    return found


def ask_problems(bank: dict) -> list[str]:
    """An id a notebook asks that no question file has (a typo would stop the build deep in a kernel
    traceback), and a counted question no notebook asks (its learners could never finish the quiz)."""
    asks = asked()
    known = "、".join(bank)
    problems = [f"{path.relative_to(ROOT)} 第 {line} 行：ask(\"{qid}\") 问的题目 {qid!r} 不在任何题目文件里；"
                f"已有的编号是 {known}（大小写也要一样）。" for path, line, qid in asks if qid not in bank]
    asked_ids = {qid for _, _, qid in asks}
    problems += [f"题目文件 {path.name}：题目 {qid} 没有在任何笔记本里被问到，学生的进度永远停在「还没做」："
                 f"在 {source_folder(path)} 的 .md 里用 ask(\"{qid}\") 问它，"
                 "或在题目里写 counted = false（不计入进度）。"
                 for qid, (path, q) in bank.items() if q.counted and qid not in asked_ids]
    return problems


def source_folder(question_file: Path) -> str:
    """Where the notebook that asks a file's questions has its sources: a lab's file (lab_*.toml) its lab's
    folder in notebooks/labs_src, any other the core's notebooks/src."""
    lab = question_file.stem.startswith("lab_")
    folder = LABS_SRC / question_file.stem if lab else SRC
    return f"{folder.relative_to(ROOT)}/"


def check_questions() -> int:
    """0 when every question file reads, every question takes its own test answers as they say (a right
    answer right, or at worst asked to be rewritten; a wrong one never right) and the notebooks ask
    exactly the known ids, every counted question among them; else 1, with what is wrong in Chinese."""
    if str(ROOT) not in sys.path:  # this checkout's lesson_lib, with its question files
        sys.path.insert(0, str(ROOT))
    from lesson_lib.practice import questions, quiz

    try:
        bank = questions._bank()  # {id: (its file, the question)}, read and checked as the lesson reads them
    except questions.QuestionDataError as exc:
        print(exc)
        return 1
    problems = []
    for qid, (path, q) in bank.items():
        problems += [f"题目文件 {path.name}：题目 {qid} 的 right_answers 里的 {a!r} 没有被判对，学生会看到："
                     f"{' '.join(fb.message.split())}" for a in q.right_answers
                     if (fb := quiz.check(qid, a)).verdict not in ("right", "form")]
        problems += [f"题目文件 {path.name}：题目 {qid} 的 wrong_answers 里的 {a!r} 被判成了对的"
                     for a in q.wrong_answers if quiz.check(qid, a).correct]
    problems += ask_problems(bank)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"读了 lesson_lib/sections/*.toml 里的 {len(bank)} 道题：每道题自己的对答案没有被判错（个别只被要求换个"
              "写法），错答案没有被判对；笔记本问的编号都有。")
    return 1 if problems else 0


CLASS_MINUTES = 75  # what tests/test_lesson_time.py holds the core to


def report_lesson_time() -> None:
    """The core's class time by the instructor's model (benchmarks/bench_lesson_time.py, read from the
    stored notebook), and what to do when it is over the 75 minutes of one class."""
    spec = importlib.util.spec_from_file_location("bench_lesson_time", ROOT / "benchmarks" / "bench_lesson_time.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    in_class, home = bench.totals(bench.estimate(nb))
    print(f"课时估计（python benchmarks/run.py lesson_time）：课上 {in_class:.1f} 分钟，课后 {home:.1f} 分钟。")
    if in_class > CLASS_MINUTES:
        print(f"课上超过了 {CLASS_MINUTES} 分钟（一节课）：删短讲解，或把一部分挪到课后（.md 里那一格标上 "
              ":tags: [homework]，讲解格写 +++ {\"tags\": [\"homework\"]}）；不然 tests/test_lesson_time.py 会失败。")


def check(names=None) -> int:
    """0 when every question checks and every named notebook (default: all) matches its source and has stored
    outputs, else 1."""
    questions_ok = check_questions()
    notebooks_ok = max(_check_one(*NOTEBOOKS[name][:2]) for name in (names or NOTEBOOKS))
    if not (questions_ok or notebooks_ok):  # the estimate reads the questions: a bad file was said above
        report_lesson_time()
    return max(questions_ok, notebooks_ok)


def _check_one(src: Path, notebook: Path) -> int:
    import nbformat

    if not notebook.exists():
        print(f"没有 {notebook.relative_to(ROOT)}：运行 python scripts/build_notebook.py {notebook.stem}")
        return 1
    stored = nbformat.read(notebook, as_version=4)
    built = assemble(src=src)
    got = [(c.cell_type, c.source, c.metadata.get("tags", []), c.metadata.get("jupyter", {})) for c in stored.cells]
    want = [(c.cell_type, c.source, c.metadata.get("tags", []), c.metadata.get("jupyter", {})) for c in built.cells]
    if got != want:
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                at = next((k for k, (a, b) in enumerate(zip(g[1], w[1])) if a != b), min(len(g[1]), len(w[1])))
                start = max(at - 20, 0)  # from just before the first character that differs
                print(f"{notebook.name} 的第 {i} 格和 {src.relative_to(ROOT)} 不一样：笔记本里是 "
                      f"…{g[1][start:at + 40]!r}…，源文件里是 …{w[1][start:at + 40]!r}…")
                break
        else:
            print(f"{notebook.name} 有 {len(got)} 格，它的源文件有 {len(want)} 格")
        print(f"运行 python scripts/build_notebook.py {notebook.stem}（改 {src.relative_to(ROOT)}/*.md，"
              "不要直接改 .ipynb）")
        return 1
    missing = [i for i, c in enumerate(stored.cells) if c.cell_type == "code" and c.execution_count is None]
    if missing:
        print(f"{notebook.name} 的代码格 {missing[:5]} 没有保存的输出："
              f"运行 python scripts/build_notebook.py {notebook.stem}")
        return 1
    print(f"{notebook.relative_to(ROOT)}：{len(got)} 格都和 {src.relative_to(ROOT)} 一致")
    return 0


# What a build imports beyond a learner's setup (requirements.txt): requirements-dev.txt, installed by setup.sh --dev
BUILD_PACKAGES = ("jupytext", "nbformat", "nbclient")
MISSING_PACKAGES = ("缺少生成笔记本用的软件包 {missing}（在 requirements-dev.txt 里）：先运行一次 "
                    "bash scripts/setup.sh --dev --no-open，再运行 .venv/bin/python scripts/build_notebook.py。")
DESCRIPTION = """\
从 notebooks/src/*.md（核心课）和 notebooks/labs_src/<名字>/*.md（选做实验）生成笔记本和它们保存的输出。
先检查 lesson_lib/sections/*.toml 里的全部题目（README「改编这节课」），有错就停下，不重建。

  python scripts/build_notebook.py                    # 全部笔记本：生成并运行，保存输出
  python scripts/build_notebook.py lab_ablation       # 只生成写出名字的笔记本
  python scripts/build_notebook.py --check            # 只检查：题目，和 .ipynb 是否与源文件一致
  python scripts/build_notebook.py --only 06 --out /tmp/draft.ipynb   # 草稿：只要第 6 节（和第 0 节）"""


def _parser() -> argparse.ArgumentParser:
    """The command line, its help and errors in Chinese (argparse's own words too: personal_copy.ChineseParser)."""
    spec = importlib.util.spec_from_file_location("personal_copy", Path(__file__).with_name("personal_copy.py"))
    personal_copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(personal_copy)
    parser = personal_copy.ChineseParser(description=DESCRIPTION)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"要生成或检查的笔记本（默认全部：{', '.join(NOTEBOOKS)}）")
    parser.add_argument("--check", action="store_true", help="只检查，不重建：题目，以及笔记本和源文件是否一致")
    parser.add_argument("--no-execute", action="store_true", help="只拼出笔记本，不运行（没有输出）")
    parser.add_argument("--only", nargs="+", metavar="NN", help="草稿：只要这几节的 .md（第 0 节总在）")
    parser.add_argument("--out", type=Path, metavar="FILE", help="写到这里，不写课程的笔记本（草稿用）")
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in NOTEBOOKS]
    if unknown:
        parser.error(f"没有叫 {unknown[0]!r} 的笔记本；有的是：{'、'.join(NOTEBOOKS)}")
    if missing := [name for name in BUILD_PACKAGES if importlib.util.find_spec(name) is None]:
        print(MISSING_PACKAGES.format(missing="、".join(missing)))
        return 1
    if args.check:
        return check(args.names)
    if args.only and not args.out:
        parser.error("--only 生成的是草稿：同时写 --out，课程的笔记本才保持完整")
    if args.out and len(args.names) > 1:
        parser.error("--out 只写一本笔记本：最多写一个名字")
    import nbformat

    if check_questions():
        return 1
    for name in args.names or ([NOTEBOOK.stem] if args.out else NOTEBOOKS):
        src, notebook, _ = NOTEBOOKS[name]
        out = args.out or notebook
        nb = assemble(args.only, src)
        if not args.no_execute:
            start = time.perf_counter()
            nb = execute(nb, notebook)
            print(f"运行了 {name} 的 {len(nb.cells)} 格，用时 {time.perf_counter() - start:.1f} 秒")
        nbformat.write(nb, out)
        print(f"写好了 {out}")
    if not (args.out or args.no_execute):  # the estimate reads the stored core's outputs
        report_lesson_time()
    return 0


if __name__ == "__main__":
    sys.exit(main())
