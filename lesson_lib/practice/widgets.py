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
    """The answer as the progress file keeps it: a form's boxes as a JSON list (in box order), keys,
    or text."""
    if question is not None and question.kind == "form":
        texts = checkers.form_values(question, value)
        return json.dumps([texts[b.name] for b in question.key.boxes], ensure_ascii=False)
    if question is not None and question.kind == "multi":
        return sorted(value or ())
    return "" if value is None else str(value)


def _wire(controls: dict, show, submit=None):
    """``controls.linked`` calling ``show(summary)`` on the learner's actions only; the summary is a
    live region."""
    wired = []
    summary = linked(controls, lambda s, _picture: wired and show(s), submit=submit, picture=None,
                     reader=False)
    wired.append(True)
    return summary.controls["summary"]


class _Shown:
    def _frame(self, children, *classes) -> None:
        """The outer box: bordered, as wide as the output, named and read out (``accessible``)."""
        import ipywidgets as w

        self.box = w.VBox(children,
                          layout=w.Layout(border="1px solid var(--jp-border-color2, #ddd)",
                                          padding="8px",
                                                    margin="6px 0", width="100%", max_width="100%",
                                                    overflow="hidden"))
        for name in classes:
            self.box.add_class(name)
        accessible(self.box)

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def _answer_controls(q, kind: str, placeholder: str, rows: int) -> tuple[dict, list]:
    """The answer controls by name, and the rows to lay them out in (a box with its unit beside
    it)."""
    import ipywidgets as w

    # named: an empty description <label> would hide the placeholder from a screen reader
    if kind == "self":
        answer = named(w.Textarea(placeholder=placeholder, rows=rows,
                                  layout=w.Layout(width="100%")), "你的回答")
        return {"answer": answer}, [w.Label("你的回答："), answer]
    if kind == "single":  # a named radio group whose choices wrap
        choice = w.RadioButtons(options=[(f"{k}. {label}", k) for k, label in q.choices],
                                value=None,
                                description="选一项", style=LABEL_BESIDE,
                                layout=w.Layout(width="100%"))
        return {"choice": choice}, [choice]
    if kind == "multi":  # width auto: 100% would overflow by the margins
        ticks = {k: w.Checkbox(value=False, description=f"{k}. {label}", indent=False,
                               layout=w.Layout(width="auto"))
                 for k, label in q.choices}
        return ticks, list(ticks.values())
    controls = {b.name: w.RadioButtons(options=[(label, key) for key, label, _ in b.options],
                                       value=None,
                                       description=b.label, style=LABEL_BESIDE)
                if hasattr(b, "options") else
                w.Text(description=b.label, placeholder=b.placeholder or "填一个数或式子",
                       continuous_update=False,
                       style=LABEL_BESIDE, layout=w.Layout(width="340px"))
                for b in q.key.boxes}
    units = [getattr(b, "unit", "") for b in q.key.boxes]  # a number box's unit beside it
    return controls, [w.HBox([c, w.Label(unit)]) if unit else c
                      for c, unit in zip(controls.values(), units)]


class SelfTestWidget(_Shown):
    """One self-test item: answer controls, 提交, feedback, then the explanation behind a toggle. A
    ``rubric`` (Q1, the interview: free text, never graded) adds a self-assessment and the reference
    answer after the first attempt."""

    def __init__(self, qid: str, prompt: str, check, progress: Progress | None = None,
                 question=None, rubric=None,
                 assess=None, placeholder: str = "", rows: int = 5):
        import ipywidgets as w

        self.qid = qid
        self.question = question
        self.rubric = rubric
        self._check = check
        self._assess = assess
        self.kind = question.kind if question is not None else "self"
        self.progress = progress if progress is not None else default_progress()
        self.controls, answer_rows = _answer_controls(question, self.kind, placeholder, rows)
        self.answer = self.controls.get("answer")
        self.submit = w.Button(description="写好了，看要点" if rubric else "提交",
                               button_style="primary",
                               tooltip="" if rubric else "检查答案（在框里按回车也可以）")
        self._words = ("看参考答案", "收起参考答案") if rubric else ("显示解析", "隐藏解析")
        self.reveal = w.ToggleButton(description=self._words[0], disabled=True, layout=w.Layout(
            width="auto", align_self="flex-start"), tooltip=f"先作答一次，再{self._words[0]}")
        self.attempt_label = w.HTML("尚未作答")
        self.feedback = _wire(self.controls, self._on_submit, self.submit)
        self.reference = _wire({"reveal": self.reveal}, self._on_reveal)
        below = [w.HBox([self.submit, self.reveal, self.attempt_label]), self.feedback,
                 self.reference]
        # 写好了 beside the count; then the self-assessment; the reference answer last
        if rubric is not None:
            # shown after a first try
            self.rubric_html = w.HTML(box_html(rubric.text(), "neutral", "lesson-rubric"))
            self.ticks = {p.name: w.Checkbox(value=False, description=p.name, indent=False,
                                             layout=w.Layout(width="auto"))
                          for p in rubric.points}
            self.record_button = w.Button(description="记录自评",
                                          tooltip="只记录你自己勾的要点，不打分")
            self.assessment = _wire(self.ticks, self._on_assess, self.record_button)
            self.assess_box = w.VBox([self.rubric_html,
                                      w.Label("你的回答说到了哪几点？（自己勾，不打分）"),
                                      *self.ticks.values(), self.record_button, self.assessment],
                                     layout=w.Layout(display="none"))
            below = [w.HBox([self.submit, self.attempt_label]), self.feedback, self.assess_box,
                     self.reveal,
                     self.reference]
        if self.attempts:
            entry = self.progress.entry(qid)
            self.restore(entry["answer"])
            self._show(self._check(self.value()), restored=True)
            marks = [a["covered"] for a in entry["attempts"] if a.get("covered") is not None]
            if rubric is not None and marks:
                for name, box in self.ticks.items():
                    box.value = name in marks[-1]
                self.assessment.value = box_html(self._assess(marks[-1]).message, "review")
        self._frame([w.HTML(f"<b>{text_html(prompt)}</b>"), *answer_rows, *below],
                    "lesson-quiz", f"lesson-quiz-{qid}" if question else "lesson-interview")

    @property
    def attempts(self) -> int:
        return self.progress.entry(self.qid).get("n_attempts", 0)

    def restore(self, stored) -> None:
        """Set the controls from an answer as the progress file keeps it; anything unreadable
        restores nothing."""
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
        """The answer as the checker takes it: {box: text}, a choice key, the set of ticked keys, or
        text."""
        if self.kind == "form":
            return {name: "" if c.value is None else c.value for name, c in self.controls.items()}
        if self.kind == "multi":
            return {k for k, box in self.controls.items() if box.value}
        return self.controls["choice" if self.kind == "single" else "answer"].value

    def _on_submit(self, _summary) -> None:
        fb = self._check(self.value())
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
        fb = self._assess([name for name, box in self.ticks.items() if box.value])
        self.progress.record(fb, self.answer.value, of=len(self.rubric.points))
        summary.value = box_html(fb.message, "review")

    def _on_reveal(self, summary) -> None:
        show = bool(self.reveal.value) and self.attempts > 0
        shown = (self.rubric.model_answer, "lesson-reference-answer") if self.rubric else (
            self.question.explanation, "lesson-explanation")
        summary.value = box_html(shown[0], "neutral", shown[1]) if show else ""
        self.reveal.description = self._words[show]


def ask(question_id: str, progress: Progress | None = None) -> SelfTestWidget:
    """The widget for one self-test question (it displays itself as a cell's last value)."""
    q = questions.question(question_id)
    return SelfTestWidget(q.id, q.prompt, lambda a: quiz.check(q.id, a), progress, q, q.key
                          if q.kind == "self" else
                          None, lambda ticked: quiz.assess(q.id, ticked), q.placeholder,
                          rows=4)


def interview_self_check(progress: Progress | None = None) -> SelfTestWidget:
    """§8: the learner answers first; then the rubric, a self-assessment, and the reference
    answer."""
    q = questions.question(questions.apart_ids()[0])
    return SelfTestWidget(q.id, q.prompt, lambda a: quiz.check(q.id, a), progress, None, q.key,
                          lambda ticked: quiz.assess(q.id, ticked), q.placeholder, rows=6)


class ProgressSummary(_Shown):
    """The live progress summary, with 导出进度 (JSON + one-page Chinese summary)."""

    def __init__(self, progress: Progress | None = None, exercise_ids=()):
        import ipywidgets as w

        # the exercises to count: the sections' list, handed in by the notebook
        self.progress = progress if progress is not None else default_progress(exercise_ids)
        self.text = w.HTML()
        self.export_button = w.Button(description="导出进度",
                                      tooltip="写出 JSON 和一页中文汇总，交给老师")
        # 已导出 is read out after the click
        self.status = _wire({}, self._on_export, self.export_button)
        self._frame([self.text, self.export_button, self.status], "lesson-quiz-progress")
        self.refresh()
        self.progress.listeners.append(self.refresh)

    def refresh(self) -> None:
        tone = "right" if self.progress.all_done() else "neutral"
        self.text.value = box_html(self.progress.summary(), tone, "lesson-progress-summary")

    def _on_export(self, status) -> None:
        try:
            json_path, md_path = self.progress.export()
            status.value = box_html(f"已导出：{json_path}（JSON）和 {md_path}（一页中文汇总）。",
                                    "neutral")
        except OSError as exc:
            status.value = box_html(f"导出失败：{exc}", "wrong")


progress_summary = ProgressSummary  # the notebook's name: the summary, updated as work comes in
