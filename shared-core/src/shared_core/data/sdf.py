"""SDF in and out through RDKit (`SDMolSupplier` / `SDWriter`), conformers grouped.

Hydrogens are kept as the file gives them (``removeHs=False``). Records of one molecule (the
same ``_Name``, or the same canonical SMILES) become the conformers of one RDKit ``Mol``, in
file order; each record's SD tags are kept on its conformer. `write_sdf` writes one record per
conformer, so ``read_sdf(write_sdf(p, mols))`` gives the molecules back. The plain V2000 reader
that needs no RDKit is `shared_core.data.iter_sdf`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from shared_core.atomic import atomic_path
from shared_core.data.read_result import ReadResult, nonempty_file
from shared_core.data.registry import require_extra
from shared_core.errors import InputError

_GROUP_BY = ("name", "smiles", "none")


def _chem() -> Any:
    require_extra("shared-core", "chem", "rdkit", "SDF input/output (RDKit)")
    from rdkit import Chem

    return Chem


def _record_lines(p: Path) -> list[int]:
    """The 1-based first line of every record (records end with ``$$$$``)."""
    starts = [1]
    with open(p, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if line.strip() == "$$$$":
                starts.append(number + 1)
    return starts


def read_sdf(
    path: str | os.PathLike[str], *, group_by: str = "name", skip_invalid: bool = False
) -> ReadResult[Any]:
    """The molecules of an SDF file as RDKit ``Mol`` objects, hydrogens as given.

    group_by: ``"name"`` groups records by their title line (``_Name``; an untitled record by
    its canonical SMILES), ``"smiles"`` by canonical SMILES (hydrogens included), ``"none"``
    gives one ``Mol`` per record. A record RDKit cannot parse or sanitise, or one whose atoms
    differ from the earlier records of its group, is a malformed record (`ReadResult.unit` is
    ``"record"``; the error also names its first line). Requires RDKit (the ``chem`` extra).
    """
    if group_by not in _GROUP_BY:
        raise InputError(f"group_by: expected one of {_GROUP_BY}, got {group_by!r}")
    p = nonempty_file(path, "SDF records")
    chem = _chem()
    starts = _record_lines(p)
    result: ReadResult[Any] = ReadResult(p, unit="record")
    groups: dict[str, Any] = {}
    from rdkit import rdBase

    with rdBase.BlockLogs():  # a bad record is reported once, by our error
        mols = list(chem.SDMolSupplier(str(p), sanitize=True, removeHs=False))
    for index, mol in enumerate(mols):
        number = index + 1
        where = f"(line {starts[index]}) " if index < len(starts) else ""
        if mol is None:
            reason = f"{where}RDKit could not parse or sanitise it; expected a molfile record"
            result.reject(number, reason, skip_invalid)
            continue
        conformer = mol.GetConformer()
        for key, value in mol.GetPropsAsDict(includePrivate=False).items():
            conformer.SetProp(key, str(value))
        if group_by == "none":
            result.records.append(mol)
            continue
        name = mol.GetProp("_Name").strip() if mol.HasProp("_Name") else ""
        key = name if group_by == "name" and name else "smiles:" + chem.MolToSmiles(mol)
        first = groups.get(key)
        if first is None:
            groups[key] = mol
            result.records.append(mol)
            continue
        atoms = [a.GetAtomicNum() for a in mol.GetAtoms()]
        if atoms != [a.GetAtomicNum() for a in first.GetAtoms()]:
            reason = (
                f"{where}its atoms differ from the earlier record(s) of {key!r}; expected "
                "the same atoms in the same order to add it as a conformer"
            )
            result.reject(number, reason, skip_invalid)
            continue
        first.AddConformer(chem.Conformer(conformer), assignId=True)
    return result.finish("at least one molfile record")


def write_sdf(path: str | os.PathLike[str], mols: Iterable[Any]) -> Path:
    """Write RDKit molecules to `path` atomically: one SDF record per conformer.

    Each record carries the molecule's name and properties and its conformer's own
    properties (the SD tags `read_sdf` kept). A molecule without a conformer is a ValueError.
    """
    chem = _chem()
    mols = list(mols)
    for i, mol in enumerate(mols):
        if not isinstance(mol, chem.Mol):
            raise TypeError(f"mols[{i}]: expected an RDKit Mol, got {type(mol).__name__}")
        if mol.GetNumConformers() == 0:
            raise InputError(f"mols[{i}]: has no conformer; expected coordinates to write")
    with atomic_path(path) as tmp:
        writer = chem.SDWriter(str(tmp))
        try:
            for mol in mols:
                for conformer in mol.GetConformers():
                    record = chem.Mol(mol)
                    for key, value in conformer.GetPropsAsDict(includePrivate=False).items():
                        record.SetProp(key, str(value))
                    writer.write(record, confId=conformer.GetId())
        finally:
            writer.close()
    return Path(path)
