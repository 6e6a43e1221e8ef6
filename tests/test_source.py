"""lesson_lib.show.source: listings shown by reflection wrap under their own indentation and break at spaces."""

from __future__ import annotations

import html as _html
import re

from lesson_lib import attention
from lesson_lib.show import source


def _lines(html: str) -> list[tuple[int, str]]:
    """(hanging indent in ch, the line's text) of each rendered source line."""
    out = []
    for hang, body in re.findall(r'<span class="ls-line" style="display:block;padding-left:(\d+)ch;text-indent:-\1ch">'
                                 r"(.*?)</span>(?=<span class=\"ls-line\"|</pre>)", html):
        out.append((int(hang), _html.unescape(re.sub(r"<[^>]+>", "", body))))
    return out


def test_each_source_line_is_a_block_that_wraps_under_its_own_indentation():
    listing = source.show_source(attention.softmax)
    html = listing._repr_html_()
    lines = _lines(html)
    text_lines = listing.splitlines()
    assert len(lines) == len(text_lines)
    for (hang, shown), original in zip(lines, text_lines):
        indent = len(original) - len(original.lstrip(" "))
        assert hang == indent + 4, (hang, original)
        assert shown.rstrip() == original.rstrip() or (not original.strip() and not shown.strip())


def test_listing_breaks_at_spaces_not_inside_words():
    style = re.search(r'<pre class="lesson-source" style="([^"]*)"', source.listing_html("x = 1"))[1]
    assert "white-space:pre-wrap" in style and "word-break:normal" in style
    assert "break-all" not in style


def test_a_listing_wraps_only_at_spaces_never_inside_a_token():
    """Issue 30: ``-np.inf`` wrapped after its minus sign at 592 px; each run without spaces is kept whole."""
    page = source.listing_html("scores = np.where(mask, scores, -np.inf)")
    whole = r'<span style="white-space:nowrap">((?:<span[^>]*>[^<]*</span>|[^<])*)</span>'
    words = [re.sub(r"<[^>]+>", "", w) for w in re.findall(whole, page)]
    assert words == ["scores", "=", "np.where(mask,", "scores,", "-np.inf)"]


def test_a_docstring_spanning_lines_keeps_one_block_per_line():
    text = 'def f():\n    """Two\n    lines."""\n\n    return 1'
    lines = _lines(source.listing_html(text))
    assert [hang for hang, _ in lines] == [4, 8, 8, 4, 8]
    assert lines[3][1] == " " and lines[2][1].strip() == 'lines."""'
