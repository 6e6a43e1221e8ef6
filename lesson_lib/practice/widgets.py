"""The self-test's widgets, wiring only: ``quiz`` decides, ``progress`` keeps (and restores when a
cell runs again); an answer is checked on 提交 or Enter, never while the learner is still
ticking."""

from __future__ import annotations

import contextlib
import json

from lesson_lib.practice import checkers, questions, quiz
from lesson_lib.practice.feedback import box_html, feedback_html, text_html
from lesson_lib.practice.progress import Progress, default_progress
from lesson_lib.show.controls import LABEL_BESIDE, accessible, linked, named


def stored_answer(question, value):
    """The answer as the progress file keeps it: text, sorted keys, or a JSON list of boxes."""
    if question.kind == "form":
        texts = checkers.form_values(question, value)
        return json.dumps([texts[b.name] for b in question.key.boxes], ensure_ascii=False)
    if question.kind == "multi":
        return sorted(value or ())
    return "" if value is None else str(value)


def _wire(controls: dict, show, submit=None):
    """``controls.linked`` calling ``show(summary)`` (a live region) on the learner's actions."""
    wired = []
    summary = linked(controls, lambda s, _picture: wired and show(s), submit=submit, picture=None,
                     reader=False)
    wired.append(True)
    return summary.controls["summary"]


def _frame(children, *classes):
    """The outer box: bordered, as wide as the output, named and read out (``accessible``)."""
    import ipywidgets as w

    border = "1px solid var(--jp-border-color2, #ddd)"
    layout = w.Layout(border=border, padding="8px", margin="6px 0", width="100%",
                      max_width="100%", overflow="hidden")
    box = w.VBox(children, layout=layout)
    for name in classes:
        box.add_class(name)
    return accessible(box)


def _tick(description: str):
    """A tick box whose label is its own (width auto: 100% would overflow by the margins)."""
    import ipywidgets as w

    return w.Checkbox(value=False, description=description, indent=False,
                      layout=w.Layout(width="auto"))


def _box_control(box):
    """A form box's control: a named radio group for a choice, else a text box checked on Enter."""
    import ipywidgets as w

    if isinstance(box, checkers.ChoiceBox):
        options = [(label, key) for key, label, _ in box.options]
        return w.RadioButtons(options=options, value=None, description=box.label,
                              style=LABEL_BESIDE)
    return w.Text(description=box.label, placeholder=box.placeholder or "填一个数或式子",
                  continuous_update=False, style=LABEL_BESIDE, layout=w.Layout(width="340px"))


def _answer_controls(q, rows: int) -> tuple[dict, list]:
    """The answer controls by name, and the rows they are laid out in (a unit beside its box)."""
    import ipywidgets as w

    if q.kind == "self":
        # named: an empty description <label> would hide the placeholder from a screen reader
        text = w.Textarea(placeholder=q.placeholder, rows=rows, layout=w.Layout(width="100%"))
        answer = named(text, "你的回答")
        return {"answer": answer}, [w.Label("你的回答："), answer]
    if q.kind == "single":  # a named radio group whose choices wrap
        options = [(f"{k}. {label}", k) for k, label in q.choices]
        choice = w.RadioButtons(options=options, value=None, description="选一项",
                                style=LABEL_BESIDE, layout=w.Layout(width="100%"))
        return {"choice": choice}, [choice]
    if q.kind == "multi":
        ticks = {k: _tick(f"{k}. {label}") for k, label in q.choices}
        return ticks, list(ticks.values())
    controls = {b.name: _box_control(b) for b in q.key.boxes}
    units = [getattr(b, "unit", "") for b in q.key.boxes]  # a number box's unit beside it
    return controls, [w.HBox([c, w.Label(u)]) if u else c for c, u in zip(controls.values(), units)]


class SelfTestWidget:
    """One self-test question: answer controls, 提交, feedback, then the explanation behind a
    toggle. A self-explanation (free text, never graded) adds, after the first attempt, its rubric,
    a self-assessment and the reference answer."""

    def __init__(self, question, progress: Progress | None = None, rows: int = 4):
        import ipywidgets as w

        self.question = question
        self.qid = question.id
        self.kind = question.kind
        self.rubric = question.key if self.kind == "self" else None
        self.progress = progress if progress is not None else default_progress()
        self.controls, answer_rows = _answer_controls(question, rows)
        self.answer = self.controls.get("answer")
        self.submit = w.Button(description="提交", button_style="primary",
                               tooltip="检查答案（在框里按回车也可以）")
        self._words = ("显示解析", "隐藏解析")
        self._reference = box_html(question.explanation, "neutral", "lesson-explanation")
        if self.rubric is not None:
            self.submit.description = "写好了，看要点"
            self.submit.tooltip = ""
            self._words = ("看参考答案", "收起参考答案")
            self._reference = box_html(self.rubric.model_answer, "neutral",
                                       "lesson-reference-answer")
        self.reveal = w.ToggleButton(description=self._words[0], disabled=True,
                                     tooltip=f"先作答一次，再{self._words[0]}",
                                     layout=w.Layout(width="auto", align_self="flex-start"))
        self.attempt_label = w.HTML("尚未作答")
        self.feedback = _wire(self.controls, self._on_submit, self.submit)
        self.reference = _wire({"reveal": self.reveal}, self._on_reveal)
        if self.rubric is None:
            bar = w.HBox([self.submit, self.reveal, self.attempt_label])
            below = [bar, self.feedback, self.reference]
        else:  # 写好了 beside the count; then the self-assessment; the reference answer last
            bar = w.HBox([self.submit, self.attempt_label])
            below = [bar, self.feedback, self._self_assessment(), self.reveal, self.reference]
        if self.attempts:
            self._restore_entry()
        prompt = w.HTML(f"<b>{text_html(question.prompt)}</b>")
        self.box = _frame([prompt, *answer_rows, *below], "lesson-quiz", f"lesson-quiz-{self.qid}")

    def _self_assessment(self):
        """The rubric and the learner's own ticks, hidden until a first attempt."""
        import ipywidgets as w

        self.rubric_html = w.HTML(box_html(self.rubric.text(), "neutral", "lesson-rubric"))
        self.ticks = {p.name: _tick(p.name) for p in self.rubric.points}
        self.record_button = w.Button(description="记录自评",
                                      tooltip="只记录你自己勾的要点，不打分")
        self.assessment = _wire(self.ticks, self._on_assess, self.record_button)
        asked = w.Label("你的回答说到了哪几点？（自己勾，不打分）")
        rows = [self.rubric_html, asked, *self.ticks.values(), self.record_button, self.assessment]
        self.assess_box = w.VBox(rows, layout=w.Layout(display="none"))
        return self.assess_box

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)

    @property
    def attempts(self) -> int:
        return self.progress.entry(self.qid).get("n_attempts", 0)

    def _restore_entry(self) -> None:
        """The last answer, its feedback and the last self-assessment, from the progress file."""
        entry = self.progress.entry(self.qid)
        self.restore(entry["answer"])
        self._show(quiz.check(self.qid, self.value()), restored=True)
        marks = [a["covered"] for a in entry["attempts"] if a.get("covered") is not None]
        if self.rubric is not None and marks:
            for name, box in self.ticks.items():
                box.value = name in marks[-1]
            self.assessment.value = box_html(quiz.assess(self.qid, marks[-1]).message, "review")

    def restore(self, stored) -> None:
        """Set the controls from a stored answer (``stored_answer``); an unreadable one: none."""
        values = {"choice": stored, "answer": stored}
        if self.kind == "form":
            with contextlib.suppress(ValueError, TypeError):
                # in box order
                values = dict(zip(self.controls, map(str, json.loads(stored)), strict=False))
        elif self.kind == "multi":
            values = dict.fromkeys(map(str, stored), True) if isinstance(stored, list) else {}
        for name, control in self.controls.items():
            v = values.get(name)
            if hasattr(control, "options"):  # a radio group: one of its keys, else none chosen
                control.value = v if v in [o for _, o in control.options] else None
            else:  # a tick box or a text box
                control.value = bool(v) if isinstance(control.value, bool) else str(v or "")

    def value(self):
        """The answer as the checker takes it: {box: text}, a key, the ticked keys, or text."""
        if self.kind == "form":
            return {name: "" if c.value is None else c.value for name, c in self.controls.items()}
        if self.kind == "multi":
            return {k for k, box in self.controls.items() if box.value}
        return self.controls["choice" if self.kind == "single" else "answer"].value

    def _on_submit(self, _summary) -> None:
        fb = quiz.check(self.qid, self.value())
        stored = stored_answer(self.question, self.value())
        if stored != self.progress.entry(self.qid).get("answer"):  # Enter, then 提交: one attempt
            self.progress.record(fb, stored)
        self._show(fb)

    def _show(self, fb, restored: bool = False) -> None:
        self.feedback.value = feedback_html(fb)
        if self.attempts:
            done = f"{'已写' if self.rubric else '已作答'} {self.attempts} 次"
            self.attempt_label.value = done + ("（已从进度文件恢复）" if restored else "")
            self.reveal.disabled = False
            self.reveal.tooltip = ""
            if self.rubric is not None:
                self.assess_box.layout.display = None

    def _on_assess(self, summary) -> None:  # its button shows after the first attempt
        fb = quiz.assess(self.qid, [name for name, box in self.ticks.items() if box.value])
        self.progress.record(fb, self.answer.value, of=len(self.rubric.points))
        summary.value = box_html(fb.message, "review")

    def _on_reveal(self, summary) -> None:
        show = bool(self.reveal.value) and self.attempts > 0
        self.reveal.description = self._words[show]
        summary.value = self._reference if show else ""


def ask(question_id: str, progress: Progress | None = None) -> SelfTestWidget:
    """The widget for one self-test question (it displays itself as a cell's last value)."""
    return SelfTestWidget(questions.question(question_id), progress)


def interview_self_check(progress: Progress | None = None) -> SelfTestWidget:
    """The interview: a self-explanation asked apart from the quiz, with a taller answer box."""
    widget = SelfTestWidget(questions.question(questions.apart_ids()[0]), progress, rows=6)
    widget.box.add_class("lesson-interview")
    return widget


class ProgressSummary:
    """The live progress summary, with 导出进度 (the JSON the class report reads)."""

    def __init__(self, progress: Progress | None = None, exercise_ids=()):
        import ipywidgets as w

        # the exercises to count: the sections' list, handed in by the notebook
        self.progress = progress if progress is not None else default_progress(exercise_ids)
        self.text = w.HTML()
        self.export_button = w.Button(description="导出进度",
                                      tooltip="写出 progress-export.json，交给老师")
        # 已导出 is read out after the click
        self.status = _wire({}, self._on_export, self.export_button)
        self.box = _frame([self.text, self.export_button, self.status], "lesson-quiz-progress")
        self.refresh()
        self.progress.listeners.append(self.refresh)

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)

    def refresh(self) -> None:
        tone = "right" if self.progress.all_done() else "neutral"
        self.text.value = box_html(self.progress.summary(), tone, "lesson-progress-summary")

    def _on_export(self, status) -> None:
        try:
            status.value = box_html(f"已导出：{self.progress.export()}，交给老师。", "neutral")
        except OSError as exc:
            status.value = box_html(f"导出失败：{exc}", "wrong")


progress_summary = ProgressSummary  # the notebook's name: the summary, updated as work comes in
