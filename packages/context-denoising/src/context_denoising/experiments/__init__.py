"""Reproduced findings: `retrieval` (tiny transformer, SFT vs CDT) and `smollm` (SmolLM2-135M)."""
