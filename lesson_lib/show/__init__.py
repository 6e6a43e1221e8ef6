"""How the lesson shows things: Chinese-ready figures, theme-aware HTML, tables, code by
reflection."""
