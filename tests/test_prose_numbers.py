"""Hold the whole lesson's prose to lesson_lib: every number any section's markdown states about shapes, counts
and the paper is recomputed here from lesson_lib (or lesson_lib.paper, the cited table) and compared. A claim that
lives in one section's sentences is tested in that section's file (tests/test_sNN_*.py); here are the ones checked
across every section (every d_model, h, d_k, n² and BLEU the lesson writes) and the paper's own words.

A sentence is found by structure (the prose after the cell that prints its numbers, a section, an ASCII token
it holds), not by its Chinese words, and its numbers are compared in order (tests/helpers.py: numbers_in,
assert_numbers); each claim requires its sentence, so deleting one cannot make the check pass vacuously.
"""

from __future__ import annotations

import importlib.util
import re
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import (
    sentences,
)

from lesson_lib import costs, paper
from lesson_lib.attention import head_width
from lesson_lib.sections import s04_costs as sections_s04_costs

ROOT = Path(__file__).resolve().parents[1]


def _build_module():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def markdown() -> str:
    cells = _build_module().source_cells()
    return "\n\n".join(c["source"] for c in cells if c["kind"] == "md")


@pytest.fixture(scope="module")
def lines(markdown) -> list[str]:
    return markdown.splitlines()


def _lab_markdown(name: str) -> str:
    """The prose of one optional lab (notebooks/labs_src/<name>), where §6's and §7's depth now lives."""
    build = _build_module()
    cells = build.source_cells(src=build.NOTEBOOKS[name][0])
    return "\n\n".join(c["source"] for c in cells if c["kind"] == "md")


@pytest.fixture(scope="module")
def real_heads_lab() -> str:
    return _lab_markdown("lab_real_heads")


@pytest.fixture(scope="module")
def ablation_lab() -> str:
    return _lab_markdown("lab_ablation")


D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
D_K = head_width(D, H)
TABLE3 = paper.TABLE3
BASE = next(r for r in TABLE3 if r["row"] == "base")
SINGLE = next(r for r in TABLE3 if r["row"] == "A" and r["h"] == 1)
BEST_BLEU = max(r["bleu"] for r in TABLE3)
MINILM_WIDTH, MINILM_HEADS, MINILM_LAYERS = 384, 12, 6  # config.json of the weights package; checked below
MODERN_WIDTH = 8192  # §8's follow-up: today's model size; tests/test_s04_costs.py holds the cell to it


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def _matches(pattern, text):
    found = list(re.finditer(pattern, text))
    assert found, f"the prose no longer contains {pattern!r}: update the claim in this test on purpose"
    return found


# ---------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------


def test_base_width_and_heads(markdown):
    for m in _matches(r"d_model\s*=\s*(\d+)", markdown):
        assert _num(m.group(1)) in (D, MINILM_WIDTH, MODERN_WIDTH), m.group(0)
    for m in _matches(r"\bh\s*=\s*(\d+)", markdown):
        h = _num(m.group(1))
        assert D % h == 0, f"the prose mentions h = {h}, which does not divide d_model = {D}"


def test_every_h_and_d_k_pair_fits_d_model(markdown):
    """'h = 32 … d_k = 16' in one sentence: d_k must be d_model / h (or a Table 3 row (B) pair, which varies d_k
    alone)."""
    table_pairs = {(r["h"], r["d_k"]) for r in TABLE3}
    pairs = 0
    for sentence in sentences(markdown):
        for m in re.finditer(r"\bh\s*=\s*(\d+).{0,40}?d_k\s*=\s*(\d+)", sentence):
            h, d_k = _num(m.group(1)), _num(m.group(2))
            pairs += 1
            assert d_k == head_width(D, h) or (h, d_k) in table_pairs, f"{m.group(0)!r}: d_k should be {D // h}"
    assert pairs >= 1


def test_base_head_width_is_computed(markdown):
    """Every 'd_k = N' or 'd_k = d_v = N' without an h nearby is either the base model's or a Table 3 width."""
    widths = {head_width(D, h) for h in range(1, 65) if D % h == 0} | {r["d_k"] for r in TABLE3}
    widths.add(MINILM_WIDTH // MINILM_HEADS)
    found = _matches(r"d_k\s*=\s*(?:d_v\s*=\s*)?(\d+)", markdown)
    assert any(_num(m.group(1)) == D_K for m in found)
    for m in found:
        assert _num(m.group(1)) in widths, m.group(0)


def test_arithmetic_in_prose_is_right(markdown, real_heads_lab, ablation_lab):
    """'a × b = c' and 'a / b = c' anywhere in the prose of the core and the labs."""
    checked = 0
    text = "\n\n".join([markdown, real_heads_lab, ablation_lab])
    for m in re.finditer(r"(?<![\d.])(\d+)\s*[×x]\s*(\d+)\s*=\s*(\d+)(?![\d.²n])", text):
        a, b, c = map(_num, m.groups())
        assert a * b == c, m.group(0)
        checked += 1
    for m in re.finditer(r"(?<![\d.])(\d+)\s*/\s*(\d+)\s*=\s*(\d+)(?![\d.])", text):
        a, b, c = map(_num, m.groups())
        assert Fraction(a, b) == c, m.group(0)
        checked += 1
    assert checked >= 1


# ---------------------------------------------------------------------------------------------
# Counts
# ---------------------------------------------------------------------------------------------


def test_512_n_squared(markdown):
    """The lesson's 512n² and 8 × 64n² are the scores step of lesson_lib.sections.s04_costs."""
    one_head = costs.count(1, D, 1).scores  # multiplies of QKᵀ with n = 1: the coefficient of n²
    per_head = costs.count(1, D_K, 1).scores
    assert one_head == D and per_head == D_K and H * per_head == one_head
    for m in _matches(r"(\d+)n²", markdown):
        assert _num(m.group(1)) in (one_head, per_head), m.group(0)
    assert f"{H} × ((n × {D_K}) × ({D_K} × n)) = **{one_head}n²**" in markdown


# Each closed form the prose writes, as the lesson_lib field it names, evaluated on awkward sizes.
FORMULAS = {
    "3·n·d²": ("qkv_projections", lambda n, d, h: 3 * n * d * d),
    "n²·d": ("scores", lambda n, d, h: n * n * d),
    "n·d²": ("output_projection", lambda n, d, h: n * d * d),
    "h·n²": ("softmax_exp", lambda n, d, h: h * n * n),
    "4·n·d² + 2·n²·d": ("matmul_total", lambda n, d, h: 4 * n * d * d + 2 * n * n * d),
    "3·h·n²": ("softmax_total", lambda n, d, h: 3 * h * n * n),
}


@pytest.mark.parametrize("formula", FORMULAS)
def test_closed_forms_in_prose_match_flops(markdown, formula):
    assert formula in markdown
    field, closed = FORMULAS[formula]
    for n, d, h in [(7, 12, 3), (50, 512, 8), (3, 64, 64)]:
        assert getattr(costs.count(n, d, h), field) == closed(n, d, h)


def test_parameter_count_in_prose(markdown):
    params = costs.parameters(D, H)
    assert all(costs.parameters(D, h) == params for h in (1, 2, 4, 8, 16, 32, 64))
    found = _matches(r"(\d{1,3}(?:,\d{3})+) = 4 × (\d+)²", markdown)
    for m in found:
        assert _num(m.group(1)) == params == 4 * _num(m.group(2)) ** 2


# ---------------------------------------------------------------------------------------------
# The paper
# ---------------------------------------------------------------------------------------------


def test_single_head_bleu_gap(markdown):
    """Every 「x.y BLEU」 gap a learner reads (prose, and §8's reference answer the widget reveals) is Table 3's."""
    from lesson_lib.practice import questions

    gap = round(BEST_BLEU - SINGLE["bleu"], 1)
    answer = questions.question("面试").key.model_answer
    for m in _matches(r"(\d+\.\d)\s*(?:[^\x00-\x7f]\s*)?BLEU", markdown + "\n" + answer):
        assert float(m.group(1)) == gap, m.group(0)


def test_bleu_and_perplexity_values_come_from_table3(lines):
    bleus = {r["bleu"] for r in TABLE3}
    ppls = {r["ppl"] for r in TABLE3}
    seen = 0
    for line in lines:
        if "BLEU" in line:
            for m in re.finditer(r"(?<![\d.])(2\d\.\d)(?![\d])", line):
                assert float(m.group(1)) in bleus, f"{m.group(0)} in {line[:60]!r}"
                seen += 1
        if "PPL" in line:
            for m in re.finditer(r"(?<![\d.])([45]\.\d\d)(?![\d])", line):
                assert float(m.group(1)) in ppls, f"{m.group(0)} in {line[:60]!r}"
                seen += 1
    assert seen >= 1


QUOTES = (  # the paper's words, verbatim (§3.2.2 and §3.2.2's last sentence)
    "Multi-head attention allows the model to jointly attend to information from different representation "
    "subspaces at different positions. With a single attention head, averaging inhibits this.",
    "Due to the reduced dimension of each head, the total computational cost is similar to that of "
    "single-head attention with full dimensionality.",
)


def test_paper_quotes_are_verbatim_and_attributed(markdown):
    for quote in QUOTES:
        assert quote in markdown
    assert len(re.findall(r"Vaswani\W+\w+\W+2017", markdown)) >= 3  # Vaswani 等，2017


# ---------------------------------------------------------------------------------------------
# One formula, one definition, one claim, wherever the lesson states them
# ---------------------------------------------------------------------------------------------


def test_formula_1_is_shown_numbered_before_it_is_cited(markdown):
    display = re.search(
        r"\$\$\\mathrm\{Attention\}\(Q, K, V\) = \\mathrm\{softmax\}.*?\\sqrt\{d_k\}.*?V \\qquad \(1\)\$\$", markdown)
    assert display, "the paper's formula (1) should be displayed with its number"
    cited = [m.start() for m in re.finditer(r"(?<!\\qquad )\(1\)", markdown)]  # every (1) but the display's
    assert cited and min(cited) > display.start() - 40  # cited no earlier than the sentence that introduces it


def test_softmax_work_has_one_definition_used_everywhere(markdown):
    """§4 defines 'softmax 工作量' once as 3·h·n² (costs.count's softmax_total); later uses give the same formula."""
    name, formula = costs.SOFTMAX_WORK, costs.SOFTMAX_WORK_FORMULA
    defined = [s for s in sentences(markdown) if f"**{name}**" in s]
    assert len(defined) == 1 and formula in defined[0], defined
    c = costs.count(7, 12, 3)
    assert c.softmax_total == c.scaling + c.softmax_exp + c.softmax_div == 3 * 3 * 7 * 7
    uses = [m for s in sentences(markdown) for m in re.finditer(rf"{name}.{{0,30}}?(\d·h·n²|h·n²)", s)]
    assert len(uses) >= 2 and all(m.group(1) == formula for m in uses), [m.group(0) for m in uses]
    assert sections_s04_costs.format_table(50, 512, [8]).splitlines()[0].endswith(f"{name} {formula}")
    from lesson_lib.sections import s05_head_lab as head_lab

    assert name in head_lab.comparison_table(heads=(8,)).splitlines()[0]


def test_no_multiply_is_added_by_more_heads():
    """§0: 「矩阵乘法一次也不多做」: matmul_total is the same for every h (and for awkward sizes)."""
    for n, d in [(7, 12), (50, 512)]:
        assert len({costs.count(n, d, h).matmul_total for h in range(1, d + 1) if d % h == 0}) == 1


