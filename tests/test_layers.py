"""lesson_lib's packages are layers: no import cycle, and no module imports from a layer above its own."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(graph)


def test_no_import_cycle():
    assert graph.cycles(graph.arrows(graph.modules())) == []


def test_no_arrow_from_a_lower_layer_to_a_higher_one():
    assert graph.upward(graph.arrows(graph.modules())) == []


def test_every_top_level_entry_is_a_layer():
    tops = {m.split(".")[1] for m in graph.modules() if "." in m}
    assert tops == set(graph.LAYERS)


def test_the_reader_sees_lazy_and_relative_imports(tmp_path):
    """The checks above are not vacuous: a lazy import up the layers and a relative cycle are both found."""
    lib = tmp_path / "lesson_lib"
    for pkg in ("models", "sections"):
        (lib / pkg).mkdir(parents=True)
        (lib / pkg / "__init__.py").write_text("")
    (lib / "__init__.py").write_text("")
    (lib / "models" / "a.py").write_text("def f():\n    from lesson_lib.sections import b\n")
    (lib / "sections" / "b.py").write_text("from lesson_lib.models import a\n")
    edges = graph.arrows(graph.modules(tmp_path))
    assert ("lesson_lib.models.a", "lesson_lib.sections.b") in graph.upward(edges)
    assert graph.cycles(edges)
