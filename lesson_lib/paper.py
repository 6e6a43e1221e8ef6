"""Facts from "Attention Is All You Need" (Vaswani et al. 2017, arXiv 1706.03762), checked against
its v5 and v7 PDFs: each number the code uses has its one home here (prose-only ones: in tests)."""

# The base model (§3.2.2, Table 3 row "base"). d_k = d_v = d_model / h is computed, never stored:
# lesson_lib.attention.head_width(BASE_D_MODEL, BASE_HEADS).
BASE_D_MODEL = 512
BASE_HEADS = 8

# Table 3 (p. 9; English→German newstest2013, per-wordpiece perplexity, no variance reported), rows
# "base", (A) and (B). d_model = 512 in every row. (A) varies h with d_k = d_v = 512 / h, so
# computation stays constant; the paper leaves its params column blank ("same as base": 4·d_model²
# projection weights for any h), recorded here as None. (B) keeps h = 8 and shrinks only d_k (d_v
# stays 64), so the parameter count drops.
TABLE3 = [
    dict(row="base", h=8, d_k=64, d_v=64, ppl=4.92, bleu=25.8, params_m=65),
    dict(row="A", h=1, d_k=512, d_v=512, ppl=5.29, bleu=24.9, params_m=None),
    dict(row="A", h=4, d_k=128, d_v=128, ppl=5.00, bleu=25.5, params_m=None),
    dict(row="A", h=16, d_k=32, d_v=32, ppl=4.91, bleu=25.8, params_m=None),
    dict(row="A", h=32, d_k=16, d_v=16, ppl=5.01, bleu=25.4, params_m=None),
    dict(row="B", h=8, d_k=16, d_v=64, ppl=5.16, bleu=25.1, params_m=58),
    dict(row="B", h=8, d_k=32, d_v=64, ppl=5.01, bleu=25.4, params_m=60),
]
