"""Finding 3: all orientations at once, and chemically similar molecules share poses.

- Mollweide maps of every molecule's PC1/PC2/PC3 (published vs rotated) and of PC1
  coloured by ring count;
- the histogram of angles to the most common orientation against the Haar density, with
  the KS test and k-NN KL of `uniformity`;
- nearest-neighbour agreement: for each molecule its most similar other molecule by
  Tanimoto similarity of Morgan fingerprints (radius 2, 2048 bits), and the geodesic angle
  between their frames, against random pairs (Mann–Whitney U, one-sided); the control is
  the same on randomly rotated poses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from orient_bias.frames import Poses, principal_frames
from orient_bias.rotations import geodesic_angle, random_rotations
from orient_bias.uniformity import uniformity_stats
from shared_core.data import require_extra


@dataclass(frozen=True)
class SimilarityConfig:
    radius: int = 2
    n_bits: int = 2048
    block: int = 2048
    seed: int = 0


def fingerprints(
    smiles: np.ndarray, radius: int = 2, n_bits: int = 2048
) -> tuple[np.ndarray, np.ndarray]:
    """``(bits (n, n_bits) uint8, ring counts (n,))`` from SMILES; invalid SMILES raise ValueError."""
    require_extra("orient-bias", "chem", "rdkit", "finding 3 (RDKit fingerprints)")
    from rdkit import Chem, RDLogger
    from rdkit.Chem import rdFingerprintGenerator, rdMolDescriptors

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    bits = np.zeros((len(smiles), n_bits), dtype=np.uint8)
    rings = np.zeros(len(smiles), dtype=np.int64)
    for i, s in enumerate(smiles):
        mol = Chem.MolFromSmiles(str(s))
        if mol is None:
            raise ValueError(f"smiles: invalid SMILES {s!r} at row {i}")
        bits[i] = gen.GetFingerprintAsNumPy(mol)
        rings[i] = rdMolDescriptors.CalcNumRings(mol)
    return bits, rings


def tanimoto_nearest(bits: np.ndarray, block: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the index of its most Tanimoto-similar OTHER row and that similarity.

    Tanimoto = |a ∧ b| / (|a| + |b| - |a ∧ b|); the intersections are one float32 matmul per block.
    """
    B = bits.astype(np.float32)
    counts = B.sum(1)
    n = len(B)
    nn, sim = np.empty(n, dtype=np.int64), np.empty(n)
    for s in range(0, n, block):
        inter = B[s : s + block] @ B.T
        t = inter / np.maximum(counts[s : s + block, None] + counts[None, :] - inter, 1.0)
        t[np.arange(len(t)), np.arange(s, s + len(t))] = -1.0
        nn[s : s + block] = t.argmax(1)
        sim[s : s + block] = t.max(1)
    return nn, sim


def run(poses: Poses, smiles: np.ndarray, cfg: SimilarityConfig) -> dict[str, Any]:
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(cfg.seed)
    n = len(poses)
    bits, rings = fingerprints(smiles, cfg.radius, cfg.n_bits)
    nn, sim = tanimoto_nearest(bits, cfg.block)
    partner = (np.arange(n) + rng.integers(1, n, n)) % n  # a random other molecule
    pub = principal_frames(poses).axes
    rot = principal_frames(poses.rotated(random_rotations(n, cfg.seed + 3000))).axes
    rows: list[dict[str, Any]] = []
    out: dict[str, Any] = {
        "axes_published": pub,
        "axes_rotated": rot,
        "rings": rings,
        "tanimoto_nn": sim,
    }
    for label, axes in (("published", pub), ("randomly rotated (control)", rot)):
        a_nn = geodesic_angle(axes, axes[nn])
        a_rand = geodesic_angle(axes, axes[partner])
        p = float(mannwhitneyu(a_nn, a_rand, alternative="less").pvalue)
        rows.append({
            "poses": label,
            "median_angle_nn_deg": float(np.degrees(np.median(a_nn))),
            "median_angle_random_deg": float(np.degrees(np.median(a_rand))),
            "frac_nn_within_30deg": float((a_nn < np.radians(30)).mean()),
            "frac_random_within_30deg": float((a_rand < np.radians(30)).mean()),
            "mannwhitney_p": p,
        })  # fmt: skip
        out[f"angles_nn_{label.split()[0]}"] = a_nn
    sub = np.sort(rng.choice(n, min(n, 5000), replace=False))
    u_pub, u_rot = uniformity_stats(pub[sub], cfg.seed), uniformity_stats(rot[sub], cfg.seed)
    out["uniformity"] = [
        {"poses": "published", "ks_pvalue": u_pub.ks_pvalue, "ks_statistic": u_pub.ks_statistic, "kl_to_haar_nats": u_pub.kl_to_haar},
        {"poses": "randomly rotated (control)", "ks_pvalue": u_rot.ks_pvalue, "ks_statistic": u_rot.ks_statistic, "kl_to_haar_nats": u_rot.kl_to_haar},
    ]  # fmt: skip
    out["angles_to_mode"] = {
        "published": u_pub.angles_to_mode,
        "randomly rotated": u_rot.angles_to_mode,
    }
    out["rows"] = rows
    out["median_nn_tanimoto"] = float(np.median(sim))
    return out
