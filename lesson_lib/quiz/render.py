"""HTML for the feedback boxes (quiz, exercises, interview, reference answers, progress summary).

Colours are JupyterLab theme variables (``--jp-…``) with a light fallback, so every box is readable in
the light and the dark theme; text wraps (no horizontal scrollbar). Plain inline styles only: no ids,
no scripts, no MathJax, so JupyterLab 4 shows the HTML as is, offline.
"""

from __future__ import annotations

import html

__all__ = ["text_html", "box_html", "feedback_html", "TONES"]

# tone -> (text colour, background, border); the success/warn/info/neutral families exist in both themes
TONES = {
    "right": ("var(--jp-content-font-color0, #1b1b1b)", "var(--jp-success-color3, #e8f5e9)",
              "var(--jp-success-color1, #388e3c)"),
    "wrong": ("var(--jp-content-font-color0, #1b1b1b)", "var(--jp-warn-color3, #fff4e5)",
              "var(--jp-warn-color1, #f57c00)"),
    "review": ("var(--jp-content-font-color0, #1b1b1b)", "var(--jp-info-color3, #e3f2fd)",
               "var(--jp-info-color1, #0288d1)"),
    "neutral": ("var(--jp-content-font-color1, #212121)", "var(--jp-layout-color2, #f5f7f8)",
                "var(--jp-border-color1, #90a4ae)"),
    "muted": ("var(--jp-content-font-color2, #616161)", "transparent", "transparent"),
}  # fmt: skip


def text_html(text: str) -> str:
    """Plain text -> safe HTML (escaped, line breaks kept)."""
    return html.escape(text).replace("\n", "<br>")


def box_html(text: str, tone: str = "neutral", css_class: str = "") -> str:
    """A wrapped, theme-coloured box around escaped text; ``tone`` is right, wrong, review, neutral or muted."""
    colour, background, border = TONES[tone]
    cls = f' class="{html.escape(css_class)}"' if css_class else ""
    return (
        f'<div{cls} style="padding:6px 10px;border-left:4px solid {border};border-radius:4px;color:{colour};'
        f"background:{background};line-height:1.6;white-space:normal;overflow-wrap:anywhere;max-width:100%;"
        f'box-sizing:border-box">{text_html(text)}</div>'
    )


def feedback_html(feedback) -> str:
    """The feedback area: green border for right, amber for wrong, blue for free text (a reading, not a verdict)."""
    return box_html(feedback.message, feedback.verdict, f"lesson-feedback lesson-feedback-{feedback.verdict}")
