"""Progress saves: how long one answer takes to reach the file (lock, read, merge, atomic write).

Goal: a save takes ≤ 20 ms. Three files are timed in the same run: a fresh one, a lesson's worth (every question
answered three times, every exercise checked with its source), and the largest file the lesson itself can write
(every item at its attempt cap with answers at the length the lesson records: a form's boxes at the
box cap, free text at its cap, exercise sources at theirs). The figure is the median and
the slowest of 40 saves, each a real ``Progress.record`` to a temporary folder; the ratio compares each file to the
fresh one. Also printed: the size of each file, and the size cap above which a file is set aside, not read.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from lesson_lib.practice import checkers as qc
from lesson_lib.practice import progress, quiz
from lesson_lib.practice import questions as qq
from lesson_lib.practice.feedback import Feedback
from lesson_lib.practice.progress import Progress
from lesson_lib.sections.exercises import EXERCISES

GOAL_MS = 20.0
SAVES = 40


class _Result:
    def __init__(self, name, status, message, source=None):
        self.name, self.status, self.message, self.source, self.mistakes = name, status, message, source, ()


def _answer(qid: str, chars: int, i: int):
    """An answer as long as the lesson records for this question: a form's boxes at their cap, free text at its."""
    q = qq.question(qid)
    if q.kind == "form":
        return json.dumps([("9" * chars)[: qc.MAX_CHARS["form"]] for _ in q.key.boxes])
    if q.kind in ("single", "multi"):
        return [k for k, _ in q.choices][: 1 + i % len(q.choices)]
    return ("答" * chars)[: qc.MAX_CHARS["self"]]


def _fill(p: Progress, attempts: int, chars: int, source_chars: int) -> None:
    for qid in qq.question_ids():
        for i in range(attempts):
            p.record(Feedback(False, "", question_id=qid), _answer(qid, chars, i))
    for name in EXERCISES:
        p.record_exercise(_Result(name, "wrong", "形状不对", "x" * source_chars))
    for _ in range(attempts):
        p.record(quiz.check("面试", "面"), "面" * min(chars, qc.MAX_CHARS["self"]))


def _time_saves(path: Path) -> tuple[float, float, float, float]:
    """(median, slowest) of SAVES saves, the median of a bare write of the same bytes (a temporary file and
    os.replace, no lock, no read) timed between them: the floor on this machine at the same moment; and the median
    CPU time of a save (this process's own work, which other processes on a busy machine barely change)."""
    p = Progress(path)
    saves, bare, cpu = [], [], []
    for i in range(SAVES):
        start, start_cpu = time.perf_counter(), time.process_time()
        p.record(Feedback(False, "", question_id="Q2"), json.dumps([str(i), "不变"]))
        saves.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        data = path.read_bytes()
        start = time.perf_counter()
        tmp = path.with_name(f"bare-{i}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path.with_name("bare.json"))
        bare.append((time.perf_counter() - start) * 1000)
    assert not p.notice, p.notice
    return statistics.median(saves), max(saves), statistics.median(bare), statistics.median(cpu)


def run() -> list[str]:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"goal: one save ≤ {GOAL_MS:.0f} ms (median and slowest of {SAVES}); files over "
             f"{progress.MAX_FILE_BYTES / 2**20:.0f} MB are set aside, never parsed. Load average {load:.1f} on "
             f"{os.cpu_count()} CPUs: on a busy machine, read the ratio to a bare write of the same bytes"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        cases = {"fresh": (0, 0, 0), "a lesson's worth": (3, 40, 2_000),
                 "the largest the lesson writes": (progress.MAX_ATTEMPTS, progress.MAX_ANSWER_CHARS,
                                                   progress.MAX_SOURCE_CHARS)}  # fmt: skip
        base = None
        worst = 0.0
        for label, (attempts, chars, source) in cases.items():
            path = Path(tmp) / label.replace(" ", "_").replace("'", "") / "progress.json"
            filler = Progress()
            _fill(filler, attempts, max(chars, 4), source)
            path.parent.mkdir(parents=True)
            if attempts:
                path.write_text(json.dumps(progress.to_file(filler.data)), encoding="utf-8")
            median, slowest, bare, cpu = _time_saves(path)
            base = base or median
            worst = max(worst, median)
            size = path.stat().st_size
            lines.append(f"{label:30s} file {size / 1024:7.1f} KB  save median {median:6.2f} ms (CPU {cpu:5.2f} ms)  "
                         f"slowest {slowest:6.2f} ms  ({median / base:4.1f}× fresh; {median / bare:4.1f}× a bare "
                         f"write of the same bytes, {bare:5.2f} ms)")  # fmt: skip
    lines.append(f"slowest median: {worst:.2f} ms ({'within' if worst <= GOAL_MS else 'OVER'} the {GOAL_MS:.0f} ms "
                 "goal)")  # fmt: skip
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
