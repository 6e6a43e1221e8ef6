"""HTML for the feedback boxes (quiz, exercises, interview, reference answers, progress summary).

Colours are JupyterLab theme variables (``--jp-…``) with a light fallback, so every box is readable in
the light and the dark theme; text wraps (no horizontal scrollbar). Plain inline styles only: no ids,
no scripts, no MathJax, so JupyterLab 4 shows the HTML as is, offline.
"""

from __future__ import annotations

import html

__all__ = ["text_html", "box_html", "feedback_html", "TONES"]

# tone -> the theme's status colour. The box tints the theme's own background with it (color-mix) and keeps the
# theme's text colour, so it reads dark-on-pale in the light theme and light-on-dark in the dark theme (the themes'
# --jp-*-color3 shades are pale in both, which would put white text on a pale box in the dark theme).
TONES = {
    "right": "var(--jp-success-color1, #388e3c)",
    "wrong": "var(--jp-warn-color1, #f57c00)",
    "review": "var(--jp-info-color1, #0288d1)",
    "neutral": "var(--jp-border-color1, #90a4ae)",
}
TINT_PERCENT = 16  # how much of the status colour is mixed into the background


def text_html(text: str) -> str:
    """Plain text -> safe HTML (escaped, line breaks kept)."""
    return html.escape(text).replace("\n", "<br>")


def box_html(text: str, tone: str = "neutral", css_class: str = "") -> str:
    """A wrapped, theme-coloured box around escaped text; ``tone`` is right, wrong, review or neutral."""
    status = TONES[tone]
    cls = f' class="{html.escape(css_class)}"' if css_class else ""
    return (
        f'<div{cls} style="padding:6px 10px;border-left:4px solid {status};border-radius:4px;'
        "color:var(--jp-content-font-color1, #212121);background:var(--jp-layout-color2, #f5f5f5);"
        f"background:color-mix(in srgb, {status} {TINT_PERCENT}%, var(--jp-layout-color0, #fff));"
        "line-height:1.6;white-space:normal;overflow-wrap:anywhere;max-width:100%;"
        f'box-sizing:border-box">{text_html(text)}</div>'
    )


def feedback_html(feedback) -> str:
    """The feedback area: green border for right, amber for wrong, blue for free text (a reading, not a verdict)."""
    return box_html(feedback.message, feedback.verdict, f"lesson-feedback lesson-feedback-{feedback.verdict}")
