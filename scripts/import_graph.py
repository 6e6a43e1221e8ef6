"""lesson_lib's import graph: modules, lines, arrows between files, cycles and the layer order.

    python scripts/import_graph.py            prints the counts (CONTRIBUTING's layers; tests/test_layers.py holds them)
"""

from __future__ import annotations

import ast
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Lowest first: a module may import from its own layer or a lower one, never a higher one.
LAYERS = ("runtime", "show", "paper", "checks", "attention", "head_stats", "costs", "models", "practice", "sections")


def modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for path in sorted((root / "lesson_lib").rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def arrows(mods: dict[str, Path]) -> set[tuple[str, str]]:
    """(importer, imported) for every import of one lesson_lib module by another, lazy ones included."""
    edges = set()
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
                name = ".".join(base + ([node.module] if node.module else []))
                targets = [name] + [f"{name}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target in mods and target != mod and not mod.startswith(target + "."):
                    edges.add((mod, target))
    return edges


def layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else -1


def cycles(edges) -> list[list[str]]:
    adj: dict[str, set[str]] = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
    found, done, stack = [], set(), []

    def visit(m):
        stack.append(m)
        for t in sorted(adj.get(m, ())):
            if t in stack:
                found.append(stack[stack.index(t):] + [t])
            elif t not in done:
                visit(t)
        stack.pop()
        done.add(m)

    for m in sorted(adj):
        if m not in done:
            visit(m)
    return found


def upward(edges) -> list[tuple[str, str]]:
    return sorted((a, b) for a, b in edges if layer(a) < layer(b))


def depth(edges) -> int:
    adj: dict[str, set[str]] = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)

    @lru_cache(None)
    def longest(m: str) -> int:
        return 1 + max((longest(t) for t in adj.get(m, ())), default=0)

    return max((longest(m) for m in adj), default=0)


def main(root: Path = ROOT) -> None:
    mods = modules(root)
    edges = arrows(mods)
    top = sorted({m.split(".")[1] for m in mods if "." in m})
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in mods.values())
    found = cycles(edges)
    print(f"files: {len(mods)}; top-level entries of lesson_lib: {len(top)}; lines: {lines}")
    print(f"import arrows between files: {len(edges)}; cycles: {len(found)}")
    if not found:
        print(f"longest import chain: {depth(edges)} modules")
    print(f"arrows from a lower layer to a higher one ({' < '.join(LAYERS)}): {len(upward(edges))}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT)
