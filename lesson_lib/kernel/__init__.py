"""The paper's formulas: attention, its boundary checks, closed-form counts and attention statistics."""
