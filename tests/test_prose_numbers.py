"""Hold the lesson's prose to lesson_lib: every number the markdown states about shapes, counts and the
paper is recomputed here from lesson_lib (or lesson_lib.paper, the cited table) and compared.

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
    BRACKET,
    assert_numbers,
    in_order,
    lesson_cells,
    numbers_in,
    numerals_in,
    prose_after,
    prose_before,
    section_prose,
    sentence_with,
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


@pytest.fixture(scope="module")
def cells() -> list[dict]:
    return lesson_cells()


@pytest.fixture(scope="module")
def ablation_cells() -> list[dict]:
    return lesson_cells("lab_ablation")


D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
D_K = head_width(D, H)
TABLE3 = paper.TABLE3
BASE = next(r for r in TABLE3 if r["row"] == "base")
SINGLE = next(r for r in TABLE3 if r["row"] == "A" and r["h"] == 1)
BEST_BLEU = max(r["bleu"] for r in TABLE3)
MINILM_WIDTH, MINILM_HEADS, MINILM_LAYERS = 384, 12, 6  # config.json of the weights package; checked below
MODERN_WIDTH = 8192  # §8's follow-up: today's model size; tests/test_kv_sharing.py holds the cell to it


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


def test_ablation_lab_sizes_are_the_toys(ablation_lab, ablation_cells):
    """The lab's toy is narrower than the paper: 「h = 16（每头 2 维）」 and 「d_k = 1」 are d_model = 32 divided by h;
    the prose after the 1-wide cell names the task's K (64 key symbols) and the d_k = 1 model's h (32)."""
    from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK

    toy_d = DEFAULT_CONFIG.d_model
    for m in _matches(rf"\bh = (\d+){BRACKET}\D*?(\d+)", ablation_lab):  # h = 16 and its width in brackets
        assert head_width(toy_d, int(m.group(1))) == int(m.group(2)), m.group(0)
    for m in _matches(r"d_k = (\d+)", ablation_lab):
        assert int(m.group(1)) in {head_width(toy_d, h) for h in range(1, toy_d + 1) if toy_d % h == 0} | {
            r["d_k"] for r in TABLE3}, m.group(0)
    said = prose_after(ablation_cells, "monotone_score_text()")
    assert_numbers(said, DEFAULT_TASK.K, toy_d // 1)  # K key symbols; h = 32, the d_k = 1 model


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


def test_section_3_says_what_the_batch_cell_prints(markdown, cells):
    """§3: 「(B, n, d_model)」 and the PyTorch view(B, n, h, d_k).transpose(1, 2) give the kernel's batched shapes."""
    import numpy as np

    from lesson_lib.attention import merge_heads, split_heads

    assert "(B, n, d_model)" in markdown and ".view(B, n, h, d_k).transpose(1, 2)" in markdown
    x = np.zeros((2, 6, D))
    assert split_heads(x, H).shape == (2, H, 6, D_K) and merge_heads(split_heads(x, H)).shape == x.shape
    said = sentences(prose_before(cells, "heads_mix_text("))[-1]  # 再改动其他 7 个头的查询矩阵，看头 1 变不变
    assert numbers_in(said) == [H - 1, 1], said


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


def test_figure_pages(markdown, real_heads_lab):
    """The real-heads lab gives the appendix's three figures one page range: the first to the last figure's page."""
    pages = paper.FIGURE_PAGES
    said = sentence_with(real_heads_lab, "Attention Visualizations")  # the appendix's title
    assert len(pages) in numerals_in(said)  # 三张图
    assert_numbers(said, paper.APPENDIX_LAYER, paper.LAYERS, min(pages.values()), max(pages.values()))


QUOTES = (  # the paper's words, verbatim (§3.2.2 and §3.2.2's last sentence)
    "Multi-head attention allows the model to jointly attend to information from different representation "
    "subspaces at different positions. With a single attention head, averaging inhibits this.",
    "Due to the reduced dimension of each head, the total computational cost is similar to that of "
    "single-head attention with full dimensionality.",
)


def test_paper_quotes_are_verbatim_and_attributed(markdown):
    for quote in QUOTES:
        assert quote in markdown
    assert markdown.count("Vaswani et al., 2017") >= 3


def test_minilm_facts_match_its_config():
    import json

    from lesson_lib.models.pretrained import minilm as pretrained

    folder = pretrained.PACKAGE.folder()
    if folder is None:
        pytest.skip("weights package not installed (its config is where these numbers come from)")
    config = json.loads((folder / "config.json").read_text())
    assert (config["hidden_size"], config["num_attention_heads"], config["num_hidden_layers"]) == (
        MINILM_WIDTH, MINILM_HEADS, MINILM_LAYERS)


BIG_D_MODEL, BIG_HEADS = 1024, 16  # the paper's Table 3 "big" row (not in lesson_lib.paper, which keeps base/(A)/(B))


def test_minilm_table_in_the_real_heads_lab(real_heads_lab):
    """The lab's comparison table: the paper's base (or big) model beside MiniLM's config; 72 heads = 6 × 12."""
    def row(name):  # the numbers of one table row, in order
        line = next(x for x in real_heads_lab.splitlines() if x.startswith(f"| {name} |"))
        return [int(v) for v in re.findall(r"\d+", line.removeprefix(f"| {name} |"))]

    assert row("d_model") == [D, BIG_D_MODEL, MINILM_WIDTH]
    assert row("每层头数") == [H, BIG_HEADS, MINILM_HEADS]
    assert row("层数") == [paper.LAYERS, MINILM_LAYERS]
    assert head_width(BIG_D_MODEL, BIG_HEADS) == D_K
    assert MINILM_LAYERS * MINILM_HEADS in numbers_in(real_heads_lab)  # 72 heads screened


def test_e5_sizes_in_section_6(markdown):
    """§6: 「12 层、每层 12 个头，共 144 个头，每头宽度 d_k = 32」 is multilingual-e5-small's config."""
    said = sentence_with(markdown, "multilingual-e5-small", "d_k = ")
    layers, heads, total, d_k = numbers_in(said)[:4]
    assert layers * heads == total and d_k == MINILM_WIDTH // heads  # e5-small is 384 wide, like MiniLM


# ---------------------------------------------------------------------------------------------
# Sentences about what a cell prints or shows (§2, §4, §5, §8)
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


def test_projection_shares_in_section_4(cells):
    """'n = 32 时……占矩阵乘法的 97%' / 'n = 256 时投影只占 80%': projections_share at the timing cell's two n."""
    source = "\n".join(c["source"] for c in cells if c["kind"] == "code")
    timed = [int(n) for n in re.search(r"timing_text\(ns=\[(\d+), (\d+)\]", source).groups()]
    said = prose_after(cells, "timing_text(ns=")
    found = [numbers_in(s) for s in sentences(said) if s.startswith("n = ") and "%" in s]
    assert [int(f[0]) for f in found] == timed, found
    for n, *_, share in found:
        assert round(100 * costs.count(int(n), D, H).projections_share) == share, found


def test_section_4_says_nothing_about_timing_that_the_reading_does_not_compute(cells, monkeypatch):
    """The timing differs on every machine: §4's prose states no ratio; the printed reading says either way."""
    said = prose_after(cells, "timing_text(ns=").split("\n\n")[0]  # its numbers: the two n and their shares only
    assert numbers_in(said) == [32, round(100 * costs.count(32, D, H).projections_share),
                                256, round(100 * costs.count(256, D, H).projections_share)]
    after = section_prose(cells, 4).split(said)[1]
    assert not re.search(r"\d(?:\.\d)?\s*×(?!\s*\()", after)
    def reading(times):  # the line timing_text prints after the measured times
        monkeypatch.setattr(sections_s04_costs, "time_kernel", lambda **_: times)
        return sections_s04_costs.timing_text(ns=[512], d_model=D, heads=list(times)).splitlines()[-1]

    slow, fast = reading({1: 0.010, 8: 0.020, 64: 0.100}), reading({1: 0.010, 8: 0.011, 64: 0.100})
    assert numbers_in(slow) == [512, 1, 1, 8, 2.0, 64, 10.0, 8, 1]  # n; h = 1 is 1; each h's ratio; the verdict's h
    assert numbers_in(fast) == [512, 1, 1, 8, 1.1, 64, 10.0, 8, 1]
    verdict = [sentences(r)[-1] for r in (slow, fast)]  # "在这台电脑上，h = 8 …" names the two h either way
    assert verdict[0] != verdict[1] and all("h = 8" in v and "h = 1" in v for v in verdict), verdict


def test_interview_asks_before_it_shows_an_answer(markdown):
    """§8 asks first: no sentence of the answer is printed above the self-check; the prose before it names each of
    the widget's buttons."""
    from lesson_lib.practice import questions
    from lesson_lib.practice import widgets as quiz_widgets
    from lesson_lib.practice.progress import Progress

    text = "\n\n".join(c["source"] for c in _build_module().source_cells())
    ask = text.index("interview_self_check()")
    section = text[text.index("## 8 ") : ask]
    answer = [s for s in sentences(questions.question("面试").key.model_answer) if len(s) > 8]
    assert answer and not [s for s in answer if s in section]
    widget = quiz_widgets.interview_self_check(Progress())
    buttons = [widget.submit.description, widget.record_button.description, widget.reveal.description]
    assert all(b.strip() and b in section for b in buttons), buttons


def test_section_2_blend_reading(cells):
    """'四成像女人、三成像男人、三成像一只苹果，主语只剩 0.3' is the single head's blend that §2 prints."""
    from lesson_lib.sections import s02_averaging as averaging

    blend = averaging.blend(averaging.LESSON_WEIGHTS)
    said = sentences(prose_after(cells, "blend_table(averaging.LESSON_WEIGHTS)"))[0]
    tenths = [round(10 * blend[f]) for f in ("女性", "男性", "物品")]  # the order the sentence reads them
    assert in_order(numerals_in(said), tenths), said  # 四成、三成、三成
    assert numbers_in(said) == [round(blend["主语"], 1)]


def test_section_2_demo_reading(cells):
    """'单头读回了小红 0.65、小明 0.29 …… 两个头各拿 0.90' is what demo_text(sharpness=4.0) prints; the prose
    before the cell states that sharpness (锐度固定为 4)."""
    from lesson_lib.sections import s02_averaging as averaging

    one, two = averaging.demo(1, 4.0), averaging.demo(2, 4.0)
    said = prose_after(cells, "demo_text(sharpness=4.0)")
    assert round(two.referent_kept, 2) == round(two.subject_kept, 2)
    assert_numbers(said, round(one.referent_kept, 2), round(one.subject_kept, 2), round(two.referent_kept, 2))
    before = sentence_with(prose_before(cells, "demo_text(sharpness=4.0)"), "softmax")
    assert numbers_in(before) == [4.0], before


def test_section_2_try_it_answer(cells):
    """§2's 试一试 answer, at the widget's sharpness notches (0.5 apart, as the prose says 0 to 10): one head trades
    小明 for 小红 (peak at sharpness 3), never above 100% together; two heads keep both, towards 100%."""
    import numpy as np

    from lesson_lib.sections import s02_averaging as averaging

    low, high = numbers_in(sentence_with(prose_after(cells, "demo_text(sharpness=4.0)"), " / "))[-2:]  # 0 to 10
    notches = np.arange(low, high + 0.25, 0.5)
    one = np.array([[averaging.demo(1, s).referent_kept, averaging.demo(1, s).subject_kept] for s in notches])
    two = np.array([[averaging.demo(2, s).referent_kept, averaging.demo(2, s).subject_kept] for s in notches])
    assert np.all(np.diff(one[:, 0]) > 0)  # 越尖，越只顾「小红」
    peak = int(one[:, 1].argmax())
    answer = sentence_with(prose_after(cells, "demo_widget()"), "%")  # 小明最多 31% 左右（锐度 3 时）
    assert_numbers(answer, round(100 * one[peak, 1]), notches[peak])
    assert np.all(np.diff(one[peak:, 1]) < 0)  # 再尖反而越来越少
    assert np.all(one.sum(axis=1) <= 1 + 1e-12) and not np.any((one > 0.5).all(axis=1))  # 单头不能两个都过半
    np.testing.assert_allclose(two[:, 0], two[:, 1], atol=1e-12)  # 两个头：两条线索一样多
    assert np.all(np.diff(two[:, 0]) > 0) and round(100 * two[-1, 0]) == 100  # 一起趋近 100%


def test_section_3_head_1_does_not_change():
    from lesson_lib.sections import s03_heads as heads

    assert heads.heads_mix_only_at_wo(n=5, d_model=D, h=H)["head1_change"] == 0.0
    line = sentence_with(heads.heads_mix_text(n=5, d_model=D, h=H), "W^Q")  # after changing the others' W^Q
    assert numbers_in(line) == [1, 0.0], line  # head 1 changed by 0


def _keys_and_sharpness(ablation_cells) -> list[float]:
    """「（9 个键，查询长度 × 键长度取 4）」: the sentence that introduces the 1-wide cell."""
    return numbers_in(sentence_with(prose_before(ablation_cells, "monotone_score_text()"), "`softmax`"))


def test_ablation_lab_one_dimension_picks_an_end(ablation_cells):
    """The lab: a 1-wide head picks the largest or the smallest of 「9 个键」; with 2 dims any key can win, as
    printed."""
    from lesson_lib.sections.s07_ablation import report as ablation

    printed = ablation.monotone_score_text()
    n_keys = int(_keys_and_sharpness(ablation_cells)[0])
    one_wide = [numbers_in(line) for line in printed.splitlines() if "q = " in line]  # q = ±4, ±1 -> a key
    assert len(one_wide) == 4 and sorted({int(n[-1]) for n in one_wide}) == [1, n_keys]  # from 1: the two ends
    assert str(list(range(1, n_keys + 1))) in printed  # two dims: each key in turn wins


def test_section_5_defines_entropy_and_js_where_it_prints_them(cells):
    """§5 prints 熵（比特） and JS 散度: its prose defines both with their ends, which attention_stats computes."""
    import numpy as np

    from lesson_lib.head_stats import mean_pairwise_js, row_entropy
    from lesson_lib.sections import s05_head_lab as head_lab

    n = len(head_lab.SENTENCE)
    section = section_prose(cells, 5)
    ends = sentence_with(section, "log₂")  # 全压在一个词元上是 0，平均分给 n 个词元是 log₂n ≈ …
    uniform = round(float(row_entropy(np.full((1, n), 1 / n))[0]), 2)
    assert numbers_in(ends)[-4:] == [row_entropy(np.eye(n)[:1])[0], n, n, uniform], ends
    assert numbers_in(sentence_with(section, "**JS")) == [0, 1]  # 完全一样是 0，毫不重叠是 1
    same, apart = np.eye(n)[None, :2].repeat(2, axis=0), np.stack([np.eye(n)[:2], np.eye(n)[2:4]])  # (2, 2, n)
    assert mean_pairwise_js(same) == 0 and mean_pairwise_js(apart) == 1


def test_section_5_try_it_answers(cells):
    """The folded answers to §5's 「试一试」 are lab_state's numbers (the cell prints h = 2 and h = 64)."""
    from lesson_lib.sections import s05_head_lab as head_lab

    s2, s8, s64 = (head_lab.lab_state(h) for h in (2, 8, 64))
    answers = prose_after(cells, ".reading)")  # the folded answers after the cell that prints h = 2 and h = 64
    said = sentence_with(answers, "JS")
    assert_numbers(said, 64, round(s64.diversity_bits, 2), 2, round(s2.diversity_bits, 2))
    assert s64.diversity_bits < s2.diversity_bits
    said = sentence_with(answers, "3·h·n²")  # … 是 8 头的 8 倍（23,232 对 2,904）
    assert_numbers(said, 8, s64.softmax_ops // s8.softmax_ops, s64.softmax_ops, s8.softmax_ops)
    assert s64.softmax_ops % s8.softmax_ops == 0
    assert s64.d_k == D // 64 and s8.parameters == s64.parameters == costs.parameters(D, H)
    assert len({head_lab.lab_state(h).matmul_multiplies for h in (1, 2, 8, 32, 64)}) == 1


def test_no_multiply_is_added_by_more_heads():
    """§0: 「矩阵乘法一次也不多做」: matmul_total is the same for every h (and for awkward sizes)."""
    for n, d in [(7, 12), (50, 512)]:
        assert len({costs.count(n, d, h).matmul_total for h in range(1, d + 1) if d % h == 0}) == 1


def test_ablation_lab_crowded_keys_reading(ablation_cells):
    """「长度乘积为 4 时，64 个键的赢家只拿到很小的权重；要让它集中到一半以上，长度乘积得拉到 200 左右」:
    the printed table's rows at 4 and 200, with the crossing of one half between the rows 16 and 200."""
    import inspect

    from lesson_lib.sections.s07_ablation import report as ablation

    said = sentences(prose_after(ablation_cells, "crowded_keys_text()"))[:2]  # 4 时，64 个键…；…拉到 200 左右
    low, keys = map(int, numbers_in(said[0]))
    (high,) = map(int, numbers_in(said[1]))
    assert low == inspect.signature(ablation.crowded_keys).parameters["sharpness"].default
    assert ablation.crowded_keys((keys,), low)[keys] < 0.1
    assert ablation.crowded_keys((keys,), 16)[keys] < 0.5 < ablation.crowded_keys((keys,), high)[keys] < 0.6
    assert f"{high} " in ablation.crowded_keys_text()
    n_keys, sharp = map(int, _keys_and_sharpness(ablation_cells))
    assert sharp == inspect.signature(ablation.monotone_score_text).parameters["sharpness"].default
    assert n_keys == inspect.signature(ablation.monotone_score_text).parameters["points"].default
