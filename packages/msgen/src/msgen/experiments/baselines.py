"""Only the RDKit arms (ETKDG, ETKDG + MMFF) of ``msgen reproduce --scale S --seed N``.

Same split, per-molecule seeds (``seed + i``), conformer counts and evaluation as the full
run (`msgen.experiments.conformers.run_etkdg`), in seconds instead of the networks' minutes:
for re-running the RDKit rows of a table alone (0.4.0: `etkdg`'s seed mapping changed).

    python -m msgen.experiments.baselines --scale small --seed 0 --out small-etkdg.json
"""

from __future__ import annotations

import argparse
import json
import time

from msgen.experiments.conformers import run_etkdg
from msgen.experiments.reproduce import SCALES
from shared_core.atomic import atomic_write_json
from shared_core.cli import nonneg_int


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", choices=sorted(SCALES), default="tiny")
    p.add_argument("--seed", type=nonneg_int, default=0)
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    t0, c0 = time.time(), time.process_time()
    out = run_etkdg(SCALES[a.scale], seed=a.seed)
    result = {"scale": a.scale, "seed": a.seed, **out,
              "cpu_s": time.process_time() - c0, "elapsed_s": time.time() - t0}  # fmt: skip
    print(json.dumps(result))
    if a.out:
        atomic_write_json(a.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
