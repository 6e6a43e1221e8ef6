"""Build the lesson's static reading version: one offline HTML page with every output and the widgets' saved state.

    python scripts/build_static.py [--out site] [--notebook notebooks/day11_multi_head_attention.ipynb]

Writes ``site/index.html`` and ``site/static/`` (the widget manager, require.js, MathJax 2, the anywidget loader).
Nothing on the page asks any other host for anything: the scripts come from npm (``@jupyter-widgets/html-manager``,
``requirejs``, fetched once with ``npm pack`` into ``.cache/static-page/``) and PyPI (``jupyter-server-mathjax``),
images are embedded. Widgets show the state stored in the notebook (scripts/build_notebook.py saves it); they do
not compute anything on this page -- it has no kernel. Publish the whole ``site/`` folder (README: "静态阅读版").
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"
HERE = Path(__file__).resolve().parent / "static_page"
CACHE = ROOT / ".cache" / "static-page"
# npm packages: (name, version, [(file in the package, name under static/)]). html-manager 1.x renders ipywidgets 8.
NPM = [
    ("@jupyter-widgets/html-manager", "1.0.15", [("dist", "widgets")]),
    ("requirejs", "2.3.8", [("require.js", "require.js")]),
]
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"  # jupyter-server-mathjax ships this one (not TeX-AMS_CHTML-full)
# jupyter-server-mathjax ships only the STIX-Web fonts: without this MathJax asks for its TeX fonts, which are not
# there. Long display formulas break into lines at the page's width.
MATHJAX_FONTS = ('<script>window.MathJax = {"HTML-CSS": {availableFonts: ["STIX-Web"], preferredFont: "STIX-Web", '
                 'webFont: "STIX-Web", imageFont: null, linebreaks: {automatic: true}}, '
                 'SVG: {font: "STIX-Web", linebreaks: {automatic: true}}};</script>')
NOTE = ("这是第 11 天课程的<strong>静态阅读版</strong>：所有输出和图都在，"
        "控件只显示保存时的状态，拖动或点击不会重新计算。"
        "要动手做实验、答自测题，请在 JupyterLab 里打开 <code>notebooks/day11_multi_head_attention.ipynb</code>。")


def npm_package(name: str, version: str) -> Path:
    """The unpacked npm package (``npm pack`` once; later builds reuse the cache and need no network)."""
    target = CACHE / f"{name.replace('/', '+')}-{version}"
    if (target / "package" / "package.json").exists():
        return target / "package"
    CACHE.mkdir(parents=True, exist_ok=True)
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("需要 npm 来取一次网页用的脚本（Debian/Ubuntu：sudo apt-get install npm）。")
    out = subprocess.run([npm, "pack", f"{name}@{version}", "--pack-destination", str(CACHE), "--silent"],
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with tarfile.open(CACHE / out) as tar:
        tar.extractall(target, filter="data")
    return target / "package"


def mathjax_dir() -> Path:
    try:
        import jupyter_server_mathjax
    except ImportError:
        sys.exit("需要 MathJax：pip install -r requirements-dev.txt（其中的 jupyter-server-mathjax）。")
    return Path(jupyter_server_mathjax.__file__).parent / "static"


def vendor(static: Path) -> None:
    """Copy every script the page loads into ``static/``."""
    for name, version, files in NPM:
        package = npm_package(name, version)
        for source, dest in files:
            src, dst = package / source, static / dest
            if src.is_dir():  # the widget manager and the icon fonts its CSS points to, no source maps
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.map", "embed.js", "libembed-amd.js"))
            else:
                shutil.copyfile(src, dst)
    shutil.copytree(mathjax_dir(), static / "mathjax")
    shutil.copyfile(HERE / "anywidget-amd.js", static / "anywidget-amd.js")
    from lesson_lib.show.theme import PAGE_CSS

    (static / "lesson.css").write_text(PAGE_CSS, encoding="utf-8")


def export(notebook: Path) -> str:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(notebook, as_version=4)
    nb.metadata["title"] = "Day 11 · 多头注意力"
    exporter = HTMLExporter(
        template_name="day11",  # scripts/static_page/templates/day11: the lab template, alt text carried over
        extra_template_basedirs=[str(HERE / "templates")],
        embed_images=True,
        require_js_url="static/require.js",
        widget_renderer_url="static/widgets/embed-amd.js",
        mathjax_url=f"static/mathjax/MathJax.js?config={MATHJAX_CONFIG}",
    )
    body, _resources = exporter.from_notebook_node(nb)
    return body


def finish(html: str) -> str:
    """Language, the lesson's page CSS, the local anywidget loader, and a note that widgets show saved state."""
    html = re.sub(r"<html( lang=\"[^\"]*\")?>", '<html lang="zh-CN">', html, count=1)
    loader = ('<link rel="stylesheet" href="static/lesson.css">\n'
              # Read by the widget manager: a module it cannot find is looked up in this folder, not on a CDN.
              '<script src="static/anywidget-amd.js" data-jupyter-widgets-cdn="static/npm/"></script>\n')
    marker = '<script src="static/require.js"></script>'
    if marker not in html:
        raise RuntimeError("nbconvert's lab template no longer loads require.js as expected; update finish()")
    html = html.replace(marker, marker + "\n" + loader, 1)
    mathjax = f'<script src="static/mathjax/MathJax.js?config={MATHJAX_CONFIG}">'
    if mathjax not in html:
        raise RuntimeError("nbconvert's lab template no longer loads MathJax as expected; update finish()")
    html = html.replace(mathjax, MATHJAX_FONTS + "\n" + mathjax, 1)
    note = (f'<aside class="lesson-static-note" role="note" style="margin:8px auto;max-width:1000px;padding:8px 12px;'
            f'border-left:3px solid var(--jp-brand-color1);background:var(--jp-layout-color2)">{NOTE}</aside>')
    return html.replace('<main>', "<main>\n" + note, 1) if "<main>" in html else html


def build(out: Path, notebook: Path = NOTEBOOK) -> Path:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    if not nb.get("metadata", {}).get("widgets"):
        sys.exit(f"{notebook} 里没有保存控件状态：先运行 python scripts/build_notebook.py。")
    if out.exists():
        shutil.rmtree(out)
    (out / "static").mkdir(parents=True)
    vendor(out / "static")
    page = out / "index.html"
    page.write_text(finish(export(notebook)), encoding="utf-8")
    return page


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="folder to write (replaced)")
    parser.add_argument("--notebook", type=Path, default=NOTEBOOK)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    page = build(args.out.resolve(), args.notebook.resolve())
    size = sum(f.stat().st_size for f in page.parent.rglob("*") if f.is_file()) / 1e6
    print(f"wrote {page} ({size:.0f} MB with static/); open it in a browser, or publish the whole folder")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
