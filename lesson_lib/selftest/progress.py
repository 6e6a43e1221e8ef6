"""The learner's progress (questions, code exercises, the interview self-check) and the file that keeps it.

Everything the learner does is recorded in a ``Progress`` and saved at once, atomically (a temporary
file in the same folder, then ``os.replace``), so a kernel restart or a crash loses nothing: when the
cells run again, the widgets and the summary are restored from the file.

Where the file lives: ``$LESSON_PROGRESS_FILE`` if set (the hub and the tests set it), otherwise
``$XDG_DATA_HOME/day11-multi-head-attention/progress.json`` (``~/.local/share/…``): the learner's own
space, outside the repository, found from any copy of the notebook.

The file's format (JSON, UTF-8)::

    {"format": "day11-progress", "version": 1, "saved_at": "2026-12-01T10:00:00+00:00",
     "questions": {"Q2": {"answer": "64", "attempts": 2, "solved": true, "last": "right",
                          "history": [["32", "wrong"], ["64", "right"]]}},
     "exercises": {"split_heads": {"status": "passed", "message": "全部通过！…", "checks": 3}},
     "interview": {"answer": "…", "attempts": 1, "covered": ["① …"], "complete": false}}

``answer`` is what was submitted (text, or a sorted list of choice keys); ``last`` / history verdicts are
right, wrong or review (free text, read but not judged). A file that is not valid JSON, not this format or
of a newer version is renamed aside (``progress.json.unreadable-<time>``), never deleted, and the learner
starts afresh with a Chinese notice saying where the old file went.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["ENV_VAR", "FORMAT", "VERSION", "default_path", "ProgressFile", "Progress", "default_progress"]

ENV_VAR = "LESSON_PROGRESS_FILE"
FORMAT = "day11-progress"
VERSION = 1
INTERVIEW = "面试"
MAX_HISTORY = 20  # attempts kept per question
MAX_ANSWER_CHARS = 4000  # a stored answer is cut to this (checkers read far less)


def default_path() -> Path:
    """$LESSON_PROGRESS_FILE, else the learner's data folder (outside the repository)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "day11-multi-head-attention" / "progress.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "saved_at": None, "questions": {}, "exercises": {}, "interview": {}}


def _valid(data) -> bool:
    return (isinstance(data, dict) and data.get("format") == FORMAT and data.get("version") == VERSION
            and all(isinstance(data.get(k), dict) for k in ("questions", "exercises", "interview")))  # fmt: skip


class ProgressFile:
    """Reads and writes one progress file; never raises for a bad file or a folder it cannot write."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_path()

    def load(self) -> tuple[dict, str]:
        """(data, notice): the saved progress, or a fresh one and a Chinese notice when the file was unusable."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return empty(), ""
        except (OSError, UnicodeDecodeError) as exc:
            return empty(), self._aside(f"读不了（{type(exc).__name__}）")
        try:
            data = json.loads(raw)
        except ValueError:
            return empty(), self._aside("内容已损坏（不是完整的 JSON）")
        if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("version"), int) \
                and data["version"] > VERSION:
            return empty(), self._aside(f"是更新版本的课程写的（版本 {data['version']}）")
        if not _valid(data):
            return empty(), self._aside("不是本课的进度文件")
        return data, ""

    def _aside(self, why: str) -> str:
        target = self.path.with_name(f"{self.path.name}.unreadable-{_stamp()}")
        try:
            os.replace(self.path, target)
            kept = f"旧文件已改名保存为 {target}，没有删除。"
        except OSError:
            kept = "旧文件原样留在那里（无法改名），之后的进度会写到同一个位置。"
        return f"进度文件 {self.path} {why}，所以这次从头开始记录。{kept}"

    def save(self, data: dict) -> str:
        """Write atomically; '' on success, else a Chinese message (the progress stays in memory)."""
        data = dict(data, saved_at=_now())
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".progress-", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, ensure_ascii=False, indent=1)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        except OSError as exc:
            return (f"进度没能保存到 {self.path}（{type(exc).__name__}: {exc}）：本次的进度只在内存里。"
                    f"可以设置环境变量 {ENV_VAR} 指向一个可写的位置。")  # fmt: skip
        return ""

    def set_aside(self) -> Path | None:
        """Rename the file to progress.json.reset-<time> (for 清空进度); the old progress is kept, not deleted."""
        if not self.path.exists():
            return None
        target = self.path.with_name(f"{self.path.name}.reset-{_stamp()}")
        os.replace(self.path, target)
        return target


class Progress:
    """What the learner has done. ``store=None`` keeps it in memory only (tests, previews)."""

    def __init__(self, question_ids: Iterable[str] | None = None, exercise_names: Iterable[str] | None = None,
                 store: ProgressFile | None = None, interview: bool = True):  # fmt: skip
        if question_ids is None:
            from .quiz import question_ids as all_ids

            question_ids = all_ids()
        if exercise_names is None:
            from .exercises import EXERCISES

            exercise_names = tuple(EXERCISES)
        self.ids, self.exercise_names, self.has_interview = tuple(question_ids), tuple(exercise_names), interview
        self.store = store
        self.data, self.notice = store.load() if store is not None else (empty(), "")
        self._listeners: list[Callable[[], None]] = []
        self._reset_listeners: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ recording
    def record(self, feedback, answer=None) -> None:
        """A question's Feedback (and the answer as submitted); blank answers are not attempts."""
        qid = feedback.question_id
        if feedback.blank or qid not in self.ids:
            return
        entry = self.data["questions"].setdefault(qid, {"attempts": 0, "solved": False, "history": []})
        shown = _storable(answer)
        entry["attempts"] += 1
        entry["solved"] = bool(entry["solved"] or feedback.correct)
        entry["answer"], entry["last"] = shown, feedback.verdict
        entry["history"] = (entry["history"] + [[_short(shown), feedback.verdict]])[-MAX_HISTORY:]
        self._changed()

    def record_exercise(self, result) -> None:
        """An ExerciseResult. A stub never filled in is not saved (running the lesson writes nothing)."""
        if result.name not in self.exercise_names:
            return
        entries = self.data["exercises"]
        if result.status == "todo" and result.name not in entries:
            return
        entry = entries.setdefault(result.name, {"checks": 0})
        entry.update(status=result.status, message=result.message[:500], checks=entry["checks"] + 1)
        self._changed()

    def record_interview(self, feedback, answer) -> None:
        if feedback.blank:
            return
        entry = self.data["interview"]
        entry.update(answer=_storable(answer), attempts=entry.get("attempts", 0) + 1, covered=list(feedback.covered),
                     complete=bool(feedback.correct))  # fmt: skip
        self._changed()

    def question_entry(self, qid: str) -> dict | None:
        return self.data["questions"].get(qid)

    def interview_entry(self) -> dict | None:
        return self.data["interview"] or None

    def subscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def on_reset(self, listener: Callable[[], None]) -> None:
        self._reset_listeners.append(listener)

    def reset(self) -> str:
        """Start afresh; the old file is renamed aside, not deleted. Returns a Chinese message."""
        kept = self.store.set_aside() if self.store is not None else None
        self.data, self.notice = empty(), ""
        for listener in list(self._reset_listeners) + list(self._listeners):
            listener()
        return f"进度已清空。旧的进度保存在 {kept}。" if kept else "进度已清空。"

    def _changed(self) -> None:
        if self.store is not None:
            problem = self.store.save(self.data)
            if problem:
                self.notice = problem
        for listener in list(self._listeners):
            listener()

    # ------------------------------------------------------------------ counting
    @property
    def solved(self) -> dict[str, bool]:
        return {q: bool((self.data["questions"].get(q) or {}).get("solved")) for q in self.ids}

    @property
    def attempts(self) -> dict[str, int]:
        return {q: (self.data["questions"].get(q) or {}).get("attempts", 0) for q in self.ids}

    @property
    def n_solved(self) -> int:
        return sum(self.solved.values())

    def items(self) -> list[tuple[str, str, str]]:
        """(kind, name, state) for everything the learner can do; state is done, tried or todo."""
        out = []
        for q in self.ids:
            entry = self.data["questions"].get(q) or {}
            out.append(("题目", q, "done" if entry.get("solved") else ("tried" if entry.get("attempts") else "todo")))
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
            done = [n for n, s in mine if s == "done"]
            tried = [n for n, s in mine if s == "tried"]
            todo = [n for n, s in mine if s == "todo"]
            word = "答对" if kind == "题目" else "完成"
            line = f"{kind}：已{word} {len(done)} / {len(mine)} {unit}。"
            if tried and kind == "面试自检":  # one line per kind: what to do next, not a second 「面试自检：」 line
                line += "检查器还没在你的回答里读到全部三点（或读到了误解），对照参考答案再改一改。"
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
        lines = [f"# Day 11 多头注意力 · 学习进度{('：' + learner) if learner else ''}", "",
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
        """Write progress-export.json and progress-summary.md beside the progress file (or into ``folder``)."""
        if folder is not None:
            folder = Path(folder)
        elif self.store is not None:
            folder = self.store.path.parent
        else:
            folder = Path.cwd()
        folder.mkdir(parents=True, exist_ok=True)
        json_path, md_path = folder / "progress-export.json", folder / "progress-summary.md"
        json_path.write_text(self.to_json(), encoding="utf-8")
        md_path.write_text(self.instructor_summary(), encoding="utf-8")
        return json_path, md_path


def _storable(answer):
    if isinstance(answer, (set, frozenset, list, tuple)):
        return sorted(str(a) for a in answer)
    if answer is None:
        return ""
    text = answer if isinstance(answer, str) else str(answer)
    return text[:MAX_ANSWER_CHARS]


def _short(answer) -> str:
    text = "、".join(answer) if isinstance(answer, list) else " ".join(str(answer).split())
    return text[:30]


_DEFAULT: Progress | None = None


def default_progress() -> Progress:
    """The notebook's one progress record, saved to ``default_path()``; shared by every widget and exercise."""
    global _DEFAULT
    if _DEFAULT is None or _DEFAULT.store is None or _DEFAULT.store.path != default_path():
        _DEFAULT = Progress(store=ProgressFile())
    return _DEFAULT
