"""lesson_lib's rooms are layers (CONTRIBUTING: What may import what): import-linter's contracts in pyproject.toml,
checked by ``lint-imports``: no arrow from a lower room to a higher one, no cycle between a room's modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from helpers import scaled

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """lint-imports on the lesson_lib below ``root`` (it puts its working directory first on sys.path)."""
    command = [str(LINT_IMPORTS), "--no-cache"]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=scaled(120))


def test_the_rooms_keep_their_layers():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_lazy_upward_import_and_a_cycle_are_found(tmp_path):
    """The contracts are not vacuous: a lazy import up the layers and a cycle in a room both break them."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(ROOT / "lesson_lib", tmp_path / "lesson_lib", ignore=shutil.ignore_patterns("__pycache__"))
    sections = tmp_path / "lesson_lib" / "sections"
    upward = "\n\ndef planted():\n    from lesson_lib.sections import s09_paper\n"
    with open(tmp_path / "lesson_lib" / "models" / "toy" / "task.py", "a", encoding="utf-8") as f:
        f.write(upward)
    with open(sections / "s09_paper.py", "a", encoding="utf-8") as f:
        f.write("\nfrom lesson_lib.sections import s02_averaging\n")
    with open(sections / "s02_averaging.py", "a", encoding="utf-8") as f:
        f.write("\nfrom lesson_lib.sections import s09_paper\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert "lesson_lib.models.toy.task -> lesson_lib.sections.s09_paper" in result.stdout
    cycle_report = result.stdout.split("No cycles are allowed in lesson_lib.sections", 1)[1]
    assert "s09_paper -> .s02_averaging" in cycle_report or "s02_averaging -> .s09_paper" in cycle_report


def test_every_top_level_entry_is_a_layer():
    """A new room of lesson_lib is placed in the layer order, not left outside every contract."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the backport import-linter itself uses
        import tomli as tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = config["tool"]["importlinter"]["contracts"][0]["layers"]
    entries = {p.stem for p in (ROOT / "lesson_lib").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert entries - {"__init__", "__main__"} == set(layers)
