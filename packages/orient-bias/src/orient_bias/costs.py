"""The CPU cost of each ``reproduce`` scale, in one place (issue 67).

`ESTIMATE_S` (scale -> CPU seconds, one thread) is the figure the heartbeat's ETA uses and
``orient-bias reproduce --help`` prints; a test checks it against the committed runs
(``results/<scale>.json``). No torch here: ``--help`` imports this module.
"""

from __future__ import annotations

# tiny: results/tiny.json (cpu_s 178.0); small: results/small.json (cpu_s 820.5)
ESTIMATE_S: dict[str, float] = {"micro": 25.0, "tiny": 178.0, "small": 820.5}

# `orient-bias audit --dataset qm9` (20,000 molecules, one thread): the sum of the committed
# run's CPU-s by phase (results/audit-qm9.json, `cpu_s_by_phase`), and its MPNN phase
AUDIT_QM9_S: float = 96.7
AUDIT_QM9_MPNN_S: float = 75.4


def cost_help() -> str:
    """The scales' costs as ``--help`` states them, formatted from `ESTIMATE_S`."""
    return (
        f"with --threads 1, micro takes ~{ESTIMATE_S['micro']:.0f} s and tiny "
        f"~{ESTIMATE_S['tiny']:.0f} s of CPU time (results/tiny.json), small "
        f"~{ESTIMATE_S['small'] / 60:.0f} CPU-minutes, paper is sized for a GPU"
    )


def audit_cost_help() -> str:
    """The audit's cost as ``audit --help`` states it, formatted from `AUDIT_QM9_S`."""
    return (
        f"20,000 QM9 molecules took ~{AUDIT_QM9_S:.0f} CPU-s ({AUDIT_QM9_MPNN_S:.0f} of them the "
        "MPNN; --no-mpnn skips it; results/audit-qm9.json)"
    )
