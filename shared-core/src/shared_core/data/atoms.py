"""Extended XYZ files and ASE databases, read through ASE into `Molecule` records.

``ase.io.read(path, index=":")`` reads every frame; each frame's scalar ``info`` entries (and
the energy of an attached calculator) become the molecule's properties. A frame whose
coordinates are not finite, or whose elements are unknown, is a malformed record.
"""

from __future__ import annotations

import math
import os
from typing import Any

from shared_core.data.molecules import Molecule
from shared_core.data.read_result import ReadResult, nonempty_file
from shared_core.data.registry import require_extra
from shared_core.errors import InputError

_ASE_SUFFIXES = (".xyz", ".extxyz", ".db", ".traj", ".json")


def read_ase(
    path: str | os.PathLike[str], *, format: str | None = None, skip_invalid: bool = False
) -> ReadResult[Molecule]:
    """Every frame of an extended XYZ file or ASE database (``.db``, ``.json``, ``.traj``).

    format: ASE's format name when the suffix does not say it (``"extxyz"``, ``"db"``).
    A file ASE cannot read is one ValueError naming it and ASE's reason; a frame that is no
    valid `Molecule` is a malformed record (`ReadResult.unit` is ``"record"``, 1-based).
    Each molecule is named by its ``info["name"]`` or ``<file stem>:<record>``. Requires
    ASE (the ``ase`` extra).
    """
    p = nonempty_file(path, "extended XYZ frames or an ASE database")
    require_extra("shared-core", "ase", "ase", "reading ASE files", in_root=False)
    from ase.io import read

    if format is None and p.suffix.lower() not in _ASE_SUFFIXES:
        raise InputError(f"path: expected one of {_ASE_SUFFIXES} (or pass format=), got {p.name!r}")
    try:
        frames = read(str(p), index=":", format=format)
    except Exception as e:  # ASE raises many types (ValueError, KeyError, IndexError, ...)
        raise InputError(
            f"path: ASE could not read {p} ({type(e).__name__}: {e}); expected "
            "extended XYZ frames or an ASE database"
        ) from None
    result: ReadResult[Molecule] = ReadResult(p, unit="record")
    for number, atoms in enumerate(frames, start=1):
        name = str(atoms.info.get("name", f"{p.stem}:{number}"))
        try:
            molecule = Molecule(
                atoms.numbers, atoms.positions, name=name, properties=_properties(atoms)
            )
        except ValueError as e:
            result.reject(number, str(e), skip_invalid)
            continue
        result.records.append(molecule)
    return result.finish("at least one frame")


def _properties(atoms: Any) -> dict[str, float | str]:
    props: dict[str, float | str] = {}
    for key, value in atoms.info.items():
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            continue
        props[str(key)] = value if isinstance(value, str) else float(value)
    if atoms.calc is not None:
        energy = atoms.calc.results.get("energy")
        if isinstance(energy, int | float) and math.isfinite(energy):
            props["energy"] = float(energy)
    return props
