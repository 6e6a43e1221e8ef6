"""「导出进度」 hands the learner a file the browser downloads, in a real JupyterLab.

The export is written in the learner's data folder (the class report on a hub reads it there), which JupyterLab's
file browser cannot show: the status area links the same file as a download. Serves a one-cell notebook (the draft
mechanism of ``conftest.py``) showing §10's progress summary over a progress file with answers in it; clicks
导出进度, then the link, then reaches the link with Tab and opens it with Enter: each download's JSON equals the
export on disk. Screenshot of the status area (light theme): artifacts/e2e/<time>/export/status.png.
Run:  .venv/bin/python -m pytest tests/e2e/test_export_download.py -v
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
from helpers import wait_for
from test_browser_flow import run_all_finished
from test_progress_restart import JS_ARM, JS_RUN_DONE

from lesson_lib.practice import quiz
from lesson_lib.practice.progress import Progress

EXPORT = "progress-export.json"
JS_FOCUSED = "el => el === document.activeElement"


def _summary_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from lesson_lib.practice.widgets import progress_summary\n\n"
                                          "progress_summary()")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _downloaded(page, action) -> tuple[str, dict]:
    """The suggested file name and the parsed JSON of the download that ``action()`` starts."""
    with page.expect_download() as info:
        action()
    download = info.value
    return download.suggested_filename, json.loads(Path(download.path()).read_text(encoding="utf-8"))


def test_export_downloads_the_written_file(lab_servers, open_browser, artifacts_dir, e2e_report, tmp_path,
                                           monkeypatch):
    monkeypatch.setenv("DAY11_E2E_NOTEBOOK", str(_summary_notebook(tmp_path / "summary.ipynb")))
    server = lab_servers(["zh_CN"])["zh_CN"]  # light theme
    answer = "单头只有一组权重，输出是加权平均。"
    Progress(server.progress_file).record(quiz.check("Q1", answer), answer)  # Chinese text in the export
    written = server.progress_file.with_name(EXPORT)
    shots = artifacts_dir / "export"
    shots.mkdir()
    started = time.perf_counter()
    with open_browser() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN", accept_downloads=True)
        page = server.open_notebook(context)
        page.evaluate(JS_ARM)
        page.locator("[data-command='notebook:restart-run-all']").first.click()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        assert not run_all_finished(page, server, JS_RUN_DONE, stall_s=60)["errors"]

        summary = page.locator(".lesson-quiz-progress")
        button = summary.get_by_role("button", name="导出进度")
        button.click()
        link = summary.get_by_role("link", name=f"下载 {EXPORT}")  # its accessible name
        link.wait_for(state="visible")
        on_disk = json.loads(written.read_text(encoding="utf-8"))  # written before the link is sent
        assert on_disk["questions"]["Q1"]["answer"] == answer
        summary.screenshot(path=str(shots / "status.png"))

        assert _downloaded(page, link.click) == (EXPORT, on_disk)
        button.focus()  # the next Tab stop after the button is the link: a keyboard reaches it
        page.keyboard.press("Tab")
        wait_for(lambda: link.evaluate(JS_FOCUSED), "the link focused after one Tab from 导出进度")
        assert _downloaded(page, lambda: page.keyboard.press("Enter")) == (EXPORT, on_disk)
        context.close()
    e2e_report(f"[export] 导出进度 → link → download equals {written.name} on disk ({written.stat().st_size} B), "
               f"by click and by Tab + Enter: {time.perf_counter() - started:.1f} s")
