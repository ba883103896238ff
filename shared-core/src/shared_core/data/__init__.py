"""Datasets that load with no network, deterministic splits, batching, molecule readers and a cache."""

from shared_core.data import sources as _sources  # noqa: F401  (registers the built-in entries)
from shared_core.data.cache import cache_dir, cached_arrays
from shared_core.data.molecules import (
    ATOMIC_MASSES,
    ATOMIC_NUMBERS,
    QM9_PROPERTIES,
    Molecule,
    atomic_number,
    iter_qm9pack_csv,
    iter_sdf,
    iter_xyz,
    read_sdf,
    read_xyz,
)
from shared_core.data.registry import (
    DatasetInfo,
    dataset_info,
    datasets,
    load,
    package_dir,
    register,
)
from shared_core.data.splits import batches, group_split, split_indices

__all__ = [
    "ATOMIC_MASSES",
    "ATOMIC_NUMBERS",
    "QM9_PROPERTIES",
    "DatasetInfo",
    "Molecule",
    "atomic_number",
    "batches",
    "cache_dir",
    "cached_arrays",
    "dataset_info",
    "datasets",
    "group_split",
    "iter_qm9pack_csv",
    "iter_sdf",
    "iter_xyz",
    "load",
    "package_dir",
    "read_sdf",
    "read_xyz",
    "register",
    "split_indices",
]
