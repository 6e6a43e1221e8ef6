"""The learner's flow in a real browser: open the lesson in JupyterLab, Restart & Run All, slide the head count,
answer a self-test question wrongly and then rightly -- once with the English UI and once with the Chinese UI.

Run:  .venv/bin/python -m pytest tests/e2e -v      (screenshots: artifacts/e2e/<timestamp>/<locale>/NN_step.png)
The two flows run side by side, each with its own JupyterLab server and Chromium (see ``flows``). The summary at the
end of pytest's output prints the screenshot folder and, per language, the open / Run All / whole-flow seconds and
the milliseconds from the key press to the updated d_k text and attention maps.
Variables: CI=true (a missing browser fails instead of skipping), CHROMIUM=/path/to/chromium,
DAY11_E2E_SERIAL=1 (one flow after the other), DAY11_E2E_NOTEBOOK=/tmp/draft.ipynb (serve a draft instead).
"""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from helpers import HANG_CEILING_S, scaled, wait_for

# One flow per (UI language, theme, first window size); each flow also looks at the other size after driving
# every widget, so both themes and both sizes are seen without a second Restart & Run All.
FLOWS = {
    "en-light": {"locale": "en", "theme": "light", "sizes": [(1400, 1000), (1024, 768)]},
    "zh_CN-dark": {"locale": "zh_CN", "theme": "dark", "sizes": [(1024, 768), (1400, 1000)]},
}
THEME_NAMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
MIN_CONTRAST = 4.5  # WCAG 2 AA for body text
# Hang detectors, not speed goals (the times are reported in the summary). Run All waits for its cells, failing only
# when no cell has finished for RUN_STALL_S stretched by the machine's load (helpers.wait_for), or after
# helpers.HANG_CEILING_S. One slider step / one quiz answer may take UPDATE_S, stretched the same way (by the load
# when the wait starts: update_ms()).
RUN_STALL_S = 180  # the longest single cell (§7's training) with room for a machine running two suites
UPDATE_S = 30


def update_ms() -> int:
    return int(scaled(UPDATE_S) * 1000)


SLIDER_LABEL = "头数 h"
# A widget's readout keeps its tallest height so nothing jumps as the controls move; what it keeps beyond its text
# is at most a few lines (a height kept from before a window resize left 200-350 px of blank under the text).
MAX_KEPT_BLANK_PX = 80
QUIZ_QUESTION = "Q2"

# Console errors we accept, each with the reason. Keep this empty unless a message is understood and harmless.
IGNORED_CONSOLE_ERRORS: list[tuple[str, str]] = [
    (
        r"^console: Could not restore the debugger state: Canceled future for debug_request message",
        "JupyterLab's debugger extension asks a newly connected kernel for its debug state; the test clicks "
        "Restart & Run All within milliseconds of the kernel going idle, and the restart cancels that in-flight "
        "question (seen in about half of the runs). JupyterLab's own race, not the lesson's; a learner never sees it.",
    ),
]
# Kernel stderr we accept (regex on "kernel stderr (<parent msg type>): <text>"), each with the reason.
IGNORED_KERNEL_STDERR: list[tuple[str, str]] = [
    (
        r"^kernel stderr \((comm_msg|comm_open|\?)\): No such comm"
        r"( target registered: jupyter\.widget\.control)?\b",
        "Restart & Run All: JupyterLab's widget manager re-contacts the widgets stored in the notebook (and the "
        "jupyter.widget.control comm) before the fresh kernel has imported ipywidgets; the new kernel logs that "
        "it has no such comm. Not caused by the lesson, shown only in the Log Console, never in a cell.",
    ),
]

# --- JavaScript run inside the page (window.jupyterapp is exposed by the server fixture) -------------------
# Resolves once the browser has laid out and painted twice: after a resize, a theme's CSS or a widget's update,
# what is measured next is what the learner sees (instead of a fixed sleep).
JS_SETTLED = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"
JS_HOOK_KERNEL = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  window.__e2e = {queued: false, iopub: []};
  // Everything the kernel reports (also callback errors that never reach a cell) passes through here.
  panel.sessionContext.iopubMessage.connect((_, msg) => {
    const t = msg.header.msg_type, parent = (msg.parent_header || {}).msg_type || '?';
    if (t === 'error') window.__e2e.iopub.push(`kernel error (${parent}): ${msg.content.ename}: ${msg.content.evalue}`);
    if (t === 'stream' && msg.content.name === 'stderr')
      window.__e2e.iopub.push(`kernel stderr (${parent}): ${msg.content.text}`);
  });
  // Restart & Run All queues every cell at once ([*]); seeing that proves the run started.
  const nb = panel.content.node;
  const seen = () => { if ([...nb.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*')))
                         window.__e2e.queued = true; };
  new MutationObserver(seen).observe(nb, {subtree: true, childList: true, characterData: true});
}"""

JS_RUN_STATE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.model.cells;
  let code = 0, counted = 0, bad = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    code += 1;
    if (c.executionCount !== null) counted += 1;
    for (const o of c.outputs.toJSON()) {
      if (o.output_type === 'error') bad.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
      if (o.output_type === 'stream' && o.name === 'stderr') bad.push(`cell ${i} stderr: ${o.text}`);
    }
  }
  const running = [...panel.content.node.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'));
  return {queued: window.__e2e.queued, code, counted, running, bad, iopub: window.__e2e.iopub,
          status: panel.sessionContext.kernelDisplayStatus};
}"""

JS_DOM_ERRORS = """() => {
  const texts = [...document.querySelectorAll(
      '.jp-Notebook .jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]')].map(e => e.textContent);
  const widgetErrors = [...document.querySelectorAll('.jp-Notebook')].map(e => e.textContent)
      .filter(t => t.includes('Error displaying widget') || t.includes('Error rendering output'));
  return texts.concat(widgetErrors);
}"""

# Key press -> updated output, timed inside the page: keydown (capture phase) to the first DOM state where the
# lab's text matches `pattern` and the set of image sources differs from before.
JS_WATCH_UPDATE = """(root, pattern) => {
  const srcs = () => [...root.querySelectorAll('img, svg image')].map(i => i.src || i.getAttribute('href')).join('|');
  const w = {t0: null, text_ms: null, image_ms: null, before: srcs()};
  window.__e2eUpdate = w;
  const re = new RegExp(pattern);
  const onKey = e => { if (w.t0 === null && e.key.startsWith('Arrow')) w.t0 = performance.now(); };
  window.addEventListener('keydown', onKey, true);
  const check = () => {
    if (w.t0 === null) return;
    const now = performance.now();
    if (w.text_ms === null && re.test(root.innerText)) w.text_ms = now - w.t0;
    if (w.image_ms === null && srcs() !== w.before && srcs() !== '') w.image_ms = now - w.t0;
    if (w.text_ms !== null && w.image_ms !== null) {
      obs.disconnect();
      window.removeEventListener('keydown', onKey, true);
    }
  };
  const obs = new MutationObserver(check);
  obs.observe(root, {subtree: true, childList: true, characterData: true, attributes: true});
}"""

# The self-test question: the box lesson_lib.practice.widgets marks with the class lesson-quiz-<id>; else the smallest
# widget box holding the question id, one text box and one 提交 button; else, if the id is only in a markdown cell,
# the next code cell with a 提交 button. Marks it with data-e2e-quiz.
JS_FIND_QUESTION = """(qid) => {
  const marked = document.querySelectorAll('.jp-Notebook .lesson-quiz-' + qid);
  if (marked.length === 1) { marked[0].setAttribute('data-e2e-quiz', qid); return true; }
  const submit = [...document.querySelectorAll('.jp-Notebook button')].filter(b => b.textContent.trim() === '提交');
  let best = null;
  for (const b of submit) {
    for (let el = b.parentElement; el && !el.classList.contains('jp-Cell'); el = el.parentElement) {
      if (el.textContent.includes(qid) && el.querySelector('input[type=text], textarea')) {
        const buttons = [...el.querySelectorAll('button')].filter(x => x.textContent.trim() === '提交');
        if (buttons.length === 1 && (!best || el.textContent.length < best.textContent.length)) best = el;
        break;
      }
    }
  }
  if (!best) {
    const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
    const i = cells.findIndex(c => c.classList.contains('jp-MarkdownCell') && c.textContent.includes(qid));
    const hasSubmit = c => [...c.querySelectorAll('button')].some(x => x.textContent.trim() === '提交');
    if (i >= 0) best = cells.slice(i + 1).find(c => c.classList.contains('jp-CodeCell') && hasSubmit(c));
  }
  if (!best) return false;
  best.setAttribute('data-e2e-quiz', qid);
  return true;
}"""



# Contrast of every piece of lesson text a learner reads (markdown, outputs, widget text), from the rendered colours:
# the text colour composited over the effective background (the first opaque ancestor background, with every
# translucent one on the way blended in). Colours are normalised through a canvas, so color-mix()/color() values
# count too. WCAG 2 relative luminance and ratio.
JS_CONTRAST = """() => {
  const cv = document.createElement('canvas'); cv.width = cv.height = 1;
  const cx = cv.getContext('2d', {willReadFrequently: true});
  const rgba = c => {
    cx.clearRect(0, 0, 1, 1); cx.fillStyle = 'rgba(0,0,0,0)'; cx.fillStyle = c; cx.fillRect(0, 0, 1, 1);
    const d = cx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2], d[3] / 255];
  };
  const over = (top, under) => top.slice(0, 3).map((v, i) => v * top[3] + under[i] * (1 - top[3])).concat([1]);
  const background = el => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let bg = [255, 255, 255, 1];
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                     return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const roots = document.querySelectorAll('.jp-Notebook .jp-MarkdownOutput, .jp-Notebook .jp-OutputArea-output');
  const seen = new Set(), results = [];
  for (const root of roots) for (const el of [root, ...root.querySelectorAll('*')]) {
    if (seen.has(el) || el.closest('svg, img, canvas, .jp-InputArea-editor')) continue;
    seen.add(el);
    const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('');
    if (!own.trim()) continue;
    const st = getComputedStyle(el);
    if (st.visibility !== 'visible' || st.display === 'none' || !el.getClientRects().length) continue;
    const bg = background(el), fg = over(rgba(st.color), bg);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const box = el.closest('.lesson-box, .lesson-table, [class*=lesson-quiz], .lesson-interview, .widget-html, '
                           + '.highlight, .jp-MarkdownOutput, .jp-OutputArea-output');
    const tag = el.tagName.toLowerCase() + (el.className ? '.' + el.className : '');
    results.push({ratio: (a + 0.05) / (b + 0.05), text: own.trim().slice(0, 40), tag,
                  where: box ? box.className.split(' ')[0] : '?', color: st.color,
                  syntax: /^ͼ/.test(el.className) && !!el.closest('pre'),
                  listing: !!el.closest('pre.lesson-source'),
                  bg: 'rgb(' + bg.slice(0, 3).map(Math.round) + ')'});
  }
  return results;
}"""

# Layout problems a learner would see at the current window size.
JS_LAYOUT = """() => {
  const out = {scrollbars: [], narrowSliders: [], upscaled: [], overflowing: [], brokenWords: [], keptBlank: []};
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  const outputs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
  for (const root of outputs) {
    const cell = root.closest('.jp-Cell'), i = cells.indexOf(cell);
    const src = cell.querySelector('.jp-InputArea-editor')?.innerText.replace(/#.*\\n/g, '').trim().slice(0, 40);
    const at = `cell ${i} (${src})`;
    const right = root.getBoundingClientRect().right + 1;
    for (const el of [root, ...root.querySelectorAll('*')]) {
      const st = getComputedStyle(el);
      if (['auto', 'scroll'].includes(st.overflowX) && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0)
        out.scrollbars.push(`${at} ${el.className.split(' ').pop()}: ${el.scrollWidth} > ${el.clientWidth} px`);
    }
    for (const img of root.querySelectorAll('img')) {
      const r = img.getBoundingClientRect();
      if (img.naturalWidth && r.width > img.naturalWidth + 1)
        out.upscaled.push(`${at}: ${img.naturalWidth} px shown at ${r.width.toFixed(0)} px`);
      if (r.right > right) out.overflowing.push(`${at}: image ends at ${r.right.toFixed(0)} > ${right.toFixed(0)}`);
    }
    for (const t of root.querySelectorAll('.lesson-slider input[type=range]'))
      if (t.getBoundingClientRect().width < 150) {
        const label = t.closest('.lesson-slider').querySelector('label').textContent;
        out.narrowSliders.push(`${at} ${label}: ${t.getBoundingClientRect().width.toFixed(0)} px`);
      }
  }
  for (const el of document.querySelectorAll('.jp-Notebook .lesson-live.lesson-keep-height')) {
    const text = document.createRange();  // what the readout shows, whatever height its box is stretched to
    text.selectNodeContents(el.querySelector('.widget-html-content') || el);
    const blank = el.getBoundingClientRect().bottom - text.getBoundingClientRect().bottom;
    if (el.getClientRects().length && blank > MAX_KEPT_BLANK_PX)
      out.keptBlank.push(`cell ${cells.indexOf(el.closest('.jp-Cell'))}: ${blank.toFixed(0)} px of blank under ` +
                         `"${el.innerText.trim().slice(0, 30)}"`);
  }
  // A word (split on spaces) that a table cell wraps across two lines.
  for (const cell of document.querySelectorAll('.jp-Notebook .lesson-table td, .jp-Notebook .lesson-table th')) {
    const node = cell.firstChild;
    if (!node || node.nodeType !== 3) continue;
    const text = node.textContent;
    for (const m of text.matchAll(/[A-Za-z_][\\w.^]*/g)) {
      const r = document.createRange(); r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
      const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
      if (tops.size > 1) out.brokenWords.push(m[0]);
    }
  }
  return out;
}""".replace("MAX_KEPT_BLANK_PX", str(MAX_KEPT_BLANK_PX))

# The exercise: put ``source`` into the code cell whose source contains ``marker`` and run that cell.
JS_RUN_CELL_WITH = """([marker, source]) => {
  const panel = window.jupyterapp.shell.currentWidget, nb = panel.content;
  const i = nb.widgets.findIndex(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes(marker));
  if (i < 0) return false;
  nb.widgets[i].model.sharedModel.setSource(source);
  nb.activeCellIndex = i;
  nb.widgets[i].node.setAttribute('data-e2e-exercise', '1');
  window.jupyterapp.commands.execute('notebook:run-cell');
  return true;
}"""

# The kernel busy until ``path`` exists (an event the test makes; bounded by HANG_CEILING_S): a busy page holds a text
# box's own value update until the kernel is idle, while a click goes at once -- the race 提交 must not lose.
JS_HOLD_KERNEL = """([path, ceiling]) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const code = `import pathlib, time\n_e2e_end = time.monotonic() + ${ceiling}\n` +
    `while not pathlib.Path(${JSON.stringify(path)}).exists() and time.monotonic() < _e2e_end:\n    time.sleep(0.02)`;
  kernel.requestExecute({ code, silent: true, store_history: false });
}"""


class Flow:
    """One browser page on the lesson notebook, with the checks every step shares."""

    def __init__(self, page, server, shots: Path):
        self.page, self.server, self.shots = page, server, shots
        self.step = 0
        self.console_errors: list[str] = []
        self.outside_requests: list[str] = []
        self.problems: list[str] = []  # contrast and layout findings, asserted once both window sizes are seen

    def shot(self, name: str, locator=None) -> None:
        """A screenshot of the page, or of one cell (``locator``), as NN_name.png."""
        self.step += 1
        path = str(self.shots / f"{self.step:02d}_{name}.png")
        if locator is None:
            self.page.screenshot(path=path)
        else:
            locator.scroll_into_view_if_needed()
            locator.screenshot(path=path)

    def wait_kernel_idle(self) -> None:
        self.server.wait_kernel_idle()

    def assert_no_errors(self, where: str) -> None:
        state = self.page.evaluate(JS_RUN_STATE)
        iopub = [m for m in state["iopub"] if not any(re.search(p, m) for p, _ in IGNORED_KERNEL_STDERR)]
        problems = state["bad"] + iopub + self.page.evaluate(JS_DOM_ERRORS)
        assert not problems, f"error output {where}:\n" + "\n".join(problems)


def run_all_finished(page, server, js_state: str, stall_s: float = RUN_STALL_S) -> dict:
    """After a click on Restart & Run All: wait until the run has started (a queued [*] was seen), no cell is
    running, every code cell has an execution count and the server reports the kernel idle. Returns the page's
    last state. Fails only if no further cell finishes for ``stall_s`` (stretched by the load)."""
    last = {}

    def done():
        last.update(page.evaluate(js_state))
        finished = last["queued"] and not last["running"] and last["counted"] == last["code"]
        return finished and server.kernel_state(server.notebook) == "idle"

    wait_for(done, "Restart & Run All", progress=lambda: (last.get("queued"), last.get("counted")), stall_s=stall_s)
    return last


def _console_ignored(text: str) -> bool:
    return any(re.search(pattern, text) for pattern, _reason in IGNORED_CONSOLE_ERRORS)


# What the kernel changed on screen: the HTML outputs' text and the image sources (ipywidgets shows each new PNG
# under a new blob URL). Control readouts are left out: the browser updates those before the kernel has answered.
JS_SIGNATURE = "el => [...el.querySelectorAll('.widget-html, img')].map(x => x.src || x.innerText).join('|')"
JS_CHANGED = f"""([el, before, pattern]) => ({JS_SIGNATURE})(el) !== before
                 && (!pattern || new RegExp(pattern).test(el.innerText))"""


def run_flow(name: str, lab_server, open_browser, shots: Path, report) -> None:
    """The whole flow for one UI language and theme, in its own browser against its own server (worker thread)."""
    with open_browser() as browser:
        _flow(name, lab_server, browser, shots, report)


class Widgets:
    """Drive one widget output and wait until what it shows has changed."""

    def __init__(self, flow: Flow):
        self.flow, self.page = flow, flow.page

    def cell_with(self, inner):
        return self.page.locator(".jp-CodeCell").filter(has=inner)

    def slider(self, label: str):
        sliders = self.page.locator(".lesson-slider").filter(
            has=self.page.locator("label").get_by_text(label, exact=True))
        assert sliders.count() == 1, f"expected one slider labelled {label!r}, found {sliders.count()}"
        return sliders

    def readout(self, slider) -> str:
        return slider.locator("output").inner_text().strip()

    def change(self, root, action, what: str, expect: str = "") -> None:
        """Run ``action()`` and wait until ``root``'s outputs differ (and its text matches the regex ``expect``)."""
        before = root.evaluate(JS_SIGNATURE)
        action()
        try:
            self.page.wait_for_function(JS_CHANGED, arg=[root.element_handle(), before, expect],
                                        timeout=update_ms())
        except Exception as exc:
            raise AssertionError(f"{what}: the output did not change (to match {expect!r}) within "
                                 f"{update_ms()} ms; it shows:\n{root.inner_text()}") from exc

    def press(self, slider, key: str, root, what: str, expect: str = "") -> None:
        handle = slider.locator("input[type=range]")
        self.change(root, lambda: (handle.focus(), self.page.keyboard.press(key)), what, expect)


def _drive_demo(flow: Flow, ui: Widgets) -> None:
    """§2: switch to 2 heads; both answers then survive (the summary's two percentages become equal)."""
    two = flow.page.locator(".widget-toggle-button", has_text="2 个头")
    cell = ui.cell_with(two)
    out = cell.locator(".jp-Cell-outputWrapper")
    one_text = out.inner_text()
    ui.change(out, two.click, "§2 demo, 2 个头", r"指代（小红）(\d+)%.*句法（主语小明）\1%")
    kept = re.findall(r"(\d+)%", out.inner_text())
    assert len(kept) == 2 and kept[0] == kept[1] and out.inner_text() != one_text, out.inner_text()
    slider = ui.slider("锐度")
    ui.press(slider, "ArrowRight", out, "§2 demo, 锐度 +0.5")
    assert ui.readout(slider) == "4.5"
    flow.shot("s2_demo_two_heads", cell)


JS_BOXES = "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })"


def _lab_box(pictures) -> list[tuple[int, int]]:
    """(width, height) of each lab picture as shown, rounded: all read in one step in the page, once both are
    laid out (a picture redrawn between a count and a read would give no box: a race on a busy machine)."""

    def both():
        boxes = pictures.evaluate_all(JS_BOXES)
        return len(boxes) == 2 and all(w and h for w, h in boxes) and boxes

    return [(round(w), round(h)) for w, h in wait_for(both, "the §5 lab's two pictures laid out")]


# The §5 lab's pictures at this window size: natural and shown width, and whether the overview wrapped under the
# zoomed head. They must never be scaled down (token labels would drop below 14 px).
JS_LAB_PICTURES = """(cell) => [...cell.querySelectorAll('.jp-OutputArea-output svg[role=img]')].map(svg => {
  const r = svg.getBoundingClientRect();
  return {natural: svg.viewBox.baseVal.width, shown: r.width, top: r.top, left: r.left};
})"""


def _check_lab_scale(flow: Flow, ui: Widgets, size) -> str:
    cell = ui.cell_with(ui.slider(SLIDER_LABEL))
    pics = cell.evaluate(JS_LAB_PICTURES)
    assert len(pics) == 2, f"expected the lab's two pictures, found {len(pics)}"
    for p in pics:
        if abs(p["shown"] - p["natural"]) > 1:
            flow.problems.append(f"layout at {size[0]}×{size[1]}: a §5 lab picture ({p['natural']} px) is shown at "
                                 f"{p['shown']:.0f} px: its 14 px token labels shrink")
    stacked = pics[1]["top"] > pics[0]["top"] + 100
    return f"{size[0]} px: {'stacked' if stacked else 'side by side'}"


def _drive_lab(flow: Flow, ui: Widgets) -> list[str]:
    """§5: h 8 -> 4 -> 8 (d_k and the maps follow, the picture keeps its size); enlarge another head."""
    page = flow.page
    slider = ui.slider(SLIDER_LABEL)
    cell = ui.cell_with(slider)
    out = cell.locator(".jp-Cell-outputWrapper")
    assert re.search(r"d_k\s*=\s*64\b", out.inner_text()), "the lab should start at h = 8, d_k = 64"
    assert ui.readout(slider) == "8"
    picture = out.locator("svg[role=img]")
    assert picture.count() == 2, "the lab should show two pictures: the zoomed head and the overview"
    size = _lab_box(picture)
    flow.shot("s5_lab_h8", cell)
    timings = []
    handle = slider.locator("input[type=range]")
    for key, h, d_k in [("ArrowLeft", 4, 128), ("ArrowRight", 8, 64)]:
        out.evaluate(JS_WATCH_UPDATE, rf"d_k\s*=\s*{d_k}\b")
        handle.focus()
        page.keyboard.press(key)
        page.wait_for_function(
            "() => window.__e2eUpdate.text_ms !== null && window.__e2eUpdate.image_ms !== null",
            timeout=update_ms(),
        )
        upd = page.evaluate("() => window.__e2eUpdate")
        assert ui.readout(slider) == str(h)
        box = _lab_box(picture)
        assert box == size, f"the lab pictures changed size at h = {h}: {size} -> {box}"
        timings.append(f"{key} h={h}: text {upd['text_ms']:.0f} ms, maps {upd['image_ms']:.0f} ms")
    zoom = ui.slider("放大第几个头")
    assert ui.readout(zoom) == "1"
    ui.press(zoom, "ArrowRight", out, "§5 lab, enlarge head 2")
    assert ui.readout(zoom) == "2"
    flow.shot("s5_lab_zoom_head2", cell)
    return timings


def _has_explorer(flow: Flow) -> bool:
    """The head explorer (its 层 slider) is in this notebook: it moved to the optional lab_real_heads notebook, so the
    core lesson normally has none (a notebook that still shows it is driven)."""
    return flow.page.locator(".lesson-slider").filter(
        has=flow.page.locator("label").get_by_text("层", exact=True)).count() > 0


def _drive_explorer(flow: Flow, ui: Widgets) -> None:
    """§6: the layer slider moves and the explorer's line and picture follow."""
    if not _has_explorer(flow):
        return
    slider = ui.slider("层")
    cell = ui.cell_with(slider)
    out = cell.locator(".jp-Cell-outputWrapper")
    before = ui.readout(slider)
    ui.press(slider, "ArrowRight", out, "§6 explorer, next layer")
    assert ui.readout(slider) == str(int(before) + 1)
    flow.shot("s6_explorer_next_layer", cell)


def _question_entry(progress_file: Path, qid: str, answer: str) -> dict | None:
    """Question ``qid``'s entry in the progress file once its last answer's first box holds ``answer`` (the file is
    written atomically)."""
    try:
        entry = json.loads(progress_file.read_text(encoding="utf-8")).get("questions", {}).get(qid)
    except (OSError, ValueError):
        return None
    return entry if entry and json.loads(entry.get("answer") or "[]")[:1] == [answer] else None


def _drive_quiz(flow: Flow) -> tuple[str, str]:
    """Self-test Q2: its radio part, then a wrong number and the right one. Returns the summary before and after."""
    page = flow.page
    progress = page.locator(".jp-Notebook .lesson-quiz-progress")
    assert progress.count() == 1, "the progress summary widget is missing"
    progress_before = progress.inner_text()
    assert page.evaluate(JS_FIND_QUESTION, QUIZ_QUESTION), f"self-test question {QUIZ_QUESTION} not found"
    quiz = page.locator(f"[data-e2e-quiz='{QUIZ_QUESTION}']")
    quiz.scroll_into_view_if_needed()
    box = quiz.locator("input[type=text], textarea").first
    submit = quiz.get_by_role("button", name="提交")
    quiz.get_by_role("radio", name="不变").check()  # the projection parameters: their own choice
    # Attempt 1 on a busy kernel: 16 + Tab sends the box's value (leaving a box checks nothing), the 64 typed next is
    # held in the page until that send is answered, 提交's click goes at once: it carries the 64 (reader.js), or the
    # kernel would check the 16. Attempt 2 (kernel idle): 32 and Enter.
    release = flow.server.progress_file.with_name("e2e-quiz-release")
    page.evaluate(JS_HOLD_KERNEL, [str(release), HANG_CEILING_S])
    wait_for(lambda: flow.server.kernel_state(flow.server.notebook) == "busy", "the kernel held busy", stall_s=UPDATE_S)
    box.fill("16")
    box.press("Tab")
    # Each verdict is read from what the kernel recorded (the progress file) and from the feedback element's class
    # (lesson-feedback-<verdict>), never from the wording.
    for n, (answer, expect) in enumerate([("64", "wrong"), ("32", "right")], start=1):
        box.fill(answer)
        if n == 1:
            submit.click()
            release.write_text("", encoding="utf-8")  # the kernel reads what the page sent, in order
        else:  # an Enter that ends an IME composition picks characters: had it clicked 提交, 8 were attempt 2
            box.fill("8")
            box.dispatch_event("keydown", {"key": "Enter", "isComposing": True, "bubbles": True})
            box.fill(answer)
            box.press("Enter")  # reader.js clicks 提交, which carries the 32
        entry = wait_for(lambda a=answer: _question_entry(flow.server.progress_file, QUIZ_QUESTION, a),
                         f"{QUIZ_QUESTION}'s attempt with {answer!r} saved", stall_s=UPDATE_S)
        assert entry["n_attempts"] == n, f"{QUIZ_QUESTION}: {entry['n_attempts']} attempts recorded, not {n}"
        assert entry["final"] == expect, f"{QUIZ_QUESTION} {answer!r}: recorded {entry['final']!r}, not {expect!r}"
        shown = quiz.locator(f".lesson-feedback-{expect}")
        shown.wait_for(state="visible", timeout=update_ms())
        other = "right" if expect == "wrong" else "wrong"
        assert quiz.locator(f".lesson-feedback-{other}").count() == 0, f"{answer!r} shows a {other} verdict too"
        live = shown.evaluate("el => { const r = el.closest('[aria-live]'); return r && r.getAttribute('aria-live'); }")
        assert live == "polite", f"the verdict is not in a polite live region (aria-live={live!r})"
        flow.shot(f"quiz_{QUIZ_QUESTION}_{answer}", quiz)
    page.wait_for_function("([el, t]) => el.innerText !== t", arg=[progress.element_handle(), progress_before],
                           timeout=update_ms())
    flow.shot("progress_summary_after_Q2", progress)
    return progress_before, progress.inner_text()


EXERCISE_MARKER = "def my_count_multiplies"
EXERCISE_WRONG = "def my_count_multiplies(n, d_model, h):\n    return 3 * n * d_model**2\n\n\n" \
                 "exercises.check(\"count_multiplies\", my_count_multiplies)"


def _widget_placeholder() -> str:
    """What scripts/build_notebook.py stores for a widget's text/plain."""
    import importlib.util

    script = Path(__file__).resolve().parents[2] / "scripts" / "build_notebook.py"
    spec = importlib.util.spec_from_file_location("build_notebook", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WIDGET_PLACEHOLDER


def _drive_exercise(flow: Flow) -> None:
    """Code exercise 3 with a wrong formula: the checker answers in the cell with the expected number."""
    page = flow.page
    assert page.evaluate(JS_RUN_CELL_WITH, [EXERCISE_MARKER, EXERCISE_WRONG]), "exercise cell not found"
    cell = page.locator("[data-e2e-exercise='1']")
    out = cell.locator(".jp-Cell-outputWrapper")
    page.wait_for_function("el => /应为/.test(el.innerText)", arg=out.element_handle(), timeout=update_ms())
    from lesson_lib.sections import exercises

    passed = exercises.EXERCISES["count_multiplies"].passed.split("！")[0]  # how a pass begins
    assert passed not in out.inner_text(), "a wrong formula passed the checker"
    assert "54,988,800" in out.inner_text(), out.inner_text()
    flow.shot("exercise_count_multiplies_wrong", cell)


def _drive_interview(flow: Flow) -> None:
    """§8 self-check: an answer covering one point; the feedback names what it found and the attempt is counted."""
    page = flow.page
    box = page.locator(".jp-Notebook .lesson-interview")
    assert box.count() == 1, "the interview self-check widget is missing"
    box.locator("textarea").fill("多个头可以同时关注不同位置、不同子空间的信息，单头只能加权平均。")
    before = box.inner_text()
    from lesson_lib.practice import feedback, questions

    reference = questions.question("面试").key.model_answer.splitlines()[0]  # the reference answer's first line
    assert reference not in before, "§8 must ask before it shows the reference answer"
    box.get_by_role("button", name="写好了，看要点").click()
    page.wait_for_function("([el, t]) => el.innerText !== t && /已写 1 次/.test(el.innerText)",
                           arg=[box.element_handle(), before], timeout=update_ms())
    assert feedback.RIGHT not in box.inner_text(), "free-text feedback must not say 正确！"
    box.get_by_role("button", name="看参考答案").click()
    page.wait_for_function("el => /参考答案（/.test(el.innerText)", arg=box.element_handle(),
                           timeout=update_ms())
    flow.shot("interview_self_check", box)


def _check_contrast(flow: Flow, theme: str) -> str:
    results = flow.page.evaluate(JS_CONTRAST)
    assert len(results) > 200, f"only {len(results)} text elements found: the contrast check saw too little"
    # Library code shown by reflection (show_source) has its own palette, built on the theme's variables: its
    # tokens, shape notes included, are held to the same 4.5:1 as everything else. So is any code block in prose.
    listing = [r for r in results if r["listing"]]
    # The core shows the kernel through §9's formula tables; a show_source listing the page does hold must have
    # had every one of its tokens measured (none of them skipped as invisible).
    shown = flow.page.locator(".jp-Notebook pre.lesson-source").count()
    assert shown == 0 or len(listing) >= shown, (f"{shown} show_source listings on the page but only "
                                                 f"{len(listing)} of their tokens measured")
    syntax = [r for r in results if r["syntax"]]
    low = [r for r in results if r["ratio"] < MIN_CONTRAST]
    kinds = {}  # one line per (colour, background, box): the same miss repeated is one problem
    for r in sorted(low, key=lambda r: r["ratio"]):
        kinds.setdefault((r["color"], r["bg"], r["where"]), []).append(r)
    detail = "\n".join(f"{rs[0]['ratio']:.2f}:1 ×{len(rs)} <{rs[0]['tag']}> in {where}: {rs[0]['text']!r} …"
                       f" ({color} on {bg})" for (color, bg, where), rs in kinds.items())
    if low:
        flow.problems.append(f"{len(low)} of {len(results)} text elements below {MIN_CONTRAST}:1 in the {theme} theme:"
                             f"\n{detail}")
    worst_code = min(listing, key=lambda r: r["ratio"], default=None)
    lowest_code = f"lowest {worst_code['ratio']:.2f}:1 {worst_code['text']!r}" if worst_code else "none shown"
    return (f"{len(results)} texts, lowest {min(r['ratio'] for r in results):.2f}:1; code listings: {len(listing)} "
            f"tokens, {lowest_code}; CodeMirror tokens in prose: {len(syntax)}")


def _check_layout(flow: Flow, size) -> None:
    problems = flow.page.evaluate(JS_LAYOUT)
    for kind, found in problems.items():
        if found:
            flow.problems.append(f"layout at {size[0]}×{size[1]}, {kind}:\n  " + "\n  ".join(found))


def _flow(name: str, lab_server, browser, shots: Path, e2e_report) -> None:
    started = time.perf_counter()
    config = FLOWS[name]
    locale, theme, sizes = config["locale"], config["theme"], config["sizes"]
    shots.mkdir()
    context = browser.new_context(viewport={"width": sizes[0][0], "height": sizes[0][1]}, locale="zh-CN")
    page = context.new_page()
    page.set_default_timeout(scaled(60) * 1000)
    flow = Flow(page, lab_server, shots)
    ui = Widgets(flow)

    hosts = lab_server.allowed_hosts
    local = "|".join(re.escape(h) for h in sorted(hosts))

    def block(r):
        flow.outside_requests.append(r.request.url)
        r.abort()

    # Every request URL is matched (inside the browser driver) against "not one of our hosts"; those are aborted and
    # reported. Routing only the outsiders keeps the ~150 local requests of JupyterLab's page load off the Python side.
    context.route(re.compile(rf"^(?!(https?|wss?)://({local})(:\d+)?(/|$))"), block)
    page.on(
        "request",
        lambda r: (
            urlsplit(r.url).hostname in hosts
            or r.url.startswith(("data:", "blob:"))
            or flow.outside_requests.append(r.url)
        ),
    )
    page.on("websocket", lambda ws: urlsplit(ws.url).hostname in hosts or flow.outside_requests.append(ws.url))
    page.on("console", lambda m: m.type == "error" and flow.console_errors.append(f"console: {m.text} @ {m.location}"))
    page.on("pageerror", lambda e: flow.console_errors.append(f"pageerror: {e}"))

    try:
        # 1. Open the notebook (?reset: start from an empty workspace).
        page.goto(f"{lab_server.url}/lab/tree/{lab_server.notebook}?reset&token={lab_server.token}")
        run_all = page.locator("[data-command='notebook:restart-run-all']").first
        run_all.wait_for(state="visible")
        page.wait_for_function("() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel")
        flow.wait_kernel_idle()
        # The request guard works: a fetch to an outside host is aborted and reported (then forgotten).
        probe = "http://192.0.2.1/e2e-request-guard-check"
        assert page.evaluate("url => fetch(url).then(() => 'reached', () => 'blocked')", probe) == "blocked"
        assert probe in flow.outside_requests, "the outside-request guard did not see a request to 192.0.2.1"
        flow.outside_requests = [u for u in flow.outside_requests if u != probe]
        flow.console_errors = [e for e in flow.console_errors if "192.0.2.1" not in e]
        if locale == "zh_CN":  # the Chinese UI is really on: the File menu reads 文件
            assert page.locator(".lm-MenuBar-itemLabel", has_text="文件").count() > 0, "JupyterLab UI is not Chinese"
        shown_theme = page.evaluate("() => document.body.dataset.jpThemeName")
        assert shown_theme == THEME_NAMES[theme], f"theme setting not applied: {shown_theme!r}"
        # Before any run, a widget cell shows the stored Chinese line, not a widget repr.
        stored = page.locator(".jp-Notebook").inner_text()
        assert "VBox(children" not in stored and _widget_placeholder() in stored
        flow.shot("opened")

        # 2. Restart & Run All, wait until every code cell has run and the kernel is idle.
        page.evaluate(JS_HOOK_KERNEL)
        t_run = time.perf_counter()
        open_s = t_run - started
        run_all.click()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        run_all_finished(page, lab_server, JS_RUN_STATE)
        run_s = time.perf_counter() - t_run
        flow.assert_no_errors("after Run All")
        flow.shot("ran_all")

        # 3. Every widget, each with what must change on screen.
        _drive_demo(flow, ui)
        timings = _drive_lab(flow, ui)
        _drive_explorer(flow, ui)
        flow.assert_no_errors("after the section widgets")
        _drive_quiz(flow)
        _drive_exercise(flow)
        _drive_interview(flow)
        flow.assert_no_errors("after the self-test")

        # 4. Readable in this theme (contrast), laid out at both window sizes.
        contrast = _check_contrast(flow, theme)
        _check_layout(flow, sizes[0])
        lab_fit = [_check_lab_scale(flow, ui, sizes[0])]
        # the first show_source listing, if the notebook shows one (§9 maps the kernel in formula_view's tables)
        listing = page.locator(".jp-Notebook pre.lesson-source").first
        has_listing = page.locator(".jp-Notebook pre.lesson-source").count() > 0
        if has_listing:
            listing.scroll_into_view_if_needed()
            flow.shot(f"at_{sizes[0][0]}_source_listing", listing)
        page.set_viewport_size({"width": sizes[1][0], "height": sizes[1][1]})
        # JupyterLab re-lays the panels out on resize: wait for its shell to take the new width, then two paints
        page.wait_for_function("w => window.jupyterapp.shell.node.getBoundingClientRect().width === w",
                               arg=sizes[1][0])
        page.evaluate(JS_SETTLED)
        _check_layout(flow, sizes[1])
        lab_fit.append(_check_lab_scale(flow, ui, sizes[1]))
        for label in ("锐度", SLIDER_LABEL, *(["层"] if _has_explorer(flow) else [])):
            flow.shot(f"at_{sizes[1][0]}_{label}", ui.cell_with(ui.slider(label)))
        # §9's formula map: the output of the cell that calls formula_view() (§2 shows lesson tables first)
        formula = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="formula_view()").locator(
            ".jp-OutputArea-output").first
        formula.scroll_into_view_if_needed()
        flow.shot(f"at_{sizes[1][0]}_s9_formula_table", formula)
        if has_listing:
            listing.scroll_into_view_if_needed()
            flow.shot(f"at_{sizes[1][0]}_source_listing", listing)
        contrast += f"; §5 lab: {', '.join(lab_fit)}"
    finally:
        if page.is_closed() is False:
            try:
                flow.shot("final")
            except Exception:  # a failure screenshot is a courtesy; the assertion that failed is the message
                pass
        context.close()

    console = [e for e in flow.console_errors if not _console_ignored(e)]
    assert not flow.problems, f"[{name}] what a learner would see:\n" + "\n".join(flow.problems)
    assert not flow.outside_requests, "requests to hosts other than 127.0.0.1:\n" + "\n".join(flow.outside_requests)
    assert not console, "browser console errors:\n" + "\n".join(console)
    total = time.perf_counter() - started
    e2e_report(
        f"[{name}] open {open_s:.1f} s, Run All {run_s:.1f} s, whole flow {total:.1f} s; contrast: {contrast}; "
        "key press -> update: " + "; ".join(timings)
    )


@pytest.fixture(scope="module")
def flows(request, lab_servers, open_browser, artifacts_dir, e2e_report):
    """The selected flows run at the same time, each in its own thread, browser and server (on 2 cores that takes
    about 1.5x one flow instead of 2x). DAY11_E2E_SERIAL=1 runs them one after the other."""
    names = {item.name for item in request.session.items}
    selected = [name for name in FLOWS if f"test_learner_flow[{name}]" in names]
    servers = lab_servers({name: (FLOWS[name]["locale"], FLOWS[name]["theme"]) for name in selected})
    workers = 1 if os.environ.get("DAY11_E2E_SERIAL") else len(selected)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="e2e") as pool:
        futures = {
            name: pool.submit(run_flow, name, servers[name], open_browser, artifacts_dir / name, e2e_report)
            for name in selected
        }
        yield futures


@pytest.mark.parametrize("name", list(FLOWS))
def test_learner_flow(name, flows):
    """open -> Restart & Run All -> every widget driven (§2 §5 §6, quiz, exercise, interview, progress) ->
    contrast ≥ 4.5:1 in this theme -> layout at both window sizes."""
    flows[name].result(timeout=2 * HANG_CEILING_S)  # each wait inside the flow has its own hang detector
