"""Reproduced findings: `meld_diffusion.experiments.qm9` (MELD vs vanilla MDM on QM9, state clashing)."""
