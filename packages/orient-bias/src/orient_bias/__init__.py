"""orient-bias: audit molecular datasets for orientation bias, and reproduce "Take Note: Your
Molecular Dataset Is Probably Aligned" (ICLR 2026)."""

from orient_bias.audit import AuditConfig, AuditResult, audit_molecules, audit_poses
from orient_bias.augment import RandomRotation, RotatedDataset
from orient_bias.classifiers import (
    fit_feature_classifier,
    fit_feature_regressor,
    pair_auc,
    pair_bootstrap_ci,
    pair_permutation_pvalue,
)
from orient_bias.data import QM9_TARGETS, QM9Subset, load_qm9, parse_qm9pack_csv, sample_rows
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
    centre,
    pad,
    principal_frames,
)
from orient_bias.io import LoadResult, load_aselmdb, load_npz, load_path, load_qmugs
from orient_bias.model import OrientationMLP, PointCloudNet
from orient_bias.rotations import (
    geodesic_angle,
    haar_angle_cdf,
    haar_angle_pdf,
    matrix_to_quaternion,
    quaternion_to_matrix,
    random_rotations,
    random_rotations_torch,
    rotation_6d,
    rotation_angle,
)
from orient_bias.train import TrainConfig, predict, train
from orient_bias.uniformity import (
    knn_kl_to_haar,
    most_common_orientation,
    pairwise_geodesic,
    uniformity_stats,
)

__version__ = "0.1.0"

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
    "Frames",
    "LoadResult",
    "OrientationMLP",
    "PointCloudNet",
    "Poses",
    "QM9Subset",
    "RandomRotation",
    "RotatedDataset",
    "TrainConfig",
    "audit_molecules",
    "audit_poses",
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
    "predict",
    "principal_frames",
    "quaternion_to_matrix",
    "random_rotations",
    "random_rotations_torch",
    "rotation_6d",
    "rotation_angle",
    "sample_rows",
    "train",
    "uniformity_stats",
]
