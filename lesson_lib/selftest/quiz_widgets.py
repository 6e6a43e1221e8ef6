"""Widgets for the self-test, the interview self-check and the progress summary: wiring only.

Every decision (is it right, what to say) is made by ``lesson_lib.selftest.quiz``; what the learner has done is
kept by ``lesson_lib.selftest.progress`` (saved to the progress file at once). Each widget restores its last
answer and feedback from the progress when its cell runs again (after a kernel restart, say). Plain
HTML with JupyterLab theme colours (``quiz.render``). ipywidgets is imported inside the builders.
"""

from __future__ import annotations

import html

from . import quiz
from .progress import Progress, default_progress

__all__ = ["QuestionWidget", "InterviewWidget", "ask", "progress_summary", "interview_self_check",
           "default_progress"]  # fmt: skip

MAX_HISTORY = 10  # earlier attempts listed under a question
_VERDICT_WORD = {"right": "正确", "wrong": "还不对", "review": "已对照"}


def _full_width():
    import ipywidgets as w

    return w.Layout(width="100%", max_width="100%")


def _box_layout():
    import ipywidgets as w

    return w.Layout(border="1px solid var(--jp-border-color2, #ddd)", padding="8px", margin="6px 0",
                    width="100%", max_width="100%", overflow="hidden")  # fmt: skip


class QuestionWidget:
    """One question: prompt, answer control, 提交, feedback, earlier attempts, attempt count, 显示解析."""

    def __init__(self, question_id: str, progress: Progress | None = None, show_prompt: bool = True):
        import ipywidgets as w

        self.question = quiz.question(question_id)
        self.progress = progress if progress is not None else default_progress()
        q = self.question
        self.prompt = w.HTML(f"<b>{quiz.text_html(q.prompt)}</b>" if show_prompt else "")
        self.checkboxes: list = []
        if q.kind == "single":
            self.answer = w.RadioButtons(
                options=[(f"{k}. {label}", k) for k, label in q.choices], value=None, layout=_full_width()
            )
        elif q.kind == "multi":
            self.checkboxes = [
                # width auto: the column stretches it to its width minus the widget margins (100% would overflow)
                w.Checkbox(value=False, description=f"{k}. {label}", indent=False, layout=w.Layout(width="auto"))
                for k, label in q.choices
            ]
            self.answer = w.VBox(self.checkboxes)
        elif q.kind == "text":
            self.answer = w.Textarea(placeholder=q.placeholder, layout=w.Layout(width="100%", height="80px"))
        else:
            self.answer = w.Text(placeholder=q.placeholder, layout=w.Layout(width="60%"))
        self.submit = w.Button(description="提交", button_style="primary")
        self.explain_button = w.Button(description="显示解析", disabled=True, tooltip="先提交一次答案，再看解析")
        self.attempt_label = w.HTML("尚未作答")
        self.feedback = w.HTML("")
        self.earlier = w.HTML("")
        self.explanation = w.HTML("")
        self.submit.on_click(self._on_submit)
        self.explain_button.on_click(self._on_explain)
        self.box = w.VBox(
            [self.prompt, self.answer, w.HBox([self.submit, self.explain_button, self.attempt_label]),
             self.feedback, self.earlier, self.explanation],
            layout=_box_layout(),
        )  # fmt: skip
        self.box.add_class("lesson-quiz")
        self.box.add_class(f"lesson-quiz-{q.id}")
        self._clear()
        self._restore()
        self.progress.on_reset(self._clear)

    # ------------------------------------------------------------------ state
    def _clear(self) -> None:
        self.attempts = 0
        self.history: list[tuple[str, str]] = []  # (answer as shown, verdict) of earlier attempts
        self._last: tuple[str, str] | None = None  # the latest attempt, which the feedback area shows
        self._set_value(None)
        self.attempt_label.value = "尚未作答"
        self.feedback.value = self.earlier.value = self.explanation.value = ""
        self.explain_button.disabled = True
        self.explain_button.description = "显示解析"

    def _restore(self) -> None:
        entry = self.progress.question_entry(self.question.id)
        if not entry or not entry.get("attempts"):
            return
        answer = entry.get("answer", "")
        self._set_value(answer)
        self.attempts = int(entry["attempts"])
        past = [(str(a), v) for a, v in entry.get("history", [])]
        self.history, self._last = past[:-1], (past[-1] if past else None)
        fb = quiz.check(self.question.id, self.value())
        self._show(fb, restored=True)

    def _set_value(self, answer) -> None:
        q = self.question
        if q.kind == "multi":
            keys = set(answer or ())
            for (k, _), box in zip(q.choices, self.checkboxes):
                box.value = k in keys
        elif q.kind == "single":
            self.answer.value = answer if answer in {k for k, _ in q.choices} else None
        else:
            self.answer.value = str(answer or "")

    def value(self):
        """The answer in the form quiz.check takes: text, a choice key, or the set of ticked keys."""
        if self.question.kind == "multi":
            return {k for (k, _), box in zip(self.question.choices, self.checkboxes) if box.value}
        return self.answer.value

    def _shown_answer(self) -> str:
        value = self.value()
        if isinstance(value, set):
            return "、".join(sorted(value))
        return " ".join(str(value or "").split())[:30]

    # ------------------------------------------------------------------ events
    def _on_submit(self, _button=None) -> quiz.Feedback:
        shown, value = self._shown_answer(), self.value()
        fb = quiz.check(self.question.id, value)
        self.progress.record(fb, value)
        if not fb.blank:
            if self._last is not None:
                self.history.append(self._last)
            self._last = (shown, fb.verdict)
            self.attempts += 1
        self._show(fb)
        return fb

    def _show(self, fb: quiz.Feedback, restored: bool = False) -> None:
        if self.attempts:
            note = "（已从进度文件恢复）" if restored else ""
            self.attempt_label.value = f"已作答 {self.attempts} 次{note}"
            self.explain_button.disabled = False
            self.explain_button.tooltip = ""
        self.feedback.value = quiz.feedback_html(fb)
        self.earlier.value = _history_html(self.history)
        if fb.show_explanation:
            self._show_explanation(True)

    def _on_explain(self, _button=None) -> None:
        self._show_explanation(not self.explanation.value)

    def _show_explanation(self, show: bool) -> None:
        text = quiz.box_html(self.question.explanation, "neutral", "lesson-explanation")
        self.explanation.value = text if show else ""
        self.explain_button.description = "隐藏解析" if show else "显示解析"

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def _history_html(history: list[tuple[str, str]]) -> str:
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


def ask(question_id: str, progress: Progress | None = None, show_prompt: bool = True) -> QuestionWidget:
    """The widget for one self-test question (displays itself when it is a cell's last value)."""
    return QuestionWidget(question_id, progress, show_prompt)


class SummaryWidget:
    """The live progress summary, with 导出 (JSON + one-page Chinese summary) and 清空进度 (asks twice)."""

    def __init__(self, progress: Progress | None = None):
        import ipywidgets as w

        self.progress = progress if progress is not None else default_progress()
        self.text = w.HTML()
        self.export_button = w.Button(description="导出进度", tooltip="写出 JSON 和一页中文汇总，交给老师")
        self.reset_button = w.Button(description="清空进度", tooltip="点两次才会清空；旧的进度文件会改名保留")
        self.status = w.HTML("")
        self._armed = False
        self.export_button.on_click(self._on_export)
        self.reset_button.on_click(self._on_reset)
        self.box = w.VBox([self.text, w.HBox([self.export_button, self.reset_button]), self.status],
                          layout=_box_layout())  # fmt: skip
        self.box.add_class("lesson-quiz-progress")
        self.refresh()
        self.progress.subscribe(self.refresh)

    @property
    def value(self) -> str:
        return self.text.value

    def refresh(self) -> None:
        tone = "right" if self.progress.all_done() else "neutral"
        self.text.value = quiz.box_html(self.progress.summary(), tone, "lesson-progress-summary")

    def _on_export(self, _button=None) -> None:
        try:
            json_path, md_path = self.progress.export()
        except OSError as exc:
            self.status.value = quiz.box_html(f"导出失败：{exc}", "wrong")
            return
        self.status.value = quiz.box_html(f"已导出：{json_path}（JSON）和 {md_path}（一页中文汇总）。", "neutral")

    def _on_reset(self, _button=None) -> None:
        if not self._armed:
            self._armed = True
            self.reset_button.description = "确认清空"
            self.status.value = quiz.box_html("再点一次「确认清空」会清空所有作答记录（旧文件会改名保留）。", "wrong")
            return
        self._armed = False
        self.reset_button.description = "清空进度"
        self.status.value = quiz.box_html(self.progress.reset(), "neutral")

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def progress_summary(progress: Progress | None = None) -> SummaryWidget:
    """The progress summary (questions, code exercises, interview), updated live as work comes in."""
    return SummaryWidget(progress)


class InterviewWidget:
    """Section 8: the learner's own answer, which of the three points it states, then the reference answer."""

    def __init__(self, progress: Progress | None = None):
        import ipywidgets as w

        self.progress = progress if progress is not None else default_progress()
        self.prompt = w.HTML(f"<b>{quiz.text_html(quiz.INTERVIEW_QUESTION)}</b>")
        self.answer = w.Textarea(
            placeholder="先合上上面的「本课答」，用自己的话回答面试官，写三五句即可……",
            layout=w.Layout(width="100%", height="120px"),
        )
        self.submit = w.Button(description="提交", button_style="primary")
        self.attempts = 0
        self.attempt_label = w.HTML("尚未作答")
        self.feedback = w.HTML("")
        self.model_answer = w.HTML("")
        self.submit.on_click(self._on_submit)
        self.box = w.VBox(
            [self.prompt, self.answer, w.HBox([self.submit, self.attempt_label]), self.feedback, self.model_answer],
            layout=_box_layout(),
        )
        self.box.add_class("lesson-interview")
        self._restore()
        self.progress.on_reset(self._clear)

    def _clear(self) -> None:
        self.attempts = 0
        self.answer.value = ""
        self.attempt_label.value = "尚未作答"
        self.feedback.value = self.model_answer.value = ""

    def _restore(self) -> None:
        entry = self.progress.interview_entry()
        if not entry or not entry.get("attempts"):
            return
        self.answer.value = str(entry.get("answer", ""))
        self.attempts = int(entry["attempts"])
        self._show(quiz.interview_check(self.answer.value), restored=True)

    def _on_submit(self, _button=None) -> quiz.Feedback:
        fb = quiz.interview_check(self.answer.value)
        self.progress.record_interview(fb, self.answer.value)
        if not fb.blank:
            self.attempts += 1
        self._show(fb)
        return fb

    def _show(self, fb: quiz.Feedback, restored: bool = False) -> None:
        if self.attempts:
            self.attempt_label.value = f"已作答 {self.attempts} 次" + ("（已从进度文件恢复）" if restored else "")
        self.feedback.value = quiz.feedback_html(fb)
        if fb.show_explanation:
            self.model_answer.value = quiz.box_html(fb.explanation, "neutral", "lesson-reference-answer")

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def interview_self_check(progress: Progress | None = None) -> InterviewWidget:
    """The section-8 self-check widget."""
    return InterviewWidget(progress)
