"""Day 11 · 多头注意力 — the lesson's library.

The kernel at the top (``attention``, its ``checks``, ``costs``, ``head_stats``, ``paper``), then one room per
kind of code: ``sections`` (one module per notebook section, by number), ``models`` (§6, §7), ``practice``
(the self-test), ``show`` (figures, tables, controls), ``runtime`` (BLAS threads). Importing the package
imports nothing; matplotlib and ipywidgets are imported by the functions that draw or build widgets.
"""

__version__ = "0.1.0"
