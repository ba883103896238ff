"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread, one grid worker) is the figure the heartbeat's
ETA uses and ``quality-scaling reproduce --help`` prints; a test checks it against the committed
run (``results/tiny.json``). small's 1,113 CPU-s was measured by a whole run of 0.3.0; the small
run behind the README (``results/small_resumed.json``) took 49 of its 143 grid cells from the
cache of an interrupted run, so its 439 CPU-s are not the scale's cost.
No numpy or torch here: ``--help`` imports this module.
"""

from __future__ import annotations

ESTIMATE_S: dict[str, float] = {"micro": 19.0, "tiny": 123.0, "small": 1113.0}


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"CPU time on one thread: micro ~{ESTIMATE_S['micro']:.0f} s, tiny "
        f"~{ESTIMATE_S['tiny']:.0f} CPU-s (results/tiny.json), small "
        f"~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes, paper hours on GPUs"
    )
