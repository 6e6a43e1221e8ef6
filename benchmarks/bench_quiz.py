"""Self-test latency: every check, cold and warm, on its plain right answer and on adversarial answers.

Goal: every check answers in ≤ 50 ms (a learner feels a longer wait as lag). For each question the benchmark
checks the answers of the adversarial table (tests/quiz_answers.py) and a set of hostile inputs at every box's
length cap (long digit runs, nested parentheses, equation chains, LaTeX, 万/亿 runs, a million characters);
it reports the worst median of warm checks, and the ratio to the same question's plain right answer measured
in the same run. The cold figure is the first ``quiz.check`` after ``import lesson_lib.practice.quiz`` in a new
process (questions are built lazily, one at a time), as in the notebook where the kernel has
already imported numpy and run the lesson's kernel (§2's demo comes before the first question).
A self-assessment (``quiz.assess``) and the interview's rubric are timed the same way.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from lesson_lib.practice import checkers, questions, quiz

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from quiz_answers import MEANT_RIGHT, TABLE

GOAL_MS = 50.0
REPEAT = 5


def _plain() -> dict:
    plain = {}
    for qid, answer, verdict, _ in TABLE:
        if verdict in ("right", "review"):
            plain.setdefault(qid, answer)
    return plain


def _hostile(cap: int) -> list[str]:
    unit = ["6", "(", "n·", "64 = ", "不是 64，", "8×64n²=512n²；", "单头不会平均，但算力相近。", "五千四百万",
            "d_k=64 d_v=64 ", "1e99 ", "A", "(h=16) ", "\\frac{1}{2}", "5.5千万", "$\\times$",
            "a" * 7 + " "]  # fmt: skip
    answers = [(u * (cap // len(u) + 1))[:cap] for u in unit]
    answers.append("x" * 1_000_000)  # past every cap: refused without being read
    return answers


def _answers_for(q, text: str):
    return [text] * len(q.key.boxes) if q.kind == "form" else text


def _median_ms(fn, *args) -> float:
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _cold_ms(call: str) -> float:
    # §2 runs the kernel (its averaging demo) before the first question is asked: so does the fresh process here.
    code = ("import time, numpy, lesson_lib.attention as a, lesson_lib.sections.s04_costs, lesson_lib.paper; "
            "a.scaled_dot_product_attention(*[numpy.ones((2, 4))] * 3); "
            "import lesson_lib.practice.quiz as q; "
            f"t = time.perf_counter(); {call}; "
            "print((time.perf_counter() - t) * 1000)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def _table_counts() -> str:
    """Issue 28's done-when over the adversarial table (tests/test_quiz.py holds the same counts)."""
    right = [r[:2] for r in TABLE if r[2] == "right"] + MEANT_RIGHT
    verdicts = [quiz.check(*r).verdict for r in right]
    wrong = [r[:2] for r in TABLE if r[2] not in ("right", "review", "blank")]
    accepted = sum(quiz.check(*r).correct for r in wrong)
    return (f"table: {len(right)} right answers, {verdicts.count('form')} asked to rewrite "
            f"({100 * verdicts.count('form') / len(right):.1f} %, goal ≤ 10 %), {verdicts.count('wrong')} told 还不对 "
            f"(must be 0); {len(wrong)} wrong or unreadable answers, {accepted} accepted (must be 0)")


def _kept_counts() -> str:
    """Issue 38's done-when over the right and wrong answers each question keeps in its data."""
    ids = (*questions.question_ids(), *questions.lab_ids())
    right = [(q, a) for q in ids for a in questions.question(q).right_answers]
    wrong = [(q, a) for q in ids for a in questions.question(q).wrong_answers]
    feedback = [quiz.check(q, a) for q, a in right]
    rewrite = sum(f.verdict == "form" for f in feedback)
    numeral = sum("中文数字" in f.message for f in feedback)  # none of these answers holds a Chinese numeral
    accepted = sum(quiz.check(q, a).correct for q, a in wrong)
    return (f"kept: {len(right)} right answers, {rewrite} asked to rewrite ({100 * rewrite / len(right):.1f} %, "
            f"goal ≤ 10 %), {sum(f.verdict == 'wrong' for f in feedback)} told 还不对, {numeral} told 中文数字 "
            f"(must be 0); {len(wrong)} wrong answers, {accepted} accepted (must be 0)")


def run() -> list[str]:
    lines = [f"goal: every check ≤ {GOAL_MS:.0f} ms; worst = slowest median of {REPEAT} over the table's answers and "
             "hostile inputs at the length cap"]  # fmt: skip
    plain = _plain()
    worst_all = 0.0
    for qid in questions.question_ids():
        q = questions.question(qid)
        cap = checkers.MAX_CHARS[q.kind]
        base = _median_ms(quiz.check, qid, plain[qid])
        inputs = [a for t, a, _, _ in TABLE if t == qid] + [_answers_for(q, h) for h in _hostile(cap)]
        worst, which = max((_median_ms(quiz.check, qid, a), str(a)[:14]) for a in inputs)
        cold = _cold_ms(f"q.check({qid!r}, {plain[qid]!r})")
        worst_all = max(worst_all, worst, cold)
        lines.append(f"{qid:4} {q.kind:6} plain {base:6.2f} ms  worst {worst:6.2f} ms ({worst / base:5.1f}× plain; "
                     f"{which!r}…)  cold {cold:6.2f} ms")  # fmt: skip
    ticks = [p.name for p in questions.question("Q1").key.points]
    assess = _median_ms(quiz.assess, "Q1", ticks)
    iv = max(_median_ms(quiz.check, "面试", a) for a in _hostile(checkers.MAX_CHARS["self"]))
    iv_cold = _cold_ms("q.check('面试', '单头只有一组权重')")
    worst_all = max(worst_all, assess, iv, iv_cold)
    lines.append(f"Q1 self-assessment {assess:6.2f} ms;  面试 rubric worst {iv:6.2f} ms  cold {iv_cold:6.2f} ms")
    lines.append(_table_counts())
    lines.append(_kept_counts())
    lines.append(f"worst of all (cold and warm): {worst_all:.2f} ms "
                 f"({'within' if worst_all <= GOAL_MS else 'OVER'} the {GOAL_MS:.0f} ms goal)")  # fmt: skip
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
