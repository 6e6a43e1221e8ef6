"""HTML for the self-test: the lesson's themed boxes (``show.theme``), the text escaped, a tone per verdict."""

from __future__ import annotations

import html

from lesson_lib.show.theme import box


def text_html(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


def box_html(text: str, tone: str = "neutral", css_class: str = "") -> str:
    """Escaped text in a themed box: a right verdict is ok, a wrong one warn, anything else (no verdict) a note."""
    inner = box(text_html(text), {"right": "ok", "wrong": "warn"}.get(tone, "note"))
    return f'<div class="{html.escape(css_class)}">{inner}</div>' if css_class else inner


def feedback_html(feedback) -> str:
    return box_html(feedback.message, feedback.verdict, f"lesson-feedback lesson-feedback-{feedback.verdict}")
