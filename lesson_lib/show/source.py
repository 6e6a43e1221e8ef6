"""Library code shown by reflection (never a pasted copy that can drift), highlighted here:
JupyterLab's editor palette falls below 4.5:1, so each token colour is its ``--jp-mirror-editor-…``
variable mixed with the text colour."""

import html
import inspect
import re

from lesson_lib.show.tables import TextTable

_TEXT = "var(--jp-content-font-color1, #000)"
# pygments token type (first prefix wins) -> (short CSS property, --jp-mirror-editor-…, fallback)
_PALETTE = (
    ("Comment", "c", "comment", "#408080"), ("Literal.String", "s", "string", "#ba2121"),
    ("Literal.Number", "n", "number", "#080"), ("Keyword", "k", "keyword", "#008000"),
    ("Operator.Word", "k", "keyword", "#008000"), ("Operator", "o", "operator", "#aa22ff"),
    ("Punctuation", "p", "punctuation", "#05a"), ("Name.Builtin", "b", "builtin", "#008000"),
    ("Name.Function", "d", "def", "#00f"), ("Name.Class", "d", "def", "#00f"),
    ("Name.Decorator", "m", "meta", "#aa22ff"),
)


def listing_html(text: str) -> str:
    """Source as a highlighted <pre>, a block per line, wrapped under its indentation plus 4; a run
    without spaces kept whole: never a wrap after the minus of ``-np.inf`` (issue 30)."""
    from pygments.lexers import PythonLexer

    lines = [[]]
    for kind, value in PythonLexer(stripnl=False, ensurenl=False).get_tokens(text):
        name = str(kind).removeprefix("Token.")
        entry = next((e for e in _PALETTE if name == e[0] or name.startswith(e[0] + ".")), None)
        style = entry and f"color:var(--ls-{entry[1]})" + (";font-style:italic"
                                                           if name.startswith("Comment") else "")
        for i, piece in enumerate(value.split("\n")):  # a docstring token spans several lines
            if i:
                lines.append([])
            lines[-1] += [(part, style) for part in re.split(r"( +)", piece) if part]
    out = []
    for source_line, parts in zip(text.split("\n"), lines):
        body = []
        word = []
        for part, style in [*parts, (" ", None)]:  # a closing space ends the last word
            if part.isspace():
                body += [f'<span style="white-space:nowrap">{"".join(word)}</span>'] if word else []
                body.append(part)
                word = []
            else:
                word.append(f'<span style="{style}">{html.escape(part)}</span>'
                            if style else html.escape(part))
        hang = len(source_line) - len(source_line.lstrip(" ")) + 4
        content = "".join(body[:-1]) or " "  # a blank line keeps its height (a preserved space)
        indent = f"display:block;padding-left:{hang}ch;text-indent:-{hang}ch"
        out.append(f'<span class="ls-line" style="{indent}">{content}</span>')
    # each token keeps 55 % of the editor's colour, the rest is the theme's text colour
    palette = "".join(f"--ls-{short}:color-mix(in srgb, var(--jp-mirror-editor-{var}-color, "
                      f"{fallback}) 55%, {_TEXT});" for _kind, short, var, fallback in _PALETTE)
    style = (f"{palette}color:{_TEXT};background:var(--jp-layout-color1, #fff);"
             "border:1px solid var(--jp-border-color2, #e0e0e0);border-radius:2px;"
             "padding:6px 8px;margin:0;font-family:var(--jp-code-font-family, monospace);"
             "font-size:var(--jp-code-font-size, 13px);"
             "line-height:var(--jp-code-line-height, 1.3846);"
             # JupyterLab's <pre> breaks anywhere (break-all); a word wider than the line scrolls
             "white-space:pre-wrap;word-break:normal;overflow-wrap:normal;overflow-x:auto")
    return f'<pre class="lesson-source" style="{style}">{"".join(out)}</pre>'


def show_source(*objs) -> TextTable:
    """The source of each of ``objs`` in turn (a kernel function, then the formula it hands its
    checked input to): highlighted in JupyterLab, the plain text where nbval compares."""
    text = "\n\n\n".join(inspect.getsource(obj).rstrip("\n") for obj in objs)
    return TextTable(text, listing_html(text))
