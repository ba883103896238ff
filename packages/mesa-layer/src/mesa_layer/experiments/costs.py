"""The CPU cost of each ``mesa-layer reproduce`` scale (one thread): the one figure behind the
``--help`` text and the heartbeat's ETA. No torch here: ``--help`` imports this module.

Each figure is the CPU time (``cpu_s`` + ``cpu_children_s``) of the committed run
``results/<scale>.json`` (tiny and small). A test holds them together.
"""

from __future__ import annotations

ESTIMATE_S = {"micro": 3.0, "tiny": 141.0, "small": 648.0}
"""Scale -> CPU seconds of ``mesa-layer reproduce --scale <scale> --threads 1``."""


def reproduce_help() -> str:
    """The ``reproduce`` help, its costs formatted from `ESTIMATE_S`."""
    return (
        "Train MesaNet, GLA, DeltaNet and softmax attention on in-context regression, MQAR and "
        "a Shakespeare char-LM and report error, recall accuracy, validation loss and loss vs "
        f"CG steps (micro: seconds, tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s with one thread, "
        f"small: ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes, paper: GPU-sized)."
    )
