"""lesson_lib.sections.s04_costs (§4, and §8's follow-up table of K/V sharing): what the section prints (the scores
step, the timing and its reading, the MHA/GQA/MQA table), the numbers its prose and the follow-up's state, and its
question (s04_costs.toml). The closed forms it prints are lesson_lib.costs's, tested in test_costs; its code
exercise in test_exercises.

The follow-up's sentences that read the printed tables are recomputed from ``kv_sharing_text``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import (
    assert_chinese_message,
    numbers_in,
    prose_after,
    section_prose,
    sentences,
)
from own_answers import misjudged, section_questions

from lesson_lib import costs, paper
from lesson_lib.sections import s04_costs
from lesson_lib.sections.s04_costs import kv_sharing_text

# ---------------------------------------------------------------------------------------------
# What §4 prints: the scores step, and the kernel timed for several h with its reading
# ---------------------------------------------------------------------------------------------


def assert_chinese(excinfo, *fragments):
    assert isinstance(excinfo.value, ValueError)
    assert_chinese_message(str(excinfo.value), *fragments)


def test_time_kernel_names_the_bad_argument():
    with pytest.raises(ValueError) as excinfo:
        s04_costs.time_kernel(n=4, d_model=8, heads=[2], repeat=0)
    assert_chinese(excinfo, "repeat", "0")


def test_time_kernel_times_each_h_repeat_times_after_one_warm_up(monkeypatch):
    from lesson_lib import attention

    calls = []
    monkeypatch.setattr(attention, "multi_head_attention", lambda x, *ws: calls.append(ws[-1]))
    s04_costs.time_kernel(n=4, d_model=8, heads=[1, 2], repeat=5)
    assert calls == [1] * 6 + [2] * 5


def test_timing_runs_on_one_blas_thread(monkeypatch):
    """§4 compares head counts under the same conditions: one BLAS thread while timing."""
    import contextlib

    entered = []

    @contextlib.contextmanager
    def recording():
        entered.append(True)
        yield

    monkeypatch.setattr(s04_costs, "one_blas_thread", recording)
    s04_costs.time_kernel(n=4, d_model=8, heads=[1, 2], repeat=1)
    assert entered == [True]


def test_scores_text_states_the_lessons_algebra():
    text = s04_costs.scores_text(512, heads=[1, 8])
    numbers = [[int(x) for x in re.findall(r"\d+", line)] for line in text.splitlines()]
    assert numbers == [[1, 512, 1, 512], [8, 64, 8, 512]]  # h, per head, heads, in all: 512n² for every h


def test_timing_text_has_one_line_per_n_then_the_reading():
    text = s04_costs.timing_text(ns=[4, 8], d_model=16, heads=[1, 4], repeat=1)
    lines = text.splitlines()
    assert len(lines) == 3 and lines[0].startswith("n =   4") and "h = 4:" in lines[1] and "ms" in lines[1]
    assert re.match(r"n = 8\D+h = 1\D+1\D+h = 4\D+[\d.]+", lines[2])


def test_timing_reading_is_computed_from_the_times_it_prints(monkeypatch):
    times = {32: {1: 0.001, 8: 0.0011, 64: 0.0015}, 512: {1: 0.012, 8: 0.0318, 64: 0.1285}}
    monkeypatch.setattr(s04_costs, "time_kernel", lambda n, d_model, heads, repeat: times[n])
    lines = s04_costs.timing_text(ns=[32, 512], d_model=512, heads=[1, 8, 64]).splitlines()
    assert re.findall(r"h = (\d+): ([\d.]+) ms", lines[1]) == [("1", "12.0"), ("8", "31.8"), ("64", "128.5")]
    ratios = re.findall(r"h = (\d+) \D+ ([\d.]+) ", lines[2].split("。")[0])
    assert ratios == [("8", "2.6"), ("64", "10.7")]  # 31.8 / 12.0 and 128.5 / 12.0


def test_timing_reading_threshold(monkeypatch):
    """Up to SIMILAR_TIME (1.25) the reading is the 'about as fast' one; above it, the other one."""
    def reading(ratio):
        monkeypatch.setattr(s04_costs, "time_kernel", lambda n, d_model, heads, repeat: {1: 0.01, 8: 0.01 * ratio})
        line = s04_costs.timing_text(ns=[64], d_model=512, heads=[1, 8]).splitlines()[-1]
        return re.sub(r"[\d.]+", "#", line)  # the verdict, without the numbers it quotes

    assert s04_costs.SIMILAR_TIME == 1.25
    assert reading(1.0) == reading(1.25) != reading(1.26)


def test_timing_of_one_head_count_has_no_reading():
    assert len(s04_costs.timing_text(ns=[4], d_model=16, heads=[1], repeat=1).splitlines()) == 1
    assert s04_costs.timing_text(ns=[], d_model=16, heads=[1, 8]) == ""


# ---------------------------------------------------------------------------------------------
# §8's follow-up: the table of K/V sharing (kv_sharing_text) and the sentences that read it
# ---------------------------------------------------------------------------------------------


FOLLOW_UPS = (Path(__file__).parents[1] / "notebooks" / "src" / "08c_follow_ups.md").read_text(encoding="utf-8")


def test_table_prints_the_computed_values():
    text = kv_sharing_text(8192, 64, 8)
    for v in costs.variants(8192, 64, 8):
        line = next(row for row in text.splitlines() if row.startswith(v.name))
        assert f"{v.projection_params:,}" in line and f"{v.cache_per_token:,}" in line
    assert text.splitlines()[-2].endswith("1/8") and text.splitlines()[-1].endswith("1/64")


@pytest.mark.parametrize("groups", [8, 1])
def test_a_choice_of_g_that_is_mha_or_mqa_prints_each_row_once(groups):
    *body, same = kv_sharing_text(512, 8, groups).splitlines()[3:]
    assert [int(row.split()[1]) for row in body] == [8, 1]  # g of each row: MHA, MQA
    assert f"g = {groups}" in same  # a last line says which of the two rows the choice is


@pytest.mark.parametrize("args", [(512, 8, 2), (8192, 64, 8)])
def test_table_fits_a_592_px_output(args):
    """Printed text must fit 72 monospace columns (CJK characters count 2) so JupyterLab does not wrap it."""
    from lesson_lib.show.tables import display_width

    assert max(display_width(line) for line in kv_sharing_text(*args).splitlines()) <= 72


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


# ---------------------------------------------------------------------------------------------
# The prose: numbers read back from the section's sentences (found by structure) and recomputed
# ---------------------------------------------------------------------------------------------


D, H = paper.BASE_D_MODEL, paper.BASE_HEADS


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
        monkeypatch.setattr(s04_costs, "time_kernel", lambda **_: times)
        return s04_costs.timing_text(ns=[512], d_model=D, heads=list(times)).splitlines()[-1]

    slow, fast = reading({1: 0.010, 8: 0.020, 64: 0.100}), reading({1: 0.010, 8: 0.011, 64: 0.012})
    assert numbers_in(slow) == [512, 1, 1, 8, 2.0, 64, 10.0, 64, 1]  # n; h = 1 is 1; each h's ratio; the verdict's h
    assert numbers_in(fast) == [512, 1, 1, 8, 1.1, 64, 1.2, 1, 64]
    verdict = [sentences(r)[-1] for r in (slow, fast)]  # "在这台电脑上，h = 64 …" names the two h either way
    assert verdict[0] != verdict[1] and all("h = 64" in v and "h = 1" in v for v in verdict), verdict


@pytest.mark.parametrize(
    ("times", "read"),
    [
        ({1: 10, 8: 12, 64: 12.4}, "alike"),  # all within SIMILAR_TIME of h = 1
        ({1: 10, 8: 12, 64: 30}, "slower"),
        ({1: 10, 8: 9, 64: 30}, "slower"),  # h = 8 a little below h = 1: noise, not a disturbance
        ({1: 29.3, 8: 53.4, 64: 34.4}, "disturbed"),  # a learner's busy machine: h = 64 clearly below h = 8
        ({1: 30, 8: 12, 64: 13}, "disturbed"),
    ],
)
def test_the_timing_verdict_reads_every_measurement(times, read):
    """The verdict after the timings is worded from all of them: a series whose larger h is clearly faster
    (more heads never do less work) says the timing was disturbed; it names no h then."""
    kinds = {
        "alike": s04_costs.timing_verdict({1: 1, 8: 1, 64: 1}),
        "slower": s04_costs.timing_verdict({1: 1, 8: 2, 64: 3}),
        "disturbed": s04_costs.timing_verdict({1: 3, 8: 1, 64: 1}),
    }
    said = re.sub(r"h = \d+", "h", s04_costs.timing_verdict(times))  # which sentence, whichever h it names
    assert said == re.sub(r"h = \d+", "h", kinds[read])
    assert ("h = " in s04_costs.timing_verdict(times)) == (read != "disturbed")


# ---------------------------------------------------------------------------------------------
# The section's questions (sections/s04_costs.toml), each against the answers kept in its data
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", section_questions("s04_costs.toml"), ids=lambda q: q.id)
def test_each_question_judges_its_own_answers(question, monkeypatch):
    assert misjudged(question, monkeypatch) == []
