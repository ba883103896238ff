import numpy as np
import pytest
import torch
from masked_diffusion import LogLinearSchedule, row_batches
from meld_diffusion.clashing import permute_rows
from meld_diffusion.meld import (
    GraphMDM,
    graph_loss_fn,
    meld_loss,
    meld_sample,
    vanilla_loss,
    vanilla_sample,
    with_counts,
)
from meld_diffusion.model import UnitRates
from meld_diffusion.reference import meld_terms_loop
from meld_diffusion.schedule import ElementwiseSchedule

from shared_core.testing import assert_close
from shared_core.train import TrainConfig, fit

N = 6
SCHEDULE = ElementwiseSchedule(LogLinearSchedule())


def _batch(qm9_rows, k: int = 24):
    rows, counts, _ = qm9_rows
    return rows[-k:], counts[-k:]


def test_unit_rates_give_vanilla_masked_diffusion_bit_for_bit(denoiser, qm9_rows):
    x, n = _batch(qm9_rows)
    model = GraphMDM(denoiser)
    a = vanilla_loss(
        model, x, n, LogLinearSchedule(), max_atoms=N, generator=torch.Generator().manual_seed(5)
    )
    b = meld_loss(
        model, UnitRates(), x, n, SCHEDULE, max_atoms=N, generator=torch.Generator().manual_seed(5)
    )
    assert torch.equal(a.x_t, b.x_t)
    assert torch.equal(a.logits, b.logits)
    assert torch.equal(a.terms, b.terms)
    assert torch.equal(a.loss, b.loss)


def test_terms_match_the_loop_reference(denoiser, rates, qm9_rows):
    x, n = _batch(qm9_rows, 6)
    model = GraphMDM(denoiser.double())
    rates = rates.double()
    out = meld_loss(
        model, rates, x, n, SCHEDULE, max_atoms=N, generator=torch.Generator().manual_seed(2)
    )
    assert bool((out.x_t == 4).any()) and bool((out.w - 1).abs().max() > 0.1)
    ref = meld_terms_loop(
        out.logits.detach(), x, out.x_t, out.t, out.w.detach(), n, N, SCHEDULE.base
    )
    assert_close("terms", ref, out.terms.detach(), 1e-10)


def test_loss_is_invariant_to_atom_order(denoiser, rates, qm9_rows):
    rows, counts, _ = qm9_rows
    x, n = rows[counts == N][:8], counts[counts == N][:8]
    model, rates = GraphMDM(denoiser.double()), rates.double()
    t = torch.linspace(0.05, 0.95, len(x), dtype=torch.float64)
    u = torch.rand(x.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    perm = np.random.default_rng(1).permutation(N)
    xp = torch.as_tensor(permute_rows(x.numpy(), perm, N))
    up = torch.as_tensor(permute_rows(u.numpy(), perm, N))
    a = meld_loss(model, rates, x, n, SCHEDULE, max_atoms=N, t=t, u=u)
    b = meld_loss(model, rates, xp, n, SCHEDULE, max_atoms=N, t=t, u=up)
    assert_close("loss", a.loss, b.loss, 1e-10)
    assert_close("w", torch.as_tensor(permute_rows(a.w.detach().numpy(), perm, N)), b.w, 1e-10)


def test_gradients_reach_the_schedule_network(denoiser, rates, qm9_rows):
    x, n = _batch(qm9_rows)
    out = meld_loss(
        GraphMDM(denoiser),
        rates,
        x,
        n,
        SCHEDULE,
        max_atoms=N,
        generator=torch.Generator().manual_seed(0),
    )
    out.loss.backward()
    head = rates.net.atom_head[1].weight.grad
    assert head is not None and float(head.abs().sum()) > 0
    assert all(p.grad is not None for p in rates.parameters())
    # through the masks too (straight-through), not only through the weights: tau scales the
    # mask path alone, so a near-flat relaxation changes the gradient but never the loss
    grads, losses = [], []
    for tau in (1.0, 1e6):
        rates.zero_grad()
        out = meld_loss(
            GraphMDM(denoiser),
            rates,
            x,
            n,
            SCHEDULE,
            max_atoms=N,
            tau=tau,
            generator=torch.Generator().manual_seed(0),
        )
        out.loss.backward()
        losses.append(out.loss.detach())
        grads.append(rates.net.bond_head[1].weight.grad.clone())
    assert torch.equal(losses[0], losses[1])
    assert float((grads[0] - grads[1]).abs().max()) > 1e-6 * float(grads[0].abs().max())


def test_unit_rate_sampler_is_masked_diffusions_ancestral_sampler(denoiser, qm9_rows):
    _, n = _batch(qm9_rows, 40)
    model = GraphMDM(denoiser)
    a = vanilla_sample(
        model,
        n,
        max_atoms=N,
        steps=12,
        schedule=LogLinearSchedule(),
        generator=torch.Generator().manual_seed(9),
    )
    b = meld_sample(
        model,
        UnitRates(),
        n,
        max_atoms=N,
        steps=12,
        schedule=SCHEDULE,
        generator=torch.Generator().manual_seed(9),
    )
    assert torch.equal(a, b)


def test_meld_samples_are_complete_and_keep_padding(denoiser, rates, qm9_rows):
    _, n = _batch(qm9_rows, 40)
    x = meld_sample(
        GraphMDM(denoiser),
        rates,
        n,
        max_atoms=N,
        steps=7,
        schedule=SCHEDULE,
        generator=torch.Generator().manual_seed(1),
    )
    from meld_diffusion.data import valid_positions

    valid = valid_positions(n, N)
    assert int(x.max()) < 4 and int(x.min()) >= 0
    assert torch.all(x[~valid] == 0)
    y = meld_sample(
        GraphMDM(denoiser),
        rates,
        n,
        max_atoms=N,
        steps=7,
        schedule=SCHEDULE,
        generator=torch.Generator().manual_seed(1),
    )
    assert torch.equal(x, y)


@pytest.mark.parametrize("with_rates", [False, True])
def test_training_through_fit_is_seeded(denoiser, rates, qm9_rows, with_rates):
    rows, counts, _ = qm9_rows
    data = with_counts(rows, counts)
    histories = []
    for _ in range(2):
        model = GraphMDM(
            type(denoiser)(denoiser.cfg), type(rates)(rates.net.cfg) if with_rates else None
        )
        torch.manual_seed(0)
        model.load_state_dict({k: torch.randn_like(v) * 0.1 for k, v in model.state_dict().items()})
        res = fit(
            model,
            graph_loss_fn(SCHEDULE, N),
            row_batches(data, 8, 0),
            TrainConfig(steps=3, lr=1e-3),
            device="cpu",
            show_progress=False,
        )
        histories.append(res.losses)
    assert histories[0] == histories[1] and all(np.isfinite(histories[0]))


def test_argument_errors(denoiser, rates, qm9_rows):
    x, n = _batch(qm9_rows, 4)
    model = GraphMDM(denoiser)
    with pytest.raises(ValueError, match="tau"):
        meld_loss(model, rates, x, n, SCHEDULE, max_atoms=N, tau=0.0)
    with pytest.raises(TypeError, match="schedule: expected an ElementwiseSchedule"):
        meld_loss(model, rates, x, n, LogLinearSchedule(), max_atoms=N)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="u: expected shape"):
        meld_loss(model, rates, x, n, SCHEDULE, max_atoms=N, u=torch.rand(2, 2))
    with pytest.raises(ValueError, match=r"n_atoms: expected integers in \[1, 6\]"):
        vanilla_loss(model, x, n * 0, LogLinearSchedule(), max_atoms=N)
    with pytest.raises(ValueError, match=r"x0: expected a \(batch, 21\)"):
        vanilla_loss(model, x[:, :5], n, LogLinearSchedule(), max_atoms=N)
    with pytest.raises(ValueError, match="steps"):
        meld_sample(model, rates, n, max_atoms=N, steps=0, schedule=SCHEDULE)
    with pytest.raises(ValueError, match="temperature"):
        vanilla_sample(
            model, n, max_atoms=N, steps=2, schedule=LogLinearSchedule(), temperature=0.0
        )
    with pytest.raises(ValueError, match="n_atoms: expected counts"):
        vanilla_sample(model, n + 10, max_atoms=N, steps=2, schedule=LogLinearSchedule())


def test_calibrated_split_keeps_the_loss_and_gives_the_denoiser_base_weights(
    denoiser, rates, qm9_rows
):
    x, n = _batch(qm9_rows, 8)
    model, rates = GraphMDM(denoiser.double()), rates.double()
    outs = [
        meld_loss(
            model,
            rates,
            x,
            n,
            SCHEDULE,
            calibrated=c,
            generator=torch.Generator().manual_seed(4),
            max_atoms=N,
        )
        for c in (True, False)
    ]
    assert_close("loss", outs[1].loss, outs[0].loss, 1e-12)
    assert torch.equal(outs[0].x_t, outs[1].x_t)
    params = list(model.parameters())
    g_split = torch.autograd.grad(outs[0].loss, params, retain_graph=True)
    out = outs[0]
    nll = -torch.log_softmax(out.logits, -1).gather(-1, x.unsqueeze(-1)).squeeze(-1)
    base_w = SCHEDULE.base.weight(out.t.double())[:, None]
    from meld_diffusion.data import valid_positions

    manual = ((out.x_t == 4) * base_w * nll).sum() / valid_positions(n, N).sum()
    g_manual = torch.autograd.grad(manual, params)
    flat = lambda gs: torch.cat([g.reshape(-1) for g in gs])  # noqa: E731
    assert_close("denoiser grad", flat(g_manual), flat(g_split), 1e-10)
    g_full = torch.autograd.grad(outs[1].loss, params)  # element-wise weights: a different fit
    assert float((flat(g_full) - flat(g_manual)).norm()) > 0.1 * float(flat(g_manual).norm())
