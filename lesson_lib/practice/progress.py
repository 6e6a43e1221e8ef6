"""The learner's progress (questions, code exercises, the interview self-check) and the file that
keeps it.

Each save reads, merges and atomically replaces the file under its lock (two notebooks lose
nothing); only a regular file is read or replaced, never a link, FIFO, folder or device, and such a
path is refused before any lock is taken (the lock, ``<file>.lock``, lives beside the file, inside
the data folder). A file the lesson cannot read is renamed aside, never overwritten. The format
(JSON, version 3, with what each field keeps) is ``docs/progress-format.md``; ``migrate`` reads
every version the lesson has written.
"""

from __future__ import annotations

import contextlib
import errno
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

ENV_VAR = "LESSON_PROGRESS_FILE"
APP_NAME = "day11-multi-head-attention"
FORMAT = "day11-progress"
VERSION = 3
INTERVIEW = "面试"
# = exercises.EXERCISES (a test)
EXERCISE_IDS = ("split_heads", "multi_head_attention_loop", "count_multiplies")
MAX_FILE_BYTES = 5 * 1024 * 1024  # a real file is a few KB; a larger one is set aside, never parsed
MAX_ATTEMPTS = 20  # attempts (and checks) kept per item: the first and the last 19
MAX_EARLIER = 5  # earlier versions kept per question: the first and the last 4
MAX_ANSWER_CHARS = 4000
MAX_SOURCE_CHARS = 20_000
# a message, a mistake, a rubric point, a version: what the lesson writes is far shorter
MAX_TEXT_CHARS = 500
MAX_LIST = 50  # chosen keys, ticked points, named mistakes
# another kernel holds the lock for one small write; far longer means it is stuck
LOCK_TIMEOUT_S = 10.0
_KINDS = ("questions", "exercises", "interview", "earlier")
_SURROGATE = re.compile("[\ud800-\udfff]")


class ProgressError(OSError):
    """What the lesson will not do with its files, in Chinese: touch a link or FIFO, export where it
    cannot."""


def default_path() -> Path:
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "progress.json"


def current_version(item_id: str) -> str | None:
    """The fingerprint of what the lesson asks now under this id; None for an id it does not know
    (yet). The interview is a question of the bank too (apart from the quiz)."""
    from lesson_lib.practice import questions

    with contextlib.suppress(KeyError):
        return questions.question(item_id).version
    return None


def empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "saved_at": None, **{kind: {} for kind in _KINDS}}


# --- reading any version (pure: the class report's too)
def _text(v, limit: int = MAX_TEXT_CHARS) -> bool:
    """Text the lesson writes and a report shows: a bounded string UTF-8 can hold (no lone
    surrogate)."""
    return type(v) is str and len(v) <= limit and not _SURROGATE.search(v)


def _texts(v) -> bool:
    return type(v) is list and len(v) <= MAX_LIST and all(map(_text, v))


def _typed(v) -> bool:
    """What the learner typed: a bounded string (a lone surrogate is kept as typed), or chosen
    keys."""
    return (type(v) is str and len(v) <= MAX_ANSWER_CHARS) or _texts(v)


def _source(v) -> bool:
    return v is None or (type(v) is str and len(v) <= MAX_SOURCE_CHARS)


def _count(v) -> bool:
    return type(v) is int and 0 <= v < 2**31


def _flag(v) -> bool:
    return type(v) is bool


def _maybe(check):
    return lambda v: v is None or check(v)


# Each field a reader relies on, and its check; covered/of (a self-assessment) and complete (the
# interview) are kept only where present.
_ATTEMPT = {"answer": _typed, "verdict": _text, "mistake": _maybe(_text),
            "question_version": _maybe(_text),
            "covered": _maybe(_texts), "of": _maybe(_count)}
_ITEM = {"n_attempts": _count, "question_version": _maybe(_text), "first_try": _maybe(_text),
         "final": _maybe(_text), "solved": _flag, "answer": _typed,
         "complete": _maybe(_flag)}
_CHECK = {"result": _text, "mistakes": _texts, "at": _maybe(_text)}
_EXERCISE = {"n_checks": _count, "passed": _flag, "result": _text, "message": _text,
             "mistakes": _texts,
             "source": _source, "passed_source": _source}
_OPTIONAL = ("covered", "of", "complete")


def _read(d, shape: dict) -> dict | None:
    """The fields of ``shape`` in ``d``, each checked; None when one has a wrong type or size."""
    if type(d) is not dict:
        return None
    out = {key: d.get(key) for key in shape if key not in _OPTIONAL or d.get(key) is not None}
    return out if all(shape[key](value) for key, value in out.items()) else None


def _bounded(items: list, limit: int) -> list:
    """The first item and the last ``limit - 1``."""
    return items if len(items) <= limit else [items[0], *items[1 - limit:]]


def _with_list(d, name: str, shape: dict, item_shape: dict) -> dict | None:
    """``d`` read by ``shape``, with its list ``name`` of ``item_shape`` (bounded); None when
    anything is wrong."""
    out = _read(d, shape)
    items = [_read(i, item_shape) for i in d[name]] if out and type(d.get(name)) is list else [None]
    return None if None in items else {name: _bounded(items, MAX_ATTEMPTS), **out}


def _item(e) -> dict | None:
    """A question's or the interview's entry (versions 2 and 3)."""
    return _with_list(e, "attempts", _ITEM, _ATTEMPT)


def _item_v1(e) -> dict | None:
    """A version-1 entry (``history`` of [answer, verdict], no question version): an earlier
    version's answers."""
    if type(e) is not dict:
        return None
    pairs = e.get("history") or [[e.get("answer", ""), "self" if "self" in e else "review"]]
    if type(pairs) is not list or not all(type(p) is list and len(p) == 2 for p in pairs):
        return None
    attempts = [{"answer": a, "verdict": v, "mistake": None, "question_version": None}
                for a, v in pairs]
    marks = e.get("self")
    if type(marks) is dict and pairs[-1][1] == "self":
        attempts[-1].update(covered=marks.get("covered"), of=marks.get("of"))
    return _item({"attempts": attempts, "n_attempts": e.get("attempts"), "question_version": None,
                  "first_try": pairs[0][1], "final": pairs[-1][1], "solved": e.get("solved", False),
                  "answer": e.get("answer", ""), "complete": e.get("complete")})


def _exercise(e, version: int) -> dict | None:
    """An exercise's entry as version 3: before it only the last check was kept (version 1 said
    "status")."""
    if version < 3 and type(e) is dict:
        last = e.get("result", e.get("status"))
        e = {"message": "", "mistakes": [], "source": None, **e, "n_checks": e.get("checks"),
             "result": last,
             "checks": [{"result": last, "mistakes": e.get("mistakes", [])}],
             "passed": last == "passed",
             "passed_source": e.get("source") if last == "passed" else None}
    return _with_list(e, "checks", _EXERCISE, _CHECK)


def _earlier(entries) -> list | None:
    olds = [_item(e) for e in entries] if type(entries) is list else [None]
    return None if None in olds else _bounded(olds, MAX_EARLIER)


def migrate(raw) -> tuple[dict, list[str]]:
    """A parsed progress file of any version the lesson has written (1, 2, 3) as version 3, and the
    entries left out because a field has a wrong type or size (Chinese, one each). Pure; raises
    ValueError (Chinese) for a file that is not one at all. Nothing is dropped for being old: an
    earlier version's answers stay (see ``_retire``)."""
    if type(raw) is not dict or raw.get("format") != FORMAT:
        raise ValueError(f"不是本课的进度文件（格式不是 {FORMAT}）")
    version = raw.get("version")
    if type(version) is not int or not 1 <= version <= VERSION:
        raise ValueError(f"格式版本是 {str(version)[:20]}，本课认识 1 到 "
                         f"{VERSION}（更新的版本请先更新课程）")
    parts = {kind: raw.get(kind, {}) for kind in _KINDS}
    if not all(type(part) is dict
               for part in parts.values()) or not _maybe(_text)(raw.get("saved_at")):
        raise ValueError("顶层的栏目类型不对")
    data = empty()
    bad = []
    data["saved_at"] = raw.get("saved_at")
    read = _item if version > 1 else _item_v1
    found = [("questions", key, read(e)) for key, e in parts["questions"].items()]
    found += [("exercises", key, _exercise(e, version)) for key, e in parts["exercises"].items()]
    found += [("earlier", key, _earlier(e)) for key, e in parts["earlier"].items()]
    if parts["interview"]:
        found.append(("interview", INTERVIEW, read(parts["interview"])))
    for kind, key, entry in found:
        if entry is None or not _text(key, 100):
            bad.append(f"「{kind}」里的 {key[:40]!r} 有一项类型或长度不对")
        elif kind == "interview":
            data["interview"] = entry
        else:
            data[kind][key] = entry
    return data, bad


def _retire(data: dict, item_id: str) -> None:
    """Move the item's entry to ``earlier``: the answers to an earlier version of its question, kept
    apart."""
    entry = data["interview"] if item_id == INTERVIEW else data["questions"].pop(item_id)
    if item_id == INTERVIEW:
        data["interview"] = {}
    data["earlier"][item_id] = _bounded([*data["earlier"].get(item_id, []), entry], MAX_EARLIER)


def _retire_old(data: dict) -> list[str]:
    """Retire every entry whose question has changed since (the lesson's version differs): the
    ids."""
    items = {**data["questions"], INTERVIEW: data["interview"]}
    old = [q for q, e in items.items() if e
           and current_version(q) not in (None, e["question_version"])]
    for q in old:
        _retire(data, q)
    return old


def _refuse(path: Path) -> None:
    """Raise ProgressError unless ``path`` is a regular file or free (looked at, never followed)."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise ProgressError(errno.EINVAL,
                                f"{path} 不是普通文件（是符号链接、命名管道、文件夹或设备），"
                                              "本课不读它、不写它、也不给它改名")


def _why(exc: OSError) -> str:
    """An OSError in Chinese: what is wrong with the place."""
    if isinstance(exc, filelock.Timeout):
        return f"另一个笔记本正占着进度文件，等了 {LOCK_TIMEOUT_S:g} 秒还没轮到"
    if isinstance(exc, ProgressError):
        return exc.strerror
    reasons = {errno.EROFS: "所在的文件夹是只读的", errno.EACCES: "没有写入这个文件夹的权限",
               errno.EPERM: "没有写入这个文件夹的权限", errno.ENOSPC: "磁盘已经满了",
               errno.EDQUOT: "磁盘配额已经用完",
               errno.ENOTDIR: "路径里有一段不是文件夹",
               errno.EEXIST: "路径里有一段不是文件夹"}
    return reasons.get(exc.errno, f"系统报告「{type(exc).__name__}」")


def _replace_file(path: Path, text: str) -> None:
    """Atomically make ``path`` (a regular file or free) hold ``text``: a new file beside it, then
    ``os.replace``."""
    _refuse(path)
    # O_EXCL, never a link
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            # a lone surrogate in a name cannot stop a save
            f.write(text.encode("utf-8", "backslashreplace"))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _shown(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """Text a report shows, as UTF-8 can hold it (a lone surrogate becomes U+FFFD)."""
    return _SURROGATE.sub("\ufffd", text[:limit])


def _add_attempt(data: dict, item_id: str, attempt: dict) -> None:
    """One attempt at a question or at the interview; the entry of another version of the question
    is retired."""
    entry = data["interview"] if item_id == INTERVIEW else data["questions"].get(item_id)
    if entry and entry["question_version"] != attempt["question_version"]:
        _retire(data, item_id)
        entry = None
    if not entry:
        entry = {"attempts": [], "n_attempts": 0, "question_version": attempt["question_version"],
                 "first_try": attempt["verdict"], "final": None, "solved": False,
                 "answer": ""}
    if item_id == INTERVIEW:
        data["interview"] = entry
        self_assessed = attempt["verdict"] == "self"
        entry["complete"] = self_assessed and len(attempt["covered"]) == attempt["of"]
    else:
        data["questions"][item_id] = entry
    attempts = [*entry["attempts"], attempt]
    entry.update(n_attempts=entry["n_attempts"] + 1, final=attempt["verdict"],
                 answer=attempt["answer"],
                 solved=entry["solved"] or attempt["verdict"] == "right",
                 attempts=_bounded(attempts, MAX_ATTEMPTS))


def _add_check(data: dict, name: str, result: dict) -> None:
    """One check of an exercise, kept in its history; once passed, it stays passed (a stub run says
    todo)."""
    entry = data["exercises"].get(name) or {"checks": [], "n_checks": 0, "passed": False,
                                            "source": None,
                                            "passed_source": None}
    passed = result["result"] == "passed"
    check = {"result": result["result"], "mistakes": result["mistakes"], "at": result["at"]}
    entry.update(checks=_bounded([*entry["checks"], check], MAX_ATTEMPTS),
                 n_checks=entry["n_checks"] + 1,
                 passed=entry["passed"] or passed, result=result["result"],
                 message=result["message"],
                 mistakes=result["mistakes"], source=result["source"] or entry["source"])
    if passed and result["source"]:
        entry["passed_source"] = result["source"]
    data["exercises"][name] = entry


class Progress:
    """What the learner has done, counted over the lesson's items, kept in the file at ``path``
    (None: in memory only). Never raises for a bad file or place; touches only that file, its lock
    and files beside it."""

    def __init__(self, path: Path | str | None = None):
        from lesson_lib.practice.questions import question_ids

        self.path = Path(path) if path is not None else None
        self.ids = question_ids()
        self.data, self.notice = self._load() if path is not None else (empty(), "")
        self._pending = []  # changes not yet on disk (a failed save keeps them for the next one)
        self.listeners = []  # called after every change (the summary widgets)

    def _load(self) -> tuple[dict, str]:
        """(data, notice): the saved progress (the entries that read), or a fresh one, and a Chinese
        notice."""
        try:
            _refuse(self.path)
            fd = os.open(self.path,
                         os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as f:
                # a larger file is cut short: not JSON, never parsed whole
                raw = json.loads(f.read(MAX_FILE_BYTES))
            # an older version is read as this one; the next save writes this one
            data, bad = migrate(raw)
            problem = ""
        except FileNotFoundError:
            return empty(), ""
        except ProgressError as exc:
            return empty(), (f"进度文件的位置不对：{_why(exc)}。这次的进度只留在内存里；"
                             "请把它移走，"
                             f"或设置环境变量 {ENV_VAR} 指向另一个位置。")
        except OSError as exc:
            problem = f"读不了（{_why(exc)}）"
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            problem = (f"内容已损坏或超过了 {MAX_FILE_BYTES // 2**20} MB（正常的只有几 KB），"
                       "不是完整的 JSON")
        except ValueError as exc:  # migrate's: not this lesson's progress file
            problem = str(exc)
        if problem:
            return empty(), self._set_aside(f"{problem}，所以这次从头开始记录")
        old = _retire_old(data)
        notice = self._set_aside(f"里有 {len(bad)} 条记录读不懂，已略去，其余照旧") if bad else ""
        if bad and not os.path.lexists(self.path):  # set aside: what reads goes back at once
            with contextlib.suppress(OSError):
                _replace_file(self.path, json.dumps(data, separators=(",", ":")))
        if old:
            notice += (f"课程更新后 {'、'.join(old)} 的题目变了："
                       "之前的作答保留为旧版题目的作答（不计入），"
                       "请按现在的题目再答。")
        return data, notice

    def _set_aside(self, problem: str) -> str:
        """Rename the file to a fresh name beside it (never an existing one); the notice."""
        target = self.path.with_name(f"{self.path.name}.unreadable-{_stamp()}-"
                                     f"{secrets.token_hex(3)}")
        try:
            os.rename(self.path, target)
            kept = f"原文件已改名保存为 {target}，没有删除。"
        except OSError:
            kept = "旧文件原样留在那里（无法改名）。"
        return f"进度文件 {self.path} {problem}。{kept}"

    def record(self, fb, answer, of: int = 0) -> None:
        """One attempt (a blank ``Feedback`` is none) with its answer as stored; ``of``: a rubric's
        points (self)."""
        if fb.blank:
            return
        attempt = {"answer": answer[:MAX_ANSWER_CHARS] if isinstance(answer, str)
                   else sorted(map(str, answer)),
                   "verdict": fb.verdict, "mistake": _shown(";".join(fb.mistakes)) or None,
                   "question_version": fb.version or current_version(fb.question_id)}
        if fb.verdict == "self":
            attempt.update(covered=list(fb.covered), of=of)
        self._apply(_add_attempt, fb.question_id, attempt)

    def record_exercise(self, result) -> None:
        """An ExerciseResult; a stub never filled in is not saved (running the lesson writes
        nothing)."""
        if result.status == "todo" and result.name not in self.data["exercises"]:
            return
        self._apply(_add_check, result.name, {
            "result": result.status, "message": _shown(result.message),
            "mistakes": list(result.mistakes or ()),
            "source": result.source[:MAX_SOURCE_CHARS] if result.source else None,
            "at": _now()})

    def _apply(self, change, *args) -> None:
        """Change the progress in memory at once, then on disk: under the lock, read, merge,
        atomically replace."""
        change(self.data, *args)
        self._pending.append((change, args))
        if self.path is not None:
            try:
                # a folder, FIFO or device: refused before a lock is made beside it
                _refuse(self.path)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # in the data folder, the file's own
                lock = self.path.with_name(self.path.name + ".lock")
                _refuse(lock)
                with filelock.FileLock(str(lock), timeout=LOCK_TIMEOUT_S):
                    data, notice = self._load()
                    for step, step_args in self._pending:
                        step(data, *step_args)
                    data["saved_at"] = _now()
                    # \u escapes: any string fits
                    _replace_file(self.path, json.dumps(data, separators=(",", ":")))
                self.data = data
                self._pending = []
                self.notice = notice or ("" if self.notice.startswith("进度没能保存")
                                         else self.notice)
            except OSError as exc:
                self.notice = (f"进度没能保存到 {self.path}：{_why(exc)}。这次的进度先留在内存里，"
                               f"下次保存时会一起补上；也可以设置环境变量 {ENV_VAR} "
                               "指向一个可写的位置。")
        for listener in self.listeners:
            listener()

    def entry(self, item_id: str) -> dict:
        """The stored record of a question, an exercise or the interview (``INTERVIEW``); {} when
        there is none."""
        if item_id == INTERVIEW:
            return self.data["interview"]
        return self.data["questions"].get(item_id) or self.data["exercises"].get(item_id, {})

    def items(self) -> list[tuple[str, str, str]]:
        """(kind, name, done/tried/todo) for everything; a self-assessed question is done, never
        right."""
        def state(done, tried):
            if done:
                return "done"
            return "tried" if tried else "todo"

        out = [("题目", q, state(e.get("solved") or e.get("final") == "self", e.get("n_attempts")))
               for q in self.ids for e in [self.entry(q)]]
        out += [("代码练习", name,
                 state(e.get("passed"), any(c["result"] != "todo" for c in e.get("checks", ()))))
                for name in EXERCISE_IDS for e in [self.entry(name)]]
        interview = self.entry(INTERVIEW)
        return [*out,
                ("面试自检", INTERVIEW,
                 state(interview.get("complete"), interview.get("n_attempts")))]

    def all_done(self) -> bool:
        return all(state == "done" for _, _, state in self.items())

    def summary(self) -> str:
        """The learner's summary in Chinese: one line per kind (with what to do next), then the
        total."""
        items = self.items()
        lines = [self.notice] if self.notice else []
        for kind, unit in (("题目", "题"), ("代码练习", "个"), ("面试自检", "项")):
            names = {s: [n for k, n, state in items if k == kind and state == s]
                     for s in ("done", "tried", "todo")}
            selfs = [n for n in names["done"] if kind == "题目"
                     and self.entry(n).get("final") == "self"]
            line = (f"{kind}：{'已答对' if kind == '题目' else '已完成'} "
                    f"{len(names['done']) - len(selfs)} / "
                    f"{sum(map(len, names.values()))} {unit}。" + (f"已自评：{'、'.join(selfs)}。"
                                                                  if selfs else ""))
            if names["tried"]:
                line += ("你的自评还没有勾满三点：对照参考答案改一改，再自评一次。"
                         if kind == "面试自检"
                         else f"做过但还没过：{'、'.join(names['tried'])}。")
            lines.append(line + (f"还没做：{'、'.join(names['todo'])}。" if names["todo"] else ""))
        if self.data["earlier"]:
            lines.append(f"另有旧版题目的作答，保留着、不计入：{'、'.join(self.data['earlier'])}。")
        done = sum(s == "done" for _, _, s in items)
        lines.append(f"全部完成（{done} / {len(items)}），明天见！" if done == len(items) else
                     f"合计完成 {done} / {len(items)} 项。")
        return "\n".join(lines)

    def export(self, folder: Path | str | None = None) -> tuple[Path, Path]:
        """progress-export.json (for scripts/class_report.py) and progress-summary.md (one page for
        an instructor) beside the progress file, or in ``folder``. Raises ProgressError
        (Chinese)."""
        if folder is None:
            folder = self.path.parent if self.path else Path.cwd()
        folder = Path(folder)
        lines = ["# Day 11 多头注意力 · 学习进度", "", f"导出时间：{_now()}", ""]
        lines += [f"- {line}" for line in self.summary().splitlines()]
        lines += ["", "| 类别 | 项目 | 状态 | 尝试次数 |", "| --- | --- | --- | --- |"]
        for kind, name, state in self.items():
            tries = self.entry(name).get("n_checks", self.entry(name).get("n_attempts", 0))
            lines.append(f"| {kind} | {name} | "
                         f"{dict(done='完成', tried='未通过', todo='未做')[state]} | {tries} |")
        json_path = folder / "progress-export.json"
        md_path = folder / "progress-summary.md"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _replace_file(json_path, json.dumps(dict(self.data, exported_at=_now()), indent=1))
            _replace_file(md_path, "\n".join(lines) + "\n")
        except OSError as exc:
            raise ProgressError(f"没能导出到 {folder}：{_why(exc)}。你的进度没有受影响；"
                                "换一个可写的文件夹再导出（export(folder=…)）。") from None
        return json_path, md_path


_DEFAULT: Progress | None = None


def default_progress() -> Progress:
    """The notebook's one progress record, saved to ``default_path()``; shared by every widget and
    exercise."""
    global _DEFAULT
    if _DEFAULT is None or _DEFAULT.path != default_path():
        _DEFAULT = Progress(default_path())
    return _DEFAULT
