"""orient-bias: audit molecular datasets for orientation bias, and reproduce "Take Note: Your
Molecular Dataset Is Probably Aligned" (ICLR 2026).

The names below are imported on first use, so ``import orient_bias`` (and the console
script's ``--help``) stays fast. The audit, frames, features and scikit-learn classifiers
need only NumPy/SciPy/scikit-learn; the torch models (the paper's `RotationVariantMPNN`,
`PointCloudNet`, `OrientationMLP`), `train`/`predict`, `train_detector`/`score_detector`
and `RandomRotation`/`RotatedDataset` need the ``torch`` extra; `bond_matrix` needs RDKit
(``chem``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from orient_bias.audit import AuditConfig, AuditResult, audit_molecules, audit_poses
    from orient_bias.augment import RandomRotation, RotatedDataset
    from orient_bias.bonds import bond_matrix
    from orient_bias.classifiers import (
        fit_feature_classifier,
        fit_feature_regressor,
        pair_auc,
        pair_bootstrap_ci,
        pair_permutation_pvalue,
    )
    from orient_bias.data import QM9_TARGETS, QM9Subset, load_qm9, parse_qm9pack_csv, sample_rows
    from orient_bias.detect import DetectConfig, perturb, score_detector, train_detector
    from orient_bias.features import FEATURE_NAMES, orientation_features
    from orient_bias.frames import (
        ASYMMETRIC,
        KIND_NAMES,
        LINEAR,
        OBLATE,
        PROLATE,
        SPHERICAL,
        Frames,
        Poses,
        authors_frames,
        centre,
        pad,
        principal_frames,
    )
    from orient_bias.io import LoadResult, load_aselmdb, load_npz, load_path, load_qmugs
    from orient_bias.model import OrientationMLP, PointCloudNet
    from orient_bias.mpnn import RotationVariantMPNN
    from orient_bias.rotations import (
        geodesic_angle,
        haar_angle_cdf,
        haar_angle_pdf,
        matrix_to_quaternion,
        quaternion_to_matrix,
        random_rotations,
        random_rotations_bounded,
        random_rotations_torch,
        rotation_6d,
        rotation_angle,
    )
    from orient_bias.training import TrainConfig, predict, train
    from orient_bias.uniformity import (
        knn_kl_to_haar,
        most_common_orientation,
        pairwise_geodesic,
        uniformity_stats,
    )

_EXPORTS: dict[str, str] = {
    "ASYMMETRIC": "orient_bias.frames",
    "FEATURE_NAMES": "orient_bias.features",
    "KIND_NAMES": "orient_bias.frames",
    "LINEAR": "orient_bias.frames",
    "OBLATE": "orient_bias.frames",
    "PROLATE": "orient_bias.frames",
    "QM9_TARGETS": "orient_bias.data",
    "SPHERICAL": "orient_bias.frames",
    "AuditConfig": "orient_bias.audit",
    "AuditResult": "orient_bias.audit",
    "DetectConfig": "orient_bias.detect",
    "Frames": "orient_bias.frames",
    "LoadResult": "orient_bias.io",
    "OrientationMLP": "orient_bias.model",
    "PointCloudNet": "orient_bias.model",
    "Poses": "orient_bias.frames",
    "QM9Subset": "orient_bias.data",
    "RandomRotation": "orient_bias.augment",
    "RotatedDataset": "orient_bias.augment",
    "RotationVariantMPNN": "orient_bias.mpnn",
    "TrainConfig": "orient_bias.training",
    "audit_molecules": "orient_bias.audit",
    "audit_poses": "orient_bias.audit",
    "authors_frames": "orient_bias.frames",
    "bond_matrix": "orient_bias.bonds",
    "centre": "orient_bias.frames",
    "fit_feature_classifier": "orient_bias.classifiers",
    "fit_feature_regressor": "orient_bias.classifiers",
    "geodesic_angle": "orient_bias.rotations",
    "haar_angle_cdf": "orient_bias.rotations",
    "haar_angle_pdf": "orient_bias.rotations",
    "knn_kl_to_haar": "orient_bias.uniformity",
    "load_aselmdb": "orient_bias.io",
    "load_npz": "orient_bias.io",
    "load_path": "orient_bias.io",
    "load_qm9": "orient_bias.data",
    "load_qmugs": "orient_bias.io",
    "matrix_to_quaternion": "orient_bias.rotations",
    "most_common_orientation": "orient_bias.uniformity",
    "orientation_features": "orient_bias.features",
    "pad": "orient_bias.frames",
    "pair_auc": "orient_bias.classifiers",
    "pair_bootstrap_ci": "orient_bias.classifiers",
    "pair_permutation_pvalue": "orient_bias.classifiers",
    "pairwise_geodesic": "orient_bias.uniformity",
    "parse_qm9pack_csv": "orient_bias.data",
    "perturb": "orient_bias.detect",
    "predict": "orient_bias.training",
    "principal_frames": "orient_bias.frames",
    "quaternion_to_matrix": "orient_bias.rotations",
    "random_rotations": "orient_bias.rotations",
    "random_rotations_bounded": "orient_bias.rotations",
    "random_rotations_torch": "orient_bias.rotations",
    "rotation_6d": "orient_bias.rotations",
    "rotation_angle": "orient_bias.rotations",
    "sample_rows": "orient_bias.data",
    "score_detector": "orient_bias.detect",
    "train": "orient_bias.training",
    "train_detector": "orient_bias.detect",
    "uniformity_stats": "orient_bias.uniformity",
}
"""Public name -> the module that defines it."""

__all__ = [
    "ASYMMETRIC",
    "FEATURE_NAMES",
    "KIND_NAMES",
    "LINEAR",
    "OBLATE",
    "PROLATE",
    "QM9_TARGETS",
    "SPHERICAL",
    "AuditConfig",
    "AuditResult",
    "DetectConfig",
    "Frames",
    "LoadResult",
    "OrientationMLP",
    "PointCloudNet",
    "Poses",
    "QM9Subset",
    "RandomRotation",
    "RotatedDataset",
    "RotationVariantMPNN",
    "TrainConfig",
    "audit_molecules",
    "audit_poses",
    "authors_frames",
    "bond_matrix",
    "centre",
    "fit_feature_classifier",
    "fit_feature_regressor",
    "geodesic_angle",
    "haar_angle_cdf",
    "haar_angle_pdf",
    "knn_kl_to_haar",
    "load_aselmdb",
    "load_npz",
    "load_path",
    "load_qm9",
    "load_qmugs",
    "matrix_to_quaternion",
    "most_common_orientation",
    "orientation_features",
    "pad",
    "pair_auc",
    "pair_bootstrap_ci",
    "pair_permutation_pvalue",
    "pairwise_geodesic",
    "parse_qm9pack_csv",
    "perturb",
    "predict",
    "principal_frames",
    "quaternion_to_matrix",
    "random_rotations",
    "random_rotations_bounded",
    "random_rotations_torch",
    "rotation_6d",
    "rotation_angle",
    "sample_rows",
    "score_detector",
    "train",
    "train_detector",
    "uniformity_stats",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
