"""§7's toy model: one-layer multi-head models trained in NumPy reproduce the shape of Table 3
(A)."""
