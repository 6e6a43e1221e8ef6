"""Day 11 · 多头注意力 — the lesson's library (CONTRIBUTING.md maps its rooms); importing it imports
nothing."""
