"""Every reader, in a real browser: axe-core over the lesson's outputs, a keyboard-only pass through every interactive
section, the layout a laptop shows (1024×768 with the file browser open), figure contrast in every theme, screenshots
in two configurations, and the static page with its request log.

One JupyterLab server and one Restart & Run All for the whole module (themes and window sizes change on the running
page); the tests run in file order on the same page.
Run:  .venv/bin/python -m pytest tests/e2e/test_reader.py -v     (screenshots: artifacts/e2e/<timestamp>/reader/)
axe-core comes from npm (``scripts/build_static.py``'s ``npm_package``: ``npm pack`` once into .cache/static-page/,
git-ignored, unpacked by its ``safe_extract``, which Debian 12's Python 3.11.2 needs: no ``extractall(filter=)``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import NOTEBOOK_NAME, ROOT, require
from helpers import scaled
from test_browser_flow import JS_HOOK_KERNEL, JS_RUN_STATE, JS_SETTLED, run_all_finished, update_ms

sys.path.insert(0, str(ROOT / "scripts"))
try:
    import build_static  # npm_package / safe_extract (axe-core) and the static page itself
finally:
    sys.path.pop(0)

AXE_VERSION = "4.14.1"
SMALL, LARGE = (1024, 768), (1400, 1000)
THEME_NAMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark", "hc": "JupyterLab Dark High Contrast"}
MIN_SCALE = 0.90  # a raster picture shown below 90 % of its pixels has labels too small to read (issue 24)


@functools.cache
def built_lesson() -> dict:
    """What the built core notebook shows after Run All (its stored outputs and widget state): the counts the tests
    below expect come from here, so a section that gains or loses a slider or a figure moves them with it."""
    nb = json.loads((ROOT / "notebooks" / NOTEBOOK_NAME).read_text(encoding="utf-8"))
    models = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"].values()
    sliders = [m["state"]["description"] for m in models
               if str(m["state"].get("_anywidget_id", "")).endswith(".Slider")]
    outputs = ["".join(o["data"]["text/html"]) for c in nb["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    redrawn = [m["state"]["value"] for m in models if m["model_name"] == "HTMLModel"]  # what a widget draws
    return {"sliders": sliders, "outputs": sum(len(c.get("outputs", [])) for c in nb["cells"]),
            "figures": sum(h.count("<svg") for h in outputs + redrawn),
            # texts in the figures no control redraws (a widget's figure shows more or fewer as its slider moves)
            "fixed_texts": sum(len(re.findall(r"<text\b", h)) for h in outputs),
            "pictures": sum(h.count('role="img"') for h in outputs + redrawn)}  # each named by its aria-label


# Every focusable control in the notebook's outputs, in document order (what Tab walks through).
JS_FOCUSABLES = """() => [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')].flatMap(out =>
  [...out.querySelectorAll('input, textarea, select, button, [tabindex]')].filter(el =>
    !el.disabled && el.tabIndex >= 0 && el.getClientRects().length && getComputedStyle(el).visibility === 'visible'))"""

# Put focus just before `el`: on the previous control of the same output, or on the output itself (where a learner
# arrives from the cell: JupyterLab's cell editors keep Tab for indenting), so one Tab must land on `el`.
JS_FOCUS_BEFORE = """(el) => {
  const area = el.closest('.jp-OutputArea-output');
  const all = (FOCUSABLES)().filter(x => x.closest('.jp-OutputArea-output') === area);
  const i = all.indexOf(el);
  if (i < 0) return 'not focusable';
  if (i > 0) { all[i - 1].focus(); return 'ok'; }
  area.tabIndex = -1;
  area.focus();
  return 'ok';
}""".replace("FOCUSABLES", JS_FOCUSABLES)

JS_LAYOUT = """() => {
  const out = {clipped: [], scaled: [], formulas: []};
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  for (const area of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')) {
    const i = cells.indexOf(area.closest('.jp-Cell')), right = area.getBoundingClientRect().right + 1;
    for (const el of area.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if (!r.width || r.right <= right) continue;
      let inside = false;
      for (let p = el.parentElement; p && p !== area.parentElement; p = p.parentElement) if (scrolls(p)) inside = true;
      if (!inside) out.clipped.push(`cell ${i}: <${el.tagName.toLowerCase()} class="${el.className}"> ends at ` +
                                    `${r.right.toFixed(0)} > ${right.toFixed(0)}`);
    }
    // A picture the learner sees: a shown <img> (a trusted page hides the <img> copy of a themed SVG) or an
    // outermost <svg>, whose own size is its width attribute (matplotlib writes points: 1 pt = 4/3 px).
    const shown = el => el.getClientRects().length > 0;
    const own = el => el.tagName.toLowerCase() === 'img' ? el.naturalWidth
      : (w => w.endsWith('pt') ? parseFloat(w) * 4 / 3 : parseFloat(w))(el.getAttribute('width') || '');
    for (const pic of area.querySelectorAll('img, svg')) {
      if (!shown(pic) || (pic.parentElement && pic.parentElement.closest('svg'))) continue;
      const r = pic.getBoundingClientRect(), natural = own(pic);
      if (natural && r.width < natural * MIN_SCALE)
        out.scaled.push(`cell ${i}: ${natural.toFixed(0)} px shown at ${r.width.toFixed(0)} px ` +
                        `(${(100 * r.width / natural).toFixed(0)} %)`);
    }
  }
  for (const m of document.querySelectorAll('.jp-Notebook .jp-RenderedMarkdown mjx-container[display="true"]')) {
    const box = m.closest('.jp-RenderedMarkdown').getBoundingClientRect(), r = m.getBoundingClientRect();
    const i = cells.indexOf(m.closest('.jp-Cell'));
    const wide = m.scrollWidth > m.clientWidth + 1 || r.right > box.right + 1;
    if (wide && !(scrolls(m) && r.right <= box.right + 1))
      out.formulas.push(`cell ${i}: formula ${m.scrollWidth} px in ${m.clientWidth} px, cut at the edge`);
  }
  return out;
}""".replace("MIN_SCALE", str(MIN_SCALE))

JS_HEIGHT = "el => Math.round(el.getBoundingClientRect().height)"

# Every control in the outputs (what a screen reader lands on), each marked with data-lesson-control=i so the test can
# ask Chromium's accessibility tree for its computed name.
JS_MARK_CONTROLS = """() => {
  const sel = 'input:not([type=hidden]), textarea, select, button, [role=slider], [role=radiogroup], [role=group]';
  const found = [];
  for (const area of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')) {
    area.scrollIntoView();
    for (const el of area.querySelectorAll(sel)) {
      if (!el.getClientRects().length && !el.matches('[role=radiogroup], [role=group]')) continue;
      el.dataset.lessonControl = String(found.length);
      found.push(`${el.tagName.toLowerCase()}${el.type ? '[' + el.type + ']' : ''}${el.getAttribute('role') ?
        '[role=' + el.getAttribute('role') + ']' : ''} in "${(el.closest('.jp-OutputArea-output').innerText || '')
        .trim().slice(0, 40).replace(/\\s+/g, ' ')}"`);
    }
  }
  return found;
}"""

# Colours as the browser computes them: rgb()/rgba() or color(srgb r g b / a) (what color-mix() gives).
JS_COLOUR = r"""
const rgba = (s) => {
  let m = s.match(/^rgba?\(([^)]+)\)/);
  if (m) { const v = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number);
           return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; }
  m = s.match(/^color\(srgb ([^)]+)\)/);
  if (m) { const v = m[1].split(/[ \/]+/).filter(Boolean).map(Number);
           return [v[0] * 255, v[1] * 255, v[2] * 255, v.length > 3 ? v[3] : 1]; }
  return null;
};
const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                     return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const pageBehind = (el) => {  // the first opaque background among the ancestors (the output, the notebook, body)
  const layers = [];
  for (let p = el; p; p = p.parentElement) {
    const c = rgba(getComputedStyle(p).backgroundColor);
    if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  return layers.reverse().reduce((acc, c) => over(c, acc), [255, 255, 255, 1]);
};
"""

# Every text in every SVG picture of the outputs against what is painted under its middle: the fill of the shape
# there (a box of Figure 11.1), else the page. Text over a raster image (a heat map's cells) is listed apart.
JS_FIGURE_CONTRAST = """() => {
  COLOUR
  const low = [], seen = {texts: 0, onImage: 0, figures: 0, empty: []};
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  for (const svg of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output svg')) {
    if (svg.parentElement.closest('svg') || !svg.getClientRects().length) continue;
    seen.figures++;
    svg.scrollIntoView({block: 'center'});
    const page = pageBehind(svg.parentElement), measured = seen.texts;
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (!r.width || !t.textContent.trim()) continue;
      const style = getComputedStyle(t), fill = rgba(style.fill);
      if (!fill || style.visibility === 'hidden') continue;
      seen.texts++;
      let under = page, onImage = false;
      const x = r.left + r.width / 2, y = r.top + r.height / 2;
      if (x < 0 || y < 0 || x > innerWidth || y > innerHeight) continue;
      for (const el of document.elementsFromPoint(x, y)) {
        if (el === t || el.closest('text') || !svg.contains(el) || el === svg) continue;
        if (el.tagName.toLowerCase() === 'image') { onImage = true; break; }
        const s = getComputedStyle(el), c = rgba(s.fill);
        if (!c || s.fill === 'none') continue;
        const a = c[3] * Number(s.fillOpacity) * Number(s.opacity);
        if (a <= 0.01) continue;
        under = over([c[0], c[1], c[2], a], page);
        break;
      }
      if (onImage) { seen.onImage++; continue; }
      const shown = over([fill[0], fill[1], fill[2], fill[3] * Number(style.fillOpacity) * Number(style.opacity)],
                         under);
      const k = ratio(shown, under);
      if (k < 4.5) low.push(`cell ${cells.indexOf(svg.closest('.jp-Cell'))}: "${t.textContent.trim().slice(0, 20)}" ` +
                            `${k.toFixed(2)}:1 (${style.fill} on rgb(${under.slice(0, 3).map(Math.round)}))`);
    }
    if (seen.texts === measured) seen.empty.push(cells.indexOf(svg.closest('.jp-Cell')));
  }
  return {low, seen};
}""".replace("COLOUR", JS_COLOUR)

# A choice whose text is cut (text-overflow, or wider than its box) or whose circle/box is covered by something.
JS_CHOICES = """() => {
  const bad = [];
  let count = 0;
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  for (const area of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')) {
    const labels = area.querySelectorAll('.widget-radio-box label, .widget-checkbox label, .widget-toggle-button');
    for (const label of labels) {
      if (!label.getClientRects().length) continue;  // folded away (the rubric's ticks before an answer)
      label.scrollIntoView({block: 'center'});
      count++;
      const where = `cell ${cells.indexOf(label.closest('.jp-Cell'))} "${label.innerText.trim().slice(0, 24)}"`;
      for (const el of [label, ...label.querySelectorAll('*')]) {
        if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible')
          bad.push(`${where}: text ${el.scrollWidth} px in ${el.clientWidth} px`);
      }
      const box = label.querySelector('input');
      if (box) {
        const r = box.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        if (!r.width || hit !== box) bad.push(`${where}: its ${box.type} is covered by <${hit && hit.tagName}>`);
      }
    }
  }
  return {count, bad};
}"""

JS_ACTIVE_CELL = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"


# --------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def axe_script() -> Path:
    """axe.min.js from npm, cached in .cache/static-page/ (the package is 3 MB: not committed)."""
    cached = build_static.CACHE / f"axe-core-{AXE_VERSION}" / "package" / "package.json"
    require(cached.exists() or shutil.which("npm") is not None,
            "npm is missing (it fetches axe-core once): sudo apt-get install npm")
    return build_static.npm_package("axe-core", AXE_VERSION) / "axe.min.js"


@pytest.fixture(scope="module")
def shots(artifacts_dir) -> Path:
    folder = artifacts_dir / "reader"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def reader_server(lab_servers):
    """One JupyterLab (Chinese UI) for the module: the lesson and the real-heads lab are opened on it."""
    return lab_servers({"reader": ("zh_CN", "light")})["reader"]


@pytest.fixture(scope="module")
def lesson(reader_server, open_browser, e2e_report):
    """The lesson after Restart & Run All at 1024×768 with the file browser open (light theme), on one page."""
    server = reader_server
    with open_browser() as browser:
        context = browser.new_context(viewport={"width": SMALL[0], "height": SMALL[1]}, locale="zh-CN")
        page = context.new_page()
        page.set_default_timeout(scaled(60) * 1000)
        outside = []
        page.on("request", lambda r: urlsplit(r.url).hostname in server.allowed_hosts
                or r.url.startswith(("data:", "blob:")) or outside.append(r.url))
        page.goto(f"{server.url}/lab/tree/{server.notebook}?reset&token={server.token}")
        run_all = page.locator("[data-command='notebook:restart-run-all']").first
        run_all.wait_for(state="visible")
        page.wait_for_function("() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel")
        server.wait_kernel_idle()
        page.evaluate(JS_HOOK_KERNEL)
        started = time.perf_counter()
        run_all.click()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        state = run_all_finished(page, server, JS_RUN_STATE)
        assert not state["bad"], state["bad"]
        e2e_report(f"[reader] Run All {time.perf_counter() - started:.1f} s")
        page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")  # JupyterLab's default
        page.locator("#filebrowser").wait_for(state="visible")
        page.evaluate(JS_SETTLED)
        yield page
        assert not outside, f"requests to other hosts: {outside}"
        context.close()


def set_theme(page, theme: str) -> None:
    page.evaluate("name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})",
                  THEME_NAMES[theme])
    page.wait_for_function("name => document.body.dataset.jpThemeName === name", arg=THEME_NAMES[theme])
    page.evaluate(JS_SETTLED)  # JupyterLab names the theme once its CSS has loaded; then let the page repaint


def slider(page, label: str):
    found = page.locator(".jp-Notebook .lesson-slider").filter(has=page.locator("label").get_by_text(label,
                                                                                                      exact=True))
    assert found.count() == 1, f"expected one slider labelled {label!r}, found {found.count()}"
    return found


def tab_to(page, control) -> None:
    """Focus the control before ``control`` in Tab order, press Tab, and require focus on ``control``."""
    control.scroll_into_view_if_needed()
    assert control.evaluate(JS_FOCUS_BEFORE) == "ok", "control is not in the Tab order"
    page.keyboard.press("Tab")
    assert control.evaluate("el => document.activeElement === el"), "Tab did not reach the control"


def wait_text(page, locator, pattern: str, what: str) -> None:
    try:
        page.wait_for_function("([el, p]) => new RegExp(p).test(el.innerText)", arg=[locator.element_handle(), pattern],
                               timeout=update_ms())
    except Exception as exc:
        raise AssertionError(f"{what}: no {pattern!r} within {update_ms()} ms; shows:\n"
                             f"{locator.inner_text()[:500]}") from exc


def output_of(page, inner):
    """The output area of the code cell that holds ``inner``."""
    return inner.first.locator("xpath=ancestor::div[contains(@class, 'jp-CodeCell')]").locator(".jp-Cell-outputWrapper")


# --------------------------------------------------------------------------------------------- tests
def test_axe_finds_no_serious_or_critical_problem_in_any_output(lesson, axe_script, e2e_report):
    page = lesson
    page.add_script_tag(path=str(axe_script))
    found = page.evaluate("""async () => {
      const areas = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
      const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
      const bad = [];
      for (const area of areas) {
        area.scrollIntoView();
        const result = await axe.run(area, {resultTypes: ['violations']});
        for (const v of result.violations) if (['serious', 'critical'].includes(v.impact))
          for (const n of v.nodes) bad.push(`cell ${cells.indexOf(area.closest('.jp-Cell'))}: ${v.id} (${v.impact}) `
                                           + `${n.target.join(' ')}: ${n.failureSummary.split('\\n')[1] || ''}`);
      }
      return {areas: areas.length, bad};
    }""")
    expected = built_lesson()["outputs"]  # as many as the built notebook stores
    assert found["areas"] >= expected, f"only {found['areas']} of {expected} output areas: the lesson did not run"
    e2e_report(f"[reader] axe-core {AXE_VERSION}: {found['areas']} output areas, "
               f"{len(found['bad'])} serious/critical findings")
    assert not found["bad"], "axe-core, serious or critical:\n" + "\n".join(found["bad"])


def test_every_slider_is_named_and_moves_with_the_arrow_keys(lesson):
    """Each lesson slider is a native range input whose accessible name is its Chinese label."""
    page = lesson
    sliders = page.locator(".jp-Notebook .lesson-slider input[type=range]")
    expected = built_lesson()["sliders"]  # the built notebook's sliders (the explorer is in its lab)
    assert sliders.count() == len(expected), (sliders.count(), expected)
    names = sliders.evaluate_all("els => els.map(e => e.labels.length ? e.labels[0].textContent : '')")
    assert sorted(names) == sorted(expected), names
    assert page.locator(".jp-Notebook .noUi-handle").count() == 0, "an ipywidgets slider (unnamed handle) is left"


def test_keyboard_only_through_every_interactive_section(lesson, shots):
    page = lesson
    # §2 demo: Tab to 「2 个头」, Space.
    two = page.locator(".jp-Notebook .widget-toggle-button", has_text="2 个头")
    out = output_of(page, two)
    tab_to(page, two)
    page.keyboard.press("Space")
    wait_text(page, out, r"指代（小红）(\d+)%.*句法（主语小明）\1%", "§2 demo, 2 个头 by keyboard")
    # Tab on to 锐度, ArrowRight: the bars' name (aria-label, from their numbers) follows, focus stays.
    sharp = slider(page, "锐度").locator("input")
    tab_to(page, sharp)
    before = sharp.input_value()
    page.keyboard.press("ArrowRight")
    assert sharp.input_value() != before, "ArrowRight did not move 锐度"
    page.wait_for_function("el => /锐度 4.5）/.test(el.querySelector('[role=img]')?.getAttribute('aria-label'))",
                           arg=out.element_handle(), timeout=update_ms())
    assert sharp.evaluate("el => document.activeElement === el"), "focus left the 锐度 slider"
    # §5 lab: ArrowLeft 8 -> 4, and focus stays on the slider (the notebook's arrow shortcuts do not take it).
    heads = slider(page, "头数 h").locator("input")
    out = output_of(page, heads)
    tab_to(page, heads)
    page.keyboard.press("ArrowLeft")
    wait_text(page, out, r"d_k\s*=\s*128\b", "§5 lab, ArrowLeft")
    page.keyboard.press("ArrowDown")  # a range input takes ArrowDown too: 4 -> 2
    wait_text(page, out, r"d_k\s*=\s*256\b", "§5 lab, ArrowDown")
    assert heads.evaluate("el => document.activeElement === el"), "focus left the slider"
    page.keyboard.press("End")
    wait_text(page, out, r"d_k\s*=\s*8\b", "§5 lab, End")
    # §6 explorer (when the weights package is installed: its cell then has the 层 slider).
    layer = page.locator(".jp-Notebook .lesson-slider").filter(has=page.locator("label").get_by_text("层", exact=True))
    if layer.count():
        out = output_of(page, layer)
        before = out.inner_text()
        tab_to(page, layer.locator("input"))
        page.keyboard.press("ArrowRight")
        page.wait_for_function("([el, t]) => el.innerText !== t", arg=[out.element_handle(), before],
                               timeout=update_ms())
    # A self-test question: Tab to the answer, type, Tab to 提交, Enter.
    quiz = page.locator(".jp-Notebook .lesson-quiz-Q2")
    assert quiz.count() == 1
    box = quiz.locator("input[type=text], textarea").first
    tab_to(page, box)
    page.keyboard.type("32")  # d_k at h = 16
    radios = quiz.locator("input[type=radio]")
    tab_to(page, radios.first)  # the group is one Tab stop: its first option while none is chosen
    page.keyboard.press("ArrowDown")  # 不变
    page.wait_for_function("el => el.checked", arg=radios.nth(1).element_handle(), timeout=update_ms())
    submit = quiz.get_by_role("button", name="提交")
    tab_to(page, submit)
    page.keyboard.press("Enter")
    wait_text(page, quiz, "正确", "quiz Q2 by keyboard")
    # A code exercise: Enter edits the selected cell, the keyboard replaces its code, Shift+Enter runs it.
    exercise = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="def my_count_multiplies")
    exercise.locator(".jp-InputPrompt").first.click()  # select the cell (command mode), as a learner's j/k would
    page.keyboard.press("Enter")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text('def my_count_multiplies(n, d_model, h):\n    return 3 * n * d_model**2\n\n\n'
                              'exercises.check("count_multiplies", my_count_multiplies)')
    page.keyboard.press("Shift+Enter")
    wait_text(page, exercise.locator(".jp-Cell-outputWrapper"), "应为", "exercise by keyboard")
    # §8 interview: Tab to the answer box, type, Tab to 提交, Enter.
    interview = page.locator(".jp-Notebook .lesson-interview")
    answer = interview.locator("textarea")
    tab_to(page, answer)
    page.keyboard.type("多个头可以同时关注不同位置、不同子空间的信息，单头只能加权平均。")
    tab_to(page, interview.get_by_role("button", name="写好了，看要点"))
    page.keyboard.press("Enter")
    wait_text(page, interview, "要点对照", "interview: the rubric after writing, by keyboard")
    tick = interview.locator(".widget-checkbox input").first
    tab_to(page, tick)
    page.keyboard.press("Space")  # the learner ticks a point they covered
    tab_to(page, interview.get_by_role("button", name="记录自评"))
    page.keyboard.press("Enter")
    wait_text(page, interview, "自评", "interview: self-assessment recorded by keyboard")
    tab_to(page, interview.get_by_role("button", name="看参考答案"))
    page.keyboard.press("Space")
    wait_text(page, interview, "参考答案（核心", "interview: reference answer revealed by keyboard")
    # The summary: it counts what the keyboard did; Tab to 导出进度, Enter.
    summary = page.locator(".jp-Notebook .lesson-quiz-progress")
    wait_text(page, summary, "面试自检", "summary")
    export = summary.get_by_role("button", name="导出进度")
    tab_to(page, export)
    page.keyboard.press("Enter")
    wait_text(page, summary, "已导出", "summary export by keyboard")
    summary.screenshot(path=str(shots / "keyboard_summary.png"))


def test_every_control_has_a_name_in_chromiums_accessibility_tree(lesson, e2e_report):
    """Counted from the computed names Chromium gives a screen reader (not axe-core's verdict): text boxes, radio
    groups and every button, box and slider; toggle buttons also say whether they are pressed."""
    page = lesson
    found = page.evaluate(JS_MARK_CONTROLS)
    assert len(found) > 50, f"only {len(found)} controls: the lesson did not run"
    cdp = page.context.new_cdp_session(page)
    unnamed, roles = [], {}
    try:
        for i, what in enumerate(found):
            query = f"document.querySelector('[data-lesson-control=\"{i}\"]')"
            handle = cdp.send("Runtime.evaluate", {"expression": query})
            tree = cdp.send("Accessibility.getPartialAXTree", {"objectId": handle["result"]["objectId"],
                                                                "fetchRelatives": False})
            node = tree["nodes"][0]
            if node.get("ignored"):
                continue
            role = node.get("role", {}).get("value", "")
            roles[role] = roles.get(role, 0) + 1
            if not str(node.get("name", {}).get("value", "")).strip():
                unnamed.append(f"{role}: {what}")
    finally:
        cdp.detach()
    unpressed = page.evaluate("""() => [...document.querySelectorAll(
      '.jp-Notebook .jp-OutputArea-output button.widget-toggle-button')]
      .filter(b => !['true', 'false'].includes(b.getAttribute('aria-pressed'))).map(b => b.innerText)""")
    e2e_report(f"[reader] accessibility tree: {sum(roles.values())} controls {roles}, {len(unnamed)} unnamed, "
               f"{len(unpressed)} toggle buttons without aria-pressed")
    assert roles.get("radiogroup", 0) >= 3, f"no named radio groups: {roles}"
    assert not unnamed, "controls without an accessible name:\n" + "\n".join(unnamed)
    assert not unpressed, f"toggle buttons without aria-pressed: {unpressed}"


# Per question (its id: its box's class lesson-quiz-<id>): its groups and primary button, its options' inputs and
# text elements, each marked data-lesson-name so the test can ask Chromium's accessibility tree for it.
JS_MARK_QUIZ_NAMES = """() => [...document.querySelectorAll('.jp-Notebook .lesson-quiz-prompt')].map((p, i) => {
  const quiz = p.closest('.lesson-quiz'), marks = [];
  const mark = (el, kind) => marks.push(el.dataset.lessonName = `${kind}-${i}-${marks.length}`);
  quiz.querySelectorAll('[role=radiogroup], [role=group], button.mod-primary').forEach(el => mark(el, 'named'));
  const shown = (el) => el.parentElement.getClientRects().length;  // not a rubric's boxes, hidden until an answer
  [...quiz.querySelectorAll('.widget-radio-box label > *, .widget-checkbox label > *')].filter(shown)
    .forEach(el => mark(el, el.matches('input') ? 'input' : 'text'));
  return {qid: [...quiz.classList].find(c => /^lesson-quiz-./.test(c)).slice('lesson-quiz-'.length), marks};
})"""


def test_a_quiz_names_its_groups_and_submit_by_its_question_and_reads_each_option_once(lesson, e2e_report):
    """Chromium's computed names: every radio group, box group and 提交 of a question names its id; each option is
    named once (its input), its text element left out of the tree."""
    page = lesson
    quizzes = page.evaluate(JS_MARK_QUIZ_NAMES)
    assert len(quizzes) >= 10, f"only {len(quizzes)} questions: the lesson did not run"
    cdp = page.context.new_cdp_session(page)
    wrong, roles = [], {}
    try:
        for quiz in quizzes:
            for mark in quiz["marks"]:
                query = f"document.querySelector('[data-lesson-name=\"{mark}\"]')"
                handle = cdp.send("Runtime.evaluate", {"expression": query})
                found = cdp.send("Accessibility.getPartialAXTree", {"objectId": handle["result"]["objectId"],
                                                                     "fetchRelatives": False})["nodes"][0]
                role = found.get("role", {}).get("value", "")
                name = str(found.get("name", {}).get("value", ""))
                kind = mark.split("-")[0]
                roles[f"{kind} {role}"] = roles.get(f"{kind} {role}", 0) + 1
                if kind == "named" and not re.search(rf"(^|\s){re.escape(quiz['qid'])}($|\s|（)", name):
                    wrong.append(f"{quiz['qid']} {role} without its question: {name!r}")
                if (kind == "input" and not name.strip()) or (kind == "text" and not found.get("ignored")):
                    wrong.append(f"{quiz['qid']} option {kind} {role}: {name!r}")
    finally:
        cdp.detach()
    e2e_report(f"[reader] quiz names: {len(quizzes)} questions, {roles}, {len(wrong)} wrong")
    assert roles.get("named group", 0) >= 1 and roles.get("named radiogroup", 0) >= 3, roles
    assert roles.get("named button", 0) == len(quizzes), roles
    assert not wrong, "\n".join(wrong)


def test_the_verdict_after_submit_is_read_from_a_polite_live_region(lesson):
    page = lesson
    quiz = page.locator(".jp-Notebook .lesson-quiz-Q4")
    assert quiz.count() == 1
    quiz.scroll_into_view_if_needed()
    feedback = quiz.locator(".lesson-live").first
    live = feedback.evaluate("el => { const r = el.closest('[aria-live]'); return r && r.getAttribute('aria-live'); }")
    assert live == "polite", f"the feedback is not inside a polite live region (aria-live={live!r})"
    handle = feedback.element_handle()
    before = feedback.inner_text()
    quiz.locator("input[type=radio]").first.check()
    quiz.get_by_role("button", name="提交").click()
    page.wait_for_function("([el, t]) => el.isConnected && el.innerText.trim() && el.innerText !== t",
                           arg=[handle, before], timeout=update_ms())
    assert handle.evaluate("el => el.closest('[aria-live=polite]') !== null"), "the live region was replaced"
    # The §5 lab: one live summary says h, d_k and what the pictures now show.
    heads = slider(page, "头数 h").locator("input")
    lab = output_of(page, heads)
    summary = lab.locator(".lesson-live").first
    assert summary.evaluate("el => el.closest('[aria-live=polite]') !== null")
    text = summary.evaluate("el => el.textContent")
    assert re.search(r"\b\d+\D+d_k = \d+", text), text  # h heads, each d_k wide


def test_arrow_keys_act_inside_a_quiz_radio_without_moving_the_notebook(lesson):
    page = lesson
    quiz = page.locator(".jp-Notebook .lesson-quiz-S6")
    radios = quiz.locator("input[type=radio]")
    radios.first.scroll_into_view_if_needed()
    radios.first.check()
    radios.first.focus()
    cell = page.evaluate(JS_ACTIVE_CELL)
    page.keyboard.press("ArrowDown")
    page.wait_for_function("el => el.checked", arg=radios.nth(1).element_handle(), timeout=update_ms())
    assert page.evaluate(JS_ACTIVE_CELL) == cell, "ArrowDown on a quiz radio moved the notebook's active cell"
    assert radios.nth(1).evaluate("el => document.activeElement === el"), "focus left the radio group"


# The checked state of every quiz radio outside the question marked data-e2e-own.
JS_OTHER_RADIOS = """() => [...document.querySelectorAll('.jp-Notebook .lesson-quiz input[type=radio]')]
  .filter(r => !r.closest('[data-e2e-own]')).map(r => r.checked)"""


def test_a_quiz_radio_group_keeps_its_arrow_keys_and_is_one_tab_stop(lesson):
    """A learner's bug: ArrowDown on S3c's last option ticked the next question's (S4b's) first option."""
    page = lesson
    quiz = page.locator(".jp-Notebook .lesson-quiz-S3c")
    assert quiz.count() == 1
    quiz.evaluate("el => el.setAttribute('data-e2e-own', '')")
    radios = quiz.locator("input[type=radio]")
    others = page.evaluate(JS_OTHER_RADIOS)
    assert others, "no other quiz radios to compare with"
    radios.last.scroll_into_view_if_needed()
    radios.last.check()
    page.keyboard.press("ArrowDown")  # past the last option: round to the first of the same question
    page.wait_for_function("el => el.checked", arg=radios.first.element_handle(), timeout=update_ms())
    assert radios.first.evaluate("el => document.activeElement === el"), "focus left the question's options"
    page.keyboard.press("ArrowUp")  # and back, from the first to the last
    page.wait_for_function("el => el.checked", arg=radios.last.element_handle(), timeout=update_ms())
    assert page.evaluate(JS_OTHER_RADIOS) == others, "an arrow key changed another question's answer"
    page.keyboard.press("Tab")  # one Tab leaves the options
    assert not quiz.evaluate("el => el.contains(document.activeElement) && document.activeElement.type === 'radio'")
    page.keyboard.press("Shift+Tab")  # and one comes back, to the chosen option
    assert radios.last.evaluate("el => document.activeElement === el"), "Shift+Tab did not return to the choice"


REAL_HEADS_LAB = "lab_real_heads.ipynb"


@pytest.fixture(scope="module")
def real_heads_lab(lesson, reader_server, e2e_report):
    """The optional real-heads lab (the §6 explorer lives there) after its own Restart & Run All, in a second page of
    the lesson's browser, on the same server (its own workspace, so the lesson's page keeps its layout)."""
    server = dataclasses.replace(reader_server, notebook=REAL_HEADS_LAB)
    page = lesson.context.new_page()
    page.set_default_timeout(scaled(60) * 1000)
    try:
        page.goto(f"{server.url}/lab/workspaces/reader-lab/tree/{REAL_HEADS_LAB}?reset&token={server.token}")
        run_all = page.locator("[data-command='notebook:restart-run-all']").first
        run_all.wait_for(state="visible")
        page.wait_for_function("() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel")
        server.wait_kernel_idle()
        page.evaluate(JS_HOOK_KERNEL)
        started = time.perf_counter()
        run_all.click()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        state = run_all_finished(page, server, JS_RUN_STATE)
        assert not state["bad"], state["bad"]
        e2e_report(f"[reader] {REAL_HEADS_LAB} Run All {time.perf_counter() - started:.1f} s")
        yield page
    finally:
        page.close()


def test_arrow_keys_drive_the_explorer_without_moving_the_notebook_and_it_never_shrinks(real_heads_lab, shots,
                                                                                          e2e_report):
    page = real_heads_lab
    layer = page.locator(".jp-Notebook .lesson-slider").filter(has=page.locator("label").get_by_text("层", exact=True))
    assert layer.count() == 1, f"{REAL_HEADS_LAB}: expected the explorer's 层 slider, found {layer.count()}"
    out = output_of(page, layer)
    select = out.locator("select").first  # the sentence: new tokens, a new map, new bars
    select.scroll_into_view_if_needed()
    select.focus()
    picture = "el => (el.querySelector('svg[role=img]') || {getAttribute: () => ''}).getAttribute('aria-label')"
    cell, before, height = page.evaluate(JS_ACTIVE_CELL), out.inner_text(), out.evaluate(JS_HEIGHT)
    alt = out.evaluate(picture)
    page.keyboard.press("ArrowDown")
    page.wait_for_function(f"([el, t, a]) => el.innerText !== t && ({picture})(el) !== a",  # text and picture new
                           arg=[out.element_handle(), before, alt], timeout=update_ms())
    assert page.evaluate(JS_ACTIVE_CELL) == cell, "ArrowDown on the explorer moved the notebook's active cell"
    assert select.evaluate("el => document.activeElement === el"), "focus left the explorer's dropdown"
    # The explorer reserves the tallest sentence's height (issue 30: it dropped from 963 to 723 px, later grew 22 px).
    page.evaluate(JS_SETTLED)
    after = out.evaluate(JS_HEIGHT)
    # The layer and head sliders: arrow keys move them inside the widget, and the widget keeps its height.
    jumps = []
    for label in ("层", "头"):
        moved, heights = _move_slider(page, label, ["ArrowRight", "End", "Home"])
        assert moved >= 2, f"{label}: the keys moved the explorer only {moved} times: nothing was measured"
        assert page.evaluate(JS_ACTIVE_CELL) == cell, f"arrow keys on the explorer's {label} moved the active cell"
        if max(heights) - min(heights) > 1:
            jumps.append(f"{label}: heights {sorted(heights)} px while it moved")
    out.screenshot(path=str(shots / "lab_real_heads_explorer.png"))
    e2e_report(f"[reader] explorer height {height} -> {after} px when the sentence changed; slider jumps: {jumps}")
    assert abs(after - height) <= 1, f"the explorer went from {height} to {after} px when the sentence changed"
    assert not jumps, "\n".join(jumps)


@pytest.mark.parametrize("theme", ["light", "dark", "hc"])
def test_every_figure_text_is_at_least_4_5_to_1_in_every_theme(lesson, theme, e2e_report):
    page = lesson
    set_theme(page, theme)
    page.set_viewport_size({"width": LARGE[0], "height": LARGE[1]})
    found = page.evaluate(JS_FIGURE_CONTRAST)
    e2e_report(f"[reader] {theme}: {found['seen']['texts']} figure texts in {found['seen']['figures']} figures, "
               f"{len(found['low'])} under 4.5:1 ({found['seen']['onImage']} over a raster, not measured)")
    set_theme(page, "light")
    # Every figure the notebook shows was measured, and at least the texts of those no slider redraws.
    built = built_lesson()
    assert found["seen"]["figures"] >= built["figures"] and found["seen"]["texts"] >= built["fixed_texts"], \
        (found["seen"], built)
    assert not found["seen"]["empty"], f"figures with no text measured (cells {found['seen']['empty']})"
    assert not found["low"], f"{theme}: figure text under 4.5:1:\n" + "\n".join(found["low"])


# Geometry checks run in one theme: JupyterLab's themes change colours, not sizes (contrast: every theme, above;
# the dark theme's layout at 1024: the zh_CN-dark browser flow).
@pytest.mark.parametrize("theme", ["light"])
def test_no_choice_is_cut_and_every_circle_shows_at_1024(lesson, theme, shots, e2e_report):
    page = lesson
    set_theme(page, theme)
    page.set_viewport_size({"width": SMALL[0], "height": SMALL[1]})
    assert page.locator("#filebrowser").is_visible(), "the file browser should be open (JupyterLab's default)"
    found = page.evaluate(JS_CHOICES)
    quiz = page.locator(".jp-Notebook .lesson-quiz-S3c")
    quiz.scroll_into_view_if_needed()
    quiz.screenshot(path=str(shots / f"{theme}_1024_choices_S3c.png"))
    breaks = page.evaluate("""() => [...new Set([...document.querySelectorAll(
      '.jp-Notebook .jp-OutputArea-output pre')].map(p => getComputedStyle(p).wordBreak))]""")
    e2e_report(f"[reader] {theme} 1024×768: {found['count']} choices, {len(found['bad'])} cut or covered; "
               f"printed text word-break {breaks}")
    set_theme(page, "light")
    assert breaks == ["normal"], f"printed text may wrap inside a word (word-break {breaks})"
    assert found["count"] > 40
    assert not found["bad"], "\n".join(found["bad"])


WIDGET_MOVES = [  # (label of a slider in the widget, keys pressed one after another); the explorer: its own test
    ("锐度", ["ArrowRight"] * 3 + ["Home", "End"]),
    ("头数 h", ["Home", "ArrowRight", "ArrowRight", "End", "ArrowLeft"]),
    ("放大第几个头", ["ArrowRight", "End", "Home"]),
]


def _move_slider(page, label: str, keys) -> tuple[int, set]:
    """Press ``keys`` on the slider labelled ``label``: how many changed its widget's output, and the heights seen."""
    control = slider(page, label).locator("input")
    out = output_of(page, slider(page, label))
    control.scroll_into_view_if_needed()
    control.focus()
    heights, moved = {out.evaluate(JS_HEIGHT)}, 0
    for key in keys:
        before = out.evaluate("el => [...el.querySelectorAll('img')].map(i => i.src).join('|') + el.innerText")
        value = control.input_value()
        page.keyboard.press(key)
        if control.input_value() == value:  # at an end of the range the key changes nothing: nothing to wait for
            continue
        page.wait_for_function("([el, b]) => [...el.querySelectorAll('img')].map(i => i.src).join('|') "
                               "+ el.innerText !== b", arg=[out.element_handle(), before], timeout=update_ms())
        moved += 1
        page.evaluate(JS_SETTLED)
        heights.add(out.evaluate(JS_HEIGHT))
    return moved, heights


@pytest.mark.parametrize("theme", ["light"])
def test_at_1024_with_the_file_browser_open_nothing_is_cut_scaled_or_jumps(lesson, theme, shots, e2e_report):
    page = lesson
    set_theme(page, theme)
    page.set_viewport_size({"width": SMALL[0], "height": SMALL[1]})
    assert page.locator("#filebrowser").is_visible(), "the file browser should be open (JupyterLab's default)"
    page.evaluate(JS_SETTLED)
    assert sorted(label for label, _keys in WIDGET_MOVES) == sorted(built_lesson()["sliders"]), \
        "every slider of the built notebook is moved here"
    jumps = []
    for label, keys in WIDGET_MOVES:
        moved, heights = _move_slider(page, label, keys)
        assert moved >= 2, f"{label}: the keys moved the widget only {moved} times: nothing was measured"
        if max(heights) - min(heights) > 1:
            jumps.append(f"{label}: heights {sorted(heights)} px while its controls moved")
    problems = page.evaluate(JS_LAYOUT)
    page.screenshot(path=str(shots / f"{theme}_1024_end.png"))
    e2e_report(f"[reader] {theme} 1024×768: {len(problems['scaled'])} pictures under {MIN_SCALE:.0%}, "
               f"{len(problems['clipped'])} clipped, {len(problems['formulas'])} cut formulas, {len(jumps)} jumps")
    report = {"widget height changes": jumps, **problems}
    assert not any(report.values()), "\n".join(f"{k}:\n  " + "\n  ".join(v) for k, v in report.items() if v)


# Each screenshot of every output cell costs ~1 s: the narrow light window and the wide high-contrast one (the dark
# theme's screens at both sizes come from the zh_CN-dark browser flow).
SCREENS = [("light", SMALL), ("hc", LARGE)]


def test_screenshots_in_two_configurations_and_placeholder_in_high_contrast(lesson, shots, e2e_report):
    """Screens to look at (light 1024, high contrast 1400), and one check they show: an empty answer box's
    placeholder is not drawn like typed text in Dark High Contrast."""
    page = lesson
    for theme, size in SCREENS:
        set_theme(page, theme)
        page.set_viewport_size({"width": size[0], "height": size[1]})
        page.evaluate(JS_SETTLED)
        cells = page.locator(".jp-Notebook .jp-CodeCell").filter(has=page.locator(".jp-OutputArea-output"))
        for i in range(cells.count()):
            cell = cells.nth(i)
            if cell.locator(".jupyter-widgets, img, table").count():
                cell.scroll_into_view_if_needed()
                cell.screenshot(path=str(shots / f"{theme}_{size[0]}_cell{i:03d}.png"))
    set_theme(page, "hc")
    box = page.locator(".jp-Notebook .lesson-quiz input[type=text]").first
    box.scroll_into_view_if_needed()
    styles = box.evaluate("""el => { el.value = '';
      const p = getComputedStyle(el, '::placeholder'), t = getComputedStyle(el);
      return {placeholder: p.color, text: t.color, style: p.fontStyle, opacity: p.opacity}; }""")
    e2e_report(f"[reader] high contrast placeholder: {styles}")
    dimmed = styles["style"] == "italic" and float(styles["opacity"]) < 0.8
    assert styles["placeholder"] != styles["text"] or dimmed, styles
    set_theme(page, "light")


def test_static_page_opens_offline_with_every_figure_widget_and_alt_text(lesson, tmp_path, shots, e2e_report):
    if shutil.which("npm") is None and not build_static.CACHE.exists():
        require(False, "npm is missing (the static page's scripts come from npm once)")
    site = tmp_path / "site"
    page_path = build_static.build(site)
    folder = site.resolve().as_uri() + "/"
    requests, outside = [], []
    # A second context in the lesson's browser (Playwright's sync API allows one instance per thread).
    context = lesson.context.browser.new_context(viewport={"width": LARGE[0], "height": LARGE[1]})
    context.set_default_timeout(scaled(60) * 1000)  # as the lesson's own pages: the whole page loads slowly when busy

    def route(r):
        url = r.request.url
        requests.append(url)
        if url.startswith((folder, "data:", "blob:", "about:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.goto(page_path.as_uri())
    page.wait_for_function("n => document.querySelectorAll('.lesson-slider input[type=range]').length >= n",
                           arg=len(built_lesson()["sliders"]), timeout=scaled(30) * 1000)
    # MathJax typesets after the widgets
    page.wait_for_function("() => document.querySelectorAll('.MathJax_Display, .MathJax').length > 5",
                           timeout=scaled(30) * 1000)
    found = page.evaluate("""() => ({
      sliders: document.querySelectorAll('.lesson-slider input[type=range]').length,
      errors: document.body.innerText.split('Error displaying widget').length - 1,
      // raster pictures, and the themed SVG pictures and HTML bars (role=img, named by aria-label)
      images: [...document.images].map(i => ({w: i.naturalWidth,
                                              alt: i.alt || i.title || i.getAttribute('aria-label') || ''}))
        .concat([...document.querySelectorAll('[role=img]')].filter(s => !s.parentElement.closest('svg'))
          .map(s => ({w: s.getBoundingClientRect().width, alt: s.getAttribute('aria-label') || ''}))),
      math: document.querySelectorAll('.MathJax_Display, .MathJax').length,
      note: !!document.querySelector('.lesson-static-note')})""")
    # Every control is inert: no kernel answers it, so nothing may move under the learner's hand.
    live = page.evaluate("""() => [...document.querySelectorAll(`.jupyter-widgets input, .jupyter-widgets select,
      .jupyter-widgets textarea, .jupyter-widgets button, .lesson-slider input`)].filter(el => !el.disabled)
      .map(el => `${el.tagName.toLowerCase()} ${(el.innerText || el.value || '').slice(0, 20)}`)""")
    lab = page.locator(".lesson-slider").filter(has=page.locator("label").get_by_text("头数 h", exact=True))
    before = lab.locator("input").input_value()
    lab.locator("input").focus()
    page.keyboard.press("ArrowLeft")
    after = lab.locator("input").input_value()
    page.screenshot(path=str(shots / "static_page_top.png"))
    context.close()
    e2e_report(f"[reader] static page: {len(requests)} requests, {len(outside)} outside its folder, "
               f"{found['sliders']} sliders, {len(found['images'])} images, {found['math']} formulas")
    assert not outside, "requests outside the page's folder:\n" + "\n".join(outside)
    assert not live, f"{len(live)} controls still live on the static page: {live[:10]}"
    assert before == after, f"ArrowLeft moved the static page's slider from {before} to {after}"
    assert found["errors"] == 0 and found["note"] and found["math"] > 5
    assert all(img["w"] > 0 for img in found["images"]), found["images"]
    assert len(found["images"]) >= built_lesson()["pictures"], (found["images"], built_lesson())
    default = "No description has been provided for this image"
    missing = [i for i, img in enumerate(found["images"]) if not img["alt"].strip() or img["alt"] == default]
    assert not missing, f"{len(missing)} of {len(found['images'])} pictures have no alt text on the static page"
