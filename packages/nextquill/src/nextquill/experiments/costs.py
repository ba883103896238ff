"""The CPU cost of each ``nextquill reproduce`` scale (one thread): the one figure behind the
``--help`` text and the heartbeat's ETA. No torch here: ``--help`` imports this module.

Each figure is the CPU time (``cpu_s`` + ``cpu_children_s``) of the committed run
``results/<scale>.json`` (``tiny-ablate.json`` for ``--ablate``); a test holds them together.
"""

from __future__ import annotations

ESTIMATE_S = {"micro": 17.6, "tiny": 196.0, "small": 834.0}
"""Scale -> CPU seconds of ``nextquill reproduce --scale <scale> --threads 1``."""

ABLATE_ESTIMATE_S = {"tiny": 321.0}
"""Scale -> CPU seconds of ``nextquill reproduce --scale <scale> --ablate --threads 1``."""


def reproduce_help() -> str:
    """The ``reproduce`` help, its costs formatted from `ESTIMATE_S`."""
    return (
        "Planted-preference users, tiny Llama: ContextSFT vs L_n only vs L_p only vs "
        "NextQuill (paper and code forms), 3 seeds; micro takes seconds, tiny "
        f"~{ESTIMATE_S['tiny']:.0f} CPU-s, small (ContextSFT, L_n only, NextQuill; 5 seeds) "
        f"~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes (one thread), paper adds SmolLM2-135M + "
        "LoRA on Shakespeare characters and your reviews (hours)."
    )


def ablate_help() -> str:
    """The ``--ablate`` help, its cost formatted from `ABLATE_ESTIMATE_S`."""
    return (
        "instead of the arms: NextQuill vs L_n only (paper form) under one change each "
        "(alpha 0.5, delta 0.2, theta_D trained 2x longer); tiny takes "
        f"~{ABLATE_ESTIMATE_S['tiny']:.0f} CPU-s"
    )
