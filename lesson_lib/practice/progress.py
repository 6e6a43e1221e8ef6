"""The learner's progress (questions, code exercises, the interview self-check) and the file that keeps it.

Everything the learner does is recorded in a ``Progress`` and saved at once. A save takes the file's
lock (``filelock``, ``progress.json.lock`` beside it), reads what is there, adds what this kernel did
since its last save, and writes atomically (a temporary file in the same folder, then ``os.replace``):
two notebooks saving to the same file lose nothing, and each learns the other's answers. A kernel
restart or a crash loses nothing: when the cells run again, the widgets and the summary are restored.

This module knows no question or exercise: its callers name the items, either per record
(``Progress(question_ids, exercise_names)``) or once for the lesson (``declare(...)`` at their import:
``quiz_widgets`` declares the questions, ``exercises`` the exercises); an item recorded under another
id is counted too.

Where the file lives: ``$LESSON_PROGRESS_FILE`` if set (the hub and the tests set it), otherwise the
learner's data folder from ``platformdirs`` (``~/.local/share/day11-multi-head-attention/progress.json``
on Linux, or under ``$XDG_DATA_HOME``; ``~/Library/Application Support/…`` on macOS; ``%LOCALAPPDATA%\\…``
on Windows): the learner's own space, outside the repository. A file at the old place
(``~/.local/share/…`` on every system) is still read, so an update loses no one's progress.

The file's format (JSON, UTF-8)::

    {"format": "day11-progress", "version": 1, "saved_at": "2026-12-01T10:00:00+00:00",
     "questions": {"Q2": {"answer": "64", "attempts": 2, "solved": true, "last": "right",
                          "history": [["32", "wrong"], ["64", "right"]]}},
     "exercises": {"split_heads": {"status": "passed", "message": "全部通过！…", "checks": 3}},
     "interview": {"answer": "…", "attempts": 1, "covered": ["① …"], "complete": false}}

``answer`` is what was submitted (text, or a sorted list of choice keys); ``last`` / history verdicts are
right, wrong, review (free text, read but not judged) or self (the learner's self-assessment; then the
entry also has ``"self": {"covered": [...], "of": n}``, the points the learner marked as covered out of n).
Text is stored as typed; a character UTF-8 cannot hold (a lone surrogate) is kept as its ``\\ud800`` escape.
A file that is not valid JSON, not this format or of a newer version is renamed aside
(``progress.json.unreadable-<time>``), never deleted; a single malformed entry is dropped with a notice
and the file as it was is copied aside first. Every message is Chinese; nothing here raises for a bad
file or a folder that is read-only or full.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path

import filelock
import platformdirs

__all__ = ["ENV_VAR", "FORMAT", "VERSION", "APP_NAME", "VERDICTS", "EXERCISE_STATUSES", "ProgressError",
           "default_path", "legacy_path", "ProgressFile", "Progress", "declare", "default_progress"]  # fmt: skip

ENV_VAR = "LESSON_PROGRESS_FILE"
APP_NAME = "day11-multi-head-attention"
FORMAT = "day11-progress"
VERSION = 1
INTERVIEW = "面试"
MAX_HISTORY = 20  # attempts kept per question
MAX_ANSWER_CHARS = 4000  # a stored answer is cut to this (checkers read far less)
MAX_CHOICES = 50  # items in a stored list answer
MAX_ID_CHARS = 100
LOCK_TIMEOUT_S = 10.0  # another kernel holds the lock for one small write; far longer means it is stuck
VERDICTS = ("right", "wrong", "review", "self")
EXERCISE_STATUSES = ("passed", "todo", "error", "wrong", "timeout", "interrupted", "borrowed", "tampered")


class ProgressError(OSError):
    """An export or reset that could not be done; its message is Chinese and says what to do."""


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
    if not path.exists() and old.exists():  # keep using the learner's existing file (macOS / Windows before)
        return old
    return path


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
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        return None
    return _text(value, MAX_ID_CHARS)


# ---------------------------------------------------------------------------------------------- validation
def empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "saved_at": None, "questions": {}, "exercises": {}, "interview": {}}


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**9


def _is_texts(v, limit=MAX_CHOICES) -> bool:
    return isinstance(v, list) and len(v) <= limit and all(isinstance(a, str) for a in v)


def _is_answer(v) -> bool:
    return isinstance(v, str) or _is_texts(v)


def _is_self(v) -> bool:
    return isinstance(v, dict) and _is_texts(v.get("covered")) and _is_count(v.get("of"))


def _question_ok(e) -> bool:
    return (isinstance(e, dict) and _is_count(e.get("attempts")) and isinstance(e.get("solved"), bool)
            and _is_answer(e.get("answer", "")) and e.get("last", "right") in VERDICTS
            and isinstance(e.get("history", []), list) and len(e.get("history", [])) <= 10 * MAX_HISTORY
            and all(isinstance(h, list) and len(h) == 2 and isinstance(h[0], str) and h[1] in VERDICTS
                    for h in e.get("history", []))
            and ("self" not in e or _is_self(e["self"])))  # fmt: skip


def _exercise_ok(e) -> bool:
    return (isinstance(e, dict) and e.get("status") in EXERCISE_STATUSES and isinstance(e.get("message", ""), str)
            and _is_count(e.get("checks")))  # fmt: skip


def _interview_ok(e) -> bool:
    return isinstance(e, dict) and (not e or (
        _is_count(e.get("attempts")) and isinstance(e.get("answer", ""), str) and _is_texts(e.get("covered", []))
        and isinstance(e.get("complete", False), bool) and ("self" not in e or _is_self(e["self"]))))  # fmt: skip


def _valid_top(data) -> bool:
    return (isinstance(data, dict) and data.get("format") == FORMAT and data.get("version") == VERSION
            and all(isinstance(data.get(k), dict) for k in ("questions", "exercises", "interview")))  # fmt: skip


def _clean(data: dict) -> tuple[dict, list[str]]:
    """The file's data with every malformed entry dropped, and the names of what was dropped."""
    out, dropped = empty(), []
    out["saved_at"] = data.get("saved_at") if isinstance(data.get("saved_at"), str) else None
    for kind, ok in (("questions", _question_ok), ("exercises", _exercise_ok)):
        for key, entry in data[kind].items():
            if _item_id(key) == key and ok(entry):
                out[kind][key] = entry
            else:
                dropped.append(_short(_text(key, 30)))
    if _interview_ok(data["interview"]):
        out["interview"] = data["interview"]
    else:
        dropped.append("面试自检")
    return out, dropped


# ---------------------------------------------------------------------------------------------- the file
def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _why(exc: BaseException) -> str:
    """An OSError in Chinese: what is wrong with the place."""
    if isinstance(exc, filelock.Timeout):
        return f"另一个笔记本正占着进度文件，等了 {LOCK_TIMEOUT_S:g} 秒还没轮到"
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
    }.get(code, f"系统报告「{type(exc).__name__}」")


class ProgressFile:
    """Reads and writes one progress file; never raises for a bad file or a folder it cannot write."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_path()

    @property
    def target(self) -> Path:
        """The file written: the symlink's target when the progress file is a symlink (it stays a symlink)."""
        return Path(os.path.realpath(self.path))

    def _lock(self) -> filelock.BaseFileLock:
        return filelock.FileLock(str(self.target) + ".lock", timeout=LOCK_TIMEOUT_S)

    # -- reading
    def load(self) -> tuple[dict, str]:
        """(data, notice): the saved progress, or a fresh one and a Chinese notice when (part of) it was unusable."""
        with contextlib.suppress(OSError, filelock.Timeout), self._lock():
            return self._load()
        return self._load()  # no lock (a read-only folder): reading needs none, os.replace is atomic

    def _load(self) -> tuple[dict, str]:
        source = self.target
        try:
            raw = source.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return empty(), ""
        except (OSError, UnicodeDecodeError) as exc:
            return empty(), self._aside(source, f"读不了（{type(exc).__name__}）")
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return empty(), self._aside(source, "内容已损坏（不是完整的 JSON）")
        if isinstance(data, dict) and data.get("format") == FORMAT and _is_count(data.get("version")) \
                and data["version"] > VERSION:
            return empty(), self._aside(source, f"是更新版本的课程写的（版本 {data['version']}）")
        if not _valid_top(data):
            return empty(), self._aside(source, "不是本课的进度文件")
        data, dropped = _clean(data)
        if not dropped:
            return data, ""
        copy = self._free(source, "unreadable")
        try:
            shutil.copyfile(source, copy)
            kept = f"原文件的副本保存为 {copy}。"
        except OSError:
            kept = "（无法另存原文件的副本。）"
        shown = "、".join(dropped[:5]) + ("等" if len(dropped) > 5 else "")
        return data, f"进度文件 {self.path} 里 {shown} 的记录格式不对，已跳过，其余进度照常恢复。{kept}"

    def _free(self, source: Path, why: str) -> Path:
        """A name for a kept-aside copy that no earlier copy has (two in one second get -2, -3, …)."""
        base = source.with_name(f"{source.name}.{why}-{_stamp()}")
        target, n = base, 1
        while target.exists() or target.is_symlink():
            n += 1
            target = base.with_name(f"{base.name}-{n}")
        return target

    def _aside(self, source: Path, why: str) -> str:
        target = self._free(source, "unreadable")
        try:
            os.replace(source, target)
            kept = f"旧文件已改名保存为 {target}，没有删除。"
        except OSError:
            kept = "旧文件原样留在那里（无法改名），之后的进度会写到同一个位置。"
        return f"进度文件 {self.path} {why}，所以这次从头开始记录。{kept}"

    # -- writing
    def update(self, change: Callable[[dict], None]) -> tuple[dict | None, str]:
        """Under the lock: read the file, ``change`` its data, write it back atomically. (merged data, '') on
        success; (None, Chinese message) when it could not be written (nothing changed on disk)."""
        notice = ""
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)  # the lock file lives there too
            with self._lock():
                data, notice = self._load()
                change(data)
                self._write(data)
        except (OSError, filelock.Timeout) as exc:
            return None, (f"进度没能保存到 {self.path}：{_why(exc)}。这次的进度先留在内存里，下次保存时会一起补上；"
                          f"也可以设置环境变量 {ENV_VAR} 指向一个可写的位置。")  # fmt: skip
        return data, notice

    def _write(self, data: dict) -> None:
        data["saved_at"] = _now()
        target = self.target
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(data, ensure_ascii=False, indent=1)
        fd, tmp = tempfile.mkstemp(prefix=".progress-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:  # no fsync: a kernel crash or restart loses nothing once the file is
                # replaced; only an OS crash could, and fsync costs 10-25 ms on every check (benchmarks/exercises)
                f.write(text.encode("utf-8", "backslashreplace"))  # every text was escaped already; belt and braces
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def save(self, data: dict) -> str:
        """Replace the file's content with ``data`` (no merge); '' on success, else a Chinese message."""
        _, problem = self.update(lambda d: (d.clear(), d.update(json.loads(json.dumps(data)))))
        return problem

    def set_aside(self) -> Path | None:
        """Rename the file to progress.json.reset-<time> (for 清空进度); the old progress is kept, not deleted.
        Raises ProgressError (a Chinese message) when the folder does not allow it."""
        try:
            with self._lock():
                target = self.target
                if not target.exists():
                    return None
                kept = self._free(target, "reset")
                os.replace(target, kept)  # a symlink's target moves; the symlink stays and is written through
                return kept
        except (OSError, filelock.Timeout) as exc:
            raise ProgressError(f"进度没有清空：{_why(exc)}（{self.path}）。你的作答都还在；换一个可写的位置"
                                f"（环境变量 {ENV_VAR}）再试。") from None  # fmt: skip


# ---------------------------------------------------------------------------------------------- changes
def _add_attempt(data: dict, qid: str, shown, verdict: str, correct: bool, self_check: dict | None) -> None:
    entry = data["questions"].setdefault(qid, {"attempts": 0, "solved": False, "history": []})
    entry["attempts"] += 1
    entry["solved"] = bool(entry["solved"] or correct)
    entry["answer"], entry["last"] = shown, verdict
    entry["history"] = ([*entry["history"], [_short(shown), verdict]])[-MAX_HISTORY:]
    if self_check is not None:
        entry["self"] = self_check


def _add_check(data: dict, name: str, status: str, message: str) -> None:
    entry = data["exercises"].setdefault(name, {"checks": 0})
    entry.update(status=status, message=message, checks=entry["checks"] + 1)


def _add_interview(data: dict, shown: str, covered: list[str], complete: bool, self_check: dict | None) -> None:
    entry = data["interview"]
    entry.update(answer=shown, attempts=entry.get("attempts", 0) + 1, covered=covered, complete=complete)
    if self_check is not None:
        entry["self"] = self_check


def _self_check(entry: dict) -> dict:
    covered = entry.get("covered")
    of = entry.get("of")
    if not (isinstance(covered, list | tuple) and len(covered) <= MAX_CHOICES
            and all(isinstance(c, str) for c in covered) and _is_count(of) and len(covered) <= of):  # fmt: skip
        raise ValueError("自评记录需要 covered（已覆盖要点的列表，每项是文字）和 of（要点总数，"
                         "不小于 covered 的个数）。")
    return {"covered": [_text(c, 200) for c in covered], "of": of}


_DECLARED: dict[str, tuple[str, ...]] = {"questions": (), "exercises": ()}


def declare(question_ids: Iterable[str] = (), exercise_names: Iterable[str] = ()) -> None:
    """Name the lesson's items once (idempotent): every ``Progress`` made without its own lists counts them."""
    _DECLARED["questions"] = tuple(dict.fromkeys([*_DECLARED["questions"], *question_ids]))
    _DECLARED["exercises"] = tuple(dict.fromkeys([*_DECLARED["exercises"], *exercise_names]))
    if _DEFAULT is not None:
        _DEFAULT.expect(question_ids, exercise_names)


class Progress:
    """What the learner has done. ``store=None`` keeps it in memory only (tests, previews).

    ``question_ids`` / ``exercise_names`` are the items the lesson has (counted as 还没做 until done); None:
    the ones ``declare`` was given. An item recorded under another id joins them."""

    def __init__(self, question_ids: Iterable[str] | None = None, exercise_names: Iterable[str] | None = None,
                 store: ProgressFile | None = None, interview: bool = True):  # fmt: skip
        self.ids: tuple[str, ...] = ()
        self.exercise_names: tuple[str, ...] = ()
        self.expect(_DECLARED["questions"] if question_ids is None else question_ids,
                    _DECLARED["exercises"] if exercise_names is None else exercise_names)  # fmt: skip
        self.has_interview = interview
        self.store = store
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

    # ------------------------------------------------------------------ recording
    def record(self, item, entry=None) -> None:
        """Record one attempt at a question. Two forms:

        - ``record(feedback, answer)``: a ``quiz.Feedback`` and the answer as submitted (blank ones are not
          attempts); its verdict and ``correct`` are recorded.
        - ``record(item_id, entry)``: ``entry`` is a dict with a ``kind``:
          ``{"kind": "answer", "answer": …, "verdict": "right" | "wrong" | "review"}`` — a checked answer;
          ``{"kind": "self_assessment", "answer": text, "covered": [point, …], "of": n}`` — free text the
          learner assessed against the rubric (recorded as such, never as correct);
          ``item_id`` "面试" records §8's interview. A malformed entry raises ValueError (a programming error).
        """
        if isinstance(item, str):
            self._record_entry(item, entry)
            return
        feedback, answer = item, entry
        if feedback.blank:
            return
        self._apply(_add_attempt, self._id(feedback.question_id), _storable(answer), feedback.verdict,
                    bool(feedback.correct), None)  # fmt: skip

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
            self_check, correct = None, verdict == "right"
        else:
            self_check, verdict, correct = _self_check(entry), "self", False
        if item_id == INTERVIEW:
            covered = self_check["covered"] if self_check else []
            complete = bool(self_check and len(covered) == self_check["of"]) or correct
            self._apply(_add_interview, shown if isinstance(shown, str) else "、".join(shown), covered, complete,
                        self_check)  # fmt: skip
            return
        self._apply(_add_attempt, self._id(item_id), shown, verdict, correct, self_check)

    def record_exercise(self, result) -> None:
        """An ExerciseResult. A stub never filled in is not saved (running the lesson writes nothing)."""
        name = _item_id(result.name)
        if name is None or result.status not in EXERCISE_STATUSES:
            return
        if result.status == "todo" and name not in self.data["exercises"]:
            return
        self.expect((), (name,))
        self._apply(_add_check, name, result.status, _text(result.message, 500))

    def record_interview(self, feedback, answer) -> None:
        if feedback.blank:
            return
        covered = [_text(c, 200) for c in list(feedback.covered)[:MAX_CHOICES] if isinstance(c, str)]
        shown = _storable(answer)
        self._apply(_add_interview, shown if isinstance(shown, str) else "、".join(shown), covered,
                    bool(feedback.correct), None)  # fmt: skip

    def question_entry(self, qid: str) -> dict | None:
        return self.data["questions"].get(qid)

    def interview_entry(self) -> dict | None:
        return self.data["interview"] or None

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
                if self.notice.startswith("进度没能保存"):  # saved now: the earlier failure is over
                    self.notice = ""
            if problem:
                self.notice = problem
        for listener in list(self._listeners):
            listener()

    # ------------------------------------------------------------------ counting
    @property
    def solved(self) -> dict[str, bool]:
        return defaultdict(bool, {q: bool((self.data["questions"].get(q) or {}).get("solved")) for q in self.ids})

    @property
    def attempts(self) -> dict[str, int]:
        return defaultdict(int, {q: (self.data["questions"].get(q) or {}).get("attempts", 0) for q in self.ids})

    @property
    def n_solved(self) -> int:
        return sum(self.solved.values())

    def items(self) -> list[tuple[str, str, str]]:
        """(kind, name, state) for everything the learner can do; state is done, tried or todo. A question
        the learner assessed themselves counts as done (it was worked through), never as right."""
        out = []
        for q in self.ids:
            entry = self.data["questions"].get(q) or {}
            done = entry.get("solved") or entry.get("last") == "self"
            out.append(("题目", q, "done" if done else ("tried" if entry.get("attempts") else "todo")))
        for name in self.exercise_names:
            status = (self.data["exercises"].get(name) or {}).get("status")
            out.append(("代码练习", name, "done" if status == "passed" else ("tried" if status not in (None, "todo")
                                                                           else "todo")))  # fmt: skip
        if self.has_interview:
            entry = self.data["interview"]
            out.append(("面试自检", INTERVIEW, "done" if entry.get("complete") else ("tried" if entry else "todo")))
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
                selfs = [n for n, _ in mine if (self.data["questions"].get(n) or {}).get("last") == "self"]
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
                tries = (self.data["questions"].get(name) or {}).get("attempts", 0)
            elif kind == "代码练习":
                tries = (self.data["exercises"].get(name) or {}).get("checks", 0)
            else:
                tries = self.data["interview"].get("attempts", 0)
            lines.append(f"| {kind} | {name} | {state_word[state]} | {tries} |")
        return "\n".join(lines) + "\n"

    def export(self, folder: Path | str | None = None) -> tuple[Path, Path]:
        """Write progress-export.json and progress-summary.md beside the progress file (or into ``folder``).
        Raises ProgressError (an OSError with a Chinese message) when the folder is read-only or full."""
        if folder is not None:
            folder = Path(folder)
        elif self.store is not None:
            folder = self.store.target.parent
        else:
            folder = Path.cwd()
        json_path, md_path = folder / "progress-export.json", folder / "progress-summary.md"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            json_path.write_bytes(self.to_json().encode("utf-8", "backslashreplace"))
            md_path.write_bytes(self.instructor_summary().encode("utf-8", "backslashreplace"))
        except OSError as exc:
            raise ProgressError(f"没能导出到 {folder}：{_why(exc)}。你的进度没有受影响；"
                                "换一个可写的文件夹再导出（export(folder=…)）。") from None  # fmt: skip
        return json_path, md_path


_DEFAULT: Progress | None = None


def default_progress(question_ids: Iterable[str] = (), exercise_names: Iterable[str] = ()) -> Progress:
    """The notebook's one progress record, saved to ``default_path()``; shared by every widget and exercise.
    It counts the declared items and any the caller names here."""
    global _DEFAULT
    path = default_path()
    if _DEFAULT is None or _DEFAULT.store is None or _DEFAULT.store.path != path:
        _DEFAULT = Progress(store=ProgressFile(path))
    return _DEFAULT.expect(question_ids, exercise_names)
