"""The static page's self-check: the kernel's own verdicts, exported once at build time, read by selfcheck.js.

The page has no kernel, so it cannot run the checker; instead the build asks the checker
(``lesson_lib.practice.quiz.check``) every answer the page can read for certain and stores what it said:

- choices (``single`` / ``multi``): every option, or every set of options, with the kernel's message;
- a form of number boxes and small choices (``NumberBox``, ``ChoiceBox``): every combination of the values that
  matter (the right value, each value with a hint of its own, the question's named sizes) and one stand-in for
  "any other integer" per box, whose echo the page replaces by what the learner typed;
- a box holding an expression in n (``ExpressionBox``), free text and the interview: not checked here; the page
  says to answer it in JupyterLab, and free text shows its rubric behind a click.

The page reads a number box only when it holds a plain integer (digits, optionally a minus sign); anything
else is 「请换个写法」 or "check it in JupyterLab", never a verdict. Nothing is evaluated, nothing fetched.
"""

from __future__ import annotations

import html
import itertools
import json
from fractions import Fraction

OTHER = "*"  # token of "an integer the question names nowhere"
STAND_IN = 987_654_321  # the value the kernel is asked for such an integer (+ the box's index)


def _stand_in(i: int) -> int:
    return STAND_IN + i


def _box_candidates(box, extra: set[int]) -> list[str] | None:
    """The tokens a box's value can take (None: the page cannot read this kind of box)."""
    kind = type(box).__name__
    if kind == "ChoiceBox":
        return [key for key, _, _ in box.options]
    if kind != "NumberBox" or Fraction(box.target).denominator != 1:
        return None
    values = {int(box.target)} | {int(v) for v, _ in box.hints if Fraction(v).denominator == 1} | extra
    return [str(v) for v in sorted(values)] + [OTHER]


def _box_json(box) -> dict:
    if type(box).__name__ == "ChoiceBox":
        return {"name": box.name, "label": box.label, "type": "choice",
                "options": [[key, label] for key, label, _ in box.options]}
    return {"name": box.name, "label": box.label, "type": "number", "unit": box.unit,
            "placeholder": box.placeholder}


def _said(fb) -> list[str]:
    return [fb.verdict, fb.message]


def export_question(q, check) -> dict:
    """One question as the page needs it: its boxes or options and the kernel's message for each answer it reads."""
    data = {"id": q.id, "kind": q.kind, "prompt": q.prompt, "explanation": q.explanation}
    if q.kind in ("single", "multi"):
        keys = [key for key, _ in q.choices]
        data["choices"] = [list(c) for c in q.choices]
        sizes = (1,) if q.kind == "single" else range(1, len(keys) + 1)
        answers = {"".join(c): _said(check(q.id, set(c))) for r in sizes for c in itertools.combinations(keys, r)}
        answers[""] = _said(check(q.id, ""))
        data["answers"] = answers
        return data
    if q.kind != "form":
        data["lab_only"] = True
        return data
    boxes = q.key.boxes
    named = {int(v) for b in boxes for v in getattr(b, "symbols", {}).values()
             if isinstance(v, int) or (isinstance(v, Fraction) and v.denominator == 1)}
    candidates = [_box_candidates(b, named) for b in boxes]
    if any(c is None for c in candidates):
        data["lab_only"] = True  # an expression in n: the page cannot read it for certain
        return data
    data["boxes"] = [_box_json(b) for b in boxes]
    for i, b in enumerate(data["boxes"]):  # the stand-in's echo, grouped (fmt_number) or plain (a shape tuple)
        b["other"] = [f"{_stand_in(i):,}", str(_stand_in(i))]
    answers = {}
    for combo in itertools.product(*candidates):
        texts = {b.name: str(_stand_in(i)) if t == OTHER else t for i, (b, t) in enumerate(zip(boxes, combo))}
        answers["|".join(combo)] = _said(check(q.id, texts))
    right = {b.name: str(int(b.target)) if type(b).__name__ == "NumberBox" else b.answer for b in boxes}
    for empty in itertools.product((False, True), repeat=len(boxes)):  # some boxes (or all) still empty
        if any(empty):
            texts = {n: "" if e else right[n] for n, e in zip(right, empty)}
            answers["|".join("" if e else "#" for e in empty)] = _said(check(q.id, texts))
    data["answers"] = answers
    return data


def export_all() -> dict:
    """Every question the core and the labs ask, by id (``lesson_lib.practice.questions``, the kernel's bank)."""
    from lesson_lib.practice.questions import lab_ids, question, question_ids
    from lesson_lib.practice.quiz import check

    return {qid: export_question(question(qid), check) for qid in (*question_ids(), *lab_ids())}


def _text(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


LAB = "在 JupyterLab 里打开课程笔记本"


def form_html(q: dict) -> str:
    """The question at its place on the page: the boxes, a 检查 button, a feedback area, the 解析 behind a click."""
    qid = html.escape(q["id"])
    prompt = f'<p class="lesson-q-prompt" id="q-{qid}-prompt">{_text(q["prompt"])}</p>'
    solution = ('<details class="lesson-q-solution"><summary>解析（先自己作答，再点开）</summary>'
                f'<div>{_text(q["explanation"])}</div></details>')
    if q.get("lab_only"):
        why = ("这是自由作答题，不评分：先写下你的回答，再点开下面的要点自己对照。" if q["kind"] == "self" else
               "这道题要写一个含 n 的式子，静态页面读不了式子：")
        return (f'<section class="lesson-selfcheck" aria-labelledby="q-{qid}-prompt">{prompt}'
                f'<p class="lesson-needs-lab">{why}要提交并得到反馈，请{LAB}。</p>{solution}</section>')
    rows = []
    if "choices" in q:
        kind = "radio" if q["kind"] == "single" else "checkbox"
        options = "".join(f'<label class="lesson-q-option"><input type="{kind}" name="choice" value="{html.escape(k)}">'
                          f" {html.escape(k)}. {html.escape(label)}</label>" for k, label in q["choices"])
        legend = "选一项" if kind == "radio" else "可以多选"
        rows.append(f"<fieldset><legend>{legend}</legend>{options}</fieldset>")
    for b in q.get("boxes", ()):
        name, label = html.escape(b["name"]), html.escape(b["label"])
        if b["type"] == "choice":
            options = "".join(f'<label class="lesson-q-option"><input type="radio" name="{name}" '
                              f'value="{html.escape(k)}"> {html.escape(text)}</label>' for k, text in b["options"])
            rows.append(f"<fieldset><legend>{label}</legend>{options}</fieldset>")
        else:
            unit = f' <span class="lesson-q-unit">{html.escape(b["unit"])}</span>' if b["unit"] else ""
            rows.append(f'<p><label>{label} <input type="text" name="{name}" inputmode="numeric" autocomplete="off"'
                        f' placeholder="{html.escape(b["placeholder"] or "一个整数")}"></label>{unit}</p>')
    return (f'<form class="lesson-selfcheck" data-question="{qid}" aria-labelledby="q-{qid}-prompt">{prompt}'
            + "".join(rows)
            + '<p><button type="submit">检查答案</button> <span class="lesson-q-where">在本页检查：'
            "只认整数和选项，其他写法请在 JupyterLab 里作答</span></p>"
            '<div class="lesson-q-feedback" role="status" aria-live="polite"></div>'
            f"{solution}</form>")


def rubric_html(title: str, rubric_text: str, answer: str) -> str:
    """A free-text item that is not a bank question (the §8 interview): its rubric behind a click."""
    return ('<section class="lesson-selfcheck">'
            f'<p class="lesson-q-prompt">{_text(title)}</p>'
            f'<p class="lesson-needs-lab">自由作答，不评分：先写下你的回答，再点开对照要点。要记录自评，请{LAB}。</p>'
            f'<details class="lesson-q-solution"><summary>要点与参考回答（先自己作答，再点开）</summary>'
            f"<div>{_text(rubric_text)}<br><br>{_text(answer)}</div></details></section>")


def data_script(questions: dict) -> str:
    """The exported questions as an inline JSON block (no fetch: the page also works from file://)."""
    payload = json.dumps(questions, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" id="lesson-questions">{payload}</script>'
