"""Build the lesson notebook from its source and (re)generate its stored outputs.

The single source of truth is ``notebooks/src/*.cells`` (one file per section, read in name order).
A ``.cells`` file is plain text split into cells by marker lines:

    %% md                       a markdown cell follows
    %% code                     a code cell follows
    %% code tags=a,b            a code cell with notebook tags (e.g. raises-exception)

Usage:
    python scripts/build_notebook.py            # assemble + execute, write the .ipynb with outputs
    python scripts/build_notebook.py --check    # exit 1 if the .ipynb's cells differ from the source
    python scripts/build_notebook.py --no-execute
    python scripts/build_notebook.py --only 06 --out /tmp/draft.ipynb   # draft one section (+ 00)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "notebooks" / "src"
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"
KERNEL_TIMEOUT = 600


def parse_cells(text: str, origin: str = "<cells>") -> list[dict]:
    """Split a .cells text into [{'kind', 'source', 'tags'}]."""
    cells, current = [], None
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("%% "):
            words = line[3:].split()
            if not words or words[0] not in ("md", "code"):
                raise SystemExit(f"{origin}:{lineno}: unknown cell marker {line!r}")
            tags = []
            for word in words[1:]:
                key, _, value = word.partition("=")
                if key != "tags" or not value:
                    raise SystemExit(f"{origin}:{lineno}: unknown option {word!r}")
                tags = value.split(",")
            current = {"kind": words[0], "lines": [], "tags": tags}
            cells.append(current)
        elif current is None:
            if line.strip():
                raise SystemExit(f"{origin}:{lineno}: text before the first '%% md' or '%% code' marker")
        else:
            current["lines"].append(line)
    out = []
    for cell in cells:
        source = "\n".join(cell["lines"]).strip("\n")
        if source.strip():
            out.append({"kind": cell["kind"], "source": source, "tags": cell["tags"]})
    return out


def source_cells(only: list[str] | None = None) -> list[dict]:
    """Cells of every section file, or only of files whose name starts with one of ``only`` (plus 00)."""
    cells = []
    for path in sorted(SRC.glob("*.cells")):
        if only and not any(path.name.startswith(p) for p in ["00", *only]):
            continue
        cells.extend(parse_cells(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))))
    return cells


def assemble(only: list[str] | None = None):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for index, cell in enumerate(source_cells(only)):
        make = nbformat.v4.new_markdown_cell if cell["kind"] == "md" else nbformat.v4.new_code_cell
        nb_cell = make(cell["source"])
        # Stable ids keep diffs of the stored notebook small.
        nb_cell["id"] = f"c{index:03d}-" + hashlib.sha1(cell["source"].encode()).hexdigest()[:8]
        if cell["tags"]:
            nb_cell.metadata["tags"] = cell["tags"]
        nb.cells.append(nb_cell)
    return nb


def _strip_volatile(nb):
    """Execution timestamps change every run; drop them so regenerating gives a clean diff."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_PLACEHOLDER = "运行这一格后会显示交互控件"


def widget_placeholders(nb):
    """A stored widget's plain-text fallback is its repr (``VBox(children=…``); before the first run a learner
    sees that text, so store one Chinese line instead. The widget view itself is kept."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_MIME in data:
                data["text/plain"] = WIDGET_PLACEHOLDER
    return nb


def execute(nb):
    from nbclient import NotebookClient

    env_before = dict(os.environ)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # A fresh progress file: the stored outputs and widget state never carry a developer's own answers.
    os.environ["LESSON_PROGRESS_FILE"] = os.path.join(tempfile.mkdtemp(prefix="day11-build-"), "progress.json")
    try:
        client = NotebookClient(
            nb,
            timeout=KERNEL_TIMEOUT,
            kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
            store_widget_state=True,
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    return widget_placeholders(_strip_volatile(nb))


def check() -> int:
    import nbformat

    stored = nbformat.read(NOTEBOOK, as_version=4)
    built = assemble()
    got = [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in stored.cells]
    want = [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in built.cells]
    if got != want:
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                print(f"cell {i} differs from notebooks/src: stored {g[1][:60]!r}… vs source {w[1][:60]!r}…")
                break
        else:
            print(f"the notebook has {len(got)} cells, the source {len(want)}")
        print("Run: python scripts/build_notebook.py   (edit notebooks/src/*.cells, not the .ipynb)")
        return 1
    missing = [i for i, c in enumerate(stored.cells) if c.cell_type == "code" and c.execution_count is None]
    if missing:
        print(f"code cells {missing[:5]} have no stored output; run: python scripts/build_notebook.py")
        return 1
    print(f"{NOTEBOOK.relative_to(ROOT)}: {len(got)} cells match notebooks/src")
    return 0


def main(argv=None) -> int:
    import nbformat

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="verify the stored notebook matches the source")
    parser.add_argument("--no-execute", action="store_true", help="assemble only, without outputs")
    parser.add_argument("--only", nargs="+", metavar="NN", help="draft: only these section files (00 always)")
    parser.add_argument("--out", type=Path, help="write here instead of the lesson notebook (drafts)")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    if args.only and not args.out:
        parser.error("--only builds a draft: give --out too, so the lesson notebook stays whole")
    out = args.out or NOTEBOOK
    nb = assemble(args.only)
    if not args.no_execute:
        start = time.perf_counter()
        nb = execute(nb)
        print(f"executed {len(nb.cells)} cells in {time.perf_counter() - start:.1f} s")
    nbformat.write(nb, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
