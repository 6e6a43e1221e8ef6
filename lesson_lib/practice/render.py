"""HTML for the self-test's boxes: the lesson's themed boxes (``show.theme``), the text escaped, a tone per verdict."""

from __future__ import annotations

import html

from lesson_lib.show.theme import box

# right: ok, wrong: warn; an unread box, a blank submission, free text and a self-assessment are no verdict: note
TONES = {"right": "ok", "wrong": "warn", "form": "note", "blank": "note", "review": "note", "self": "note",
         "neutral": "note"}


def text_html(text: str) -> str:
    """Plain text as safe HTML (escaped, line breaks kept)."""
    return html.escape(text).replace("\n", "<br>")


def box_html(text: str, tone: str = "neutral", css_class: str = "") -> str:
    """Escaped text in the lesson's themed box; ``tone`` is a verdict or neutral."""
    inner = box(text_html(text), TONES[tone])
    return f'<div class="{html.escape(css_class)}">{inner}</div>' if css_class else inner


def feedback_html(feedback) -> str:
    return box_html(feedback.message, feedback.verdict, f"lesson-feedback lesson-feedback-{feedback.verdict}")
