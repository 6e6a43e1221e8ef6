"""Hold the lesson's prose to lesson_lib: every number the markdown states about shapes, counts and the
paper is recomputed here from lesson_lib (or lesson_lib.paper, the cited table) and compared.

Each claim also requires at least one match, so deleting or rewording a sentence cannot make the
check pass vacuously; rewording means updating the pattern here, on purpose.
"""

from __future__ import annotations

import importlib.util
import re
from fractions import Fraction
from pathlib import Path

import pytest

from lesson_lib import costs as flops
from lesson_lib import paper
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
MODERN_WIDTH = 8192  # §8's follow-up: today's model size; tests/test_kv_sharing.py holds the cell to it


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def _code() -> str:
    return "\n\n".join(c["source"] for c in _build_module().source_cells() if c["kind"] == "code")


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


def test_every_h_and_d_k_pair_fits_d_model(lines):
    """'h = 32 … d_k = 16' on one line: d_k must be d_model / h (or a Table 3 row (B) pair, which varies d_k alone)."""
    table_pairs = {(r["h"], r["d_k"]) for r in TABLE3}
    pairs = 0
    for line in lines:
        for m in re.finditer(r"\bh\s*=\s*(\d+)[^。\n]{0,40}?d_k\s*=\s*(\d+)", line):
            h, d_k = _num(m.group(1)), _num(m.group(2))
            pairs += 1
            assert d_k == head_width(D, h) or (h, d_k) in table_pairs, f"{m.group(0)!r}: d_k should be {D // h}"
    assert pairs >= 1


def test_ablation_lab_sizes_are_the_toys(ablation_lab):
    """The lab's toy is narrower than the paper: 「h = 16（每头 2 维）」 and 「d_k = 1」 are d_model = 32 divided by h;
    「h = 32 时」 and 「64 个键符号」 are the d_k = 1 model's h and the task's K."""
    from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK

    toy_d = DEFAULT_CONFIG.d_model
    for m in _matches(r"\bh = (\d+)（每头 (\d+) 维）", ablation_lab):
        assert head_width(toy_d, int(m.group(1))) == int(m.group(2)), m.group(0)
    for m in _matches(r"d_k = (\d+)", ablation_lab):
        assert int(m.group(1)) in {head_width(toy_d, h) for h in range(1, toy_d + 1) if toy_d % h == 0} | {
            r["d_k"] for r in TABLE3}, m.group(0)
    m = _matches(r"h = (\d+) 时前一个、后一个照样学会了", ablation_lab)[0]
    assert int(m.group(1)) == toy_d // 1  # the d_k = 1 model
    assert int(_matches(r"(\d+) 个键符号", ablation_lab)[0].group(1)) == DEFAULT_TASK.K


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


def test_section_3_says_what_the_batch_cell_prints(markdown):
    """§3: 「(B, n, d_model)」 and the PyTorch view(B, n, h, d_k).transpose(1, 2) give the kernel's batched shapes."""
    import numpy as np

    from lesson_lib.attention import merge_heads, split_heads

    assert "(B, n, d_model)" in markdown and ".view(B, n, h, d_k).transpose(1, 2)" in markdown
    x = np.zeros((2, 6, D))
    assert split_heads(x, H).shape == (2, H, 6, D_K) and merge_heads(split_heads(x, H)).shape == x.shape
    m = _matches(r"改动其他 (\d+) 个头的查询矩阵", markdown)[0]
    assert int(m.group(1)) == H - 1


# ---------------------------------------------------------------------------------------------
# Counts
# ---------------------------------------------------------------------------------------------


def test_512_n_squared(markdown):
    """The lesson's 512n² and 8 × 64n² are the scores step of lesson_lib.sections.s04_costs."""
    one_head = flops.count(1, D, 1).scores  # multiplies of QKᵀ with n = 1: the coefficient of n²
    per_head = flops.count(1, D_K, 1).scores
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
        assert getattr(flops.count(n, d, h), field) == closed(n, d, h)


def test_parameter_count_in_prose(markdown):
    params = flops.parameters(D, H)
    assert all(flops.parameters(D, h) == params for h in (1, 2, 4, 8, 16, 32, 64))
    found = _matches(r"(\d{1,3}(?:,\d{3})+) = 4 × (\d+)²", markdown)
    for m in found:
        assert _num(m.group(1)) == params == 4 * _num(m.group(2)) ** 2


# ---------------------------------------------------------------------------------------------
# The paper
# ---------------------------------------------------------------------------------------------


def test_single_head_bleu_gap(markdown):
    """Every 「x.y BLEU」 gap a learner reads (prose, and §8's reference answer the widget reveals) is Table 3's."""
    from lesson_lib.practice import interview

    gap = round(BEST_BLEU - SINGLE["bleu"], 1)
    for m in _matches(r"(\d+\.\d)\s*(?:个\s*)?BLEU", markdown + "\n" + interview.model_answer()):
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
        if "困惑度" in line or "PPL" in line:
            for m in re.finditer(r"(?<![\d.])([45]\.\d\d)(?![\d])", line):
                assert float(m.group(1)) in ppls, f"{m.group(0)} in {line[:60]!r}"
                seen += 1
    assert seen >= 1


def test_figure_pages(markdown, real_heads_lab):
    """The real-heads lab gives the appendix's three figures one page range: the first to the last figure's page."""
    pages = paper.FIGURE_PAGES
    m = _matches(r"一共(.)张图[^。]*?（第 (\d+)–(\d+) 页）", real_heads_lab)[0]
    assert "一二三四五"[len(pages) - 1] == m.group(1)
    assert (int(m.group(2)), int(m.group(3))) == (min(pages.values()), max(pages.values()))


QUOTES = (  # the paper's words, verbatim (§3.2.2 and §3.2.2's last sentence)
    "Multi-head attention allows the model to jointly attend to information from different representation "
    "subspaces at different positions. With a single attention head, averaging inhibits this.",
    "Due to the reduced dimension of each head, the total computational cost is similar to that of "
    "single-head attention with full dimensionality.",
)


def test_paper_quotes_are_verbatim_and_attributed(markdown):
    for quote in QUOTES:
        assert f"「{quote}」" in markdown
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
    assert _matches(rf"{MINILM_LAYERS * MINILM_HEADS} 个头", real_heads_lab)


def test_e5_sizes_in_section_6(markdown):
    """§6: 「12 层、每层 12 个头，共 144 个头，每头宽度 d_k = 32」 is multilingual-e5-small's config."""
    m = _matches(r"(\d+) 层、每层 (\d+) 个头，共 (\d+) 个头，每头宽度 d_k = (\d+)", markdown)[0]
    layers, heads, total, d_k = map(int, m.groups())
    assert layers * heads == total and d_k == MINILM_WIDTH // heads  # e5-small is 384 wide, like MiniLM


# ---------------------------------------------------------------------------------------------
# Sentences about what a cell prints or shows (§2, §4, §5, §8)
# ---------------------------------------------------------------------------------------------


def test_formula_1_is_shown_numbered_before_it_is_cited(markdown):
    display = re.search(
        r"\$\$\\mathrm\{Attention\}\(Q, K, V\) = \\mathrm\{softmax\}.*?\\sqrt\{d_k\}.*?V \\qquad \(1\)\$\$", markdown)
    assert display, "the paper's formula (1) should be displayed with its number"
    cited = [m.start() for m in re.finditer(r"公式 \(1\)", markdown)]
    assert cited and min(cited) > display.start() - 40  # cited no earlier than the sentence that introduces it


def test_softmax_work_has_one_definition_used_everywhere(markdown):
    """§4 defines 'softmax 工作量' once as 3·h·n² (flops.count's softmax_total); later uses give the same formula."""
    name, formula = flops.SOFTMAX_WORK, flops.SOFTMAX_WORK_FORMULA
    assert len(_matches(rf"\*\*{name}\*\*，共 {re.escape(formula)}", markdown)) == 1
    c = flops.count(7, 12, 3)
    assert c.softmax_total == c.scaling + c.softmax_exp + c.softmax_div == 3 * 3 * 7 * 7
    uses = _matches(rf"{name}[^。；\n]{{0,30}}?(\d·h·n²|h·n²)", markdown)
    assert len(uses) >= 2 and all(m.group(1) == formula for m in uses), [m.group(0) for m in uses]
    assert sections_s04_costs.format_table(50, 512, [8]).splitlines()[0].endswith(f"{name} {formula}")
    from lesson_lib.sections import s05_head_lab as head_lab

    assert name in head_lab.comparison_table(heads=(8,)).splitlines()[0]


def test_projection_shares_in_section_4(markdown):
    """'n = 32 时……占矩阵乘法的 97%' / 'n = 256 时投影只占 80%': projections_share at the timing cell's two n."""
    source = (ROOT / "notebooks" / "src" / "04_flops.md").read_text(encoding="utf-8")
    timed = [int(n) for n in re.search(r"timing_text\(ns=\[(\d+), (\d+)\]", source).groups()]
    found = _matches(r"n = (\d+) 时[^。；]{0,20}?(?:占矩阵乘法的|投影只占) (\d+)%", markdown)
    assert sorted(int(m.group(1)) for m in found) == timed
    for m in found:
        assert round(100 * flops.count(int(m.group(1)), D, H).projections_share) == int(m.group(2)), m.group(0)


def test_section_4_says_nothing_about_timing_that_the_reading_does_not_compute(markdown, monkeypatch):
    """The timing differs on every machine: §4's prose states no ratio; the printed reading says either way."""
    section = markdown[markdown.index("## 4 "):markdown.index("## 5 ")]
    assert not re.search(r"\d(?:\.\d)?\s*(?:倍|×)(?!\s*\()", section.split("### 真实计时")[1])
    def reading(times):  # the line timing_text prints after the measured times
        monkeypatch.setattr(sections_s04_costs, "time_kernel", lambda **_: times)
        return sections_s04_costs.timing_text(ns=[512], d_model=D, heads=list(times)).splitlines()[-1]

    slow, fast = reading({1: 0.010, 8: 0.020, 64: 0.100}), reading({1: 0.010, 8: 0.011, 64: 0.100})
    assert slow.startswith("n = 512 时，以 h = 1 为 1：h = 8 是 2.0 倍，h = 64 是 10.0 倍。")
    assert "h = 8 明显比 h = 1 慢" in slow and "差不多快" in fast


def test_interview_asks_before_it_shows_an_answer(markdown):
    """§8 asks first: no answer is printed above the self-check; the prose before it names the widget's buttons."""
    from lesson_lib.practice import widgets as quiz_widgets
    from lesson_lib.practice.progress import Progress

    text = "\n\n".join(c["source"] for c in _build_module().source_cells())
    assert "interview_self_check()" in text and "合上" not in markdown
    ask = text.index("interview_self_check()")
    section = text[text.index("## 8 ") : ask]
    assert "**这一课的答法**" not in section and "八股" not in section
    for button in ("「写好了，看要点」", "「记录自评」", "「看参考答案」"):
        assert button in section
    widget = quiz_widgets.interview_self_check(Progress())
    assert [widget.submit.description, widget.record_button.description, widget.reveal.description] == [
        "写好了，看要点", "记录自评", "看参考答案"]


def test_section_2_blend_reading(markdown):
    """'四成像女人、三成像男人、三成像一只苹果，主语只剩 0.3' is the single head's blend that §2 prints."""
    from lesson_lib.sections import s02_averaging as averaging

    blend = averaging.blend(averaging.LESSON_WEIGHTS)
    tenths = {"四": 0.4, "三": 0.3}
    said = _matches(r"有(.)成像女人、(.)成像男人、(.)成像一只苹果，主语只剩 (\d\.\d)", markdown)[0]
    assert [tenths[g] for g in said.groups()[:3]] == [round(blend[f], 1) for f in ("女性", "男性", "物品")]
    assert float(said.group(4)) == round(blend["主语"], 1)


def test_section_2_demo_reading(markdown):
    """'单头读回了小红 0.65、小明 0.29 …… 两个头各拿 0.90' is what demo_text(sharpness=4.0) prints."""
    from lesson_lib.sections import s02_averaging as averaging

    m = _matches(r"单头读回了小红 (\d\.\d\d)、小明 (\d\.\d\d)", markdown)[0]
    one = averaging.demo(1, 4.0)
    assert (round(one.referent_kept, 2), round(one.subject_kept, 2)) == (float(m.group(1)), float(m.group(2)))
    two = averaging.demo(2, 4.0)
    m2 = _matches(r"两个头各拿 (\d\.\d\d)", markdown)[0]
    assert round(two.referent_kept, 2) == round(two.subject_kept, 2) == float(m2.group(1))
    assert "锐度**（这里固定为 4）" in markdown and "demo_text(sharpness=4.0)" in _code()


def test_section_2_try_it_answer(markdown):
    """§2's 试一试 answer, at the widget's sharpness notches (0.5 apart, as the prose says 0 to 10): one head trades
    小明 for 小红 (peak at sharpness 3), never above 100% together; two heads keep both, towards 100%."""
    import numpy as np

    from lesson_lib.sections import s02_averaging as averaging

    low, high = map(int, _matches(r"把锐度从 (\d+) 拖到 (\d+)", markdown)[0].groups())
    notches = np.arange(low, high + 0.25, 0.5)
    one = np.array([[averaging.demo(1, s).referent_kept, averaging.demo(1, s).subject_kept] for s in notches])
    two = np.array([[averaging.demo(2, s).referent_kept, averaging.demo(2, s).subject_kept] for s in notches])
    assert np.all(np.diff(one[:, 0]) > 0)  # 越尖，越只顾「小红」
    peak = int(one[:, 1].argmax())
    m = _matches(r"小明最多 (\d+)% 左右（锐度 (\d+) 时）", markdown)[0]
    assert (round(100 * one[peak, 1]), notches[peak]) == (int(m.group(1)), float(m.group(2)))
    assert np.all(np.diff(one[peak:, 1]) < 0)  # 再尖反而越来越少
    assert np.all(one.sum(axis=1) <= 1 + 1e-12) and not np.any((one > 0.5).all(axis=1))  # 单头不能两个都过半
    np.testing.assert_allclose(two[:, 0], two[:, 1], atol=1e-12)  # 两个头：两条线索一样多
    assert np.all(np.diff(two[:, 0]) > 0) and round(100 * two[-1, 0]) == 100  # 一起趋近 100%


def test_section_3_head_1_does_not_change():
    from lesson_lib.sections import s03_heads as heads

    assert heads.heads_mix_only_at_wo(n=5, d_model=D, h=H)["head1_change"] == 0.0
    assert "头 1 的输出变化：0（一位都没变）" in heads.heads_mix_text(n=5, d_model=D, h=H)


def test_ablation_lab_one_dimension_picks_an_end(ablation_lab):
    """The lab: a 1-wide head picks 「最大或最小的那一端」 of 「9 个键」; with 2 dims any key can win, as printed."""
    from lesson_lib.sections.s07_ablation import report as ablation

    printed = ablation.monotone_score_text()
    n_keys = int(_matches(r"（(\d+) 个键，查询长度 × 键长度取 (\d+)）", ablation_lab)[0].group(1))
    ends = sorted({int(n) for n in re.findall(r"一维：.*第 (\d+) 个键", printed)})
    assert ends == [1, n_keys]  # counted from 1: the two ends
    assert "只能挑所有键里最大或最小的那一端" in ablation_lab
    assert f"依次是 {list(range(1, n_keys + 1))}" in printed


def test_section_5_defines_entropy_and_js_where_it_prints_them(markdown):
    """§5 prints 熵（比特） and JS 散度: its prose defines both with their ends, which attention_stats computes."""
    import numpy as np

    from lesson_lib.head_stats import mean_pairwise_js, row_entropy
    from lesson_lib.sections import s05_head_lab as head_lab

    n = len(head_lab.SENTENCE)
    m = _matches(r"平均分给 (\d+) 个词元是 log₂(\d+) ≈ (\d\.\d\d)", markdown)[0]
    assert int(m.group(1)) == int(m.group(2)) == n
    assert round(float(row_entropy(np.full((1, n), 1 / n))[0]), 2) == float(m.group(3))
    assert "全压在一个词元上是 0" in markdown and row_entropy(np.eye(n)[:1])[0] == 0
    assert "完全一样是 0" in markdown and "毫不重叠是 1" in markdown
    same, apart = np.eye(n)[None, :2].repeat(2, axis=0), np.stack([np.eye(n)[:2], np.eye(n)[2:4]])  # (2, 2, n)
    assert mean_pairwise_js(same) == 0 and mean_pairwise_js(apart) == 1


def test_section_5_try_it_answers(markdown):
    """The folded answers to §5's 「试一试」 are lab_state's numbers (the cell prints h = 2 and h = 64)."""
    from lesson_lib.sections import s05_head_lab as head_lab

    s2, s8, s64 = (head_lab.lab_state(h) for h in (2, 8, 64))
    m = _matches(r"h = 64 的平均 JS 散度（(\d\.\d\d) 比特）反而比 h = 2（(\d\.\d\d) 比特）小", markdown)[0]
    assert (round(s64.diversity_bits, 2), round(s2.diversity_bits, 2)) == (float(m.group(1)), float(m.group(2)))
    assert s64.diversity_bits < s2.diversity_bits
    m = _matches(r"是 8 头的 (\d+) 倍（([\d,]+) 对 ([\d,]+)）", markdown)[0]
    assert (_num(m.group(2)), _num(m.group(3))) == (s64.softmax_ops, s8.softmax_ops)
    assert s64.softmax_ops == int(m.group(1)) * s8.softmax_ops
    assert s64.d_k == D // 64 and s8.parameters == s64.parameters == flops.parameters(D, H)
    assert len({head_lab.lab_state(h).matmul_multiplies for h in (1, 2, 8, 32, 64)}) == 1


def test_no_multiply_is_added_by_more_heads(markdown):
    """§0: 「矩阵乘法一次也不多做」: matmul_total is the same for every h (and for awkward sizes)."""
    assert "矩阵乘法一次也不多做" in markdown
    for n, d in [(7, 12), (50, 512)]:
        assert len({flops.count(n, d, h).matmul_total for h in range(1, d + 1) if d % h == 0}) == 1


def test_ablation_lab_crowded_keys_reading(ablation_lab):
    """「长度乘积为 4 时，64 个键的赢家只拿到很小的权重；要让它集中到一半以上，长度乘积得拉到 200 左右」:
    the printed table's rows at 4 and 200, with the crossing of one half between the rows 16 and 200."""
    import inspect

    from lesson_lib.sections.s07_ablation import report as ablation

    said = r"长度乘积为 (\d+) 时，(\d+) 个键的赢家只拿到很小的权重；要让它集中到一半以上，长度乘积得拉到 (\d+) 左右"
    m = _matches(said, ablation_lab)[0]
    low, keys, high = map(int, m.groups())
    assert low == inspect.signature(ablation.crowded_keys).parameters["sharpness"].default
    assert ablation.crowded_keys((keys,), low)[keys] < 0.1
    assert ablation.crowded_keys((keys,), 16)[keys] < 0.5 < ablation.crowded_keys((keys,), high)[keys] < 0.6
    assert f"{high} " in ablation.crowded_keys_text()
    n_keys, sharp = map(int, _matches(r"（(\d+) 个键，查询长度 × 键长度取 (\d+)）", ablation_lab)[0].groups())
    assert sharp == inspect.signature(ablation.monotone_score_text).parameters["sharpness"].default
    assert n_keys == inspect.signature(ablation.monotone_score_text).parameters["points"].default
