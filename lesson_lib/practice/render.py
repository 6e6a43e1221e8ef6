"""HTML for the feedback boxes (quiz, exercises, interview, reference answers, progress summary).

The boxes are the lesson's themed boxes (``lesson_lib.show.theme``: JupyterLab's own colour variables, readable
in the light and the dark theme, text that wraps); this module only picks the tone of a result and
escapes the learner-facing text. No ids, no scripts, no MathJax, so JupyterLab 4 shows the HTML as is.
"""

from __future__ import annotations

import html

__all__ = ["text_html", "box_html", "feedback_html", "TONES"]

# the quiz's tones -> lesson_lib.show.theme's (right: ok, wrong: warn; an unread box, a blank submission,
# free text, a self-assessment and plain boxes: note — none of them is a verdict)
TONES = {"right": "ok", "wrong": "warn", "form": "note", "blank": "note", "review": "note", "self": "note",
         "neutral": "note"}


def text_html(text: str) -> str:
    """Plain text -> safe HTML (escaped, line breaks kept)."""
    return html.escape(text).replace("\n", "<br>")


def box_html(text: str, tone: str = "neutral", css_class: str = "") -> str:
    """Escaped text in the lesson's themed box (``theme.box``); ``tone`` is right, wrong, review or neutral."""
    from lesson_lib.show.theme import box

    inner = box(text_html(text), TONES[tone])
    return f'<div class="{html.escape(css_class)}">{inner}</div>' if css_class else inner


def feedback_html(feedback) -> str:
    """The feedback area: the ok tone for right, warn for wrong, note for everything that is not a verdict."""
    return box_html(feedback.message, feedback.verdict, f"lesson-feedback lesson-feedback-{feedback.verdict}")
