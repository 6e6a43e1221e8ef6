"""The learner's personal copies of the lesson and its optional labs: made on first open, never committed,
never overwritten.

    python scripts/personal_copy.py           # make the copy if missing; print its path
    python scripts/personal_copy.py --open    # the same, then open it in JupyterLab (what setup.sh runs)
                                              # (JupyterLab shows the whole course; as root it adds --allow-root)
    python scripts/personal_copy.py --fresh   # a fresh copy; the old one is renamed aside, not deleted

The copy lives in ``my_lesson/`` (git-ignored), so running the lesson never dirties the repository and a
``git pull`` of an updated lesson never conflicts with the learner's own run. The kernel is this
environment's Python, so the copy imports the installed ``lesson_lib``; the progress file lives in the
learner's data folder (see ``lesson_lib.practice.progress``), found from any copy.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LESSON = Path("notebooks") / "day11_multi_head_attention.ipynb"
LABS = (Path("notebooks") / "lab_real_heads.ipynb", Path("notebooks") / "lab_ablation.ipynb")  # optional labs
COPY_DIR = Path("my_lesson")
STAMP = ".copied-from"  # the lesson's sha1 when the copy was made: tells the learner when the lesson changed


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def copy_path(root: Path = ROOT) -> Path:
    return root / COPY_DIR / LESSON.name


def ensure_labs(root: Path = ROOT) -> list[Path]:
    """Copy each optional lab beside the lesson's copy when it has none (the notebooks link to each other by
    name, so the links work in the copies too); a lab the learner already has is never overwritten."""
    made = []
    for lab in LABS:
        source, target = root / lab, root / COPY_DIR / lab.name
        if source.exists() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            made.append(target)
    return made


def ensure_copy(root: Path = ROOT) -> tuple[Path, str]:
    """(the copy's path, a Chinese line for the terminal). Makes the copy only when there is none."""
    source, target = root / LESSON, copy_path(root)
    stamp = target.parent / STAMP
    ensure_labs(root)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        stamp.write_text(_sha1(source), encoding="utf-8")
        return target, f"已为你建好个人副本：{target.relative_to(root)}（你的运行和修改都只留在这里，不会改动仓库）。"
    line = f"打开你的个人副本：{target.relative_to(root)}"
    if stamp.exists() and stamp.read_text(encoding="utf-8").strip() != _sha1(source):
        line += ("。课程笔记本已经更新过；想换成新版，运行 .venv/bin/python scripts/personal_copy.py --fresh"
                 "（旧副本会改名保留）。")  # fmt: skip
    return target, line


def fresh_copy(root: Path = ROOT) -> tuple[Path, str]:
    """Rename the current copy aside (…-<time>.ipynb) and make a new one from the lesson."""
    target = copy_path(root)
    kept = ""
    if target.exists():
        aside = target.with_name(f"{target.stem}-{datetime.now():%Y%m%d-%H%M%S}{target.suffix}")
        os.replace(target, aside)
        kept = f"旧副本保存为 {aside.relative_to(root)}。"
    for lab in LABS:  # the labs get fresh copies too; the old ones are kept under the same time stamp
        old = root / COPY_DIR / lab.name
        if old.exists():
            os.replace(old, old.with_name(f"{old.stem}-{datetime.now():%Y%m%d-%H%M%S}{old.suffix}"))
    path, line = ensure_copy(root)
    return path, line + kept


ROOT_NOTICE = ("你正以 root 身份运行，所以加上 --allow-root 启动 JupyterLab（在容器或云服务器里这很常见）；"
               "在多人共用的机器上，用普通账户运行更安全。")
WHERE_LINE = ("JupyterLab 左边的文件浏览器里是整个课程（README.md、notebooks/、lesson_lib/……）；"
              "你的作答只保存在 {copy} 里。")


def lab_command(path: Path, root: Path = ROOT, as_root: bool | None = None) -> tuple[list[str], list[str]]:
    """(argv that opens ``path`` in JupyterLab serving the whole course at ``root``, Chinese lines to print first)."""
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    lab = Path(sys.executable).with_name("jupyter")
    # root_dir is the course, not my_lesson/: the README, notebooks/ and lesson_lib/ stay one click away.
    argv = [str(lab), "lab", f"--ServerApp.root_dir={root}", path.relative_to(root).as_posix()]
    lines = [WHERE_LINE.format(copy=path.relative_to(root).as_posix())]
    if as_root:
        # JupyterLab refuses root without this flag; a container, a class's image or a cloud server runs as root.
        argv.append("--allow-root")
        lines.insert(0, ROOT_NOTICE)
    return argv, lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--open", action="store_true", help="open the copy in JupyterLab")
    parser.add_argument("--fresh", action="store_true", help="a fresh copy; the old one is renamed aside")
    args = parser.parse_args(argv)
    path, line = fresh_copy() if args.fresh else ensure_copy()
    print(line, file=sys.stderr if args.open else sys.stdout)
    if not args.open:
        print(path)
        return 0
    command, lines = lab_command(path)
    for text in lines:
        print(text, file=sys.stderr)
    sys.stderr.flush()
    os.chdir(ROOT)
    os.execv(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
