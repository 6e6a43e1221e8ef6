"""Dump every bad-input message of the public kernel functions: python benchmarks/dump_messages.py OUT.json
(``--diff BEFORE.json AFTER.json`` lists the cases whose outcome changed; ``DUMP_ROOT=<checkout>`` dumps another
checkout, e.g. main, with this script)

Runs each bad input of tests/test_checks.py's tables (and a few more: overflows, the size guard, MemoryError)
through the public functions of lesson_lib.attention, and writes {case: [exception type, message]}; good inputs
give a digest of their output, so a refactor that changes a number shows too. Run it before and after a change to
the kernel or lesson_lib.checks and diff the two files.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(os.environ.get("DUMP_ROOT") or Path(__file__).resolve().parents[1])  # another checkout
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks"), str(ROOT)]

import test_checks as t  # noqa: E402  (the tables of bad inputs)

from lesson_lib import attention, costs  # noqa: E402
from lesson_lib.checks import check_choice, check_int, check_number  # noqa: E402
from lesson_lib.sections import s05_head_lab  # noqa: E402


def _digest(value):
    parts = value if isinstance(value, tuple) else (value,)
    h = hashlib.sha256()
    for p in parts:
        a = np.asarray(p)
        h.update(str((a.dtype, a.shape, type(p).__name__)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _run(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = call()
        except Exception as exc:  # the dump records whatever was raised
            return [type(exc).__name__, str(exc)]
    return ["ok", _digest(value)]


def cases():
    lesson = {"mha": attention.multi_head_attention, "reference": t.multi_head_attention_reference}
    for name, xw, *_ in t.BAD_MHA + [(r[0], r[1]) for r in t.OVERFLOWS] + [(r[0], r[1]) for r in t.GOOD_MHA]:
        x, ws, *h = xw
        for kname, kernel in lesson.items():
            yield f"{kname} {name}", lambda k=kernel, x=x, ws=ws, h=h: k(x, *ws, *(h or [t.H]))
    for name, x, kwargs, *_ in t.BAD_SOFTMAX:
        yield f"softmax {name}", lambda x=x, kw=kwargs: attention.softmax(x, **kw)
    for which in range(3):
        for bad_name, bad in (("None", None), ("str", "abc"), ("(3,0)", np.zeros((3, 0))), ("[]", [])):
            arrays = [np.ones((3, 4)) for _ in range(3)]
            arrays[which] = bad
            yield f"sdpa {'QKV'[which]} {bad_name}", lambda a=arrays: attention.scaled_dot_product_attention(*a)
    for name, mask, *_ in t.BAD_MASKS:
        q = np.ones((4, 3))
        yield f"sdpa mask {name}", lambda m=mask, q=q: attention.scaled_dot_product_attention(q, q, q, mask=m)
        x, ws = t.inputs(n=4)
        for kname, kernel in lesson.items():
            yield f"{kname} mask {name}", lambda k=kernel, m=mask, x=x, ws=ws: k(x, *ws, t.H, mask=m)
    bads = {"nan": lambda s: np.full(s, np.nan), "-inf": lambda s: np.full(s, -np.inf),
            "complex": lambda s: np.ones(s) * 1j, "empty": lambda s: np.ones((*s[:-2], 0, s[-1]))}
    for bad_name, bad in bads.items():
        yield f"split_heads {bad_name}", lambda b=bad: attention.split_heads(b((3, 8)), 2)
        yield f"merge_heads {bad_name}", lambda b=bad: attention.merge_heads(b((2, 3, 4)))
    for name, (fn, args, kwargs) in t.CALLS.items():
        yield f"call {name}", lambda fn=fn, a=args, kw=kwargs: fn(*a, **kw)
        yield f"nested {name}", lambda fn=fn, a=args, kw=kwargs: t._lesson_function(fn, *a, **kw)
    q = np.full((3, 4), 1e154)
    yield "sdpa overflow float64", lambda: attention.scaled_dot_product_attention(q, q, np.ones((3, 2)))
    q16 = np.full((3, 4), 200, np.float16)
    yield "sdpa overflow float16", lambda: attention.scaled_dot_product_attention(q16, q16, q16)
    yield "softmax 70000 float16", lambda: attention.softmax(np.zeros(70_000, np.float16))
    big = np.zeros((200_000, t.D))
    for kname, kernel in lesson.items():
        yield f"{kname} 200000 tokens", lambda k=kernel: k(big, *[np.eye(t.D)] * 4, t.H)
    yield "sdpa 200000 tokens", lambda: attention.scaled_dot_product_attention(big, big, big)
    x, ws = t.inputs(n=6)
    for kname, kernel in lesson.items():
        yield f"{kname} MemoryError", lambda k=kernel: k(x.view(t._NoRoom), *ws, t.H)
    no_room = np.ones((5, 4)).view(t._NoRoom)
    yield "sdpa MemoryError", lambda: attention.scaled_dot_product_attention(no_room, no_room, no_room)
    for h in (0, 3, 2.0, None, True, "2"):
        yield f"head_width 8 {h!r}", lambda h=h: attention.head_width(8, h)
        yield f"split_heads h={h!r}", lambda h=h: attention.split_heads(np.ones((2, 8)), h)
        yield f"costs.parameters 8 {h!r}", lambda h=h: costs.parameters(8, h)
        yield f"costs.count 8 {h!r}", lambda h=h: costs.count(4, 8, h)
        yield f"s05 lab_state {h!r}", lambda h=h: s05_head_lab.lab_state(h).weights
    for value in (0, -3, 2.5, True, "6", None, 6):
        yield f"check_int {value!r}", lambda v=value: check_int(v, "n", minimum=1, maximum=5)
    for value in (11, float("nan"), "4", True):
        yield f"check_number {value!r}", lambda v=value: check_number(v, "锐度", minimum=0, maximum=10)
    for value in (3, 2.0, "2", True):
        yield f"check_choice {value!r}", lambda v=value: check_choice(v, "heads", [1, 2])


def main(out: str) -> None:
    dump = {}
    for name, call in cases():
        assert name not in dump, name
        dump[name] = _run(call)
    Path(out).write_text(json.dumps(dump, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    errors = sum(v[0] != "ok" for v in dump.values())
    print(f"{len(dump)} cases ({errors} errors) -> {out}")


def diff(before: str, after: str) -> int:
    """Print every case whose exception type or text (or output digest) changed; the free memory the size guard
    reports is the machine's state, not the message, so it is masked."""
    import re

    def load(path):
        return {k: re.sub(r"可用的内存约 [\d.]+ [KMGT]?B", "可用的内存约 … B", " | ".join(v))
                for k, v in json.loads(Path(path).read_text(encoding="utf-8")).items()}

    a, b = load(before), load(after)
    changed = [k for k in a.keys() | b.keys() if a.get(k) != b.get(k)]
    for k in sorted(changed):
        print(f"{k}\n  before: {a.get(k)}\n  after:  {b.get(k)}")
    print(f"{len(a)} cases before, {len(b)} after, {len(changed)} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--diff"]:
        sys.exit(diff(*sys.argv[2:4]))
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/door-messages.json")
