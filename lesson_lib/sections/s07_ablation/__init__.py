"""§7 · 头数消融: what the toy sweep reports and draws (report)."""
