"""Restart & Run All always runs: ten in a row in a real browser, each running every cell.

Before the lesson's server settings (scripts/lab_settings.py: ``kernel_ws_protocol`` = legacy), about one run in
three ran nothing: after "Replacing stale connection" the server read the page's binary v1 frames as the legacy
protocol (``struct.error``), dropped the channel, and the queued cells never reached the kernel.
A short notebook (widgets and a lesson_lib import, as the lesson's first cells) keeps ten runs quick.
Run:  .venv/bin/python -m pytest tests/e2e/test_restart_run_all.py -v
"""

from __future__ import annotations

import time

import nbformat
from helpers import scaled
from test_browser_flow import run_all_finished
from test_progress_restart import JS_ARM, JS_RUN_DONE

RUNS = 10
CELLS = [
    "import ipywidgets as widgets\nfrom lesson_lib import attention",
    "slider = widgets.IntSlider(value=8, min=1, max=64)\nslider",
    "import numpy as np\nx = np.ones((2, 4, 8))",
    "x.sum()",
    "widgets.HTML('<b>多头</b>')",
    "print('第', 6, '格')",
]


def _notebook(path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_ten_restart_and_run_alls_in_a_row_each_run_every_cell(lab_servers, open_browser, e2e_report, tmp_path,
                                                                monkeypatch):
    monkeypatch.setenv("DAY11_E2E_NOTEBOOK", str(_notebook(tmp_path / "short.ipynb")))
    server = lab_servers(["zh_CN"])["zh_CN"]
    started = time.perf_counter()
    with open_browser() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
        local = ("data:", "blob:", server.url, server.url.replace("http", "ws", 1))
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
        page = context.new_page()
        page.set_default_timeout(scaled(60) * 1000)
        page.goto(f"{server.url}/lab/tree/{server.notebook}?reset&token={server.token}")
        page.locator("[data-command='notebook:restart-run-all']").first.wait_for(state="visible")
        page.wait_for_function("() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel")
        server.wait_kernel_idle()
        for run in range(RUNS):
            page.evaluate(JS_ARM)
            page.locator("[data-command='notebook:restart-run-all']").first.click()
            page.locator(".jp-Dialog .jp-mod-accept").click()
            state = run_all_finished(page, server, JS_RUN_DONE, stall_s=60)
            assert state["counted"] == state["code"] == len(CELLS), (run, state)
            assert not state["errors"], (run, state["errors"])
    log = server.log.read_text(encoding="utf-8", errors="replace")
    assert "struct.error" not in log and "Uncaught exception" not in log, server.log_tail()
    e2e_report(f"[restart] {RUNS} Restart & Run All in a row, each ran all {len(CELLS)} cells: "
               f"{time.perf_counter() - started:.1f} s")
