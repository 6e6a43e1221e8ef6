"""§7's toy model: one-layer multi-head models in NumPy reproduce the shape of Table 3 (A)."""
