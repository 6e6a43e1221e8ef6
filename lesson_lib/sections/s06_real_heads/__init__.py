"""§6 · 真实的注意力头: real trained heads (MiniLM, e5), the pronoun heads and the head explorer."""
