"""The learner's personal copies of the lesson and its optional labs: made on first open, never committed,
never overwritten.

    python scripts/personal_copy.py           # make the copy if missing; print its path
    python scripts/personal_copy.py --open    # the same, then open it in JupyterLab (what setup.sh runs)
                                              # (JupyterLab shows the whole course; as root it adds --allow-root)
    python scripts/personal_copy.py --fresh   # a fresh copy; the old one is renamed aside, not deleted
    python personal_copy.py --source DIR --home DIR --update   # a hub (binder/start): the image's lesson in DIR,
                                              # the copy in the student's home, renewed when the course changed

The copy lives in ``my_lesson/`` (git-ignored), so running the lesson never dirties the repository and a
``git pull`` of an updated lesson never conflicts with the learner's own run. The kernel is this
environment's Python, so the copy imports the installed ``lesson_lib``; the progress file lives in the
learner's data folder (see ``lesson_lib.practice.progress``), found from any copy.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import secrets
import shutil
import socket
import sys
import webbrowser
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
LESSON = Path("notebooks") / "day11_multi_head_attention.ipynb"
LABS = (Path("notebooks") / "lab_real_heads.ipynb", Path("notebooks") / "lab_ablation.ipynb")  # optional labs
COPY_DIR = Path("my_lesson")
STAMP = ".copied-from"  # beside each copy: the sha1s of its source and of the copy as written (see _stamp)


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def _same_bytes(copy: Path, source: Path) -> bool:
    return source.exists() and copy.read_bytes() == source.read_bytes()


def copy_path(root: Path = ROOT) -> Path:
    return root / COPY_DIR / LESSON.name


def sign(path: Path) -> bool:
    """Mark the copy as trusted (what ``jupyter trust`` does): it opens with its stored pictures and widgets, in
    the learner's theme, before any Run All. A file that is not a notebook is left as it is."""
    try:
        import nbformat
        from nbformat.sign import NotebookNotary

        NotebookNotary().sign(nbformat.read(path, as_version=4))
    except Exception:  # no nbformat, not a notebook, an unwritable signature store: the copy still opens
        return False
    return True


def ensure_labs(root: Path = ROOT, home: Path | None = None) -> list[Path]:
    """Copy each optional lab beside the lesson's copy when it has none (the notebooks link to each other by
    name, so the links work in the copies too); a lab the learner already has is never overwritten."""
    made = []
    for lab in LABS:
        source, target = root / lab, (home or root) / COPY_DIR / lab.name
        if source.exists() and not target.exists():
            _make(source, target)
            made.append(target)
    return made


def _stamp(copy: Path) -> Path:
    """The hidden file beside ``copy`` that says what it was made from. The lesson's keeps the name it had
    when it was the only one, so a student's copy made before the labs had stamps is still recognised."""
    return copy.with_name(STAMP if copy.name == LESSON.name else f".{copy.stem}{STAMP}")


def _made_from(copy: Path) -> tuple[str, str] | None:
    """(the source's sha1, the copy's sha1 as written) when ``copy`` was made; None when no stamp says.
    An older stamp holds one sha1: that copy was the source byte for byte."""
    stamp = _stamp(copy)
    shas = stamp.read_text(encoding="utf-8").split() if stamp.exists() else []
    return (shas[0], shas[-1]) if shas else None  # an empty stamp (a full disk) says nothing either


def _make(source: Path, target: Path, notice: str = "") -> None:
    """Copy ``source`` to ``target`` (with ``notice`` as its first cell, if any), stamp and sign it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    if notice:
        _notice(target, notice)
    # the copy's own sha1 too: one whose notice is all that differs from the source is still untouched
    _stamp(target).write_text(f"{_sha1(source)} {_sha1(target)}", encoding="utf-8")
    sign(target)


def lesson_changed(root: Path = ROOT, home: Path | None = None) -> bool:
    """The lesson is not the one the copy was made from (a course update since)."""
    made = _made_from(copy_path(home or root))
    return made is not None and made[0] != _sha1(root / LESSON)


REOPEN_LINE = "打开你的个人副本：{copy}"
MADE_LINE = "已为你建好个人副本：{copy}（你的运行和修改都只留在这里，不会改动仓库）。"


def ensure_copy(root: Path = ROOT, home: Path | None = None) -> tuple[Path, str]:
    """(the copy's path, a Chinese line for the terminal). Makes the copy only when there is none.
    ``home``: where the copy goes when it is not the course folder (a hub: the student's home)."""
    home = home or root
    source, target = root / LESSON, copy_path(home)
    ensure_labs(root, home)
    if not target.exists():
        _make(source, target)
        return target, MADE_LINE.format(copy=target.relative_to(home))
    line = REOPEN_LINE.format(copy=target.relative_to(home))
    if lesson_changed(root, home):
        line += ("。课程笔记本已经更新过；想换成新版，运行 .venv/bin/python scripts/personal_copy.py --fresh"
                 "（旧副本会改名保留）。")  # fmt: skip
    return target, line


def _aside(path: Path) -> Path:
    """Rename ``path`` to …-<time>.ipynb beside it; never onto an earlier one kept in the same second."""
    when = f"{datetime.now():%Y%m%d-%H%M%S}"
    aside = path.with_name(f"{path.stem}-{when}{path.suffix}")
    n = 1
    while aside.exists():
        aside = path.with_name(f"{path.stem}-{when}-{n}{path.suffix}")
        n += 1
    os.replace(path, aside)
    return aside


def fresh_copy(root: Path = ROOT, home: Path | None = None) -> tuple[Path, str]:
    """Rename the current copy aside (…-<time>.ipynb) and make a new one from the lesson."""
    home = home or root
    target = copy_path(home)
    kept = ""
    if target.exists():
        kept = f"旧副本保存为 {_aside(target).relative_to(home)}。"
    for lab in LABS:  # the labs get fresh copies too; a learner's own is kept under the same time stamp
        old = home / COPY_DIR / lab.name
        # one byte for byte what the course writes now holds nothing of the learner's: it stays as it is
        if old.exists() and not _same_bytes(old, root / lab):
            _aside(old)
    path, line = ensure_copy(root, home)
    return path, line + kept


UPDATE_NOTICE = ("**课程更新了。** 这是新版课程的副本；你之前的副本改名保存为 `{old}`，里面的运行和修改都还在。"
                 "自测题的答案和进度存在你的进度文件里，不在笔记本里：运行单元格，你做过的题就会回来"
                 "（改过的题会标明你答的是旧版）。")


def update_copy(root: Path, home: Path) -> tuple[Path, str]:
    """A hub's server start (binder/start): make the copies on first open; after a course update, each notebook
    (the lesson, each lab) renewed on its own (``_renew``). (the lesson's copy, a Chinese line for the terminal)"""
    target = copy_path(home)
    line = (REOPEN_LINE if target.exists() else MADE_LINE).format(copy=target.relative_to(home))
    renewed = (_renew(root / notebook, home / COPY_DIR / notebook.name) for notebook in (LESSON, *LABS))
    kept = [old for old in renewed if old is not None]
    if kept:
        names = "、".join(old.name for old in kept)
        line = f"{line.rstrip('。')}。课程更新了：你改过的副本改名保存为 {names}，新版副本的第一格有说明。"
    return target, line


def _renew(source: Path, target: Path) -> Path | None:
    """Bring one copy to the course's ``source``: made when missing; when the course changed it, a copy still
    as it was made is replaced (nothing of the student's in it), one the student changed is renamed aside (the
    path returned, never deleted) and the new copy's first cell names it. One already the same is left alone."""
    if not source.exists():
        return None  # an optional lab this image does not have
    if not target.exists():
        _make(source, target)
        return None
    made = _made_from(target)
    now = _sha1(target)
    new = _sha1(source)
    if now == new:
        _stamp(target).write_text(f"{new} {new}", encoding="utf-8")  # e.g. a lab copied before labs had stamps
        return None
    if made is not None and made[0] == new:
        return None  # the course did not change this notebook: the student's copy is theirs
    if made is not None and made[1] == now:
        _make(source, target)
        return None
    old = _aside(target)  # changed by the student, or no stamp to tell: kept, never overwritten
    _make(source, target, UPDATE_NOTICE.format(old=old.name))
    return old


def _notice(path: Path, text: str) -> None:
    """Put a Markdown cell with ``text`` first in the notebook at ``path`` (and sign it again)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(text))
    nbformat.write(nb, path)
    sign(path)


ROOT_NOTICE = ("你正以 root 身份运行，所以加上 --allow-root 启动 JupyterLab（在容器或云服务器里这很常见）；"
               "在多人共用的机器上，用普通账户运行更安全。")
OPEN_LINE = ("课程已启动：在浏览器里打开 {url} （你的副本 {copy}；左边的文件浏览器里是整个课程）。"
             "学完后在这个终端按 Ctrl+C 结束。")


def free_port() -> int:
    """A port nobody listens on now: the line printed before the server starts already names the right one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def has_browser() -> bool:
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False  # a server or a container: JupyterLab would log an English warning; the URL line is enough
    return True


def lab_command(path: Path, root: Path = ROOT, as_root: bool | None = None, port: int | None = None,
                token: str = "", browser: bool | None = None) -> tuple[list[str], list[str]]:
    """(argv that opens ``path`` in JupyterLab serving the whole course at ``root``, Chinese lines to print first).
    The server logs warnings only; the one line printed here carries the URL, token included, and how to stop."""
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    port = port or free_port()
    lab = Path(sys.executable).with_name("jupyter")
    relative = path.relative_to(root).as_posix()
    # root_dir is the course, not my_lesson/: the README, notebooks/ and lesson_lib/ stay one click away.
    argv = [str(lab), "lab", f"--ServerApp.root_dir={root}", relative, "--ServerApp.log_level=WARN",
            "--LabApp.log_level=WARN",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if not (has_browser() if browser is None else browser):
        argv.append("--no-browser")
    url = f"http://localhost:{port}/lab/tree/{quote(relative)}" + (f"?token={token}" if token else "")
    lines = [OPEN_LINE.format(url=url, copy=relative)]
    if as_root:
        # JupyterLab refuses root without this flag; a container, a class's image or a cloud server runs as root.
        argv.append("--allow-root")
        lines.insert(0, ROOT_NOTICE)
    return argv, lines


USAGE = "用法："  # argparse's 「usage: 」
HEADINGS = {"options": "选项", "optional arguments": "选项", "positional arguments": "参数"}  # argparse's groups


class ChineseHelp(argparse.RawDescriptionHelpFormatter):
    """argparse's own words in --help (「usage:」「options:」, -h's line) in Chinese, as the rest of what the
    instructor's scripts say. Here, not in a module of its own: binder/postBuild copies this file alone into a
    hub's image. scripts/build_notebook.py loads it from here."""

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, USAGE if prefix is None else prefix)

    def start_section(self, heading):
        super().start_section(HEADINGS.get(heading, heading))

    def _get_help_string(self, action):
        return "显示这段说明，然后退出" if "-h" in action.option_strings else super()._get_help_string(action)


# argparse's own error messages (Python 3.10-3.13) in Chinese; any other message is quoted as it is
ERRORS = (
    (r"unrecognized arguments: (?P<args>.+)", "不认识的参数 {args}"),
    (r"argument (?P<arg>\S+): expected one argument", "参数 {arg} 后面要跟一个值"),
    (r"argument (?P<arg>\S+): expected at least one argument", "参数 {arg} 后面至少要跟一个值"),
    (r"argument (?P<arg>\S+): invalid choice: (?P<value>.+?) \(choose from (?P<choices>.+)\)",
     "参数 {arg} 不能取 {value}，可选的是 {choices}"),
    (r"the following arguments are required: (?P<args>.+)", "缺少必须给出的参数 {args}"),
)


class ChineseParser(argparse.ArgumentParser):
    """An ArgumentParser that speaks Chinese: --help through ChineseHelp, and a wrong command line gets one line
    saying what was wrong and what to do, exit 2 (argparse would print its English usage and 「error:」)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", ChineseHelp)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}：{self.chinese(message)}\n")

    def chinese(self, message: str) -> str:
        """``message`` in Chinese, with where to look next. The script's own messages (already Chinese) say
        what to do themselves and are kept as they are."""
        hint = "；可用的参数：把这条命令的参数换成 --help 再运行"
        for pattern, chinese in ERRORS:
            if found := re.fullmatch(pattern, message):
                return chinese.format(**found.groupdict()) + hint
        if re.search("[\u4e00-\u9fff]", message):  # a Chinese message of the script's own
            return message
        return f"命令行有误（{message}）{hint}"


def main(argv: list[str]) -> int:
    description = "学生的个人副本（my_lesson/ 里，git 不记录）：第一次打开时建好，之后从不覆盖。"
    parser = ChineseParser(description=description)
    parser.add_argument("--open", action="store_true",
                        help="建好（或找到）副本后在 JupyterLab 里打开它（setup.sh 运行的就是这个）")
    parser.add_argument("--fresh", action="store_true", help="换一份新副本：旧副本改名保留，不删除")
    parser.add_argument("--update", action="store_true",
                        help="Hub 上（binder/start）：课程更新后换成新版副本，学生改过的旧副本改名保留")
    parser.add_argument("--source", type=Path, default=ROOT, metavar="DIR",
                        help="放着 notebooks/ 的课程文件夹（默认：这个仓库）")
    parser.add_argument("--home", type=Path, metavar="DIR", help="my_lesson/ 建在哪里（默认：--source 的文件夹）")
    args = parser.parse_args(argv)
    if not (args.source / LESSON).is_file():
        parser.error(f"--source 的文件夹 {args.source} 里没有 {LESSON.as_posix()}：请给出放着课程 notebooks/ 的文件夹")
    if args.update:
        path, line = update_copy(args.source, args.home or args.source)
    elif args.fresh:
        path, line = fresh_copy(args.source, args.home)
    else:
        path, line = ensure_copy(args.source, args.home)
    if not args.open:
        print(line)
        print(path)
        return 0
    if line != REOPEN_LINE.format(copy=path.relative_to(args.home or args.source)):
        print(line, file=sys.stderr)  # news (a copy made, a course update); a plain reopen is the URL line below
    token = os.environ.setdefault("JUPYTER_TOKEN", secrets.token_hex(24))  # in the environment, not in `ps`
    command, lines = lab_command(path, token=token)
    for text in lines:
        print(text, file=sys.stderr)
    sys.stderr.flush()
    os.chdir(ROOT)
    os.execv(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
