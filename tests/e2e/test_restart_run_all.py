"""Restart & Run All always runs: ten in a row on the lesson's own notebook in a real browser, each running every cell.

Before the fix in scripts/lab_settings.py, about one run in three ran nothing: on the restart's reconnect
jupyter_server logged "Replacing stale connection", read the page's binary v1 frames as the legacy protocol
(``struct.error``), dropped the channel, and the queued cells never reached the kernel.
Each run starts from a notebook with no outputs and no execution counts (cleared in the page), so a cell that did
not run this time cannot pass on an earlier run's count: the counts must be 1, 2, ... in cell order, from the fresh
kernel. Each run also waits until every slider of the lesson (anywidget) has drawn itself, which it does only once
its model has initialised, and no page may log anywidget's "Failed to initialize model".
Run:  .venv/bin/python -m pytest tests/e2e/test_restart_run_all.py -v
"""

from __future__ import annotations

import time

from helpers import wait_for
from test_browser_flow import run_all_finished
from test_progress_restart import JS_ARM, JS_RUN_DONE
from test_reader import built_lesson

RUNS = 10
# Every code cell's execution count, in cell order (null: not run since the outputs were cleared).
JS_COUNTS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  const counts = [];
  for (let i = 0; i < cells.length; i++) if (cells.get(i).type === 'code') counts.push(cells.get(i).executionCount);
  return counts;
}"""
JS_CLEAR = "() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')"
JS_SLIDERS = "() => document.querySelectorAll('.jp-Notebook .lesson-slider').length"


def test_ten_restart_and_run_alls_in_a_row_each_run_every_cell(lab_servers, open_browser, e2e_report,
                                                                monkeypatch):
    monkeypatch.delenv("DAY11_E2E_NOTEBOOK", raising=False)  # the lesson's own notebook (the server's copy in tmp)
    sliders = len(built_lesson()["sliders"])
    assert sliders > 0  # the waits below mean something only if the lesson draws sliders
    server = lab_servers(["zh_CN"])["zh_CN"]
    started = time.perf_counter()
    console: list[str] = []
    with open_browser() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")

        def listen(page) -> None:
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))

        page = server.open_notebook(context, listen)
        for run in range(RUNS):
            page.evaluate(JS_CLEAR)
            assert set(page.evaluate(JS_COUNTS)) == {None}, run  # no count is left from before this run
            page.evaluate(JS_ARM)
            page.locator("[data-command='notebook:restart-run-all']").first.click()
            page.locator(".jp-Dialog .jp-mod-accept").click()
            state = run_all_finished(page, server, JS_RUN_DONE, stall_s=60)
            assert not state["errors"], (run, state["errors"])
            counts = page.evaluate(JS_COUNTS)
            assert counts == list(range(1, len(counts) + 1)), (run, counts)  # each cell once, in order, fresh
            wait_for(lambda: page.evaluate(JS_SLIDERS) == sliders, f"run {run}: {sliders} sliders drawn",
                     progress=lambda: page.evaluate(JS_SLIDERS))
    failed = [line for line in console if "[anywidget]" in line and "Failed" in line]
    assert not failed, failed
    log = server.log.read_text(encoding="utf-8", errors="replace")
    assert "struct.error" not in log and "Uncaught exception" not in log, server.log_tail()
    stale = log.count("Replacing stale connection")  # the race the fix is for: how often this run met it
    e2e_report(f"[restart] {RUNS} Restart & Run All in a row on the lesson, each ran all {len(counts)} code cells "
               f"and drew {sliders} sliders ({stale} stale connections replaced): "
               f"{time.perf_counter() - started:.1f} s")
