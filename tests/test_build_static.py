"""scripts/build_static.py without the network: the page it writes loads only files from its own folder, tells the
reader that widgets show saved state, and carries each picture's description over as alt text."""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_static  # noqa: E402

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2,
                                                                           "version_minor": 0}}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 标题\n\n$$a = b$$"),
        nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
            metadata={"image/png": {"alt": "「她」给「小红」0.55"}})]),
        nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": PNG, "text/plain": "<Figure>"})]),
    ]
    path = tmp_path_factory.mktemp("nb") / "lesson.ipynb"
    nbformat.write(nb, path)
    return build_static.finish(build_static.export(path))


def test_every_script_and_style_comes_from_the_pages_own_folder(page):
    sources = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', page)
    assert {"static/require.js", "static/anywidget-amd.js", "static/lesson.css"} <= set(sources)
    assert any(s.startswith("static/mathjax/MathJax.js?config=") for s in sources)
    assert "static/widgets/embed-amd.js" in page  # added by the page's own loader at DOMContentLoaded
    assert all(not re.match(r"(https?:)?//", s) for s in sources), sources
    # a widget module the page does not have is looked up in its folder, never on the CDN default
    assert 'data-jupyter-widgets-cdn="static/npm/"' in page
    assert page.index("static/require.js") < page.index("static/anywidget-amd.js")


def test_the_page_is_chinese_and_says_widgets_show_saved_state(page):
    assert '<html lang="zh-CN">' in page
    assert "静态阅读版" in page and "不会重新计算" in page
    assert page.index("window.MathJax = ") < page.index("static/mathjax/MathJax.js")  # STIX-Web: the shipped fonts


def test_a_pictures_description_becomes_its_alt_text(page):
    alts = [(re.search(r'alt="([^"]*)"', tag) or [None, None])[1] for tag in re.findall(r"<img[^>]*>", page)]
    assert len(alts) == 2 and alts[0] == "「她」给「小红」0.55"
    assert "No description has been provided" in page  # nbconvert still marks the picture that has none


def test_the_anywidget_loader_renders_from_saved_state_only():
    js = (ROOT / "scripts" / "static_page" / "anywidget-amd.js").read_text(encoding="utf-8")
    assert 'define("anywidget", ["@jupyter-widgets/base"]' in js
    assert 'this.model.get("_esm")' in js and "http" not in js.split("*/")[-1].replace("https://", "")


def test_build_refuses_a_notebook_without_widget_state(tmp_path):
    path = tmp_path / "bare.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), path)
    with pytest.raises(SystemExit, match="没有保存控件状态"):
        build_static.build(tmp_path / "site", path)
