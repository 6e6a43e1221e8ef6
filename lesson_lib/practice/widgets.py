"""The self-test's widgets, wiring only: ``quiz`` decides, ``progress`` keeps (and restores when a
cell runs again); an answer is checked on 提交 or Enter, never while the learner is still
ticking."""

import base64
import contextlib
import json

from lesson_lib.practice import checkers, questions, quiz
from lesson_lib.practice.feedback import box_html, feedback_html, text_html
from lesson_lib.practice.progress import MAX_FILE_BYTES, Progress, default_progress
from lesson_lib.show import theme
from lesson_lib.show.controls import LABEL_BESIDE, accessible, linked


def stored_answer(question, value):
    """The answer as the progress file keeps it: text, sorted keys, or a JSON list of boxes."""
    if question.kind == "form":
        texts = checkers.form_values(question, value)
        return json.dumps([texts[b.name] for b in question.key.boxes], ensure_ascii=False)
    if question.kind == "multi":
        return sorted(value or ())
    return "" if value is None else str(value)


def _live(controls: dict, show, submit):
    """A live region (read out) that ``show(region)`` fills on ``submit``'s click or Enter."""
    wired = linked(controls, lambda region, _: show(region), submit, pictures=0, reader=False)
    return wired.controls["summary"]


def _frame(children, *classes):
    """The outer box: bordered, as wide as the output, with the reader helper (``accessible``)."""
    import ipywidgets as w

    layout = w.Layout(border="1px solid var(--jp-border-color2, #ddd)", padding="8px",
                      margin="6px 0", width="100%", max_width="100%", overflow="hidden")
    return accessible(w.VBox(children, layout=layout, _dom_classes=classes))


def _answer_controls(q) -> dict:
    """The answer controls by name, in the order they are laid out."""
    import ipywidgets as w

    if q.kind == "self":
        return {"answer": w.Textarea(description="你的回答", placeholder=q.placeholder, rows=4,
                                     style=LABEL_BESIDE, layout=w.Layout(width="100%"))}
    if q.kind == "multi":  # tick boxes: width auto, 100% would overflow by the margins
        return {k: w.Checkbox(description=f"{k}. {label}", indent=False,
                              layout=w.Layout(width="auto")) for k, label in q.choices}
    if q.kind == "single":  # laid out as a form of one choice
        options = tuple((k, f"{k}. {label}", "") for k, label in q.choices)
        boxes = [checkers.ChoiceBox("choice", "选一项", options, "")]
    else:
        boxes = q.key.boxes
    controls = {}
    for b in boxes:
        if isinstance(b, checkers.ChoiceBox):  # a named radio group whose choices wrap
            options = [(label, key) for key, label, _ in b.options]
            controls[b.name] = w.RadioButtons(options=options, value=None, description=b.label,
                                              style=LABEL_BESIDE, layout=w.Layout(width="100%"))
        else:  # continuous_update off: sent on Enter (it clicks 提交) or on leaving; unit in name
            label = f"{b.label}（{b.unit}）" if b.unit else b.label
            controls[b.name] = w.Text(description=label, continuous_update=False,
                                      placeholder=b.placeholder or "填一个数或式子",
                                      style=LABEL_BESIDE, layout=w.Layout(width="340px"))
    return controls


class SelfTestWidget:
    """One self-test question: answer controls, 提交, feedback, then the explanation. A
    self-explanation (free text, never graded) adds, after the first attempt, its rubric, a
    self-assessment and the reference answer."""

    def __init__(self, question_id: str, progress: Progress | None = None):
        import ipywidgets as w

        self.question = questions.question(question_id)
        self.rubric = self.question.key if self.question.kind == "self" else None
        self.progress = progress if progress is not None else default_progress()
        self.controls = _answer_controls(self.question)
        written = self.rubric is not None
        self.submit = w.Button(description="写好了，看要点" if written else "提交",
                               button_style="primary")
        if not written:  # Enter in a text box clicks it (reader.js); in a free answer: a new line
            self.submit.tooltip = "检查答案（在框里按回车也可以）"
        # shown after a first attempt; once shown, the explanation stays
        self.reveal = w.Button(description="看参考答案" if written else "显示解析",
                               layout=w.Layout(width="auto", align_self="flex-start"))
        self._reference = box_html(self.question.explanation, "neutral", "lesson-explanation")
        self.attempt_label = w.HTML("尚未作答")
        self.feedback = _live(self.controls, self._on_submit, self.submit)
        self.reference = _live({}, self._on_reveal, self.reveal)
        # the rubric and the self-assessment before the reference answer
        after = [*(self._self_assessment() if written else []), self.reveal, self.reference]
        self.after = w.VBox(after, layout=w.Layout(display="none"))
        below = [w.HBox([self.submit, self.attempt_label]), self.feedback, self.after]
        prompt = w.HTML(f"<b>{text_html(self.question.prompt)}</b>").add_class("lesson-quiz-prompt")
        answers = list(self.controls.values())
        if self.question.kind == "multi":  # its boxes: one group (reader.js names it)
            answers = [w.VBox(answers, _dom_classes=("lesson-choices",))]
        classes = ("lesson-quiz", f"lesson-quiz-{self.question.id}")
        self.box = _frame([prompt, *answers, *below], *classes)
        self.box.children[0].on_msg(self._take_texts)  # its reader helper (reader.js)
        if self.attempts:
            self._restore_entry()

    def _self_assessment(self) -> list:
        """The rubric and the learner's ticks; the reference answer stands for the explanation."""
        import ipywidgets as w

        self._reference = box_html(self.rubric.model_answer, "neutral", "lesson-reference-answer")
        self.rubric_html = w.HTML(box_html(self.rubric.text(), "neutral", "lesson-rubric"))
        self.ticks = {p.name: w.Checkbox(description=p.name, indent=False,
                                         layout=w.Layout(width="auto")) for p in self.rubric.points}
        self.record_button = w.Button(description="记录自评",
                                      tooltip="只记录你自己勾的要点，不打分")
        self.assessment = _live(self.ticks, self._on_assess, self.record_button)
        asked = w.Label("你的回答说到了哪几点？（自己勾，不打分）")
        return [self.rubric_html, asked, *self.ticks.values(), self.record_button, self.assessment]

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)

    @property
    def attempts(self) -> int:
        return self.progress.entry(self.question.id).get("n_attempts", 0)

    def _restore_entry(self) -> None:
        """The last answer, its feedback and the last self-assessment, from the progress file."""
        entry = self.progress.entry(self.question.id)
        self.restore(entry["answer"])
        self._show(quiz.check(self.question.id, self.value()))
        self.attempt_label.value += "（已从进度文件恢复）"
        marks = [a["covered"] for a in entry["attempts"] if a.get("covered") is not None]
        if self.rubric is not None and marks:
            for name, box in self.ticks.items():
                box.value = name in marks[-1]
            assessed = quiz.assess(self.question.id, marks[-1])
            self.assessment.value = box_html(assessed.message, "review")

    def restore(self, stored) -> None:
        """Set the controls from a stored answer (``stored_answer``); a control keeps what it has
        for a value it cannot take (a radio group: only one of its keys)."""
        from traitlets import TraitError

        values = {"choice": stored, "answer": stored}
        if self.question.kind == "form":
            with contextlib.suppress(ValueError, TypeError):  # in box order
                values = dict(zip(self.controls, map(str, json.loads(stored)), strict=False))
        elif self.question.kind == "multi":
            values = {k: isinstance(stored, list) and k in stored for k in self.controls}
        for name, control in self.controls.items():
            with contextlib.suppress(TraitError):
                control.value = values.get(name)

    def value(self):
        """The answer as the checker takes it: {box: text}, a key, the ticked keys, or text."""
        values = {name: c.value for name, c in self.controls.items()}
        if self.question.kind == "multi":
            return {k for k, ticked in values.items() if ticked}
        return values if self.question.kind == "form" else next(iter(values.values()))

    def _take_texts(self, _reader, content, _buffers) -> None:
        """What the page's text boxes show, sent by reader.js just before 提交's click: their own
        value update may wait in a busy page (ipywidgets throttles it), the click does not."""
        import ipywidgets as w

        boxes = [c for c in self.controls.values() if isinstance(c, w.Text | w.Textarea)]
        if len(content.get("texts", ())) == len(boxes):  # else not this box's page: ignored
            for control, text in zip(boxes, content["texts"], strict=True):
                control.value = str(text)

    def _on_submit(self, _region) -> None:
        fb = quiz.check(self.question.id, self.value())
        stored = stored_answer(self.question, self.value())
        if stored != self.progress.entry(self.question.id).get("answer"):  # the same again: once
            self.progress.record(fb, stored)
        self._show(fb)

    def _show(self, fb) -> None:
        self.feedback.value = feedback_html(fb)
        if self.attempts:
            entry = self.progress.entry(self.question.id)
            if entry["solved"] and fb.verdict == "wrong":  # the summary counts it done: say why
                before = box_html("这题你之前答对过，仍算完成；下面是最后一次作答的反馈。", "right",
                                  "lesson-solved-before")
                self.feedback.value = before + self.feedback.value
            # answers written, not the self-assessments the file keeps as attempts too; one at least
            written = max(1, self.attempts - sum(a["verdict"] == "self" for a in entry["attempts"]))
            self.attempt_label.value = f"{'已写' if self.rubric else '已作答'} {written} 次"
            self.after.layout.display = None

    def _on_assess(self, region) -> None:  # its button shows after the first attempt
        fb = quiz.assess(self.question.id, [name for name, box in self.ticks.items() if box.value])
        self.progress.record(fb, self.controls["answer"].value, of=len(self.rubric.points))
        region.value = box_html(fb.message, "review")

    def _on_reveal(self, region) -> None:
        if self.attempts:  # a hidden button's click() from code still calls
            region.value = self._reference
            self.reveal.disabled = True  # shown for good: a second click would do nothing


ask = SelfTestWidget  # the notebook's name: ask("Q2") shows itself as a cell's last value


def interview_self_check(progress: Progress | None = None) -> SelfTestWidget:
    """The interview: a self-explanation asked apart from the quiz, with a taller answer box."""
    widget = SelfTestWidget(questions.apart_ids()[0], progress)
    widget.controls["answer"].rows = 6
    widget.box.add_class("lesson-interview")
    return widget


def _exported_html(path, text: str) -> str:
    """Where it is, and a download: JupyterLab's file browser cannot reach the data folder."""
    if len(text) > MAX_FILE_BYTES:  # the class report reads no larger file either
        return box_html(f"已导出：{path}，但文件太大，没法下载；请告诉老师。", "wrong")
    href = "data:application/json;base64," + base64.b64encode(text.encode()).decode()
    link = (f'<a download="{path.name}" href="{href}" style="color:var(--jp-content-link-color);'
            f'text-decoration:underline">下载 {path.name}</a>')
    return theme.box(f"已导出。点{link}，把下载的文件交给老师（也保存在 {text_html(str(path))}）。")


def progress_summary(progress: Progress | None = None, exercise_ids=()):
    """The live summary (its ``text``) and 导出进度, which says in a live region where it wrote
    and links a download; ``exercise_ids``: the exercises to count, handed in by the notebook."""
    import ipywidgets as w

    progress = progress if progress is not None else default_progress(exercise_ids)
    text = w.HTML()

    def export(status) -> None:
        try:
            status.value = _exported_html(*progress.export())
        except OSError as exc:
            status.value = box_html(f"导出失败：{exc}", "wrong")

    button = w.Button(description="导出进度", tooltip="写出 progress-export.json，给出下载链接")
    status = _live({}, export, button)

    def refresh() -> None:
        tone = "right" if progress.all_done() else "neutral"
        text.value = box_html(progress.summary(), tone, "lesson-progress-summary")
        if "download=" in status.value:  # the link holds the progress as it was: never hand that in
            status.value = box_html("进度变了：请再点一次「导出进度」，交新的文件。", "neutral")

    box = _frame([text, button, status], "lesson-quiz-progress")
    refresh()
    progress.listeners.append(refresh)
    box.text = text  # what the summary says now
    return box
