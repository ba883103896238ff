"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread) is the figure the heartbeat's ETA uses and
``meld-diffusion reproduce --help`` prints; a test checks it against the committed runs
(``results/<scale>.json``). No torch here: ``--help`` imports this module.
"""

from __future__ import annotations

# tiny: results/tiny.json (cpu_s 229.5); small: four arms at 6x tiny's training (no committed
# results/small.json: the small rows are per-arm runs)
ESTIMATE_S: dict[str, float] = {"micro": 10.0, "tiny": 229.5, "small": 1800.0}


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"micro takes seconds, tiny ~{ESTIMATE_S['tiny']:.0f} CPU-s (1 thread; "
        f"results/tiny.json), small ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes, paper is "
        "GPU-sized"
    )
