"""The pipeline gate: MSGEN with GENERATED guides vs single-scale, over seeds (tiny sizes).

Each seed runs `msgen.experiments.conformers.run` at a `msgen reproduce` scale (tiny: 2,000
train / 50 test QM9 molecules, 400 + 400 steps of the 32-wide dual encoder, single-scale 800
steps, Langevin over 250 levels; or small) without the DDPM re-runs, the param-matched arm
and the guide-alone table, and reports per arm
the mean and spread (max - min) of MAT-R and COV-R@0.5 over the seeds. The oracle arm
(TRUE heavy atoms + stage 2) and stage 1's own heavy atoms are reported beside.

    python -m msgen.experiments.gate --seeds 0 1 2 --guide-input calibrated \
        --guide-noise 0 1 --calibrate 50 --out gate.json

``--guide-input calibrated --guide-noise LO HI --calibrate N`` is our stage 2 that is told
its guide's error (`msgen.epsnet`): trained on guides perturbed at a level U[LO, HI] Å,
sampled with the level `MSGEN.calibrate` measured for stage 1 on N held-out molecules.
``--guide-clean-fraction P`` (ours, 0.4.1) leaves a share P of the training guides exact,
told 0 (`msgen.diffusion.draw_guide_sigma`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import Any

import numpy as np
import torch

from msgen.epsnet import GUIDE_INPUTS
from msgen.experiments import conformers
from msgen.experiments.reproduce import SCALES
from shared_core.atomic import atomic_write_json
from shared_core.cli import nonneg_int, positive_int

KEYS = ("MAT-R", "COV-R@0.5", "MAT-P", "COV-P@0.5")


def summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per arm and metric: the values per seed, their mean and spread (max - min)."""
    out: dict[str, dict[str, Any]] = {}
    for arm in runs[0]["metrics"]:
        row: dict[str, Any] = {}
        for k in KEYS:
            v = [r["metrics"][arm][k] for r in runs]
            row[k] = {"seeds": v, "mean": float(np.mean(v)), "spread": float(np.ptp(v))}
        out[arm] = row
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=nonneg_int, nargs="+", default=[0, 1, 2])
    p.add_argument("--scale", choices=("tiny", "small"), default="tiny",
                   help="sizes, data and steps of `msgen reproduce --scale`")  # fmt: skip
    p.add_argument("--stage1-steps", type=positive_int, default=None, help="default: the scale's")
    p.add_argument("--stage2-steps", type=positive_int, default=None, help="default: the scale's")
    p.add_argument("--guide-input", choices=GUIDE_INPUTS, default="length")
    conformers.add_guide_noise_args(p, "no public augmentation")
    p.add_argument("--calibrate", type=nonneg_int, default=0,
                   help="held-out molecules on which stage 1's error is measured")  # fmt: skip
    p.add_argument("--told-factors", type=float, nargs="*", default=[],
                   help="also sample MSGEN with the measured level times these")  # fmt: skip
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    guide = conformers.guide_noise_args(p, a)
    torch.set_num_threads(1)
    base = SCALES[a.scale]
    cfg = dataclasses.replace(
        base,
        other_samplers=(),
        guide_taus=(),
        param_matched_single=False,
        stage1_steps=a.stage1_steps or base.stage1_steps,
        stage2_steps=a.stage2_steps or base.stage2_steps,
        epsnet=dataclasses.replace(base.epsnet, guide_input=a.guide_input),
        **guide,
        calibrate=a.calibrate,
        told_factors=tuple(a.told_factors),
    )
    runs = []
    t0, c0 = time.time(), time.process_time()
    for s in a.seeds:
        out = conformers.run(cfg, seed=s)
        out.pop("losses")
        runs.append({"seed": s, **out})
        brief = {k: round(v["MAT-R"], 3) for k, v in out["metrics"].items()}
        print(
            json.dumps({"seed": s, "MAT-R": brief, "guide_sigma": out["guide_sigma"]}), flush=True
        )
    result = {
        "scale": a.scale,
        "config": dataclasses.asdict(cfg),
        "seeds": a.seeds,
        "summary": summary(runs),
        "runs": runs,
        "cpu_s": time.process_time() - c0,
        "elapsed_s": time.time() - t0,
    }
    print(json.dumps({"summary": {k: {m: round(v[m]["mean"], 3) for m in ("MAT-R", "COV-R@0.5")}
                                  for k, v in result["summary"].items()}}))  # fmt: skip
    if a.out:
        atomic_write_json(a.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
