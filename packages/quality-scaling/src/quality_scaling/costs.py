"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread, one grid worker) is the figure the heartbeat's
ETA uses and ``quality-scaling reproduce --help`` prints; a test checks it against the committed
runs (``results/tiny.json``, ``results/small.json``; small's is a whole run, no grid cell from a
cache).
No numpy or torch here: ``--help`` imports this module.
"""

from __future__ import annotations

ESTIMATE_S: dict[str, float] = {"micro": 19.0, "tiny": 142.0, "small": 1154.0}


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"CPU time on one thread: micro ~{ESTIMATE_S['micro']:.0f} s, tiny "
        f"~{ESTIMATE_S['tiny']:.0f} CPU-s (results/tiny.json), small "
        f"~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes, paper hours on GPUs"
    )
