"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread) is the figure the heartbeat's ETA uses and
``meld-diffusion reproduce --help`` prints; a test checks it against the committed runs
(``results/<scale>.json``). No torch here: ``--help`` imports this module.
"""

from __future__ import annotations

# tiny: results/tiny.json (cpu_s 229.5); small: no committed one-process results/small.json, so
# the sum of its four default arms' one-arm runs (results/small-vanilla.json 232.6, small-class
# 255.1, small-meld 257.1, small-meld-normalised 266.5 CPU-s), which each load QM9 and compute
# the vanilla clashing curves once more than one process would: an upper bound
ESTIMATE_S: dict[str, float] = {"micro": 10.0, "tiny": 229.5, "small": 1011.3}


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"micro takes seconds, tiny ~{ESTIMATE_S['tiny']:.0f} CPU-s (1 thread; "
        f"results/tiny.json), small ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes, paper is "
        "GPU-sized"
    )
