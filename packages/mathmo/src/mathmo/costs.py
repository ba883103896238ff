"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread, the search process plus its sandboxed children)
is the figure the heartbeat's ETA uses and ``mathmo reproduce --help`` prints; a test checks it
against the committed runs (``results/tiny.json``, ``results/small.json``). No heavy imports
here: ``--help`` imports this module.
"""

from __future__ import annotations

ESTIMATE_S: dict[str, float] = {"micro": 9.2, "tiny": 184.0, "small": 769.0}


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"micro: seconds (2 tasks, 2 seeds x 6 rounds), tiny: ~{ESTIMATE_S['tiny']:.0f} CPU-s "
        f"(4 tasks, 10 seeds x 20 rounds), small: ~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes "
        "with the SmolLM2 judge (ecology, epidemiology, 3 seeds), paper: an OpenAI-compatible "
        "endpoint; CPU, 1 thread; results/tiny.json, results/small.json"
    )
