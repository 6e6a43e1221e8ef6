"""README「改编这节课」, done as an instructor does it, on a copy of the repository: change the number in one
question and add a choice question to §5 (its right and wrong answers with it) in §5's question file, ask it with
one line of §5's notebook source, run the one command. Two files a person edits; nothing else. Then the repository's
own checks of the questions run on the copy: the adapted lesson keeps them green."""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import scaled

from lesson_lib.practice import questions
from lesson_lib.practice.progress import current_version

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = Path("lesson_lib/sections/s05_head_lab.toml")
SOURCE = Path("notebooks/src/05_head_lab.md")
NEW_N = 100  # the number the instructor changes: S5's n = 50

NEW_QUESTION = '''
[[questions]]
id = "S5b"
kind = "single"
section = "第 5 节"
prompt = "S5b　把 h 从 {lo} 拖到 {hi} 时，每个头的 d_k 从 {d_k_lo} 变成多少？"
explanation = "解析：d_k = d_model / h = {d_model} / {hi} = {d_k_hi}。"
answer = "B"
right_answers = ["B", "b"]
wrong_answers = ["A", "C"]

[[questions.options]]
key = "A"
label = "{d_k_lo}"
why = "那是 h = {lo} 时的宽度。"

[[questions.options]]
key = "B"
label = "{d_k_hi}"

[[questions.options]]
key = "C"
label = "{hi}"
why = "{hi} 是头数 h，不是 d_k：{d_model} 平均分给 {hi} 个头，每个头几维？"
'''

ANSWER = """
import json, sys
from lesson_lib.practice import questions, quiz
from lesson_lib.practice.progress import Progress
from lesson_lib.practice.widgets import stored_answer

progress = Progress(sys.argv[1])
out = {}
for qid, answer in (("S5b", "A"), ("S5b", "B"), ("S5", "AB")):
    fb = quiz.check(qid, answer)
    progress.record(fb, stored_answer(questions.question(qid), answer))
    out.setdefault(qid, []).append([fb.verdict, list(fb.mistakes)])
out["ids"] = list(questions.question_ids())
out["S5.n"] = questions.question("S5").values["n"]
out["S5.version"] = questions.question("S5").version
out["entry"] = Progress(sys.argv[1]).entry("S5b")
print(json.dumps(out))
"""


def test_the_readme_shows_the_question_this_test_adds():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    assert questions.tomllib.loads(textwrap.dedent(block)) == questions.tomllib.loads(NEW_QUESTION)


def test_options_that_show_alike_are_refused_naming_the_file_the_question_and_the_option(tmp_path):
    """README's example once had 「A. 512」 ({d_k_lo}) and 「C. 512」 ({d_model}): the same at h = 1."""
    path = tmp_path / QUESTIONS.name
    alike = NEW_QUESTION.replace('label = "{hi}"', 'label = "{d_model}"')
    path.write_text((ROOT / QUESTIONS).read_text(encoding="utf-8") + alike, encoding="utf-8")
    with pytest.raises(questions.QuestionDataError) as refused:
        questions.read_file(path)
    assert (refused.value.file, refused.value.question, refused.value.field) == (path, "S5b", "options[2].label")
    path.write_text((ROOT / QUESTIONS).read_text(encoding="utf-8") + NEW_QUESTION, encoding="utf-8")
    assert [q.id for q in questions.read_file(path)][-1] == "S5b"  # the README's own example reads


def _copy(dest: Path) -> Path:
    """The parts of the repository the command and the class report read."""
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", ".ipynb_checkpoints", "*.npz")
    for part in ("lesson_lib", "notebooks", "scripts", "tests", "benchmarks"):
        shutil.copytree(ROOT / part, dest / part, ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", dest)  # pytest's settings
    return dest


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _run(args, cwd: Path, timeout_s: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the copy's lesson_lib, whichever one the venv installed
    env.pop("LESSON_PROGRESS_FILE", None)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=scaled(timeout_s))  # fmt: skip


@pytest.mark.slow
def test_an_instructor_changes_a_number_and_adds_a_question_with_one_command(tmp_path):
    copy = _copy(tmp_path / "课程 copy")
    before = {path: path.read_bytes() for path in copy.rglob("*") if path.is_file()}
    _edit(copy / QUESTIONS, "n = 50  # tokens", f"n = {NEW_N}  # tokens")
    with (copy / QUESTIONS).open("a", encoding="utf-8") as f:
        f.write(NEW_QUESTION)
    _edit(copy / SOURCE, 'ask("S5")\n', 'display(ask("S5"), ask("S5b"))\n')
    edited = {path for path in before if path.read_bytes() != before[path]}
    assert edited == {copy / QUESTIONS, copy / SOURCE}  # two files a person edits

    built = _run(["scripts/build_notebook.py", "day11_multi_head_attention"], copy, 900)
    assert built.returncode == 0, built.stdout + built.stderr
    # the build says the class time as benchmarks/run.py lesson_time does, and what to do when over one class
    (said,) = [line for line in built.stdout.splitlines() if "run.py lesson_time" in line]
    estimated = _run(["benchmarks/run.py", "lesson_time"], copy, 120)
    (total,) = [line for line in estimated.stdout.splitlines() if line.split()[:1] == ["total"]]
    minutes = float(total.split()[1])
    assert float(re.findall(r"\d+\.\d", said)[0]) == minutes
    assert ("tests/test_lesson_time.py" in built.stdout) == (minutes > 75)

    # the repository's checks of the questions, on the adapted copy: S5b is covered by its own right and wrong
    # answers (not by tests/quiz_answers.py), and the stored progress file loses no answer though S5 changed
    checks = ["tests/test_quiz.py", "-k", "table_is_large or kept_right or kept_wrong",
              "tests/test_question_data.py::test_a_progress_file_saved_before_the_move_loses_no_answer_and_"
              "unchanged_questions_keep_their_version"]
    tested = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *checks], copy, 600)
    assert tested.returncode == 0, tested.stdout[-3000:]
    assert re.search(r"\bS5b\b", _run(["-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                        "-n", "0", *checks], copy, 300).stdout)  # S5b's own answers ran

    notebook = json.loads((copy / "notebooks" / "day11_multi_head_attention.ipynb").read_text(encoding="utf-8"))
    asking = [c for c in notebook["cells"] if c["cell_type"] == "code" and 'ask("S5b")' in "".join(c["source"])]
    assert len(asking) == 1 and asking[0]["outputs"]  # the new question's cell ran and shows a widget
    assert "S5b" in json.dumps(notebook["metadata"]["widgets"])  # its prompt is in the stored widget state

    progress = tmp_path / "progress.json"
    answered = _run(["-c", ANSWER, str(progress)], copy, 120)
    assert answered.returncode == 0, answered.stderr
    got = json.loads(answered.stdout)
    assert got["S5b"] == [["wrong", ["option=A"]], ["right", []]]  # checked by the engine
    assert got["ids"].index("S5b") == got["ids"].index("S5") + 1  # counted by progress, after S5
    assert got["S5.n"] == NEW_N and got["S5.version"] != current_version("S5")  # the changed number is asked
    assert got["S5"] == [["right", []]]
    assert [a["verdict"] for a in got["entry"]["attempts"]] == ["wrong", "right"]  # the progress file records it

    report = _run(["scripts/class_report.py", str(progress), "--out", str(tmp_path / "report")], copy, 120)
    assert report.returncode == 0, report.stdout + report.stderr
    with (tmp_path / "report" / "class-report.csv").open(encoding="utf-8-sig") as f:  # Excel's BOM
        rows = {(r["类别"], r["项目"], r["指标"]): r["数值"] for r in csv.DictReader(f)}  # its Chinese header
    assert rows[("题目", "S5b", "作答")] == "1" and rows[("题目", "S5b", "后来答对")] == "1"
    assert rows[("题目", "S5", "一次答对")] == "1"
