"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread) is the figure the heartbeat's ETA uses and
``edt-former reproduce --help`` prints; a test checks it against the committed runs
(``results/<scale>.json``). No torch here: ``--help`` imports this module.
"""

from __future__ import annotations

# micro: the README's measured 0.2.0 run (23.9 s); tiny: results/tiny.json (cpu_s 164.3);
# small and paper were never run (CPU hours / a GPU)
ESTIMATE_S: dict[str, float] = {"micro": 24.0, "tiny": 164.3}


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"micro (~{ESTIMATE_S['micro']:.0f} s of CPU) is a smoke run, tiny (random frozen "
        f"Llama, 3 seeds) ~{ESTIMATE_S['tiny']:.0f} s of CPU on one thread (results/tiny.json), "
        "small uses SmolLM2-135M (extra 'llm', CPU hours), paper is GPU-sized"
    )
