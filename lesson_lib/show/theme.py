"""HTML boxes in JupyterLab's own theme variables (``--jp-…``): text keeps the theme's colour and
backgrounds mix a little accent into its page colour, so the contrast stays the theme's own (≥
4.5:1); the page-wide rules."""

from pathlib import Path

# tone -> accent variable (border, and a 10 % tint of the background)
TONES = {"note": "--jp-brand-color1", "ok": "--jp-success-color1", "warn": "--jp-warn-color1"}
TEXT_STYLE = "color:var(--jp-content-font-color1);"
# Page-wide rules no inline style can express: in the widgets' stylesheets and the static page
PAGE_CSS = (Path(__file__).parent / "page.css").read_text(encoding="utf-8")


def box(inner_html: str, tone: str = "note") -> str:
    """A themed box around ready-made HTML: accent border on the left, tinted background."""
    accent = f"var({TONES[tone]})"
    background = f"color-mix(in srgb, {accent} 10%, var(--jp-layout-color1))"
    return (f'<div class="lesson-box lesson-box-{tone}" style="{TEXT_STYLE}background:{background};'
            f"border-left:3px solid {accent};padding:6px 10px;margin:4px 0;line-height:1.6;"
            f'box-sizing:border-box;max-width:100%;overflow-wrap:break-word">{inner_html}</div>')
