"""Widgets for the self-test, the interview self-check and the progress summary: wiring only.

Every decision (is it right, what to say) is made by ``lesson_lib.practice.quiz``; what the learner has done is
kept by ``lesson_lib.practice.progress`` (saved at once). The builders create controls, each with a Chinese visible
label, and hand them to ``widgets.linked`` (the project's one wiring helper) with a 提交 button: an answer
is checked on a click or on Enter in a box, never while the learner is still ticking. Each widget restores
its last answer, feedback and self-assessment from the progress when its cell runs again. ipywidgets is
imported inside the builders.
"""

from __future__ import annotations

import html
import json

from lesson_lib.practice import checkers, interview, questions, quiz, render
from lesson_lib.practice import feedback as practice_feedback
from lesson_lib.practice.progress import Progress, default_progress
from lesson_lib.show.controls import LABEL_BESIDE, LIVE, accessible, named

__all__ = ["QuestionWidget", "SelfExplanationWidget", "InterviewWidget", "ask", "progress_summary",
           "interview_self_check", "default_progress", "stored_answer", "restored_answer"]  # fmt: skip

MAX_HISTORY = 10  # earlier attempts listed under a question
_VERDICT_WORD = {"right": "正确", "wrong": "还不对", "review": "已写", "form": "没读懂", "self": "已自评"}


def _box_layout():
    import ipywidgets as w

    return w.Layout(border="1px solid var(--jp-border-color2, #ddd)", padding="8px", margin="6px 0",
                    width="100%", max_width="100%", overflow="hidden")  # fmt: skip


# ------------------------------------------------------------------------------------------ pure helpers
def stored_answer(question: practice_feedback.Question, value):
    """The answer as the progress file keeps it: a form's boxes as a JSON list (in box order), keys, or text."""
    if question.kind == "form":
        texts = checkers.form_values(question, value)
        return json.dumps([texts[b.name] for b in question.key.boxes], ensure_ascii=False)
    if question.kind == "multi":
        return sorted(value or ())
    return "" if value is None else str(value)


def restored_answer(question: practice_feedback.Question, stored):
    """The inverse of ``stored_answer`` for what a progress file holds; anything unreadable restores nothing."""
    if question.kind == "form":
        try:
            items = json.loads(stored) if isinstance(stored, str) else None
        except ValueError:
            items = None
        if not isinstance(items, list):
            return {}
        return {b.name: str(t) for b, t in zip(question.key.boxes, items)}
    if question.kind == "multi":
        return {str(k) for k in stored} if isinstance(stored, list) else set()
    return str(stored or "")


def shown_answer(question: practice_feedback.Question, stored) -> str:
    """A stored answer as one short line for the list of earlier attempts."""
    if question.kind == "form":
        values = restored_answer(question, stored)
        text = " | ".join(values.get(b.name, "") for b in question.key.boxes)
    elif isinstance(stored, list):
        text = "、".join(str(s) for s in stored)
    else:
        text = " ".join(str(stored or "").split())
    return text[:30]


def history_html(history: list[tuple[str, str]]) -> str:
    """Earlier attempts (not the latest, which the feedback area shows), newest last."""
    if not history:
        return ""
    shown = history[-MAX_HISTORY:]
    skipped = len(history) - len(shown)
    items = [
        f"第 {i} 次「{html.escape(answer) or '（空）'}」{_VERDICT_WORD.get(verdict, verdict)}"
        for i, (answer, verdict) in enumerate(shown, start=skipped + 1)
    ]
    more = f"（更早的 {skipped} 次未列出）" if skipped else ""
    return (f'<div style="color:var(--jp-content-font-color2, #666);font-size:90%;overflow-wrap:anywhere">'
            f'之前的作答{more}：{"；".join(items)}</div>')  # fmt: skip


# ------------------------------------------------------------------------------------------ controls
def _answer_controls(q: practice_feedback.Question) -> tuple[dict, list]:
    """The answer controls by name, and the rows to lay them out in (a box with its unit beside it)."""
    import ipywidgets as w

    controls, rows = {}, []
    if q.kind == "form":
        for b in q.key.boxes:
            if hasattr(b, "options"):
                control = w.RadioButtons(options=[(label, key) for key, label, _ in b.options], value=None,
                                         description=b.label, style=LABEL_BESIDE)  # fmt: skip
                rows.append(control)
            else:
                control = w.Text(description=b.label, placeholder=b.placeholder or "填一个数或式子",
                                 continuous_update=False, style=LABEL_BESIDE,
                                 layout=w.Layout(width="340px"))  # fmt: skip
                rows.append(w.HBox([control, w.Label(b.unit)]) if b.unit else control)
            controls[b.name] = control
    elif q.kind == "single":
        control = w.RadioButtons(options=[(f"{k}. {label}", k) for k, label in q.choices], value=None,
                                 description="选一项", style=LABEL_BESIDE, layout=w.Layout(width="100%"))  # fmt: skip
        controls["choice"] = control
        rows.append(control)
    elif q.kind == "multi":
        for k, label in q.choices:
            # width auto: the column stretches it to its width minus the widget margins (100% would overflow)
            controls[k] = w.Checkbox(value=False, description=f"{k}. {label}", indent=False,
                                     layout=w.Layout(width="auto"))  # fmt: skip
            rows.append(controls[k])
    return controls, rows


class QuestionWidget:
    """One question with one right answer: prompt, answer controls, 提交, feedback, earlier attempts, 显示解析."""

    def __init__(self, question_id: str, progress: Progress | None = None, show_prompt: bool = True):
        import ipywidgets as w

        from lesson_lib.show.controls import linked

        self.question = q = questions.question(question_id)
        if q.kind == "self":
            raise ValueError(f"{question_id} 是自我解释题：请用 ask()，它会换成 SelfExplanationWidget。")
        self.progress = progress if progress is not None else default_progress()
        self.prompt = w.HTML(f"<b>{render.text_html(q.prompt)}</b>" if show_prompt else "")
        self.controls, rows = _answer_controls(q)
        self.submit = w.Button(description="提交", button_style="primary", tooltip="检查答案（在框里按回车也可以）")
        self.explain_button = w.ToggleButton(description="显示解析", disabled=True, tooltip="先提交一次答案，再看解析")
        self.attempt_label = w.HTML("尚未作答")
        self.earlier = w.HTML("")
        self._ready = False
        self._clear()
        answer = linked(self.controls, self._on_submit, submit=self.submit, picture=None, reader=False)
        explain = linked({"explain": self.explain_button}, self._on_explain, picture=None, reader=False)
        self.feedback, self.explanation = answer.controls["summary"], explain.controls["summary"]
        self._ready = True
        self._restore()
        self.box = w.VBox(
            [self.prompt, w.VBox(rows), w.HBox([self.submit, self.explain_button, self.attempt_label]),
             self.feedback, self.earlier, self.explanation],
            layout=_box_layout(),
        )  # fmt: skip
        self.box.add_class("lesson-quiz")
        self.box.add_class(f"lesson-quiz-{q.id}")
        accessible(self.box)
        self.progress.on_reset(self.reset)

    # ------------------------------------------------------------------ state
    def _clear(self) -> None:
        self.attempts = 0
        self.history: list[tuple[str, str]] = []  # (answer as shown, verdict) of earlier attempts
        self._last: tuple[str, str] | None = None  # the latest attempt, which the feedback area shows
        self._last_stored = None
        self.set_value(None)
        self.attempt_label.value = "尚未作答"
        self.earlier.value = ""
        self.explain_button.value = False
        self.explain_button.disabled = True

    def reset(self) -> None:
        self._clear()
        self.feedback.value = self.explanation.value = ""

    def _restore(self) -> None:
        entry = self.progress.question_entry(self.question.id)
        if not entry or not entry.get("attempts"):
            return
        self.set_value(restored_answer(self.question, entry.get("answer")))
        self.attempts = int(entry["attempts"])
        past = [(str(a), str(v)) for a, v in entry.get("history", [])]
        self.history, self._last = past[:-1], (past[-1] if past else None)
        self._last_stored = stored_answer(self.question, self.value())
        self._show(quiz.check(self.question.id, self.value()), restored=True)

    def set_value(self, answer) -> None:
        q = self.question
        if q.kind == "form":
            values = answer if isinstance(answer, dict) else {}
            for b in q.key.boxes:
                v = values.get(b.name, "")
                control = self.controls[b.name]
                if hasattr(b, "options"):
                    control.value = v if v in {k for k, _, _ in b.options} else None
                else:
                    control.value = str(v)
        elif q.kind == "multi":
            keys = set(answer or ())
            for k, box in self.controls.items():
                box.value = k in keys
        else:
            self.controls["choice"].value = answer if answer in {k for k, _ in q.choices} else None

    def value(self):
        """The answer in the form quiz.check takes: {box: text}, a choice key, or the set of ticked keys."""
        q = self.question
        if q.kind == "form":
            return {name: ("" if c.value is None else c.value) for name, c in self.controls.items()}
        if q.kind == "multi":
            return {k for k, box in self.controls.items() if box.value}
        return self.controls["choice"].value

    # ------------------------------------------------------------------ events
    def _on_submit(self, summary=None, _picture=None) -> practice_feedback.Feedback | None:
        if not self._ready:  # linked's first call, while the widget is being built
            return None
        value = self.value()
        fb = quiz.check(self.question.id, value)
        stored = stored_answer(self.question, value)
        if not fb.blank and stored != self._last_stored:  # Enter, then 提交 on the same answer: one attempt
            self.progress.record(fb, stored)
            if self._last is not None:
                self.history.append(self._last)
            self._last = (shown_answer(self.question, stored), fb.verdict)
            self._last_stored = stored
            self.attempts += 1
        self._show(fb)
        return fb

    def _show(self, fb: practice_feedback.Feedback, restored: bool = False) -> None:
        if self.attempts:
            note = "（已从进度文件恢复）" if restored else ""
            self.attempt_label.value = f"已作答 {self.attempts} 次{note}"
            self.explain_button.disabled = False
            self.explain_button.tooltip = ""
        self.feedback.value = render.feedback_html(fb)
        self.earlier.value = history_html(self.history)

    def _on_explain(self, summary, _picture=None) -> None:
        show = bool(self.explain_button.value) and self.attempts > 0
        text = render.box_html(self.question.explanation, "neutral", "lesson-explanation")
        summary.value = text if show else ""
        self.explain_button.description = "隐藏解析" if show else "显示解析"

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


class SelfExplanationWidget:
    """Write first; then the rubric, a hint naming words in the answer, ticks for a self-assessment, and the
    reference answer behind a button. Nothing is graded. Used by Q1 and by §8's interview."""

    def __init__(self, qid: str, prompt: str, rubric, check, assess, progress: Progress | None = None,
                 placeholder: str = "", rows: int = 5, css_class: str = ""):  # fmt: skip
        import ipywidgets as w

        from lesson_lib.show.controls import linked

        self.qid, self.rubric, self._check, self._assess = qid, rubric, check, assess
        self.progress = progress if progress is not None else default_progress()
        self.prompt = w.HTML(f"<b>{render.text_html(prompt)}</b>")
        # named: ipywidgets' empty description <label> would otherwise hide the placeholder from a screen reader
        self.answer = named(w.Textarea(placeholder=placeholder, rows=rows, layout=w.Layout(width="100%")), "你的回答")
        self.submit = w.Button(description="写好了，看要点", button_style="primary", layout=w.Layout(width="auto"))
        self.attempt_label = w.HTML("尚未作答")
        self.ticks = {p.name: w.Checkbox(value=False, description=p.name, indent=False, layout=w.Layout(width="auto"))
                      for p in rubric.points}  # fmt: skip
        self.record_button = w.Button(description="记录自评", tooltip="只记录你自己勾的要点，不打分")
        self.reveal = w.ToggleButton(description="看参考答案", disabled=True, tooltip="先写下你的回答，再看参考答案",
                                     layout=w.Layout(width="auto", align_self="flex-start"))  # fmt: skip
        self.attempts = 0
        self._ready = False
        written = linked({"answer": self.answer}, self._on_submit, submit=self.submit, picture=None, reader=False)
        assessed = linked(self.ticks, self._on_assess, submit=self.record_button, picture=None, reader=False)
        revealed = linked({"reveal": self.reveal}, self._on_reveal, picture=None, reader=False)
        self.feedback = written.controls["summary"]
        self.assessment = assessed.controls["summary"]
        self.model_answer = revealed.controls["summary"]
        self.rubric_html = w.HTML("")
        self.assess_box = w.VBox([self.rubric_html, w.Label("你的回答说到了哪几点？（自己勾，不打分）"),
                                  *self.ticks.values(), self.record_button, self.assessment])  # fmt: skip
        self.assess_box.layout.display = "none"
        self._ready = True
        self._restore()
        self.box = w.VBox(
            [self.prompt, w.Label("你的回答："), self.answer, w.HBox([self.submit, self.attempt_label]), self.feedback,
             self.assess_box, self.reveal, self.model_answer],
            layout=_box_layout(),
        )  # fmt: skip
        for name in ("lesson-quiz", f"lesson-quiz-{qid}" if qid.isascii() else "", css_class):
            if name:
                self.box.add_class(name)
        accessible(self.box)
        self.progress.on_reset(self.reset)

    def _entry(self) -> dict:
        if self.qid == interview.INTERVIEW_ID:
            return self.progress.interview_entry() or {}
        return self.progress.question_entry(self.qid) or {}

    def reset(self) -> None:
        self.attempts = 0
        self.answer.value = ""
        self.attempt_label.value = "尚未作答"
        self.feedback.value = self.assessment.value = self.model_answer.value = self.rubric_html.value = ""
        for box in self.ticks.values():
            box.value = False
        self.assess_box.layout.display = "none"
        self.reveal.value, self.reveal.disabled = False, True

    def _restore(self) -> None:
        entry = self._entry()
        if not entry.get("attempts"):
            return
        self.answer.value = str(entry.get("answer", ""))
        self.attempts = int(entry["attempts"])
        self._show(self._check(self.answer.value), restored=True)
        mark = entry.get("self")
        if isinstance(mark, dict):
            covered = set(mark.get("covered") or ())
            for name, box in self.ticks.items():
                box.value = name in covered
            self.assessment.value = render.box_html(self._assess(covered).message, "review")

    def _on_submit(self, summary=None, _picture=None) -> practice_feedback.Feedback | None:
        if not self._ready:
            return None
        fb = self._check(self.answer.value)
        if not fb.blank:
            if self.qid == interview.INTERVIEW_ID:
                self.progress.record_interview(fb, self.answer.value)
            else:
                self.progress.record(fb, self.answer.value)
            self.attempts += 1
        self._show(fb)
        return fb

    def _show(self, fb: practice_feedback.Feedback, restored: bool = False) -> None:
        self.feedback.value = render.feedback_html(fb)
        if self.attempts:
            self.attempt_label.value = f"已写 {self.attempts} 次" + ("（已从进度文件恢复）" if restored else "")
            self.rubric_html.value = render.box_html(self.rubric.text(), "neutral", "lesson-rubric")
            self.assess_box.layout.display = None
            self.reveal.disabled = False
            self.reveal.tooltip = ""

    def _on_assess(self, summary=None, _picture=None) -> practice_feedback.Feedback | None:
        if not self._ready or not self.attempts:
            return None
        fb = self._assess([name for name, box in self.ticks.items() if box.value])
        self.progress.record(self.qid, {"kind": "self_assessment", "answer": self.answer.value,
                                        "covered": list(fb.covered), "of": len(self.rubric.points)})  # fmt: skip
        self.assessment.value = render.box_html(fb.message, "review")
        return fb

    def _on_reveal(self, summary, _picture=None) -> None:
        show = bool(self.reveal.value) and self.attempts > 0
        summary.value = render.box_html(self.rubric.model_answer, "neutral", "lesson-reference-answer") if show else ""
        self.reveal.description = "收起参考答案" if show else "看参考答案"

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def ask(question_id: str, progress: Progress | None = None, show_prompt: bool = True):
    """The widget for one self-test question (displays itself when it is a cell's last value)."""
    q = questions.question(question_id)
    if q.kind == "self":
        return SelfExplanationWidget(q.id, q.prompt, q.key, lambda a: quiz.check(q.id, a),
                                     lambda ticked: quiz.assess(q.id, ticked), progress, q.placeholder, rows=4)
    return QuestionWidget(question_id, progress, show_prompt)


class SummaryWidget:
    """The live progress summary, with 导出 (JSON + one-page Chinese summary) and 清空进度 (asks twice)."""

    def __init__(self, progress: Progress | None = None):
        import ipywidgets as w

        from lesson_lib.show.controls import linked

        self.progress = progress if progress is not None else default_progress()
        self.text = w.HTML()
        self.export_button = w.Button(description="导出进度", tooltip="写出 JSON 和一页中文汇总，交给老师")
        self.reset_button = w.Button(description="清空进度", tooltip="点两次才会清空；旧的进度文件会改名保留")
        self.status = w.HTML("").add_class(LIVE)  # 已导出 / 确认清空 is read out after the click
        self._armed = False
        self._ready = False  # linked calls each handler once while wiring: that is not a click
        linked({}, self._on_export, submit=self.export_button, picture=None, reader=False)
        linked({}, self._on_reset, submit=self.reset_button, picture=None, reader=False)
        self._ready = True
        self.box = w.VBox([self.text, w.HBox([self.export_button, self.reset_button]), self.status],
                          layout=_box_layout())  # fmt: skip
        self.box.add_class("lesson-quiz-progress")
        accessible(self.box)
        self.refresh()
        self.progress.subscribe(self.refresh)

    @property
    def value(self) -> str:
        return self.text.value

    def refresh(self) -> None:
        tone = "right" if self.progress.all_done() else "neutral"
        self.text.value = render.box_html(self.progress.summary(), tone, "lesson-progress-summary")

    def _on_export(self, _summary=None, _picture=None) -> None:
        if not self._ready:
            return
        try:
            json_path, md_path = self.progress.export()
        except OSError as exc:
            self.status.value = render.box_html(f"导出失败：{exc}", "wrong")
            return
        self.status.value = render.box_html(f"已导出：{json_path}（JSON）和 {md_path}（一页中文汇总）。", "neutral")

    def _on_reset(self, _summary=None, _picture=None) -> None:
        if not self._ready:
            return
        if not self._armed:
            self._armed = True
            self.reset_button.description = "确认清空"
            self.status.value = render.box_html("再点一次「确认清空」会清空所有作答记录（旧文件会改名保留）。", "wrong")
            return
        self._armed = False
        self.reset_button.description = "清空进度"
        self.status.value = render.box_html(self.progress.reset(), "neutral")

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def progress_summary(progress: Progress | None = None) -> SummaryWidget:
    """The progress summary (questions, code exercises, interview), updated live as work comes in."""
    return SummaryWidget(progress)


def InterviewWidget(progress: Progress | None = None) -> SelfExplanationWidget:
    """Section 8: the learner answers first; then the rubric, a self-assessment, and the reference answer."""
    return SelfExplanationWidget(
        interview.INTERVIEW_ID, interview.INTERVIEW_QUESTION, interview.interview_rubric(), interview.interview_check,
        interview.interview_self_assess, progress,
        placeholder="用自己的话回答面试官，写三五句即可……", rows=6, css_class="lesson-interview",
    )  # fmt: skip


def interview_self_check(progress: Progress | None = None) -> SelfExplanationWidget:
    """The section-8 self-check widget."""
    return InterviewWidget(progress)
