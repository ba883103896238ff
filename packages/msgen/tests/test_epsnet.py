"""GeoDiff's dual-encoder edge-score network (the default): the loop oracle in float64 and
float32, eq_transform, rotation/reflection/translation/permutation behaviour, the guide on
every edge, the loss, both samplers, seeded determinism and bad input."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch
from msgen.diffusion import (
    DiffusionConfig,
    DiffusionGenerator,
    LangevinConfig,
    draw_guide_sigma,
    geodiff_loss,
    langevin_sample,
    sigmoid_betas,
)
from msgen.epsnet import DualEncoderEpsNet, EpsNetConfig, edge_types, eq_transform, local_mask
from msgen.model import graph_batch_to, pack, pair_template
from msgen.reference import ExactEdgeScore, epsnet_reference, eq_transform_reference
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


def _inputs(guided: bool, seed: int = 0, cutoff: float = 10.0):
    graphs = [_conformer("CCCCO"), _conformer("c1ccncc1")]  # 4 and 3 bonds apart both occur
    batch = pack([pair_template(g) for g in graphs])
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch.num_atoms, 3, generator=gen, dtype=torch.float64) * 2.5
    guide = (
        torch.randn(batch.num_atoms, 3, generator=gen, dtype=torch.float64) * 2 if guided else None
    )
    torch.manual_seed(seed)
    cfg = EpsNetConfig(hidden=8, num_convs=2, num_convs_local=2, cutoff=cutoff, guided=guided)
    return DualEncoderEpsNet(cfg).double(), x, batch, guide


@pytest.mark.parametrize("guided", [False, True])
def test_edge_scores_match_the_loop_reference(guided: bool, device: str) -> None:
    net, x, batch, guide = _inputs(guided, cutoff=4.0)  # some non-local edges beyond the cutoff
    ref_g, ref_l = epsnet_reference(net, x, batch, guide)
    with torch.no_grad():
        s_g, s_l = net(x, batch, guide)
    assert (ref_g != 0).sum() > 0 and (ref_l != 0).sum() > 0
    assert ((ref_g == 0) & (batch.hops == 3)).sum() > 0  # the cutoff removed some
    assert_close("s_global float64", ref_g, s_g, ratio=1e-10)
    assert_close("s_local float64", ref_l, s_l, ratio=1e-10)
    net32 = net.float().to(device)
    g = graph_batch_to(batch, device)
    with torch.no_grad():
        f_g, f_l = net32(
            x.float().to(device), g, None if guide is None else guide.float().to(device)
        )
    assert_close("s_global float32", ref_g, f_g.cpu(), ratio=1e-5)
    assert_close("s_local float32", ref_l, f_l.cpu(), ratio=1e-5)


def test_eq_transform_matches_the_loop_reference() -> None:
    _, x, batch, _ = _inputs(False)
    s = torch.randn(batch.pairs.shape[1], dtype=torch.float64)
    assert_close(
        "eq_transform",
        eq_transform_reference(s, x, batch.pairs),
        eq_transform(s, x, batch.pairs),
        ratio=1e-12,
    )


def test_edge_types_are_geodiffs() -> None:
    g = _conformer("CC=O")  # C0-C1 single, C1=O2 double
    b = pack([pair_template(g)])
    types = {tuple(p): int(t) for p, t in zip(b.pairs.T.tolist(), edge_types(b), strict=True)}
    assert types[(0, 1)] == 1 and types[(1, 2)] == 2 and types[(0, 2)] == 5
    h_on_0 = [int(j) for i, j in g.edge_index.T.tolist() if i == 0 and g.atomic_numbers[j] == 1]
    assert types[(h_on_0[0], 2)] == 6  # H-C-C=O: three bonds apart
    assert bool(local_mask(b)[b.hops == 3].any()) is False


@pytest.mark.parametrize("guided", [False, True])
@pytest.mark.parametrize("reflect", [False, True])
def test_rotation_reflection_translation(guided: bool, reflect: bool) -> None:
    net, x, batch, guide = _inputs(guided, seed=1)
    R = _rotation(7, reflect)
    shift = torch.tensor([3.0, -1.0, 0.5], dtype=torch.float64)
    with torch.no_grad():
        f = net.field(x, batch, guide)
        moved = net.field(x @ R.T + shift, batch, None if guide is None else guide @ R.T - shift)
    assert_close("F(Rx + s) vs R F(x)", f @ R.T, moved, ratio=1e-10)
    assert f.sum(0).abs().max() < 1e-10  # eq_transform: equal and opposite on each edge


def test_permutation_equivariance() -> None:
    g = _conformer("CC(=O)NC")
    perm = np.random.default_rng(0).permutation(g.num_atoms)
    inv = np.argsort(perm)
    g2 = MolGraph(g.atoms[perm], inv[g.edge_index], g.bond_types, g.positions[perm])  # type: ignore[index]
    torch.manual_seed(0)
    net = DualEncoderEpsNet(
        EpsNetConfig(hidden=8, num_convs=2, num_convs_local=2, guided=True)
    ).double()
    x = torch.randn(g.num_atoms, 3, dtype=torch.float64)
    guide = torch.randn(g.num_atoms, 3, dtype=torch.float64)
    with torch.no_grad():
        a = net.field(x, pack([pair_template(g)]), guide)
        b = net.field(x[perm], pack([pair_template(g2)]), guide[perm])
    assert_close("F permuted", a[perm], b, ratio=1e-10)


def test_guide_enters_every_edge_through_its_distance_only() -> None:
    net, x, batch, guide = _inputs(True, seed=2)
    assert guide is not None
    with torch.no_grad():
        a = net(x, batch, guide)
        b = net(x, batch, guide @ _rotation(3).T + 5.0)  # rotate the guide alone
        c = net(x, batch, guide * 1.3)
    for u, v in zip(a, b, strict=True):
        assert_close("guide rotated alone", u, v, ratio=1e-10)
    assert (a[0] - c[0]).abs().max() > 1e-6 and (a[1] - c[1]).abs().max() > 1e-6


def test_loss_is_zero_for_the_exact_edge_targets_and_positive_otherwise() -> None:
    net, _, batch, _ = _inputs(False)
    g = [_conformer("CCCCO"), _conformer("c1ccncc1")]
    x0 = torch.from_numpy(np.concatenate([c.positions for c in g]))  # type: ignore[arg-type]
    noise = torch.randn(x0.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    abar = torch.full((batch.num_atoms, 1), 0.3, dtype=torch.float64)

    class Exact(torch.nn.Module):  # outputs GeoDiff's per-edge targets
        config = net.config

        def forward(self, x, graph, guide=None, sigma=None):
            i, j = graph.pairs
            sig = ((1 - 0.3) / 0.3) ** 0.5
            t = ((x0[i] - x0[j]).norm(dim=-1) - (x[i] - x[j]).norm(dim=-1)) / sig
            loc = local_mask(graph)
            return torch.where(~loc, t, 0 * t), torch.where(loc, t, 0 * t)

    assert float(geodiff_loss(Exact(), x0, noise, abar, batch, None)) < 1e-20  # type: ignore[arg-type]
    with torch.no_grad():
        assert float(geodiff_loss(net, x0, noise, abar, batch, None)) > 1e-3


def _generator(guided: bool, sampler: str = "ld") -> DiffusionGenerator:
    cfg = DiffusionConfig(
        epsnet=EpsNetConfig(hidden=8, num_convs=1, num_convs_local=1, guided=guided),
        sampler=sampler, langevin=LangevinConfig(steps=20), steps=10, batch_size=2,
        train=TrainConfig(steps=2, lr=1e-3, weight_decay=0.0),
    )  # fmt: skip
    torch.manual_seed(0)
    return DiffusionGenerator(cfg)


@pytest.mark.parametrize("sampler", ["ld", "ddpm"])
def test_seeded_training_and_sampling_are_deterministic(sampler: str) -> None:
    graphs = [_conformer("CCO"), _conformer("CC#N")]
    guides = [g.positions + 0.1 for g in graphs]  # type: ignore[operator]
    a, b = _generator(True, sampler), _generator(True, sampler)
    ha, hb = a.fit(graphs, guides, seed=1), b.fit(graphs, guides, seed=1)
    assert ha.losses == hb.losses
    sg = [np.repeat(g[None], 3, axis=0) for g in guides]
    s1, s2, s3 = (
        a.sample(graphs, 3, sg, seed=4),
        b.sample(graphs, 3, sg, seed=4),
        a.sample(graphs, 3, sg, seed=5),
    )
    assert all(np.array_equal(p, q) for p, q in zip(s1, s2, strict=True))
    assert not np.array_equal(s1[0], s3[0])
    assert [s.shape for s in s1] == [(3, g.num_atoms, 3) for g in graphs]
    assert all(np.isfinite(s).all() and np.abs(s.mean(axis=1)).max() < 1e-5 for s in s1)


def test_langevin_retries_with_local_clipping_after_a_nan() -> None:
    gen = _generator(False)
    g = [_conformer("CCO")]
    calls: list[float | None] = []
    field = gen.net.field

    def flaky(*args, clip_local=None, **kw):  # NaN unless the local field is clipped
        calls.append(clip_local)
        out = field(*args, clip_local=clip_local, **kw)
        return out if clip_local is not None else out * float("nan")

    gen.net.field = flaky  # type: ignore[method-assign]
    gen.fitted = True  # the retry logic does not depend on the weights
    s = gen.sample(g, 2, seed=0)
    assert calls[0] is None and calls[-1] == 20.0 and np.isfinite(s[0]).all()


def test_bad_input_raises_naming_the_molecule() -> None:
    gen = _generator(False)
    with pytest.raises(ValueError, match=r"graphs\[0\].*'CCO'.*no 3-D coordinates"):
        gen.fit([mol_graph(Chem.AddHs(Chem.MolFromSmiles("CCO")))])
    salt = Chem.AddHs(Chem.MolFromSmiles("C.O"))
    AllChem.EmbedMolecule(salt, randomSeed=0)
    with pytest.raises(ValueError, match=r"graphs\[0\].*disconnected fragments"):
        gen.fit([mol_graph(salt)])
    with pytest.raises(ValueError, match=r"graphs\[0\].*disconnected fragments"):
        gen.sample([mol_graph(salt)], 1)
    for smi in ("C[Se]C", "[Li]C"):  # elements the featuriser does not embed
        with pytest.raises(ValueError, match=r"graphs\[0\].*atomic numbers \[(34|3)\].*featuriser"):
            gen.sample([mol_graph(Chem.AddHs(Chem.MolFromSmiles(smi)))], 1)
    with pytest.raises(ValueError, match="network"):
        DiffusionConfig(network="schnet")
    with pytest.raises(ValueError, match="sampler"):
        DiffusionConfig(sampler="euler")
    with pytest.raises(ValueError, match="sampler"):
        DiffusionConfig(network="egnn", sampler="ld")
    with pytest.raises(TypeError, match="epsnet"):
        DiffusionConfig(epsnet="big")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="steps"):
        LangevinConfig(steps=0)
    with pytest.raises(ValueError, match="hidden"):
        EpsNetConfig(hidden=0)
    with pytest.raises(TypeError, match="config"):
        DualEncoderEpsNet("big")  # type: ignore[arg-type]
    net, x, batch, guide = _inputs(True)
    with pytest.raises(ValueError, match="guide: this network is guided"):
        net(x, batch)
    with pytest.raises(ValueError, match="x: expected shape"):
        net(x[:-1], batch, guide)
    un, x, batch, _ = _inputs(False)
    with pytest.raises(ValueError, match="not guided"):
        un(x, batch, x)


def test_training_lowers_the_geodiff_loss_on_one_molecule() -> None:
    g = [_conformer("CC(=O)N")]
    cfg = DiffusionConfig(
        epsnet=EpsNetConfig(hidden=16, num_convs=2, num_convs_local=2), batch_size=4,
        train=TrainConfig(steps=60, lr=3e-3, warmup=5, weight_decay=0.0),
    )  # fmt: skip
    torch.manual_seed(0)
    losses = DiffusionGenerator(cfg).fit(g, seed=0).losses
    assert np.mean(losses[-15:]) < 0.5 * np.mean(losses[:15])


def _option_net(**kw: object) -> tuple[DualEncoderEpsNet, torch.Tensor, object, torch.Tensor]:
    _, x, batch, guide = _inputs(True, seed=3)
    torch.manual_seed(3)
    cfg = EpsNetConfig(hidden=8, num_convs=2, num_convs_local=2, guided=True, **kw)  # type: ignore[arg-type]
    return DualEncoderEpsNet(cfg).double(), x, batch, guide  # type: ignore[return-value]


def test_heavy_guide_edges_ignore_hydrogen_guides_only() -> None:
    net, x, batch, guide = _option_net(guide_edges="heavy")
    h = batch.z == 0  # type: ignore[attr-defined]  # ELEMENTS[0] = H
    moved_h, moved_c = guide.clone(), guide.clone()
    moved_h[h] += torch.randn(int(h.sum()), 3, dtype=torch.float64)
    moved_c[~h] *= 1.3
    with torch.no_grad():
        a, b, c = net(x, batch, guide), net(x, batch, moved_h), net(x, batch, moved_c)  # type: ignore[arg-type]
    for u, v in zip(a, b, strict=True):
        assert_close("H guides moved", u, v, ratio=1e-12)
    assert (a[0] - c[0]).abs().max() > 1e-6 and (a[1] - c[1]).abs().max() > 1e-6


def test_time_input_reads_sigma_and_stays_equivariant() -> None:
    net, x, batch, guide = _option_net(time_input=True)
    n = x.shape[0]
    s1, s2 = torch.full((n,), 0.1, dtype=torch.float64), torch.full((n,), 2.0, dtype=torch.float64)
    R = _rotation(5, reflect=True)
    with torch.no_grad():
        f = net.field(x, batch, guide, sigma=s1)  # type: ignore[arg-type]
        moved = net.field(x @ R.T + 1.0, batch, guide @ R.T, sigma=s1)  # type: ignore[arg-type]
        other = net.field(x, batch, guide, sigma=s2)  # type: ignore[arg-type]
    assert_close("F(Rx + s) vs R F(x), time input", f @ R.T, moved, ratio=1e-10)
    assert (f - other).abs().max() > 1e-6
    with pytest.raises(ValueError, match="sigma"):
        net(x, batch, guide)  # type: ignore[arg-type]


def test_scaled_guide_input_is_the_exact_heavy_score_and_stays_equivariant() -> None:
    """``guide_input="scaled"`` feeds ``(g - d) / sigma``: invariant inputs, so the field
    rotates with the atoms; it needs sigma; and the encoders see exactly that quantity."""
    net, x, batch, guide = _option_net(guide_input="scaled")
    n = x.shape[0]
    sig = torch.full((n,), 0.3, dtype=torch.float64)
    R = _rotation(6, reflect=True)
    with torch.no_grad():
        f = net.field(x, batch, guide, sigma=sig)  # type: ignore[arg-type]
        moved = net.field(x @ R.T - 2.0, batch, guide @ R.T + 1.0, sigma=sig)  # type: ignore[arg-type]
        other = net.field(x, batch, guide, sigma=2 * sig)  # type: ignore[arg-type]
    assert_close("F(Rx + s) vs R F(x), scaled guide", f @ R.T, moved, ratio=1e-10)
    assert (f - other).abs().max() > 1e-6
    with pytest.raises(ValueError, match="sigma"):
        net(x, batch, guide)  # type: ignore[arg-type]
    seen: list[torch.Tensor] = []
    hook = net.edge_condition_local.register_forward_hook(  # type: ignore[union-attr]
        lambda _m, args, _out: seen.append(args[0])
    )
    with torch.no_grad():
        net(x, batch, guide, sig)  # type: ignore[arg-type]
    hook.remove()
    i, j = batch.pairs  # type: ignore[attr-defined]
    want = ((guide[i] - guide[j]).norm(dim=-1) - (x[i] - x[j]).norm(dim=-1)) / 0.3
    assert_close("local guide input", seen[0], want[local_mask(batch)], ratio=1e-12)  # type: ignore[arg-type]


def test_calibrated_guide_input_reads_the_told_level_and_stays_equivariant() -> None:
    """``guide_input="calibrated"`` (ours): the guide encoders see exactly
    ``u = sigma (g - d) / (sigma^2 + sigma_g^2)`` and ``r = sigma_g / sqrt(sigma^2 + sigma_g^2)``;
    with sigma_g = 0 the first is ``scaled``'s input; the field rotates with the atoms; it
    needs both levels, and other networks refuse a told level."""
    net, x, batch, guide = _option_net(guide_input="calibrated")
    n = x.shape[0]
    sig = torch.full((n,), 0.3, dtype=torch.float64)
    sg = torch.full((n,), 0.4, dtype=torch.float64)
    R = _rotation(7, reflect=True)
    with torch.no_grad():
        f = net.field(x, batch, guide, sigma=sig, guide_sigma=sg)  # type: ignore[arg-type]
        moved = net.field(x @ R.T + 0.5, batch, guide @ R.T - 1.0, sigma=sig, guide_sigma=sg)  # type: ignore[arg-type]
        other = net.field(x, batch, guide, sigma=sig, guide_sigma=2 * sg)  # type: ignore[arg-type]
    assert_close("F(Rx + s) vs R F(x), calibrated guide", f @ R.T, moved, ratio=1e-10)
    assert (f - other).abs().max() > 1e-6  # the told level changes the field
    with pytest.raises(ValueError, match="guide_sigma"):
        net(x, batch, guide, sig)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sigma"):
        net(x, batch, guide, None, sg)  # type: ignore[arg-type]
    seen: list[torch.Tensor] = []
    hook = net.edge_condition_global.register_forward_hook(  # type: ignore[union-attr]
        lambda _m, args, _out: seen.append(args[0])
    )
    with torch.no_grad():
        net(x, batch, guide, sig, sg)  # type: ignore[arg-type]
        net(x, batch, guide, sig, torch.zeros_like(sg))  # type: ignore[arg-type]
    hook.remove()
    i, j = batch.pairs  # type: ignore[attr-defined]
    gap = (guide[i] - guide[j]).norm(dim=-1) - (x[i] - x[j]).norm(dim=-1)
    assert seen[0].shape == (gap.numel(), 2)
    assert_close("u", seen[0][:, 0], 0.3 * gap / (0.09 + 0.16), ratio=1e-12)
    assert_close("r", seen[0][:, 1], torch.full_like(gap, 0.4 / 0.5), ratio=1e-12)
    assert_close("u at sigma_g = 0 (scaled)", seen[1][:, 0], gap / 0.3, ratio=1e-12)
    plain, *_ = _option_net(guide_input="scaled")
    with pytest.raises(ValueError, match="guide_sigma"):
        plain(x, batch, guide, sig, sg)  # type: ignore[arg-type]


def _level_of(r: torch.Tensor, told: float) -> torch.Tensor:
    """The noise level sigma that ``r = told / sqrt(sigma^2 + told^2)`` implies."""
    return told * (1 / r.double() ** 2 - 1).clamp_min(0).sqrt()


def _told_03(*, batch_size: int, train_steps: int, **changes: Any) -> DiffusionConfig:
    """A tiny told-level stage 2 trained on guides told sigma_g = 0.3 Å, with `changes`."""
    return DiffusionConfig(
        epsnet=EpsNetConfig(hidden=8, num_convs=1, num_convs_local=1, guided=True,
                            guide_input="calibrated"),
        langevin=LangevinConfig(steps=6), steps=5, batch_size=batch_size,
        guide_augmentation=False, guide_noise=(0.3, 0.3),
        train=TrainConfig(steps=train_steps, lr=1e-3, weight_decay=0.0), **changes,
    )  # fmt: skip


def test_the_told_level_reaches_the_encoders_in_training_and_sampling() -> None:
    """Training with ``guide_noise=(0.3, 0.3)`` tells every edge r for sigma_g = 0.3 at one
    of GeoDiff's training levels; sampling tells ``guide_sigma`` (config default or
    argument) at the sampler's levels. A level that did not arrive gives other r."""
    g = [_conformer("CCO"), _conformer("CC#N")]
    cfg = _told_03(batch_size=4, guide_sigma=0.2, train_steps=2)
    torch.manual_seed(0)
    gen = DiffusionGenerator(cfg)
    seen: list[torch.Tensor] = []
    hook = gen.net.edge_condition_local.register_forward_hook(  # type: ignore[union-attr]
        lambda _m, args, _out: seen.append(args[0].detach()[:, 1])
    )
    gen.fit(g, [c.positions.copy() for c in g], seed=0)  # type: ignore[union-attr]
    abar = torch.cumprod(1 - torch.from_numpy(sigmoid_betas()), 0)
    levels = ((1 - abar) / abar).sqrt()
    trained = torch.cat(seen)
    implied = _level_of(trained, 0.3)
    gap = (implied[:, None] - levels[None, :]).abs().min(dim=1).values
    assert float((gap / implied).max()) < 1e-3  # every r: sigma_g = 0.3 at a training level
    guides = [np.repeat(c.positions[None], 2, axis=0) for c in g]  # type: ignore[index]
    lvl = LangevinConfig(steps=6)
    ks = np.unique(np.round(np.linspace(4999, 0, lvl.steps)).astype(np.int64))
    for told, kw in ((0.2, {}), (0.7, {"guide_sigma": 0.7}), (0.0, {"guide_sigma": 0.0})):
        seen.clear()
        gen.sample(g, 2, guides, seed=0, **kw)  # type: ignore[arg-type]
        r = torch.stack([a[0] for a in seen])
        if told == 0.0:
            assert float(r.abs().max()) == 0.0
            continue
        assert_close(f"r at sampling, told {told}", r.double(),
                     (told / (levels[ks].flip(0) ** 2 + told**2).sqrt()).float().double(),
                     ratio=1e-5)  # fmt: skip
    hook.remove()


def test_clean_guide_share_draws_exact_guides_and_keeps_0_4_0_stream_at_zero() -> None:
    """`draw_guide_sigma` (ours, 0.4.1): p = 0 is 0.4.0's draw, value for value, and leaves
    the generator where 0.4.0 left it (the guide noise drawn next is the same); p = 1 gives
    only exact guides; 0 < p < 1 gives a clean share near p (seeded, 20,000 molecules: the
    binomial standard deviation is <= 0.0035) and the others on U[lo, hi]."""
    lo, hi, n = 0.2, 1.0, 20000

    def gen() -> torch.Generator:
        return torch.Generator().manual_seed(11)

    old_gen = gen()
    old = lo + (hi - lo) * torch.rand(n, generator=old_gen)  # 0.4.0's expression
    new_gen = gen()
    got = draw_guide_sigma(n, (lo, hi), 0.0, new_gen)
    assert torch.equal(got, old)
    assert torch.equal(torch.randn(5, generator=new_gen), torch.randn(5, generator=old_gen))
    assert float(draw_guide_sigma(n, (lo, hi), 1.0, gen()).abs().max()) == 0.0
    for p in (0.25, 0.5, 0.75):
        sg = draw_guide_sigma(n, (lo, hi), p, gen())
        clean = sg == 0
        assert abs(float(clean.float().mean()) - p) < 0.015, p
        assert torch.equal(sg[~clean], old[~clean])  # the rest: the same U[lo, hi] draw
        assert float(sg[~clean].min()) >= lo and float(sg[~clean].max()) <= hi


def test_clean_guide_share_reaches_training() -> None:
    """Training with ``guide_noise=(0.3, 0.3)``: with ``guide_clean_fraction=1`` every edge is
    told r = 0 (exact guides); with 0.5 some molecules are told 0 and the others 0.3 (r > 0);
    with 0 (default) none is told 0."""
    g = [_conformer("CCO"), _conformer("CC#N")]
    shares = {}
    for p in (0.0, 0.5, 1.0):
        cfg = _told_03(batch_size=8, guide_clean_fraction=p, train_steps=4)
        torch.manual_seed(0)
        gen = DiffusionGenerator(cfg)
        seen: list[torch.Tensor] = []
        hook = gen.net.edge_condition_global.register_forward_hook(  # type: ignore[union-attr]
            lambda _m, args, _out, seen=seen: seen.append(args[0].detach()[:, 1])
        )
        gen.fit(g, [c.positions.copy() for c in g], seed=0)  # type: ignore[union-attr]
        hook.remove()
        r = torch.cat(seen)
        shares[p] = float((r == 0).float().mean())
        if p == 1.0:
            continue
        assert float(r[r != 0].min()) > 0  # the noisy ones are told a level
    assert shares[1.0] == 1.0 and shares[0.0] == 0.0 and 0.0 < shares[0.5] < 1.0


def test_default_training_and_sampling_are_those_of_0_3_2() -> None:
    """The public path (no told level) is bit-for-bit what 0.3.2 computed: losses of a
    3-step fit and samples, unguided and guided (numbers printed by 0.3.2's code with the
    same script; float32 CPU arithmetic, compared at 1e-5 relative so that other CPUs'
    rounding passes while any change of the random streams or the network does not)."""
    from msgen import molecule
    from msgen.data import with_positions

    rng = np.random.default_rng(0)
    graphs = [molecule(s) for s in ("CCO", "CC#N", "OCC=O")]
    graphs = [with_positions(g, rng.standard_normal((g.num_atoms, 3)) * 1.5) for g in graphs]
    guides = [g.positions + 0.3 * rng.standard_normal(g.positions.shape) for g in graphs]  # type: ignore[operator, union-attr]
    want = {
        False: ([894.8190307617188, 2260.42919921875, 2789.587646484375],
                [2715.292569875717, 350.7925867512822, 566.640718407929],
                [-12.494648933410645, 3.1253530979156494, 7.9716010093688965]),
        True: ([863.8732299804688, 2183.24560546875, 1964.6204833984375],
               [638.0654618740082, 320.887688010931, 368.55873078107834],
               [2.0472822189331055, 3.058983564376831, 5.720203399658203]),
    }  # fmt: skip
    for guided in (False, True):
        torch.manual_seed(7)
        gen = DiffusionGenerator(DiffusionConfig(
            epsnet=EpsNetConfig(hidden=8, num_convs=1, num_convs_local=1, guided=guided),
            langevin=LangevinConfig(steps=6), steps=4, batch_size=3,
            train=TrainConfig(steps=3, lr=1e-3, weight_decay=0.0),
        ))  # fmt: skip
        h = gen.fit(graphs, guides if guided else None, seed=1)
        s = gen.sample(
            graphs, 2, [np.repeat(a[None], 2, 0) for a in guides] if guided else None, seed=2
        )
        got = ([float(x) for x in h.losses], [float(np.abs(a).sum()) for a in s],
               [float(a[0, 0, 0]) for a in s])  # fmt: skip
        for name, a, b in zip(("losses", "sum |x|", "x[0, 0, 0]"), want[guided], got, strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-5, err_msg=f"guided={guided}: {name}")


@pytest.mark.parametrize(
    "options",
    [{"time_input": True}, {"guide_edges": "heavy"}, {"guide_input": "scaled"},
     {"guide_input": "calibrated"}],
)  # fmt: skip
def test_options_train_and_sample(options: dict[str, object]) -> None:
    g = [_conformer("CCO"), _conformer("CC#N")]
    told = options.get("guide_input") == "calibrated"
    cfg = DiffusionConfig(
        epsnet=EpsNetConfig(hidden=8, num_convs=1, num_convs_local=1, guided=True, **options),  # type: ignore[arg-type]
        langevin=LangevinConfig(steps=10), steps=5, batch_size=2,
        train=TrainConfig(steps=2, lr=1e-3, weight_decay=0.0),
        guide_augmentation=not told, guide_noise=(0.0, 1.0) if told else None,
    )  # fmt: skip
    guides = [c.positions + 0.1 for c in g]  # type: ignore[operator]
    for sampler in ("ld", "ddpm"):
        gen = DiffusionGenerator(dataclasses.replace(cfg, sampler=sampler))
        gen.fit(g, guides, seed=0)
        out = gen.sample(g, 2, [np.repeat(a[None], 2, axis=0) for a in guides], seed=0)
        assert all(np.isfinite(s).all() for s in out)


def test_langevin_with_the_exact_score_converges_only_with_a_capped_step() -> None:
    """A limit case: fed the exact edge score, the sampler must land on the distances of x0
    (mirror images allowed). With the step scaled by the full stride (0.2.0) it diverges."""
    g = [_conformer("CC(=O)NC"), _conformer("c1ccncc1O"), _conformer("OCC#N")]
    batch = pack([pair_template(m) for m in g])
    x0 = torch.from_numpy(np.concatenate([m.positions - m.positions.mean(0) for m in g])).float()  # type: ignore[operator]
    net = ExactEdgeScore(x0)
    ab = torch.cumprod(1 - torch.from_numpy(sigmoid_betas()), 0)
    sig = ((1 - ab) / ab).sqrt()

    def dist_error(x: torch.Tensor) -> float:
        i, j = batch.pairs
        return float(((x[i] - x[j]).norm(dim=-1) - (x0[i] - x0[j]).norm(dim=-1)).abs().mean())

    x = langevin_sample(net, batch, None, sig, LangevinConfig(steps=250), 0)  # type: ignore[arg-type]
    assert dist_error(x) < 0.05
    full = LangevinConfig(steps=250, max_step_scale=float("inf"))
    bad = langevin_sample(net, batch, None, sig, full, 0, nan_ok=True)  # type: ignore[arg-type]
    assert not bool(torch.isfinite(bad).all()) or dist_error(bad) > 1.0


def _fitted_generator() -> DiffusionGenerator:
    gen = _generator(True)
    gen.fit([_conformer("CC(=O)NC")], [_conformer("CC(=O)NC").positions], seed=0)  # type: ignore[list-item]
    return gen


@pytest.mark.parametrize("reflect", [False, True])
def test_sampled_conformers_ignore_a_rotated_reflected_or_moved_guide(reflect: bool) -> None:
    """The generator (trained, Langevin over 20 levels) reads the guide through distances only: a guide
    rotated or reflected and translated gives the same conformers, seed for seed."""
    gen = _fitted_generator()
    g = _conformer("CC(=O)NC")
    guide = np.repeat(g.positions[None], 2, axis=0)  # type: ignore[index]
    R = _rotation(11, reflect).numpy()
    a = gen.sample([g], 2, [guide], seed=3)[0]
    b = gen.sample([g], 2, [guide @ R.T + np.array([1.0, -2.0, 0.5])], seed=3)[0]
    assert np.isfinite(a).all()
    assert np.abs(a - b).max() < 1e-4  # float32 sampling; a bug moves atoms by Å


def test_sampled_conformers_are_permutation_equivariant(monkeypatch: pytest.MonkeyPatch) -> None:
    """Renumbering the atoms (and the sampler's noise with them) renumbers the conformers."""
    gen = _fitted_generator()
    g = _conformer("CC(=O)NC")
    n = g.num_atoms
    perm = np.random.default_rng(1).permutation(n)
    g2 = MolGraph(g.atoms[perm], np.argsort(perm)[g.edge_index], g.bond_types, g.positions[perm])  # type: ignore[index]
    guide = np.repeat(g.positions[None], 1, axis=0)  # type: ignore[index]
    a = gen.sample([g], 1, [guide], seed=3)[0]
    real = torch.randn

    def permuted_randn(*shape, **kw):  # the same noise, atoms in the new order
        out = real(*shape, **kw)
        return out[torch.from_numpy(perm)] if out.dim() == 2 and out.shape[0] == n else out

    monkeypatch.setattr(torch, "randn", permuted_randn)
    b = gen.sample([g2], 1, [guide[:, perm]], seed=3)[0]
    assert np.isfinite(a).all()
    assert np.abs(a[:, perm] - b).max() < 1e-4  # float32 summation order: ~4e-6 Å
