"""The EGNN eps-network (option network="egnn"): the loop oracle, E(3) equivariance, translation and permutation
behaviour, the guide entering through distances only; the sampler and seeded determinism."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from msgen.diffusion import (
    DiffusionConfig,
    DiffusionGenerator,
    ancestral_sample,
    respaced_betas,
    sigmoid_betas,
)
from msgen.model import DenoiserConfig, EGNNDenoiser, molecule_mean, pack, pair_template
from msgen.reference import denoiser_reference
from rdkit import Chem
from rdkit.Chem import AllChem

from shared_core.data import MolGraph, mol_graph
from shared_core.testing import assert_close
from shared_core.train import TrainConfig


def _conformer(smiles: str, seed: int = 0) -> MolGraph:
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    AllChem.EmbedMolecule(mol, randomSeed=seed)
    return mol_graph(mol)


def _rotation(seed: int, reflect: bool = False) -> torch.Tensor:
    q, _ = torch.linalg.qr(
        torch.randn(3, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    )
    if (torch.det(q) < 0) != reflect:
        q[:, 0] = -q[:, 0]
    return q


def _inputs(guided: bool, seed: int = 0):
    graphs = [_conformer("CCO"), _conformer("c1ccncc1")]
    batch = pack([pair_template(g) for g in graphs])
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch.num_atoms, 3, generator=gen, dtype=torch.float64)
    t = torch.tensor([0.3, 0.8], dtype=torch.float64)
    guide = (
        torch.randn(batch.num_atoms, 3, generator=gen, dtype=torch.float64) * 2 if guided else None
    )
    torch.manual_seed(seed)
    net = EGNNDenoiser(DenoiserConfig(hidden=16, layers=2, rbf=8, guided=guided)).double()
    return net, x, t, batch, guide


@pytest.mark.parametrize("guided", [False, True])
def test_matches_the_loop_reference(guided: bool, device: str) -> None:
    net, x, t, batch, guide = _inputs(guided)
    ref = denoiser_reference(net, x, t, batch, guide)
    with torch.no_grad():
        fast64 = net(x, t, batch, guide)
    assert_close("eps float64", ref, fast64, ratio=1e-10)
    from msgen.model import graph_batch_to

    net32 = net.float().to(device)
    with torch.no_grad():
        fast32 = net32(x.float().to(device), t.float().to(device), graph_batch_to(batch, device),
                       None if guide is None else guide.float().to(device))  # fmt: skip
    assert_close("eps float32", ref, fast32.cpu(), ratio=1e-5)


@pytest.mark.parametrize("guided", [False, True])
@pytest.mark.parametrize("reflect", [False, True])
def test_rotation_and_translation_equivariance(guided: bool, reflect: bool) -> None:
    net, x, t, batch, guide = _inputs(guided, seed=1)
    R = _rotation(7, reflect)
    shift = torch.tensor([3.0, -1.0, 0.5], dtype=torch.float64)
    with torch.no_grad():
        eps = net(x, t, batch, guide)
        moved = net(x @ R.T + shift, t, batch, None if guide is None else guide @ R.T - shift)
    assert_close("eps(Rx + s) vs R eps(x)", eps @ R.T, moved, ratio=1e-10)
    assert molecule_mean(eps, batch).abs().max() < 1e-12  # zero centre of mass per molecule


def test_guide_enters_through_distances_only() -> None:
    net, x, t, batch, guide = _inputs(True, seed=2)
    assert guide is not None
    with torch.no_grad():
        a = net(x, t, batch, guide)
        b = net(x, t, batch, guide @ _rotation(3).T + 5.0)  # rotate the guide alone
        c = net(x, t, batch, guide * 1.3)
    assert_close("guide rotated alone", a, b, ratio=1e-10)
    assert (a - c).abs().max() > 1e-6  # but the guide's distances do matter


def test_permutation_equivariance() -> None:
    g = _conformer("CC(=O)N")
    perm = np.random.default_rng(0).permutation(g.num_atoms)
    inv = np.argsort(perm)
    g2 = MolGraph(g.atoms[perm], inv[g.edge_index], g.bond_types, g.positions[perm])  # type: ignore[index]
    torch.manual_seed(0)
    net = EGNNDenoiser(DenoiserConfig(hidden=16, layers=2, rbf=8, guided=True)).double()
    x = torch.randn(g.num_atoms, 3, dtype=torch.float64)
    guide = torch.randn(g.num_atoms, 3, dtype=torch.float64)
    t = torch.tensor([0.5], dtype=torch.float64)
    with torch.no_grad():
        a = net(x, t, pack([pair_template(g)]), guide)
        b = net(x[perm], t, pack([pair_template(g2)]), guide[perm])
    assert_close("eps permuted", a[perm], b, ratio=1e-10)


def test_ancestral_sampler_returns_x0_under_the_exact_eps_of_a_point_mass() -> None:
    g = _conformer("CCO")
    batch = pack([pair_template(g)])
    x0 = torch.from_numpy(g.positions - g.positions.mean(0))  # type: ignore[operator]
    betas = torch.from_numpy(respaced_betas(20))
    abar = torch.cumprod(1 - betas, 0)
    T = betas.numel()

    def exact_eps(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        k = round(float(t[0]) * T) - 1
        return ((x.double() - abar[k].sqrt() * x0) / (1 - abar[k]).sqrt()).float()

    out = ancestral_sample(exact_eps, betas, batch, torch.Generator().manual_seed(0))
    assert_close("x0 recovered", x0, out, ratio=1e-6)


def test_respaced_schedule_visits_the_base_noise_levels() -> None:
    base = sigmoid_betas()
    abar = np.cumprod(1 - base)
    short = np.cumprod(1 - respaced_betas(50))
    np.testing.assert_allclose(short[-1], abar[-1], rtol=1e-12)
    assert np.all(np.diff(short) < 0) and 0 < short[-1] < 0.01  # ends near pure noise
    with pytest.raises(ValueError, match="steps"):
        respaced_betas(0)
    with pytest.raises(ValueError, match="steps"):
        respaced_betas(6000)


def _generator(guided: bool) -> DiffusionGenerator:
    cfg = DiffusionConfig(
        network="egnn", sampler="ddpm",
        denoiser=DenoiserConfig(hidden=8, layers=1, rbf=4, guided=guided), steps=5, batch_size=2,
        train=TrainConfig(steps=2, lr=1e-3, weight_decay=0.0),
    )  # fmt: skip
    torch.manual_seed(0)
    return DiffusionGenerator(cfg)


def test_seeded_sampling_is_deterministic_and_training_reproducible() -> None:
    graphs = [_conformer("CCO"), _conformer("CC#N")]
    a, b = _generator(False), _generator(False)
    ha, hb = a.fit(graphs, seed=1), b.fit(graphs, seed=1)
    assert ha.losses == hb.losses
    s1, s2, s3 = (
        a.sample(graphs, 3, seed=4),
        a.sample(graphs, 3, seed=4),
        a.sample(graphs, 3, seed=5),
    )
    assert all(np.array_equal(p, q) for p, q in zip(s1, s2, strict=True))
    assert not np.array_equal(s1[0], s3[0])
    assert [s.shape for s in s1] == [(3, g.num_atoms, 3) for g in graphs]


def test_bad_input_raises() -> None:
    graphs = [_conformer("CCO")]
    un, gu = _generator(False), _generator(True)
    with pytest.raises(ValueError, match="guides"):
        gu.fit(graphs)  # a guided generator without guides
    with pytest.raises(ValueError, match="guides"):
        un.fit(graphs, [graphs[0].positions])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="guides: entry 0"):
        gu.sample(graphs, 2, [np.zeros((2, graphs[0].num_atoms - 1, 3))])  # mismatched atoms
    with pytest.raises(ValueError, match="num_samples"):
        un.sample(graphs, 0)
    with pytest.raises(TypeError, match="graphs\\[0\\]"):
        un.sample(["CCO"], 1)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="positions"):
        un.fit([mol_graph("CCO")])  # no coordinates to train on
    with pytest.raises(TypeError, match="config"):
        EGNNDenoiser("big")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hidden"):
        DenoiserConfig(hidden=0)
    net, x, t, batch, _ = _inputs(False)
    with pytest.raises(ValueError, match="x: expected shape"):
        net(x[:-1], t, batch)
    with pytest.raises(ValueError, match="not guided"):
        net(x, t, batch, x)
