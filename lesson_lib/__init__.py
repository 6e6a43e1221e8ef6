"""Day 11 · 多头注意力 — the lesson's library.

Everything the notebook computes, draws or checks lives here, one idea per module:
``attention`` (the kernel), ``flops`` (work per stage), ``plotting`` (Chinese-ready figures), and
the section modules. Importing the package imports numpy only; matplotlib and ipywidgets are
imported by the functions that draw or build widgets, when they are first called.
"""

__version__ = "0.1.0"
