"""CONTRIBUTING.md's module map lists every lesson_lib module and package once, and nothing that is not there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lesson_lib"


def tree() -> list[str]:
    """'attention', 'practice/', 'practice/quiz', …: every module and package, without __init__ / __main__."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if "__pycache__" in rel.parts:
            continue
        if rel.stem in ("__init__", "__main__"):
            if rel.stem == "__init__" and rel.parent != Path("."):
                names.append(f"{rel.parent.as_posix()}/")
            continue
        names.append(rel.with_suffix("").as_posix())
    return names


def module_map() -> list[str]:
    """The map's entries: bullets `name` or `package/`, nested two spaces deeper under their package."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("\n## Module map\n", 1)[1].split("\n## ", 1)[0]
    names, stack = [], []  # stack: the packages enclosing the current depth
    for line in section.splitlines():
        m = re.match(r"( *)- `([a-z_0-9]+/?)`", line)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        assert depth <= len(stack), f"nested entry outside a package: {line!r}"
        del stack[depth:]
        name = "".join(stack) + m.group(2)
        names.append(name)
        if name.endswith("/"):
            stack.append(m.group(2))
    return names


def test_module_map_matches_the_tree():
    listed, present = module_map(), tree()
    assert len(listed) == len(set(listed)), f"listed twice: {sorted({n for n in listed if listed.count(n) > 1})}"
    assert sorted(set(present) - set(listed)) == [], "modules missing from CONTRIBUTING.md's module map"
    assert sorted(set(listed) - set(present)) == [], "CONTRIBUTING.md's module map lists modules that do not exist"


def test_the_map_reader_finds_packages_and_their_modules():
    """The comparison is not vacuous: the map has entries for packages and their modules."""
    listed = module_map()
    assert "attention" in listed and "sections/s06_real_heads/" in listed and "sections/s06_real_heads/views" in listed
    assert len(listed) > 40
