"""The self-test widgets, driven as a learner would: type or tick, click 提交, read the feedback."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lesson_lib.selftest import quiz, quiz_widgets
from lesson_lib.selftest.progress import Progress, ProgressFile

pytest.importorskip("ipywidgets")


def _all_html(widget) -> str:
    return " ".join(
        w.value for w in (widget.prompt, widget.feedback, widget.explanation, getattr(widget, "earlier", widget.prompt))
    )


def _plain(html_text: str) -> str:
    return re.sub(r"<[^>]+>", "", html_text)


@pytest.fixture
def progress():
    return Progress()  # in memory only


def test_q2_wrong_then_right(progress):
    """What the browser test does: a wrong answer, then the right one, in Q2's text box."""
    q = quiz_widgets.ask("Q2", progress)
    assert q.answer.placeholder.startswith("例如：d_k =") and q.submit.description == "提交"
    assert "Q2" in q.prompt.value and q.explain_button.disabled
    summary = quiz_widgets.progress_summary(progress)
    assert "已答对 0 / " in summary.value

    q.answer.value = "32"
    q.submit.click()
    box_text = _plain(_all_html(q))
    assert "还不对" in q.feedback.value and "正确" not in box_text
    assert "h = 16" in q.feedback.value  # the hint says where 32 comes from
    assert not q.explain_button.disabled and q.attempt_label.value == "已作答 1 次"
    assert "已答对 0 / " in summary.value and "做过但还没过：Q2" in summary.value

    q.answer.value = "d_k = d_v = 64"
    q.submit.click()
    assert "正确" in q.feedback.value and "还不对" not in q.feedback.value
    # the earlier wrong attempt stays listed once, so the box shows as many 还不对 as before answering right
    assert _plain(_all_html(q)).count("还不对") == box_text.count("还不对") == 1
    assert "「32」还不对" in q.earlier.value and q.attempt_label.value == "已作答 2 次"
    assert "已答对 1 / " in summary.value and "全部完成" not in summary.value


def test_explanation_toggles(progress):
    q = quiz_widgets.ask("Q2", progress)
    q.answer.value = "8"
    q.submit.click()
    assert q.explanation.value == ""
    q.explain_button.click()
    assert "解析" in q.explanation.value and "512 / 8 = 64" in q.explanation.value
    assert q.explain_button.description == "隐藏解析"
    q.explain_button.click()
    assert q.explanation.value == "" and q.explain_button.description == "显示解析"


def test_blank_submit_is_not_an_attempt(progress):
    q = quiz_widgets.ask("Q3", progress)
    q.submit.click()
    assert "还没有作答" in q.feedback.value
    assert q.attempts == 0 and q.explain_button.disabled and progress.attempts["Q3"] == 0


def test_expression_question(progress):
    q = quiz_widgets.ask("Q3", progress)
    q.answer.value = "8·64n² = 4096n²"
    q.submit.click()
    assert "还不对" in q.feedback.value and "两边不相等" in q.feedback.value
    q.answer.value = "8 × (n·64·n) = 512n²"
    q.submit.click()
    assert "正确" in q.feedback.value


def test_single_choice(progress):
    q = quiz_widgets.ask("Q4", progress)
    assert [v for _, v in q.answer.options] == ["A", "B", "C", "D"] and q.answer.value is None
    q.answer.value = "A"
    q.submit.click()
    assert "还不对" in q.feedback.value and "选项 A" in q.feedback.value
    q.answer.value = "B"
    q.submit.click()
    assert "正确" in q.feedback.value and progress.solved["Q4"]


def test_multiple_choice(progress):
    q = quiz_widgets.ask("Q5", progress)
    assert len(q.checkboxes) == len(q.question.choices)
    for box in q.checkboxes[:2]:
        box.value = True
    q.submit.click()
    assert "还不对" in q.feedback.value and "没有选" in q.feedback.value
    q.checkboxes[2].value = True
    q.submit.click()
    assert "正确" in q.feedback.value and "「A、B」还不对" in q.earlier.value


def test_text_question_reveals_explanation(progress):
    q = quiz_widgets.ask("Q1", progress)
    q.answer.value = "单头只有一组权重，做加权平均，信息被混在一起"
    q.submit.click()
    assert "要点对照" in q.feedback.value and "正确" not in q.feedback.value and "解析" in q.explanation.value
    assert progress.solved["Q1"] and "已对照" not in q.earlier.value
    assert q.explain_button.description == "隐藏解析"


def test_html_is_escaped_and_plain(progress):
    q = quiz_widgets.ask("Q2", progress)
    q.answer.value = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    q.submit.click()
    q.answer.value = "64"
    q.submit.click()
    q.explain_button.click()
    for html_text in (q.prompt.value, q.feedback.value, q.earlier.value, q.explanation.value):
        assert "<script" not in html_text and "<img" not in html_text and " id=" not in html_text
    assert "&lt;img" in q.earlier.value


def test_history_is_bounded(progress):
    q = quiz_widgets.ask("Q2", progress)
    for i in range(quiz_widgets.MAX_HISTORY + 5):
        q.answer.value = str(100 + i)
        q.submit.click()
    assert q.earlier.value.count("还不对") == quiz_widgets.MAX_HISTORY and "未列出" in q.earlier.value


def test_every_question_builds(progress):
    for qid in quiz.question_ids():
        q = quiz_widgets.ask(qid, progress)
        assert q.box.children and q.submit.description == "提交"
        bundle = q._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle


def test_default_progress_is_shared():
    a = quiz_widgets.ask("S4b")
    summary = quiz_widgets.progress_summary()
    before = quiz_widgets.default_progress().attempts["S4b"]
    a.answer.value = "2500"
    a.submit.click()
    assert quiz_widgets.default_progress().attempts["S4b"] == before + 1
    assert "S4b" in summary.value


def test_interview_self_check(progress):
    widget = quiz_widgets.interview_self_check(progress)
    assert widget.submit.description == "提交" and widget.model_answer.value == ""
    widget.submit.click()
    assert "还没有作答" in widget.feedback.value and widget.model_answer.value == ""
    widget.answer.value = "单头做加权平均，会把指代和句法抹平。"
    widget.submit.click()
    assert "要点对照" in widget.feedback.value and "覆盖了 1 / 3" in widget.feedback.value
    assert "还缺「②" in widget.feedback.value and "还缺「③" in widget.feedback.value
    assert "参考答案" in widget.model_answer.value
    widget.answer.value = (
        "单头只有一组权重，加权平均会抹平不同角色；多头用投影拆成 h 个 d_k 维子空间，h×d_k=d_model，计算量相近；"
        "但头数不是越多越好，d_k 过窄时表 3 的 BLEU 下降。"
    )
    widget.submit.click()
    assert "正确" not in widget.feedback.value and "覆盖了 3 / 3" in widget.feedback.value
    assert widget.attempt_label.value == "已作答 2 次" and progress.interview_entry()["complete"]


def test_no_heavy_imports_at_import_time():
    code = (
        "import sys, lesson_lib.selftest.quiz, lesson_lib.selftest.quiz_widgets, lesson_lib.selftest.exercises\n"
        "lesson_lib.selftest.quiz.check('Q2', '64')\n"
        "heavy = [m for m in ('ipywidgets', 'matplotlib', 'IPython') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_widgets_restore_after_a_restart(tmp_path):
    """Answer, then build the widgets again from the same file (what re-running the cells after a restart does)."""
    path = tmp_path / "progress.json"
    before = Progress(store=ProgressFile(path))
    q2, q5 = quiz_widgets.ask("Q2", before), quiz_widgets.ask("Q5", before)
    iv = quiz_widgets.interview_self_check(before)
    q2.answer.value = "32"
    q2.submit.click()
    q2.answer.value = "64"
    q2.submit.click()
    for box in q5.checkboxes[:2]:
        box.value = True
    q5.submit.click()
    iv.answer.value = "单头做加权平均，会把指代和句法抹平。"
    iv.submit.click()

    after = Progress(store=ProgressFile(path))
    q2, q5, iv = quiz_widgets.ask("Q2", after), quiz_widgets.ask("Q5", after), quiz_widgets.interview_self_check(after)
    summary = quiz_widgets.progress_summary(after)
    assert q2.answer.value == "64" and q2.attempts == 2 and "恢复" in q2.attempt_label.value
    assert "正确" in q2.feedback.value and "「32」还不对" in q2.earlier.value and not q2.explain_button.disabled
    assert [b.value for b in q5.checkboxes] == [True, True, False, False, False] and "还不对" in q5.feedback.value
    assert iv.answer.value.startswith("单头做加权平均") and "覆盖了 1 / 3" in iv.feedback.value
    assert "参考答案" in iv.model_answer.value and "已答对 1 / " in summary.value
    q2.answer.value = "128"  # the restored widget keeps working
    q2.submit.click()
    assert q2.attempts == 3 and Progress(store=ProgressFile(path)).attempts["Q2"] == 3


def test_reset_button_asks_twice_then_clears_every_widget(tmp_path):
    p = Progress(store=ProgressFile(tmp_path / "progress.json"))
    q = quiz_widgets.ask("Q2", p)
    summary = quiz_widgets.progress_summary(p)
    q.answer.value = "64"
    q.submit.click()
    summary.reset_button.click()
    assert p.solved["Q2"] and "确认清空" in summary.reset_button.description
    summary.reset_button.click()
    assert not p.solved["Q2"] and q.answer.value == "" and q.feedback.value == "" and q.attempts == 0
    assert "已答对 0 / " in summary.value and "旧的进度保存在" in summary.status.value


def test_export_button_writes_both_files(tmp_path):
    p = Progress(store=ProgressFile(tmp_path / "progress.json"))
    summary = quiz_widgets.progress_summary(p)
    summary.export_button.click()
    assert (tmp_path / "progress-export.json").exists() and (tmp_path / "progress-summary.md").exists()
    assert "已导出" in summary.status.value


def test_feedback_boxes_use_theme_colours(progress):
    q = quiz_widgets.ask("Q2", progress)
    q.answer.value = "32"
    q.submit.click()
    wrong = q.feedback.value
    q.answer.value = "64"
    q.submit.click()
    q.explain_button.click()
    for html_text in (wrong, q.feedback.value, q.explanation.value, quiz_widgets.progress_summary(progress).value):
        assert "var(--jp-" in html_text and "overflow-wrap" in html_text and "lesson-box" in html_text
    assert "--jp-warn-color" in wrong and "--jp-success-color" in q.feedback.value
    text = quiz_widgets.ask("Q1", progress)
    text.answer.value = "平均"
    text.submit.click()
    assert "lesson-box-note" in text.feedback.value  # free text: a reading, neither green nor amber
