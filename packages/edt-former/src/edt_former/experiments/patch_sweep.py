"""How many patches the paper's peak rule cuts, over its two constants (the README's sweep).

    python -m edt_former.experiments.patch_sweep --json results/patch-sweep.json

The paper's text splits the atom sequence at local maxima of the entropy after NMS (gap Delta)
and a prominence threshold gamma, without stating either. This sweep chose them: the mean
number of patches per molecule of `peak_group_ids` over a grid of (Delta, gamma), beside the
code's percentile rule (`entropy_group_ids`, q = 0.75), on the first MOSES ZINC test-split
molecules, scored by the frozen next-atom model of ``edt-former reproduce --scale tiny``
(`frozen_entropy_model`: the same corpus, steps and seed). Delta = 3, gamma = 0.02 bits (the
defaults, `patching.PEAK_DELTA` / `PEAK_GAMMA`) give about the code rule's patch count.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import torch

from edt_former.experiments.qa import SCALES, Config, frozen_entropy_model

DELTAS = (1, 3, 5)
"""NMS gaps Delta swept (atoms; 1 = no NMS)."""
GAMMAS = (0.0, 0.02, 0.05, 0.1, 0.2)
"""Prominence thresholds gamma swept (bits)."""


def mean_patches(
    entropy: torch.Tensor,
    mask: torch.Tensor,
    deltas: tuple[int, ...] = DELTAS,
    gammas: tuple[float, ...] = GAMMAS,
) -> dict[str, Any]:
    """Mean patches per molecule under both rules.

    Args:
        entropy: ``(molecules, atoms)`` per-atom entropy in bits, padded on the right.
        mask: ``(molecules, atoms)`` bool, True on real atoms.
        deltas: the peak rule's NMS gaps to try.
        gammas: the peak rule's prominence thresholds to try.

    Returns:
        ``{"percentile": float, "peak": [{"delta": d, "gamma": g, "mean_patches": float}, ...]}``
        (the peak rows in `deltas` x `gammas` order).
    """
    from edt_former.patching import entropy_group_ids, peak_group_ids

    def patches(gid: torch.Tensor) -> float:
        return float((gid.amax(dim=1) + 1).double().mean())

    rows = [
        {"delta": d, "gamma": g, "mean_patches": patches(peak_group_ids(entropy, mask, d, g))}
        for d in deltas
        for g in gammas
    ]
    return {"percentile": patches(entropy_group_ids(entropy, mask, 0.75)), "peak": rows}


def sweep(c: Config, n_molecules: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Train `c`'s frozen entropy model and count the patches of `n_molecules` ZINC test-split
    molecules under both rules; the result is what ``--json`` writes."""
    from edt_former.entropy_model import atom_entropies
    from shared_core.data import load, require_extra

    if isinstance(n_molecules, bool) or not isinstance(n_molecules, int) or n_molecules < 1:
        raise ValueError(f"n_molecules: expected an int >= 1, got {n_molecules!r}")
    require_extra("edt-former", "data", "qm9pack", "the entropy model's corpus", "qm9pack==1.0.3")
    require_extra("edt-former", "data", "moses", "the ZINC molecules", "molsets==0.3.1")
    c0 = time.process_time()
    qm9_smiles, _ = load("qm9-smiles")
    vocab, model = frozen_entropy_model(c, seed, list(qm9_smiles))
    smiles = list(load("zinc-smiles", split="test", limit=n_molecules))
    entropy, mask = atom_entropies(model, vocab, smiles, signal=c.signal)
    real = entropy[mask]
    return {
        "n_molecules": len(smiles),
        "seed": seed,
        "entropy_steps": c.entropy_steps,
        "mean_atoms": float(mask.sum(1).double().mean()),
        "entropy_bits_mean": float(real.mean()),
        "entropy_bits_sd": float(real.std()),
        **mean_patches(entropy, mask),
        "cpu_s": time.process_time() - c0,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m edt_former.experiments.patch_sweep --json FILE``: run `sweep` at tiny."""
    from shared_core.atomic import atomic_write_json

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", type=Path, required=True, help="where to write the results")
    p.add_argument("--molecules", type=int, default=1000, help="ZINC test-split molecules")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    out = sweep(SCALES["tiny"], a.molecules, a.seed)
    out["command"] = "python -m edt_former.experiments.patch_sweep --json results/patch-sweep.json"
    atomic_write_json(a.json, out)
    print(f"percentile rule: {out['percentile']:.2f} patches per molecule")
    for r in out["peak"]:
        print(f"Delta {r['delta']}, gamma {r['gamma']}: {r['mean_patches']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
