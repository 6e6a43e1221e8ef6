"""班级报告：把全班的进度文件汇成一页离线网页（HTML）和一张表（CSV），给讲师备下一节课。

    python scripts/class_report.py                # Hub 上（以管理员身份）：读 /home/*/.local/share/…/progress.json
    python scripts/class_report.py 收上来的文件夹/ a.json   # 收集来的导出文件（progress-export.json）或进度文件
    python scripts/class_report.py --out 报告 --names --recheck

It only reads: a student's file is never renamed, rewritten or followed through a link. Students are numbered
(学生 1, 2, …, in path order) unless ``--names`` is given. ``--recheck`` runs each exercise a student passed again
from the stored source in scripts/recheck_sandbox.py (an unprivileged user, namespaces, limits, killed at the
budget; only a JSON verdict comes back); a pass that does not repeat is marked 「未确认」.
Bad input (unreadable, another course's file, a newer format, a link) is one line on stderr and skipped.
Answers to an earlier version of a question are counted apart, never mixed with the current version's.
"""

from __future__ import annotations

import argparse
import csv
import glob
import hashlib
import importlib.util
import json
import os
import re
import stat
import sys
import time
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
    notes: list[str] = field(default_factory=list)


def candidate_files(paths: list[str], warn=lambda line: None) -> list[Path]:
    """Every .json under the given folders (never entering a linked folder) and the given files; the hub's home
    folders when none is given (not through a link: ``~/.local`` may be a student's link to anywhere)."""
    if not paths:
        env = os.environ.get("LESSON_PROGRESS_FILE")
        found = []
        for p in sorted(glob.glob(HUB_GLOB)):
            if os.path.realpath(os.path.dirname(p)) != os.path.dirname(os.path.abspath(p)):
                warn(f"跳过 {p}：所在的文件夹经过一个链接，不跟随。")
            else:
                found.append(p)
        return [Path(p) for p in dict.fromkeys(found + ([env] if env else []))]
    out = []
    for p in map(Path, paths):
        out += _search(p) if p.is_dir() and not p.is_symlink() else [p]
    out = list(dict.fromkeys(out))
    # 「导出进度」 writes progress-export.json beside progress.json: the same student, read once (the live file).
    return [p for p in out if not (p.name == EXPORT and p.with_name(LIVE) in out)]


def _search(top: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(top, followlinks=False):  # a link to a folder is listed, never entered
        dirs.sort()
        found += [Path(folder, f) for f in sorted(files) if f.endswith(".json")]
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


def read_progress(path: Path) -> tuple[dict | None, str]:
    """(data, "") for a progress file or export of any format the lesson has written, read as the current one
    (``progress.migrate``: every field the report reads checked for type and size), else (None, why) in Chinese.
    Never follows a link."""
    from lesson_lib.practice.progress import migrate

    try:
        st = os.lstat(path)
    except OSError as exc:
        return None, f"读不到（{exc.strerror or exc}）"
    if stat.S_ISLNK(st.st_mode):
        return None, "是一个链接，不跟随"
    if not stat.S_ISREG(st.st_mode):
        return None, "不是普通文件"
    if st.st_size > MAX_BYTES:
        return None, f"太大（{st.st_size:,} 字节，进度文件只有几 KB）"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            raw = json.loads(f.read(MAX_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return None, f"不是可读的 JSON（{type(exc).__name__}）"
    try:
        data, bad = migrate(raw)
    except ValueError as exc:
        return None, str(exc)
    if bad:
        return None, bad[0] + (f"（另有 {len(bad) - 1} 处不对）" if len(bad) > 1 else "")
    return data, ""


def load_class(paths: list[str], names: bool, warn) -> list[Student]:
    students, seen = [], {}
    for path in candidate_files(paths, warn):
        try:  # one file, whatever it holds, never stops the report for the others
            earlier = _seen_before(path, seen)
            data, why = (None, f"和 {earlier} 是同一个文件或内容相同，只算一次") if earlier else read_progress(path)
        except Exception as exc:
            data, why = None, f"读的时候出错（{type(exc).__name__}）"
        if data is None:
            warn(f"跳过 {path}：{why}。")
            continue
        label = _name_of(path) if names else f"学生 {len(students) + 1}"
        students.append(Student(label, path, data))
    return students


def _name_of(path: Path) -> str:
    """The home folder's name for a file in ``<home>/.local/share/…``, else the file's name (or its folder's)."""
    parts = path.absolute().parts
    if ".local" in parts[1:]:
        return parts[parts.index(".local", 1) - 1]
    return path.stem if path.name not in (LIVE, EXPORT) else path.parent.name


# ------------------------------------------------------------------------------------------ the lesson's data
def lesson():
    """The questions (current version digests, sections) and exercises, read from lesson_lib's own data."""
    from lesson_lib.practice.progress import current_version
    from lesson_lib.practice.questions import question, question_ids
    from lesson_lib.sections import exercises

    versions = {item: current_version(item) for item in (*question_ids(), INTERVIEW)}
    return {qid: question(qid) for qid in question_ids()}, versions, tuple(exercises.EXERCISES)


def asked_in() -> dict[str, int]:
    """Where the core notebook asks each question and exercise: the section number of the source file
    (notebooks/src/NN_*.md) whose code calls ``ask("ID")`` or ``exercises.check("ID", …)``."""
    where = {}
    for src in sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]*.md")):
        number = int(src.name[:2])
        for found in re.finditer(r"""(?:ask|exercises\.check)\(\s*["']([^"']+)["']""", src.read_text("utf-8")):
            where.setdefault(found.group(1), number)
    return where


def section_titles() -> dict[int, str]:
    """Each section's title, from the first numbered heading of its source file (``## 5 动手实验台：…``)."""
    titles = {}
    for src in sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]*.md")):
        found = re.search(r"^##\s+\d+\s+(.+?)\s*$", src.read_text("utf-8"), re.M)
        if found:
            titles.setdefault(int(src.name[:2]), found.group(1))
    return titles


def describe_mistake(q, mistake: str) -> str:
    """The named mistake in the words the learner was shown (the checker's own hint), from the question data."""
    key = q.key
    name, _, value = mistake.partition("=")
    if name == "option":
        for k, label, why in getattr(key, "options", ()):
            if k == value:
                return f"选了 {k}「{' '.join(str(label).split())}」：{why}"
    if name == "missing":
        return "漏选了该选的选项"
    for box in getattr(key, "boxes", ()):
        if box.name == name:
            read, _ = box.read(value)
            why = box.wrong_why(read) if read is not None else ""
            return f"{box.label} 填 {value}" + (f"：{why}" if why else "")
    if name == "shape":
        return f"形状写成 {value}"
    return mistake


# ------------------------------------------------------------------------------------------ counting
@dataclass
class QuestionRow:
    qid: str
    section: str
    answered: int = 0
    first_right: int = 0
    later_right: int = 0
    never: int = 0
    old: int = 0
    mistakes: Counter = field(default_factory=Counter)  # mistake id -> students
    covered: Counter = field(default_factory=Counter)  # self-explanation: rubric point -> students who ticked it


def count_questions(students, qs, versions):
    rows = {qid: QuestionRow(qid, q.section) for qid, q in qs.items()}
    points = {qid: {p.name for p in getattr(q.key, "points", ())} for qid, q in qs.items()}  # a rubric's own
    for s in students:
        for qid, row in rows.items():
            _count_item(row, s.data["questions"].get(qid), qid in s.data["earlier"], versions.get(qid), points[qid])
    return rows


def _count_item(row: QuestionRow, entry: dict | None, earlier: bool, version, points: set) -> None:
    """One student's answers to one question: this version's first try and later ones, each named mistake once
    (at any try), only the rubric's own ticked points; answers to an earlier version counted apart, never right."""
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
    row.mistakes.update({m for a in attempts for m in (a["mistake"] or "").split(";") if m})
    row.covered.update({p for a in attempts if a["verdict"] == "self" for p in a.get("covered", ()) if p in points})


@dataclass
class ExerciseRow:
    name: str
    tried: int = 0
    first_right: int = 0
    later_right: int = 0
    failing: int = 0
    unconfirmed: int = 0
    mistakes: Counter = field(default_factory=Counter)  # mistake id -> students who made it at any check
    said: dict = field(default_factory=dict)  # mistake id -> the checker's message the first time it was named

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
            row.mistakes.update({m for c in entry["checks"] for m in c["mistakes"]})
            for m in entry["mistakes"]:
                row.said.setdefault(m, entry["message"])
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


def each_student(students, asked, qs, versions, exercise_names) -> list[tuple]:
    """(label, last section, questions answered, right on the first try, exercises passed) per student."""
    out = []
    for s in students:
        rows = count_questions([s], qs, versions).values()
        passed = count_exercises([s], exercise_names).values()
        out.append((s.label, last_section(s, asked), sum(r.answered for r in rows), sum(r.first_right for r in rows),
                    sum(r.passed for r in passed)))  # fmt: skip
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
    prompts: dict = field(default_factory=dict)  # question id -> its prompt, without the id
    students: list = field(default_factory=list)  # each_student's rows

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


def build(paths: list[str], names: bool = False, recheck=None, warn=None) -> Report:
    """``recheck``: None, or the sandbox (recheck_sandbox.prepare) in which passes are run again."""
    skipped: list[str] = []

    def note(line: str) -> None:
        skipped.append(line)
        if warn:
            warn(line)

    students = load_class(paths, names, note)
    qs, versions, exercise_names = lesson()
    rows = count_questions(students, qs, versions)
    mis = [(count, qid, m, describe_mistake(qs[qid], m), qs[qid].section)
           for qid, row in rows.items() for m, count in row.mistakes.items()]  # fmt: skip
    ex = count_exercises(students, exercise_names, recheck_with(recheck) if recheck else None)
    asked = asked_in()
    mis += [(count, name, m, exercise_mistake(m, row.said.get(m)), f"第 {asked.get(name, 0)} 节")
            for name, row in ex.items() for m, count in row.mistakes.items()]  # fmt: skip
    order = [*qs, *ex]
    mis.sort(key=lambda t: (-t[0], order.index(t[1]), t[2]))
    return Report(len(students), rows, ex, stopped_at(students, asked),
                  interview_points(students, versions.get(INTERVIEW)), mis, skipped,
                  [s.label for s in students], section_titles(),
                  {qid: q.prompt.removeprefix(qid).strip() for qid, q in qs.items()},
                  each_student(students, asked, qs, versions, exercise_names))  # fmt: skip


def csv_rows(r: Report):
    yield ("kind", "item", "measure", "count", "detail")
    for qid, row in r.questions.items():
        for measure in ("answered", "first_right", "later_right", "never", "old"):
            yield ("question", qid, measure, getattr(row, measure), row.section)
        for point, c in row.covered.items():
            yield ("question", qid, "ticked", c, point)
    for count, qid, m, text, _section in r.misconceptions:
        yield ("misconception", qid, m, count, text)
    for name, row in r.exercises.items():
        for measure in ("tried", "passed", "first_right", "later_right", "failing", "unconfirmed"):
            yield ("exercise", name, measure, getattr(row, measure), "")
        for m, c in row.mistakes.items():
            yield ("exercise_mistake", name, m, c, "")
    for section, c in sorted(r.stopped.items()):
        yield ("stopped", f"第 {section} 节" if section else "未作答", "students", c, "")
    for label, last, answered, first_right, passed in r.students:
        yield ("student", label, "last_section", last, r.section(last))
        yield ("student", label, "answered", answered, "")
        yield ("student", label, "first_right", first_right, "")
        yield ("student", label, "exercises_passed", passed, "")
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
    stops = [(r.section(s), c) for s, c in sorted(r.stopped.items(), key=lambda t: -t[0])]
    missed = sorted(((_first_wrong(row), qid) for qid, row in r.questions.items() if _first_wrong(row)),
                    key=lambda t: -t[0])  # fmt: skip
    misconceptions = [{"count": c, "item": item, "text": text, "where": r.titled(sec)}
                      for c, item, _, text, sec in r.misconceptions]  # fmt: skip
    explained = [(f"{qid}：{row.answered} 人写过，自己勾选的要点", sorted(row.covered.items(), key=lambda t: -t[1]))
                 for qid, row in r.questions.items() if row.covered]  # fmt: skip
    took, ticked = r.interview
    if took:
        explained.append((f"第 8 节面试自检：{took} 人写过", sorted(ticked.items(), key=lambda t: -t[1])))
    return env.get_template("class_report.html.j2").render(
        n=r.n, anonymous=not r.names or r.names[0].startswith("学生 "), stops=stops, missed=missed,
        nobody=[name for name, row in r.exercises.items() if row.tried and not row.passed],
        misconceptions=misconceptions,
        misconceptions_rows=[(m["count"], m["item"], m["text"], m["where"]) for m in misconceptions],
        stops_alt="最后作答所在的节，学生人数：" + "；".join(f"{label} {c} 人" for label, c in stops),
        question_rows=[(qid, r.prompts.get(qid, ""), row.section, row.answered, row.first_right, row.later_right,
                        row.never, row.old) for qid, row in r.questions.items()],
        missed_items=[(qid, c) for c, qid in missed[:8]],
        missed_alt="第一次没答对的人数最多的题：" + "；".join(f"{qid} {c} 人" for c, qid in missed[:8]),
        exercise_rows=[(name, row.tried, row.first_right, row.later_right, row.failing, row.unconfirmed,
                        "、".join(f"{names_of(m)}（{c}）" for m, c in row.mistakes.most_common()) or "—")
                       for name, row in r.exercises.items()],
        explained=explained,
        student_rows=[(label, r.section(last), *counts) for label, last, *counts in r.students],
        skipped=r.skipped)  # fmt: skip


def names_of(mistake: str) -> str:
    """An exercise's named mistake in Chinese (the exercise module's MISTAKES), else its id."""
    from lesson_lib.sections import exercises

    return getattr(exercises, "MISTAKES", {}).get(mistake, mistake)


def exercise_mistake(mistake: str, message: str | None) -> str:
    """The mistake's Chinese name, then what the checker told the learner (without the example it failed on)."""
    name = names_of(mistake)
    told = re.sub(r"^[^：]*=[^：]*：", "", message or "").strip()
    if not told:
        return name
    return f"{name}：{told}" if name != mistake else told


def inert(cell):
    """A text cell that a spreadsheet would read as a formula gets a leading ' (OWASP's advice on CSV injection);
    the report's own numbers stay numbers."""
    if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + cell
    return cell


def write(r: Report, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path, csv_path = out_dir / "class-report.html", out_dir / "class-report.csv"
    html_path.write_text(page(r), encoding="utf-8")
    with open(csv_path, "w", newline="", encoding="utf-8-sig") as f:  # utf-8-sig: Excel reads the Chinese
        csv.writer(f).writerows([inert(cell) for cell in row] for row in csv_rows(r))
    return html_path, csv_path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="把全班的进度文件汇成一页班级报告（HTML + CSV）。")
    ap.add_argument("paths", nargs="*", help=f"进度文件、导出文件或装着它们的文件夹（默认：{HUB_GLOB}）")
    ap.add_argument("--out", default="class-report", help="报告写到这个文件夹（默认 class-report/）")
    ap.add_argument("--names", action="store_true", help="显示学生的名字（默认只编号）")
    ap.add_argument("--recheck", action="store_true",
                    help="在隔离的检查进程里重跑学生通过的代码练习（会执行学生的代码，只能以 root 运行，见 README）")
    ap.add_argument("--recheck-user", metavar="NAME", help="重跑学生代码所用的普通用户（默认 nobody）")
    args = ap.parse_args(argv)
    box = None
    if (args.recheck or args.recheck_user) and os.geteuid() != 0:  # the students' code would run with your rights
        print(f"--recheck 没有开始：{_sandbox_module().NOT_ROOT}", file=sys.stderr)
        return 2
    if args.recheck:
        from lesson_lib.practice.exercises import BUDGET_S  # the checker's own budget for one exercise

        try:
            box = _sandbox_module().prepare(args.recheck_user, BUDGET_S)
        except ValueError as exc:
            print(f"--recheck 没有开始：{exc}", file=sys.stderr)
            return 2
    start, cpu = time.perf_counter(), time.process_time()
    report = build(args.paths, names=args.names, recheck=box,
                   warn=lambda line: print(line, file=sys.stderr))  # fmt: skip
    if not report.n:
        print("没有找到可读的进度文件：请给出文件或文件夹的路径（在 Hub 上请以管理员身份运行）。", file=sys.stderr)
        return 1
    html_path, csv_path = write(report, Path(args.out))
    took = f"{time.perf_counter() - start:.2f} 秒，CPU {time.process_time() - cpu:.2f} 秒"
    print(f"{report.n} 名学生 → {html_path}、{csv_path}（{took}）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
