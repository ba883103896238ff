"""The CPU cost of each ``free-energy-mixer reproduce`` scale (one thread): the one figure
behind the ``--help`` text and the heartbeat's ETA. No torch here: ``--help`` imports this
module.

Each figure is the CPU time (``cpu_s`` + ``cpu_children_s``) of the committed run
``results/<scale>.json``; a test holds them together.
"""

from __future__ import annotations

ESTIMATE_S = {"micro": 9.0, "tiny": 99.0, "small": 698.0}
"""Scale -> CPU seconds of ``free-energy-mixer reproduce --scale <scale> --threads 1``."""


def reproduce_help() -> str:
    """The ``reproduce`` help, its costs formatted from `ESTIMATE_S`."""
    return (
        "Train softmax, linear and gated linear attention with and without FEM on per-channel "
        "selective recall (accuracy vs heads) and a Shakespeare char-LM (validation bits per "
        f"char) (micro: seconds, tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s with one thread, small: "
        f"~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes, paper: GPU-sized)."
    )
