"""Bad input to msgen's public API, in one table (issue 46): each case raises an error that
names the argument (ValueError/TypeError; RuntimeError for sampling an untrained generator),
never NaN conformers or a raw error from inside torch/RDKit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from msgen import (
    MSGEN,
    DiffusionConfig,
    DiffusionGenerator,
    EpsNetConfig,
    LangevinConfig,
    etkdg,
    evaluate,
    hierarchy,
    molecule,
    subgraph,
    upsample_guide,
)
from msgen.data import qm9_conformers, with_positions
from rdkit import Chem
from rdkit.Chem import AllChem

from shared_core.data import mol_graph
from shared_core.testing import assert_bad_input
from shared_core.train import TrainConfig


def _conformer(smiles: str) -> object:
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    AllChem.EmbedMolecule(mol, randomSeed=0)
    return mol_graph(mol)


def _gen(guided: bool) -> DiffusionGenerator:
    return DiffusionGenerator(
        DiffusionConfig(
            epsnet=EpsNetConfig(hidden=8, num_convs=1, num_convs_local=1, guided=guided),
            langevin=LangevinConfig(steps=4), steps=4, batch_size=2,
            train=TrainConfig(steps=1, lr=1e-3, weight_decay=0.0),
        )
    )  # fmt: skip


_G = _conformer("CCO")
_N = _G.num_atoms  # type: ignore[attr-defined]
_NAN = _G.positions.copy()  # type: ignore[attr-defined]
_NAN[1, 2] = np.nan
_INF = _G.positions.copy()  # type: ignore[attr-defined]
_INF[0, 0] = np.inf
_UN, _GU = _gen(False), _gen(True)
_MS = MSGEN([_gen(False), _gen(True)])
_H = hierarchy(_G, ("heavy",))  # type: ignore[arg-type]
_HEAVY = _H.level_graph(0).positions


def _told_noise(**changes: Any) -> DiffusionConfig:
    """A told-level stage 2 (``calibrated``, guide noise U[0, 1] Å) with `changes`."""
    kw: dict[str, Any] = {"guide_augmentation": False, "guide_noise": (0.0, 1.0), **changes}
    return DiffusionConfig(epsnet=EpsNetConfig(guided=True, guide_input="calibrated"), **kw)


CASES = {
    # empty lists
    "fit on no molecules": (lambda: _UN.fit([]), ValueError, "graphs"),
    "sample no molecules": (lambda: _UN.sample([], 1), ValueError, "graphs"),
    "MSGEN fit on no molecules": (lambda: _MS.fit([]), ValueError, "graphs"),
    "MSGEN sample no molecules": (lambda: _MS.sample([], 1), ValueError, "graphs"),
    "evaluate no molecules": (lambda: evaluate([], []), ValueError, "generated"),
    # NaN / inf coordinates (a MolGraph refuses them; generators re-check with the molecule)
    "NaN training coordinates": (
        lambda: _UN.fit([with_positions(_G, _NAN)]),
        ValueError,
        "positions",
    ),  # type: ignore[arg-type]
    "inf training coordinates": (
        lambda: _UN.fit([with_positions(_G, _INF)]),
        ValueError,
        "positions",
    ),  # type: ignore[arg-type]
    "NaN training guide": (lambda: _GU.fit([_G], [_NAN]), ValueError, "guides"),  # type: ignore[list-item]
    "NaN sampling guide": (lambda: _GU.sample([_G], 1, [_NAN[None]]), ValueError, "guides"),  # type: ignore[list-item]
    "NaN oracle coarse atoms": (
        lambda: _MS.sample([_G], 1, coarse=[np.full_like(_HEAVY, np.nan)]),
        ValueError,
        "coarse",
    ),  # type: ignore[list-item]
    "NaN parent of a guide": (
        lambda: upsample_guide(_H, 1, np.full((1, 3, 3), np.nan)),
        ValueError,
        "parent_pos",
    ),
    "NaN generated conformers": (
        lambda: evaluate([_G], [np.full((2, _N, 3), np.nan)]),
        ValueError,
        "generated[0]",
    ),  # type: ignore[list-item]
    # molecules without 3-D coordinates, disconnected, unknown elements
    "training molecule without coordinates": (
        lambda: _UN.fit([molecule("CCO")]),
        ValueError,
        "graphs[0]",
        "'CCO'",
        "no 3-D coordinates",
    ),
    "MSGEN training molecule without coordinates": (
        lambda: _MS.fit([molecule("CCO")]),
        ValueError,
        "graphs[0]",
        "'CCO'",
        "no 3-D coordinates",
    ),
    "disconnected fragments (fit)": (
        lambda: _UN.fit([_conformer("C.O")]),
        ValueError,
        "graphs[0]",
        "'C.O'",
        "disconnected fragments",
    ),
    "disconnected fragments (sample)": (
        lambda: _UN.sample([molecule("CCO.O")], 1),
        ValueError,
        "graphs[0]",
        "'CCO.O'",
        "disconnected fragments",
    ),
    "disconnected fragments (MSGEN)": (
        lambda: _MS.sample([molecule("CCO.O")], 1),
        ValueError,
        "graphs[0]",
        "'CCO.O'",
        "disconnected fragments",
    ),
    "unknown element (sample)": (
        lambda: _UN.sample([molecule("C[Se]C")], 1),
        ValueError,
        "graphs[0]",
        "34",
        "'C[Se]C'",
        "featuriser",
    ),
    "unknown element (MSGEN fit)": (
        lambda: _MS.fit([_conformer("C[Se]C")]),
        ValueError,
        "graphs[0]",
        "34",
        "'C[Se]C'",
        "featuriser",
    ),
    "not a molecule": (lambda: _UN.sample(["CCO"], 1), TypeError, "graphs[0]"),  # type: ignore[list-item]
    "invalid SMILES": (lambda: molecule("C1CC"), ValueError, "smiles"),
    # bad sizes / ids
    "no conformers asked for": (lambda: _UN.sample([_G], 0), ValueError, "num_samples", "0"),  # type: ignore[list-item]
    "guide of the wrong size": (
        lambda: _GU.sample([_G], 2, [np.zeros((2, _N - 1, 3))]),
        ValueError,
        "guides",
    ),  # type: ignore[list-item]
    "guide given to stage 1": (lambda: _UN.fit([_G], [_G.positions]), ValueError, "guides"),  # type: ignore[attr-defined, list-item]
    "oracle coarse of the wrong size": (
        lambda: _MS.sample([_G], 1, coarse=[np.zeros((_N, 3))]),
        ValueError,
        "coarse",
    ),  # type: ignore[list-item]
    "generated of the wrong size": (
        lambda: evaluate([_G], [np.zeros((2, _N + 1, 3))]),
        ValueError,
        "generated[0]",
    ),  # type: ignore[list-item]
    "guide level out of range": (
        lambda: upsample_guide(_H, 2, _HEAVY[None]),
        ValueError,
        "level",
        "2",
    ),  # type: ignore[index]
    "negative tau": (lambda: upsample_guide(_H, 1, _HEAVY[None], tau=-1.0), ValueError, "tau"),  # type: ignore[index]
    "unknown anchor": (
        lambda: upsample_guide(_H, 1, _HEAVY[None], anchor="random"),
        ValueError,
        "anchor",
    ),  # type: ignore[index]
    "repeated atom ids": (lambda: subgraph(_G, [0, 0]), ValueError, "atoms"),  # type: ignore[arg-type]
    "atom id out of range": (lambda: subgraph(_G, [0, 99]), ValueError, "atoms", "99"),  # type: ignore[arg-type]
    "unknown MSGEN anchor": (lambda: MSGEN([_UN, _GU], anchor="ring"), ValueError, "anchor"),
    "unknown scale": (lambda: MSGEN([_UN, _GU], scales=("ring",)), ValueError, "scales"),
    "stage count": (lambda: MSGEN([_UN], scales=("heavy",)), ValueError, "stages"),
    "unknown guide edges": (lambda: EpsNetConfig(guide_edges="H"), ValueError, "guide_edges"),
    "zero training molecules asked for": (
        lambda: qm9_conformers(0, 10),
        ValueError,
        "n_train",
        "0",
    ),
    # ours (0.4.0): the told guide level
    "guide noise for a network that is not told the level": (
        lambda: DiffusionConfig(
            epsnet=EpsNetConfig(guided=True), guide_augmentation=False, guide_noise=(0.0, 1.0)
        ),
        ValueError,
        "guide_noise",
        "calibrated",
    ),
    "guide noise beside the public augmentation": (
        lambda: DiffusionConfig(
            epsnet=EpsNetConfig(guided=True, guide_input="calibrated"), guide_noise=(0.0, 1.0)
        ),
        ValueError,
        "guide_augmentation",
    ),
    "calibrated network without guide noise": (
        lambda: DiffusionConfig(
            epsnet=EpsNetConfig(guided=True, guide_input="calibrated"), guide_augmentation=False
        ),
        ValueError,
        "guide_noise",
    ),
    "guide noise range reversed": (
        lambda: _told_noise(guide_noise=(1.0, 0.5)),
        ValueError,
        "guide_noise",
        "(1.0, 0.5)",
    ),
    # ours (0.4.1): the share of exact training guides
    "clean guide share above 1": (
        lambda: _told_noise(guide_clean_fraction=1.5),
        ValueError,
        "guide_clean_fraction",
        "1.5",
    ),
    "clean guide share negative": (
        lambda: _told_noise(guide_clean_fraction=-0.25),
        ValueError,
        "guide_clean_fraction",
        "-0.25",
    ),
    "clean guide share not a number": (
        lambda: _told_noise(guide_clean_fraction=float("nan")),
        ValueError,
        "guide_clean_fraction",
        "nan",
    ),
    "clean guide share without told guide noise": (
        lambda: DiffusionConfig(epsnet=EpsNetConfig(guided=True), guide_clean_fraction=0.5),
        ValueError,
        "guide_clean_fraction",
        "guide_noise",
    ),
    "negative told level": (
        lambda: DiffusionConfig(guide_sigma=-0.1),
        ValueError,
        "guide_sigma",
        "-0.1",
    ),
    "told level for a network that is not told it": (
        lambda: _GU.sample([_G], 1, [_G.positions[None]], guide_sigma=0.3),  # type: ignore[attr-defined, list-item]
        ValueError,
        "guide_sigma",
    ),
    "calibrate on no molecules": (lambda: _MS.calibrate([]), ValueError, "graphs"),
    "ETKDG seed out of RDKit's range": (
        lambda: etkdg(_G, 1, seed=-1),  # type: ignore[arg-type]
        ValueError,
        "seed",
        "-1",
    ),
    # sampling before fit
    "sample before fit": (lambda: _UN.sample([_G], 1), RuntimeError, "fit"),  # type: ignore[list-item]
    "MSGEN sample before fit": (lambda: _MS.sample([_G], 1), RuntimeError, "fit"),  # type: ignore[list-item]
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str) -> None:
    """Entries past the fourth: more text the message must hold (the molecule's SMILES, why)."""
    message = assert_bad_input(*CASES[case][:4])  # type: ignore[arg-type]
    for text in CASES[case][4:]:
        assert text in message, f"{case}: {text!r} not in {message!r}"
