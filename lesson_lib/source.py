"""Show library code in the notebook by reflection, so the lesson never pastes a copy that can drift."""

from __future__ import annotations

import inspect

__all__ = ["source_of", "show_source"]


def source_of(obj) -> str:
    """The exact source text of a function, class or module."""
    return inspect.getsource(obj)


def show_source(obj, lines: tuple[int, int] | None = None):
    """Display ``obj``'s source as a highlighted code block (optionally only lines ``[a, b)``)."""
    from IPython.display import Markdown

    text = source_of(obj)
    if lines is not None:
        text = "\n".join(text.splitlines()[lines[0] : lines[1]])
    return Markdown(f"```python\n{text}\n```")
