"""§8's second follow-up: parameters and key/value cache of MHA, GQA and MQA, held to their closed forms.

The closed forms are written out here independently (weights of W^Q, W^K, W^V, W^O; g keys and g
values of width d_k per token), evaluated on awkward sizes, and the sentences of the follow-up that
read the printed tables are recomputed from ``kv_sharing_text``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lesson_lib import costs
from lesson_lib.sections.s04_costs import kv_sharing_text

FOLLOW_UPS = (Path(__file__).parents[1] / "notebooks" / "src" / "08c_follow_ups.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("d", "h", "g"), [(512, 8, 8), (512, 8, 2), (512, 8, 1), (12, 6, 3), (8192, 64, 8), (7, 1, 1)])
def test_closed_forms(d, h, g):
    d_k = d // h
    r = costs.kv_sharing(d, h, g)
    w_q = w_o = d * d  # queries keep h heads; W^O reads h·d_v = d columns
    w_k = w_v = d * g * d_k  # g key and g value heads
    assert r.projection_params == w_q + w_k + w_v + w_o
    assert r.cache_per_token == g * d_k + g * d_k  # keys + values
    assert (r.kv_heads, r.d_k) == (g, d_k)


@pytest.mark.parametrize("h", [1, 2, 8, 16, 64])
def test_multi_head_is_the_lesson_count(h):
    """g = h is plain multi-head attention: 4·d_model² weights, whatever h (costs.parameters)."""
    assert costs.kv_sharing(512, h, h).projection_params == costs.parameters(512, h) == 4 * 512**2


def test_variants_order_and_names():
    mha, gqa, mqa = costs.variants(512, 8, 2)
    assert [v.kv_heads for v in (mha, gqa, mqa)] == [8, 2, 1]
    assert "MHA" in mha.name and "GQA" in gqa.name and "MQA" in mqa.name
    assert re.findall(r"\d+", gqa.name) == ["2"]  # its number of key/value groups
    assert mha.cache_per_token == 4 * gqa.cache_per_token == 8 * mqa.cache_per_token


def test_table_prints_the_computed_values():
    text = kv_sharing_text(8192, 64, 8)
    for v in costs.variants(8192, 64, 8):
        line = next(row for row in text.splitlines() if row.startswith(v.name))
        assert f"{v.projection_params:,}" in line and f"{v.cache_per_token:,}" in line
    assert text.splitlines()[-2].endswith("1/8") and text.splitlines()[-1].endswith("1/64")


@pytest.mark.parametrize("args", [(512, 8, 2), (8192, 64, 8)])
def test_table_fits_a_592_px_output(args):
    """Printed text must fit 72 monospace columns (CJK characters count 2) so JupyterLab does not wrap it."""
    from lesson_lib.show.tables import display_width

    assert max(display_width(line) for line in kv_sharing_text(*args).splitlines()) <= 72


@pytest.mark.parametrize(("args", "fragments"), [
    ((512, 8, 3), ["kv_heads = 3", "h = 8"]),
    ((512, 8, 16), ["kv_heads", "16"]),
    ((512, 8, 0), ["kv_heads", "0"]),
    ((512, 3, 1), ["3"]),
    ((512, 8, True), ["kv_heads"]),
])
def test_bad_arguments_get_a_chinese_error(raises_chinese, args, fragments):
    raises_chinese(lambda: costs.kv_sharing(*args), *fragments)


def test_follow_up_cell_and_sentences_match_the_tables():
    calls = re.findall(r"kv_sharing_text\(d_model=(\d+), h=(\d+), groups=(\d+)\)", FOLLOW_UPS)
    assert [tuple(map(int, c)) for c in calls] == [(512, 8, 2), (8192, 64, 8)]
    assert re.search(r"d_model = 512\W+h = 8\b", FOLLOW_UPS)  # the two settings the cells print, as the prose says
    assert re.search(r"d_model = 8192\W+64\D+8\D", FOLLOW_UPS)
    mha, gqa, mqa = costs.variants(8192, 64, 8)
    ratios = [mha.cache_per_token // gqa.cache_per_token, mha.cache_per_token // mqa.cache_per_token]
    said = [int(x) for x in re.findall(r"\b1/(\d+)", FOLLOW_UPS)]
    assert any(said[i:i + 2] == ratios for i in range(len(said)))  # grouped 1/8, multi-query 1/64 of the cache
    assert mha.projection_params > gqa.projection_params > mqa.projection_params  # 「投影参数也少了一些」
    assert "2·d² + 2·d·g·d_k" in FOLLOW_UPS and "2·g·d_k" in FOLLOW_UPS and "4·d²" in FOLLOW_UPS


def test_follow_up_cites_the_papers():
    for authors, year in (("Michel", 2019), ("Voita", 2019), ("Shazeer", 2019), ("Ainslie", 2023)):
        assert re.search(rf"{authors}\b.{{0,30}}\b{year}\b", FOLLOW_UPS, re.S), authors
    assert "Are Sixteen Heads Really Better than One?" in FOLLOW_UPS
    # Voita et al. 2019, abstract (En–Ru WMT): 38 of 48 heads pruned, BLEU down 0.15
    assert re.search(r"\b48\D+38\D+BLEU\D+0\.15\b", FOLLOW_UPS)
