"""Build the lesson notebook from its source and (re)generate its stored outputs.

The single source of truth is ``notebooks/src/NN_*.md`` (one file per section, read in name order),
each a notebook in jupytext's MyST Markdown: prose as Markdown, code in ```{code-cell}``` blocks
(``:tags: [raises-exception]`` under the opening line sets tags), ``+++`` between two Markdown cells.
JupyterLab with jupytext opens these files as notebooks; any editor shows them as Markdown.

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


def parse_cells(text: str, origin: str = "<section>") -> list[dict]:
    """A section file's cells as [{'kind': 'md' | 'code', 'source', 'tags'}], read by jupytext as MyST."""
    import jupytext

    front = text.split("\n---", 1)[0] if text.startswith("---\n") else ""
    if "format_name: myst" not in front:
        raise SystemExit(f"{origin}: not a MyST notebook (it must start with jupytext's header naming "
                         "format_name: myst; open it in JupyterLab with jupytext, or copy a section's header)")
    out = []
    for index, cell in enumerate(jupytext.reads(text, fmt="md:myst").cells, 1):
        if cell.cell_type not in ("markdown", "code"):
            raise SystemExit(f"{origin}: cell {index} is a {cell.cell_type} cell; use markdown or code cells")
        if cell.source.strip():
            out.append({"kind": "md" if cell.cell_type == "markdown" else "code",
                        "source": cell.source, "tags": list(cell.metadata.get("tags", []))})
    return out


def source_cells(only: list[str] | None = None) -> list[dict]:
    """Cells of every section file, or only of files whose name starts with one of ``only`` (plus 00)."""
    cells = []
    for path in sorted(SRC.glob("*.md")):
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


def _merge_streams(nb):
    """A cell's prints arrive as one or several stream outputs depending on when the kernel flushed: store one
    output per run of the same stream, so regenerating does not split a table between two outputs by chance."""
    for cell in nb.cells:
        merged = []
        for output in cell.get("outputs", []):
            if merged and output.get("output_type") == "stream" == merged[-1].get("output_type") \
                    and output.get("name") == merged[-1].get("name"):
                merged[-1]["text"] += output["text"]
            else:
                merged.append(output)
        if "outputs" in cell:
            cell["outputs"] = merged
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
    return widget_placeholders(_merge_streams(_strip_volatile(nb)))


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
        print("Run: python scripts/build_notebook.py   (edit notebooks/src/*.md, not the .ipynb)")
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
