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

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

LOCALES = ["en", "zh_CN"]  # JupyterLab's UI language; the lesson itself is Chinese in both
FLOW_TIMEOUT_S = 300  # hang detectors, not speed goals (the times are reported in the summary)
RUN_TIMEOUT_S = 120  # Restart & Run All of the whole lesson: ~22 s with both flows side by side on 2 cores
UPDATE_TIMEOUT_MS = 10_000  # one slider step / one quiz answer
SLIDER_LABEL = "头数 h"
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
  const srcs = () => [...root.querySelectorAll('img')].map(i => i.src).join('|');
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

# The self-test question: the box lesson_lib.quiz_widgets marks with the class lesson-quiz-<id>; else the smallest
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


class Flow:
    """One browser page on the lesson notebook, with the checks every step shares."""

    def __init__(self, page, server, shots: Path):
        self.page, self.server, self.shots = page, server, shots
        self.step = 0
        self.console_errors: list[str] = []
        self.outside_requests: list[str] = []

    def shot(self, name: str) -> None:
        self.step += 1
        self.page.screenshot(path=str(self.shots / f"{self.step:02d}_{name}.png"))

    def wait_kernel_idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.server.kernel_state(self.server.notebook) != "idle":
            assert time.monotonic() < deadline, f"kernel not idle after {timeout} s: {self.server.sessions()}"
            time.sleep(0.2)

    def assert_no_errors(self, where: str) -> None:
        state = self.page.evaluate(JS_RUN_STATE)
        iopub = [m for m in state["iopub"] if not any(re.search(p, m) for p, _ in IGNORED_KERNEL_STDERR)]
        problems = state["bad"] + iopub + self.page.evaluate(JS_DOM_ERRORS)
        assert not problems, f"error output {where}:\n" + "\n".join(problems)


def _console_ignored(text: str) -> bool:
    return any(re.search(pattern, text) for pattern, _reason in IGNORED_CONSOLE_ERRORS)


def run_flow(locale: str, lab_server, open_browser, shots: Path, report) -> None:
    """The whole flow for one UI language, in its own browser against its own server (runs in a worker thread)."""
    with open_browser() as browser:
        _flow(locale, lab_server, browser, shots, report)


def _flow(locale: str, lab_server, browser, shots: Path, e2e_report) -> None:
    started = time.perf_counter()
    shots.mkdir()
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="zh-CN")
    page = context.new_page()
    page.set_default_timeout(60_000)
    flow = Flow(page, lab_server, shots)

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
        flow.shot("opened")

        # 2. Restart & Run All, wait until every code cell has run and the kernel is idle.
        page.evaluate(JS_HOOK_KERNEL)
        t_run = time.perf_counter()
        open_s = t_run - started
        run_all.click()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while True:
            state = page.evaluate(JS_RUN_STATE)
            done = state["queued"] and not state["running"] and state["counted"] == state["code"]
            if done and lab_server.kernel_state(lab_server.notebook) == "idle":
                break
            assert time.monotonic() < deadline, f"Run All not finished after {RUN_TIMEOUT_S} s: {state}"
            time.sleep(0.25)
        run_s = time.perf_counter() - t_run
        flow.assert_no_errors("after Run All")
        flow.shot("ran_all")

        # 3. Head-count lab: keyboard on the slider handle; d_k and the maps must follow.
        slider = page.locator(".widget-slider").filter(has=page.get_by_text(SLIDER_LABEL, exact=True))
        assert slider.count() == 1, f"expected one slider labelled {SLIDER_LABEL!r}, found {slider.count()}"
        lab = page.locator(".jp-CodeCell").filter(has=slider)
        lab_out = lab.locator(".jp-Cell-outputWrapper")
        slider.scroll_into_view_if_needed()
        assert re.search(r"d_k\s*=\s*64\b", lab_out.inner_text()), "the lab should start at h = 8, d_k = 64"
        assert slider.locator(".widget-readout").inner_text().strip() == "8"
        assert lab_out.locator("img").count() > 0, "the lab shows no attention-map image"
        flow.shot("lab_h8")

        timings = []
        handle = slider.locator(".noUi-handle")
        for key, h, d_k in [("ArrowLeft", 4, 128), ("ArrowRight", 8, 64)]:
            lab_out.evaluate(JS_WATCH_UPDATE, rf"d_k\s*=\s*{d_k}\b")
            handle.focus()
            page.keyboard.press(key)
            page.wait_for_function(
                "() => window.__e2eUpdate.text_ms !== null && window.__e2eUpdate.image_ms !== null",
                timeout=UPDATE_TIMEOUT_MS,
            )
            upd = page.evaluate("() => window.__e2eUpdate")
            assert slider.locator(".widget-readout").inner_text().strip() == str(h)
            timings.append(f"{key} h={h}: text {upd['text_ms']:.0f} ms, maps {upd['image_ms']:.0f} ms")
            flow.shot(f"lab_h{h}")
        flow.assert_no_errors("after moving the slider")

        # 4. Self-test Q2: a wrong answer, then the right one.
        assert page.evaluate(JS_FIND_QUESTION, QUIZ_QUESTION), f"self-test question {QUIZ_QUESTION} not found"
        quiz = page.locator(f"[data-e2e-quiz='{QUIZ_QUESTION}']")
        quiz.scroll_into_view_if_needed()
        box = quiz.locator("input[type=text], textarea").first
        submit = quiz.get_by_role("button", name="提交")
        for answer, expect in [("32", "还不对"), ("64", "正确")]:
            before = quiz.inner_text()
            box.fill(answer)
            submit.click()
            page.wait_for_function(
                "([el, word, n]) => el.innerText.split(word).length - 1 > n",
                arg=[quiz.element_handle(), expect, before.count(expect)],
                timeout=UPDATE_TIMEOUT_MS,
            )
            flow.shot(f"quiz_{QUIZ_QUESTION}_{answer}")
            if expect == "正确":
                assert quiz.inner_text().count("还不对") <= before.count("还不对"), "right answer judged wrong"
        flow.assert_no_errors("after answering")
    finally:
        if page.is_closed() is False:
            try:
                flow.shot("final")
            except Exception:  # a failure screenshot is a courtesy; the assertion that failed is the message
                pass
        context.close()

    console = [e for e in flow.console_errors if not _console_ignored(e)]
    assert not flow.outside_requests, "requests to hosts other than 127.0.0.1:\n" + "\n".join(flow.outside_requests)
    assert not console, "browser console errors:\n" + "\n".join(console)
    total = time.perf_counter() - started
    e2e_report(
        f"[{locale}] open {open_s:.1f} s, Run All {run_s:.1f} s, whole flow {total:.1f} s; key press -> update: "
        + "; ".join(timings)
    )


@pytest.fixture(scope="module")
def flows(request, lab_servers, open_browser, artifacts_dir, e2e_report):
    """The selected UI languages run at the same time, each in its own thread, browser and server (on 2 cores that
    takes about 1.5x one flow instead of 2x). DAY11_E2E_SERIAL=1 runs them one after the other."""
    names = {item.name for item in request.session.items}
    locales = [locale for locale in LOCALES if f"test_learner_flow[{locale}]" in names]
    servers = lab_servers(locales)
    workers = 1 if os.environ.get("DAY11_E2E_SERIAL") else len(locales)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="e2e") as pool:
        futures = {
            locale: pool.submit(run_flow, locale, servers[locale], open_browser, artifacts_dir / locale, e2e_report)
            for locale in locales
        }
        yield futures


@pytest.mark.parametrize("locale", LOCALES)
def test_learner_flow(locale, flows):
    """open -> Restart & Run All -> no errors -> slider h 8 -> 4 -> 8 (d_k, maps) -> Q2 wrong, then right."""
    flows[locale].result(timeout=FLOW_TIMEOUT_S)
