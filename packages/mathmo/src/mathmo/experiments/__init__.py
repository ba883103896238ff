"""Reproduced findings: `ablation` (MATHMO vs RAN / FLAT / NAIVE on the four tasks)."""
