"""The learner's progress (questions, code exercises, the interview self-check) and the file that keeps it.

Every record is saved at once, under the file's lock (``progress.json.lock``): read, merge, write atomically
(a temporary file in the same folder, then ``os.replace``), so two notebooks lose nothing and a restart restores
everything. The file is ``$LESSON_PROGRESS_FILE`` or the learner's ``platformdirs`` data folder (an older file at
``~/.local/share/…`` is still used). Only a regular file is read or written (opened O_NOFOLLOW | O_NONBLOCK: a
symlink, FIFO, folder or device is refused, never followed); a file over ``MAX_FILE_BYTES``, unreadable or of the
wrong shape is renamed aside, never deleted; a wrong entry is skipped with a notice. Messages are Chinese;
nothing here raises for a bad file or a read-only or full folder.

The file's format (JSON, UTF-8), version 2::

    {"format": "day11-progress", "version": 2, "saved_at": "2026-12-01T10:00:00+00:00",
     "questions": {"Q2": {"attempts": [{"answer": "[\\"64\\", \\"不变\\"]", "verdict": "wrong", "mistake": "d_k=64",
                                        "question_version": "016aa98cd5ee"},
                                       {"answer": "[\\"32\\", \\"不变\\"]", "verdict": "right", "mistake": null,
                                        "question_version": "016aa98cd5ee"}],
                          "n_attempts": 2, "question_version": "016aa98cd5ee", "first_try": "wrong",
                          "final": "right", "solved": true, "answer": "[\\"32\\", \\"不变\\"]"}},
     "exercises": {"split_heads": {"result": "passed", "message": "全部通过！…", "checks": 3, "mistakes": [],
                                   "source": "def split_heads(x, h):\\n    …"}},
     "interview": {"attempts": [{"answer": "…", "verdict": "self", "mistake": null,
                                 "question_version": "47b903bb24be", "covered": ["① …"], "of": 3}],
                   "n_attempts": 1, "question_version": "47b903bb24be", "first_try": "self", "final": "self",
                   "solved": false, "answer": "…", "complete": false}}

Per item: ``attempts`` (the first and the latest ``MAX_ATTEMPTS - 1``; ``n_attempts`` counts all at the item's
version), each with the answer as typed (a form's boxes as a JSON list), ``verdict`` (right, wrong, review: read
but never judged, self: self-assessed, with ``covered`` / ``of``), the named ``mistake``(s) and the
``question_version`` digest it answered. An answer to an earlier version is kept and shown as 「这是旧版题目的作答」,
never counted. A version-1 file is read with its answers as answers to an earlier version.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path

import filelock
import platformdirs

__all__ = ["ENV_VAR", "FORMAT", "VERSION", "APP_NAME", "VERDICTS", "EXERCISE_STATUSES", "EXERCISE_IDS", "OLD_VERSION",
           "MAX_FILE_BYTES", "ProgressError", "default_path", "legacy_path", "lesson_items",
           "ProgressFile", "Progress", "default_progress"]  # fmt: skip

ENV_VAR = "LESSON_PROGRESS_FILE"
APP_NAME = "day11-multi-head-attention"
FORMAT = "day11-progress"
VERSION = 2
INTERVIEW = "面试"
EXERCISE_IDS = ("split_heads", "multi_head_attention_loop", "count_multiplies")  # = exercises.EXERCISES (a test)
MAX_FILE_BYTES = 5 * 1024 * 1024  # a real file is a few KB; a larger one is set aside, never parsed on every save
MAX_ATTEMPTS = 20  # attempts kept per item: the first and the latest 19 (n_attempts counts them all)
MAX_ANSWER_CHARS = 4000  # a stored answer is cut to this (checkers read far less)
MAX_SOURCE_CHARS = 20_000  # an exercise's stored source
MAX_CHOICES = 50  # items in a stored list answer
MAX_ID_CHARS = 100
LOCK_TIMEOUT_S = 10.0  # another kernel holds the lock for one small write; far longer means it is stuck
VERDICTS = ("right", "wrong", "review", "self")
EXERCISE_STATUSES = ("passed", "todo", "error", "wrong", "timeout", "interrupted")  # what exercises.check returns
_READ_STATUSES = (*EXERCISE_STATUSES, "borrowed", "tampered")  # earlier checkers wrote these too: still read
OLD_VERSION = "这是旧版题目的作答"  # the verdict word an answer to an earlier version of its question is shown with
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class ProgressError(OSError):
    """An export or reset that could not be done; its message is Chinese and says what to do."""


class NotAFile(OSError):
    """Something other than a regular file sits where the progress file (or its lock) should be."""

    def __init__(self, path: Path, kind: str):
        super().__init__(errno.EINVAL, kind)
        self.path, self.kind = path, kind


# ---------------------------------------------------------------------------------------------- where
def legacy_path() -> Path:
    """Where lessons before platformdirs kept the file, on every system: ``$XDG_DATA_HOME`` or ~/.local/share."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / APP_NAME / "progress.json"


def default_path() -> Path:
    """$LESSON_PROGRESS_FILE, else the learner's data folder (outside the repository), else an older file's place."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    path = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "progress.json"
    old = legacy_path()
    if not os.path.lexists(path) and os.path.lexists(old):  # keep using the learner's existing file
        return old
    return path


# ---------------------------------------------------------------------------------------------- the lesson's items
def lesson_items() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(question ids, exercise ids): the question bank's ids (from the question data) and ``EXERCISE_IDS``."""
    from lesson_lib.practice.questions import question_ids

    return tuple(question_ids()), EXERCISE_IDS


# ---------------------------------------------------------------------------------------------- values
def _text(value, limit: int = MAX_ANSWER_CHARS) -> str:
    """Any string as one UTF-8 can store: a lone surrogate becomes its backslash escape; cut to ``limit``."""
    text = str.__str__(value) if isinstance(value, str) else ""
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text[:limit]


def _storable(answer):
    """What the learner submitted, in a form JSON keeps: text, or a sorted list of short texts. Never recurses
    into a nested value (a deeply nested list is described, not walked)."""
    if answer is None:
        return ""
    if isinstance(answer, str):
        return _text(answer)
    if isinstance(answer, bool | int | float):
        return _text(repr(answer))
    if isinstance(answer, set | frozenset | list | tuple):
        items = list(answer)[:MAX_CHOICES]
        if all(isinstance(a, str | int) and not isinstance(a, bool) for a in items):
            return sorted(_text(a if isinstance(a, str) else repr(a), 200) for a in items)
    return f"（无法保存的答案：{type(answer).__name__}）"


def _short(answer) -> str:
    text = "、".join(answer) if isinstance(answer, list) else " ".join(str(answer).split())
    return text[:30]


def _item_id(value) -> str | None:
    if type(value) is not str or not value or len(value) > MAX_ID_CHARS:
        return None
    return _text(value, MAX_ID_CHARS)


# ---------------------------------------------------------------------------------------------- validation
def empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "saved_at": None, "questions": {}, "exercises": {}, "interview": {}}


def _is_int(v) -> bool:
    return type(v) is int and 0 <= v < 10**9  # True is not 1


def _is_str(v, limit: int = MAX_SOURCE_CHARS + MAX_ANSWER_CHARS) -> bool:
    return type(v) is str and len(v) <= limit


def _is_texts(v, limit=MAX_CHOICES) -> bool:
    return type(v) is list and len(v) <= limit and all(type(a) is str for a in v)


def _is_answer(v) -> bool:
    return _is_str(v) or _is_texts(v)


def _is_self(v) -> bool:
    return type(v) is dict and _is_texts(v.get("covered")) and _is_int(v.get("of"))


def _opt(v, check) -> bool:
    return v is None or check(v)


def _verdict(v) -> bool:
    return type(v) is str and v in VERDICTS


def _attempt_ok(a) -> bool:
    return (type(a) is dict and _is_answer(a.get("answer")) and _verdict(a.get("verdict"))
            and _opt(a.get("mistake"), _is_str) and _opt(a.get("question_version"), lambda v: _is_str(v, 64))
            and ("covered" not in a or _is_self(a)))  # fmt: skip


def _item_ok(e) -> bool:
    """A question's or the interview's entry (format 2)."""
    return (type(e) is dict and type(e.get("attempts")) is list and len(e["attempts"]) <= 2 * MAX_ATTEMPTS
            and all(_attempt_ok(a) for a in e["attempts"]) and _is_int(e.get("n_attempts"))
            and _opt(e.get("question_version"), lambda v: _is_str(v, 64)) and _opt(e.get("first_try"), _verdict)
            and _opt(e.get("final"), _verdict) and type(e.get("solved")) is bool
            and _is_answer(e.get("answer", "")) and type(e.get("complete", False)) is bool)  # fmt: skip


def _exercise_ok(e) -> bool:
    return (type(e) is dict and e.get("result") in _READ_STATUSES and _is_str(e.get("message", ""))
            and _is_int(e.get("checks")) and _is_texts(e.get("mistakes", [])) and _opt(e.get("source"), _is_str))


# format 1 (before question versions): read once, then saved as format 2
def _v1_question_ok(e) -> bool:
    return (type(e) is dict and _is_int(e.get("attempts")) and type(e.get("solved")) is bool
            and _is_answer(e.get("answer", "")) and _verdict(e.get("last", "right"))
            and type(e.get("history", [])) is list and len(e.get("history", [])) <= 200
            and all(type(h) is list and len(h) == 2 and type(h[0]) is str and _verdict(h[1])
                    for h in e.get("history", []))
            and ("self" not in e or _is_self(e["self"])))  # fmt: skip


def _v1_exercise_ok(e) -> bool:
    return (type(e) is dict and e.get("status") in _READ_STATUSES and _is_str(e.get("message", ""))
            and _is_int(e.get("checks")))  # fmt: skip


def _v1_interview_ok(e) -> bool:
    return type(e) is dict and (not e or (
        _is_int(e.get("attempts")) and _is_str(e.get("answer", "")) and _is_texts(e.get("covered", []))
        and type(e.get("complete", False)) is bool and ("self" not in e or _is_self(e["self"]))))  # fmt: skip


def _from_v1(e: dict) -> dict:
    """A format-1 entry as a format-2 one: its attempts are kept, of an unknown (so earlier) question version."""
    last = e.get("last") or ("self" if "self" in e else "review")
    history = e.get("history") or ([[e.get("answer", ""), last]] if e.get("attempts") else [])
    attempts = [{"answer": a, "verdict": v, "mistake": None, "question_version": None} for a, v in history]
    if attempts and isinstance(e.get("self"), dict) and attempts[-1]["verdict"] == "self":
        attempts[-1].update(covered=e["self"]["covered"], of=e["self"]["of"])
    first = attempts[0]["verdict"] if attempts and len(attempts) == e.get("attempts") else None
    out = {"attempts": attempts, "n_attempts": max(e.get("attempts", 0), len(attempts)), "question_version": None,
           "first_try": first, "final": attempts[-1]["verdict"] if attempts else None,
           "solved": bool(e.get("solved")), "answer": e.get("answer", "")}  # fmt: skip
    if "complete" in e:
        out["complete"] = bool(e["complete"])
    return out


def _top_problem(data) -> str:
    """Why the file's top level is not this lesson's progress ('' when it is), in Chinese."""
    if type(data) is not dict or data.get("format") != FORMAT:
        return "不是本课的进度文件"
    version = data.get("version")
    if type(version) is not int:
        return f"的 version 字段不是整数（是 {json.dumps(version, ensure_ascii=False)[:20]}）"
    if version > VERSION:
        return f"是更新版本的课程写的（版本 {version}）"
    if version not in (1, VERSION):
        return f"的版本号 {version} 不是本课认识的"
    for kind in ("questions", "exercises", "interview"):
        if type(data.get(kind)) is not dict:
            return f"的 {kind} 字段不是一个字典"
    if data.get("saved_at") is not None and type(data["saved_at"]) is not str:
        return "的 saved_at 字段不是文字"
    return ""


def _clean(data: dict) -> tuple[dict, list[str], bool]:
    """The file's data (format 1 or 2) as format 2, every malformed entry dropped; the names of what was dropped;
    whether it was a format-1 file."""
    out, dropped, v1 = empty(), [], data["version"] == 1
    out["saved_at"] = data.get("saved_at")
    question_ok, exercise_ok = (_v1_question_ok, _v1_exercise_ok) if v1 else (_item_ok, _exercise_ok)
    for key, entry in data["questions"].items():
        if _item_id(key) == key and question_ok(entry):
            out["questions"][key] = _from_v1(entry) if v1 else entry
        else:
            dropped.append(_short(_text(key, 30)))
    for key, entry in data["exercises"].items():
        if _item_id(key) == key and exercise_ok(entry):
            out["exercises"][key] = ({"result": entry["status"], "message": entry.get("message", ""),
                                      "checks": entry["checks"], "mistakes": [], "source": None} if v1 else entry)
        else:
            dropped.append(_short(_text(key, 30)))
    interview = data["interview"]
    if interview and (_v1_interview_ok if v1 else _item_ok)(interview):
        out["interview"] = _from_v1(interview) if v1 else interview
    elif interview:
        dropped.append("面试自检")
    return out, dropped, v1


# ---------------------------------------------------------------------------------------------- the file
def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_KINDS = {stat.S_IFLNK: "符号链接", stat.S_IFIFO: "命名管道（FIFO）", stat.S_IFDIR: "文件夹", stat.S_IFCHR: "设备文件",
          stat.S_IFBLK: "设备文件", stat.S_IFSOCK: "套接字"}  # fmt: skip


def _kind(path: Path) -> str | None:
    """None when nothing is at ``path``; "" for a regular file; else what it is, in Chinese (never followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return "" if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "特殊文件")


def _why(exc: BaseException) -> str:
    """An OSError in Chinese: what is wrong with the place."""
    if isinstance(exc, filelock.Timeout):
        return f"另一个笔记本正占着进度文件，等了 {LOCK_TIMEOUT_S:g} 秒还没轮到"
    if isinstance(exc, NotAFile):
        return f"{exc.path} 是一个{exc.kind}，不是普通文件，本课不碰它"
    code = getattr(exc, "errno", None)
    return {
        errno.EROFS: "所在的文件夹是只读的",
        errno.EACCES: "没有写入这个文件夹的权限",
        errno.EPERM: "没有写入这个文件夹的权限",
        errno.ENOSPC: "磁盘已经满了",
        errno.EDQUOT: "磁盘配额已经用完",
        errno.ENOTDIR: "路径里有一段不是文件夹",
        errno.EEXIST: "路径里有一段不是文件夹",
        errno.ENAMETOOLONG: "路径太长",
        errno.ELOOP: "路径上是一个符号链接，本课不跟随它",
    }.get(code, f"系统报告「{type(exc).__name__}」")


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist: O_EXCL, never through a link) and write ``data``; on failure remove it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def _replace_file(path: Path, data: bytes) -> None:
    """Atomically make ``path`` a regular file holding ``data``: a new temporary file in the same folder, then
    ``os.replace`` onto ``path`` only when ``path`` is a regular file or absent. Nothing else is touched."""
    if (kind := _kind(path)):
        raise NotAFile(path, kind)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    _write_new(tmp, data)  # no fsync: a kernel crash or restart loses nothing once replaced; fsync costs 10-25 ms
    try:
        if (kind := _kind(path)):
            raise NotAFile(path, kind)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


class ProgressFile:
    """Reads and writes one progress file; never raises for a bad file or a folder it cannot write, and never
    touches anything but its own file, its lock and the files it creates beside them."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_path()
        self._written: tuple | None = None  # (device, inode, size, mtime) of the file this object last wrote

    @property
    def folder(self) -> Path:
        return self.path.parent

    def _lock(self) -> filelock.BaseFileLock:
        lock = self.path.with_name(self.path.name + ".lock")
        if (kind := _kind(lock)):
            raise NotAFile(lock, kind)
        return filelock.FileLock(str(lock), timeout=LOCK_TIMEOUT_S)

    def refused(self) -> str:
        """A Chinese notice when something other than a regular file is at the path ('' otherwise)."""
        try:
            kind = _kind(self.path)
        except OSError:
            return ""
        if not kind:
            return ""
        return (f"进度文件的位置 {self.path} 上是一个{kind}，不是普通文件：为了不碰别的文件，本课不读它、不写它、"
                f"也不给它改名。这次的进度只留在内存里；请把它移走，或设置环境变量 {ENV_VAR} 指向另一个位置。")

    # -- reading
    def load(self) -> tuple[dict, str]:
        """(data, notice): the saved progress, or a fresh one and a Chinese notice when (part of) it was unusable."""
        if notice := self.refused():
            return empty(), notice
        try:
            with self._lock():
                return self._load()
        except (OSError, filelock.Timeout):
            return self._load()  # no lock (a read-only folder): reading needs none, os.replace is atomic

    def _read(self) -> tuple[bytes, tuple] | None:
        """The file's bytes and its identity (device, inode, size, mtime), or None when there is none. Raises
        NotAFile for anything but a regular file and OverflowError for one over the size cap (opened
        O_NOFOLLOW | O_NONBLOCK: a FIFO or a link cannot hang it)."""
        if (kind := _kind(self.path)):
            raise NotAFile(self.path, kind)
        try:
            fd = os.open(self.path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotAFile(self.path, "符号链接") from None
            raise
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise NotAFile(self.path, _KINDS.get(stat.S_IFMT(info.st_mode), "特殊文件"))
            if info.st_size > MAX_FILE_BYTES:
                raise OverflowError(info.st_size)
            raw = f.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise OverflowError(len(raw))
        return raw, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)

    def _load(self) -> tuple[dict, str]:
        try:
            read = self._read()
        except NotAFile:
            return empty(), self.refused()
        except OverflowError as size:
            mb = size.args[0] / 2**20
            return empty(), self._aside(f"有 {mb:,.1f} MB，超过了 {MAX_FILE_BYTES // 2**20} MB 的上限（正常的进度文件"
                                        "只有几 KB）")  # fmt: skip
        except OSError as exc:
            return empty(), self._aside(f"读不了（{type(exc).__name__}）")
        if read is None:
            return empty(), ""
        raw, identity = read
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            return empty(), self._aside("内容已损坏（不是完整的 JSON）")
        if identity == self._written and type(data) is dict:  # the very file this object wrote: checked already
            return data, ""
        if problem := _top_problem(data):
            return empty(), self._aside(problem)
        data, dropped, v1 = _clean(data)
        notice = ""
        if v1 and (data["questions"] or data["interview"]):
            notice = ("进度文件是题目带版本号以前的课程写的：之前的作答都保留了，但看不出它们答的是哪一版题目，"
                      f"所以显示为旧版题目的作答（「{OLD_VERSION}」），不计入答对；请按现在的题目再答一次。")
        if not dropped:
            return data, notice
        copy = self._free("unreadable")
        try:
            _write_new(copy, raw)
            kept = f"原文件的副本保存为 {copy}。"
        except OSError:
            kept = "（无法另存原文件的副本。）"
        shown = "、".join(dropped[:5]) + ("等" if len(dropped) > 5 else "")
        return data, (notice + f"进度文件 {self.path} 里 {shown} 的记录格式不对（字段缺失或类型不对），已跳过，"
                      f"其余进度照常恢复。{kept}")  # fmt: skip

    def _free(self, why: str) -> Path:
        """A sibling name in the data folder that nothing has (two in one second get -2, -3, …)."""
        base = self.path.with_name(f"{self.path.name}.{why}-{_stamp()}")
        target, n = base, 1
        while os.path.lexists(target):
            n += 1
            target = base.with_name(f"{base.name}-{n}")
        return target

    def _move_aside(self, why: str) -> Path:
        """Rename the progress file (a regular file, checked just before) to a free sibling name; never replaces
        anything already at that name (a hard link then unlink where the system allows it)."""
        if (kind := _kind(self.path)) is None:
            raise FileNotFoundError(errno.ENOENT, "no file", str(self.path))
        if kind:
            raise NotAFile(self.path, kind)
        target = self._free(why)
        try:
            os.link(self.path, target, follow_symlinks=False)
        except FileExistsError:
            raise
        except (OSError, NotImplementedError):  # no hard links here (FAT, some network folders, Windows' linkat)
            os.rename(self.path, target)
            return target
        os.unlink(self.path)
        return target

    def _aside(self, why: str) -> str:
        try:
            target = self._move_aside("unreadable")
            kept = f"旧文件已改名保存为 {target}，没有删除。"
        except OSError:
            kept = "旧文件原样留在那里（无法改名），之后的进度会写到同一个位置。"
        return f"进度文件 {self.path} {why}，所以这次从头开始记录。{kept}"

    # -- writing
    def update(self, change: Callable[[dict], None]) -> tuple[dict | None, str]:
        """Under the lock: read the file, ``change`` its data, write it back atomically. (merged data, notice) on
        success; (None, Chinese message) when it could not be written (nothing changed on disk)."""
        if notice := self.refused():
            return None, notice
        try:
            self.folder.mkdir(parents=True, exist_ok=True)  # the lock file lives there too
            with self._lock():
                data, notice = self._load()
                if refused := self.refused():  # something replaced the file while we read it
                    return None, refused
                change(data)
                self._write(data)
        except (OSError, filelock.Timeout) as exc:
            return None, (f"进度没能保存到 {self.path}：{_why(exc)}。原来的进度文件没有改动；这次的进度先留在内存里，"
                          f"下次保存时会一起补上；也可以设置环境变量 {ENV_VAR} 指向一个可写的位置。")  # fmt: skip
        return data, notice

    def _write(self, data: dict) -> None:
        data["saved_at"] = _now()
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        self._written = None
        _replace_file(self.path, text.encode("utf-8", "backslashreplace"))  # every text was escaped already
        with contextlib.suppress(OSError):
            info = os.lstat(self.path)
            self._written = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)

    def save(self, data: dict) -> str:
        """Replace the file's content with ``data`` (no merge); '' on success, else a Chinese message."""
        _, problem = self.update(lambda d: (d.clear(), d.update(json.loads(json.dumps(data)))))
        return problem

    def set_aside(self) -> Path | None:
        """Rename the file to progress.json.reset-<time> (for 清空进度); the old progress is kept, not deleted.
        Raises ProgressError (a Chinese message) when the folder does not allow it."""
        try:
            if self.refused():
                raise NotAFile(self.path, _kind(self.path) or "")
            with self._lock():
                if _kind(self.path) is None:
                    return None
                return self._move_aside("reset")
        except (OSError, filelock.Timeout) as exc:
            raise ProgressError(f"进度没有清空：{_why(exc)}（{self.path}）。你的作答都还在；换一个可写的位置"
                                f"（环境变量 {ENV_VAR}）再试。") from None  # fmt: skip


# ---------------------------------------------------------------------------------------------- changes
def _new_item() -> dict:
    return {"attempts": [], "n_attempts": 0, "question_version": None, "first_try": None, "final": None,
            "solved": False, "answer": ""}  # fmt: skip


def _add_attempt(data: dict, qid: str | None, attempt: dict) -> None:
    """One attempt at a question (``qid``) or at the interview (``qid`` None)."""
    if qid is None:
        entry = data["interview"] = data["interview"] or {**_new_item(), "complete": False}
    else:
        entry = data["questions"].setdefault(qid, _new_item())
    version, verdict = attempt["question_version"], attempt["verdict"]
    if entry["question_version"] != version or not entry["n_attempts"]:  # the first attempt at this version
        entry.update(question_version=version, first_try=verdict, solved=False, n_attempts=0)
        if "complete" in entry:
            entry["complete"] = False
    entry["n_attempts"] += 1
    entry["final"], entry["answer"] = verdict, attempt["answer"]
    entry["solved"] = entry["solved"] or verdict == "right"
    if "complete" in entry:
        covered, of = attempt.get("covered"), attempt.get("of")
        entry["complete"] = verdict == "right" or (verdict == "self" and covered is not None and len(covered) == of)
    attempts = [*entry["attempts"], attempt]
    entry["attempts"] = attempts if len(attempts) <= MAX_ATTEMPTS else [attempts[0], *attempts[-(MAX_ATTEMPTS - 1):]]


def _add_check(data: dict, name: str, status: str, message: str, mistakes: list[str], source: str | None) -> None:
    entry = data["exercises"].setdefault(name, {"checks": 0})
    entry.update(result=status, message=message, checks=entry["checks"] + 1, mistakes=mistakes,
                 source=source if source is not None else entry.get("source"))  # fmt: skip


def _self_check(entry: dict) -> dict:
    covered = entry.get("covered")
    of = entry.get("of")
    if not (isinstance(covered, list | tuple) and len(covered) <= MAX_CHOICES
            and all(isinstance(c, str) for c in covered) and _is_int(of) and len(covered) <= of):  # fmt: skip
        raise ValueError("自评记录需要 covered（已覆盖要点的列表，每项是文字）和 of（要点总数，"
                         "不小于 covered 的个数）。")
    return {"covered": [_text(c, 200) for c in covered], "of": of}


class Progress:
    """What the learner has done; ``store=None`` keeps it in memory only. The items counted default to
    ``lesson_items()`` (an item recorded under another id joins them); ``versions`` to ``quiz.versions()``."""

    def __init__(self, question_ids: Iterable[str] | None = None, exercise_names: Iterable[str] | None = None,
                 store: ProgressFile | None = None, interview: bool = True,
                 versions: Mapping[str, str] | None = None):  # fmt: skip
        self.ids: tuple[str, ...] = ()
        self.exercise_names: tuple[str, ...] = ()
        if question_ids is None or exercise_names is None:
            lesson_q, lesson_ex = lesson_items()
            question_ids = lesson_q if question_ids is None else question_ids
            exercise_names = lesson_ex if exercise_names is None else exercise_names
        self.expect(question_ids, exercise_names)
        self.has_interview = interview
        self.store = store
        self._versions = dict(versions) if versions is not None else None
        self.data, self.notice = store.load() if store is not None else (empty(), "")
        self.expect(self.data["questions"], self.data["exercises"])
        self._pending: list[Callable[[dict], None]] = []  # changes not yet on disk (a failed save keeps them)
        self._listeners: list[Callable[[], None]] = []
        self._reset_listeners: list[Callable[[], None]] = []

    def expect(self, question_ids: Iterable[str] = (), exercise_names: Iterable[str] = ()) -> Progress:
        """Add items the lesson has (idempotent; order kept)."""
        self.ids = tuple(dict.fromkeys([*self.ids, *question_ids]))
        self.exercise_names = tuple(dict.fromkeys([*self.exercise_names, *exercise_names]))
        return self

    def version(self, item_id: str) -> str | None:
        """The current version digest of a question (or the interview); None for an item the lesson does not ask."""
        if self._versions is None:
            from lesson_lib.practice.quiz import versions

            self._versions = versions()
        return self._versions.get(item_id)

    # ------------------------------------------------------------------ recording
    def record(self, item, entry=None) -> None:
        """Record one attempt: ``record(feedback, answer)`` (a ``quiz.Feedback``; blank ones are not attempts) or
        ``record(item_id, {"kind": "answer" | "self_assessment", "answer": …, "verdict": … | "covered": […], "of": n})``
        (``item_id`` "面试" is §8's interview); a malformed entry raises ValueError (a programming error)."""
        if isinstance(item, str):
            self._record_entry(item, entry)
            return
        feedback, answer = item, entry
        if feedback.blank or feedback.verdict not in VERDICTS:
            return
        qid = self._id(feedback.question_id)
        version = getattr(feedback, "version", "") or self.version(qid)
        mistakes = ";".join(getattr(feedback, "mistakes", ()) or ()) or None
        self._attempt(qid, _storable(answer), feedback.verdict, version, mistakes)

    def _attempt(self, qid: str | None, shown, verdict: str, version, mistake, self_check: dict | None = None):
        if qid is None and not isinstance(shown, str):  # the interview's answer is one text
            shown = "、".join(shown)
        attempt = {"answer": shown, "verdict": verdict, "mistake": _text(mistake, 200) if mistake else None,
                   "question_version": version}  # fmt: skip
        if self_check is not None:
            attempt.update(self_check)
        self._apply(_add_attempt, qid, attempt)

    def _id(self, qid) -> str:
        checked = _item_id(qid)
        if checked is None:
            raise ValueError(f"题目编号必须是不超过 {MAX_ID_CHARS} 个字符的非空文字，收到的是 {type(qid).__name__}。")
        self.expect((checked,))
        return checked

    def _record_entry(self, item_id: str, entry) -> None:
        if not isinstance(entry, dict) or entry.get("kind") not in ("answer", "self_assessment"):
            raise ValueError("记录需要一个 dict，kind 是 \"answer\" 或 \"self_assessment\"。")
        shown = _storable(entry.get("answer"))
        if entry["kind"] == "answer":
            verdict = entry.get("verdict")
            if verdict not in ("right", "wrong", "review"):
                raise ValueError("answer 记录的 verdict 只能是 right、wrong 或 review。")
            self_check = None
        else:
            self_check, verdict = _self_check(entry), "self"
        mistake = entry.get("mistake") if isinstance(entry.get("mistake"), str) else None
        qid = None if item_id == INTERVIEW else self._id(item_id)
        self._attempt(qid, shown, verdict, self.version(qid or INTERVIEW), mistake, self_check)

    def record_exercise(self, result) -> None:
        """An ExerciseResult (name, status, message; and ``mistakes`` / ``source`` when it has them). A stub
        never filled in is not saved (running the lesson writes nothing)."""
        name = _item_id(result.name)
        if name is None or result.status not in EXERCISE_STATUSES:
            return
        if result.status == "todo" and name not in self.data["exercises"]:
            return
        mistakes = getattr(result, "mistakes", None) or ()
        mistakes = [_text(m, 200) for m in list(mistakes)[:MAX_CHOICES] if isinstance(m, str)]
        source = getattr(result, "source", None)
        source = _text(source, MAX_SOURCE_CHARS) if isinstance(source, str) else None
        self.expect((), (name,))
        self._apply(_add_check, name, result.status, _text(result.message, 500), mistakes, source)

    def record_interview(self, feedback, answer) -> None:
        if feedback.blank:
            return
        version = getattr(feedback, "version", "") or self.version(INTERVIEW)
        verdict = feedback.verdict if feedback.verdict in VERDICTS else "review"
        self._attempt(None, _storable(answer), verdict, version, None)

    # ------------------------------------------------------------------ reading
    def _current(self, entry: dict | None, item_id: str) -> bool:
        """Whether a stored item answers the current version of its question."""
        return bool(entry) and entry.get("question_version") == self.version(item_id)

    def _view(self, entry: dict | None, item_id: str) -> dict | None:
        """An item as the widgets read it: attempts (a count), answer, solved, last, history [[answer, verdict]]
        and self at the current version; answers to an earlier version appear in history as OLD_VERSION, and in
        ``earlier``."""
        if not entry:
            return None
        current = self._current(entry, item_id)
        version = self.version(item_id)
        mine = [a for a in entry["attempts"] if a.get("question_version") == version]
        old = [a for a in entry["attempts"] if a.get("question_version") != version]
        view = {"attempts": entry["n_attempts"] if current else 0,
                "answer": entry.get("answer", "") if current else "",
                "solved": bool(current and entry["solved"]), "last": entry["final"] if current else None,
                "history": [[_short(a["answer"]), OLD_VERSION] for a in old]
                           + [[_short(a["answer"]), a["verdict"]] for a in mine],
                "earlier": [a["answer"] for a in old]}  # fmt: skip
        marks = [a for a in mine if a["verdict"] == "self"]
        if marks:
            view["self"] = {"covered": marks[-1].get("covered", []), "of": marks[-1].get("of", 0)}
        if "complete" in entry:
            view["complete"] = bool(current and entry["complete"])
            view["covered"] = view.get("self", {}).get("covered", [])
        return view

    def question_entry(self, qid: str) -> dict | None:
        return self._view(self.data["questions"].get(qid), qid)

    def interview_entry(self) -> dict | None:
        return self._view(self.data["interview"], INTERVIEW)

    def earlier(self) -> list[str]:
        """Items whose saved answers were to an earlier version of their question (kept, never counted)."""
        out = [q for q, e in self.data["questions"].items() if not self._current(e, q)]
        if self.data["interview"] and not self._current(self.data["interview"], INTERVIEW):
            out.append(INTERVIEW)
        return out

    def earlier_note(self, item_id: str) -> str:
        """For a widget: its answers to an earlier version of the question, in Chinese ('' when there are none)."""
        view = self.interview_entry() if item_id == INTERVIEW else self.question_entry(item_id)
        answers = [_short(a) for a in (view or {}).get("earlier", [])]
        if not answers:
            return ""
        return (f"{OLD_VERSION}：" + "、".join(f"「{a}」" for a in answers[-3:])
                + "。题目已经更新，这些作答保留着，但不计入；请按现在的题目再答一次。")

    def subscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def on_reset(self, listener: Callable[[], None]) -> None:
        self._reset_listeners.append(listener)

    def reset(self) -> str:
        """Start afresh; the old file is renamed aside, not deleted. Returns a Chinese message (also when the
        folder does not allow it: then nothing is cleared)."""
        try:
            kept = self.store.set_aside() if self.store is not None else None
        except ProgressError as exc:
            return str(exc)
        self.data, self.notice, self._pending = empty(), "", []
        for listener in list(self._reset_listeners) + list(self._listeners):
            listener()
        return f"进度已清空。旧的进度保存在 {kept}。" if kept else "进度已清空。"

    def _apply(self, change, *args) -> None:
        """Change the progress in memory at once, then on disk under the lock, merged with what is there."""
        def step(data):
            change(data, *args)

        step(self.data)
        self._pending.append(step)
        if self.store is not None:
            pending = list(self._pending)
            merged, problem = self.store.update(lambda data: [p(data) for p in pending])
            if merged is not None:
                self.data, self._pending = merged, []
                self.expect(merged["questions"], merged["exercises"])
                if self.notice.startswith(("进度没能保存", "进度文件的位置")):  # saved now: the failure is over
                    self.notice = ""
            if problem:
                self.notice = problem
        for listener in list(self._listeners):
            listener()

    # ------------------------------------------------------------------ counting
    @property
    def solved(self) -> dict[str, bool]:
        """Right at the current version of the question (an answer to an earlier version never counts)."""
        return defaultdict(bool, {q: bool((self.question_entry(q) or {}).get("solved")) for q in self.ids})

    @property
    def attempts(self) -> dict[str, int]:
        """Attempts at the current version of each question."""
        return defaultdict(int, {q: (self.question_entry(q) or {}).get("attempts", 0) for q in self.ids})

    @property
    def n_solved(self) -> int:
        return sum(self.solved.values())

    def items(self) -> list[tuple[str, str, str]]:
        """(kind, name, state) for everything the learner can do; state is done, tried or todo. A question
        the learner assessed themselves counts as done (it was worked through), never as right."""
        out = []
        for q in self.ids:
            entry = self.question_entry(q) or {}
            done = entry.get("solved") or entry.get("last") == "self"
            out.append(("题目", q, "done" if done else ("tried" if entry.get("attempts") else "todo")))
        for name in self.exercise_names:
            status = (self.data["exercises"].get(name) or {}).get("result")
            out.append(("代码练习", name, "done" if status == "passed" else ("tried" if status not in (None, "todo")
                                                                           else "todo")))  # fmt: skip
        if self.has_interview:
            entry = self.interview_entry() or {}
            out.append(("面试自检", INTERVIEW,
                        "done" if entry.get("complete") else ("tried" if entry.get("attempts") else "todo")))
        return out

    def all_done(self) -> bool:
        return all(state == "done" for _, _, state in self.items())

    def summary(self) -> str:
        """The learner's summary in Chinese: every question, exercise and the interview counted."""
        items = self.items()
        lines = []
        if self.notice:
            lines.append(self.notice)
        for kind, unit in (("题目", "题"), ("代码练习", "个"), ("面试自检", "项")):
            mine = [(n, s) for k, n, s in items if k == kind]
            if not mine:
                continue
            if kind == "题目":
                selfs = [n for n, _ in mine if (self.question_entry(n) or {}).get("last") == "self"]
                right = [n for n, s in mine if s == "done" and n not in selfs]
                line = f"{kind}：已答对 {len(right)} / {len(mine)} {unit}。"
                if selfs:
                    line += "已自评：" + "、".join(selfs) + "。"
            else:
                line = f"{kind}：已完成 {sum(s == 'done' for _, s in mine)} / {len(mine)} {unit}。"
            tried = [n for n, s in mine if s == "tried"]
            todo = [n for n, s in mine if s == "todo"]
            if tried and kind == "面试自检":  # one line per kind: what to do next, not a second 「面试自检：」 line
                line += "你的自评还没有勾满三点：对照参考答案改一改，再自评一次。"
            elif tried:
                line += "做过但还没过：" + "、".join(tried) + "。"
            if todo:
                line += "还没做：" + "、".join(todo) + "。"
            lines.append(line)
        if earlier := self.earlier():
            lines.append(f"{OLD_VERSION}（题目已经更新，不计入）：" + "、".join(earlier) + "。请按现在的题目再答一次。")
        done = sum(s == "done" for _, _, s in items)
        if self.all_done():
            lines.append(f"全部完成（{done} / {len(items)}），明天见！")
        else:
            lines.append(f"合计完成 {done} / {len(items)} 项。")
        return "\n".join(lines)

    # ------------------------------------------------------------------ export
    def to_json(self) -> str:
        return json.dumps(dict(self.data, exported_at=_now()), ensure_ascii=False, indent=1)

    def instructor_summary(self, learner: str = "") -> str:
        """A one-page Chinese summary for an instructor (plain text / Markdown)."""
        lines = [f"# Day 11 多头注意力 · 学习进度{('：' + _text(learner, 100)) if learner else ''}", "",
                 f"导出时间：{_now()}", ""]  # fmt: skip
        lines += [f"- {line}" for line in self.summary().splitlines()]
        lines += ["", "| 类别 | 项目 | 状态 | 尝试次数 |", "| --- | --- | --- | --- |"]
        state_word = {"done": "完成", "tried": "未通过", "todo": "未做"}
        for kind, name, state in self.items():
            if kind == "题目":
                tries = (self.question_entry(name) or {}).get("attempts", 0)
            elif kind == "代码练习":
                tries = (self.data["exercises"].get(name) or {}).get("checks", 0)
            else:
                tries = (self.interview_entry() or {}).get("attempts", 0)
            lines.append(f"| {kind} | {name} | {state_word[state]} | {tries} |")
        return "\n".join(lines) + "\n"

    def export(self, folder: Path | str | None = None) -> tuple[Path, Path]:
        """Write progress-export.json and progress-summary.md beside the progress file (or into ``folder``), each
        atomically and only onto a regular file or a free name. Raises ProgressError (an OSError with a Chinese
        message) when the folder is read-only or full, or something else sits at one of those names."""
        if folder is not None:
            folder = Path(folder)
        elif self.store is not None:
            folder = self.store.folder
        else:
            folder = Path.cwd()
        json_path, md_path = folder / "progress-export.json", folder / "progress-summary.md"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _replace_file(json_path, self.to_json().encode("utf-8", "backslashreplace"))
            _replace_file(md_path, self.instructor_summary().encode("utf-8", "backslashreplace"))
        except OSError as exc:
            raise ProgressError(f"没能导出到 {folder}：{_why(exc)}。你的进度没有受影响；"
                                "换一个可写的文件夹再导出（export(folder=…)）。") from None  # fmt: skip
        return json_path, md_path


_DEFAULT: Progress | None = None


def default_progress(question_ids: Iterable[str] = (), exercise_names: Iterable[str] = ()) -> Progress:
    """The notebook's one progress record, saved to ``default_path()``; shared by every widget and exercise.
    It counts the lesson's items and any the caller names here."""
    global _DEFAULT
    path = default_path()
    if _DEFAULT is None or _DEFAULT.store is None or _DEFAULT.store.path != path:
        _DEFAULT = Progress(store=ProgressFile(path))
    return _DEFAULT.expect(question_ids, exercise_names)
