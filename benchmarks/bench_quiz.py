"""Self-test latency: the worst answer a learner can submit to each question, and the first check in a fresh kernel.

Goal: every check answers in ≤ 50 ms (a learner feels a longer wait as lag). For each question the
benchmark checks a set of adversarial answers at the question kind's length cap (long digit runs, nested
parentheses, equation chains, repeated negations, CJK prose, a million characters for choices) and reports
the worst median; the baseline, measured in the same run, is the same question's plain right answer. The cold
figure is the first ``quiz.check`` after ``import lesson_lib.selftest.quiz`` in a new process (questions are built
lazily, one at a time).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from lesson_lib.selftest import quiz

GOAL_MS = 50.0
REPEAT = 5
PLAIN = {"Q1": "单头只有一组权重，输出是加权平均，信息被混在一起。", "Q2": "64", "Q3": "8·64n² = 512n²", "Q4": "B",
         "Q5": "ABC", "S2": "AC", "S3": "(8, 12, 64)", "S3b": "C", "S4": "54988800", "S4b": "40000", "S5": "AB",
         "S6": "B", "S7": "CD", "S7b": "C"}  # fmt: skip


def _adversarial(cap: int) -> list[str]:
    unit = ["6", "(", "n·", "64 = ", "不是 64，", "8×64n²=512n²；", "单头不会平均，但算力相近。", "五千四百万",
            "d_k=64 d_v=64 ", "1e99 ", "A", "(h=16) ", "a" * 7 + " "]  # fmt: skip
    answers = [(u * (cap // len(u) + 1))[:cap] for u in unit]
    answers.append("x" * 1_000_000)  # past every cap: refused without being read
    return answers


def _median_ms(fn, *args) -> float:
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _cold_ms(call: str) -> float:
    # As in the notebook at §10: the kernel has already imported numpy and the lesson's kernel modules.
    code = ("import time, numpy, lesson_lib.kernel.attention, lesson_lib.kernel.flops, lesson_lib.paper; "
            f"import lesson_lib.selftest.quiz as q; t = time.perf_counter(); {call}; "
            "print((time.perf_counter() - t) * 1000)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def run() -> list[str]:
    lines = [f"goal: every check ≤ {GOAL_MS:.0f} ms; worst = slowest median of {REPEAT} over adversarial answers at "
             "the length cap"]  # fmt: skip
    worst_all = 0.0
    for qid in quiz.question_ids():
        q = quiz.question(qid)
        cap = quiz.MAX_CHARS[q.kind]
        base = _median_ms(quiz.check, qid, PLAIN[qid])
        worst, which = max((_median_ms(quiz.check, qid, a), a[:12]) for a in _adversarial(cap))
        worst_all = max(worst_all, worst)
        cold = _cold_ms(f"q.check({qid!r}, {PLAIN[qid]!r})")
        lines.append(f"{qid:4} {q.kind:10} cap {cap:5}  plain {base:6.2f} ms  worst {worst:6.2f} ms "
                     f"({worst / base:5.1f}× plain; {which!r}…)  cold {cold:6.2f} ms")  # fmt: skip
    iv_cap = quiz.interview.MAX_INTERVIEW_CHARS
    iv_base = _median_ms(quiz.interview_check, PLAIN["Q1"])
    iv_worst = max(_median_ms(quiz.interview_check, a) for a in _adversarial(iv_cap))
    worst_all = max(worst_all, iv_worst)
    iv_cold = _cold_ms(f"q.interview_check({PLAIN['Q1']!r})")
    lines.append(f"面试 text       cap {iv_cap:5}  plain {iv_base:6.2f} ms  worst {iv_worst:6.2f} ms "
                 f"({iv_worst / iv_base:5.1f}× plain)  cold {iv_cold:6.2f} ms")  # fmt: skip
    lines.append(f"worst of all: {worst_all:.2f} ms ({'within' if worst_all <= GOAL_MS else 'OVER'} the "
                 f"{GOAL_MS:.0f} ms goal)")  # fmt: skip
    return lines
