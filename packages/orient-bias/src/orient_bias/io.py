"""Reading the poses of a dataset for `audit`: files, folders, archives and the formats of QM9,
QMugs and OMol25. Malformed molecules are skipped and reported, never silently dropped.

Supported (by suffix): ``.xyz`` (plain, multi-frame, or QM9's ``dsgdb9nsd`` form),
``.sdf``/``.mol`` (V2000, incl. QMugs conformer files), ``.csv`` (qm9pack), ``.npz``
(positions + atomic numbers), ``.aselmdb`` (OMol25; needs ``lmdb``), ``.db`` (ASE SQLite;
needs ``ase``), folders of these (recursively) and ``.tar[.gz|.bz2|.xz]``/``.tgz``/``.zip``
archives of them (QMugs' ``structures.tar.gz``, QM9's ``dsgdb9nsd.xyz.tar.bz2``).
"""

from __future__ import annotations

import json
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from orient_bias.data import parse_qm9pack_csv
from shared_core.data import Molecule, iter_sdf, read_ase, read_xyz, require_extra

__all__ = [
    "SUFFIXES",
    "LoadResult",
    "load_aselmdb",
    "load_npz",
    "load_path",
    "load_qmugs",
    "write_aselmdb",
    "write_xyz",
]

SUFFIXES = (".xyz", ".sdf", ".mol", ".csv", ".npz", ".aselmdb", ".db")
_ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".zip")
_ASE_RESERVED = {b"nextid", b"metadata", b"deleted_ids"}


@dataclass
class LoadResult:
    """What `load_path` read: `molecules`, and `skipped` as ``(where, reason)`` pairs."""

    molecules: list[Molecule] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0

    def extend(self, other: LoadResult) -> None:
        self.molecules += other.molecules
        self.skipped += other.skipped
        self.files += other.files


def _is_archive(p: Path) -> bool:
    name = p.name.lower()
    return any(name.endswith(s) for s in _ARCHIVES)


def _walk(root: Path) -> Iterator[Path]:
    for p in sorted(root.rglob("*")):
        if p.is_file() and (p.suffix.lower() in SUFFIXES or _is_archive(p)):
            yield p


def load_path(path: str | Path, on_error: str = "skip") -> LoadResult:
    """Read every molecule under `path` (a file, folder or archive).

    on_error: ``"skip"`` records malformed molecules/files in ``skipped``; ``"raise"`` raises
    the first ValueError.
    """
    if on_error not in ("skip", "raise"):
        raise ValueError(f"on_error: expected 'skip' or 'raise', got {on_error!r}")
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"path: {p} does not exist")
    if p.is_dir():
        out = LoadResult()
        for f in _walk(p):
            out.extend(load_path(f, on_error))
        if out.files == 0:
            raise ValueError(f"path: no molecule files ({', '.join(SUFFIXES)}) under {p}")
        return out
    if _is_archive(p):
        with tempfile.TemporaryDirectory(prefix="orient-bias-") as tmp:
            _extract(p, Path(tmp))
            out = load_path(tmp, on_error)
        for m in out.molecules:
            m.name = f"{p.name}:{m.name}"
        return out
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"path: unsupported file type {p.name!r}; expected one of {SUFFIXES}")
    result = LoadResult(files=1)
    try:
        if suffix == ".xyz":
            result.molecules = read_xyz(p)
        elif suffix in (".sdf", ".mol"):
            result = _load_sdf(p, on_error)
        elif suffix == ".csv":
            result = _load_qm9pack(p, on_error)
        elif suffix == ".npz":
            result = load_npz(p, on_error)
        elif suffix == ".aselmdb":
            result = load_aselmdb(p, on_error=on_error)
        else:
            result = _load_ase_db(p, on_error)
    except ValueError as e:
        if on_error == "raise":
            raise
        result = LoadResult(skipped=[(str(p), f"unreadable file: {e}")], files=1)
    return result


def _extract(p: Path, dest: Path) -> None:
    if p.name.lower().endswith(".zip"):
        with zipfile.ZipFile(p) as z:
            z.extractall(dest)
        return
    try:
        with tarfile.open(p) as t:
            t.extractall(dest, filter="data")
    except tarfile.TarError as e:
        raise ValueError(f"path: {p} is not a readable archive ({e})") from None


def _load_sdf(p: Path, on_error: str) -> LoadResult:
    try:
        return LoadResult(molecules=list(iter_sdf(p)), files=1)
    except ValueError:
        if on_error == "raise":
            raise
    # salvage: parse record by record, so one bad record skips only itself
    out = LoadResult(files=1)
    text = p.read_text()
    records = [r for r in text.split("$$$$") if r.strip()]
    with tempfile.TemporaryDirectory(prefix="orient-bias-sdf-") as tmp:
        for i, rec in enumerate(records):
            f = Path(tmp) / f"{p.stem}_{i}.sdf"
            f.write_text(rec.lstrip("\r\n") + "$$$$\n")
            try:
                out.molecules += list(iter_sdf(f))
            except ValueError as e:
                out.skipped.append((f"{p} record {i + 1}", str(e).replace(str(f), p.name)))
    return out


def _load_qm9pack(p: Path, on_error: str) -> LoadResult:
    arrays, skipped = parse_qm9pack_csv(p)
    if skipped and on_error == "raise":
        raise ValueError(skipped[0][1])
    mols = [
        Molecule(num[num > 0], pos[num > 0], name=str(name), properties={"smiles": str(s)})
        for pos, num, name, s in zip(
            arrays["positions"], arrays["numbers"], arrays["names"], arrays["smiles"], strict=True
        )
    ]
    return LoadResult(molecules=mols, skipped=skipped, files=1)


_NPZ_KEYS = {
    "positions": ("positions", "R", "pos", "coords", "xyz"),
    "numbers": ("numbers", "Z", "z", "atomic_numbers"),
    "n_atoms": ("n_atoms", "N", "natoms"),
}


def _key(f: Any, role: str, p: Path, required: bool = True) -> str | None:
    for k in _NPZ_KEYS[role]:
        if k in f.files:
            return k
    if required:
        raise ValueError(f"path: {p} has no {role} array (looked for {_NPZ_KEYS[role]})")
    return None


def load_npz(path: str | Path, on_error: str = "skip") -> LoadResult:
    """An .npz of poses, either padded (``positions (B, N, 3)``, ``numbers (B, N)``, 0 = padding;
    one shared ``numbers (N,)`` is broadcast) or ragged (``positions (T, 3)``, ``numbers (T,)``,
    ``n_atoms (B,)``). Key aliases: R/pos/coords/xyz, Z/z/atomic_numbers, N/natoms."""
    p = Path(path)
    out = LoadResult(files=1)
    with np.load(p, allow_pickle=False) as f:
        kp, kz, kn = _key(f, "positions", p), _key(f, "numbers", p), _key(f, "n_atoms", p, False)
        pos, num = np.asarray(f[kp], dtype=np.float64), np.asarray(f[kz]).astype(np.int64)
        n_atoms = None if kn is None else np.asarray(f[kn]).astype(np.int64)
    if n_atoms is not None:
        if pos.ndim != 2 or pos.shape[1] != 3 or num.shape != (len(pos),):
            raise ValueError(
                f"path: {p}: ragged form needs positions (T, 3) and numbers (T,), got "
                f"{pos.shape} and {num.shape}"
            )
        if n_atoms.sum() != len(pos):
            raise ValueError(
                f"path: {p}: n_atoms sums to {n_atoms.sum()} but there are {len(pos)} atoms"
            )
        ends = np.cumsum(n_atoms)
        blocks = [(pos[e - n : e], num[e - n : e]) for n, e in zip(n_atoms, ends, strict=True)]
    else:
        if pos.ndim != 3 or pos.shape[2] != 3:
            raise ValueError(
                f"path: {p}: positions must be (B, N, 3) without n_atoms, got {pos.shape}"
            )
        if num.ndim == 1:
            num = np.broadcast_to(num, pos.shape[:2])
        if num.shape != pos.shape[:2]:
            raise ValueError(
                f"path: {p}: numbers {num.shape} do not match positions {pos.shape[:2]}"
            )
        blocks = [(x[z > 0], z[z > 0]) for x, z in zip(pos, num, strict=True)]
    for i, (x, z) in enumerate(blocks):
        try:
            out.molecules.append(Molecule(z, x, name=f"{p.stem}[{i}]"))
        except ValueError as e:
            if on_error == "raise":
                raise
            out.skipped.append((f"{p}[{i}]", str(e)))
    return out


def load_qmugs(path: str | Path, on_error: str = "skip") -> LoadResult:
    """QMugs conformers (Isert et al. 2022): ``structures/<CHEMBL id>/conf_<k>.sdf`` in a folder or
    ``structures.tar.gz``. Each molecule is named ``<CHEMBL id>/<conformer>`` and keeps every SD
    tag (``GFN2:...`` and ``DFT:...`` properties, Hartree/Debye as published) as a property."""
    out = load_path(path, on_error)
    for m in out.molecules:
        chembl = m.properties.get("CHEMBL_ID") or m.name.split(":")[-1]
        conf = m.properties.get("CONF_ID", "")
        m.name = f"{chembl}/{conf}" if conf != "" else str(chembl)
    return out


def _decode_ase_json(obj: Any) -> Any:
    """ASE's JSON encoding: arrays are ``{"__ndarray__": [shape, dtype, flat]}`` (orjson writes lists)."""
    if isinstance(obj, dict):
        if "__ndarray__" in obj:
            shape, dtype, flat = obj["__ndarray__"]
            return np.asarray(flat, dtype=dtype).reshape(shape)
        return {k: _decode_ase_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode_ase_json(v) for v in obj]
    return obj


def _row_molecule(row: dict[str, Any], name: str) -> Molecule:
    if "numbers" not in row or "positions" not in row:
        raise ValueError(f"{name}: row lacks numbers/positions")
    props: dict[str, float | str] = {}
    for src in (row.get("key_value_pairs") or {}, row.get("data") or {}):
        for k, v in src.items():
            if isinstance(v, int | float | str) and not isinstance(v, bool):
                props[k] = v
    if isinstance(row.get("energy"), int | float):
        props["energy"] = float(row["energy"])
    return Molecule(
        np.asarray(row["numbers"]), np.asarray(row["positions"]), name=name, properties=props
    )


def load_aselmdb(path: str | Path, limit: int | None = None, on_error: str = "skip") -> LoadResult:
    """OMol25 ``*.aselmdb`` (fairchem's LMDB ASE database): one zlib-compressed JSON row per key.

    Keys are the row ids as ASCII (``b"1"``, ``b"2"``, ...) beside the reserved ``nextid``,
    ``metadata`` and ``deleted_ids``; a row holds ``numbers``, ``positions`` (Å), ``cell``,
    ``pbc``, optional ``energy``/``forces`` (eV, eV/Å) and ``key_value_pairs``/``data`` (OMol25
    keeps the total ``charge`` and ``spin`` multiplicity there, read back into ``atoms.info``).
    Needs the ``lmdb`` package (``pip install orient-bias[omol25]``).
    """
    # the workspace root installs neither `omol25` nor `ase`: only orient-bias's own sync
    require_extra("orient-bias", "omol25", "lmdb", "reading .aselmdb (lmdb)", in_root=False)
    import lmdb

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: {p} does not exist")
    out = LoadResult(files=1)
    try:
        env = lmdb.open(str(p), subdir=False, readonly=True, lock=False, readahead=False)
    except lmdb.Error as e:
        raise ValueError(f"path: {p} is not an LMDB file ({e})") from None
    with env, env.begin() as txn:
        keys = [k for k in txn.cursor().iternext(values=False) if k not in _ASE_RESERVED]
        keys.sort(key=lambda k: (len(k), k))
        for k in keys[:limit]:
            name = f"{p.stem}:{k.decode('ascii', 'replace')}"
            try:
                raw = txn.get(k)
                if raw is None:
                    raise ValueError("row vanished while reading")
                row = _decode_ase_json(json.loads(zlib.decompress(raw)))
                out.molecules.append(_row_molecule(row, name))
            except (ValueError, zlib.error, TypeError) as e:
                if on_error == "raise":
                    raise ValueError(f"{name}: {e}") from None
                out.skipped.append((name, str(e)))
    return out


def write_xyz(path: str | Path, molecules: list[Molecule]) -> Path:
    """Write `molecules` as one multi-frame plain XYZ file, atomically: per frame the atom
    count, the comment (``properties["comment"]`` as `read_xyz` keeps it, else the name), and ``El x y z`` lines (Å, 8 decimals);
    `shared_core.data.read_xyz` reads it back."""
    from shared_core.atomic import atomic_write_text

    if not molecules:
        raise ValueError("molecules: expected at least one molecule to write, got none")
    lines: list[str] = []
    for m in molecules:
        if not isinstance(m, Molecule):
            raise TypeError(f"molecules: expected Molecule records, got {type(m).__name__}")
        comment = m.properties.get("comment", m.name)
        lines += [str(len(m)), str(comment).replace("\n", " ")]
        lines += [
            f"{s} {x:.8f} {y:.8f} {z:.8f}"
            for s, (x, y, z) in zip(m.symbols, m.positions, strict=True)
        ]
    return atomic_write_text(path, "\n".join(lines) + "\n")


def write_aselmdb(
    path: str | Path, molecules: list[Molecule], info: list[dict[str, Any]] | None = None
) -> None:
    """Write molecules in the ``.aselmdb`` layout `load_aselmdb` reads (ASE's array encoding).

    For tests and small exports; `info` rows (e.g. ``{"charge": 0, "spin": 1}``) go to ``data``.
    """
    import lmdb

    def arr(a: np.ndarray) -> dict[str, Any]:
        return {"__ndarray__": [list(a.shape), str(a.dtype), a.ravel().tolist()]}

    env = lmdb.open(str(path), subdir=False, map_size=1 << 26, lock=False)
    with env, env.begin(write=True) as txn:
        for i, m in enumerate(molecules, start=1):
            row = {
                "numbers": arr(m.numbers),
                "positions": arr(m.positions),
                "cell": arr(np.zeros((3, 3))),
                "pbc": arr(np.zeros(3, dtype=bool)),
                "data": (info or [{}] * len(molecules))[i - 1],
            }
            txn.put(str(i).encode("ascii"), zlib.compress(json.dumps(row).encode()))
        txn.put(b"nextid", zlib.compress(json.dumps(len(molecules) + 1).encode()))


def _load_ase_db(p: Path, on_error: str) -> LoadResult:
    require_extra("orient-bias", "ase", "ase", "reading ASE .db files", in_root=False)
    read = read_ase(p, format="db", skip_invalid=on_error == "skip")
    skipped = [(f"{p.stem}:{n}", reason) for n, reason in read.skipped]
    return LoadResult(molecules=read.records, skipped=skipped, files=1)
