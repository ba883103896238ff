"""MSGEN's stages: nested scales, guides built from the true coarse conformer, the oracle mode,
bad input (no scaffold, mismatched atom counts, wrong stage kinds)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from msgen.data import coarse_atoms, heavy_atoms, scaffold_atoms, subgraph
from msgen.diffusion import DiffusionConfig, DiffusionGenerator, LangevinConfig
from msgen.epsnet import EpsNetConfig
from msgen.multiscale import MSGEN, hierarchy, upsample_guide
from rdkit import Chem
from rdkit.Chem import AllChem

from shared_core.data import MolGraph, mol_graph
from shared_core.train import TrainConfig


def _conformer(smiles: str, seed: int = 0) -> MolGraph:
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    AllChem.EmbedMolecule(mol, randomSeed=seed)
    return mol_graph(mol)


def _gen(guided: bool) -> DiffusionGenerator:
    torch.manual_seed(int(guided))
    return DiffusionGenerator(
        DiffusionConfig(
            epsnet=EpsNetConfig(hidden=8, num_convs=1, num_convs_local=1, guided=guided),
            langevin=LangevinConfig(steps=8), steps=4, batch_size=2,
            train=TrainConfig(steps=2, lr=1e-3, weight_decay=0.0),
        )
    )  # fmt: skip


def test_hierarchy_two_and_three_stages() -> None:
    g = _conformer("CCc1ccccc1O")
    two = hierarchy(g, ("heavy",))
    assert two.levels[0].tolist() == heavy_atoms(g).tolist()
    assert two.levels[1].tolist() == list(range(g.num_atoms))
    three = hierarchy(g, ("scaffold", "heavy"))
    ring = scaffold_atoms(g)
    assert ring.size == 6 and set(ring.tolist()) < set(heavy_atoms(g).tolist())
    sub = three.level_graph(0)
    assert sub.num_atoms == 6 and sub.num_bonds == 6
    np.testing.assert_array_equal(sub.positions, g.positions[ring])  # type: ignore[index]
    np.testing.assert_array_equal(three.level_graph(1).atoms[three.parent_in_child(1)], sub.atoms)


def test_fit_and_sample_two_stages_deterministic_with_oracle_mode() -> None:
    graphs = [_conformer("CCO"), _conformer("CC(=O)N"), _conformer("OCC#N")]
    ms = MSGEN([_gen(False), _gen(True)])
    results = ms.fit(graphs, seed=0)
    assert len(results) == 2 and all(len(r.losses) == 2 for r in results)
    a = ms.sample(graphs, 2, seed=1)
    b = ms.sample(graphs, 2, seed=1)
    assert [x.shape for x in a] == [(2, g.num_atoms, 3) for g in graphs]
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    heavy = [g.positions[heavy_atoms(g)] for g in graphs]  # type: ignore[index]
    oracle = ms.sample(graphs, 2, seed=1, coarse=heavy)
    assert [x.shape for x in oracle] == [x.shape for x in a]


def test_training_guide_is_the_true_coarse_conformer_upsampled() -> None:
    g = _conformer("CC(C)O")
    ms = MSGEN([_gen(False), _gen(True)], tau=1.0)
    h = hierarchy(g, ms.scales)
    guide = ms.guide(h, 1, h.level_graph(0).positions[None], seed=0)[0]  # type: ignore[index]
    heavy = heavy_atoms(g)
    np.testing.assert_array_equal(guide[heavy], g.positions[heavy])  # type: ignore[index]
    hs = np.flatnonzero(g.atomic_numbers == 1)
    bonded = {i: j for i, j in g.edge_index.T.tolist() if i in hs}
    d = [np.linalg.norm(guide[i] - guide[bonded[i]]) for i in hs.tolist()]
    np.testing.assert_allclose(d, 1.0, atol=1e-12)  # each H at tau from its heavy atom


def test_three_stage_mode_runs_and_acyclic_molecule_raises() -> None:
    ms = MSGEN([_gen(False), _gen(True), _gen(True)], scales=("scaffold", "heavy"))
    graphs = [_conformer("Cc1ccccc1"), _conformer("OC1CC1")]
    ms.fit(graphs, seed=0)
    out = ms.sample(graphs, 1, seed=0)
    assert [x.shape for x in out] == [(1, g.num_atoms, 3) for g in graphs]
    assert scaffold_atoms(_conformer("CCc1cc[nH]c1")).size == 5  # aromatic N-H kept kekulisable
    with pytest.raises(ValueError, match="no ring"):
        ms.sample([_conformer("CCO")], 1)
    with pytest.raises(ValueError, match="no ring"):
        coarse_atoms(_conformer("CCCC"), "scaffold")


def test_upsample_guide_needs_no_generator_and_matches_the_method() -> None:
    g = _conformer("CC(=O)NC")
    h = hierarchy(g, ("heavy",))
    parent = np.repeat(h.level_graph(0).positions[None], 3, axis=0)  # type: ignore[index]
    a = upsample_guide(h, 1, parent, tau=1.5, seed=3)
    b = MSGEN([_gen(False), _gen(True)], tau=1.5).guide(h, 1, parent, seed=3)
    assert a.shape == (3, g.num_atoms, 3) and np.array_equal(a, b)
    heavy = heavy_atoms(g)
    assert np.array_equal(a[:, heavy], parent)  # the coarse atoms are kept exactly
    with pytest.raises(ValueError, match="level"):
        upsample_guide(h, 2, parent)
    with pytest.raises(ValueError, match="parent_pos"):
        upsample_guide(h, 1, parent[:, :-1])
    with pytest.raises(ValueError, match="parent_pos"):
        upsample_guide(h, 1, parent * np.nan)
    with pytest.raises(ValueError, match="tau"):
        upsample_guide(h, 1, parent, tau=-1.0)
    with pytest.raises(TypeError, match="Hierarchy"):
        upsample_guide(g, 1, parent)  # type: ignore[arg-type]


def test_bad_input_raises() -> None:
    un, gu = _gen(False), _gen(True)
    with pytest.raises(ValueError, match="stages"):
        MSGEN([un])
    with pytest.raises(ValueError, match=r"stages\[0\]"):
        MSGEN([gu, gu])
    with pytest.raises(ValueError, match=r"stages\[1\]"):
        MSGEN([un, un])
    with pytest.raises(TypeError, match=r"stages\[1\]"):
        MSGEN([un, "stage two"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="scales"):
        MSGEN([un, gu], scales=("atoms",))
    with pytest.raises(ValueError, match="tau"):
        MSGEN([un, gu], tau=float("nan"))
    ms = MSGEN([un, gu])
    g = _conformer("CCO")
    with pytest.raises(ValueError, match="coarse: entry 0"):
        ms.sample([g], 1, coarse=[np.zeros((g.num_atoms, 3))])  # mismatched atom counts
    with pytest.raises(ValueError, match=r"graphs\[0\].*'CCO'.*no 3-D coordinates"):
        ms.fit([mol_graph("CCO")])
    with pytest.raises(ValueError, match=r"graphs\[0\].*disconnected"):
        ms.sample([mol_graph("CCO.O")], 1)
    with pytest.raises(ValueError, match=r"graphs\[0\].*featuriser"):
        ms.sample([mol_graph("CC[Se]")], 1)
    with pytest.raises(TypeError, match="graph"):
        hierarchy("CCO", ("heavy",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scale"):
        coarse_atoms(g, "side chains")
    with pytest.raises(ValueError, match="atoms"):
        subgraph(g, [0, 0])


def test_centroid_anchor_reaches_the_pipeline_guide() -> None:
    g = _conformer("CC(C)O")
    ms = MSGEN([_gen(False), _gen(True)], tau=1.5, anchor="centroid")
    h = hierarchy(g, ms.scales)
    guide = ms.guide(h, 1, h.level_graph(0).positions[None], seed=0)[0]  # type: ignore[index]
    heavy = heavy_atoms(g)
    hs = np.flatnonzero(g.atomic_numbers == 1)
    centroid = g.positions[heavy].mean(0)  # type: ignore[index]
    np.testing.assert_allclose(np.linalg.norm(guide[hs] - centroid, axis=1), 1.5, atol=1e-12)


def test_conformer_config_guide_augmentation_reaches_the_generator():
    """`ConformerConfig.guide_augmentation` is what the stage-2 generator trains with (the
    public default True; False: clean guides, the arm that met the oracle gate)."""
    from msgen.experiments.conformers import ConformerConfig, _generator

    for flag in (True, False):
        gen = _generator(ConformerConfig(guide_augmentation=flag), steps=1, guided=True)
        assert gen.config.guide_augmentation is flag


class _Scaled:
    """Stage 1 stand-in: returns each molecule's TRUE positions times `factor` (a known error)."""

    guided = False

    def __init__(self, truth: dict[int, np.ndarray], factor: float) -> None:
        self.truth, self.factor = truth, factor

    def fit(self, graphs, guides=None, *, seed=0):  # type: ignore[no-untyped-def]
        return None

    def sample(self, graphs, num_samples, guides=None, *, seed=0):  # type: ignore[no-untyped-def]
        return [
            np.repeat(self.factor * self.truth[g.num_atoms][None], num_samples, axis=0)
            for g in graphs
        ]


class _Told:
    """Guided stand-in that records the told level of every `sample` call."""

    guided = True

    def __init__(self, reads: bool) -> None:
        self.reads_guide_sigma = reads
        self.told: list[object] = []

    def fit(self, graphs, guides=None, *, seed=0):  # type: ignore[no-untyped-def]
        return None

    def sample(self, graphs, num_samples, guides=None, *, seed=0, **kw):  # type: ignore[no-untyped-def]
        self.told.append(kw.get("guide_sigma", "absent"))
        return list(guides)


def test_guide_error_of_a_known_error() -> None:
    """Positions scaled by 1.1: every pair's length error is 0.1 d0 (all pairs, by class)."""
    from msgen.model import pair_template
    from msgen.multiscale import guide_error

    g = _conformer("CCCCO")
    x0 = g.positions
    out = guide_error([g], [np.stack([1.1 * x0, x0])])  # type: ignore[operator, list-item]
    tpl = pair_template(g)
    i, j = tpl.pairs
    keep = i < j
    d0 = np.linalg.norm(x0[i[keep]] - x0[j[keep]], axis=-1)  # type: ignore[index]
    # two samples: one off by 0.1 d0, one exact
    np.testing.assert_allclose(out["edge_rms"], np.sqrt(np.mean(0.01 * d0**2) / 2), rtol=1e-10)
    bonded = tpl.hops[keep] == 0
    np.testing.assert_allclose(
        out["edge_rms_by_bonds"]["1"], np.sqrt(np.mean(0.01 * d0[bonded] ** 2) / 2), rtol=1e-10
    )
    assert out["molecules"] == 1 and set(out["edge_rms_by_bonds"]) == {"1", "2", "3", ">3"}
    nan = np.full((1, g.num_atoms, 3), np.nan)
    assert guide_error([g, g], [np.stack([x0]), nan])["molecules"] == 1  # type: ignore[list-item]


def test_calibrate_tells_stage_2_the_measured_error_and_the_oracle_zero() -> None:
    """`MSGEN.calibrate` measures stage 1 on held-out conformers and sets guide_sigma[1] =
    edge RMS / sqrt(2); `sample` tells it to a stage that reads it, 0 with the oracle's true
    coarse atoms, and nothing to a stage that does not read a level."""
    from msgen.multiscale import guide_error

    graphs = [_conformer("CCO"), _conformer("CC(=O)N")]
    heavy = {int(heavy_atoms(g).size): g.positions[heavy_atoms(g)] for g in graphs}  # type: ignore[index]
    told = _Told(reads=True)
    ms = MSGEN([_Scaled(heavy, 1.2), told])
    (stats,) = ms.calibrate(graphs, seed=0)
    coarse = [hierarchy(g, ("heavy",)).level_graph(0) for g in graphs]
    want = guide_error(coarse, [1.2 * heavy[c.num_atoms][None] for c in coarse])["edge_rms"]
    assert stats["sigma_g"] == pytest.approx(want / np.sqrt(2), rel=1e-12) and want > 0.05
    assert ms.guide_sigma == [None, stats["sigma_g"]] and told.told == []  # stage 2 not run
    ms.sample(graphs, 2, seed=0)
    ms.sample(graphs, 2, seed=0, coarse=[heavy[c.num_atoms] for c in coarse])
    assert told.told == [stats["sigma_g"], 0.0]
    deaf = _Told(reads=False)
    ms2 = MSGEN([_Scaled(heavy, 1.2), deaf])
    ms2.calibrate(graphs)
    ms2.sample(graphs, 1)
    assert deaf.told == ["absent"]
