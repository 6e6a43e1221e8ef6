"""Measure the lesson's pictures in a real browser (developer tool, not a test; the browser tests are tests/e2e).

Opens the stored notebook in JupyterLab at 1024×768 (file browser open) and 1400×1000, in the given themes
(light, dark, hc), untrusted (sanitized: the SVG's <img> copy shows) and trusted (the themed SVG shows); prints, for
every picture, its natural and shown width and the smallest text in CSS px as drawn, and saves screenshots in
artifacts/pictures/. RUN_ALL=1 first restarts and runs all cells (widgets' pictures too), ONLY_TRUSTED=1 skips
the untrusted pass.

    python scripts/measure_pictures.py light dark hc
"""
import json
import os
import shutil
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import conftest as e2e  # noqa: E402  (the browser tests' server helpers)

OUT = ROOT / "artifacts" / "pictures"
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark", "hc": "JupyterLab Dark High Contrast"}
# Every picture in an output: an SVG named as an image, or an <img>; its size and its smallest text as drawn.
JS = """() => {
 const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
 const out = [];
 for (const area of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')) {
   const cell = cells.indexOf(area.closest('.jp-Cell'));
   for (const el of area.querySelectorAll('svg[role=img], img')) {
     const r = el.getBoundingClientRect();
     if (r.width < 30) continue;
     let natural = el.naturalWidth, minText = null, kind = 'img';
     if (el.tagName.toLowerCase() === 'svg') {
       kind = 'svg';
       const wa = el.getAttribute('width');
       natural = parseFloat(wa) * (wa.endsWith('pt') ? 4 / 3 : 1);
       const scale = r.width / el.viewBox.baseVal.width;
       for (const t of el.querySelectorAll('text')) {
         const fs = parseFloat(getComputedStyle(t).fontSize) * scale;
         if (minText === null || fs < minText) minText = fs;
       }
     }
     out.push({cell, kind, natural: Math.round(natural), shown: Math.round(r.width), minText,
               alt: (el.getAttribute('aria-label') || el.getAttribute('alt') || '').slice(0, 40)});
   }
 }
 return out;
}"""


def _settings(server, theme):
    values = dict(e2e.BASE_SETTINGS)
    values[e2e.THEME_PLUGIN] = {"theme": THEMES[theme]}
    for plugin, v in values.items():
        package, _, name = plugin.partition(":")
        target = server.settings_dir / package / f"{name}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(v), encoding="utf-8")


def _run_all(page):
    page.locator("[data-command='notebook:restart-run-all']").first.click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    time.sleep(5)
    for _ in range(240):
        if page.locator(".jp-Notebook .jp-InputArea-prompt:has-text('[*]')").count() == 0:
            break
        time.sleep(1)
    time.sleep(3)


def _measure(browser, server, key, size, results):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(f"{server.url}/lab/tree/{e2e.NOTEBOOK_NAME}?token={server.token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60000)
    if not page.locator(".jp-FileBrowser").first.is_visible():
        page.locator("[data-id='filebrowser']").first.click()
    time.sleep(4)
    if os.environ.get("RUN_ALL"):
        _run_all(page)
    width = page.evaluate("() => document.querySelector('.jp-Notebook .jp-OutputArea-output')"
                          ".getBoundingClientRect().width")
    data = page.evaluate(JS)
    results[key] = {"output_width": width, "pictures": data}
    print(key, "output width", width, flush=True)
    for d in data:
        small = f"{d['minText']:.1f}" if d["minText"] else "-"
        print(f"   cell {d['cell']:3d} {d['kind']:<4} natural {d['natural']:4d} shown {d['shown']:4d} "
              f"({100 * d['shown'] / max(1, d['natural']):3.0f}%) smallest text {small} px  {d['alt']}", flush=True)
    if size[0] == 1024:
        cells = page.locator(".jp-Notebook .jp-Cell")
        for i, d in enumerate(data):
            cells.nth(d["cell"]).scroll_into_view_if_needed()
            time.sleep(0.3)
            nth = sum(1 for e in data[:i] if e["cell"] == d["cell"])
            picture = cells.nth(d["cell"]).locator("svg[role=img]:visible, img:visible").nth(nth)
            picture.screenshot(path=str(OUT / f"{key}-cell{d['cell']}-{i}.png"))
    page.close()


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    server = e2e._start_server("en", "light")
    server.wait_ready()
    results = {}
    sizes = ((1024, 768),) if os.environ.get("RUN_ALL") else ((1024, 768), (1400, 1000))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=e2e.CHROMIUM_ARGS)
            for trusted in (True,) if os.environ.get("ONLY_TRUSTED") else (False, True):
                if trusted:  # signed with the server's own secret: JupyterLab then renders the outputs unsanitized
                    import nbformat
                    from nbformat.sign import NotebookNotary

                    notebook = server.root / e2e.NOTEBOOK_NAME
                    NotebookNotary(data_dir=str(server.base / "data")).sign(nbformat.read(notebook, 4))
                for theme in sys.argv[1:] or THEMES:
                    _settings(server, theme)
                    for size in sizes:
                        key = f"{'trusted' if trusted else 'untrusted'}-{theme}-{size[0]}"
                        _measure(browser, server, key, size, results)
            browser.close()
    finally:
        server.stop()
    (OUT / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
