"""The CPU cost of each scale of ``reproduce`` and ``ablate-lambda``, in one place (issue 67).

`ESTIMATE_S` (``reproduce``) and `LAMBDA_ESTIMATE_S` (``ablate-lambda``): scale -> CPU seconds,
one thread; the figures the heartbeat's ETA uses and ``--help`` prints. A test checks them
against the committed runs (``results/<scale>.json`` and ``results/ablate-lambda/<scale>.json``).
No numpy or torch here: ``--help`` imports this module.
"""

from __future__ import annotations

ESTIMATE_S: dict[str, float] = {"micro": 10.0, "tiny": 150.3, "small": 543.3}
LAMBDA_ESTIMATE_S: dict[str, float] = {"micro": 10.0, "tiny": 193.0}


def cost_help() -> str:
    """``reproduce``'s costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"micro takes seconds, tiny ~{ESTIMATE_S['tiny']:.0f} CPU-s, small "
        f"~{ESTIMATE_S['small']:.0f} CPU-s, paper hours (CPU, 1 thread; results/tiny.json, "
        "results/small.json)"
    )


def lambda_cost_help() -> str:
    """``ablate-lambda``'s costs as ``--help`` states them, from `LAMBDA_ESTIMATE_S`."""
    return (
        f"micro takes seconds, tiny ~{LAMBDA_ESTIMATE_S['tiny']:.0f} CPU-s (CPU, 1 thread; "
        "results/ablate-lambda/tiny.json)"
    )
