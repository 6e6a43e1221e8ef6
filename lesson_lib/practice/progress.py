"""The learner's progress (questions, code exercises) and the file that keeps it.

Each save reads, merges and atomically replaces the file under its lock, ``<file>.lock`` beside it
(two notebooks lose nothing). Only a regular file is read or replaced, never a link, FIFO, folder or
device, and such a path is refused before any lock is taken. A file the lesson cannot read is
renamed aside, never overwritten. The format (JSON, version 3) is ``docs/progress-format.md``.
"""

import contextlib
import errno
import itertools
import json
import os
import re
import secrets
import stat
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import filelock
import platformdirs

from lesson_lib.practice import questions

ENV_VAR = "LESSON_PROGRESS_FILE"
APP_NAME = "day11-multi-head-attention"
FORMAT = "day11-progress"
VERSION = 3
MAX_FILE_BYTES = 5 * 1024 * 1024  # a real file is a few KB; a larger one is set aside, never parsed
MAX_ATTEMPTS = 20  # attempts (and checks) kept per item: the first and the last 19
MAX_EARLIER = 5  # earlier versions kept per question: the first and the last 4
MAX_ANSWER_CHARS = 4000
MAX_SOURCE_CHARS = 20_000
MAX_TEXT_CHARS = 500  # a message, a mistake, a rubric point, a version: the lesson's are shorter
MAX_LIST = 50  # chosen keys, ticked points, named mistakes
LOCK_TIMEOUT_S = 10.0  # another kernel holds the lock for one small write; far longer: it is stuck
_SURROGATE = re.compile("[\ud800-\udfff]")


class ProgressError(OSError):
    """What the lesson will not do with its files (follow a link, export where it cannot)."""


def default_path() -> Path:
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "progress.json"


def current_version(item_id: str) -> str | None:
    """The fingerprint of the question the lesson asks now under this id; None for no question."""
    with contextlib.suppress(KeyError):
        return questions.question(item_id).version
    return None


def _own_field_id() -> str:
    """The question the file keeps in a field of its own, ``interview``: the first uncounted."""
    return next(iter(questions.apart_ids()), "interview")


def empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "saved_at": None,
            "questions": {}, "exercises": {}, "earlier": {}}


# --- reading any version (pure: the class report's too)
def _text(v, limit: int = MAX_TEXT_CHARS) -> bool:
    """Bounded text UTF-8 can hold (no lone surrogate): what the lesson writes, a report shows."""
    return type(v) is str and len(v) <= limit and not _SURROGATE.search(v)


_CHECKS = {
    "text": _text,
    "texts": lambda v: type(v) is list and len(v) <= MAX_LIST and all(map(_text, v)),
    # what the learner typed (a lone surrogate is kept as typed), or the keys chosen
    "typed": lambda v: (type(v) is str and len(v) <= MAX_ANSWER_CHARS) or _CHECKS["texts"](v),
    "source": lambda v: type(v) is str and len(v) <= MAX_SOURCE_CHARS,
    "count": lambda v: type(v) is int and 0 <= v < 2**31,
    "flag": lambda v: type(v) is bool,
}
# Each record's fields and their checks: "?" may be null, "*" may be null or missing; "attempt[]" is
# a list of attempt records.
_SHAPES = {
    "attempt": {"answer": "typed", "verdict": "text", "mistake": "text?",
                "question_version": "text?", "covered": "texts*", "of": "count*"},
    "question": {"attempts": "attempt[]", "n_attempts": "count", "question_version": "text?",
                 "first_try": "text?", "final": "text?", "solved": "flag", "answer": "typed",
                 "complete": "flag*"},
    "check": {"result": "text", "mistakes": "texts", "at": "text?"},
    "exercise": {"checks": "check[]", "n_checks": "count", "passed": "flag", "result": "text",
                 "message": "text", "mistakes": "texts", "source": "source?",
                 "passed_source": "source?"},
}


def _bounded(items: list, limit: int) -> list:
    return items if len(items) <= limit else [items[0], *items[1 - limit:]]


def _fits(v, check: str) -> bool:
    """``v`` passes ``check``: a field's check, a record's shape, or "shape[]": a list of them."""
    if check.endswith("[]"):
        return type(v) is list and all(_fits(i, check[:-2]) for i in v)
    if check in _SHAPES:  # each field there (a "*" one may be missing) passes its check
        return type(v) is dict and all(
            (k in v or c[-1] == "*") and _fits(v.get(k), c) for k, c in _SHAPES[check].items())
    return (v is None and check[-1] in "?*") or _CHECKS[check.strip("?*")](v)


def _question_v1(e) -> dict | None:
    """A version-1 question (``history`` of [answer, verdict]): an earlier version's answers."""
    if type(e) is not dict:
        return None
    pairs = e.get("history") or [[e.get("answer", ""), "self" if "self" in e else "review"]]
    if type(pairs) is not list or not all(type(p) is list and len(p) == 2 for p in pairs):
        return None
    attempts = [{"answer": a, "verdict": v, "mistake": None, "question_version": None}
                for a, v in pairs]
    if type(e.get("self")) is dict and pairs[-1][1] == "self":
        attempts[-1].update(covered=e["self"].get("covered"), of=e["self"].get("of"))
    return {"attempts": attempts, "n_attempts": e.get("attempts"), "question_version": None,
            "first_try": pairs[0][1], "final": pairs[-1][1], "solved": e.get("solved", False),
            "answer": e.get("answer", "")}


def _exercise_v2(e) -> dict | None:
    """A version-1 or 2 exercise: only its last check was kept (version 1 said "status")."""
    if type(e) is not dict:
        return None
    last = e.get("result", e.get("status"))
    passed = last == "passed"
    mistakes = e.get("mistakes", [])
    return {"checks": [{"result": last, "mistakes": mistakes, "at": None}],
            "n_checks": e.get("checks"), "passed": passed, "result": last,
            "message": e.get("message", ""), "mistakes": mistakes, "source": e.get("source"),
            "passed_source": e.get("source") if passed else None}


def migrate(raw) -> tuple[dict, list[str]]:
    """A parsed progress file of any version the lesson has written (1, 2, 3) as this version in
    memory, and the entries left out for a field of a wrong type or size (Chinese, one each). Pure;
    raises ValueError (Chinese) for a file that is not one at all."""
    if type(raw) is not dict or raw.get("format") != FORMAT:
        raise ValueError(f"不是本课的进度文件（格式不是 {FORMAT}）")
    version = raw.get("version")
    if type(version) is not int or not 1 <= version <= VERSION:
        raise ValueError(f"格式版本是 {str(version)[:20]}，本课认识 1 到 "
                         f"{VERSION}（更新的版本请先更新课程）")
    parts = {kind: raw.get(kind, {}) for kind in ("questions", "exercises", "earlier", "interview")}
    saved_at = raw.get("saved_at")
    if not all(type(part) is dict for part in parts.values()) or not _fits(saved_at, "text?"):
        raise ValueError("顶层的栏目类型不对")
    if parts["interview"]:
        parts["questions"] = {**parts["questions"], _own_field_id(): parts.pop("interview")}
    if version == 1:
        parts["questions"] = {q: _question_v1(e) for q, e in parts["questions"].items()}
    if version < 3:
        parts["exercises"] = {name: _exercise_v2(e) for name, e in parts["exercises"].items()}
    shapes = {"questions": "question", "exercises": "exercise", "earlier": "question[]"}
    data = {**empty(), "saved_at": saved_at}
    bad = []
    for kind, shape in shapes.items():
        for key, e in parts[kind].items():
            if _fits(e, shape) and _text(key, 100):
                data[kind][key] = e
            else:  # left out, said; the rest is kept
                bad.append(f"「{kind}」里的 {key[:40]!r} 有一项类型或长度不对")
    return data, bad


def to_file(data: dict) -> dict:
    """The progress as the file keeps it: the first uncounted question's entry in its own field."""
    questions = dict(data["questions"])
    out = dict(data, questions=questions, interview=questions.pop(_own_field_id(), {}))
    out["earlier"] = out.pop("earlier")  # the fields in the order the lesson has always written
    return out


# --- changes: each applied to the progress in memory, and again to the file's when it is saved
def _retire(data: dict, item_id: str) -> None:
    """Move a question's entry to ``earlier``: answers to an earlier version of it, kept apart."""
    entry = data["questions"].pop(item_id)
    data["earlier"][item_id] = _bounded([*data["earlier"].get(item_id, []), entry], MAX_EARLIER)


def _add_attempt(data: dict, item_id: str, attempt: dict, apart: bool) -> None:
    """One attempt at a question (the entry of another version of it is retired); an uncounted
    question's entry says whether its last self-assessment ticked every point."""
    entry = data["questions"].get(item_id)
    if entry and entry["question_version"] != attempt["question_version"]:
        _retire(data, item_id)
    new = {"attempts": [], "n_attempts": 0, "question_version": attempt["question_version"],
           "first_try": attempt["verdict"], "final": None, "solved": False, "answer": ""}
    entry = data["questions"].setdefault(item_id, new)
    self_assessed = attempt["verdict"] == "self"
    if apart:
        entry["complete"] = self_assessed and len(attempt["covered"]) == attempt["of"]
    entry.update(attempts=_bounded([*entry["attempts"], attempt], MAX_ATTEMPTS),
                 n_attempts=entry["n_attempts"] + 1, final=attempt["verdict"],
                 answer=attempt["answer"], solved=entry["solved"] or attempt["verdict"] == "right")


def _add_check(data: dict, name: str, check: dict, message: str, source: str | None) -> None:
    """One check of an exercise; once passed, it stays passed (a later stub run says todo)."""
    entry = data["exercises"].setdefault(name, {"checks": [], "n_checks": 0, "passed": False,
                                                "source": None, "passed_source": None})
    passed = check["result"] == "passed"
    entry.update(checks=_bounded([*entry["checks"], check], MAX_ATTEMPTS),
                 n_checks=entry["n_checks"] + 1, passed=entry["passed"] or passed,
                 result=check["result"], message=message, mistakes=check["mistakes"],
                 source=source or entry["source"],
                 passed_source=source if passed and source else entry["passed_source"])


# --- the file
def _refuse(path: Path) -> None:
    """Raise ProgressError unless ``path`` is a regular file or free (looked at, never followed)."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise ProgressError(f"{path} 不是普通文件（是符号链接、命名管道、文件夹或设备），"
                                "本课不读它、不写它、也不给它改名")


_REASONS = {errno.EROFS: "所在的文件夹是只读的", errno.EACCES: "没有写入这个文件夹的权限",
            errno.ENOSPC: "磁盘已经满了", errno.ENOTDIR: "路径里有一段不是文件夹"}


def _why(exc: OSError) -> str:
    """An OSError in Chinese: what is wrong with the place."""
    if isinstance(exc, filelock.Timeout):
        return f"另一个笔记本正占着进度文件，等了 {LOCK_TIMEOUT_S:g} 秒还没轮到"
    if isinstance(exc, ProgressError):
        return str(exc)
    return _REASONS.get(exc.errno, f"系统报告「{type(exc).__name__}」")


def _replace_file(path: Path, text: str) -> None:
    """Make ``path`` hold ``text`` at once: a new file beside it (O_EXCL), then ``os.replace``."""
    _refuse(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8", "backslashreplace"))  # a lone surrogate cannot stop a save
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _shown(text: str) -> str:
    """Text a report shows, as UTF-8 can hold it (a lone surrogate becomes U+FFFD)."""
    return _SURROGATE.sub("\ufffd", text[:MAX_TEXT_CHARS])


# The summary's lines: a kind of item, its unit
_KINDS = (("题目", "题"), ("代码练习", "个"), ("面试自检", "项"))
# An item not done, by its state (the tried ones first): what the summary says, what to do
_NOT_DONE = {"tried": ("做过但还没过", "看提示再试一次。"),
             "review": ("写了还没自评", "勾出说到的要点，点「记录自评」。"),
             "todo": ("还没做", "")}


def _unticked(entry: dict) -> bool:
    """A self-assessed question left points unticked (said in the summary; done all the same)."""
    last = (entry["attempts"] or [{}])[-1]  # a hand-edited file may keep no attempt
    return len(last.get("covered") or ()) < (last.get("of") or 0)


def _places(exercises) -> dict[str, str]:
    """{name: 「第 N 节」} of the sections' {name: Exercise}, by the module that defines each."""
    modules = {n: e.solution.__module__ for n, e in getattr(exercises, "items", dict)()}  # or names
    numbers = {n: re.search(r"\.s(\d+)_", module) for n, module in modules.items()}
    return {n: f"第 {int(m[1])} 节" for n, m in numbers.items() if m}


class Progress:
    """What the learner has done: the lesson's questions and the exercises named by
    ``exercise_ids`` (the sections' list), kept in the file at ``path`` (None: in memory only).
    Never raises for a bad file or place; touches only that file, its lock and files beside it."""

    def __init__(self, path: Path | str | None = None, exercise_ids=()):
        self.path = Path(path) if path is not None else None
        self.ids = questions.question_ids()
        self.apart = questions.apart_ids()  # outside the quiz's count: done once self-assessed
        self.exercise_ids = tuple(exercise_ids)
        self.places = _places(exercise_ids)  # where each exercise is, when the caller says
        self.data, self.notice = self._load() if path is not None else (empty(), "")
        self._pending = []  # changes not yet on disk (a failed save keeps them for the next one)
        self.listeners = []  # called after every change (the summary widgets)

    def _load(self) -> tuple[dict, str]:
        """The saved progress (the entries that read) or a fresh one, and a notice in Chinese."""
        try:
            _refuse(self.path)
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            with os.fdopen(os.open(self.path, flags), "rb") as f:
                raw = json.loads(f.read(MAX_FILE_BYTES))  # a larger file is cut short: not JSON
            data, bad = migrate(raw)  # an older version is read as this one, saved as this one
        except FileNotFoundError:
            return empty(), ""
        except ProgressError as exc:
            return empty(), (f"进度文件的位置不对：{_why(exc)}。这次的进度只留在内存里；"
                             f"请把它移走，或设置环境变量 {ENV_VAR} 指向另一个位置。")
        except OSError as exc:
            return empty(), self._set_aside(f"读不了（{_why(exc)}）")
        except (ValueError, RecursionError) as exc:  # not JSON; or migrate's, in Chinese: not ours
            said = str(exc) if type(exc) is ValueError else "内容已损坏或太大，不是完整的 JSON"
            return empty(), self._set_aside(said)
        old = [q for q, e in data["questions"].items()
               if current_version(q) not in (None, e["question_version"])]
        for q in old:
            _retire(data, q)
        notice = ""
        if bad:
            notice = self._set_aside(f"里有 {len(bad)} 条记录读不懂，已略去，其余照旧", fresh="")
            if not os.path.lexists(self.path):  # set aside: what reads goes back at once
                with contextlib.suppress(OSError):
                    _replace_file(self.path, json.dumps(to_file(data), separators=(",", ":")))
        if old:
            notice += (f"课程更新后 {'、'.join(old)} 的题目变了：之前的作答保留为旧版题目的作答"
                       "（不计入），请按现在的题目再答。")
        return data, notice

    def _set_aside(self, problem: str, fresh: str = "，所以这次从头开始记录") -> str:
        """Rename the file to a fresh name beside it (never an existing one); the notice."""
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{self.path.name}.unreadable-{stamp}-{secrets.token_hex(3)}")
        try:
            os.rename(self.path, target)
            kept = f"原文件已改名保存为 {target}，没有删除。"
        except OSError:
            kept = "旧文件原样留在那里（无法改名）。"
        return f"进度文件 {self.path} {problem}{fresh}。{kept}"

    def record(self, fb, answer, of: int = 0) -> None:
        """One attempt (a blank ``Feedback`` is none); ``of``: a self-assessed rubric's points."""
        if fb.blank:
            return
        kept = answer[:MAX_ANSWER_CHARS] if isinstance(answer, str) else sorted(map(str, answer))
        if len(kept) < len(answer):  # the file keeps a bounded answer: said, never silently lost
            self.notice = (f"{fb.question_id} 的回答超长（{len(answer)} 字），只保存了前 "
                           f"{MAX_ANSWER_CHARS} 字。请写短一些，或自己另存全文。")
        attempt = {"answer": kept, "verdict": fb.verdict,
                   "mistake": _shown(";".join(fb.mistakes)) or None,
                   "question_version": fb.version or current_version(fb.question_id)}
        if fb.verdict == "self":
            attempt.update(covered=list(fb.covered), of=of)
        self._apply(_add_attempt, fb.question_id, attempt, fb.question_id in self.apart)

    def record_exercise(self, result) -> None:
        """An ExerciseResult; a stub never filled in is not saved (a plain run saves nothing)."""
        if result.status == "todo" and result.name not in self.data["exercises"]:
            return
        check = {"result": result.status, "mistakes": list(result.mistakes or ()), "at": _now()}
        source = result.source[:MAX_SOURCE_CHARS] if result.source else None
        self._apply(_add_check, result.name, check, _shown(result.message), source)

    def _apply(self, change, *args) -> None:
        """Change the progress in memory at once, then on disk (``_save``)."""
        change(self.data, *args)
        self._pending.append((change, args))
        if self.path is not None:
            try:
                self._save()
            except OSError as exc:
                self.notice = (f"进度没能保存到 {self.path}：{_why(exc)}。这次的进度先留在内存里，"
                               f"下次保存时会一起补上；也可以设置环境变量 {ENV_VAR} "
                               "指向一个可写的位置。")
        for listener in self.listeners:
            listener()

    def _save(self) -> None:
        """Under the lock: read the file, apply every pending change, atomically replace it."""
        _refuse(self.path)  # a folder, FIFO or device: refused before a lock is made beside it
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        _refuse(lock)
        with filelock.FileLock(str(lock), timeout=LOCK_TIMEOUT_S):
            data, notice = self._load()
            for change, args in self._pending:
                change(data, *args)
            data["saved_at"] = _now()
            # \u escapes: any string fits
            _replace_file(self.path, json.dumps(to_file(data), separators=(",", ":")))
        self.data = data
        self._pending = []
        if notice or self.notice.startswith("进度没能保存"):
            self.notice = notice

    def entry(self, item_id: str) -> dict:
        """The stored record of a question or an exercise; {} when there is none."""
        return self.data["questions"].get(item_id) or self.data["exercises"].get(item_id, {})

    def items(self) -> list[tuple[str, str, str]]:
        """(kind, name, done/tried/review/todo) for everything, in the summary's order."""
        kinds = zip(_KINDS, (self.ids, self.exercise_ids, self.apart), strict=True)
        return [(kind, name, self._state(name)) for (kind, _), ids in kinds for name in ids]

    def _state(self, name: str) -> str:
        """A self-explanation (Q1, the interview) is done once self-assessed, however many points
        were ticked: it is never graded (review: written, not yet self-assessed). An exercise is
        tried once its code ran."""
        e = self.entry(name)
        if e.get("solved") or e.get("passed") or e.get("final") == "self":
            return "done"
        if e.get("final") == "review":
            return "review"
        tried = e.get("n_attempts") or any(c["result"] != "todo" for c in e.get("checks", ()))
        return "tried" if tried else "todo"

    def _named(self, ids, unticked=()) -> str:
        """Ids with where the lesson asks them, once per run (「S3、S3b（第 3 节）」), and whether a
        self-assessment left points unticked (「Q1（第 10 节，还有没勾的要点）」)."""
        def said(i: str) -> str:
            place = self.places.get(i) or (current_version(i) and questions.asked_in(i))
            marks = [place] if place else []
            marks += ["还有没勾的要点"] if i in unticked else []
            return f"（{'，'.join(marks)}）" if marks else ""

        return "、".join("、".join(run) + at for at, run in itertools.groupby(ids, key=said))

    def all_done(self) -> bool:
        return all(state == "done" for _, _, state in self.items())

    def summary(self) -> str:
        """The summary in Chinese: a line per kind of item, with what to do, then the total."""
        items = self.items()
        lines = [self.notice] if self.notice else []
        for kind, unit in _KINDS:
            mine = {name: state for k, name, state in items if k == kind}
            if not mine:  # none of this kind in the lesson
                continue
            done = [name for name, state in mine.items() if state == "done"]
            # 已完成, never 答对: a self-explanation is done once self-assessed, never graded
            line = f"{kind}：已完成 {len(done)} / {len(mine)} {unit}。"
            selfs = [name for name in done if self.entry(name).get("final") == "self"]
            unticked = [name for name in selfs if _unticked(self.entry(name))]
            if selfs and not set(mine) <= set(self.apart):  # graded and self-assessed side by side
                line += f"其中自评（不打分）{len(selfs)} {unit}：{self._named(selfs, unticked)}。"
            elif unticked:  # the interview: each named once
                line += f"自评还有没勾的要点：{self._named(unticked)}。"
            if unticked:
                line += "对照参考答案补一补，再点「记录自评」。"
            for state, (says, todo) in _NOT_DONE.items():
                named = [name for name, said in mine.items() if said == state]
                line += f"{says}：{self._named(named)}。{todo}" if named else ""
            lines.append(line)
        if self.data["earlier"]:
            lines.append(f"另有旧版题目的作答，保留着、不计入：{'、'.join(self.data['earlier'])}。")
        done = sum(s == "done" for _, _, s in items)
        if done == len(items):
            return "\n".join([*lines, f"全部完成（{done} / {len(items)}），明天见！"])
        return "\n".join([*lines, f"合计完成 {done} / {len(items)} 项。"])

    def export(self) -> tuple[Path, str]:
        """Write progress-export.json (scripts/class_report.py reads it) beside the progress file,
        never elsewhere; its path and the text written (ASCII). Raises ProgressError."""
        path = self.path.with_name("progress-export.json")
        text = json.dumps(dict(to_file(self.data), exported_at=_now()), indent=1)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _replace_file(path, text)
        except OSError as exc:
            raise ProgressError(f"没能导出到 {path.parent}：{_why(exc)}。你的进度没有受影响；设置"
                                f"环境变量 {ENV_VAR} 指向可写的位置，重启内核再导出。") from None
        return path, text


_DEFAULT: Progress | None = None


def default_progress(exercise_ids=()) -> Progress:
    """The notebook's one progress record, saved to ``default_path()`` and shared by every widget
    and exercise; ``exercise_ids`` (the sections' list) join the items it counts."""
    global _DEFAULT
    if _DEFAULT is None or _DEFAULT.path != default_path():
        _DEFAULT = Progress(default_path())
    _DEFAULT.exercise_ids = tuple(dict.fromkeys((*_DEFAULT.exercise_ids, *exercise_ids)))
    _DEFAULT.places.update(_places(exercise_ids))
    return _DEFAULT
