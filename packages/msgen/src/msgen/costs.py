"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread) is the figure the heartbeat's ETA uses and
``msgen reproduce --help`` prints; a test checks it against the committed runs
(``results/tiny.json``, ``results/small.json``). No torch here: ``--help`` imports this module.
"""

from __future__ import annotations

ESTIMATE_S: dict[str, float] = {"micro": 13.0, "tiny": 82.3, "small": 970.0}


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"micro: seconds, tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s with one thread, small: "
        f"~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes, paper: GPU-sized; results/tiny.json, "
        "results/small.json"
    )
