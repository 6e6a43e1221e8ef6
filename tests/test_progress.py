"""The learner's progress file: atomic saves, restore after a restart, bad files kept aside, export, summary."""

from __future__ import annotations

import contextlib
import json
import os
import re
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import CJK, scaled

from lesson_lib.practice import feedback as qf
from lesson_lib.practice import progress, quiz
from lesson_lib.practice import questions as qq
from lesson_lib.practice.exercises import ExerciseResult
from lesson_lib.practice.feedback import Feedback
from lesson_lib.practice.progress import FORMAT, VERSION, Progress
from lesson_lib.sections import exercises

INTERVIEW = "面试"  # §8's self-explanation: a question of the bank outside the quiz's count


@pytest.fixture
def path(tmp_path):
    return tmp_path / "learner" / "progress.json"


def _new(path) -> Progress:
    """What a fresh kernel does when the cells run again: read the same file."""
    return Progress(path, tuple(exercises.EXERCISES))


def _interview_check(answer) -> Feedback:
    return quiz.check(INTERVIEW, answer)


def _interview_assess(ticked) -> Feedback:
    return quiz.assess(INTERVIEW, ticked)


def _solved(p: Progress, qid: str) -> bool:
    return p.entry(qid).get("solved", False)


def _tries(p: Progress, qid: str) -> int:
    return p.entry(qid).get("n_attempts", 0)


def _states(p: Progress) -> list[tuple[str, str]]:
    """(item, done/tried/todo) for every item of the lesson."""
    return [(name, state) for _, name, state in p.items()]


def _verdict(qid: str, right: bool = False) -> Feedback:
    """A judged attempt at any id (what a checker returns, without asking one)."""
    return Feedback(right, "", question_id=qid)


def _everything_right(p: Progress) -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from quiz_answers import TABLE

    right = {qid: answer for qid, answer, verdict, _ in TABLE if verdict == "right" and qid in qq.question_ids()}
    assert set(right) | {"Q1"} == set(qq.question_ids())
    for qid, answer in right.items():
        p.record(quiz.check(qid, answer), answer)
    q1 = qq.question("Q1")
    p.record(quiz.check("Q1", "单头只有一组权重。"), "单头只有一组权重。")
    p.record(quiz.assess("Q1", [q1.key.points[0].name]), "…", of=len(q1.key.points))  # a tick, not a grade
    for name in exercises.EXERCISES:
        p.record_exercise(ExerciseResult(name, "passed", "全部通过！"))
    good = ("单头只有一组权重，加权平均会抹平不同角色；多头拆成子空间，算力守恒；头数要适中，太多时 d_k 过窄。")
    p.record(_interview_check(good), good)
    points = [point.name for point in qq.question(INTERVIEW).key.points]
    p.record(_interview_assess(points), good, of=len(points))


def test_answers_survive_a_restart(path):
    p = _new(path)
    p.record(quiz.check("Q4", "A"), "A")
    p.record(quiz.check("Q4", "B"), "B")
    p.record(quiz.check("Q5", {"A", "B"}), {"A", "B"})
    p.record_exercise(ExerciseResult("split_heads", "wrong", "形状不对"))
    said = "单头会把信息平均掉。"
    p.record(_interview_check(said), said)
    again = _new(path)
    entry = again.entry("Q4")
    assert (entry["n_attempts"], entry["solved"], entry["answer"], entry["final"]) == (2, True, "B", "right")
    assert [(a["answer"], a["verdict"]) for a in entry["attempts"]] == [("A", "wrong"), ("B", "right")]
    assert again.entry("Q5")["answer"] == ["A", "B"] and not _solved(again, "Q5")
    assert again.data["exercises"]["split_heads"]["result"] == "wrong"
    assert again.entry(INTERVIEW)["answer"] == said and again.notice == ""


def test_each_attempt_records_verdict_mistake_and_question_version(path):
    """What issue 32's class report reads: per attempt the answer as typed, the verdict, the named mistake and the
    question version; per item the first-try and the final result."""
    p = _new(path)
    typed = [["64", "不变"], ["33", "不变"], ["32", "不变"]]
    sent = [json.dumps(answer, ensure_ascii=False) for answer in typed]
    for answer, text in zip(typed, sent):
        p.record(quiz.check("Q2", answer), text)
    saved = json.loads(path.read_text(encoding="utf-8"))["questions"]["Q2"]
    version = qq.question("Q2").version
    assert [(a["verdict"], a["mistake"], a["question_version"]) for a in saved["attempts"]] == [
        ("wrong", "d_k=64", version), ("wrong", None, version), ("right", None, version)]
    assert [a["answer"] for a in saved["attempts"]] == sent  # each as typed
    assert (saved["first_try"], saved["final"], saved["n_attempts"], saved["solved"]) == ("wrong", "right", 3, True)


def test_file_format_is_documented_and_versioned(path):
    p = _new(path)
    p.record(quiz.check("Q4", "B"), "B")
    p.record_exercise(ExerciseResult("split_heads", "passed", "全部通过！"))
    p.record(_interview_check("单头会平均"), "单头会平均")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT and data["version"] == VERSION and data["saved_at"]
    documented = _documented_example()
    assert set(documented) == set(data)  # the documented example shows every field a save writes
    assert set(documented["questions"]["Q2"]) == set(data["questions"]["Q4"])
    assert set(documented["questions"]["Q2"]["attempts"][0]) == set(data["questions"]["Q4"]["attempts"][0])
    assert set(documented["exercises"]["split_heads"]) == set(data["exercises"]["split_heads"])
    assert set(documented["interview"]) == set(data["interview"])


def _documented_example() -> dict:
    """The example file in docs/progress-format.md (the format's documentation), parsed as JSON."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "progress-format.md").read_text(encoding="utf-8")
    return json.loads(doc.split("```json\n", 1)[1].split("```", 1)[0])


def test_the_documented_example_is_a_file_the_lesson_reads(path):
    path.parent.mkdir(parents=True)
    example = _documented_example()
    for item in (example["questions"]["Q2"], example["interview"]):  # today's versions of the questions
        version = qq.question("Q2").version if "complete" not in item else progress.current_version(INTERVIEW)
        item["question_version"] = item["attempts"][0]["question_version"] = version
    path.write_text(json.dumps(example, ensure_ascii=False), encoding="utf-8")
    p = _new(path)
    assert p.notice == "" and p.entry("Q2")["final"] == "wrong" and p.entry(INTERVIEW)["n_attempts"] == 1
    split = p.data["exercises"]["split_heads"]
    assert (split["result"], split["passed"], split["n_checks"]) == ("todo", True, 3)  # a stub run after the pass
    assert ("split_heads", "done") in _states(p) and p.data["earlier"]["S3b"][0]["solved"]


def test_save_is_atomic(path, monkeypatch):
    p = _new(path)
    p.record(quiz.check("Q4", "A"), "A")
    before = path.read_bytes()
    replaced = []

    def failing_replace(src, dst):
        replaced.append((os.path.dirname(src), os.path.dirname(dst)))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    p.record(quiz.check("Q4", "B"), "B")  # the disk is full: the old file must be untouched
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert replaced and replaced[0][0] == replaced[0][1]  # the temp file sits beside the target
    assert CJK.search(p.notice) and progress.ENV_VAR in p.notice
    assert sorted(f.name for f in path.parent.iterdir()) == ["progress.json", "progress.json.lock"]  # no temp file
    assert _solved(p, "Q4")  # the progress is still in memory


def test_a_full_disk_mid_write_keeps_the_old_file(path, monkeypatch):
    p = _new(path)
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    before = path.read_bytes()
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *a, **k: Full(real_fdopen(fd, mode, *a, **k))
                        if "w" in mode else real_fdopen(fd, mode, *a, **k))  # fmt: skip
    p.record(quiz.check("Q4", "B"), "B")
    monkeypatch.undo()
    assert path.read_bytes() == before and CJK.search(p.notice)
    assert sorted(f.name for f in path.parent.iterdir()) == ["progress.json", "progress.json.lock"]
    p.record(quiz.check("Q4", "C"), "C")  # the next save carries both
    assert _tries(_new(path), "Q4") == 2 and p.notice == ""


BAD_FILES = [
    "{not json", '["a list"]', '{"format": "other", "version": 2}', "",
    json.dumps({"format": FORMAT, "version": VERSION + 1, "questions": {}}),
    json.dumps({"format": FORMAT, "version": VERSION, "questions": [], "exercises": {}, "interview": {}}),
    json.dumps({"format": FORMAT, "version": True, "questions": {}, "exercises": {}, "interview": {}}),
    json.dumps({"format": FORMAT, "version": 2.0, "questions": {}, "exercises": {}, "interview": {}}),
    json.dumps({"format": FORMAT, "version": "2", "questions": {}, "exercises": {}, "interview": {}}),
]  # fmt: skip


@pytest.mark.parametrize("content", BAD_FILES, ids=range(len(BAD_FILES)))
def test_a_bad_file_is_kept_aside_and_the_learner_starts_afresh(path, content):
    """Not JSON, not this lesson's, a newer format, or a field of the wrong type ("version": true is not 1)."""
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    p = _new(path)
    assert CJK.search(p.notice) and p.data["questions"] == {}
    kept = [f for f in path.parent.iterdir() if f.name.startswith("progress.json.unreadable-")]
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == content and str(kept[0]) in p.notice
    assert p.notice in p.summary()  # the summary shows the notice
    p.record(quiz.check("Q4", "B"), "B")
    assert _solved(_new(path), "Q4")


def test_an_unwritable_place_is_a_message_not_a_crash(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = Progress(blocker / "progress.json")  # its folder is a file
    p.record(quiz.check("Q4", "B"), "B")
    assert CJK.search(p.notice) and _solved(p, "Q4")


def test_summary_counts_questions_exercises_and_interview(path):
    p = _new(path)
    n_q, n_ex = len(qq.question_ids()), len(exercises.EXERCISES)
    lines = p.summary().splitlines()  # one line per kind, then the total: each count read back
    assert [f"0 / {n}" in line for line, n in zip(lines, (n_q, n_ex, 1, n_q + n_ex + 1), strict=True)] == [True] * 4
    assert [s for _, _, s in p.items()] == ["todo"] * (n_q + n_ex + 1)
    _everything_right(p)
    assert p.all_done() and f"{n_q + n_ex + 1} / {n_q + n_ex + 1}" in p.summary()


@pytest.mark.parametrize("spoil", ["exercise", "interview", "question", "missing_exercise"])
def test_never_all_done_while_something_failed_or_is_missing(path, spoil):
    p = _new(path)
    _everything_right(p)
    if spoil == "exercise":
        p.data["exercises"]["split_heads"]["passed"] = False
    elif spoil == "interview":  # written again after its self-assessment, not yet self-assessed
        p.record(_interview_check("单头会平均"), "单头会平均")
    elif spoil == "question":
        p.data["questions"]["S7b"]["solved"] = False
    else:
        del p.data["exercises"]["count_multiplies"]
    assert not p.all_done() and any(state != "done" for _, _, state in p.items())


def test_a_stub_run_writes_nothing(path):
    """Running the lesson (Restart & Run All with untouched stubs) leaves no file behind."""
    p = _new(path)
    p.record_exercise(ExerciseResult("split_heads", "todo", "还没实现"))
    p.record(quiz.check("Q2", ""), "")  # blank: not an attempt
    assert not path.exists()


def test_export_writes_the_json_the_class_report_reads(path):
    p = _new(path)
    p.record(quiz.check("Q4", "B"), "B")
    p.record_exercise(ExerciseResult("split_heads", "timeout", "是不是写了死循环？"))
    json_path, text = p.export()
    assert json_path.parent == path.parent  # beside the progress file, never elsewhere
    exported = json.loads(json_path.read_text(encoding="utf-8"))
    assert exported == json.loads(text)  # the text handed back (the download) is the file's
    assert exported["questions"]["Q4"]["solved"] and exported["format"] == FORMAT and exported["exported_at"]
    assert exported["exercises"]["split_heads"]["result"] == "timeout"


def test_default_path_follows_the_environment_or_platformdirs(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.setenv(progress.ENV_VAR, str(tmp_path / "x.json"))
    assert progress.default_path() == tmp_path / "x.json"
    monkeypatch.delenv(progress.ENV_VAR)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    expected = Path(platformdirs.user_data_dir(progress.APP_NAME, appauthor=False)) / "progress.json"
    assert progress.default_path() == expected == tmp_path / "data" / progress.APP_NAME / "progress.json"


def test_exercise_checks_are_recorded_in_the_default_progress(monkeypatch, tmp_path):
    monkeypatch.setenv(progress.ENV_VAR, str(tmp_path / "p.json"))
    exercises.check("split_heads", lambda x, h: None)
    assert progress.default_progress().data["exercises"]["split_heads"]["result"] == "wrong"
    saved = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert saved["exercises"]["split_heads"]["n_checks"] == 1 and not saved["exercises"]["split_heads"]["passed"]


def test_the_default_progress_counts_the_exercises_handed_in(monkeypatch, tmp_path):
    """The notebook's summary hands in the sections' exercises; a widget asking later without them keeps them."""
    monkeypatch.setenv(progress.ENV_VAR, str(tmp_path / "p.json"))
    progress.default_progress(tuple(exercises.EXERCISES))
    # phrase kept: the item kind progress.items() returns (an id the export uses), not a sentence
    named = [name for kind, name, _ in progress.default_progress().items() if kind == "代码练习"]
    assert named == list(exercises.EXERCISES)


def test_the_lesson_says_where_the_file_is(monkeypatch):
    from pathlib import Path

    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    shown = progress.default_path().relative_to(Path.home())
    source = Path(__file__).resolve().parents[1] / "README.md"  # the lesson keeps file paths out of its cells
    cells = source.read_text(encoding="utf-8")
    assert f"`~/{shown.as_posix()}`" in cells and progress.ENV_VAR in cells and "XDG_DATA_HOME" in cells


# ---------------------------------------------------------------------------------------------
# The attack table: every way the progress file can lose answers or break the lesson
# ---------------------------------------------------------------------------------------------

_SAVER = """
import sys
from lesson_lib.practice.progress import Progress

path, side, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
from lesson_lib.practice.feedback import Feedback

p = Progress(path)
for i in range(n):
    p.record(Feedback(False, "", question_id="Q2"), f"{side}{i}")
    p.record(Feedback(i == n - 1, "", question_id=side), f"{side}{i}")
assert not p.notice, p.notice
print(sorted(p.data["questions"]))
"""


def test_two_processes_saving_200_times_each_lose_nothing(path):
    import subprocess
    import sys

    n = 200
    procs = [subprocess.Popen([sys.executable, "-c", _SAVER, str(path), side, str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for side in ("A", "B")]  # fmt: skip
    outs = [p.communicate(timeout=scaled(300)) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    saved = json.loads(path.read_text(encoding="utf-8"))["questions"]
    assert saved["Q2"]["n_attempts"] == 2 * n  # both sides' attempts at the shared question, none lost
    assert saved["A"]["n_attempts"] == n and saved["B"]["n_attempts"] == n
    assert saved["A"]["solved"] and saved["B"]["solved"]
    # each process learned the other's answers: the side that finished last saw both in its own record
    assert any("'A', 'B', 'Q2'" in out for out, _ in outs)


def test_each_kernel_learns_the_others_answers(path):
    a, b = _new(path), _new(path)
    a.record(quiz.check("Q2", ["32", "不变"]), "32")
    b.record(quiz.check("Q4", "A"), "A")
    assert _solved(b, "Q2") and _tries(b, "Q4") == 1  # b's save merged a's answer in
    a.record_exercise(ExerciseResult("split_heads", "passed", "全部通过！"))
    assert _tries(a, "Q4") == 1 and _solved(a, "Q2")
    assert _new(path).data["questions"] == a.data["questions"]


def test_a_failed_save_is_retried_with_the_next_one(path, monkeypatch):
    p = _new(path)

    def full(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(progress, "_replace_file", full)
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    assert CJK.search(p.notice) and _solved(p, "Q2")
    monkeypatch.undo()
    p.record(quiz.check("Q4", "A"), "A")
    again = _new(path)
    assert _solved(again, "Q2") and _tries(again, "Q4") == 1 and p.notice == ""


@pytest.mark.parametrize("answer", ["64\ud800", "\udfff", "a\ud83d", "😀\ud800中文"])
def test_any_string_the_learner_can_type_is_saved(path, answer):
    p = _new(path)
    p.record(_verdict("Q2"), answer)
    p.record(quiz.check("Q2", ["32", "不变"]), "32")  # a later save still works
    assert p.notice == ""
    again = _new(path)
    assert _tries(again, "Q2") == 2 and _solved(again, "Q2")
    assert again.data["questions"]["Q2"]["attempts"][0]["answer"] == answer  # kept exactly
    again.export()  # the export writes it too


def _item(**change) -> dict:
    entry = {"attempts": [{"answer": "B", "verdict": "right", "mistake": None,
                           "question_version": qq.question("Q4").version}],
             "n_attempts": 1, "question_version": qq.question("Q4").version, "first_try": "right", "final": "right",
             "solved": True, "answer": "B"}  # fmt: skip
    entry.update(change)
    return entry


WRONG_ENTRIES = [
    ({"questions": {"Q2": "oops"}}, "Q2"),
    ({"questions": {"Q2": _item(n_attempts="1")}}, "Q2"),
    ({"questions": {"Q2": _item(solved="yes")}}, "Q2"),
    ({"questions": {"Q2": _item(solved=1)}}, "Q2"),
    ({"questions": {"Q2": _item(question_version=5)}}, "Q2"),
    ({"questions": {"Q2": _item(attempts=[["x"]])}}, "Q2"),
    ({"questions": {"Q2": _item(attempts=[{"answer": "32", "verdict": "self", "question_version": None,
                                          "covered": "①"}])}}, "Q2"),
    ({"questions": {"Q2": _item(attempts=[{"answer": "32", "verdict": "right", "question_version": True}])}}, "Q2"),
    ({"questions": {"Q2": _item(attempts=[{"answer": 32, "verdict": "right", "question_version": None}])}}, "Q2"),
    ({"exercises": {"split_heads": {"result": "passed", "checks": 1.0}}}, "split_heads"),
    ({"exercises": {"split_heads": []}}, "split_heads"),
    ({"interview": {"attempts": "many"}}, INTERVIEW),
]  # fmt: skip


@pytest.mark.parametrize(("entries", "dropped"), WRONG_ENTRIES, ids=range(len(WRONG_ENTRIES)))
def test_an_entry_that_does_not_read_is_dropped_the_rest_kept_and_the_file_set_aside(path, entries, dropped):
    data = {"format": FORMAT, "version": VERSION, "questions": {"Q4": _item()}, "exercises": {}, "interview": {}}
    for kind, value in entries.items():
        data[kind] = {**data[kind], **value} if kind != "interview" else value
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    p = _new(path)
    assert CJK.search(p.notice) and _solved(p, "Q4")  # the rest is kept
    assert p.entry(dropped) == {} and dropped not in p.data["exercises"]
    kept = [f for f in path.parent.iterdir() if ".unreadable-" in f.name]
    assert len(kept) == 1 and json.loads(kept[0].read_text(encoding="utf-8")) == data  # the file as it was
    assert str(kept[0]) in p.notice
    assert _new(path).notice == "" and _solved(_new(path), "Q4")  # what reads went back at once
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    assert _solved(_new(path), "Q2") and _solved(_new(path), "Q4")
    assert len([f for f in path.parent.iterdir() if ".unreadable-" in f.name]) == 1


def test_a_wrong_entry_does_not_break_the_widgets(path):
    pytest.importorskip("ipywidgets")
    from lesson_lib.practice import widgets as quiz_widgets

    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "questions": {"Q2": "oops"}, "exercises": {},
                                "interview": {}}), encoding="utf-8")  # fmt: skip
    p = _new(path)
    quiz_widgets.ask("Q2", p)
    assert "Q2" in quiz_widgets.progress_summary(p).text.value


def _fail_with(monkeypatch, target, name, code):
    def failing(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(target, name, failing)


REFUSALS = (30, 28, 13)  # EROFS, ENOSPC, EACCES


@pytest.mark.parametrize("code", REFUSALS)
def test_save_and_export_say_in_chinese_when_the_folder_refuses(path, monkeypatch, code):
    import errno

    assert REFUSALS == (errno.EROFS, errno.ENOSPC, errno.EACCES)
    reasons = {progress._why(OSError(c, os.strerror(c))) for c in REFUSALS}
    assert len(reasons) == 3 and all(CJK.search(r) for r in reasons)  # each errno has its own Chinese reason
    reason = progress._why(OSError(code, os.strerror(code)))
    p = _new(path)
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    _fail_with(monkeypatch, os, "replace", code)
    before = path.read_bytes()
    p.record(quiz.check("Q4", "A"), "A")  # save
    assert reason in p.notice and path.read_bytes() == before  # the reason, from the errno; the file untouched
    assert _solved(p, "Q2") and _tries(p, "Q4") == 1  # kept in memory
    with pytest.raises(progress.ProgressError) as caught:
        p.export()
    assert isinstance(caught.value, OSError) and reason in str(caught.value)


def test_a_self_assessment_is_worked_through_never_right(path):
    p = _new(path)
    points = qq.question("Q1").key.points
    p.record(quiz.assess("Q1", [points[0].name, points[1].name]), "多头分工", of=len(points))
    entry = _new(path).entry("Q1")
    assert entry["final"] == "self" and not entry["solved"]
    assert entry["attempts"][-1]["covered"] == [points[0].name, points[1].name]
    assert ("Q1", "done") in _states(p)  # worked through, never "right"
    counted = re.search(r"(\d+) / (\d+)", p.summary().splitlines()[0]).groups()
    assert counted == ("1", str(len(qq.question_ids())))  # the question line counts it done
    assert "0" not in re.findall(r"\d+", p.summary().splitlines()[0])  # no count of none right
    assert p.summary().splitlines()[0].count("Q1") == 1  # self-assessed with points unticked: named once
    names = [point.name for point in qq.question(INTERVIEW).key.points]
    p.record(_interview_assess(names[:2]), "…", of=len(names))
    assert not p.entry(INTERVIEW)["complete"]
    assert (INTERVIEW, "done") in _states(p)  # one rule with Q1: self-assessed, never graded
    p.record(_interview_assess(names), "…", of=len(names))
    assert p.entry(INTERVIEW)["complete"] and p.entry(INTERVIEW)["attempts"][-1]["of"] == 3


def test_an_answer_longer_than_the_file_keeps_is_said(path):
    p = _new(path)
    long = "单头只有一组权重。" * (progress.MAX_ANSWER_CHARS // 9 + 1)
    p.record(quiz.check("Q1", long), long)
    assert len(_new(path).entry("Q1")["answer"]) == progress.MAX_ANSWER_CHARS
    assert str(len(long)) in p.notice and p.notice in p.summary()  # the learner is told


def test_the_summary_names_where_each_question_is_asked():
    """「S7b（第 7 节）」: the section of the file that asks it (Q2 is §10's, about §3)."""
    asked = [int(re.search(r"\d+", qq.asked_in(q))[0]) for q in ("S2", "S7b", "Q2", INTERVIEW)]
    assert asked == [2, 7, 10, 8]
    todo = Progress(None).summary().splitlines()[0]
    assert re.findall(r"S7b\D+?(\d+)", todo) == ["7"]  # S7b alone in its run, with its section


def test_the_summary_names_each_exercise_with_its_section():
    """The sections' registry handed in: 「count_multiplies（第 4 节）」, by the module defining it."""
    line = Progress(None, exercises.EXERCISES).summary().splitlines()[1]
    assert re.findall(r"\d+", line) == ["0", str(len(exercises.EXERCISES)), "3", "4"]


def test_the_item_list_is_data_not_an_import_time_registry():
    """The lesson's items: the question bank's ids and the exercises its caller names (the sections' list; the
    engine keeps no copy); importing progress imports no question or exercise, and nothing registers items at
    import."""
    import subprocess
    import sys

    # phrase kept: the item kind, as above
    named = [name for kind, name, _ in Progress(None, tuple(exercises.EXERCISES)).items() if kind == "代码练习"]
    assert Progress().ids == qq.question_ids() and named == list(exercises.EXERCISES)
    assert not hasattr(progress, "EXERCISE_IDS")
    code = ("import sys, lesson_lib.practice.progress as p\n"
            "assert not [m for m in sys.modules if 'exercises' in m or 'quiz' in m]\n"
            "assert p.Progress().ids\n")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True, timeout=scaled(120))


def test_a_lesson_without_an_uncounted_question_counts_no_interview(path, monkeypatch):
    """An instructor who drops §8's interview: no phantom item to finish, and no summary line for a kind with none."""
    monkeypatch.setattr(qq, "apart_ids", lambda: ())
    p = _new(path)
    # phrase kept: the item kinds, as above
    assert {kind for kind, _, _ in p.items()} == {"题目", "代码练习"} and len(p.summary().splitlines()) == 3


def test_a_tried_interview_is_one_summary_line_with_what_to_do(path):
    """Each kind is named once: a tried interview adds its hint to the 「面试自检：」 line, not a second one."""
    p = _new(path)
    bad = "头数越多越好。"
    p.record(_interview_check(bad), bad)
    lines = p.summary().splitlines()
    kinds = [kind for kind, *_ in p.items()]
    starts = [line.split("：")[0] for line in lines]
    assert [starts.count(kind) for kind in dict.fromkeys(kinds)] == [1, 1, 1], lines
    assert (INTERVIEW, "review") in _states(p)  # written, not yet self-assessed


# ---------------------------------------------------------------------------------------------
# The progress file cannot be turned against the learner's files
# ---------------------------------------------------------------------------------------------
def _decoy(tmp_path) -> tuple[Path, bytes]:
    """A file outside the data folder standing in for /etc/passwd (never a real system file)."""
    decoy = tmp_path / "elsewhere" / "passwd"
    decoy.parent.mkdir()
    content = b"root:x:0:0:root:/root:/bin/bash\n" * 3
    decoy.write_bytes(content)
    return decoy, content


def _tree(folder: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under ``folder`` (links not followed): its type and its bytes or link target."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(folder))] = ("link", os.readlink(p))
        elif p.is_file():
            out[str(p.relative_to(folder))] = ("file", p.read_bytes())
    return out


def test_a_symlink_to_a_decoy_is_refused_and_the_decoy_is_unchanged(tmp_path):
    decoy, content = _decoy(tmp_path)
    path = tmp_path / "data" / "progress.json"
    path.parent.mkdir()
    path.symlink_to(decoy)
    p = _new(path)
    assert CJK.search(p.notice) and str(path) in p.notice
    p.record(quiz.check("Q2", ["32", "不变"]), "32")  # kept in memory, never written through the link
    p.record_exercise(ExerciseResult("split_heads", "passed", "全部通过！"))
    assert _solved(p, "Q2") and CJK.search(p.notice)
    assert decoy.read_bytes() == content and path.is_symlink() and os.readlink(path) == str(decoy)
    assert _tree(tmp_path / "elsewhere") == {"passwd": ("file", content)}  # nothing new beside the decoy


@pytest.mark.parametrize("name", ["progress.json.lock", "progress-export.json"])
def test_a_symlink_beside_the_progress_file_is_never_written_through(tmp_path, name):
    decoy, content = _decoy(tmp_path)
    path = tmp_path / "data" / "progress.json"
    path.parent.mkdir()
    (path.parent / name).symlink_to(decoy)
    p = _new(path)
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    with contextlib.suppress(progress.ProgressError):
        p.export()
    assert decoy.read_bytes() == content and (path.parent / name).is_symlink()


def test_the_aside_name_is_never_a_link_followed(tmp_path, monkeypatch):
    """Setting a bad file aside picks a fresh name, never replacing what is there (a link from the same second)."""
    decoy, content = _decoy(tmp_path)
    path = tmp_path / "data" / "progress.json"
    path.parent.mkdir()
    path.write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(progress, "datetime", SimpleNamespace(now=lambda *_: datetime(2026, 1, 1)))  # one second
    (path.parent / "progress.json.unreadable-20260101-000000").symlink_to(decoy)
    p = _new(path)
    assert CJK.search(p.notice) and decoy.read_bytes() == content
    kept = [f for f in path.parent.iterdir() if not f.is_symlink() and ".unreadable-20260101-000000" in f.name]
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == "{not json" and str(kept[0]) in p.notice


_OPEN = """
import json, sys
from lesson_lib.practice import quiz
from lesson_lib.practice.progress import Progress

p = Progress(sys.argv[1])
first = p.notice
p.record(quiz.check("Q2", ["32", "不变"]), "32")
print(json.dumps({"first": first, "after": p.notice, "solved": p.entry("Q2")["solved"]}, ensure_ascii=False))
"""


def _open_in_a_subprocess(path: Path) -> dict:
    """Open the progress and save one answer in a fresh process; a hang fails the test at the timeout."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _OPEN, str(path)], capture_output=True, text=True, timeout=scaled(120),
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_is_refused_without_hanging(path):
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    out = _open_in_a_subprocess(path)
    assert CJK.search(out["first"]) and CJK.search(out["after"]) and out["solved"]
    import stat

    assert stat.S_ISFIFO(os.lstat(path).st_mode)  # left as it was


def test_a_directory_is_refused(path):
    path.mkdir(parents=True)
    (path / "keep.txt").write_text("mine", encoding="utf-8")
    out = _open_in_a_subprocess(path)
    assert CJK.search(out["first"]) and out["solved"]
    assert path.is_dir() and (path / "keep.txt").read_text(encoding="utf-8") == "mine"


def test_a_100_mb_file_is_set_aside_with_a_notice(path):
    path.parent.mkdir(parents=True)
    with open(path, "wb") as f:  # sparse: 100 MB long, a few blocks on disk
        f.write(b'{"format": "day11-progress", "version": 2, "questions": {')
        f.seek(100 * 2**20)
        f.write(b"}")
    out = _open_in_a_subprocess(path)
    assert CJK.search(out["first"]) and out["after"] == out["first"] and out["solved"]  # saved; the notice stays
    kept = [f for f in path.parent.iterdir() if ".unreadable-" in f.name]
    assert len(kept) == 1 and kept[0].stat().st_size > progress.MAX_FILE_BYTES  # renamed, not deleted
    assert path.stat().st_size < 10_000 and json.loads(path.read_text(encoding="utf-8"))["version"] == VERSION


def test_a_file_just_over_the_cap_is_set_aside_and_one_under_is_read(path):
    path.parent.mkdir(parents=True)
    text = json.dumps({"format": FORMAT, "version": VERSION, "questions": {"Q4": _item()}, "exercises": {},
                       "interview": {}})  # fmt: skip
    path.write_text(" " * (progress.MAX_FILE_BYTES - len(text) - 2000) + text, encoding="utf-8")  # JSON spaces
    assert _solved(_new(path), "Q4") and _new(path).notice == ""
    path.write_text(" " * progress.MAX_FILE_BYTES + text, encoding="utf-8")
    p = _new(path)
    assert not _solved(p, "Q4") and CJK.search(p.notice)


# ---------------------------------------------------------------------------------------------
# Question versions: a course update never turns an old answer into a correct one
# ---------------------------------------------------------------------------------------------
def _old_version(item: dict) -> dict:
    """The entry as if its question had changed since it was answered."""
    for entry in (item, *item["attempts"]):
        entry["question_version"] = "0123456789ab"
    return item


def test_an_answer_to_an_earlier_version_is_kept_never_shown_or_counted(path):
    path.parent.mkdir(parents=True)
    old = _old_version(_item(answer='["32", "不变"]'))
    old["attempts"][0]["answer"] = '["32", "不变"]'
    p = _new(path)
    p.record(_interview_check("单头会平均"), "单头会平均")
    interview = _old_version(p.entry(INTERVIEW))
    data = {"format": FORMAT, "version": VERSION, "questions": {"Q2": old, "Q4": _item()}, "exercises": {},
            "interview": interview}  # fmt: skip
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    p = _new(path)
    assert p.entry("Q2") == {} and p.entry(INTERVIEW) == {} and _solved(p, "Q4")  # never shown
    assert ("Q2", "todo") in _states(p) and (INTERVIEW, "todo") in _states(p)  # never counted
    assert p.data["earlier"] == {"Q2": [old], INTERVIEW: [interview]}  # kept, as it was
    assert "Q2" in p.summary().splitlines()[-2]  # the summary says they are kept, apart
    p.record(quiz.check("Q2", ["64", "不变"]), '["64", "不变"]')  # answered again: this version's first try
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["version"] == VERSION and saved["earlier"] == {"Q2": [old], INTERVIEW: [interview]}
    assert [a["question_version"] for a in saved["questions"]["Q2"]["attempts"]] == [qq.question("Q2").version]
    again = _new(path)
    assert again.notice == "" and not _solved(again, "Q2") and again.data["earlier"] == saved["earlier"]


def test_earlier_versions_are_bounded_first_and_last_kept(path):
    p = _new(path)
    for i in range(progress.MAX_EARLIER + 3):
        p.record(Feedback(True, "", question_id="Q2", version=f"v{i}"), str(i))
    kept = [e["answer"] for e in _new(path).data["earlier"]["Q2"]]
    assert kept == ["0", *map(str, range(8 - progress.MAX_EARLIER + 1, 8))] and len(kept) == progress.MAX_EARLIER


def test_every_check_keeps_its_verdict_and_named_mistakes(path):
    from dataclasses import dataclass

    @dataclass
    class Result:  # what the exercise module may give besides name, status and message
        name: str
        status: str
        message: str
        mistakes: tuple = ()
        source: str | None = None

    p = _new(path)
    p.record_exercise(Result("split_heads", "wrong", "…", ("transpose",), "def split_heads(x, h): pass"))
    p.record_exercise(Result("split_heads", "error", "…", (), "def split_heads(x, h): 1/0"))
    p.record_exercise(ExerciseResult("split_heads", "passed", "全部通过！"))  # no source given: the last one is kept
    entry = _new(path).data["exercises"]["split_heads"]
    assert [(c["result"], c["mistakes"]) for c in entry["checks"]] == [
        ("wrong", ["transpose"]), ("error", []), ("passed", [])]
    assert (entry["n_checks"], entry["passed"], entry["source"]) == (3, True, "def split_heads(x, h): 1/0")
    for _ in range(progress.MAX_ATTEMPTS):
        p.record_exercise(Result("split_heads", "wrong", "…", ("strided",)))
    entry = _new(path).data["exercises"]["split_heads"]
    assert len(entry["checks"]) == progress.MAX_ATTEMPTS and entry["n_checks"] == 3 + progress.MAX_ATTEMPTS
    assert entry["checks"][0]["mistakes"] == ["transpose"] and entry["passed"]  # the first kept; still passed


def _stub(x, h):
    """The notebook's starter cell: still the stub."""
    raise NotImplementedError


def _split(x, h):
    return x.reshape(x.shape[0], h, -1).transpose(1, 0, 2)


def test_a_pass_survives_a_later_stub_run(monkeypatch, tmp_path):
    """Restart & Run All with the edit not saved (or a fresh personal copy) runs the stub again: still passed."""
    monkeypatch.setenv(progress.ENV_VAR, str(tmp_path / "p.json"))
    assert exercises.check("split_heads", _split).passed
    assert exercises.check("split_heads", _stub).status == "todo"
    again = _new(tmp_path / "p.json")
    entry = again.data["exercises"]["split_heads"]
    assert entry["passed"] and ("split_heads", "done") in _states(again)
    assert [c["result"] for c in entry["checks"]] == ["passed", "todo"]  # recorded, as todo, never un-passing
    assert "transpose(1, 0, 2)" in entry["passed_source"]


FIXTURES = Path(__file__).parent / "fixtures"


def _answers(data: dict) -> list:
    """Every attempt a file holds, current or earlier, as (id, answer, verdict, mistake)."""
    items = [*data["questions"].items(), (INTERVIEW, data["interview"])]
    items += [(q, e) for q, entries in data.get("earlier", {}).items() for e in entries]
    return sorted((q, json.dumps(a["answer"]), a["verdict"], str(a["mistake"])) for q, e in items if e
                  for a in e["attempts"])  # fmt: skip


def test_a_file_written_by_the_version_2_lesson_reads_with_every_answer_and_check(path):
    """tests/fixtures/progress-v2.json was written by the lesson at commit 41abdf7 (format 2) through its own API
    (tests/fixtures/make_progress_v2.py): the answers, the self-assessments and real exercise checks."""
    raw = json.loads((FIXTURES / "progress-v2.json").read_text(encoding="utf-8"))
    assert raw["version"] == 2
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(raw), encoding="utf-8")
    p = _new(path)
    p.record(quiz.check("Q4", "B"), "B")  # the next save writes version 3
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["version"] == VERSION and not [f for f in path.parent.iterdir() if ".unreadable-" in f.name]
    assert _answers(raw) == [a for a in _answers(saved) if a[0] != "Q4"]  # every answer, as it was
    for name, old in raw["exercises"].items():
        new = saved["exercises"][name]
        assert (new["n_checks"], new["result"], new["message"], new["source"]) == (
            old["checks"], old["result"], old["message"], old["source"])
        assert new["passed"] == (old["result"] == "passed") and new["checks"][-1]["result"] == old["result"]


def test_a_version_3_file_reads_and_writes_back_field_for_field():
    """tests/fixtures/progress-v3-full.json holds every kind of record the lesson writes, written through its API at
    b4e9411 (tests/fixtures/make_progress_v3_full.py): read (pure, whatever the questions ask now) and written back,
    it is the same file."""
    raw = json.loads((FIXTURES / "progress-v3-full.json").read_text(encoding="utf-8"))
    data, bad = progress.migrate(raw)
    assert bad == [] and progress.to_file(data) == raw
    assert list(progress.to_file(data)) == list(raw)  # the fields in the order the lesson writes them


def test_a_version_1_file_is_migrated_its_answers_kept_as_an_earlier_versions(path):
    """Format 1 (before question versions; the lesson wrote it on 2026-12-01): every answer is kept, apart."""
    v1 = {"format": FORMAT, "version": 1, "saved_at": "2026-12-01T10:00:00+00:00",
          "questions": {"Q2": {"answer": "64", "attempts": 2, "solved": True, "last": "right",
                               "history": [["32", "wrong"], ["64", "right"]]},
                        "Q1": {"answer": "…", "attempts": 1, "solved": False, "last": "self",
                               "history": [["…", "self"]], "self": {"covered": ["①"], "of": 3}}},
          "exercises": {"split_heads": {"status": "passed", "message": "全部通过！", "checks": 3}},
          "interview": {"answer": "单头", "attempts": 1, "covered": [], "complete": False}}  # fmt: skip
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(v1, ensure_ascii=False), encoding="utf-8")
    p = _new(path)
    assert not [f for f in path.parent.iterdir() if ".unreadable-" in f.name]
    assert p.entry("Q2") == {} and ("Q2", "todo") in _states(p) and ("split_heads", "done") in _states(p)
    earlier = p.data["earlier"]
    assert [(a["answer"], a["verdict"]) for a in earlier["Q2"][0]["attempts"]] == [("32", "wrong"), ("64", "right")]
    assert earlier["Q1"][0]["attempts"][0]["covered"] == v1["questions"]["Q1"]["self"]["covered"]
    assert earlier[INTERVIEW][0]["answer"] == v1["interview"]["answer"]
    assert p.data["exercises"]["split_heads"]["n_checks"] == 3


def test_a_version_1_history_that_does_not_read_is_dropped_and_the_file_set_aside(path):
    """Before, migrate raised AttributeError for it: the lesson's load crashed."""
    v1 = {"format": FORMAT, "version": 1, "questions": {"Q2": {"answer": "64", "history": "x"}}}
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(v1), encoding="utf-8")
    p = _new(path)
    assert CJK.search(p.notice) and p.entry("Q2") == {}
    assert len([f for f in path.parent.iterdir() if ".unreadable-" in f.name]) == 1


def test_a_self_assessed_entry_with_no_attempt_still_gives_a_summary(path):
    """A hand-edited file may keep a self-assessed answer without its attempts; the summary raised IndexError."""
    entry = {"attempts": [], "n_attempts": 1, "question_version": progress.current_version("Q1"),
             "first_try": "self", "final": "self", "solved": False, "answer": ""}
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "questions": {"Q1": entry}}), encoding="utf-8")
    p = _new(path)
    assert p.entry("Q1") == entry and ("Q1", "done") in [item[1:] for item in p.items()] and p.summary()


def _lock_files(folder: Path) -> list[str]:
    return sorted(str(f) for f in folder.rglob("*.lock"))


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_a_path_that_is_no_regular_file_is_refused_before_any_lock(tmp_path, monkeypatch, kind):
    """LESSON_PROGRESS_FILE=~ once made /root.lock; /dev/null would make /dev/null.lock: no lock, no file."""
    import stat

    target = tmp_path / "home" / "learner"
    target.parent.mkdir()
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this system")
        os.mkfifo(target)
    else:
        try:
            os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        except (OSError, AttributeError):
            pytest.skip("cannot make a device node here (not root, or no CAP_MKNOD)")
    monkeypatch.setenv(progress.ENV_VAR, str(target))
    p = progress.default_progress()
    p.record(quiz.check("Q4", "B"), "B")
    assert _solved(p, "Q4") and CJK.search(p.notice)  # kept in memory, and said
    assert _lock_files(tmp_path) == [] and sorted(os.listdir(target.parent)) == ["learner"]


def test_a_device_is_refused_without_being_opened(path):
    import stat

    path.parent.mkdir(parents=True)
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # the null device's numbers, made in a temp folder
    except (OSError, AttributeError):
        pytest.skip("cannot make a device node here (not root, or no CAP_MKNOD)")
    out = _open_in_a_subprocess(path)
    assert CJK.search(out["first"]) and out["solved"] and stat.S_ISCHR(os.lstat(path).st_mode)


def test_the_widget_never_shows_an_old_version_answer_as_right(path):
    pytest.importorskip("ipywidgets")
    from lesson_lib.practice import widgets as quiz_widgets

    path.parent.mkdir(parents=True)
    old = _item(question_version="0123456789ab", answer='["32", "不变"]')
    old["attempts"] = [{"answer": '["32", "不变"]', "verdict": "right", "mistake": None,
                        "question_version": "0123456789ab"}]  # fmt: skip
    path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "questions": {"Q2": old}, "exercises": {},
                                "interview": {}}), encoding="utf-8")  # fmt: skip
    p = _new(path)
    widget = quiz_widgets.ask("Q2", p)
    assert widget.attempts == 0 and not widget.feedback.value.count(qf.RIGHT)  # not restored as a verdict
    assert not _solved(p, "Q2") and "Q2" in p.data["earlier"]
