"""``dist2loss reproduce``: both findings at one scale, in one run folder.

1. `icl_regression`: the paper's low-data toy (in-context linear regression as integer
   tokens; CE vs DIST2Loss vs label smoothing vs ntloss).
2. `vq_digits`: class-conditional generation of sklearn digits over a k-means VQ codebook
   (CE vs DIST2Loss with the codebook distance; Fréchet distance in a classifier's features).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dist2loss.experiments import icl_regression, vq_digits
from shared_core.cli import ReproduceArgs


@dataclass(frozen=True)
class Config:
    """One scale: the toy's config and the VQ finding's."""

    toy: icl_regression.Config = field(default_factory=icl_regression.Config)
    vq: vq_digits.Config = field(default_factory=vq_digits.Config)


SCALES: dict[str, Config] = {
    name: Config(icl_regression.SCALES[name], vq_digits.SCALES[name])
    for name in ("micro", "tiny", "small", "paper")
}


ESTIMATE_S = {"micro": 13.0, "tiny": 147.0, "small": 3600.0}
"""Scale -> CPU seconds of ``dist2loss reproduce --scale <scale> --threads 1``: the one cost
figure (``--help`` and the heartbeat's ETA print it); tiny is the CPU time of the committed
``results/tiny.json`` (tested), small an estimate (not run)."""


def run(args: ReproduceArgs) -> dict[str, Any]:
    """Run the toy, then the VQ finding; one `metrics.json` / `report.md` for both."""
    from shared_core.progress import phase, plan
    from shared_core.report import Run

    config: Config = args.config
    plan(["toy: in-context regression", "VQ digits", "report"], ESTIMATE_S.get(args.scale))
    with Run("dist2loss", config, out=args.out) as run:
        phase("toy: in-context regression")
        toy = icl_regression.run_in(run, config.toy, args.seed, args.device)
        phase("VQ digits")
        vq = vq_digits.run_in(run, config.vq, args.seed, args.device)
        phase("report")
        run.finish(
            "DIST2Loss: the low-data toy and VQ digits",
            notes=f"Toy: {icl_regression.notes(config.toy)} VQ: {vq_digits.notes(config.vq)}",
        )
    return {"toy": toy, "vq": vq}
