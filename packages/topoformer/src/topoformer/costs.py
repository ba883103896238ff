"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread) is the figure the heartbeat's ETA uses and
``topoformer reproduce --help`` prints; a test checks it against the committed runs
(``results/<scale>.json``). No torch here: ``--help`` imports this module.
"""

from __future__ import annotations

# tiny: results/tiny.json (cpu_s 67.5); small: results/small.json (cpu_s 416.6); paper is
# small's configuration (the authors' architecture and budget)
ESTIMATE_S: dict[str, float] = {"micro": 20.0, "tiny": 67.5, "small": 416.6, "paper": 416.6}


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"micro: about {ESTIMATE_S['micro']:.0f} s of CPU; tiny: about "
        f"{ESTIMATE_S['tiny']:.0f} s of CPU on one thread (results/tiny.json); small/paper: the "
        f"authors' architecture and epochs, about {ESTIMATE_S['small'] / 60:.0f} minutes of CPU "
        "(results/small.json)"
    )
