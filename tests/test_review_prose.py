"""Sentences of the lesson about outputs beside them that no other test held (found reading it as a learner)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lesson_lib import pretrained as pt
from lesson_lib.pretrained import minilm

SRC = Path(__file__).parents[1] / "notebooks" / "src"
SECTION_6 = (SRC / "06_real_heads.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def making_scores():
    if not pt.available():
        pytest.skip(f"weights package {pt.PACKAGE} not installed: {pt.INSTALL_COMMAND}")
    run = pt.load().encode(pt.PAPER_SENTENCES["making"])
    return run, pt.phrase_scores(run.attentions, run.tokens, "making", ["more", "difficult"])


def test_weights_size_in_prose_is_the_file_size():
    """'用内存映射把 91 MB 的权重"挂"上来': the safetensors file in the weights package, in decimal MB."""
    mb = int(re.search(r"把 (\d+) MB 的权重", SECTION_6).group(1))
    folder = minilm.model_dir()
    if folder is None:
        pytest.skip("weights package not installed")
    assert round((Path(folder) / "model.safetensors").stat().st_size / 1e6) == mb


def test_load_time_is_not_promised_as_a_number():
    """Loading hashes 91 MB: its time follows the machine, so the prose gives an order, not a figure."""
    assert not re.search(r"约 \d+(\.\d+)? 秒", SECTION_6)
    assert "通常不到一秒" in SECTION_6


def test_making_heads_sit_in_several_layers_and_skip_five_words(making_scores):
    """'这些头分散在不同的层' and '中间隔着 the registration or voting process 五个词'."""
    run, scores = making_scores
    listed = pt.rank_heads({"making": scores}, top=6)["making"]  # the six heads making_figure prints
    assert len({layer for layer, _head, _score in listed}) >= 3
    gap = run.tokens[run.tokens.index("making") + 1 : run.tokens.index("more")]
    assert gap == "the registration or voting process".split() and "五个词" in SECTION_6
