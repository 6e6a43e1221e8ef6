"""The learner's progress file: atomic saves, restore after a restart, bad files kept aside, reset, export, summary."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lesson_lib.practice import exercises, progress, questions, quiz
from lesson_lib.practice import interview as practice_interview
from lesson_lib.practice.exercises import ExerciseResult
from lesson_lib.practice.progress import FORMAT, VERSION, Progress, ProgressFile


@pytest.fixture
def path(tmp_path):
    return tmp_path / "learner" / "progress.json"


def _new(path) -> Progress:
    """What a fresh kernel does when the cells run again: read the same file."""
    return Progress(questions.question_ids(), tuple(exercises.EXERCISES), store=ProgressFile(path))


def _everything_right(p: Progress) -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from quiz_answers import TABLE

    right = {qid: answer for qid, answer, verdict, _ in TABLE if verdict == "right"}
    assert set(right) | {"Q1"} == set(questions.question_ids())
    for qid, answer in right.items():
        p.record(quiz.check(qid, answer), answer)
    q1 = quiz.question("Q1")
    p.record(quiz.check("Q1", "单头只有一组权重。"), "单头只有一组权重。")
    ticked = quiz.assess("Q1", [q1.key.points[0].name]).covered  # a tick, not a grade
    p.record("Q1", {"kind": "self_assessment", "answer": "…", "covered": list(ticked), "of": len(q1.key.points)})
    for name in exercises.EXERCISES:
        p.record_exercise(ExerciseResult(name, "passed", "全部通过！"))
    good = ("单头只有一组权重，加权平均会抹平不同角色；多头拆成子空间，算力守恒；头数要适中，太多时 d_k 过窄。")
    p.record_interview(practice_interview.interview_check(good), good)
    points = [point.name for point in practice_interview.interview_rubric().points]
    p.record(progress.INTERVIEW, {"kind": "self_assessment", "answer": good, "covered": points, "of": len(points)})


def test_answers_survive_a_restart(path):
    p = _new(path)
    p.record(quiz.check("Q4", "A"), "A")
    p.record(quiz.check("Q4", "B"), "B")
    p.record(quiz.check("Q5", {"A", "B"}), {"A", "B"})
    p.record_exercise(ExerciseResult("split_heads", "wrong", "形状不对"))
    p.record_interview(practice_interview.interview_check("单头会把信息平均掉。"), "单头会把信息平均掉。")
    again = _new(path)
    assert again.question_entry("Q4") == {"attempts": 2, "solved": True, "answer": "B", "last": "right",
                                          "history": [["A", "wrong"], ["B", "right"]]}  # fmt: skip
    assert again.question_entry("Q5")["answer"] == ["A", "B"] and not again.solved["Q5"]
    assert again.data["exercises"]["split_heads"]["status"] == "wrong"
    assert again.interview_entry()["answer"] == "单头会把信息平均掉。" and again.notice == ""


def test_file_format_is_documented_and_versioned(path):
    p = _new(path)
    p.record(quiz.check("Q4", "B"), "B")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT and data["version"] == VERSION and data["saved_at"]
    assert set(data) == {"format", "version", "saved_at", "questions", "exercises", "interview"}
    documented = _documented_example()
    assert set(documented) == set(data)  # the example in progress.py's docstring shows every field a save writes


def _documented_example() -> dict:
    """The example file in progress.py's docstring (the format's documentation), parsed as JSON."""
    block = progress.__doc__.split("::", 1)[1].split("\n\n")[1]
    return json.loads(block)


def test_the_documented_example_is_a_file_the_lesson_reads(path):
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_documented_example(), ensure_ascii=False), encoding="utf-8")
    p = _new(path)
    assert p.notice == "" and path.exists()  # read as is: not renamed aside as unreadable
    assert p.solved["Q2"] and p.question_entry("Q2")["attempts"] == 2
    assert p.data["exercises"]["split_heads"]["status"] == "passed"


def test_save_is_atomic(path, monkeypatch):
    p = _new(path)
    p.record(quiz.check("Q4", "A"), "A")
    before = path.read_text(encoding="utf-8")
    replaced = []
    real_replace = os.replace

    def failing_replace(src, dst):
        replaced.append((os.path.dirname(src), os.path.dirname(dst)))
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    p.record(quiz.check("Q4", "B"), "B")  # the write fails half-way: the old file must be untouched
    monkeypatch.setattr(os, "replace", real_replace)
    assert path.read_text(encoding="utf-8") == before
    assert replaced and replaced[0][0] == replaced[0][1]  # the temp file sits beside the target
    assert "没能保存" in p.notice and progress.ENV_VAR in p.notice
    assert sorted(f.name for f in path.parent.iterdir()) == ["progress.json", "progress.json.lock"]  # no temp file
    assert p.solved["Q4"]  # the progress is still in memory


@pytest.mark.parametrize(
    ("content", "why"),
    [("{not json", "损坏"), ('["a list"]', "不是本课的进度文件"), ('{"format": "other", "version": 1}', "不是本课"),
     (json.dumps({"format": FORMAT, "version": VERSION + 1, "questions": {}}), "更新版本"), ("", "损坏"),
     (json.dumps({"format": FORMAT, "version": VERSION, "questions": [], "exercises": {}, "interview": {}}),
      "不是本课")],
)  # fmt: skip
def test_a_bad_file_is_kept_aside_and_the_learner_starts_afresh(path, content, why):
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    p = _new(path)
    assert why in p.notice and "从头开始" in p.notice and p.data["questions"] == {}
    kept = [f for f in path.parent.iterdir() if f.name.startswith("progress.json.unreadable-")]
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == content and str(kept[0]) in p.notice
    assert why in p.summary()  # the summary shows the notice
    p.record(quiz.check("Q4", "B"), "B")
    assert _new(path).solved["Q4"]


def test_an_unwritable_place_is_a_message_not_a_crash(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = Progress(store=ProgressFile(blocker / "progress.json"))  # its folder is a file
    p.record(quiz.check("Q4", "B"), "B")
    assert "没能保存" in p.notice and p.solved["Q4"]


def test_reset_keeps_the_old_file(path):
    p = _new(path)
    p.record(quiz.check("Q4", "B"), "B")
    calls = []
    p.on_reset(lambda: calls.append("reset"))
    message = p.reset()
    kept = [f for f in path.parent.iterdir() if f.name.startswith("progress.json.reset-")]
    assert len(kept) == 1 and json.loads(kept[0].read_text(encoding="utf-8"))["questions"]["Q4"]["solved"]
    assert str(kept[0]) in message and calls == ["reset"] and not p.solved["Q4"]
    assert not _new(path).solved["Q4"]


def test_summary_counts_questions_exercises_and_interview(path):
    p = _new(path)
    n_q, n_ex = len(questions.question_ids()), len(exercises.EXERCISES)
    text = p.summary()
    assert f"题目：已答对 0 / {n_q} 题" in text and f"代码练习：已完成 0 / {n_ex} 个" in text
    assert "面试自检：已完成 0 / 1 项" in text and f"合计完成 0 / {n_q + n_ex + 1} 项" in text
    _everything_right(p)
    assert p.all_done() and "全部完成" in p.summary()


@pytest.mark.parametrize("spoil", ["exercise", "interview", "question", "missing_exercise"])
def test_never_all_done_while_something_failed_or_is_missing(path, spoil):
    p = _new(path)
    _everything_right(p)
    if spoil == "exercise":
        p.record_exercise(ExerciseResult("split_heads", "wrong", "没有返回任何东西（返回了 None）"))
    elif spoil == "interview":  # written, and the learner's own tick says a point is missing
        p.record(progress.INTERVIEW, {"kind": "self_assessment", "answer": "…", "covered": ["①"], "of": 3})
    elif spoil == "question":
        p.data["questions"]["S7b"]["solved"] = False
    else:
        del p.data["exercises"]["count_multiplies"]
    text = p.summary()
    assert "全部完成" not in text and not p.all_done()
    assert "做过但还没过" in text or "还没做" in text or "面试自检" in text


def test_a_stub_run_writes_nothing(path):
    """Running the lesson (Restart & Run All with untouched stubs) leaves no file behind."""
    p = _new(path)
    p.record_exercise(ExerciseResult("split_heads", "todo", "还没实现"))
    p.record(quiz.check("Q2", ""), "")  # blank: not an attempt
    assert not path.exists()


def test_export_json_and_instructor_summary(path, tmp_path):
    p = _new(path)
    p.record(quiz.check("Q4", "B"), "B")
    p.record_exercise(ExerciseResult("split_heads", "timeout", "是不是写了死循环？"))
    json_path, md_path = p.export(tmp_path / "out")
    exported = json.loads(json_path.read_text(encoding="utf-8"))
    assert exported["questions"]["Q4"]["solved"] and exported["format"] == FORMAT and exported["exported_at"]
    page = md_path.read_text(encoding="utf-8")
    assert page.startswith("# Day 11 多头注意力 · 学习进度") and "| 题目 | Q4 | 完成 | 1 |" in page
    assert "| 代码练习 | split_heads | 未通过 | 1 |" in page and "| 面试自检 | 面试 | 未做 | 0 |" in page
    assert len(page.splitlines()) < 60  # one page
    assert p.export()[0].parent == path.parent  # by default beside the progress file


def test_default_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(progress.ENV_VAR, str(tmp_path / "x.json"))
    assert progress.default_path() == tmp_path / "x.json"
    monkeypatch.delenv(progress.ENV_VAR)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert progress.default_path() == tmp_path / "data" / "day11-multi-head-attention" / "progress.json"


def test_exercise_checks_are_recorded_in_the_default_progress(monkeypatch, tmp_path):
    monkeypatch.setenv(progress.ENV_VAR, str(tmp_path / "p.json"))
    exercises.check("split_heads", lambda x, h: None)
    assert progress.default_progress().data["exercises"]["split_heads"]["status"] == "wrong"
    saved = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert saved["exercises"]["split_heads"]["checks"] == 1


def test_the_lesson_says_where_the_file_is(monkeypatch):
    from pathlib import Path

    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    shown = progress.default_path().relative_to(Path.home())
    source = Path(__file__).resolve().parents[1] / "notebooks" / "src" / "10_self_test.md"
    cells = source.read_text(encoding="utf-8")
    assert f"`~/{shown.as_posix()}`" in cells and progress.ENV_VAR in cells and "XDG_DATA_HOME" in cells


# ---------------------------------------------------------------------------------------------
# The attack table: every way the progress file can lose answers or break the lesson
# ---------------------------------------------------------------------------------------------

_SAVER = """
import sys
from lesson_lib.practice.progress import Progress, ProgressFile

path, side, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = Progress(("Q2", "A", "B"), store=ProgressFile(path))
for i in range(n):
    p.record("Q2", {"kind": "answer", "answer": f"{side}{i}", "verdict": "wrong"})
    p.record(side, {"kind": "answer", "answer": f"{side}{i}", "verdict": "right" if i == n - 1 else "wrong"})
assert not p.notice, p.notice
print(sorted(p.data["questions"]))
"""


def test_two_processes_saving_200_times_each_lose_nothing(path):
    import subprocess
    import sys

    n = 200
    procs = [subprocess.Popen([sys.executable, "-c", _SAVER, str(path), side, str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for side in ("A", "B")]  # fmt: skip
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    saved = json.loads(path.read_text(encoding="utf-8"))["questions"]
    assert saved["Q2"]["attempts"] == 2 * n  # both sides' attempts at the shared question, none lost
    assert saved["A"]["attempts"] == n and saved["B"]["attempts"] == n
    assert saved["A"]["solved"] and saved["B"]["solved"]
    # each process learned the other's answers: the side that finished last saw both in its own record
    assert any("'A', 'B', 'Q2'" in out for out, _ in outs)


def test_each_kernel_learns_the_others_answers(path):
    a, b = _new(path), _new(path)
    a.record(quiz.check("Q2", ["32", "不变"]), "32")
    b.record(quiz.check("Q4", "A"), "A")
    assert b.solved["Q2"] and b.attempts["Q4"] == 1  # b's save merged a's answer in
    a.record_exercise(ExerciseResult("split_heads", "passed", "全部通过！"))
    assert a.attempts["Q4"] == 1 and a.solved["Q2"]
    assert _new(path).attempts == b.attempts | {"Q4": 1}


def test_a_failed_save_is_retried_with_the_next_one(path, monkeypatch):
    p = _new(path)
    real = ProgressFile._write

    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ProgressFile, "_write", full)
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    assert "磁盘已经满了" in p.notice and p.solved["Q2"]
    monkeypatch.setattr(ProgressFile, "_write", real)
    p.record(quiz.check("Q4", "A"), "A")
    again = _new(path)
    assert again.solved["Q2"] and again.attempts["Q4"] == 1 and p.notice == ""


@pytest.mark.parametrize("answer", ["64\ud800", "\udfff", "a\ud83d", "😀\ud800中文"])
def test_any_string_the_learner_can_type_is_saved(path, answer):
    p = _new(path)
    p.record("Q2", {"kind": "answer", "answer": answer, "verdict": "wrong"})
    p.record(quiz.check("Q2", ["32", "不变"]), "32")  # a later save still works
    assert p.notice == ""
    again = _new(path)
    assert again.attempts["Q2"] == 2 and again.solved["Q2"]
    stored = again.question_entry("Q2")["history"][0][0]
    assert "\\ud" in stored or "\\udfff" in stored  # the lone surrogate kept as its escape
    again.export(path.parent / "out")  # the export writes it too


@pytest.mark.parametrize(
    ("entries", "dropped"),
    [({"questions": {"Q2": "oops"}}, "Q2"),
     ({"questions": {"Q2": {"attempts": -1, "solved": True, "history": []}}}, "Q2"),
     ({"questions": {"Q2": {"attempts": 1, "solved": "yes", "history": []}}}, "Q2"),
     ({"questions": {"Q2": {"attempts": 1, "solved": True, "history": [["x"]]}}}, "Q2"),
     ({"exercises": {"split_heads": {"status": "hacked", "checks": 1}}}, "split_heads"),
     ({"exercises": {"split_heads": []}}, "split_heads"),
     ({"interview": {"attempts": "many"}}, "面试自检")],
)  # fmt: skip
def test_a_wrong_entry_is_set_aside_with_a_notice_never_a_crash(path, entries, dropped):
    data = {"format": FORMAT, "version": VERSION, "questions": {"Q4": {"attempts": 1, "solved": True, "history": []}},
            "exercises": {}, "interview": {}}  # fmt: skip
    for kind, value in entries.items():
        data[kind] = {**data[kind], **value} if kind != "interview" else value
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    p = _new(path)
    assert dropped in p.notice and "已跳过" in p.notice and p.solved["Q4"]  # the good entries are kept
    assert dropped in p.summary() and "做过但还没过" not in p.summary().split(dropped)[0][-5:]
    assert p.question_entry("Q2") is None or isinstance(p.question_entry("Q2"), dict)
    kept = [f for f in path.parent.iterdir() if ".unreadable-" in f.name]
    assert len(kept) == 1 and json.loads(kept[0].read_text(encoding="utf-8")) == data  # the file as it was
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    assert _new(path).solved["Q2"] and _new(path).notice == ""


def test_a_wrong_entry_does_not_break_the_widgets(path):
    pytest.importorskip("ipywidgets")
    from lesson_lib.practice import widgets as quiz_widgets

    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "questions": {"Q2": "oops"}, "exercises": {},
                                "interview": {}}), encoding="utf-8")  # fmt: skip
    p = _new(path)
    quiz_widgets.ask("Q2", p)
    assert "Q2" in quiz_widgets.progress_summary(p).value


def test_two_resets_in_one_second_keep_both_copies(path):
    p = _new(path)
    for answer in ("A", "C"):
        p.record(quiz.check("Q4", answer), answer)
        p.reset()
    kept = sorted(f for f in path.parent.iterdir() if ".reset-" in f.name)
    assert len(kept) == 2
    answers = {json.loads(f.read_text(encoding="utf-8"))["questions"]["Q4"]["answer"] for f in kept}
    assert answers == {"A", "C"}


def _fail_with(monkeypatch, target, name, code):
    def failing(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(target, name, failing)


@pytest.mark.parametrize(("code", "words"), [(30, "只读"), (28, "磁盘已经满了"), (13, "没有写入")])
def test_save_reset_and_export_say_in_chinese_when_the_folder_refuses(path, monkeypatch, code, words):
    import errno

    assert code in (errno.EROFS, errno.ENOSPC, errno.EACCES)
    p = _new(path)
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    _fail_with(monkeypatch, os, "replace", code)
    _fail_with(monkeypatch, type(path), "write_bytes", code)
    p.record(quiz.check("Q4", "A"), "A")  # save
    assert "没能保存" in p.notice and words in p.notice
    message = p.reset()  # 清空进度 in a folder that refuses: a message, and nothing cleared
    assert "没有清空" in message and words in message and p.solved["Q2"]
    with pytest.raises(progress.ProgressError, match=words) as caught:
        p.export()
    assert isinstance(caught.value, OSError) and "没能导出" in str(caught.value)


def test_a_symlinked_progress_file_stays_a_symlink(tmp_path):
    real = tmp_path / "elsewhere" / "mine.json"
    real.parent.mkdir()
    link = tmp_path / "progress.json"
    link.symlink_to(real)
    p = _new(link)
    p.record(quiz.check("Q2", ["32", "不变"]), "32")
    assert link.is_symlink() and json.loads(real.read_text(encoding="utf-8"))["questions"]["Q2"]["solved"]
    p.reset()
    p.record(quiz.check("Q4", "A"), "A")
    assert link.is_symlink() and json.loads(real.read_text(encoding="utf-8"))["questions"]["Q4"]["attempts"] == 1
    assert [f.name for f in real.parent.iterdir() if ".reset-" in f.name]  # the reset copy beside the target


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("answer", [_nested(100_000), {"a": _nested(50_000)}, (_nested(10), 3), object()])
def test_a_deeply_nested_answer_is_stored_without_recursion(path, answer):
    p = _new(path)
    p.record(quiz.check("Q5", "A"), answer)
    p.record_interview(practice_interview.interview_check("单头会平均"), answer)
    p.record("Q1", {"kind": "self_assessment", "answer": answer, "covered": [], "of": 3})
    assert p.notice == "" and "无法保存的答案" in p.question_entry("Q5")["answer"]
    assert _new(path).attempts["Q5"] == 1


def test_entries_of_the_general_record_are_validated(path):
    p = _new(path)
    p.record("Q1", {"kind": "self_assessment", "answer": "多头分工", "covered": ["①", "②"], "of": 3})
    entry = _new(path).question_entry("Q1")
    assert entry["last"] == "self" and entry["self"] == {"covered": ["①", "②"], "of": 3} and not entry["solved"]
    assert "已自评：Q1" in p.summary() and "已答对 0 /" in p.summary()  # a self-assessment is never "right"
    for bad in ({"kind": "verdict"}, {"kind": "answer", "verdict": "correct"}, "64",
                {"kind": "self_assessment", "covered": ["①"] * 4, "of": 3}):
        with pytest.raises(ValueError):
            p.record("Q1", bad)
    p.record(progress.INTERVIEW, {"kind": "self_assessment", "answer": "…", "covered": ["①", "②", "③"], "of": 3})
    assert p.interview_entry()["complete"] and p.interview_entry()["self"]["of"] == 3


def test_the_store_imports_no_question_or_exercise(tmp_path):
    """No cycle exercises ↔ progress: the store takes its item lists from its callers."""
    import ast
    import subprocess
    import sys

    tree = ast.parse(Path(progress.__file__).read_text(encoding="utf-8"))
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert not {m for m in imported if "exercises" in m or "quiz" in m}, imported
    code = ("import sys, lesson_lib.practice.progress as p\n"
            "assert not [m for m in sys.modules if 'exercises' in m or 'quiz' in m]\n")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_data_folder_comes_from_platformdirs(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.delenv(progress.ENV_VAR)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    expected = Path(platformdirs.user_data_dir(progress.APP_NAME, appauthor=False)) / "progress.json"
    assert progress.default_path() == expected == tmp_path / "xdg" / progress.APP_NAME / "progress.json"
    # macOS / Windows: the platform's folder, unless the learner already has a file at the old place
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(tmp_path / "Library" / "App Support"))
    assert progress.default_path() == tmp_path / "Library" / "App Support" / "progress.json"
    progress.legacy_path().parent.mkdir(parents=True)
    progress.legacy_path().write_text("{}", encoding="utf-8")
    assert progress.default_path() == progress.legacy_path()  # nobody loses the progress they had


def test_a_tried_interview_is_one_summary_line_with_what_to_do(path):
    """Each kind is named once: a tried interview adds its hint to the 「面试自检：」 line, not a second one."""
    p = _new(path)
    bad = "头数越多越好。"
    p.record_interview(practice_interview.interview_check(bad), bad)
    lines = p.summary().splitlines()
    interview = [line for line in lines if line.startswith("面试自检")]
    assert len(interview) == 1, lines
    assert "已完成 0 / 1 项" in interview[0] and "对照参考答案改一改" in interview[0]
