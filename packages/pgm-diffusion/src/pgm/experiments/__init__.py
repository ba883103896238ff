"""Reproduced findings, one module each: `text` (char Shakespeare) and `digits` (8x8 grids)."""
