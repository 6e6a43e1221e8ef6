"""班级报告：把全班的进度文件汇成一页离线网页（HTML）和一张表（CSV），给讲师备下一节课。

    python scripts/class_report.py                # Hub 上（以管理员身份）：读 /home/*/.local/share/…/progress.json
    python scripts/class_report.py 收上来的文件夹/ a.json   # 收集来的导出文件（progress-export.json）或进度文件
    python scripts/class_report.py --out 报告 --names --recheck

It only reads: a student's file is never renamed, rewritten or followed through a link. Students are numbered
(学生 1, 2, …, in path order) unless ``--names`` is given. ``--recheck`` runs each exercise a student passed again
from the stored source in scripts/recheck_sandbox.py (an unprivileged user, namespaces, limits, killed at the
budget; only a JSON verdict comes back); a pass that does not repeat is marked 「未确认」, and the terminal's last
line says how many were checked, as which user, and how many were not confirmed.
Bad input (unreadable, another course's file, a newer format, a link) is one line on stderr and skipped; an entry
of the wrong type or size, or with an id this course does not have, is left out (as the lesson does) and said
(counted: a file's own ids are never quoted). The page may be projected to the class: a mistake is said in the
course's words only, and the ids a course does not have are counted per question or exercise, never shown.
On a hub (no path given, run with sudo) the admin's own trial file (the home of SUDO_UID) is no student: it is left
out with a line on stderr unless ``--include-mine``. Every path printed has its control characters escaped.
The report is written as new files renamed into place: a link left in the output folder is replaced, never
written through; under sudo, the folders it makes and the files it writes there are the admin's (SUDO_UID).
Answers to an earlier version of a question are counted apart, never mixed with the current version's.
"""

from __future__ import annotations

import csv
import errno
import glob
import hashlib
import importlib.util
import io
import json
import os
import re
import secrets
import stat
import sys
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HUB_GLOB = "/home/*/.local/share/day11-multi-head-attention/progress.json"
LIVE, EXPORT = "progress.json", "progress-export.json"
MAX_BYTES = 5 * 1024 * 1024  # the progress store's own cap: a real file is a few KB
INTERVIEW = "面试"


# ------------------------------------------------------------------------------------------ reading the files
@dataclass
class Student:
    label: str
    path: Path
    data: dict
    unconfirmed: list[str] = field(default_factory=list)  # exercises whose pass --recheck did not repeat


def candidate_files(paths: list[str], warn=lambda line: None, mine: bool = False) -> list[Path]:
    """Every .json under the given folders (never entering a linked folder) and the given files; the hub's home
    folders when none is given (not through a link: ``~/.local`` may be a student's link to anywhere), without
    the trial file of the admin who ran sudo unless ``mine``."""
    if not paths:
        env = os.environ.get("LESSON_PROGRESS_FILE")
        found = []
        own = None if mine else admins_home()
        for p in sorted(glob.glob(HUB_GLOB)):
            if os.path.realpath(os.path.dirname(p)) != os.path.dirname(os.path.abspath(p)):
                warn(f"跳过 {p}：所在的文件夹经过一个链接，不跟随。")
            elif own and Path(p).is_relative_to(own):  # the admin trying the lesson out is no student
                said = f"不算 {p}：这是运行报告的管理员自己的进度文件（要算作一名学生，请加 --include-mine）。"
                print(printable(said), file=sys.stderr)
            else:
                found.append(p)
        return [Path(p) for p in dict.fromkeys(found + ([env] if env else []))]
    out, files = [], []  # in the order given; files given one after another (a shell's in/*.json) sorted
    for p in map(Path, paths):
        if p.is_dir() and not p.is_symlink():
            out += sorted(files, key=_copies_last) + _search(p, warn)
            files = []
        else:
            files.append(p)
    out = list(dict.fromkeys(out + sorted(files, key=_copies_last)))
    # 「导出进度」 writes progress-export.json beside progress.json: the same student, read once (the live file).
    return [p for p in out if not (p.name == EXPORT and p.with_name(LIVE) in out)]


def admins_home() -> Path | None:
    """The home folder of the user who ran this with sudo (``invoker``), else None."""
    admin = invoker()
    if admin is None:
        return None
    import pwd  # only under sudo (Linux): Windows has no pwd

    try:
        return Path(os.path.abspath(pwd.getpwuid(admin[0]).pw_dir))
    except KeyError:
        return None


def _copies_last(path: Path | str) -> tuple:
    """Name order, with a copy a browser or file manager named 「bob (1).json」 right after bob.json (plain sorting
    puts it first: " " sorts before "."): a copy is skipped as the same content, so the file kept is the first."""
    key = []
    for part in Path(path).parts:
        copy = re.fullmatch(r"(.*?) ?\((\d+)\)(\.[^.]*)?", part)
        key.append((copy.group(1) + (copy.group(3) or ""), int(copy.group(2))) if copy else (part, 0))
    return tuple(key)


def _search(top: Path, warn) -> list[Path]:
    found = []

    def unreadable(exc: OSError) -> None:  # os.walk would skip the folder and its students without a word
        warn(f"跳过文件夹 {exc.filename}：读不到（{os_why(exc, _READING)}）。")

    # A link to a folder is listed, never entered.
    for folder, dirs, files in os.walk(top, followlinks=False, onerror=unreadable):
        dirs.sort(key=_copies_last)
        found += [Path(folder, f) for f in sorted(files, key=_copies_last) if f.endswith(".json")]
    return found


def _seen_before(path: Path, seen: dict) -> str:
    """Where this file was read already: the same file (device and inode: a hard link), or the same bytes as a
    file handed in under another name (``alice (1).json``: a copy); "" for a file not seen (or not a regular
    file: read_progress says why). Two files under the lesson's own names (progress.json, progress-export.json,
    each in its student's folder) are two students even with the same bytes: the file holds no student id, and
    two students who did the same in the same second write the same bytes."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return ""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            content = hashlib.sha256(f.read(MAX_BYTES + 1)).digest()
    except OSError:
        return ""
    own_name = path.name in (LIVE, EXPORT)
    # A renamed copy stands for one file of the lesson's name (the first met): it is used up when that one is met.
    copy_of = seen.pop(("renamed", content), "") if own_name else seen.get(("any", content), "")
    earlier = seen.get((st.st_dev, st.st_ino)) or copy_of
    recorded = [(st.st_dev, st.st_ino), ("any", content)] + ([] if own_name or earlier else [("renamed", content)])
    for key in recorded:
        seen.setdefault(key, path)  # the first file read under each key is the one a later copy names
    return str(earlier)


# An OSError in Chinese, with what to do (the OS's own words are English): reading a student's file, writing the report.
_DENIED = "没有{}权限：请用有权限的账户（或 sudo）运行"
_READING = {errno.EACCES: _DENIED.format("读取") + "，或把文件复制到你能读的地方",
            errno.ENOENT: "没有这个文件：检查路径的拼写（或它刚被移走了）",
            errno.ENOTDIR: "路径里有一段不是文件夹：检查路径",
            errno.EISDIR: "是一个文件夹，不是文件",
            errno.ELOOP: "路径里的链接太多或绕成了圈：给出文件本身的路径",
            errno.EIO: "磁盘读出错：把文件复制到别的磁盘再试"}
_WRITING = {errno.EACCES: _DENIED.format("写入") + "，或用 --out 换一个你能写的文件夹",
            errno.ENOENT: "路径里的文件夹不见了：检查 --out 的路径",
            errno.EROFS: "所在的磁盘是只读的：请用 --out 换一个可写的文件夹",
            errno.ENOSPC: "磁盘已经满了：腾出空间，或用 --out 换到另一个磁盘",
            errno.EDQUOT: "你的磁盘配额用完了：腾出空间，或用 --out 换到另一个磁盘",
            errno.EISDIR: "里面有一个同名的文件夹挡着：把它改名或移走，或用 --out 换一个文件夹",
            errno.ENOTDIR: "路径里有一段不是文件夹：请用 --out 给一个文件夹",
            errno.ENAMETOOLONG: "路径太长：请用 --out 给一个短一些的路径",
            errno.EIO: "磁盘写出错：请用 --out 换到另一个磁盘"}
_READING[errno.EPERM] = _READING[errno.EACCES]
_WRITING[errno.EPERM] = _WRITING[errno.EACCES]


def os_why(exc: OSError, table: dict) -> str:
    """``exc`` in Chinese from ``table`` (_READING or _WRITING); an errno not in it is named by its symbol."""
    return table.get(exc.errno, f"系统报告了错误 {errno.errorcode.get(exc.errno, type(exc).__name__)}")


def read_progress(path: Path) -> tuple[dict | None, str]:
    """(parsed JSON, "") for a regular file of a progress file's size that parses (known_entries then reads it as
    the lesson does), else (None, why) in Chinese. Never follows a link."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return None, f"读不到（{os_why(exc, _READING)}）"
    if stat.S_ISLNK(st.st_mode):
        return None, "是一个链接，不跟随"
    if not stat.S_ISREG(st.st_mode):
        return None, "不是普通文件"
    if st.st_size > MAX_BYTES:
        return None, f"太大（{st.st_size:,} 字节，进度文件只有几 KB）"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            return json.loads(f.read(MAX_BYTES + 1).decode("utf-8")), ""
    except OSError as exc:
        return None, f"读不到（{os_why(exc, _READING)}）"
    except UnicodeDecodeError:
        return None, "不是 UTF-8 编码（进度文件总是 UTF-8）"
    except json.JSONDecodeError:
        return None, "文件不完整或不是 JSON"
    except ValueError:  # json's only other ValueError: an integer longer than Python converts
        return None, "里面有一个大得离谱的数字，不是本课写的"
    except RecursionError:
        return None, "括号嵌套太深，不是本课写的"


def known_entries(raw, known: dict[str, set]) -> tuple[dict | None, str, str]:
    """(data, why, note): the entries of a parsed file the lesson keeps (``progress.migrate`` leaves out an entry
    with a field of a wrong type or size, as the lesson does) whose id this course has; ``note`` names, in
    Chinese, what was left out. (None, why, "") for a file that is not one at all, or of which nothing is left."""
    from lesson_lib.practice.progress import migrate

    try:
        data, bad = migrate(raw)
    except ValueError as exc:
        version = raw.get("version") if isinstance(raw, dict) else None
        if version is not None and type(version) is not int:  # migrate's line would quote the file's own text
            return None, "格式版本不是一个整数，不是本课写的", ""
        return None, str(exc), ""
    unknown = 0
    for kind, ids in known.items():  # another version of the course's, or a tampered file's: never counted
        for key in [key for key in data[kind] if key not in ids]:
            del data[kind][key]
            unknown += 1
    said = []
    if bad:  # migrate's lines quote the file's keys: only the course's own ids are named here
        named = [key for kind, ids in known.items() for key in _part(raw, kind) if key in ids and key not in data[kind]]
        said.append(f"略去了 {len(bad)} 条读不懂的记录" + (f"：{_some(named)}" if named else ""))
    if unknown:  # counted, never quoted: the page may be projected, and a file's keys are anyone's text
        said.append(f"略去了 {unknown} 个本课没有的题号或练习名（别的版本的课程或改过的文件）")
    if said and not any(data[kind] for kind in known):  # nothing left: not a student who answered nothing
        return None, "没有一条本课读得懂的记录：" + "；".join(said), ""
    return data, "", "；".join(said)


def _part(raw: dict, kind: str) -> dict:
    """One part of a parsed file as it was read (empty when it is not a dict)."""
    part = raw.get(kind)
    return part if isinstance(part, dict) else {}


def _some(items: list[str], shown: int = 5) -> str:
    return "、".join(items[:shown]) + (f" 等 {len(items)} 处" if len(items) > shown else "")


def load_class(paths: list[str], names: bool, warn, tell=lambda line: None, known=None, mine=False) -> list[Student]:
    """The students whose files read, in path order; ``warn`` gets a line per file skipped, ``tell`` one per file
    read with entries left out. ``known``: the course's ids per kind (``known_ids()``); ``mine``: as
    candidate_files."""
    known = known or known_ids()
    students, seen = [], {}
    for path in candidate_files(paths, warn, mine):
        note = ""
        try:  # one file, whatever it holds, never stops the report for the others
            earlier = _seen_before(path, seen)
            data, why = (None, f"和 {earlier} 是同一个文件或内容相同，只算一次") if earlier else read_progress(path)
            if data is not None:
                data, why, note = known_entries(data, known)
        except Exception as exc:
            data, why = None, f"读的时候出了意外的错（{type(exc).__name__}），请把这个文件交给课程的维护者"
        if data is None:
            warn(f"跳过 {path}：{why}。")
            continue
        if note:
            tell(f"读入 {path}，但{note}。")
        # A file name may hold a newline, ESC or BEL: the page and the CSV show it as the terminal does.
        label = printable(_name_of(path)) if names else f"学生 {len(students) + 1}"
        students.append(Student(label, path, data))
    return students


def known_ids() -> dict[str, set]:
    """The ids this course has, per part of a progress file: every question (core, labs, interview) and every
    exercise."""
    from lesson_lib.practice.questions import apart_ids, lab_ids, question_ids
    from lesson_lib.sections import exercises

    asked = {*question_ids(), *lab_ids(), *apart_ids()}
    return {"questions": asked, "earlier": asked, "exercises": set(exercises.EXERCISES)}


def _name_of(path: Path) -> str:
    """The home folder's name for a file in ``<home>/.local/share/…``, else the file's name (or its folder's)."""
    parts = path.absolute().parts
    if ".local" in parts[1:]:
        return parts[parts.index(".local", 1) - 1]
    return path.stem if path.name not in (LIVE, EXPORT) else path.parent.name


# ------------------------------------------------------------------------------------------ the lesson's data
def lesson(asked: dict[str, int]):
    """The core's questions in the order the notebook asks them (``asked``, from asked_in(); one it does not ask
    last, each in the question bank's order), the optional labs' questions, the current version digest of each
    (and of the interview) and the exercises, read from lesson_lib's own data."""
    from lesson_lib.practice.progress import current_version
    from lesson_lib.practice.questions import lab_ids, question, question_ids
    from lesson_lib.sections import exercises

    versions = {item: current_version(item) for item in (*question_ids(), *lab_ids(), INTERVIEW)}
    place = {item: i for i, item in enumerate(asked)}  # asked_in() keeps the notebook's order
    core = {qid: question(qid) for qid in sorted(question_ids(), key=lambda qid: place.get(qid, len(place)))}
    return core, {qid: question(qid) for qid in lab_ids()}, versions, tuple(exercises.EXERCISES)


def lab_of() -> dict[str, str]:
    """Which optional lab asks each of its questions: the lab its question file is named after (lab_*.toml asks in
    notebooks/labs_src/lab_*/, as scripts/build_notebook.py holds)."""
    from lesson_lib.practice import questions

    return {qid: path.stem for qid, (path, _) in questions._bank().items() if path.stem.startswith("lab_")}


def asked_in() -> dict[str, int]:
    """Where the core notebook asks each question and exercise: the section number of the source file
    (notebooks/src/NN_*.md) whose code calls ``ask("ID")`` or ``exercises.check("ID", …)``, in the order asked."""
    where = {}
    for src in sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]*.md")):
        number = int(src.name[:2])
        for found in re.finditer(r"""(?:ask|exercises\.check)\(\s*["']([^"']+)["']""", src.read_text("utf-8")):
            where.setdefault(found.group(1), number)
    return where


def section_titles() -> dict[int, str]:
    """Each section's title, from the first numbered heading of its source file (``## 5 动手实验台：…``)."""
    sources = sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]*.md"))
    return _first_headings(sources, r"^##\s+\d+\s+(.+?)\s*$", lambda src: int(src.name[:2]))


def lab_titles() -> dict[str, str]:
    """Each optional lab's title, the first heading of its sources (``# 选做实验 · …`` in
    notebooks/labs_src/lab_*/): the learner's, and its static page's (scripts/build_static.py)."""
    sources = sorted((ROOT / "notebooks" / "labs_src").glob("*/*.md"))
    return _first_headings(sources, r"^#\s+(.+?)\s*$", lambda src: src.parent.name)


def _first_headings(sources: list[Path], heading: str, key) -> dict:
    titles = {}
    for src in sources:
        found = re.search(heading, src.read_text("utf-8"), re.M)
        if found:
            titles.setdefault(key(src), found.group(1))
    return titles


# Every mistake id the course does not know is counted into one such row per question or exercise, never shown:
# the report may be projected to the class, and a file's ids are whatever its student typed.
OTHER = "other"  # the row's own id (never a course's mistake id: those are checked against the course's data)


def other_ids(n: int, why: bool = True) -> str:
    return f"其他 {n} 个课程里没有的编号" + ("（别的版本的课程或改过的文件）" if why else "")


def describe_mistake(key, mistake: str, missed: Counter | None = None) -> str:
    """The named mistake in the words the learner was shown (the checker's own hint), from the question's key
    (its data) only; "" for an id the checker could not have named (never described by the file's text).
    ``missed``: for a right option left out, how many students left out each (QuestionRow.missed)."""
    name, _, value = mistake.partition("=")
    if name == "option":
        for k, label, why in getattr(key, "options", ()):
            if k == value:
                return f"选了 {k}「{' '.join(str(label).split())}」：{why}"
    if mistake == "missing" and getattr(key, "options", ()):
        labels = {k: " ".join(str(label).split()) for k, label, _ in key.options}
        which = [f"{k}「{labels[k]}」（{c} 人）" for k, c in sorted((missed or {}).items(), key=lambda t: -t[1])]
        return "漏选了该选的选项" + ("：" + "；".join(which) if which else "")
    for box in getattr(key, "boxes", ()):
        if box.name == name:
            read, _ = box.read(value)
            # Only the id the checker writes for what it read (checkers.py: the value's own text, without
            # commas): the box reads past words around the number, and those are the file's own text.
            ours = read is not None and value == str(read).replace(",", "")
            why = box.wrong_why(read) if ours else ""
            named = why not in ("", getattr(box, "generic", ""))  # the checker names only a value with a hint
            return f"{box.label} 填 {value}：{why}" if named else ""
    if name == "shape" and getattr(key, "whole", None) and _a_shape(value, len(key.boxes)):
        return f"形状写成 {value}"
    return ""


def _a_shape(value: str, boxes: int) -> bool:
    """The checker's shape id: one plain number per box (ASCII digits, as str(int) writes them), comma-spaced."""
    return re.fullmatch(r"\([0-9]{1,6}(, [0-9]{1,6})*\)", value) is not None and value.count(",") == boxes - 1


# ------------------------------------------------------------------------------------------ counting
@dataclass
class QuestionRow:
    qid: str
    section: str
    graded: bool = True  # False: a self-explanation (kind "self"), never right or wrong
    answered: int = 0
    first_right: int = 0
    later_right: int = 0
    never: int = 0
    old: int = 0
    mistakes: Counter = field(default_factory=Counter)  # the course's mistake id -> students
    unknown: list = field(default_factory=list)  # per student who made any, the set of ids the course lacks
    covered: Counter = field(default_factory=Counter)  # self-explanation: rubric point -> students who ticked it
    missed: Counter = field(default_factory=Counter)  # checkboxes: a right option -> students who left it out


def count_questions(students, qs, versions):
    rows = {qid: QuestionRow(qid, q.section, q.kind != "self") for qid, q in qs.items()}
    for s in students:
        for qid, row in rows.items():
            _count_item(row, s.data["questions"].get(qid), qid in s.data["earlier"], versions.get(qid), qs[qid].key)
    return rows


def _count_item(row: QuestionRow, entry: dict | None, earlier: bool, version, key) -> None:
    """One student's answers to one question: this version's first try and later ones, each named mistake once
    (at any try), only the rubric's own ticked points, each right option left out once; answers to an earlier
    version counted apart, never right."""
    current = bool(entry) and entry["question_version"] == version
    if earlier or (entry and not current):
        row.old += 1
    attempts = [a for a in entry["attempts"] if a["question_version"] == version] if current else []
    if not attempts:
        return
    row.answered += 1
    verdicts = [a["verdict"] for a in attempts]
    if verdicts[0] == "right":
        row.first_right += 1
    elif "right" in verdicts:
        row.later_right += 1
    elif verdicts[0] == "wrong":
        row.never += 1
    made = {m for a in attempts for m in (a["mistake"] or "").split(";") if m}
    unknown = {m for m in made if not describe_mistake(key, m)}  # counted only: never shown
    row.mistakes.update(made - unknown)
    if unknown:
        row.unknown.append(unknown)
    points = {p.name for p in getattr(key, "points", ())}  # a rubric's own
    row.covered.update({p for a in attempts if a["verdict"] == "self" for p in a.get("covered", ()) if p in points})
    slips = [a for a in attempts if "missing" in (a["mistake"] or "").split(";")]
    row.missed.update(set().union(*(left_out(key, a["answer"]) for a in slips)))


def other_row(unknown: list[set], why: bool = True) -> tuple[int, str]:
    """(students, 「其他 N 个…编号」) for a question's or exercise's ids the course lacks (QuestionRow.unknown):
    only how many, never which."""
    return len(unknown), other_ids(len(set().union(*unknown)), why)


def left_out(key, answer) -> set[str]:
    """The right options a checkbox answer did not tick: the stored answer is the keys ticked (a list from the
    checkboxes) or the text typed ("AC", "A、C"), folded as check_choice folds it."""
    text = "".join(answer) if isinstance(answer, list) else answer
    ticked = set(unicodedata.normalize("NFKC", text).upper())
    return set(getattr(key, "answer", ())) - ticked


@dataclass
class ExerciseRow:
    name: str
    tried: int = 0
    first_right: int = 0
    later_right: int = 0
    failing: int = 0
    unconfirmed: int = 0
    mistakes: Counter = field(default_factory=Counter)  # the course's mistake id -> students who made it
    unknown: list = field(default_factory=list)  # as QuestionRow.unknown

    @property
    def passed(self) -> int:
        return self.first_right + self.later_right


def count_exercises(students, names, recheck=None):
    """Per exercise: students who tried it, passed at the first check or later (a pass stays a pass), never; each
    named mistake once per student who made it at any check. ``recheck`` gets the code that passed."""
    rows = {n: ExerciseRow(n) for n in names}
    for s in students:
        for name, row in rows.items():
            entry = s.data["exercises"].get(name)
            tried = [c["result"] for c in entry["checks"] if c["result"] != "todo"] if entry else []
            if not tried and not (entry and entry["passed"]):
                continue
            row.tried += 1
            if not entry["passed"]:
                row.failing += 1
            elif tried[:1] in ([], ["passed"]):
                row.first_right += 1
            else:
                row.later_right += 1
            if entry["passed"] and recheck and not recheck(name, entry["passed_source"] or entry["source"]):
                row.unconfirmed += 1
                s.unconfirmed.append(name)
            made = {m for c in entry["checks"] for m in c["mistakes"]}  # at any check, once (as _count_item)
            unknown = {m for m in made if not exercise_mistake(m)}
            row.mistakes.update(made - unknown)
            if unknown:
                row.unknown.append(unknown)
    return rows


def recheck_with(box):
    """The stored source's pass, confirmed in the sandbox (scripts/recheck_sandbox.py) or not."""
    sandbox = _sandbox_module()
    return lambda name, source: sandbox.confirm(box, name, source)


def _sandbox_module():
    if "recheck_sandbox" not in sys.modules:
        spec = importlib.util.spec_from_file_location("recheck_sandbox", Path(__file__).with_name("recheck_sandbox.py"))
        sys.modules["recheck_sandbox"] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
        spec.loader.exec_module(sys.modules["recheck_sandbox"])
    return sys.modules["recheck_sandbox"]


def last_section(s: Student, asked: dict[str, int]) -> int:
    """The last section of the notebook in which the student answered anything (0: nothing answered)."""
    done = [qid for qid, e in s.data["questions"].items() if e["attempts"]] + list(s.data["earlier"])
    done += [name for name, e in s.data["exercises"].items()
             if e["passed"] or any(c["result"] != "todo" for c in e["checks"])]  # fmt: skip
    return max((asked.get(item, 0) for item in done), default=0)


def stopped_at(students, asked: dict[str, int]) -> Counter:
    """Students by the last section in which they answered anything."""
    return Counter(last_section(s, asked) for s in students)


@dataclass
class StudentRow:
    label: str
    last: int  # the last section answered in (0: none)
    answered: int  # the core's questions
    first_right: int
    passed: int  # exercises
    labs: int  # the optional labs' questions answered, never in the core's counts
    unconfirmed: list[str]  # exercises whose pass --recheck did not repeat
    slips: set = field(default_factory=set)  # (question or exercise, mistake id): each named mistake made


def each_student(students, asked, qs, labs, versions, exercise_names) -> list[StudentRow]:
    out = []
    for s in students:
        rows = count_questions([s], qs, versions).values()
        passed = count_exercises([s], exercise_names).values()
        lab_rows = count_questions([s], labs, versions).values()
        slips = {(r.qid, m) for r in (*rows, *lab_rows) for m in r.mistakes}
        slips |= {(r.name, m) for r in passed for m in r.mistakes}
        out.append(StudentRow(s.label, last_section(s, asked), sum(r.answered for r in rows),
                              sum(r.first_right for r in rows), sum(r.passed for r in passed),
                              sum(r.answered for r in lab_rows), s.unconfirmed, slips))  # fmt: skip
    return out


def to_reteach(misconceptions: list, students: list[StudentRow]) -> list[tuple]:
    """The sections to go over again in class, most students first: (section, students who made at least one of
    the named mistakes it teaches, those mistakes' items in the misconceptions' order). The misconceptions' table
    cannot say it: one student may make several mistakes a section teaches, so its counts do not add up."""
    where = {(item, m): section for _, item, m, _, section in misconceptions if m != OTHER}
    reached = {section: set() for section in where.values()}  # in the misconceptions' order
    for i, s in enumerate(students):
        for slip in s.slips & where.keys():
            reached[where[slip]].add(i)
    ranked = sorted(reached, key=lambda section: -len(reached[section]))  # at equal counts, the first named
    out = []
    for at in ranked[:3]:  # a lesson's worth of going back; the table below has every mistake
        items = dict.fromkeys(item for (item, _), section in where.items() if section == at)
        out.append((at, len(reached[at]), list(items)))
    return out


def interview_points(students, version) -> tuple[int, Counter]:
    """Students who self-assessed this version of the interview, and how many ticked each of the rubric's points
    (a ticked point whose text is not the rubric's is not counted)."""
    from lesson_lib.practice.questions import question

    points = {p.name for p in question(INTERVIEW).key.points}
    took, ticked = 0, Counter()
    for s in students:
        entry = s.data["questions"].get(INTERVIEW)
        if not entry or entry["question_version"] != version:
            continue
        attempts = [a for a in entry["attempts"] if a["verdict"] == "self"]
        if attempts:
            took += 1
            ticked.update({p for a in attempts for p in a.get("covered", ()) if p in points})
    return took, ticked


# ------------------------------------------------------------------------------------------ the report
@dataclass
class Report:
    n: int
    questions: dict
    exercises: dict
    stopped: Counter
    interview: tuple[int, Counter]
    misconceptions: list  # (students, qid, mistake id, description, section)
    skipped: list[str]
    names: list[str]
    titles: dict = field(default_factory=dict)  # section number -> title
    prompts: dict = field(default_factory=dict)  # question id -> its prompt, without the id (core and labs)
    students: list = field(default_factory=list)  # each_student's rows
    labs: dict = field(default_factory=dict)  # the optional labs' question id -> its QuestionRow
    lab_names: dict = field(default_factory=dict)  # the optional labs' question id -> the title of its lab
    partial: list[str] = field(default_factory=list)  # a line per file read with entries left out
    rechecked: bool = False
    asked: dict = field(default_factory=dict)  # question or exercise id -> the section the notebook asks it in

    def titled(self, section: str) -> str:
        """「第 3 节」 → 「第 3 节 多头机制：…」."""
        found = re.fullmatch(r"第 (\d+) 节", section)
        return self.section(int(found.group(1))) if found else section

    def section(self, number: int) -> str:
        """「第 5 节「动手实验台：…」」 (「还没作答」 for 0)."""
        if not number:
            return "还没作答"
        title = self.titles.get(number)
        return f"第 {number} 节「{title}」" if title else f"第 {number} 节"


def build(paths: list[str], names: bool = False, recheck=None, warn=None, mine=False) -> Report:
    """``recheck``: None, or the sandbox (recheck_sandbox.prepare) in which passes are run again; ``mine``: count
    the trial file of the admin who ran sudo (candidate_files)."""
    skipped: list[str] = []
    partial: list[str] = []

    def noted(lines: list[str]):
        def note(line: str) -> None:
            lines.append(printable(line))  # a file's name may hold a newline or a terminal's escape sequence
            if warn:
                warn(printable(line))

        return note

    students = load_class(paths, names, noted(skipped), noted(partial), mine=mine)
    asked = asked_in()
    qs, labs, versions, exercise_names = lesson(asked)
    rows = count_questions(students, qs, versions)
    lab_rows = count_questions(students, labs, versions)
    both = {**qs, **labs}
    mis = [(count, qid, m, describe_mistake(both[qid].key, m, row.missed), both[qid].section)
           for qid, row in {**rows, **lab_rows}.items() for m, count in row.mistakes.items()]  # fmt: skip
    ex = count_exercises(students, exercise_names, recheck_with(recheck) if recheck else None)
    mis += [(count, name, m, exercise_mistake(m), f"第 {asked.get(name, 0)} 节")
            for name, row in ex.items() for m, count in row.mistakes.items()]  # fmt: skip
    for item, row in {**rows, **lab_rows, **ex}.items():  # each item's unknown ids: one row, after the course's
        if row.unknown:
            made, text = other_row(row.unknown)
            mis.append((made, item, OTHER, text, "—（课程里没有这些编号）"))  # taught nowhere
    order = [*qs, *ex, *labs]  # at equal counts the core's first
    mis.sort(key=lambda t: (t[2] == OTHER, -t[0], order.index(t[1]), t[2]))
    titles = lab_titles()
    return Report(len(students), rows, ex, stopped_at(students, asked),
                  interview_points(students, versions.get(INTERVIEW)), mis, skipped,
                  [s.label for s in students], section_titles(),
                  {qid: q.prompt.removeprefix(qid).strip() for qid, q in both.items()},
                  each_student(students, asked, qs, labs, versions, exercise_names),
                  lab_rows, {qid: titles.get(lab, lab) for qid, lab in lab_of().items()}, partial,
                  bool(recheck), asked)  # fmt: skip


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (newline, ESC, a bidi override …) written as its
    escape, as repr does: a student's file name can never forge a line or retitle the instructor's terminal."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


# The CSV in the page's words (its column names in class_report.html.j2), so the spreadsheet an instructor opens
# it in reads as the page does; the rows are made with the report's own ids. A mistake's id stays the checker's
# (its row's detail says the mistake in Chinese).
CSV_HEADER = {"kind": "类别", "item": "项目", "measure": "指标", "count": "数值", "detail": "说明"}
CSV_KINDS = {"question": "题目", "lab_question": "选做实验的题", "misconception": "误解", "exercise": "代码练习",
             "exercise_mistake": "练习的具名错误", "stopped": "学生停在哪里", "student": "学生",
             "interview": "面试自检"}  # fmt: skip
_ANSWERS = {"answered": "作答", "first_right": "一次答对", "later_right": "后来答对", "never": "一直没对",
            "old": "旧版作答", "ticked": "勾选的要点"}  # fmt: skip
CSV_MEASURES = {"question": _ANSWERS, "lab_question": _ANSWERS, "interview": _ANSWERS,
                "exercise": {"tried": "提交过", "passed": "通过", "first_right": "一次通过",
                             "later_right": "后来通过", "failing": "一直没过", "unconfirmed": "通过但未确认"},
                "misconception": {OTHER: "课程里没有的编号"}, "exercise_mistake": {OTHER: "课程里没有的编号"},
                "stopped": {"students": "人数"},
                "student": {"last_section": "最后作答的节", "answered": "作答的题", "first_right": "一次答对",
                            "exercises_passed": "通过的练习", "lab_answered": "选做实验作答",
                            "unconfirmed": "通过但未确认的练习"}}  # fmt: skip


def csv_rows(r: Report):
    """The CSV's header and rows, in Chinese."""
    yield tuple(CSV_HEADER.values())
    for kind, item, measure, count, detail in _entries(r):
        yield CSV_KINDS[kind], item, CSV_MEASURES.get(kind, {}).get(measure, measure), count, detail


JUDGED = ("first_right", "later_right", "never")


def _measures(row: QuestionRow) -> tuple[str, ...]:
    """A question's counts in the CSV. A self-explanation is never judged: it has no right/wrong rows (a 0 would
    read as "nobody got it right", and add to a spreadsheet's sums as a question nobody got right)."""
    return ("answered", *(JUDGED if row.graded else ()), "old")


class Uncounted(str):
    """「—」 in a column of counts (a question never judged, a pass not run again): aligned as the numbers are."""


UNCOUNTED = Uncounted("—")


def _judged(row: QuestionRow) -> tuple:
    """A question's right/wrong columns on the page: 「—」 for one never judged, as the CSV has no such rows."""
    return tuple(getattr(row, measure) for measure in JUDGED) if row.graded else (UNCOUNTED,) * len(JUDGED)


def _entries(r: Report):
    for qid, row in r.questions.items():
        for measure in _measures(row):
            yield ("question", qid, measure, getattr(row, measure), row.section)
        for point, c in row.covered.items():
            yield ("question", qid, "ticked", c, point)
    for qid, row in r.labs.items():  # the optional labs': never in the core's counts
        for measure in _measures(row):
            yield ("lab_question", qid, measure, getattr(row, measure), r.lab_names.get(qid, ""))
    for count, qid, m, text, _section in r.misconceptions:
        yield ("misconception", qid, m, count, text)
    for name, row in r.exercises.items():
        for measure in ("tried", "passed", "first_right", "later_right", "failing"):
            yield ("exercise", name, measure, getattr(row, measure), "")
        if r.rechecked:  # without --recheck nothing was confirmed: a 0 would read as "all confirmed"
            yield ("exercise", name, "unconfirmed", row.unconfirmed, "")
        for m, c in row.mistakes.items():
            yield ("exercise_mistake", name, m, c, exercise_mistake(m))
        if row.unknown:
            yield ("exercise_mistake", name, OTHER, *other_row(row.unknown))
    for section, c in sorted(r.stopped.items()):
        yield ("stopped", f"第 {section} 节" if section else "还没作答", "students", c, r.section(section))
    for s in r.students:
        yield ("student", s.label, "last_section", s.last, r.section(s.last))
        yield ("student", s.label, "answered", s.answered, "")
        yield ("student", s.label, "first_right", s.first_right, "")
        yield ("student", s.label, "exercises_passed", s.passed, "")
        yield ("student", s.label, "lab_answered", s.labs, "")
        if r.rechecked:
            yield ("student", s.label, "unconfirmed", len(s.unconfirmed), "、".join(s.unconfirmed))
    took, ticked = r.interview
    yield ("interview", INTERVIEW, "answered", took, "")
    for point, c in ticked.items():
        yield ("interview", INTERVIEW, "ticked", c, point)


def _first_wrong(row: QuestionRow) -> int:
    """Students not right on their first try (self-explanations are never judged, so never counted here)."""
    return row.later_right + row.never


def page(r: Report) -> str:
    """The page, from class_report.html.j2 (jinja2 escapes every value; nothing here is escaped by hand)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True,
                             undefined=jinja2.StrictUndefined)  # fmt: skip
    env.tests["counted"] = lambda cell: isinstance(cell, (int, float, Uncounted))  # a column of counts
    stops = [(r.section(s), c) for s, c in sorted(r.stopped.items(), key=lambda t: -t[0])]
    missed = sorted(((_first_wrong(row), qid) for qid, row in r.questions.items() if _first_wrong(row)),
                    key=lambda t: -t[0])  # fmt: skip
    misconceptions = [(c, _item(r, item), text, r.titled(sec)) for c, item, _, text, sec in r.misconceptions]
    reteach = [(r.titled(sec), c, "、".join(_item(r, item) for item in items))
               for sec, c, items in to_reteach(r.misconceptions, r.students)]  # fmt: skip
    explained = [(f"{qid}：{row.answered} 人写过，自己勾选的要点", sorted(row.covered.items(), key=lambda t: -t[1]))
                 for qid, row in r.questions.items() if row.covered]  # fmt: skip
    took, ticked = r.interview
    if took:
        explained.append((f"第 8 节面试自检：{took} 人写过", sorted(ticked.items(), key=lambda t: -t[1])))
    return env.get_template("class_report.html.j2").render(
        n=r.n, anonymous=not r.names or r.names[0].startswith("学生 "), stops=stops, missed=missed,
        nobody=[name for name, row in r.exercises.items() if row.tried and not row.passed],
        misconceptions=misconceptions, reteach=reteach,
        stops_alt="最后作答所在的节，学生人数：" + "；".join(f"{label} {c} 人" for label, c in stops),
        question_rows=[(qid, r.prompts.get(qid, ""), f"第 {r.asked[qid]} 节" if qid in r.asked else "—",
                        row.section, row.answered, *_judged(row), row.old) for qid, row in r.questions.items()],
        lab_rows=[(qid, r.prompts.get(qid, ""), r.lab_names.get(qid, "选做实验"), row.answered, *_judged(row),
                   row.old) for qid, row in r.labs.items()],
        ungraded=[qid for qid, row in r.questions.items() if not row.graded],
        missed_items=[(qid, c) for c, qid in missed[:8]],
        missed_alt="第一次没答对的人数最多的题：" + "；".join(f"{qid} {c} 人" for c, qid in missed[:8]),
        exercise_rows=[(name, row.tried, row.first_right, row.later_right, row.failing,
                        row.unconfirmed if r.rechecked else UNCOUNTED,  # not run again: not 0 unconfirmed
                        _named_mistakes(row))
                       for name, row in r.exercises.items()],
        explained=explained,
        student_rows=[(s.label, r.section(s.last), s.answered, s.first_right, s.passed, s.labs,
                       *(["、".join(s.unconfirmed) or "—"] if r.rechecked else [])) for s in r.students],
        rechecked=r.rechecked, skipped=r.skipped, partial=r.partial)  # fmt: skip


def _item(r: Report, item: str) -> str:
    """A question or exercise as the page names it: an optional lab's question says which lab asks it."""
    return f"{item}（{r.lab_names.get(item, '选做实验')}）" if item in r.labs else item


def _named_mistakes(row: ExerciseRow) -> str:
    """An exercise's 「具名错误（人数）」 cell: the course's names, then how many ids it does not have."""
    said = [f"{exercise_mistake(m)}（{c}）" for m, c in row.mistakes.most_common()]
    if row.unknown:
        students, text = other_row(row.unknown, why=False)  # the cell's other names are short too
        said.append(f"{text}（{students}）")
    return "、".join(said) or "—"


def exercise_mistake(mistake: str) -> str:
    """An exercise's named mistake in Chinese from the lesson's own table (never a student's stored message);
    "" for an id the course does not have."""
    from lesson_lib.sections import exercises

    return exercises.MISTAKES.get(mistake, "")


def inert(cell):
    """A text cell that a spreadsheet would read as a formula gets a leading ' (OWASP's advice on CSV injection);
    the report's own numbers stay numbers."""
    if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + cell
    return cell


def write(r: Report, out_dir: Path) -> tuple[Path, Path]:
    """class-report.html and .csv in ``out_dir``, each written as a new file there and renamed over the old one:
    never through a link a student (or anyone) left in the folder. Raises ValueError (Chinese) for a folder that
    is a link, not a folder, or (run as root) another user's."""
    table = io.StringIO(newline="")
    csv.writer(table).writerows([inert(cell) for cell in row] for row in csv_rows(r))
    folder = open_folder(out_dir)
    admin = invoker()
    # In a folder of the admin's who ran sudo (made by this run, or an earlier one) the files are theirs too.
    owner = admin if admin and os.fstat(folder).st_uid == admin[0] else None
    try:
        _replace(folder, "class-report.html", page(r).encode("utf-8"), owner)
        _replace(folder, "class-report.csv", table.getvalue().encode("utf-8-sig"), owner)  # -sig: Excel reads Chinese
    finally:
        os.close(folder)
    return out_dir / "class-report.html", out_dir / "class-report.csv"


def invoker() -> tuple[int, int] | None:
    """(uid, gid) of the user who ran this with sudo (SUDO_UID, SUDO_GID), when it runs as root; else None."""
    if os.geteuid() != 0:
        return None
    try:
        uid, gid = int(os.environ["SUDO_UID"]), int(os.environ["SUDO_GID"])
    except (KeyError, ValueError):
        return None
    return (uid, gid) if uid else None


def make_folders(out_dir: Path) -> None:
    """The output folder and any missing folder above it, each made here; under sudo each is given to the admin
    who ran it (README's `sudo … --out 报告-…` in their home: they can delete it without sudo). A folder that
    existed is never given away, and a link is never followed (lchown)."""
    missing = []
    for folder in (out_dir.absolute(), *out_dir.absolute().parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    admin = invoker()
    for folder in reversed(missing):
        folder.mkdir()
        if admin:
            os.chown(folder, *admin, follow_symlinks=False)


def open_folder(out_dir: Path) -> int:
    """The output folder, made if missing, opened without following a link (a descriptor: what is written goes
    into this folder even if its path is swapped for a link afterwards)."""
    shown = printable(str(out_dir))
    try:
        make_folders(out_dir)
    except OSError as exc:
        raise ValueError(f"建不了输出文件夹 {shown}（{os_why(exc, _WRITING)}）") from None
    if os.path.islink(out_dir):
        raise ValueError(f"输出文件夹 {shown} 是一个链接：报告不写进链接，请用 --out 给一个真正的文件夹")
    if not os.path.isdir(out_dir):
        raise ValueError(f"{shown} 已经存在，不是文件夹：报告不会覆盖它，请用 --out 给一个文件夹")
    try:
        folder = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ValueError(f"打不开输出文件夹 {shown}（{os_why(exc, _WRITING)}）") from None
    owner = os.fstat(folder).st_uid
    admin = invoker()  # the admin who ran sudo could do as root anyway: their folder is safe to write in
    trusted = {0, admin[0]} if admin else {0}
    if os.geteuid() == 0 and owner not in trusted:  # a student (or their code) could swap the files in it
        os.close(folder)
        raise ValueError(f"输出文件夹 {shown} 属于另一个用户（uid {owner}）：以 root 运行时，"
                         "请用 --out 给一个你自己或 root 的文件夹（比如一个还不存在的新文件夹）")
    return folder


def _replace(folder: int, name: str, content: bytes, owner: tuple[int, int] | None = None) -> None:
    """``name`` in ``folder`` replaced by a new file holding ``content`` (given to ``owner``, (uid, gid), if
    any): os.replace swaps a link for the file, never writes through it."""
    temp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=folder)
    try:
        if owner:
            os.fchown(fd, *owner)  # the new file itself, by its descriptor: no path to swap
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        os.unlink(temp, dir_fd=folder)
        raise


def _personal_copy():
    """scripts/personal_copy.py: its ChineseParser, the command line in Chinese that the scripts share."""
    spec = importlib.util.spec_from_file_location("personal_copy", Path(__file__).with_name("personal_copy.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    ap = _personal_copy().ChineseParser(description="把全班的进度文件汇成一页班级报告（HTML + CSV）。")
    ap.add_argument("paths", nargs="*", help=f"进度文件、导出文件或装着它们的文件夹（默认：{HUB_GLOB}）")
    ap.add_argument("--out", default="class-report", help="报告写到这个文件夹（默认 class-report/）")
    ap.add_argument("--names", action="store_true", help="显示学生的名字（默认只编号）")
    ap.add_argument("--include-mine", action="store_true",
                    help="用 sudo 运行、不给路径时，也把你自己（SUDO_UID）家目录里试做的进度文件算作一名学生")
    ap.add_argument("--recheck", action="store_true",
                    help="在隔离的检查进程里重跑学生通过的代码练习（会执行学生的代码，只能以 root 运行，见 README）")
    ap.add_argument("--recheck-user", metavar="NAME", help="重跑学生代码所用的普通用户（默认 nobody）")
    args = ap.parse_args(argv)
    box = None
    if args.recheck_user and not args.recheck:  # alone it would change nothing: the report would run unchecked
        print("--recheck-user 只和 --recheck 一起用：要重跑学生的代码，请两个都加上；否则去掉 --recheck-user。",
              file=sys.stderr)
        return 2
    if args.recheck:
        from lesson_lib.practice.exercises import BUDGET_S  # the checker's own budget for one exercise

        try:
            box = _sandbox_module().prepare(args.recheck_user, BUDGET_S)
        except ValueError as exc:
            print(f"--recheck 没有开始：{exc}", file=sys.stderr)
            return 2
    start, cpu = time.perf_counter(), time.process_time()
    report = build(args.paths, names=args.names, recheck=box, mine=args.include_mine,
                   warn=lambda line: print(line, file=sys.stderr))  # fmt: skip
    if not report.n:
        print("没有找到可读的进度文件：请给出文件或文件夹的路径（在 Hub 上请以管理员身份运行）。", file=sys.stderr)
        return 1
    try:
        html_path, csv_path = write(report, Path(args.out))
    except (ValueError, OSError) as exc:  # OSError: e.g. a folder named class-report.html in the way
        why = f"写进 {args.out} 时出错（{os_why(exc, _WRITING)}）" if isinstance(exc, OSError) else exc
        print(printable(f"报告没有写出：{why}。"), file=sys.stderr)
        return 3
    took = f"{time.perf_counter() - start:.2f} 秒，CPU {time.process_time() - cpu:.2f} 秒"
    print(printable(f"{report.n} 名学生 → {html_path}、{csv_path}（{took}）"))
    if box:
        import pwd  # only where --recheck runs at all (Linux, as root)

        print(printable(recheck_line(report, pwd.getpwuid(box.uid).pw_name)))
    return 0


def recheck_line(r: Report, user: str) -> str:
    """What --recheck did, for the terminal (the page says it per exercise and student): every pass is checked
    (count_exercises), its stored code run as ``user``; how many were not confirmed (a pass without code is not),
    and whose."""
    checked = sum(row.passed for row in r.exercises.values())
    failed = sum(row.unconfirmed for row in r.exercises.values())
    students = sum(bool(s.unconfirmed) for s in r.students)
    whose = f"（{students} 名学生），在报告里标为「通过但未确认」" if failed else ""
    return f"--recheck：以用户 {user} 重跑存下的代码，检查了 {checked} 个通过的练习：{failed} 个没能确认{whose}。"


if __name__ == "__main__":
    sys.exit(main())
