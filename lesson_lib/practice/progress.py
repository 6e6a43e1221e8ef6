"""The learner's progress (questions, code exercises, the interview self-check) and the file that keeps it.

Each save reads, merges and atomically replaces the file under its lock (two notebooks lose nothing); only a regular
file is read or replaced, never a link, FIFO or folder, and one the lesson cannot read is renamed aside, never
overwritten. The format (JSON), which ``scripts/class_report.py`` and the export read::

    {"format": "day11-progress", "version": 2, "saved_at": "2026-12-01T10:00:00+00:00",
     "questions": {"Q2": {"attempts": [{"answer": "[\\"64\\", \\"不变\\"]", "verdict": "wrong", "mistake": "d_k=64",
        "question_version": "016aa98cd5ee"}], "n_attempts": 1, "question_version": "016aa98cd5ee", "first_try": "wrong",
        "final": "wrong", "solved": false, "answer": "[\\"64\\", \\"不变\\"]"}},
     "exercises": {"split_heads": {"result": "passed", "message": "全部通过！", "checks": 3, "mistakes": [],
        "source": "def split_heads(x, h): …"}},
     "interview": {"attempts": [{"answer": "…", "verdict": "self", "mistake": null, "question_version": "47b903bb24be",
        "covered": ["① …"], "of": 3}], "n_attempts": 1, "question_version": "47b903bb24be", "first_try": "self",
        "final": "self", "solved": false, "answer": "…", "complete": false}}

A verdict is right, wrong, review (free text, never judged) or self (``covered`` of ``of`` rubric points); one given
to an earlier version of its question (``question_version``) is dropped on load.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import filelock
import platformdirs

ENV_VAR = "LESSON_PROGRESS_FILE"
APP_NAME = "day11-multi-head-attention"
FORMAT, VERSION = "day11-progress", 2
INTERVIEW = "面试"
EXERCISE_IDS = ("split_heads", "multi_head_attention_loop", "count_multiplies")  # = exercises.EXERCISES (a test)
MAX_FILE_BYTES = 5 * 1024 * 1024  # a real file is a few KB; a larger one is set aside, never parsed
MAX_ATTEMPTS, MAX_ANSWER_CHARS, MAX_SOURCE_CHARS = 20, 4000, 20_000
LOCK_TIMEOUT_S = 10.0  # another kernel holds the lock for one small write; far longer means it is stuck
# What an entry must hold to be read (the types the lesson relies on); an entry that does not is dropped on load.
_ATTEMPT = {"answer": str | list, "verdict": str, "question_version": str | None, "covered": list | None}
_ENTRY = {"attempts": list, "n_attempts": int, "question_version": str | None, "solved": bool, "answer": str | list}
_EXERCISE = {"result": str, "checks": int}
_KINDS = ("questions", "exercises", "interview")


class ProgressError(OSError):
    """What the lesson will not do with its files, in Chinese: touch a link or FIFO, export where it cannot."""


def default_path() -> Path:
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "progress.json"


def current_version(item_id: str) -> str | None:
    """The fingerprint of what the lesson asks now under this id; None for an id it does not know (yet)."""
    from lesson_lib.practice import interview, questions

    if item_id == INTERVIEW:
        return interview.interview_version()
    with contextlib.suppress(KeyError):
        return questions.question(item_id).version
    return None


def empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "saved_at": None, "questions": {}, "exercises": {}, "interview": {}}


def _fits(d, shape: dict) -> bool:
    return type(d) is dict and all(isinstance(d.get(key), kind) for key, kind in shape.items())


def _reads(kind: str, e) -> bool:
    if kind == "exercises":
        return _fits(e, _EXERCISE)
    return _fits(e, _ENTRY) and all(_fits(a, _ATTEMPT) for a in e["attempts"])


def _clean(data: dict) -> tuple[int, list[str]]:
    """Drop entries that do not read, and verdicts on an earlier version: (how many did not read, ids changed)."""
    questions = data["questions"]
    if data["interview"]:
        questions[INTERVIEW] = data["interview"]  # the interview is dropped as a question is
    bad = [(kind, k) for kind in ("questions", "exercises") for k, e in data[kind].items() if not _reads(kind, e)]
    old = [q for q, e in questions.items() if _reads("questions", e)
           and current_version(q) not in (None, e["question_version"])]  # fmt: skip
    for kind, k in [*bad, *(("questions", q) for q in old)]:
        del data[kind][k]
    data["interview"] = questions.pop(INTERVIEW, {})
    return len(bad), old


def _refuse(path: Path) -> None:
    """Raise ProgressError unless ``path`` is a regular file or free (looked at, never followed)."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise ProgressError(errno.EINVAL, f"{path} 不是普通文件（是符号链接、命名管道、文件夹或设备），"
                                              "本课不读它、不写它、也不给它改名")  # fmt: skip


def _why(exc: OSError) -> str:
    """An OSError in Chinese: what is wrong with the place."""
    if isinstance(exc, filelock.Timeout):
        return f"另一个笔记本正占着进度文件，等了 {LOCK_TIMEOUT_S:g} 秒还没轮到"
    if isinstance(exc, ProgressError):
        return exc.strerror
    reasons = {errno.EROFS: "所在的文件夹是只读的", errno.EACCES: "没有写入这个文件夹的权限",
               errno.EPERM: "没有写入这个文件夹的权限", errno.ENOSPC: "磁盘已经满了", errno.EDQUOT: "磁盘配额已经用完",
               errno.ENOTDIR: "路径里有一段不是文件夹", errno.EEXIST: "路径里有一段不是文件夹"}  # fmt: skip
    return reasons.get(exc.errno, f"系统报告「{type(exc).__name__}」")


def _replace_file(path: Path, text: str) -> None:
    """Atomically make ``path`` (a regular file or free) hold ``text``: a new file beside it, then ``os.replace``."""
    _refuse(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # O_EXCL, never a link
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8", "backslashreplace"))  # a lone surrogate in a name cannot stop a save
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _add_attempt(data: dict, item_id: str, attempt: dict) -> None:
    """One attempt at a question or at the interview; an entry for another version of the question starts afresh."""
    entry = data["interview"] if item_id == INTERVIEW else data["questions"].get(item_id)
    if not entry or entry["question_version"] != attempt["question_version"]:
        entry = {"attempts": [], "n_attempts": 0, "question_version": attempt["question_version"],
                 "first_try": attempt["verdict"], "final": None, "solved": False, "answer": ""}  # fmt: skip
    if item_id == INTERVIEW:
        data["interview"] = entry
        entry["complete"] = attempt["verdict"] == "self" and len(attempt["covered"]) == attempt["of"]
    else:
        data["questions"][item_id] = entry
    attempts = [*entry["attempts"], attempt]
    entry.update(n_attempts=entry["n_attempts"] + 1, final=attempt["verdict"], answer=attempt["answer"],
                 solved=entry["solved"] or attempt["verdict"] == "right",
                 attempts=attempts if len(attempts) <= MAX_ATTEMPTS else [attempts[0], *attempts[1 - MAX_ATTEMPTS:]])


def _add_check(data: dict, name: str, result: dict) -> None:
    entry = data["exercises"].setdefault(name, {"checks": 0})
    entry.update(result, checks=entry["checks"] + 1, source=result["source"] or entry.get("source"))


class Progress:
    """What the learner has done, counted over the lesson's items, kept in the file at ``path`` (None: in memory
    only). Never raises for a bad file or place; touches only that file, its lock and files beside it."""

    def __init__(self, path: Path | str | None = None):
        from lesson_lib.practice.questions import question_ids

        self.path = Path(path) if path is not None else None
        self.ids = question_ids()
        self.data, self.notice = self._load() if path is not None else (empty(), "")
        self._pending = []  # changes not yet on disk (a failed save keeps them for the next one)
        self.listeners = []  # called after every change (the summary widgets)

    def _load(self) -> tuple[dict, str]:
        """(data, notice): the saved progress (the entries that read), or a fresh one, and a Chinese notice."""
        try:
            _refuse(self.path)
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as f:
                data = json.loads(f.read(MAX_FILE_BYTES))  # a larger file is cut short: not JSON, never parsed whole
            known = (type(data) is dict and data.get("format") == FORMAT and type(data.get("version")) is int
                     and data["version"] == VERSION and all(type(data.get(k)) is dict for k in _KINDS))  # fmt: skip
            problem = "" if known else f"不是本课认识的进度文件（格式 {FORMAT}、版本 {VERSION}）"
        except FileNotFoundError:
            return empty(), ""
        except ProgressError as exc:
            return empty(), (f"进度文件的位置不对：{_why(exc)}。这次的进度只留在内存里；请把它移走，"
                             f"或设置环境变量 {ENV_VAR} 指向另一个位置。")  # fmt: skip
        except OSError as exc:
            problem = f"读不了（{_why(exc)}）"
        except (ValueError, RecursionError):
            problem = f"内容已损坏或超过了 {MAX_FILE_BYTES // 2**20} MB（正常的只有几 KB），不是完整的 JSON"
        if problem:
            return empty(), self._set_aside(f"{problem}，所以这次从头开始记录")
        n_bad, old = _clean(data)
        notice = self._set_aside(f"里有 {n_bad} 条记录读不懂，已略去，其余照旧") if n_bad else ""
        if n_bad and not os.path.lexists(self.path):  # set aside: what reads goes back at once
            with contextlib.suppress(OSError):
                _replace_file(self.path, json.dumps(data, separators=(",", ":")))
        if old:
            notice += f"课程更新后 {'、'.join(old)} 的题目变了：之前的作答不再计入，请按现在的题目再答。"
        return data, notice

    def _set_aside(self, problem: str) -> str:
        """Rename the file to a fresh name beside it (never an existing one); the notice."""
        target = self.path.with_name(f"{self.path.name}.unreadable-{_stamp()}-{secrets.token_hex(3)}")
        try:
            os.rename(self.path, target)
            kept = f"原文件已改名保存为 {target}，没有删除。"
        except OSError:
            kept = "旧文件原样留在那里（无法改名）。"
        return f"进度文件 {self.path} {problem}。{kept}"

    def record(self, fb, answer, of: int = 0) -> None:
        """One attempt (a blank ``Feedback`` is none) with its answer as stored; ``of``: a rubric's points (self)."""
        if fb.blank:
            return
        attempt = {"answer": answer[:MAX_ANSWER_CHARS] if isinstance(answer, str) else sorted(map(str, answer)),
                   "verdict": fb.verdict, "mistake": ";".join(fb.mistakes) or None,
                   "question_version": fb.version or current_version(fb.question_id)}  # fmt: skip
        if fb.verdict == "self":
            attempt.update(covered=list(fb.covered), of=of)
        self._apply(_add_attempt, fb.question_id, attempt)

    def record_exercise(self, result) -> None:
        """An ExerciseResult; a stub never filled in is not saved (running the lesson writes nothing)."""
        if result.status == "todo" and result.name not in self.data["exercises"]:
            return
        self._apply(_add_check, result.name, {
            "result": result.status, "message": result.message[:500], "mistakes": list(result.mistakes or ()),
            "source": result.source[:MAX_SOURCE_CHARS] if result.source else None})  # fmt: skip

    def _apply(self, change, *args) -> None:
        """Change the progress in memory at once, then on disk: under the lock, read, merge, atomically replace."""
        change(self.data, *args)
        self._pending.append((change, args))
        if self.path is not None:
            try:  # a link or FIFO at the path: _load() reads nothing and _replace_file refuses it
                self.path.parent.mkdir(parents=True, exist_ok=True)
                lock = self.path.with_name(self.path.name + ".lock")
                _refuse(lock)
                with filelock.FileLock(str(lock), timeout=LOCK_TIMEOUT_S):
                    data, notice = self._load()
                    for step, step_args in self._pending:
                        step(data, *step_args)
                    data["saved_at"] = _now()
                    _replace_file(self.path, json.dumps(data, separators=(",", ":")))  # \u escapes: any string fits
                self.data, self._pending = data, []
                self.notice = notice or ("" if self.notice.startswith("进度没能保存") else self.notice)
            except OSError as exc:
                self.notice = (f"进度没能保存到 {self.path}：{_why(exc)}。这次的进度先留在内存里，"
                               f"下次保存时会一起补上；也可以设置环境变量 {ENV_VAR} 指向一个可写的位置。")  # fmt: skip
        for listener in self.listeners:
            listener()

    def entry(self, item_id: str) -> dict:
        """The stored record of a question, an exercise or the interview (``INTERVIEW``); {} when there is none."""
        if item_id == INTERVIEW:
            return self.data["interview"]
        return self.data["questions"].get(item_id) or self.data["exercises"].get(item_id, {})

    def items(self) -> list[tuple[str, str, str]]:
        """(kind, name, done/tried/todo) for everything; a self-assessed question is done, never right."""
        def state(done, tried):
            return "done" if done else "tried" if tried else "todo"

        out = [("题目", q, state(e.get("solved") or e.get("final") == "self", e.get("n_attempts")))
               for q in self.ids for e in [self.entry(q)]]
        out += [("代码练习", name, state(result == "passed", result not in (None, "todo")))
                for name in EXERCISE_IDS for result in [self.entry(name).get("result")]]
        interview = self.entry(INTERVIEW)
        return [*out, ("面试自检", INTERVIEW, state(interview.get("complete"), interview.get("n_attempts")))]

    def all_done(self) -> bool:
        return all(state == "done" for _, _, state in self.items())

    def summary(self) -> str:
        """The learner's summary in Chinese: one line per kind (with what to do next), then the total."""
        items, lines = self.items(), [self.notice] if self.notice else []
        for kind, unit in (("题目", "题"), ("代码练习", "个"), ("面试自检", "项")):
            names = {s: [n for k, n, state in items if k == kind and state == s] for s in ("done", "tried", "todo")}
            selfs = [n for n in names["done"] if kind == "题目" and self.entry(n).get("final") == "self"]
            line = (f"{kind}：{'已答对' if kind == '题目' else '已完成'} {len(names['done']) - len(selfs)} / "
                    f"{sum(map(len, names.values()))} {unit}。" + (f"已自评：{'、'.join(selfs)}。" if selfs else ""))
            if names["tried"]:
                line += ("你的自评还没有勾满三点：对照参考答案改一改，再自评一次。" if kind == "面试自检"
                         else f"做过但还没过：{'、'.join(names['tried'])}。")  # fmt: skip
            lines.append(line + (f"还没做：{'、'.join(names['todo'])}。" if names["todo"] else ""))
        done = sum(s == "done" for _, _, s in items)
        lines.append(f"全部完成（{done} / {len(items)}），明天见！" if done == len(items) else
                     f"合计完成 {done} / {len(items)} 项。")  # fmt: skip
        return "\n".join(lines)

    def export(self, folder: Path | str | None = None) -> tuple[Path, Path]:
        """progress-export.json (for scripts/class_report.py) and progress-summary.md (one page for an instructor)
        beside the progress file, or in ``folder``. Raises ProgressError (Chinese)."""
        folder = Path(folder) if folder is not None else self.path.parent if self.path else Path.cwd()
        lines = ["# Day 11 多头注意力 · 学习进度", "", f"导出时间：{_now()}", ""]
        lines += [f"- {line}" for line in self.summary().splitlines()]
        lines += ["", "| 类别 | 项目 | 状态 | 尝试次数 |", "| --- | --- | --- | --- |"]
        for kind, name, state in self.items():
            tries = self.entry(name).get("checks", self.entry(name).get("n_attempts", 0))
            lines.append(f"| {kind} | {name} | {dict(done='完成', tried='未通过', todo='未做')[state]} | {tries} |")
        json_path, md_path = folder / "progress-export.json", folder / "progress-summary.md"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _replace_file(json_path, json.dumps(dict(self.data, exported_at=_now()), indent=1))
            _replace_file(md_path, "\n".join(lines) + "\n")
        except OSError as exc:
            raise ProgressError(f"没能导出到 {folder}：{_why(exc)}。你的进度没有受影响；"
                                "换一个可写的文件夹再导出（export(folder=…)）。") from None  # fmt: skip
        return json_path, md_path


_DEFAULT: Progress | None = None


def default_progress() -> Progress:
    """The notebook's one progress record, saved to ``default_path()``; shared by every widget and exercise."""
    global _DEFAULT
    if _DEFAULT is None or _DEFAULT.path != default_path():
        _DEFAULT = Progress(default_path())
    return _DEFAULT
