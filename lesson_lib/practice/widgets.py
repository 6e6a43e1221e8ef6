"""The self-test's widgets, wiring only: ``quiz`` decides, ``progress`` keeps (and restores when a cell runs again);
an answer is checked on 提交 or Enter, never while the learner is still ticking."""

from __future__ import annotations

import json

from lesson_lib.practice import checkers, interview, questions, quiz
from lesson_lib.practice.progress import Progress, default_progress
from lesson_lib.practice.render import box_html, feedback_html, text_html
from lesson_lib.show.controls import LABEL_BESIDE, LIVE, accessible, linked, named


def stored_answer(question, value):
    """The answer as the progress file keeps it: a form's boxes as a JSON list (in box order), keys, or text."""
    if question.kind == "form":
        texts = checkers.form_values(question, value)
        return json.dumps([texts[b.name] for b in question.key.boxes], ensure_ascii=False)
    if question.kind == "multi":
        return sorted(value or ())
    return "" if value is None else str(value)


def restored_answer(question, stored):
    """The inverse of ``stored_answer``; anything unreadable restores nothing."""
    if question.kind == "form":
        try:
            items = json.loads(stored) if isinstance(stored, str) else None
        except ValueError:
            items = None
        return {b.name: str(t) for b, t in zip(question.key.boxes, items)} if isinstance(items, list) else {}
    if question.kind == "multi":
        return {str(k) for k in stored} if isinstance(stored, list) else set()
    return str(stored or "")


def _frame(children, *classes):
    """The widget's outer box: bordered, as wide as the output, named and read out (``accessible``)."""
    import ipywidgets as w

    box = w.VBox(children, layout=w.Layout(border="1px solid var(--jp-border-color2, #ddd)", padding="8px",
                                           margin="6px 0", width="100%", max_width="100%", overflow="hidden"))
    for name in filter(None, classes):
        box.add_class(name)
    accessible(box)
    return box


def _wire(controls: dict, show, submit=None):
    """``controls.linked`` calling ``show(summary)`` on the learner's actions only (not while wiring); the summary,
    a live region, is returned."""
    wired = []

    def on(summary, _picture):
        if wired:
            show(summary)

    summary = linked(controls, on, submit=submit, picture=None, reader=False).controls["summary"]
    wired.append(True)
    return summary


class _Shown:
    box = None

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)


def _answer_controls(q) -> tuple[dict, list]:
    """The answer controls by name, and the rows to lay them out in (a box with its unit beside it)."""
    import ipywidgets as w

    controls, rows = {}, []
    if q.kind == "single":  # a named radio group whose choices wrap
        controls["choice"] = w.RadioButtons(options=[(f"{k}. {label}", k) for k, label in q.choices], value=None,
                                            description="选一项", style=LABEL_BESIDE, layout=w.Layout(width="100%"))
        rows.append(controls["choice"])
    for k, label in q.choices if q.kind == "multi" else ():  # width auto: 100% would overflow by the margins
        controls[k] = w.Checkbox(value=False, description=f"{k}. {label}", indent=False, layout=w.Layout(width="auto"))
        rows.append(controls[k])
    for b in q.key.boxes if q.kind == "form" else ():
        if hasattr(b, "options"):
            controls[b.name] = w.RadioButtons(options=[(label, key) for key, label, _ in b.options], value=None,
                                              description=b.label, style=LABEL_BESIDE)  # fmt: skip
            rows.append(controls[b.name])
        else:
            controls[b.name] = w.Text(description=b.label, placeholder=b.placeholder or "填一个数或式子",
                                      continuous_update=False, style=LABEL_BESIDE, layout=w.Layout(width="340px"))
            rows.append(w.HBox([controls[b.name], w.Label(b.unit)]) if b.unit else controls[b.name])
    return controls, rows


class QuestionWidget(_Shown):
    """One question with one right answer: prompt, answer controls, 提交, feedback, 显示解析."""

    def __init__(self, question_id: str, progress: Progress | None = None):
        import ipywidgets as w

        self.question = q = questions.question(question_id)
        self.progress = progress if progress is not None else default_progress()
        self.controls, rows = _answer_controls(q)
        self.submit = w.Button(description="提交", button_style="primary", tooltip="检查答案（在框里按回车也可以）")
        self.explain_button = w.ToggleButton(description="显示解析", disabled=True, tooltip="先提交一次答案，再看解析")
        self.attempt_label = w.HTML("尚未作答")
        self.feedback = _wire(self.controls, self._on_submit, self.submit)
        self.explanation = _wire({"explain": self.explain_button}, self._on_explain)
        if self.attempts:
            self.set_value(restored_answer(q, self.progress.entry(q.id)["answer"]))
            self._show(quiz.check(q.id, self.value()), restored=True)
        buttons = w.HBox([self.submit, self.explain_button, self.attempt_label])
        self.box = _frame([w.HTML(f"<b>{text_html(q.prompt)}</b>"), w.VBox(rows), buttons,
                           self.feedback, self.explanation], "lesson-quiz", f"lesson-quiz-{q.id}")

    @property
    def attempts(self) -> int:
        return self.progress.entry(self.question.id).get("n_attempts", 0)

    def set_value(self, answer) -> None:
        values = answer if isinstance(answer, dict) else {"choice": answer}
        for name, control in self.controls.items():
            if self.question.kind == "multi":
                control.value = name in (answer or ())
            elif hasattr(control, "options"):  # a radio group: one of its keys, else none chosen
                control.value = values.get(name) if values.get(name) in [v for _, v in control.options] else None
            else:
                control.value = str(values.get(name) or "")

    def value(self):
        """The answer as quiz.check takes it: {box: text}, a choice key, or the set of ticked keys."""
        if self.question.kind == "form":
            return {name: "" if c.value is None else c.value for name, c in self.controls.items()}
        if self.question.kind == "multi":
            return {k for k, box in self.controls.items() if box.value}
        return self.controls["choice"].value

    def _on_submit(self, _summary) -> None:
        fb = quiz.check(self.question.id, self.value())
        stored = stored_answer(self.question, self.value())
        if not self.attempts or stored != self.progress.entry(self.question.id)["answer"]:  # Enter, then 提交: once
            self.progress.record(fb, stored)
        self._show(fb)

    def _show(self, fb, restored: bool = False) -> None:
        if self.attempts:
            self.attempt_label.value = f"已作答 {self.attempts} 次" + ("（已从进度文件恢复）" if restored else "")
            self.explain_button.disabled, self.explain_button.tooltip = False, ""
        self.feedback.value = feedback_html(fb)

    def _on_explain(self, summary) -> None:
        show = bool(self.explain_button.value) and self.attempts > 0
        summary.value = box_html(self.question.explanation, "neutral", "lesson-explanation") if show else ""
        self.explain_button.description = "隐藏解析" if show else "显示解析"


class SelfExplanationWidget(_Shown):
    """Write first; then the rubric, a hint naming words in the answer, ticks for a self-assessment, and the
    reference answer behind a button. Nothing is graded. Q1 and §8's interview."""

    def __init__(self, qid: str, prompt: str, rubric, check, assess, progress: Progress | None = None,
                 placeholder: str = "", rows: int = 5, css_class: str = ""):  # fmt: skip
        import ipywidgets as w

        self.qid, self.rubric, self._check, self._assess = qid, rubric, check, assess
        self.progress = progress if progress is not None else default_progress()
        # named: ipywidgets' empty description <label> would otherwise hide the placeholder from a screen reader
        self.answer = named(w.Textarea(placeholder=placeholder, rows=rows, layout=w.Layout(width="100%")), "你的回答")
        self.submit = w.Button(description="写好了，看要点", button_style="primary", layout=w.Layout(width="auto"))
        self.attempt_label, self.rubric_html = w.HTML("尚未作答"), w.HTML("")
        self.ticks = {p.name: w.Checkbox(value=False, description=p.name, indent=False, layout=w.Layout(width="auto"))
                      for p in rubric.points}  # fmt: skip
        self.record_button = w.Button(description="记录自评", tooltip="只记录你自己勾的要点，不打分")
        self.reveal = w.ToggleButton(description="看参考答案", disabled=True, tooltip="先写下你的回答，再看参考答案",
                                     layout=w.Layout(width="auto", align_self="flex-start"))  # fmt: skip
        self.feedback = _wire({"answer": self.answer}, self._on_submit, self.submit)
        self.assessment = _wire(self.ticks, self._on_assess, self.record_button)
        self.model_answer = _wire({"reveal": self.reveal}, self._on_reveal)
        self.assess_box = w.VBox([self.rubric_html, w.Label("你的回答说到了哪几点？（自己勾，不打分）"),
                                  *self.ticks.values(), self.record_button, self.assessment])  # fmt: skip
        self.assess_box.layout.display = "none"
        entry = self.progress.entry(qid)
        if self.attempts:
            self.answer.value = str(entry["answer"])
            self._show(self._check(self.answer.value), restored=True)
            marks = [a for a in entry["attempts"] if a["verdict"] == "self"]
            for name, box in self.ticks.items():
                box.value = bool(marks) and name in marks[-1]["covered"]
            if marks:
                self.assessment.value = box_html(self._assess(marks[-1]["covered"]).message, "review")
        self.box = _frame([w.HTML(f"<b>{text_html(prompt)}</b>"), w.Label("你的回答："), self.answer,
                           w.HBox([self.submit, self.attempt_label]), self.feedback, self.assess_box, self.reveal,
                           self.model_answer], "lesson-quiz", f"lesson-quiz-{qid}" if qid.isascii() else "", css_class)

    @property
    def attempts(self) -> int:
        return self.progress.entry(self.qid).get("n_attempts", 0)

    def _on_submit(self, _summary) -> None:
        fb = self._check(self.answer.value)
        self.progress.record(fb, self.answer.value)
        self._show(fb)

    def _show(self, fb, restored: bool = False) -> None:
        self.feedback.value = feedback_html(fb)
        if self.attempts:
            self.attempt_label.value = f"已写 {self.attempts} 次" + ("（已从进度文件恢复）" if restored else "")
            self.rubric_html.value = box_html(self.rubric.text(), "neutral", "lesson-rubric")
            self.assess_box.layout.display = None
            self.reveal.disabled, self.reveal.tooltip = False, ""

    def _on_assess(self, summary) -> None:
        if self.attempts:
            fb = self._assess([name for name, box in self.ticks.items() if box.value])
            self.progress.record(fb, self.answer.value, of=len(self.rubric.points))
            summary.value = box_html(fb.message, "review")

    def _on_reveal(self, summary) -> None:
        show = bool(self.reveal.value) and self.attempts > 0
        summary.value = box_html(self.rubric.model_answer, "neutral", "lesson-reference-answer") if show else ""
        self.reveal.description = "收起参考答案" if show else "看参考答案"


def ask(question_id: str, progress: Progress | None = None):
    """The widget for one self-test question (it displays itself as a cell's last value)."""
    q = questions.question(question_id)
    if q.kind == "self":
        return SelfExplanationWidget(q.id, q.prompt, q.key, lambda a: quiz.check(q.id, a),
                                     lambda ticked: quiz.assess(q.id, ticked), progress, q.placeholder, rows=4)
    return QuestionWidget(question_id, progress)


def interview_self_check(progress: Progress | None = None) -> SelfExplanationWidget:
    """§8: the learner answers first; then the rubric, a self-assessment, and the reference answer."""
    return SelfExplanationWidget(
        interview.INTERVIEW_ID, interview.INTERVIEW_QUESTION, interview.interview_rubric(), interview.interview_check,
        interview.interview_self_assess, progress,
        placeholder="用自己的话回答面试官，写三五句即可……", rows=6, css_class="lesson-interview",
    )  # fmt: skip


class ProgressSummary(_Shown):
    """The live progress summary, with 导出进度 (JSON + one-page Chinese summary)."""

    def __init__(self, progress: Progress | None = None):
        import ipywidgets as w

        self.progress = progress if progress is not None else default_progress()
        self.text = w.HTML()
        self.export_button = w.Button(description="导出进度", tooltip="写出 JSON 和一页中文汇总，交给老师")
        self.status = w.HTML("").add_class(LIVE)  # 已导出 is read out after the click
        _wire({}, self._on_export, self.export_button)
        self.box = _frame([self.text, self.export_button, self.status], "lesson-quiz-progress")
        self.refresh()
        self.progress.on_change(self.refresh)

    @property
    def value(self) -> str:
        return self.text.value

    def refresh(self) -> None:
        tone = "right" if self.progress.all_done() else "neutral"
        self.text.value = box_html(self.progress.summary(), tone, "lesson-progress-summary")

    def _on_export(self, _summary) -> None:
        try:
            json_path, md_path = self.progress.export()
            said, tone = f"已导出：{json_path}（JSON）和 {md_path}（一页中文汇总）。", "neutral"
        except OSError as exc:
            said, tone = f"导出失败：{exc}", "wrong"
        self.status.value = box_html(said, tone)


def progress_summary(progress: Progress | None = None) -> ProgressSummary:
    """The progress summary (questions, code exercises, interview), updated as work comes in."""
    return ProgressSummary(progress)
