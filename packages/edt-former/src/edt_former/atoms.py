"""Heavy-atom tokens of a SMILES string, aligned one-to-one with RDKit's atom indices.

EDT-Former's entropy model reads a molecule as the sequence of its heavy atoms in SMILES
order (no hydrogens, no bonds, no ring digits, aromatic lower case folded to upper case).
RDKit numbers the atoms of ``MolFromSmiles(s)`` in the same order they are written, so atom
token ``k`` is RDKit atom ``k`` and graph node ``k`` of `shared_core.data.mol_graph`; we
check that symbol by symbol instead of assuming it (the official code assumes it and pads
or clips silently on a mismatch).

The upstream regex (``Cl|Br|Si|...|Co|...|[cnospb]|[BCNOFPSI]``) ignores brackets, so it
reads ``[se]`` as S, drops ``[te]`` and would read ``Co`` outside brackets as cobalt. Here
the OpenSMILES grammar decides: outside brackets only the organic subset (B C N O P S F Cl
Br I and aromatic b c n o p s) is an atom, so ``Co`` is C followed by aromatic o; inside
brackets the element symbol is read (``[Co]`` is cobalt, ``[se]`` selenium, ``[nH]``
nitrogen, ``[13CH3-]`` carbon). Explicit hydrogen atoms (``[H]``, ``[2H]``) are not heavy
atoms and give no token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# one match per atom: a bracket atom, or an organic-subset atom (two-letter halogens first)
_ATOM = re.compile(r"\[([^\]]*)\]|(Cl|Br|[BCNOPSFI]|[bcnops]|\*)")
# inside brackets: optional isotope, then the element (aromatic two-letter forms first)
_BRACKET = re.compile(r"^(\d*)(se|as|te|[bcnops]|[A-Z][a-z]?|\*)")

SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
"""Special tokens of the entropy model's vocabulary, ids 0..3 (``<unk>``: an element not in it)."""

ELEMENTS = (
    "Ag", "Al", "Ar", "As", "Au", "B", "Br", "C", "Ca", "Cl", "Co", "Cu", "F", "Fe", "He", "Hg",
    "I", "K", "Kr", "Li", "Mg", "Mn", "N", "Na", "Ne", "Ni", "O", "P", "Pd", "Pt", "S", "Sb",
    "Se", "Si", "Sn", "Te", "Xe", "Zn",
)  # fmt: skip
"""The upstream ``vocab.txt`` elements plus As and K (which its tokeniser could not read)."""


@dataclass(frozen=True)
class AtomVocab:
    """Token ids of the entropy model: `SPECIALS` then the element symbols."""

    symbols: tuple[str, ...] = ELEMENTS

    @property
    def tokens(self) -> tuple[str, ...]:
        return (*SPECIALS, *self.symbols)

    def __len__(self) -> int:
        return len(SPECIALS) + len(self.symbols)

    @property
    def pad(self) -> int:
        return 0

    @property
    def bos(self) -> int:
        return 1

    @property
    def eos(self) -> int:
        return 2

    @property
    def unk(self) -> int:
        return 3

    def id(self, symbol: str) -> int:
        """The id of an element symbol (``<unk>`` when it is not in the vocabulary)."""
        try:
            return len(SPECIALS) + self.symbols.index(symbol)
        except ValueError:
            return self.unk

    def encode(self, smiles: str) -> list[int]:
        """``[<bos>, atom ids..., <eos>]`` of one SMILES."""
        return [self.bos, *(self.id(s) for s in tokenize_atoms(smiles)), self.eos]


def _check_smiles(smiles: Any, name: str = "smiles") -> str:
    if not isinstance(smiles, str):
        raise TypeError(f"{name}: expected a SMILES str, got {type(smiles).__name__}")
    if not smiles.strip():
        raise ValueError(f"{name}: expected a non-empty SMILES, got {smiles!r}")
    return smiles


def tokenize_atoms(smiles: str) -> list[str]:
    """The heavy-atom element symbols of `smiles` in written order (aromatic folded to upper).

    >>> tokenize_atoms("c1cc[nH]c1Cl")
    ['C', 'C', 'C', 'N', 'C', 'Cl']
    """
    _check_smiles(smiles)
    out: list[str] = []
    for m in _ATOM.finditer(smiles):
        inside, organic = m.group(1), m.group(2)
        if organic is not None:
            out.append(organic.upper() if len(organic) == 1 else organic)
            continue
        b = _BRACKET.match(inside)
        if b is None:
            raise ValueError(f"smiles: bracket atom [{inside}] in {smiles!r} has no element symbol")
        symbol = b.group(2)
        symbol = symbol[0].upper() + symbol[1:]
        if symbol != "H":  # explicit hydrogens are not heavy atoms
            out.append(symbol)
    return out


def parse_smiles(smiles: str) -> Any:
    """The sanitised RDKit molecule of `smiles`, its atoms checked against `tokenize_atoms`.

    Raises:
        ValueError: invalid SMILES, an empty molecule, a hydrogen atom RDKit keeps as a node
            (e.g. ``[2H]``), or a token/atom mismatch (which would misalign entropy groups
            and graph nodes).
    """
    from rdkit import Chem, RDLogger

    _check_smiles(smiles)
    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    try:
        mol = Chem.MolFromSmiles(smiles)
    finally:
        RDLogger.EnableLog("rdApp.*")  # type: ignore[attr-defined]
    if mol is None:
        raise ValueError(f"smiles: RDKit cannot parse or sanitise {smiles!r}")
    if mol.GetNumAtoms() == 0:
        raise ValueError(f"smiles: {smiles!r} is an empty molecule (no atoms)")
    symbols = [a.GetSymbol() for a in mol.GetAtoms()]
    if "H" in symbols:
        raise ValueError(
            f"smiles: {smiles!r} keeps explicit hydrogen atoms as graph nodes (e.g. isotopes); "
            "remove them first (rdkit.Chem.RemoveHs) so that nodes are heavy atoms only"
        )
    check_alignment(smiles, symbols)
    return mol


def check_alignment(smiles: str, graph_symbols: list[str]) -> None:
    """Raise unless atom token ``k`` of `smiles` is graph node ``k`` (same element, same count)."""
    tokens = tokenize_atoms(smiles)
    if len(tokens) != len(graph_symbols):
        raise ValueError(
            f"smiles: {len(tokens)} heavy-atom tokens in {smiles!r} but the graph has "
            f"{len(graph_symbols)} nodes; they must match one to one"
        )
    for k, (t, g) in enumerate(zip(tokens, graph_symbols, strict=True)):
        if t != g:
            raise ValueError(
                f"smiles: atom token {k} of {smiles!r} is {t} but graph node {k} is {g}; "
                "tokens and RDKit atom indices must agree"
            )
