"""Datasets that load with no network, deterministic splits, batching, molecule readers,
molecular and TU graphs, a cache, and the readers and writers of a user's own files (SMILES,
SDF, extended XYZ/ASE, text and JSONL, CSV/Parquet tables, NumPy arrays, image folders)."""

from shared_core.data import sources as _sources  # noqa: F401  (registers the built-in entries)
from shared_core.data.arrays import ImageFolder, read_array, read_image_folder, write_arrays
from shared_core.data.atoms import read_ase
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
from shared_core.data.read_result import ReadResult
from shared_core.data.records import (
    JSONL_FORMATS,
    JsonlRecords,
    check_record,
    jsonl_format,
    read_jsonl,
    read_text,
    write_jsonl,
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
from shared_core.data.sdf import read_sdf, write_sdf
from shared_core.data.smiles import SmilesRecord, read_smiles, write_smiles
from shared_core.data.splits import (
    batches,
    group_split,
    murcko_scaffolds,
    scaffold_split,
    split_indices,
)
from shared_core.data.tables import Table, read_frame, read_table, write_table
from shared_core.data.text import CharCorpus, char_corpus, shakespeare_corpus
from shared_core.data.tu import TUGraph, read_tu

__all__ = [
    "ATOMIC_MASSES",
    "ATOMIC_NUMBERS",
    "ATOM_FEATURES",
    "BOND_TYPES",
    "FEATURISATION_VERSION",
    "HYBRIDISATIONS",
    "JSONL_FORMATS",
    "QM9_PROPERTIES",
    "CharCorpus",
    "DatasetInfo",
    "ImageFolder",
    "JsonlRecords",
    "MolGraph",
    "Molecule",
    "ReadResult",
    "SmilesRecord",
    "TUGraph",
    "Table",
    "atomic_number",
    "batches",
    "cache_dir",
    "cached_arrays",
    "char_corpus",
    "check_record",
    "dataset_info",
    "datasets",
    "graph_to_mol",
    "group_split",
    "iter_qm9pack_csv",
    "iter_sdf",
    "iter_xyz",
    "jsonl_format",
    "load",
    "mol_graph",
    "murcko_scaffolds",
    "package_dir",
    "read_array",
    "read_ase",
    "read_frame",
    "read_image_folder",
    "read_jsonl",
    "read_sdf",
    "read_smiles",
    "read_table",
    "read_text",
    "read_tu",
    "read_xyz",
    "register",
    "require_extra",
    "scaffold_split",
    "shakespeare_corpus",
    "split_indices",
    "write_arrays",
    "write_jsonl",
    "write_sdf",
    "write_smiles",
    "write_table",
]
