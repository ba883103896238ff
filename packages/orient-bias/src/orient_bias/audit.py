"""`audit`: are a dataset's poses biased? The paper's finding-1 test as a tool.

Each molecule is taken once as published (label 0) and once under a fresh Haar rotation
(label 1), both centred; molecules are split 75/25 (a molecule never straddles the split);
a gradient-boosting classifier on `orientation_features` is trained, and its test ROC-AUC
is reported with a molecule-level bootstrap CI and a within-pair permutation p-value.
Unbiased poses give AUC ≈ 0.5.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from orient_bias.classifiers import (
    fit_feature_classifier,
    pair_bootstrap_ci,
    pair_permutation_pvalue,
)
from orient_bias.features import orientation_features
from orient_bias.frames import KIND_NAMES, Frames, Poses, centre, pad, principal_frames
from orient_bias.rotations import random_rotations
from orient_bias.uniformity import UniformityStats, uniformity_stats
from shared_core.data import Molecule, split_indices

__all__ = ["AuditConfig", "AuditResult", "audit_molecules", "audit_poses", "usable"]


@dataclass(frozen=True)
class AuditConfig:
    max_molecules: int = 20000
    test_fraction: float = 0.25
    model: str = "hgb"
    n_bootstrap: int = 500
    n_permutations: int = 2000
    alpha: float = 0.01
    weighting: str = "none"
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.max_molecules, int) or self.max_molecules < 20:
            raise ValueError(f"max_molecules: expected an int >= 20, got {self.max_molecules!r}")
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"test_fraction: expected a value in (0, 1), got {self.test_fraction}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha: expected a value in (0, 1), got {self.alpha}")
        if self.model not in ("hgb", "logistic"):
            raise ValueError(f"model: expected 'hgb' or 'logistic', got {self.model!r}")
        if self.weighting not in ("none", "mass"):
            raise ValueError(f"weighting: expected 'none' or 'mass', got {self.weighting!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed: expected a non-negative int, got {self.seed!r}")
        for name in ("n_bootstrap", "n_permutations"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")


@dataclass
class AuditResult:
    n_molecules: int
    n_used: int
    n_test: int
    auc: float
    ci_low: float
    ci_high: float
    accuracy: float
    p_value: float
    biased: bool
    kinds: dict[str, int]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    uniformity: dict[str, float] = field(default_factory=dict)
    mpnn: dict[str, float] = field(default_factory=dict)
    """The paper's MPNN on the same split (`add_mpnn`): auc, ci_low, ci_high, p_value,
    accuracy, epochs, steps; empty when it was not run."""

    def add_mpnn(self, row: dict[str, float], alpha: float) -> None:
        """Record the MPNN's paired test statistics and re-decide the verdict: biased when
        either classifier is significant at ``alpha / 2`` (Bonferroni over the two tests) with
        its CI above 0.5."""
        self.mpnn = dict(row)
        hgb = self.p_value < alpha / 2 and self.ci_low > 0.5
        mpnn = row["p_value"] < alpha / 2 and row["ci_low"] > 0.5
        self.biased = bool(hgb or mpnn)

    def verdict(self) -> str:
        """One line: the decision and the numbers behind it."""
        aucs = f"gradient-boosting AUC {self.auc:.3f}"
        if self.mpnn:
            aucs += f", the paper's MPNN AUC {self.mpnn['auc']:.3f}"
        kl = ""
        if self.uniformity:
            kl = (
                f"; KL of the frames to Haar {self.uniformity['kl_to_haar_published']:.2f} nats "
                f"(randomly rotated control {self.uniformity['kl_to_haar_rotated']:.2f})"
            )
        if self.biased:
            return f"BIASED: poses are not randomly oriented ({aucs}{kl})"
        return f"no evidence of orientation bias ({aucs}{kl})"

    def summary(self) -> str:
        lines = [
            self.verdict(),
            f"  ROC-AUC (published vs rotated, gradient boosting) = {self.auc:.3f}  95% CI "
            f"[{self.ci_low:.3f}, {self.ci_high:.3f}]  permutation p = {self.p_value:.2g}  "
            f"accuracy = {self.accuracy:.3f}",
        ]
        if self.mpnn:
            m = self.mpnn
            lines.append(
                f"  ROC-AUC (published vs rotated, the paper's MPNN, {int(m['steps'])} steps) = "
                f"{m['auc']:.3f}  95% CI [{m['ci_low']:.3f}, {m['ci_high']:.3f}]  permutation "
                f"p = {m['p_value']:.2g}  accuracy = {m['accuracy']:.3f}"
            )
        if self.uniformity:
            u = self.uniformity
            lines.append(
                f"  KL to Haar (k-NN, k = 5, n = {int(u['n'])}) = {u['kl_to_haar_published']:.3f} "
                f"(rotated control {u['kl_to_haar_rotated']:.3f})  KS p = "
                f"{u['ks_pvalue_published']:.2g} (control {u['ks_pvalue_rotated']:.2g})"
            )
        lines += [
            f"  molecules: {self.n_molecules} read, {self.n_used} used, {self.n_test} in the test "
            f"set, {len(self.skipped)} skipped",
            f"  frames: {', '.join(f'{k} {v}' for k, v in self.kinds.items() if v)}",
        ]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["skipped"] = [list(s) for s in self.skipped]
        return d


def usable(molecules: list[Molecule]) -> tuple[list[Molecule], list[tuple[str, str]]]:
    """Molecules that have an orientation (>= 2 atoms, not all coincident), and the rest with reasons."""
    keep, skipped = [], []
    for m in molecules:
        if len(m) < 2:
            skipped.append((m.name, f"{len(m)} atom(s): a single atom has no orientation"))
        elif np.ptp(m.positions, axis=0).max() <= 1e-8:
            skipped.append((m.name, "all atoms coincide"))
        else:
            keep.append(m)
    return keep, skipped


def audit_poses(
    poses: Poses, config: AuditConfig = AuditConfig()
) -> tuple[AuditResult, dict[str, Any]]:
    """Run the audit on a padded batch; returns the result and what the plots and the MPNN
    need: ``frames_original``/``frames_rotated``, ``angles_*``, the ``poses`` audited (after
    subsampling) and the molecule split (``train``, ``test`` index arrays)."""
    if not isinstance(poses, Poses):
        raise TypeError(f"poses: expected a Poses batch (see `pad`), got {type(poses).__name__}")
    if not isinstance(config, AuditConfig):
        raise TypeError(f"config: expected an AuditConfig, got {type(config).__name__}")
    rng = np.random.default_rng(config.seed)
    n_total = len(poses)
    if n_total > config.max_molecules:
        poses = poses.subset(np.sort(rng.choice(n_total, config.max_molecules, replace=False)))
    n = len(poses)
    if n < 20:
        raise ValueError(f"poses: the audit needs at least 20 usable molecules, got {n}")
    original = centre(poses)
    rotated = original.rotated(random_rotations(n, rng))
    f0: Frames = principal_frames(original, config.weighting)
    f1: Frames = principal_frames(rotated, config.weighting)
    X0 = orientation_features(original, f0)
    X1 = orientation_features(rotated, f1)
    train, test = split_indices(n, (1 - config.test_fraction, config.test_fraction), config.seed)
    X = np.concatenate([X0[train], X1[train]])
    y = np.r_[np.zeros(len(train)), np.ones(len(train))]
    model = fit_feature_classifier(X, y, config.model, config.seed)
    s0 = model.predict_proba(X0[test])[:, 1]
    s1 = model.predict_proba(X1[test])[:, 1]
    auc, lo, hi = pair_bootstrap_ci(s0, s1, config.n_bootstrap, seed=config.seed)
    p = pair_permutation_pvalue(s0, s1, config.n_permutations, seed=config.seed)
    acc = float(((s0 < 0.5).sum() + (s1 >= 0.5).sum()) / (2 * len(test)))
    kinds = Counter(KIND_NAMES[k] for k in f0.kind)
    uni: dict[str, float] = {}
    extra: dict[str, Any] = {
        "frames_original": f0, "frames_rotated": f1, "poses": poses, "train": train, "test": test,
    }  # fmt: skip
    if n >= 24:
        sub = np.sort(rng.choice(n, min(n, 4000), replace=False))
        u0: UniformityStats = uniformity_stats(f0.axes[sub], config.seed)
        u1: UniformityStats = uniformity_stats(f1.axes[sub], config.seed)
        uni = {
            "ks_pvalue_published": u0.ks_pvalue,
            "ks_pvalue_rotated": u1.ks_pvalue,
            "kl_to_haar_published": u0.kl_to_haar,
            "kl_to_haar_rotated": u1.kl_to_haar,
            "n": float(len(sub)),
        }
        extra["angles_published"], extra["angles_rotated"] = u0.angles_to_mode, u1.angles_to_mode
    result = AuditResult(
        n_molecules=n_total,
        n_used=n,
        n_test=len(test),
        auc=auc,
        ci_low=lo,
        ci_high=hi,
        accuracy=acc,
        p_value=p,
        biased=bool(p < config.alpha and lo > 0.5),
        kinds={k: int(kinds.get(k, 0)) for k in KIND_NAMES},
        uniformity=uni,
    )
    return result, extra


def audit_molecules(
    molecules: list[Molecule],
    config: AuditConfig = AuditConfig(),
    skipped: list[tuple[str, str]] | None = None,
) -> tuple[AuditResult, dict[str, Any]]:
    """`audit_poses` on a list of `Molecule` records; unusable ones are skipped and counted."""
    keep, bad = usable(molecules)
    if not keep:
        raise ValueError("molecules: no molecule with at least 2 distinct atom positions")
    result, extra = audit_poses(pad(keep), config)
    result.n_molecules = len(molecules) + len(skipped or [])
    result.skipped = [*(skipped or []), *bad]
    return result, extra
