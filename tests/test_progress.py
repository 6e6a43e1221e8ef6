"""The learner's progress file: atomic saves, restore after a restart, bad files kept aside, reset, export, summary."""

from __future__ import annotations

import json
import os

import pytest

from lesson_lib.selftest import exercises, progress, quiz
from lesson_lib.selftest.exercises import ExerciseResult
from lesson_lib.selftest.progress import FORMAT, VERSION, Progress, ProgressFile


@pytest.fixture
def path(tmp_path):
    return tmp_path / "learner" / "progress.json"


def _new(path) -> Progress:
    """What a fresh kernel does when the cells run again: read the same file."""
    return Progress(store=ProgressFile(path))


def _everything_right(p: Progress) -> None:
    right = {"Q1": "因为单头只有一组权重，输出是加权平均，不同的信息被混在一起", "Q2": "64", "Q3": "8·64n² = 512n²",
             "Q4": "B", "Q5": {"A", "B", "C"}, "S2": {"A", "C"}, "S3": "(8, 12, 64)", "S3b": "C", "S4": "54988800",
             "S4b": "40000", "S5": "AB", "S6": "B", "S7": "CD", "S7b": "C"}  # fmt: skip
    assert set(right) == set(quiz.question_ids())
    for qid, answer in right.items():
        p.record(quiz.check(qid, answer), answer)
    for name in exercises.EXERCISES:
        p.record_exercise(ExerciseResult(name, "passed", "全部通过！"))
    good = ("单头只有一组权重，加权平均会抹平不同角色；多头拆成子空间，算力守恒；头数要适中，太多时 d_k 过窄。")
    p.record_interview(quiz.interview_check(good), good)


def test_answers_survive_a_restart(path):
    p = _new(path)
    p.record(quiz.check("Q2", "32"), "32")
    p.record(quiz.check("Q2", "64"), "64")
    p.record(quiz.check("Q5", {"A", "B"}), {"A", "B"})
    p.record_exercise(ExerciseResult("split_heads", "wrong", "形状不对"))
    p.record_interview(quiz.interview_check("单头会把信息平均掉。"), "单头会把信息平均掉。")
    again = _new(path)
    assert again.question_entry("Q2") == {"attempts": 2, "solved": True, "answer": "64", "last": "right",
                                          "history": [["32", "wrong"], ["64", "right"]]}  # fmt: skip
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
    assert [f.name for f in path.parent.iterdir()] == ["progress.json"]  # no temp file left behind
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
    p.record(quiz.check("Q2", "64"), "64")
    assert _new(path).solved["Q2"]


def test_an_unwritable_place_is_a_message_not_a_crash(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = Progress(store=ProgressFile(blocker / "progress.json"))  # its folder is a file
    p.record(quiz.check("Q2", "64"), "64")
    assert "没能保存" in p.notice and p.solved["Q2"]


def test_reset_keeps_the_old_file(path):
    p = _new(path)
    p.record(quiz.check("Q2", "64"), "64")
    calls = []
    p.on_reset(lambda: calls.append("reset"))
    message = p.reset()
    kept = [f for f in path.parent.iterdir() if f.name.startswith("progress.json.reset-")]
    assert len(kept) == 1 and json.loads(kept[0].read_text(encoding="utf-8"))["questions"]["Q2"]["solved"]
    assert str(kept[0]) in message and calls == ["reset"] and not p.solved["Q2"]
    assert not _new(path).solved["Q2"]


def test_summary_counts_questions_exercises_and_interview(path):
    p = _new(path)
    n_q, n_ex = len(quiz.question_ids()), len(exercises.EXERCISES)
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
    elif spoil == "interview":
        bad = "头数越多越好。单头会把信息平均掉，多头拆成子空间，算力相近。"
        p.record_interview(quiz.interview_check(bad), bad)
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
    p.record(quiz.check("Q2", "64"), "64")
    p.record_exercise(ExerciseResult("split_heads", "timeout", "是不是写了死循环？"))
    json_path, md_path = p.export(tmp_path / "out")
    exported = json.loads(json_path.read_text(encoding="utf-8"))
    assert exported["questions"]["Q2"]["solved"] and exported["format"] == FORMAT and exported["exported_at"]
    page = md_path.read_text(encoding="utf-8")
    assert page.startswith("# Day 11 多头注意力 · 学习进度") and "| 题目 | Q2 | 完成 | 1 |" in page
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


def test_a_tried_interview_is_one_summary_line_with_what_to_do(path):
    """Each kind is named once: a tried interview adds its hint to the 「面试自检：」 line, not a second one."""
    p = _new(path)
    bad = "头数越多越好。"
    p.record_interview(quiz.interview_check(bad), bad)
    lines = p.summary().splitlines()
    interview = [line for line in lines if line.startswith("面试自检")]
    assert len(interview) == 1, lines
    assert "已完成 0 / 1 项" in interview[0] and "对照参考答案再改一改" in interview[0]
