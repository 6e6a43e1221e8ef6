"""§6's self-test question about the Chinese pronoun head, declared as data for the quiz to render and check.

Shape: one single-choice question, ``answer`` naming the right option's key, ``right_line`` the line shown
after the right choice; each option carries the feedback a learner sees after choosing it. Nothing here
imports the quiz, so the quiz can read this dict however it declares its own questions.
"""

from __future__ import annotations

__all__ = ["QUESTION"]

QUESTION = {
    "id": "S6",
    "section": "第 6 节",
    "kind": "single",
    "prompt": "在「小明把苹果递给了小红，因为她帮过他。」里，有三个头都让「她」偏向小红。"
    "哪个实验最能分清真正跟着代词走的头和只是碰巧看向小红的干扰头？",
    "options": (
        ("A", "把 144 个头按「她 → 小红」的权重排序，取第一名",
         "排序只用了一句话：第 12 层的两个干扰头在这句话上同样排在前三，分不出来。"),
        ("B", "做最小对比：换成「他」、对调名字、换后半句，看头的选择是否跟着代词变",
         "这正是第 6 节做的：第 8 层 · 头 1 在 9 个条件里全部跟着代词走，干扰头一问「他」就照样看小红。"),
        ("C", "看这个头在哪一层：越靠后的层越懂语义",
         "层的位置不是证据：两个干扰头都在最后一层（第 12 层），恰恰不跟着代词走。"),
        ("D", "把那一行的权重加起来，看是否等于 1",
         "每一行的权重加起来总是 1（softmax 的性质），对任何头都成立，什么也分不出来。"),
    ),
    "answer": "B",
    "right_line": "最小对比能把跟着代词走的头和只是碰巧看向小红的干扰头分开。",  # shown after the right choice
    "explanation": "解析：只看一句话，「偏向小红」可能只是「总看红这个字」或「总看最近的名字」。最小对比每次只改一处"
    "（代词、名字的顺序、后半句），真正的代词头会跟着变，干扰头不会。第 8 层 · 头 1 在 9 个条件里全对，"
    "「看最近的名字」只能解释其中 4 个。严格来说：它跟的是性别一致，并不说明模型理解了谁帮了谁。",
}
