"""§6's real trained models (MiniLM, multilingual e5), run by the lesson's own attention kernel in
NumPy."""
