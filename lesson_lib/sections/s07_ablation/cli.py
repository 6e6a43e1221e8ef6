"""``python -m lesson_lib.sections.s07_ablation``: §7's sweep from a terminal; Ctrl-C ends it, keeping what finished."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace

from lesson_lib.models.toy.config import TrainConfig
from lesson_lib.models.toy.sweeping import SweepInterrupted, sweep
from lesson_lib.sections.s07_ablation.report import accuracy_numbers_text

__all__ = ["main", "parse_heads"]


def parse_heads(text: str) -> list[int]:
    """"1,2,4" -> [1, 2, 4]; a Chinese error for anything that is not a non-empty list of integers."""
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise ValueError(f"--heads 不能为空：请给逗号分隔的头数，例如 1,2,4,8，收到的是 {text!r}。")
    try:
        return [int(part) for part in parts if part]
    except ValueError:
        raise ValueError(f"--heads 应是逗号分隔的整数，例如 1,2,4,8，收到的是 {text!r}。") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lesson_lib.sections.s07_ablation",
        description="训练一层多头注意力的小模型（3-lookup 任务），比较不同头数的准确率（论文表 3 (A) 行的玩具版）。",
    )
    parser.add_argument("--heads", default="1,2,4,8,16,32", help="逗号分隔的头数，例如 1,2,4,8,16,32")
    parser.add_argument("--seeds", type=int, default=3, help="每个头数训练几个种子（默认 3）")
    parser.add_argument("--steps", type=int, default=TrainConfig.steps, help="训练步数（默认 700）")
    parser.add_argument("--json", action="store_true", help="输出一个 JSON 对象而不是表格")
    args = parser.parse_args(argv)
    try:
        heads = parse_heads(args.heads)
        result = sweep(heads, args.seeds, cfg=replace(TrainConfig(), steps=args.steps))
    except ValueError as exc:
        parser.error(str(exc))
    except SweepInterrupted as stop:
        done = [r["h"] for r in stop.result.results]
        if done:
            print(accuracy_numbers_text(stop.result.results))
        shown = f"训练完的头数 {done} 见上表" if done else "还没有哪个头数训练完"
        print(f"训练被中断：{shown}；没训练完的头数：{stop.missing}。", file=sys.stderr)
        return 130  # the shell's code for "ended by Ctrl-C"
    if args.json:
        out = result.as_json()
        out["config"] = {"task": asdict(result.task), "train": asdict(result.config), "seeds": args.seeds}
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(accuracy_numbers_text(result.results))
        print(f"共 {result.total_seconds:.1f} 秒（{len(heads)} 个头数 × {args.seeds} 个种子）")
    return 0
