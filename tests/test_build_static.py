"""scripts/build_static.py: the page it writes loads only files from its own folder, tells the reader that widgets show
saved state, carries each picture's description over as alt text, keeps every fold closed, and checks number boxes
and choices with the lesson checker's own messages; the npm tarballs unpack safely on every Python (3.11.2 has no
``tarfile`` filter). The browser test builds the real page and reads it in Chromium with the network blocked."""

from __future__ import annotations

import base64
import io
import json
import re
import sys
import tarfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import scaled

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_static  # noqa: E402
import selfcheck  # noqa: E402  (scripts/static_page/, put on the path by build_static)

from lesson_lib.practice import questions  # noqa: E402
from lesson_lib.practice.feedback import FORM  # noqa: E402
from lesson_lib.practice.quiz import check  # noqa: E402
from tests.helpers import require  # noqa: E402

WIDGET = "application/vnd.jupyter.widget-view+json"
FOLD = "<details>\n<summary>先自己想一想，再展开看回答</summary>\n\n参考回答：**头数**要适中。\n\n</details>"

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()


ALT = "「她」给「小红」0.55"  # a picture's description, as the lesson writes one


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    import nbformat  # here, not at import: only the worker that runs these pays for its schema
    nb = nbformat.v4.new_notebook()
    slider = {"model_name": "IntSliderModel", "model_module": "@jupyter-widgets/controls",
              "model_module_version": "2.0.0", "state": {}}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {"y": slider}, "version_major": 2, "version_minor": 0}}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 标题\n\n$$a = b$$"),
        nbformat.v4.new_markdown_cell("前文\n\n" + FOLD + "\n\n后文 <b>粗</b>"),
        nbformat.v4.new_code_cell('ask("S4b")', outputs=[nbformat.v4.new_output(
            "execute_result", data={WIDGET: {"model_id": "x"}, "text/plain": "Q"})]),
        nbformat.v4.new_code_cell("widgets.head_lab()", outputs=[nbformat.v4.new_output(
            "execute_result", data={WIDGET: {"model_id": "y"}, "text/plain": "W"})]),
        nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
            metadata={"image/png": {"alt": ALT}})]),
        nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": PNG, "text/plain": "<Figure>"})]),
    ]
    path = tmp_path_factory.mktemp("nb") / "lesson.ipynb"
    nbformat.write(nb, path)
    exported = {"S4b": selfcheck.export_question(questions.question("S4b"), check)}
    return build_static.finish(build_static.export(path, exported), exported)


def test_every_script_and_style_comes_from_the_pages_own_folder(page):
    sources = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', page)
    own = {"static/require.js", "static/anywidget-amd.js", "static/lesson.css", "static/saved-widgets.js"}
    assert own <= set(sources)
    assert any(s.startswith("static/mathjax/MathJax.js?config=") for s in sources)
    assert "static/widgets/embed-amd.js" in page  # added by the page's own loader at DOMContentLoaded
    assert all(not re.match(r"(https?:)?//", s) for s in sources), sources
    # a widget module the page does not have is looked up in its folder, never on the CDN default
    assert 'data-jupyter-widgets-cdn="static/npm/"' in page
    assert page.index("static/require.js") < page.index("static/anywidget-amd.js")


def test_the_page_is_chinese_and_says_widgets_show_saved_state(page):
    assert '<html lang="zh-CN">' in page
    assert build_static.NOTE in page  # the note that widgets show their saved state
    assert page.index("window.MathJax = ") < page.index("static/mathjax/MathJax.js")  # STIX-Web: the shipped fonts


def test_a_pictures_description_becomes_its_alt_text(page):
    alts = [(re.search(r'alt="([^"]*)"', tag) or [None, None])[1] for tag in re.findall(r"<img[^>]*>", page)]
    assert len(alts) == 2 and alts[0] == ALT
    assert "No description has been provided" in page  # nbconvert still marks the picture that has none


def test_the_anywidget_loader_renders_from_saved_state_only():
    js = (ROOT / "scripts" / "static_page" / "anywidget-amd.js").read_text(encoding="utf-8")
    assert 'define("anywidget", ["@jupyter-widgets/base"]' in js
    assert 'this.model.get("_esm")' in js and "http" not in js.split("*/")[-1].replace("https://", "")


def test_build_refuses_a_notebook_whose_widgets_have_no_saved_state(tmp_path):
    import nbformat  # here, not at import: only the worker that runs these pays for its schema
    path = tmp_path / "bare.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("widgets.head_lab()", outputs=[nbformat.v4.new_output(
        "execute_result", data={WIDGET: {"model_id": "y"}, "text/plain": "W"})])]
    nbformat.write(nb, path)
    with pytest.raises(SystemExit, match=re.escape(str(path))):  # names the notebook
        build_static.build(tmp_path / "site", path)


class _Folds(HTMLParser):
    def __init__(self):
        super().__init__()
        self.folds = []

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.folds.append(dict(attrs))


def folds(html: str) -> list[dict]:
    parser = _Folds()
    parser.feed(html)
    return parser.folds


def test_a_fold_of_the_notebook_is_a_closed_fold_on_the_page(page):
    lesson_folds = [f for f in folds(page) if "lesson-q-solution" not in f.get("class", "")]
    assert len(lesson_folds) == 1 and "open" not in lesson_folds[0]
    # the fold holds its answer (nbconvert's embed_images used to close <details> before it)
    start = page.index("<details>")
    assert page.index("参考回答", start) < page.index("</details>", start) < page.index("后文")


def test_a_quiz_becomes_a_form_that_the_page_checks_and_a_widget_says_it_needs_jupyterlab(page):
    assert 'data-question="S4b"' in page and 'id="lesson-questions"' in page
    assert page.index('id="lesson-questions"') < page.index('src="static/selfcheck.js"')
    data = json.loads(re.search(r'id="lesson-questions">(.*?)</script>', page, re.S).group(1))
    assert set(data) == {"S4b"}
    saved = re.search(r'<div class="lesson-saved-widget">', page)
    assert saved and "JupyterLab" in page[saved.start() - 200:saved.start()]


def _kernel(qid, texts):
    fb = check(qid, texts)
    return [fb.verdict, fb.message]


@pytest.mark.parametrize("qid", questions.question_ids())
def test_the_exported_answers_are_the_kernels_for_any_integer_the_page_reads(qid):
    """What the page shows for an integer it has no entry for (the stand-in's echo replaced) is what the kernel
    says for that integer; every stored answer is the kernel's."""
    q = questions.question(qid)
    data = selfcheck.export_question(q, check)
    if "boxes" not in data:
        return
    names = [b["name"] for b in data["boxes"]]
    fresh = [123457, -3, 0]
    for key, said in data["answers"].items():
        tokens = key.split("|")
        if "#" in tokens or "" in tokens:
            continue
        others = [i for i, t in enumerate(tokens) if t == selfcheck.OTHER]
        value = {n: (str(fresh[i % 3]) if t == selfcheck.OTHER else t) for i, (n, t) in enumerate(zip(names, tokens))}
        message = said[1]
        for i in others:
            grouped, plain = data["boxes"][i]["other"]
            message = message.replace(grouped, f"{fresh[i % 3]:,}").replace(plain, str(fresh[i % 3]))
        assert [said[0], message] == _kernel(qid, value), key


@pytest.mark.parametrize("text,value", [("40000", 40000), ("-7", -7), ("0", 0), ("\uff13\uff12", 32), (" 64 ", 64)])
def test_the_kernel_reads_what_the_page_reads_as_an_integer_as_that_integer(text, value):
    box = next(b for b in questions.question("S4").key.boxes if b.name == "one")
    assert box.read(text) == (value, "")


def _tar(members) -> tarfile.TarFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer)


def _file(name, data=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def test_an_npm_tarball_unpacks_by_hand_on_every_python(tmp_path):
    build_static.safe_extract(_tar([_file("package/package.json", b"{}"), _file("package/dist/a.js")]), tmp_path)
    assert (tmp_path / "package" / "dist" / "a.js").read_bytes() == b"x"


@pytest.mark.parametrize("member", ["../outside.js", "/abs.js", "link"])
def test_an_npm_tarball_with_a_path_outside_or_a_link_is_refused(tmp_path, member):
    if member == "link":
        info = tarfile.TarInfo("package/link")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        bad = (info, None)
    else:
        bad = _file(member)
    with pytest.raises(RuntimeError, match=re.escape(member)):  # names the entry
        build_static.safe_extract(_tar([bad]), tmp_path / "out")
    assert not (tmp_path / "outside.js").exists()


def test_every_built_notebook_gets_a_page_the_core_lesson_first(tmp_path):
    for name in ("lab_b.ipynb", "day11_multi_head_attention.ipynb", "lab_a.ipynb"):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    found = build_static.notebooks(tmp_path)
    assert [p.name for p in found] == ["day11_multi_head_attention.ipynb", "lab_a.ipynb", "lab_b.ipynb"]
    nav = build_static.nav_html([("index.html", "主课"), ("lab_a.html", "实验 A")], "lab_a.html")
    assert 'href="index.html"' in nav and '<a href="lab_a.html" aria-current="page">' in nav


# ------------------------------------------------------------------------- --out: what a build may replace
@pytest.fixture
def quick_build(monkeypatch, tmp_path):
    """build() into a folder with its slow parts stood in for: one script, a page that is its notebook's name."""
    import nbformat  # here, not at import: only the worker that runs these pays for its schema
    monkeypatch.setattr(build_static, "vendor", lambda static: (static / "lesson.css").write_text("p {}"))
    monkeypatch.setattr(build_static, "export", lambda book, questions: f"<p>{book.stem}</p>")
    monkeypatch.setattr(build_static, "finish", lambda html, questions, nav: html)
    monkeypatch.setattr(selfcheck, "export_all", dict)
    notebook = tmp_path / "lesson.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    return lambda out: build_static.main(["--out", str(out), "--notebook", str(notebook)])


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("kind", ["folder of other files", "file"])
def test_out_refuses_what_is_not_an_earlier_build_and_leaves_it_as_it_was(tmp_path, quick_build, kind):
    out = tmp_path / "place"
    if kind == "file":
        out.write_text("notes")
    else:
        (out / "sub").mkdir(parents=True)
        (out / "sub" / "notes.txt").write_text("notes")
    before, beside = (_tree(out) if out.is_dir() else out.read_text()), sorted(tmp_path.iterdir())
    with pytest.raises(SystemExit) as stopped:
        quick_build(out)
    assert stopped.value.code not in (0, None)  # a message, exit status 1
    assert (_tree(out) if out.is_dir() else out.read_text()) == before
    assert sorted(tmp_path.iterdir()) == beside


def test_out_replaces_an_empty_folder_or_an_earlier_build_whole(tmp_path, quick_build):
    out = tmp_path / "site"
    out.mkdir()
    assert quick_build(out) == 0
    (out / "stale.html").write_text("from a build of an older lesson")
    assert quick_build(out) == 0
    assert set(_tree(out)) == {"index.html", "static/lesson.css", build_static.MARKER}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lesson.ipynb", "site"]  # nothing left beside it


def test_a_failed_build_leaves_the_earlier_build_as_it_was(tmp_path, quick_build, monkeypatch):
    out = tmp_path / "site"
    quick_build(out)
    before = _tree(out)

    def fails(book, questions):
        raise RuntimeError("nbconvert failed")

    monkeypatch.setattr(build_static, "export", fails)
    with pytest.raises(RuntimeError):
        quick_build(out)
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lesson.ipynb", "site"]


# --------------------------------------------------------------------------------------------- the real page
AXE_VERSION = "4.14.1"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]  # fmt: skip
SLIDER = ".lesson-saved-widget input[type=range]"  # the lesson's sliders (anywidget) as saved
HIDDEN_FOLDS = """() => [...document.querySelectorAll('details')].filter(d => d.open
    || [...d.children].some(c => c.tagName !== 'SUMMARY' && c.checkVisibility())).length"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    import shutil

    require(shutil.which("npm") is not None or (ROOT / ".cache" / "static-page").exists(),
            "npm is missing (it fetches the page's scripts once): sudo apt-get install npm")
    out = tmp_path_factory.mktemp("site") / "site"
    return build_static.build(out)


@pytest.fixture(scope="module")
def browser_page(site):
    import shutil

    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    require(chromium is not None, "没有 Chromium / no Chromium: sudo apt-get install chromium fonts-noto-cjk")
    axe = build_static.npm_package("axe-core", AXE_VERSION) / "axe.min.js"
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1024, "height": 900})
        page.set_default_timeout(scaled(60) * 1000)  # the whole lesson's page: loading it is slow on a busy machine
        outside = []

        def only_files(route):
            if route.request.url.startswith(("file:", "data:", "blob:")):
                return route.continue_()
            outside.append(route.request.url)
            return route.abort()

        page.route("**/*", only_files)
        page.goto(site.as_uri())
        page.wait_for_function(f"document.querySelectorAll('{SLIDER}').length > 0", timeout=scaled(60) * 1000)
        yield page, axe, outside
        browser.close()


@pytest.mark.slow
def test_the_page_shows_no_answer_before_a_click(site, browser_page):
    page, _, outside = browser_page
    notebook = json.loads(build_static.NOTEBOOK.read_text(encoding="utf-8"))
    in_notebook = sum(json.dumps(c).count("<details") for c in notebook["cells"] if c["cell_type"] == "markdown")
    page_folds = folds(site.read_text(encoding="utf-8"))
    assert sum("lesson-q-solution" not in f.get("class", "") for f in page_folds) >= in_notebook > 0
    assert not any("open" in f for f in page_folds)
    assert page.evaluate(HIDDEN_FOLDS) == 0
    fold = page.locator("details").first
    fold.locator("summary").click()
    assert page.evaluate(HIDDEN_FOLDS) == 1  # a click opens one: the check above can see an open fold
    fold.locator("summary").click()
    assert outside == []


@pytest.mark.slow
def test_a_number_and_a_choice_are_checked_on_the_page(browser_page):
    page, _, _ = browser_page
    q = questions.question("S4b")
    exp = next(b for b in q.key.boxes if b.name == "exp")
    form = page.locator('form[data-question="S4b"]')
    form.locator('input[name="exp"]').fill(str(exp.target))
    form.get_by_label("会", exact=True).check()
    form.get_by_role("button", name="检查答案").click()
    right = check("S4b", {"exp": str(exp.target), "grows": "会"})
    assert form.locator(".lesson-q-feedback").inner_text() == right.message and right.verdict == "right"
    form.locator('input[name="exp"]').fill(str(exp.target + 1))  # a value the question names nowhere
    form.get_by_role("button", name="检查答案").click()
    wrong = check("S4b", {"exp": str(exp.target + 1), "grows": "会"})
    assert form.locator(".lesson-q-feedback").inner_text() == wrong.message and wrong.verdict == "wrong"
    form.locator('input[name="exp"]').fill(f"{exp.target} 次（算式）")
    form.get_by_role("button", name="检查答案").click()
    assert form.locator(".lesson-q-feedback").inner_text().startswith(FORM)  # unread: no verdict
    choice = page.locator('form[data-question="S3b"]')
    choice.get_by_label("A.", exact=False).check()
    choice.get_by_role("button", name="检查答案").click()
    assert choice.locator(".lesson-q-feedback").inner_text() == check("S3b", "A").message


@pytest.mark.slow
def test_a_saved_slider_does_not_move_by_keyboard_or_mouse(browser_page):
    page, _, _ = browser_page
    slider = page.locator(SLIDER).first
    slider.scroll_into_view_if_needed()
    before = slider.input_value()
    slider.evaluate("el => el.focus()")
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.95, box["y"] + box["height"] / 2)
    assert slider.input_value() == before
    assert page.evaluate("document.activeElement === null || document.activeElement.closest('[inert]') === null")
    # a fold inside a saved widget (a figure's numbers) still opens
    fold = page.locator(".lesson-saved-widget details").first
    fold.locator("summary").click()
    assert fold.evaluate("d => d.open")
    fold.locator("summary").click()


@pytest.mark.slow
def test_axe_finds_no_serious_issue(browser_page):
    page, axe, _ = browser_page
    page.add_script_tag(path=str(axe))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}});
        return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
                 .map(v => `${v.id}: ${v.nodes.length} × ${v.nodes[0].target} ${v.nodes[0].failureSummary}`);
    }""")
    assert result == []
