"""The class report counts what the students' own progress files hold, planted through the lesson's real checker."""

import csv
import dataclasses
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


# ------------------------------------------------------------------------------------- what a real class hands in
def _retried_class(folder: Path) -> None:
    """3 forget the transpose, then fix it; 2 pass, then run the stub again (Restart & Run All, or a fresh copy);
    1 never passes. The interview: one ticks a point of the rubric and a text of their own."""
    for i in range(6):
        progress = Progress(folder / f"s{i}" / "progress.json")
        if i < 3:
            _exercise(progress, "split_heads", "wrong", ["transpose"])
            _exercise(progress, "split_heads", "passed")
        elif i < 5:
            _exercise(progress, "split_heads", "passed")
            _exercise(progress, "split_heads", "todo")
        else:
            _exercise(progress, "split_heads", "wrong", ["strided"])


def test_a_mistake_fixed_later_is_counted_once_per_student_and_a_pass_stays(tmp_path):
    _retried_class(tmp_path)
    report = class_report.build([str(tmp_path)])
    ex = report.exercises["split_heads"]
    assert (ex.tried, ex.first_right, ex.later_right, ex.failing) == (6, 2, 3, 1)
    assert (ex.mistakes["transpose"], ex.mistakes["strided"]) == (3, 1)
    assert (3, "split_heads", "transpose") in [m[:3] for m in report.misconceptions]
    assert [passed for *_, passed in report.students] == [1, 1, 1, 1, 1, 0]


def test_only_the_rubrics_own_points_are_counted(tmp_path):
    from lesson_lib.practice import interview

    points = [p.name for p in interview.interview_rubric().points]
    progress = Progress(tmp_path / "s" / "progress.json")
    progress.record(interview.interview_self_assess(points[:1]), "…", of=len(points))
    data = json.loads(progress.path.read_text("utf-8"))
    data["interview"]["attempts"][-1]["covered"].append("我自己加的一点")  # ticked text the rubric never had
    q1 = questions.question("Q1")
    progress.path.write_text(json.dumps(data), "utf-8")
    other = Progress(tmp_path / "t" / "progress.json")
    other.record(quiz.assess("Q1", [q1.key.points[0].name]), "…", of=len(q1.key.points))
    data = json.loads(other.path.read_text("utf-8"))
    data["questions"]["Q1"]["attempts"][-1]["covered"].append("不是要点")
    other.path.write_text(json.dumps(data), "utf-8")
    report = class_report.build([str(tmp_path)])
    assert report.interview == (1, {points[0]: 1})
    assert dict(report.questions["Q1"].covered) == {q1.key.points[0].name: 1}


def test_answers_to_an_earlier_version_kept_in_format_3_are_counted_apart_never_right(tmp_path):
    path = tmp_path / "s" / "progress.json"
    progress = Progress(path)
    progress.record(dataclasses.replace(quiz.check("Q2", RIGHT_Q2), version="an-old-version"), "32")
    progress.record(quiz.check("Q2", WRONG_Q2), "64")  # the question changed: the right answer is an earlier one's
    assert json.loads(path.read_text("utf-8"))["earlier"]["Q2"][0]["solved"]
    q2 = class_report.build([str(path)]).questions["Q2"]
    assert (q2.answered, q2.first_right, q2.later_right, q2.never, q2.old) == (1, 0, 0, 1, 1)


FIXTURES = Path(__file__).parent / "fixtures"


def test_every_format_the_lesson_has_written_is_read(tmp_path):
    v1 = {"format": "day11-progress", "version": 1, "questions": {"Q2": {"answer": "32", "attempts": 1,
          "solved": True, "last": "right", "history": [["32", "right"]]}},
          "exercises": {"split_heads": {"status": "passed", "message": "全部通过！", "checks": 1}}, "interview": {}}
    (tmp_path / "v1.json").write_text(json.dumps(v1), "utf-8")
    (tmp_path / "v2.json").write_bytes((FIXTURES / "progress-v2.json").read_bytes())  # the lesson's own, 41abdf7
    _answer(Progress(tmp_path / "v3" / "progress.json"), "Q2", RIGHT_Q2)
    report = class_report.build([str(tmp_path)], warn=pytest.fail)
    assert report.n == 3 and report.exercises["split_heads"].passed == 2
    assert report.questions["Q2"].old + report.questions["Q2"].answered == 3  # v1's answer: an earlier version's


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _malformed() -> dict[str, bytes]:
    """File name -> content: each a student's file with one field of the wrong type or size."""
    base = {"format": "day11-progress", "version": 3, "questions": {}, "exercises": {}, "interview": {}}
    attempt = {"answer": "32", "verdict": "right", "mistake": None, "question_version": None}
    item = {"attempts": [attempt], "n_attempts": 1, "question_version": None, "first_try": "right",
            "final": "right", "solved": True, "answer": "32"}  # fmt: skip
    check = {"checks": [{"result": "passed", "mistakes": []}], "n_checks": 1, "passed": True, "result": "passed",
             "message": "", "mistakes": [], "source": None, "passed_source": None}  # fmt: skip
    bad = {
        "number-for-list": {"questions": {"Q2": {**item, "attempts": 5}}},
        "list-for-string": {"questions": {"Q2": {**item, "attempts": [{**attempt, "verdict": ["right"]}]}}},
        "huge-string": {"exercises": {"split_heads": {**check, "mistakes": ["x" * 1_000_000]}}},
        "lone-surrogate": {"questions": {"Q2": {**item, "attempts": [{**attempt, "mistake": "d_k=\ud800"}]}}},
        "v2-number-for-list": {"version": 2, "exercises": {"split_heads": {"result": "wrong", "checks": 1,
                                                                           "mistakes": 7}}},
        "bool-for-count": {"exercises": {"split_heads": {**check, "n_checks": True}}},
        "earlier-not-a-list": {"earlier": {"Q2": item}},
    }
    out = {name: json.dumps({**base, **fields}) for name, fields in bad.items()}
    out["deep"] = json.dumps(base)[:-1] + f', "x": {_deep(100_000)}}}'  # RecursionError in json.loads
    out["root-is-a-list"] = "[]"
    out = {name: text.encode() for name, text in out.items()}
    out["not-utf8"] = b'{"format": "day11-progress", "version": 3, "x": "\xff"}'
    return out


def test_each_malformed_file_is_one_line_and_the_rest_are_counted(planted_class, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    for name, content in _malformed().items():
        (bad / f"{name}.json").write_bytes(content)
    out = tmp_path / "out"
    assert class_report.main([str(planted_class), str(bad), "--out", str(out)]) == 0
    lines = capsys.readouterr().err.splitlines()
    named = [[name for name in _malformed() if str(bad / f"{name}.json") in line] for line in lines]
    assert sorted(names[0] for names in named) == sorted(_malformed()) and all(len(n) == 1 for n in named)
    assert (out / "class-report.html").exists() and _rows(out)  # the page and the CSV, for the rest
    report = class_report.build([str(planted_class), str(bad)])
    assert report.n == 12 and report.questions["Q2"].answered == 10
