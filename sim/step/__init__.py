"""One engine step: pipeline (step start -> stages -> step end), fused (the same step as kernel calls around
the compiled Newton) and integration (the tableaus and reconstructions)."""
