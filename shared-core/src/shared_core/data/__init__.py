"""Datasets that load with no network, deterministic splits, batching, molecule readers,
molecular and TU graphs, and a cache."""

from shared_core.data import sources as _sources  # noqa: F401  (registers the built-in entries)
from shared_core.data.cache import cache_dir, cached_arrays
from shared_core.data.graphs import (
    ATOM_FEATURES,
    BOND_TYPES,
    FEATURISATION_VERSION,
    HYBRIDISATIONS,
    MolGraph,
    graph_to_mol,
    mol_graph,
)
from shared_core.data.molecules import (
    ATOMIC_MASSES,
    ATOMIC_NUMBERS,
    QM9_PROPERTIES,
    Molecule,
    atomic_number,
    iter_qm9pack_csv,
    iter_sdf,
    iter_xyz,
    read_xyz,
)
from shared_core.data.registry import (
    DatasetInfo,
    dataset_info,
    datasets,
    load,
    package_dir,
    register,
    require_extra,
)
from shared_core.data.splits import (
    batches,
    group_split,
    murcko_scaffolds,
    scaffold_split,
    split_indices,
)
from shared_core.data.text import CharCorpus, char_corpus, shakespeare_corpus
from shared_core.data.tu import TUGraph, read_tu

__all__ = [
    "ATOMIC_MASSES",
    "ATOMIC_NUMBERS",
    "ATOM_FEATURES",
    "BOND_TYPES",
    "FEATURISATION_VERSION",
    "HYBRIDISATIONS",
    "QM9_PROPERTIES",
    "CharCorpus",
    "DatasetInfo",
    "MolGraph",
    "Molecule",
    "TUGraph",
    "atomic_number",
    "batches",
    "cache_dir",
    "cached_arrays",
    "char_corpus",
    "dataset_info",
    "datasets",
    "graph_to_mol",
    "group_split",
    "iter_qm9pack_csv",
    "iter_sdf",
    "iter_xyz",
    "load",
    "mol_graph",
    "murcko_scaffolds",
    "package_dir",
    "read_tu",
    "read_xyz",
    "register",
    "require_extra",
    "scaffold_split",
    "shakespeare_corpus",
    "split_indices",
]
