"""The class report counts what the students' own progress files hold, planted through the lesson's real checker."""

import csv
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from lesson_lib.practice import questions, quiz
from lesson_lib.practice.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("class_report", ROOT / "scripts" / "class_report.py")
class_report = importlib.util.module_from_spec(spec)
sys.modules["class_report"] = class_report  # dataclasses look their module up
spec.loader.exec_module(class_report)

RIGHT_Q2 = {"d_k": "32", "params": "不变"}
WRONG_Q2 = {"d_k": "64", "params": "不变"}  # d_k of h = 8 given for h = 16


def _answer(progress: Progress, qid: str, answer) -> None:
    feedback = quiz.check(qid, answer)
    assert not feedback.blank
    progress.record(feedback, answer)


def _exercise(progress: Progress, name: str, status: str, mistakes=()) -> None:
    result = SimpleNamespace(name=name, status=status, message="…", mistakes=tuple(mistakes), source=None)
    progress.record_exercise(result)


def _late_question() -> str:
    """A question the core notebook asks after §5 (so answering it means the student went on)."""
    asked = class_report.asked_in()
    return next(qid for qid, where in asked.items() if where > 5 and qid in questions.question_ids())


@pytest.fixture
def planted_class(tmp_path):
    """12 students: 7 first answer Q2 with 64 (then 32), 3 forget the transpose in split_heads, 2 stop after §5
    (Q2 is asked in the review at the end)."""
    late = _late_question()
    ids = questions.question_ids()
    early = next(qid for qid, where in class_report.asked_in().items() if where == 5 and qid in ids)
    s5_right = next(a for q, a, right in _answers() if q == early and right)
    for i in range(12):
        path = tmp_path / f"home{i:02d}" / "progress.json"
        progress = Progress(path)
        if i < 3:
            _exercise(progress, "split_heads", "wrong", ["transpose"])
        elif i < 6:
            _exercise(progress, "split_heads", "passed")
        _answer(progress, early, s5_right)
        if i >= 10:  # the last two stop after §5
            continue
        if i < 7:
            _answer(progress, "Q2", WRONG_Q2)
        _answer(progress, "Q2", RIGHT_Q2)
        if late != "Q2":
            _answer(progress, late, next(a for q, a, right in _answers() if q == late and right))
    return tmp_path


def _answers():
    """(question id, answer, right?) from the adversarial answer table the quiz tests use."""
    import quiz_answers

    return [(q, a, expected == "right") for q, a, expected, *_ in quiz_answers.TABLE]


def _rows(out: Path):
    with open(out / "class-report.csv", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def test_counts_equal_the_planted_ones(planted_class, tmp_path):
    report = class_report.build([str(planted_class)])
    assert report.n == 12
    q2 = report.questions["Q2"]
    assert (q2.answered, q2.first_right, q2.later_right, q2.never) == (10, 3, 7, 0)
    top_count, top_q, top_mistake, _, _ = report.misconceptions[0]
    assert (top_count, top_q, top_mistake) == (7, "Q2", "d_k=64")
    ex = report.exercises["split_heads"]
    assert (ex.tried, ex.passed, ex.failing, ex.mistakes["transpose"]) == (6, 3, 3, 3)
    last = max(class_report.asked_in()[q] for q in ("Q2", _late_question()))
    assert report.stopped[5] == 2 and report.stopped[last] == 10


def test_page_and_csv_say_the_same_numbers(planted_class, tmp_path):
    out = tmp_path / "out"
    assert class_report.main([str(planted_class), "--out", str(out)]) == 0
    rows = _rows(out)
    got = {(r["kind"], r["item"], r["measure"]): int(r["count"]) for r in rows}
    assert got[("misconception", "Q2", "d_k=64")] == 7
    assert got[("exercise_mistake", "split_heads", "transpose")] == 3
    assert got[("stopped", "第 5 节", "students")] == 2
    page = (out / "class-report.html").read_text("utf-8")
    assert "home00" not in page and "学生 1<" in page  # anonymous: numbered, no home folder names
    assert got[("student", "学生 11", "last_section")] == 5
    named = tmp_path / "named"
    class_report.main([str(planted_class), "--out", str(named), "--names"])
    assert "home00" in (named / "class-report.html").read_text("utf-8")  # names only with --names
    for svg in page.split("<svg")[1:]:
        assert 'aria-label="' in svg.split(">", 1)[0]  # every picture says what it shows


def test_bad_files_are_skipped_with_a_line(planted_class, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "garbage.json").write_text("{not json", "utf-8")
    (bad / "other.json").write_text(json.dumps({"format": "another-course", "version": 1}), "utf-8")
    (bad / "newer.json").write_text(json.dumps({"format": "day11-progress", "version": 99}), "utf-8")
    decoy = tmp_path / "decoy.txt"
    decoy.write_text("not yours", "utf-8")
    os.symlink(decoy, bad / "link.json")
    report = class_report.build([str(planted_class), str(bad)], warn=print)
    assert report.n == 12
    assert len(report.skipped) == 4
    assert decoy.read_text("utf-8") == "not yours"


def test_answers_to_an_earlier_version_are_kept_apart(tmp_path):
    path = tmp_path / "s" / "progress.json"
    _answer(Progress(path), "Q2", WRONG_Q2)
    data = json.loads(path.read_text("utf-8"))  # as if the question changed after the student answered it
    entry = data["questions"]["Q2"]
    entry["question_version"] = "an-old-version"
    for attempt in entry["attempts"]:
        attempt["question_version"] = "an-old-version"
    path.write_text(json.dumps(data), "utf-8")
    report = class_report.build([str(path)])
    q2 = report.questions["Q2"]
    assert (q2.answered, q2.old, sum(q2.mistakes.values())) == (0, 1, 0)


def test_reading_never_changes_a_students_file(planted_class):
    files = sorted(planted_class.rglob("progress.json"))
    before = [f.read_bytes() for f in files]
    class_report.build([str(planted_class)])
    assert [f.read_bytes() for f in files] == before


def test_an_export_beside_its_progress_file_is_the_same_student(planted_class):
    for live in sorted(planted_class.rglob("progress.json"))[:3]:  # three students pressed 「导出进度」
        Progress(live).export()
    assert len(list(planted_class.rglob("progress-export.json"))) == 3
    report = class_report.build([str(planted_class)])
    assert report.n == 12 and report.questions["Q2"].answered == 10
    exports = class_report.build([str(p) for p in planted_class.rglob("progress-export.json")])
    assert exports.n == 3  # collected exports alone are read


def test_the_checkers_named_slips_reach_the_page_by_their_chinese_names(tmp_path, monkeypatch):
    from lesson_lib.practice import exercises

    def forgets_transpose(x, h):
        return x.reshape(x.shape[0], h, -1)

    def reshapes_straight(x, h):
        return x.reshape(h, x.shape[0], -1)

    def takes_strided_columns(x, h):
        return x.reshape(x.shape[0], -1, h).transpose(2, 0, 1)

    named = set()
    for i, slip in enumerate((forgets_transpose, reshapes_straight, takes_strided_columns)):
        monkeypatch.setenv("LESSON_PROGRESS_FILE", str(tmp_path / f"s{i}" / "progress.json"))
        named.update(exercises.check("split_heads", slip).mistakes)
    assert named == {"transpose", "reshape_without_transpose", "strided"}
    assert named <= set(exercises.MISTAKES)
    report = class_report.build([str(tmp_path)])
    shown = {m: text for _, item, m, text, _ in report.misconceptions if item == "split_heads"}
    assert {m: text.split("：")[0] for m, text in shown.items()} == {m: exercises.MISTAKES[m] for m in named}


def test_recheck_as_root_refuses_and_runs_no_students_code(planted_class, tmp_path, monkeypatch):
    """Students' files are untrusted: --recheck started as root stops before it reads a file or runs a line."""
    ran = []
    monkeypatch.setattr(class_report.os, "geteuid", lambda: 0)
    monkeypatch.setattr(class_report, "build", lambda *a, **k: ran.append(a))
    out = tmp_path / "report"
    assert class_report.main([str(planted_class), "--recheck", "--out", str(out)]) == 2
    assert ran == [] and not out.exists()
