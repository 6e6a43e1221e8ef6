"""The self-test widgets, driven as a learner would: fill boxes or tick, click 提交 (or press Enter), read feedback."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys

import pytest
from helpers import CJK, unnamed_controls, walk

from lesson_lib.practice import feedback as qf
from lesson_lib.practice import questions, quiz
from lesson_lib.practice import widgets as quiz_widgets
from lesson_lib.practice.progress import Progress

w = pytest.importorskip("ipywidgets")


def _plain(html_text: str) -> str:
    return re.sub(r"<[^>]+>", "", html_text)


def _fill(q, values: dict) -> None:
    for name, value in values.items():
        q.controls[name].value = value


@pytest.fixture
def progress():
    return Progress()  # in memory only


def _labelled(widget) -> list:
    """Every input control inside a widget tree, with the text that labels it (its description or a Label beside it)."""
    found = []

    def walk(node, beside=""):
        kids = list(getattr(node, "children", ()))
        labels = " ".join(k.value for k in kids if isinstance(k, w.Label))
        for kid in kids:
            walk(kid, labels)
        if isinstance(node, (w.Text, w.Textarea, w.RadioButtons, w.Checkbox, w.Button, w.ToggleButton)):
            found.append((node, (node.description or "") + beside))

    walk(widget)
    return found


def _shown_after(q) -> bool:
    """What a first attempt shows (the explanation's button; a self-explanation's rubric and ticks) is shown."""
    return q.after.layout.display != "none"


def _live(box) -> list:
    """The box's live regions (read out when they change)."""
    from lesson_lib.show.controls import LIVE

    return [x for x in walk(box) if LIVE in getattr(x, "_dom_classes", ())]


def _shows_check(q) -> qf.Feedback:
    """The feedback a question widget shows is the checker's verdict on what its controls hold, rendered."""
    fb = quiz.check(q.question.id, q.value())
    assert q.feedback.value == qf.feedback_html(fb)
    return fb


def test_q2_wrong_then_right(progress):
    """A wrong value, then the right one; the radio part is its own choice."""
    q = quiz_widgets.ask("Q2", progress)
    assert set(q.controls) == {"d_k", "params"}
    assert isinstance(q.controls["params"], w.RadioButtons) and q.controls["params"].value is None
    first = {"d_k": "64", "params": "不变"}
    _fill(q, first)
    q.submit.click()
    assert _shows_check(q).verdict == "wrong" and not progress.entry("Q2")["solved"]
    assert _shown_after(q) and q.attempts == progress.entry("Q2")["n_attempts"] == 1
    _fill(q, {"d_k": "d_k = d_v = 32"})  # leaving the box commits the value: not an attempt
    assert q.attempts == 1 and progress.entry("Q2")["n_attempts"] == 1
    q.submit.click()  # what Enter in the box does too (reader.js)
    assert _shows_check(q).verdict == "right" and progress.entry("Q2")["solved"] and q.attempts == 2
    assert json.loads(progress.entry("Q2")["attempts"][0]["answer"]) == list(first.values())  # the first, as typed
    q.submit.click()  # the same answer again is not another attempt
    assert q.attempts == 2 and progress.entry("Q2")["n_attempts"] == 2


def test_ticking_does_not_submit(progress):
    q = quiz_widgets.ask("Q5", progress)
    q.controls["A"].value = True
    assert q.feedback.value == "" and progress.entry("Q5") == {}  # checked only on 提交
    q.controls["C"].value = True
    q.submit.click()
    assert _shows_check(q).verdict == "right" and progress.entry("Q5")["solved"]


def test_unreadable_box_asks_for_a_form_and_is_not_an_attempt(progress):
    q = quiz_widgets.ask("S4b", progress)
    _fill(q, {"exp": "40000，不会", "grows": "会"})
    q.submit.click()
    fb = _shows_check(q)
    assert fb.blank and fb.verdict != "right" and q.attempts == 0
    _fill(q, {"grows": "不会", "exp": "40000"})
    q.submit.click()
    assert _shows_check(q).verdict == "wrong" and q.attempts == 1 and not progress.entry("S4b")["solved"]


def test_shape_as_three_boxes(progress):
    q = quiz_widgets.ask("S3", progress)
    assert [c.description for c in q.controls.values()] == [b.label for b in q.question.key.boxes]
    _fill(q, {"axis0": "（8，12，64）"})  # the whole tuple in the first box
    q.submit.click()
    assert _shows_check(q).verdict == "right" and progress.entry("S3")["solved"]


def test_explanation_after_a_first_attempt(progress):
    q = quiz_widgets.ask("S3b", progress)
    assert not _shown_after(q)
    q.controls["choice"].value = "A"
    q.submit.click()
    assert _shown_after(q) and q.reference.value == ""
    q.reveal.click()
    assert q.reference.value == qf.box_html(q.question.explanation, "neutral", "lesson-explanation")


def test_blank_submit_is_not_an_attempt(progress):
    q = quiz_widgets.ask("Q3", progress)
    q.submit.click()
    assert _shows_check(q).blank and q.attempts == 0 and not _shown_after(q)


@pytest.mark.parametrize("qid", questions.question_ids())
def test_every_control_has_a_chinese_label(progress, qid):
    widget = quiz_widgets.ask(qid, progress)
    controls = _labelled(widget.box)
    assert controls
    for control, label in controls:
        assert CJK.search(label) or re.match(r"^[A-Z]\. ", label), (qid, control, label)


def test_self_explanation_writes_then_ticks(progress):
    q1 = quiz_widgets.ask("Q1", progress)
    assert q1.rubric is not None and not _shown_after(q1) and q1.reference.value == ""
    q1.controls["answer"].value = "单头只有一组权重，输出是加权平均——这种说法是错的。"
    q1.submit.click()
    fb = quiz.check("Q1", q1.controls["answer"].value)
    assert q1.feedback.value == qf.feedback_html(fb) and fb.verdict != "right"
    assert _shown_after(q1)
    assert q1.rubric_html.value == qf.box_html(q1.rubric.text(), "neutral", "lesson-rubric")
    assert not progress.entry("Q1")["solved"]  # written, never graded
    names = list(q1.ticks)
    q1.ticks[names[0]].value = True
    assert q1.assessment.value == ""  # ticking is not recording
    q1.record_button.click()
    assert q1.assessment.value == qf.box_html(quiz.assess("Q1", [names[0]]).message, "review")
    entry = progress.entry("Q1")
    assert (entry["attempts"][-1]["covered"], entry["attempts"][-1]["of"]) == ([names[0]], len(q1.rubric.points))
    assert entry["final"] == "self" and not entry["solved"]
    q1.reveal.click()
    assert q1.reference.value == qf.box_html(q1.rubric.model_answer, "neutral", "lesson-reference-answer")


def test_interview_asks_first_and_reveals_after(progress):
    iv = quiz_widgets.interview_self_check(progress)
    assert not _shown_after(iv) and iv.reference.value == ""
    iv.reveal.click()  # even if forced, nothing shows before an attempt
    assert iv.reference.value == ""
    iv.submit.click()
    assert _shows_check(iv).blank and iv.attempts == 0 and not _shown_after(iv)
    iv.controls["answer"].value = "单头做加权平均，会把指代和句法抹平。"
    iv.submit.click()
    assert _shows_check(iv).verdict == "review" and _shown_after(iv)
    iv.reveal.click()
    assert iv.reference.value == qf.box_html(iv.rubric.model_answer, "neutral", "lesson-reference-answer")
    iv.record_button.click()
    assert progress.entry("面试")["attempts"][-1]["of"] == len(iv.rubric.points)


def _written(widget) -> int:
    """The count the attempt label says (its one number)."""
    [n] = re.findall(r"\d+", widget.attempt_label.value)
    return int(n)


@pytest.mark.parametrize("build", [lambda p: quiz_widgets.ask("Q1", p), quiz_widgets.interview_self_check])
def test_a_self_assessment_is_not_counted_as_a_written_answer(tmp_path, build):
    """Once written and self-assessed, the label said 2: the assessment is kept as an attempt (verdict self)."""
    path = tmp_path / "progress.json"
    widget = build(Progress(path))
    assert widget.question.kind == "self"
    widget.controls["answer"].value = "单头只有一组权重。"
    widget.submit.click()
    next(iter(widget.ticks.values())).value = True
    widget.record_button.click()
    widget.submit.click()  # the same text again: not a new answer
    assert _written(widget) == 1 and widget.attempts == 2  # the self-assessment is kept, not counted
    assert _written(build(Progress(path))) == 1  # rebuilt from the file, as after a kernel restart
    widget.controls["answer"].value = "单头只有一组权重，只能做一次加权平均。"
    widget.submit.click()
    widget.record_button.click()
    assert _written(widget) == 2 and _written(build(Progress(path))) == 2


def test_html_is_escaped(progress):
    q = quiz_widgets.ask("Q2", progress)
    _fill(q, {"d_k": "<img src=x onerror=alert(1)>", "params": "不变"})
    q.submit.click()
    assert "<img" not in q.feedback.value


def test_every_question_builds(progress):
    for qid in questions.question_ids():
        q = quiz_widgets.ask(qid, progress)
        assert "application/vnd.jupyter.widget-view+json" in q._repr_mimebundle_()


def test_default_progress_is_shared():
    a = quiz_widgets.ask("S3b")
    summary = quiz_widgets.progress_summary()
    before = a.attempts
    a.controls["choice"].value = "A" if a.controls["choice"].value != "A" else "B"
    a.submit.click()
    assert quiz_widgets.default_progress().entry("S3b")["n_attempts"] == before + 1
    assert "S3b" in summary.text.value


def test_no_heavy_imports_at_import_time():
    code = (
        "import sys, lesson_lib.practice.quiz, lesson_lib.practice.widgets, lesson_lib.sections.exercises\n"
        "lesson_lib.practice.quiz.check('Q2', ['32', '不变'])\n"
        "heavy = [m for m in ('ipywidgets', 'matplotlib', 'IPython') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_stored_answers_round_trip(progress):
    for qid in questions.question_ids():
        q = quiz_widgets.ask(qid, progress)
        if q.question.kind == "form":
            value = {b.name: b.options[-1][0] if hasattr(b, "options") else f"{i}（x）"
                     for i, b in enumerate(q.question.key.boxes)}  # fmt: skip
            q.restore(quiz_widgets.stored_answer(q.question, value))
            assert q.value() == value
    q2 = quiz_widgets.ask("Q2", progress)
    for junk in ("not json", 5, '"32"', "[1, 2, 3, 4]"):
        q2.restore(junk)  # restores nothing it cannot read, and never raises
    assert q2.controls["params"].value is None


def test_widgets_restore_after_a_restart(tmp_path):
    """Answer, then build the widgets again from the same file (what re-running the cells after a restart does)."""
    path = tmp_path / "progress.json"
    before = Progress(path)
    q2, q5, q1 = quiz_widgets.ask("Q2", before), quiz_widgets.ask("Q5", before), quiz_widgets.ask("Q1", before)
    typed = {"d_k": "64", "params": "不变"}
    _fill(q2, typed)
    q2.submit.click()
    _fill(q2, {"d_k": "32"})
    q2.submit.click()
    label_before = q2.attempt_label.value  # 已作答 2 次
    q5.controls["A"].value = q5.controls["B"].value = True
    q5.submit.click()
    written = "单头只有一组权重。"
    q1.controls["answer"].value = written
    q1.submit.click()
    next(iter(q1.ticks.values())).value = True
    q1.record_button.click()

    after = Progress(path)
    q2, q5, q1 = quiz_widgets.ask("Q2", after), quiz_widgets.ask("Q5", after), quiz_widgets.ask("Q1", after)
    assert q2.controls["d_k"].value == "32" and q2.controls["params"].value == typed["params"] and q2.attempts == 2
    label = q2.attempt_label.value  # the same count, and it says it was restored
    assert label != label_before and label.startswith(label_before) and re.findall(r"\d+", label) == ["2"]
    assert qf.RIGHT in q2.feedback.value and _shown_after(q2)
    assert [c.value for c in q5.controls.values()] == [True, True, False, False, False]
    assert qf.WRONG in q5.feedback.value
    assert q1.controls["answer"].value == written and next(iter(q1.ticks.values())).value
    assert q1.assessment.value  # the self-assessment, shown again
    _fill(q2, {"d_k": "128"})  # the restored widget keeps working
    q2.submit.click()
    assert q2.attempts == 3 and Progress(path).entry("Q2")["n_attempts"] == 3


def test_a_restored_question_once_right_then_wrong_says_it_still_counts(tmp_path):
    """Right, then wrong: the last (wrong) answer and its feedback are shown, after a restart too, and a second part
    says it was solved before, as the summary counts it; a question never solved gets no such part."""
    path = tmp_path / "progress.json"
    before = Progress(path)
    q2, q5 = quiz_widgets.ask("Q2", before), quiz_widgets.ask("Q5", before)
    _fill(q2, {"d_k": "32", "params": "不变"})
    q2.submit.click()
    _fill(q2, {"d_k": "31"})
    q2.submit.click()
    assert q2.feedback.value.count('class="lesson-solved-before"') == 1  # in the same session too
    q5.controls["A"].value = True
    q5.submit.click()
    after = Progress(path)
    q2, q5 = quiz_widgets.ask("Q2", after), quiz_widgets.ask("Q5", after)
    assert after.entry("Q2")["solved"] and q2.controls["d_k"].value == "31"
    fb = quiz.check("Q2", q2.value())
    assert fb.verdict == "wrong" and q2.feedback.value.endswith(qf.feedback_html(fb))
    assert q2.feedback.value.count('class="lesson-solved-before"') == 1
    assert not after.entry("Q5")["solved"] and "lesson-solved-before" not in q5.feedback.value


def _exported(summary) -> str:
    """Click the summary's 导出进度; what its live region shows then."""
    (button,) = [c for c in walk(summary) if isinstance(c, w.Button)]
    button.click()
    (status,) = _live(summary)
    return status.value


def _links(html_text: str) -> list[dict]:
    """The attributes of each <a> in ``html_text``."""
    from html.parser import HTMLParser

    found = []
    parser = HTMLParser()
    parser.handle_starttag = lambda tag, attrs: found.append(dict(attrs)) if tag == "a" else None
    parser.feed(html_text)
    return found


def test_export_button_writes_the_export_and_links_the_same_file(tmp_path):
    p = Progress(tmp_path / "progress.json")
    answer = "单头只有一组权重。"
    p.record(quiz.check("Q1", answer), answer)
    shown = _exported(quiz_widgets.progress_summary(p))
    written = tmp_path / "progress-export.json"
    assert str(written) in shown  # it names the file it wrote
    (link,) = _links(shown)  # and links it as a download, under the same name
    assert link["download"] == written.name
    kind, payload = link["href"].split(",", 1)
    assert kind == "data:application/json;base64"
    assert base64.b64decode(payload, validate=True) == written.read_bytes()
    assert json.loads(base64.b64decode(payload))["questions"]["Q1"]["answer"] == answer


def test_a_change_after_an_export_takes_its_stale_link_away(tmp_path):
    """The link holds the progress as it was when exported: after a new answer it is gone."""
    p = Progress(tmp_path / "progress.json")
    summary = quiz_widgets.progress_summary(p)
    assert _links(_exported(summary))
    p.record(quiz.check("Q2", {"d_k": "32", "params": "不变"}), "32")
    (status,) = _live(summary)
    assert _links(status.value) == [] and status.value  # no stale link; a line says to export again


def test_an_export_over_the_cap_is_written_but_not_linked(tmp_path, monkeypatch):
    monkeypatch.setattr(quiz_widgets, "MAX_FILE_BYTES", 100)  # an empty progress exports ~200 bytes
    shown = _exported(quiz_widgets.progress_summary(Progress(tmp_path / "progress.json")))
    written = tmp_path / "progress-export.json"
    assert written.stat().st_size > 100 and str(written) in shown
    assert _links(shown) == [] and "lesson-box-warn" in shown  # said as a problem, no download


def test_feedback_boxes_use_theme_colours(progress):
    q = quiz_widgets.ask("Q2", progress)
    _fill(q, {"d_k": "64", "params": "不变"})
    q.submit.click()
    wrong = q.feedback.value
    _fill(q, {"d_k": "32"})
    q.submit.click()
    q.reveal.click()
    for html_text in (wrong, q.feedback.value, q.reference.value, quiz_widgets.progress_summary(progress).text.value):
        assert "var(--jp-" in html_text and "overflow-wrap" in html_text and "lesson-box" in html_text
    assert "--jp-warn-color" in wrong and "--jp-success-color" in q.feedback.value
    _fill(q, {"d_k": "不知道"})
    q.submit.click()
    assert "lesson-box-note" in q.feedback.value  # an unread box is not a verdict
    text = quiz_widgets.ask("Q1", progress)
    text.controls["answer"].value = "平均"
    text.submit.click()
    assert "lesson-box-note" in text.feedback.value  # free text: neither green nor amber


def test_the_quiz_wires_only_through_linked():
    """Builders create controls; widgets.linked is the one place that observes them."""
    import inspect

    source = inspect.getsource(quiz_widgets)
    assert ".on_click(" not in source and ".observe(" not in source and "linked(" in source


def test_linked_submit_mode_checks_on_click_only():
    """A text box's commit (Enter, or leaving it: ipywidgets cannot tell them apart) checks nothing; Enter clicks the
    primary button in the page (reader.js), so each check is one deliberate click."""
    from lesson_lib.show.controls import linked

    calls = []
    text = w.Text(continuous_update=False)
    live = w.Text()  # continuous: every keystroke, so never a submission
    tick = w.Checkbox(description="x")
    button = w.Button(description="提交")
    linked({"text": text, "live": live, "tick": tick}, lambda s, p: calls.append(1), submit=button)
    assert calls == []  # not while wiring: nothing is submitted before the learner acts
    tick.value = True
    live.value = "6"
    assert calls == []
    text.value = "64"  # what Enter or leaving the box commits
    assert calls == []
    button.click()
    assert len(calls) == 1


def test_a_click_checks_the_texts_the_page_sent_just_before_it(progress):
    """reader.js sends the box's texts (in page order) just before 提交's click: the kernel sets them first, so the
    click checks what was typed even while a box's own value update is still held in a busy page; setting them is
    no attempt. A count that is not this box's is ignored."""
    q = quiz_widgets.ask("S3", progress)
    reader = _readers(q.box)[0]
    reader._handle_custom_msg({"texts": ["8", "12", "64"]}, [])
    assert [c.value for c in q.controls.values()] == ["8", "12", "64"] and q.attempts == 0
    q.submit.click()
    assert _shows_check(q).verdict == "right" and q.attempts == 1  # in box order: 64, 12, 8 would be wrong
    shown = q.feedback.value
    q.controls["axis2"].value = "8"  # a box's own commit (Enter or leaving it) checks nothing
    assert q.attempts == 1 and q.feedback.value == shown
    reader._handle_custom_msg({"texts": ["1"]}, [])
    assert q.controls["axis0"].value == "8"


def _readers(box) -> list:
    from lesson_lib.show.controls import _reader_class

    return [x for x in walk(box) if isinstance(x, _reader_class())]


@pytest.mark.parametrize("qid", [*questions.question_ids(), "interview", "summary"])
def test_every_quiz_box_names_its_controls_and_reads_out_its_feedback(progress, qid):
    """One reader helper per shown box; every control named by its description (a text box too: a placeholder is no
    name); the feedback and the export status are live regions; radio groups are named."""
    if qid == "interview":
        widget = quiz_widgets.interview_self_check(progress)
    elif qid == "summary":
        widget = None
        box = quiz_widgets.progress_summary(progress)
    else:
        widget = quiz_widgets.ask(qid, progress)
    box = widget.box if widget else box
    assert "lesson-reader" in box._dom_classes and len(_readers(box)) == 1
    assert unnamed_controls(box) == []
    live = _live(box)
    assert len(live) == 1 if widget is None else widget.feedback in live
    for radio in (c for c, _ in _labelled(box) if isinstance(c, w.RadioButtons)):
        assert radio.description.strip()  # the radio group's name (role=radiogroup, aria-label)
