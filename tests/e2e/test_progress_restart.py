"""The learner's work survives a kernel restart, in a real browser; a looping exercise does not hang Run All.

Serves a copy of the lesson trimmed to §8's self-check and §10 (the draft mechanism of ``conftest.py``), with the
first §10 exercise's body replaced by ``while True: pass``. Restart & Run All must finish (the checker stops the
loop, records it as stopped and says so in Chinese); then the learner answers Q2, Q4, Q1 and the interview,
restarts the kernel and runs all again: every answer, attempt count and feedback is restored from the progress
file, and the summary counts the stopped exercise as tried, not done. Verdicts are read from the progress file
the kernel writes, not from the wording.
Run:  .venv/bin/python -m pytest tests/e2e/test_progress_restart.py -v     (screenshots: artifacts/e2e/<time>/restart/)
"""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path

from helpers import CJK, wait_for
from test_browser_flow import UPDATE_S, run_all_finished, update_ms

ROOT = Path(__file__).resolve().parents[2]

# Restart & Run All queues every cell at once ([*]); seeing that proves this run started (the restart clears the
# previous run's execution counts only some time after the click). Re-armed before every run.
JS_ARM = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content.node;
  window.__e2eQueued = false;
  if (window.__e2eObserver) return;
  const seen = () => { if ([...nb.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*')))
                         window.__e2eQueued = true; };
  window.__e2eObserver = new MutationObserver(seen);
  window.__e2eObserver.observe(nb, {subtree: true, childList: true, characterData: true});
}"""

JS_RUN_DONE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.model.cells;
  let code = 0, counted = 0, errors = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    code += 1;
    if (c.executionCount !== null) counted += 1;
    for (const o of c.outputs.toJSON()) if (o.output_type === 'error') errors.push(`${o.ename}: ${o.evalue}`);
  }
  const running = [...panel.content.node.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'));
  return {queued: window.__e2eQueued, code, counted, running, errors, status: panel.sessionContext.kernelDisplayStatus};
}"""


def _trimmed_notebook(path: Path) -> Path:
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "day11_multi_head_attention.ipynb", as_version=4)
    start = next(i for i, c in enumerate(nb.cells) if "interview_self_check()" in c.source) - 1
    # §3's looping exercise and the cell that imports show_source (§9 calls it) come along; then §8 to the end.
    keep = ("def my_multi_head_attention_loop", "from lesson_lib.show.source import show_source")
    cells = [copy.deepcopy(c) for c in nb.cells[:start] if c.cell_type == "code" and any(k in c.source for k in keep)]
    cells += [copy.deepcopy(c) for c in nb.cells[start:]]
    for c in cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
            if "def my_multi_head_attention_loop" in c.source:
                c.source = c.source.replace("raise NotImplementedError", "while True:\n        pass")
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return path


def _run_all(page, server, shots, name):
    page.evaluate(JS_ARM)
    page.locator("[data-command='notebook:restart-run-all']").first.click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    state = run_all_finished(page, server, JS_RUN_DONE, stall_s=60)  # longest cell: the checker's 5 s BUDGET_S
    assert not state["errors"], state["errors"]
    page.screenshot(path=str(shots / f"{name}.png"))


def saved(progress_file: Path) -> dict:
    try:
        return json.loads(progress_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not written yet (written atomically, so never half a file)
        return {}


def _recorded(progress_file: Path, item: str, attempts: int) -> dict:
    """The progress file's entry for question ``item`` (or "interview") once it holds ``attempts`` attempts."""

    def entry():
        data = saved(progress_file)
        got = data.get("interview") if item == "interview" else data.get("questions", {}).get(item)
        return got if got and got.get("n_attempts") == attempts else None

    return wait_for(entry, f"{item}'s attempt {attempts} saved", stall_s=UPDATE_S)


def _wait_changed(locator, before: str) -> None:
    locator.page.wait_for_function("([el, t]) => el.innerText !== t", arg=[locator.element_handle(), before],
                                   timeout=update_ms())  # fmt: skip


def test_progress_survives_a_restart(lab_servers, open_browser, artifacts_dir, e2e_report, tmp_path, monkeypatch):
    monkeypatch.setenv("DAY11_E2E_NOTEBOOK", str(_trimmed_notebook(tmp_path / "trimmed.ipynb")))
    server = lab_servers(["en"])["en"]
    progress_file = server.progress_file
    shots = artifacts_dir / "restart"
    shots.mkdir()
    started = time.perf_counter()
    with open_browser() as browser:
        context = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="zh-CN")
        page = server.open_notebook(context)

        # 1. Run All with the endless exercise body finishes; the checker records the stop and says so in the cell.
        t0 = time.perf_counter()
        _run_all(page, server, shots, "01_ran_all_with_loop")
        first_run = time.perf_counter() - t0
        assert saved(progress_file)["exercises"]["multi_head_attention_loop"]["result"] == "timeout"
        loop_cell = page.locator(".jp-CodeCell").filter(has_text="def my_multi_head_attention_loop")
        said = loop_cell.locator(".jp-OutputArea").inner_text()
        assert CJK.search(said) and "my_multi_head_attention_loop" in said, said
        boxes = {"Q1": page.locator(".lesson-quiz-Q1"), "Q2": page.locator(".lesson-quiz-Q2"),
                 "Q4": page.locator(".lesson-quiz-Q4"), "interview": page.locator(".lesson-interview")}
        unanswered = {name: box.inner_text() for name, box in boxes.items()}

        # 2. Answer as a learner; each verdict is read from what the kernel recorded, not from the wording shown.
        q2, q4, q1, interview = boxes["Q2"], boxes["Q4"], boxes["Q1"], boxes["interview"]
        q2.locator("input[type=radio]").nth(1).check()  # 投影参数：不变
        q2.locator("input[type=text]").fill("32")
        q2.get_by_role("button", name="提交").click()
        assert _recorded(progress_file, "Q2", 1)["final"] == "right"
        q4.locator("input[type=radio]").nth(1).check()  # B
        q4.get_by_role("button", name="提交").click()
        assert _recorded(progress_file, "Q4", 1)["final"] == "right"
        q1.locator("textarea").fill("单头只有一组权重，输出是加权平均，不同的信息被混在一起。")
        q1.get_by_role("button", name="写好了，看要点").click()
        entry = _recorded(progress_file, "Q1", 1)
        assert entry["final"] == "review" and not entry["solved"]  # free text is read, never judged right
        typed = "单头做加权平均，会把指代和句法抹平。"
        interview.locator("textarea").fill(typed)
        interview.get_by_role("button", name="写好了，看要点").click()
        _recorded(progress_file, "interview", 1)
        for name, box in boxes.items():  # every box shows its feedback
            _wait_changed(box, unanswered[name])
        page.screenshot(path=str(shots / "02_answered.png"))
        from lesson_lib.practice import questions

        picked = questions.question("Q2").key.boxes[1].options[1][0]  # the second radio, checked above
        assert json.loads(saved(progress_file)["questions"]["Q2"]["answer"]) == ["32", picked]

        # 3. Restart the kernel and run everything again: the answers and their feedback come back.
        _run_all(page, server, shots, "03_after_restart")
        assert q2.locator("input[type=text]").input_value() == "32"
        assert q4.locator("input[type=radio]").nth(1).is_checked()
        assert interview.locator("textarea").input_value().startswith(typed)
        for name, box in boxes.items():  # each restored box shows feedback again, not the unanswered state
            _wait_changed(box, unanswered[name])
        summary = page.locator(".lesson-quiz-progress").inner_text()
        assert re.search(r"\b2 / \d", summary) and "multi_head_attention_loop" in summary, summary  # 2 right
        # the restored widgets still work
        q2.locator("input[type=text]").fill("64")
        q2.get_by_role("button", name="提交").click()
        assert _recorded(progress_file, "Q2", 2)["final"] == "wrong"
        page.screenshot(path=str(shots / "04_still_working.png"))
        context.close()
    e2e_report(f"[restart] Run All with a looping exercise {first_run:.1f} s; whole flow "
               f"{time.perf_counter() - started:.1f} s; progress restored after a kernel restart")  # fmt: skip
