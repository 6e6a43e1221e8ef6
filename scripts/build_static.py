"""Build the lesson's static reading version: one offline HTML page with every output and the widgets' saved state.

    python scripts/build_static.py [--out site] [--notebook notebooks/day11_multi_head_attention.ipynb]

Writes one page per notebook of ``notebooks/`` (the core lesson is ``site/index.html``, each lab ``<name>.html``) and
``site/static/`` (the widget manager, require.js, MathJax 2, the anywidget loader, the self-check).
Nothing on the page asks any other host for anything: the scripts come from npm (``@jupyter-widgets/html-manager``,
``requirejs``, fetched once with ``npm pack`` into ``.cache/static-page/``) and PyPI (``jupyter-server-mathjax``),
images are embedded. Widgets show the state stored in the notebook (scripts/build_notebook.py saves it); they do
not compute anything on this page -- it has no kernel -- and are inert. The self-check answers number boxes and
choices with the lesson checker's own messages, exported at build time (scripts/static_page/selfcheck.py).
Publish the whole ``site/`` folder (README: "静态阅读版").
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"
HERE = Path(__file__).resolve().parent / "static_page"
sys.path.insert(0, str(HERE))
import selfcheck  # noqa: E402  (scripts/static_page/selfcheck.py: the questions, exported for the page)

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
MARKER = ".day11-static-page"  # in every build: --out replaces a folder only if it is empty or holds this file
MARKER_TEXT = "这个文件夹由 scripts/build_static.py 生成；再次构建会整个替换它。\n"
NOTE = ("这是第 11 天课程的<strong>静态阅读版</strong>：所有输出和图都在；选择题和填数的题可以在本页检查。"
        "控件只显示保存时的状态，拖动或点击不会重新计算；要动手做实验、做代码练习，"
        "请在 JupyterLab 里打开 <code>notebooks/</code> 里的课程笔记本。")


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
        safe_extract(tar, target)
    return target / "package"


def safe_extract(tar: tarfile.TarFile, target: Path) -> None:
    """Unpack an npm tarball: only plain files and folders, every path inside ``target``.

    ``extractall(filter="data")`` does this from Python 3.11.4 / 3.10.12 on; Debian 12's 3.11.2 has no ``filter``
    argument, so the members are checked here by hand on every Python."""
    root = target.resolve()
    for member in tar.getmembers():
        dest = (root / member.name).resolve()
        if not (member.isfile() or member.isdir()) or (dest != root and root not in dest.parents):
            raise RuntimeError(f"npm 包里有不安全的条目 {member.name!r}（链接、设备或指向目录之外），已停止解包。")
        if member.isdir():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tar.extractfile(member) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)


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
    for name in ("page.css", "selfcheck.js", "saved-widgets.js"):
        shutil.copyfile(HERE / name, static / name)


QUIZ_CALL = re.compile(r"""\bask\(\s*["']([^"']+)["']\s*\)""")
WIDGET = "application/vnd.jupyter.widget-view+json"
EXERCISE_NOTE = ("这是代码练习：改写上面的函数，再运行检查这一格，检查器会告诉你哪里不对。"
                 "静态页面不能运行代码，下面是保存时的输出；要做练习，请在 JupyterLab 里打开课程笔记本。")


def _html_output(markup: str):
    import nbformat

    return nbformat.v4.new_output("display_data", data={"text/html": markup, "text/plain": ""})


def static_cells(nb, questions: dict) -> None:
    """Each quiz becomes the page's own self-check form; the interview shows its rubric behind a click; an exercise
    says that it needs JupyterLab. (Saved widgets get their note and become inert in the template.)"""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if asked := [q for q in QUIZ_CALL.findall(cell.source) if q in questions]:  # display(ask("S4"), ask("S4b"))
            cell.outputs = [_html_output(selfcheck.form_html(questions[q])) for q in asked]
        elif "interview_self_check(" in cell.source:
            from lesson_lib.practice.questions import question

            interview = question("面试")  # §8's self-explanation (sections/s08_interview.toml)
            rubric = interview.key
            cell.outputs = [_html_output(selfcheck.rubric_html(interview.prompt, rubric.text(), rubric.model_answer))]
        elif "exercises.check(" in cell.source:
            cell.outputs.insert(0, _html_output(f'<p class="lesson-needs-lab">{EXERCISE_NOTE}</p>'))


def export(notebook: Path, questions: dict | None = None) -> str:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(notebook, as_version=4)
    nb.metadata["title"] = title(nb, notebook)
    static_cells(nb, selfcheck.export_all() if questions is None else questions)
    exporter = HTMLExporter(
        template_name="day11",  # scripts/static_page/templates/day11: the lab template, alt text, inert widgets
        extra_template_basedirs=[str(HERE / "templates")],
        # Not embed_images: it re-parses every raw HTML block of the Markdown with BeautifulSoup, which closes
        # <details> early (the folded answers render open). Output pictures are data: URLs in the template anyway,
        # and finish() refuses a page that would load a picture from anywhere else.
        embed_images=False,
        require_js_url="static/require.js",
        widget_renderer_url="static/widgets/embed-amd.js",
        mathjax_url=f"static/mathjax/MathJax.js?config={MATHJAX_CONFIG}",
    )
    body, _resources = exporter.from_notebook_node(nb)
    return body


def title(nb, notebook: Path) -> str:
    """The notebook's first heading (a lab's own title), or the lesson's."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and (m := re.search(r"^#\s+(.+)$", cell.source, re.M)):
            return m.group(1).strip()
    return notebook.stem


def finish(html: str, questions: dict | None = None, nav: str = "") -> str:
    """Language, the lesson's page CSS, the local anywidget loader, the self-check, and a note about widgets."""
    html = re.sub(r"<html( lang=\"[^\"]*\")?>", '<html lang="zh-CN">', html, count=1)
    loader = ('<link rel="stylesheet" href="static/lesson.css">\n'
              '<link rel="stylesheet" href="static/page.css">\n'
              '<script src="static/saved-widgets.js"></script>\n'
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
    outside = [src for src in re.findall(r'<img[^>]*\ssrc="([^"]*)"', html) if not src.startswith("data:")]
    if outside:
        raise RuntimeError(f"a picture on the page is not embedded: {outside[:3]}")
    note = f'<aside class="lesson-static-note" role="note">{NOTE}</aside>'
    if "<main>" in html:
        html = html.replace("<main>", "<main>\n" + nav + note, 1)
    if questions is not None and 'class="lesson-selfcheck"' in html:
        script = selfcheck.data_script(questions) + '\n<script src="static/selfcheck.js"></script>\n'
        html = html.replace("</body>", script + "</body>", 1)
    return html


def notebooks(folder: Path = NOTEBOOK.parent) -> list[Path]:
    """Every built notebook, the core lesson first, then the optional labs by name."""
    found = sorted(folder.glob("*.ipynb"))
    return sorted(found, key=lambda p: (p.name != NOTEBOOK.name, p.name))


def page_name(notebook: Path, first: bool) -> str:
    return "index.html" if first else f"{notebook.stem}.html"


def nav_html(pages: list[tuple[str, str]], current: str) -> str:
    if len(pages) < 2:
        return ""
    mark = ' aria-current="page"'
    items = "".join(f'<li><a href="{name}"{mark if name == current else ""}>{text}</a></li>' for name, text in pages)
    return f'<nav class="lesson-pages" aria-label="本课的各页">本课的各页：<ul>{items}</ul></nav>\n'


def build(out: Path, notebook: Path | None = None) -> Path:
    """Write one page per notebook (the core lesson is index.html) and their shared static/ folder."""
    import nbformat

    refuse_to_replace(out)
    books = [notebook] if notebook is not None else notebooks()
    for book in books:  # a notebook with widgets must have saved their state, or they would render empty
        nb = json.loads(book.read_text(encoding="utf-8"))
        shows = any(WIDGET in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", ()))
        if shows and not nb.get("metadata", {}).get("widgets"):
            sys.exit(f"{book} 里没有保存控件状态：先运行 python scripts/build_notebook.py。")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}-building-", dir=out.parent))  # beside out: the same disk
    building = work / "site"
    try:  # a build that fails leaves out as it was
        (building / "static").mkdir(parents=True)
        vendor(building / "static")
        questions = selfcheck.export_all()
        pages = [(page_name(b, i == 0), title(nbformat.read(b, as_version=4), b)) for i, b in enumerate(books)]
        for book, (name, _) in zip(books, pages):
            html = finish(export(book, questions), questions, nav_html(pages, name))
            (building / name).write_text(html, encoding="utf-8")
        (building / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
        if out.exists():  # an earlier build goes only once the new one is complete
            out.rename(work / "earlier")
        building.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out / "index.html"


def refuse_to_replace(out: Path) -> None:
    """Stop unless ``out`` is new, an empty folder, or a page this script built (its marker file is there)."""
    if out.exists() and not out.is_dir():
        sys.exit(f"--out {out} 是一个文件，不是文件夹：请换一个文件夹名，例如 --out site。")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        sys.exit(f"--out {out} 里已经有别的文件，而且不是以前生成的静态页（没有 {MARKER}），为了不删掉它们，"
                 "构建没有开始：请换一个新的或空的文件夹，例如 --out site。")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "site",
                        help="folder to write: new, empty, or an earlier build (replaced)")
    parser.add_argument("--notebook", type=Path, default=None, help="only this notebook (default: notebooks/*.ipynb)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    page = build(args.out.resolve(), args.notebook.resolve() if args.notebook else None)
    size = sum(f.stat().st_size for f in page.parent.rglob("*") if f.is_file()) / 1e6
    print(f"wrote {page} ({size:.0f} MB with static/); open it in a browser, or publish the whole folder")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
