"""Widgets for the self-test and the interview self-check: wiring only.

Every decision (is it right, what to say, what the progress is) is made by ``lesson_lib.quiz``;
this module builds ipywidgets controls and passes their values to it. Plain HTML only (no ids, no
scripts, no MathJax, no emoji), so the widgets work offline in JupyterLab 4. ipywidgets is imported
inside the functions that build widgets.
"""

from __future__ import annotations

import html

from . import quiz

__all__ = ["QuestionWidget", "ask", "progress_summary", "interview_self_check", "default_progress"]

MAX_HISTORY = 10  # earlier attempts listed under a question
_PROGRESS: quiz.Progress | None = None


def default_progress() -> quiz.Progress:
    """The notebook's one progress record, shared by every question and the summary."""
    global _PROGRESS
    if _PROGRESS is None:
        _PROGRESS = quiz.Progress()
    return _PROGRESS


def _full_width():
    import ipywidgets as w

    return w.Layout(width="100%")


class QuestionWidget:
    """One question: prompt, answer control, 提交, feedback, earlier attempts, attempt count, 显示解析."""

    def __init__(self, question_id: str, progress: quiz.Progress | None = None, show_prompt: bool = True):
        import ipywidgets as w

        self.question = quiz.question(question_id)
        self.progress = progress if progress is not None else default_progress()
        self.attempts = 0
        self.history: list[tuple[str, bool]] = []  # (answer as shown, correct) of earlier attempts
        self._last: tuple[str, bool] | None = None  # the latest attempt, which the feedback area shows
        q = self.question
        self.prompt = w.HTML(f"<b>{quiz.text_html(q.prompt)}</b>" if show_prompt else "")
        self.checkboxes: list = []
        if q.kind == "single":
            self.answer = w.RadioButtons(
                options=[(f"{k}. {label}", k) for k, label in q.choices], value=None, layout=_full_width()
            )
        elif q.kind == "multi":
            self.checkboxes = [
                w.Checkbox(value=False, description=f"{k}. {label}", indent=False, layout=_full_width())
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
            [
                self.prompt,
                self.answer,
                w.HBox([self.submit, self.explain_button, self.attempt_label]),
                self.feedback,
                self.earlier,
                self.explanation,
            ],
            layout=w.Layout(border="1px solid #ddd", padding="8px", margin="6px 0"),
        )
        self.box.add_class("lesson-quiz")
        self.box.add_class(f"lesson-quiz-{q.id}")

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

    def _on_submit(self, _button=None) -> quiz.Feedback:
        shown = self._shown_answer()
        fb = quiz.check(self.question.id, self.value())
        self.progress.record(fb)
        if not fb.blank:
            if self._last is not None:
                self.history.append(self._last)
            self._last = (shown, fb.correct)
            self.attempts += 1
            self.attempt_label.value = f"已作答 {self.attempts} 次"
            self.explain_button.disabled = False
            self.explain_button.tooltip = ""
        self.feedback.value = quiz.feedback_html(fb)
        self.earlier.value = _history_html(self.history)
        if fb.show_explanation:
            self._show_explanation(True)
        return fb

    def _on_explain(self, _button=None) -> None:
        self._show_explanation(not self.explanation.value)

    def _show_explanation(self, show: bool) -> None:
        self.explanation.value = (
            f'<div style="padding:6px 10px;border-left:3px solid #90a4ae;background:#f5f7f8;line-height:1.6">'
            f"{quiz.text_html(self.question.explanation)}</div>"
            if show
            else ""
        )
        self.explain_button.description = "隐藏解析" if show else "显示解析"

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def _history_html(history: list[tuple[str, bool]]) -> str:
    """Earlier attempts (not the latest, which the feedback area shows), newest last."""
    if not history:
        return ""
    shown = history[-MAX_HISTORY:]
    skipped = len(history) - len(shown)
    items = [
        f"第 {i} 次「{html.escape(answer) or '（空）'}」{'正确' if ok else '还不对'}"
        for i, (answer, ok) in enumerate(shown, start=skipped + 1)
    ]
    more = f"（更早的 {skipped} 次未列出）" if skipped else ""
    return f'<div style="color:#666;font-size:90%">之前的作答{more}：{"；".join(items)}</div>'


def ask(question_id: str, progress: quiz.Progress | None = None, show_prompt: bool = True) -> QuestionWidget:
    """The widget for one self-test question (displays itself when it is a cell's last value)."""
    return QuestionWidget(question_id, progress, show_prompt)


def progress_summary(progress: quiz.Progress | None = None):
    """An HTML widget with how many questions are answered correctly, updated live as answers come in."""
    import ipywidgets as w

    progress = progress if progress is not None else default_progress()
    out = w.HTML(layout=w.Layout(border="1px solid #ddd", padding="8px"))

    def refresh():
        out.value = f'<div style="line-height:1.7">{quiz.text_html(progress.summary())}</div>'

    refresh()
    progress.subscribe(refresh)
    out.add_class("lesson-quiz-progress")
    return out


class InterviewWidget:
    """Section 8: the learner's own answer, which of the three points it covers, then the model answer."""

    def __init__(self):
        import ipywidgets as w

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
            layout=w.Layout(border="1px solid #ddd", padding="8px", margin="6px 0"),
        )
        self.box.add_class("lesson-interview")

    def _on_submit(self, _button=None) -> quiz.Feedback:
        fb = quiz.interview_check(self.answer.value)
        if not fb.blank:
            self.attempts += 1
            self.attempt_label.value = f"已作答 {self.attempts} 次"
        self.feedback.value = quiz.feedback_html(fb)
        if fb.show_explanation:
            self.model_answer.value = (
                f'<div style="padding:6px 10px;border-left:3px solid #90a4ae;background:#f5f7f8;line-height:1.6">'
                f"{quiz.text_html(fb.explanation)}</div>"
            )
        return fb

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def interview_self_check() -> InterviewWidget:
    """The section-8 self-check widget."""
    return InterviewWidget()
