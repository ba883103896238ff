"""The gradient of `meld_loss(recon=True)` with respect to phi: the "score" estimator is unbiased
for the exact gradient of the expected loss (every mask of a 2-atom graph enumerated, at one
time t and at the cut-off), while straight-through is not (issue 33: the collapse with the
reconstruction term is the straight-through estimate's)."""

from __future__ import annotations

import itertools

import torch
from masked_diffusion import LogLinearSchedule
from meld_diffusion.data import MASK_ID, valid_positions
from meld_diffusion.meld import meld_loss
from meld_diffusion.schedule import ElementwiseSchedule

N = 6
SCHEDULE = ElementwiseSchedule(LogLinearSchedule(eps=1e-4))
DELTA = 1e-3


def _exact(model, x0, n_atoms, cols, t):  # type: ignore[no-untyped-def]
    """E over every mask of the loss of one graph at time t plus its reconstruction term at
    DELTA, per valid element (as `meld_loss` normalises); returns it with grad attached."""
    valid = valid_positions(n_atoms, N)[0]
    idx = valid.nonzero().squeeze(1)
    combos = torch.tensor(list(itertools.product([0, 1], repeat=len(idx))), dtype=torch.bool)
    hard = torch.zeros(len(combos), x0.shape[1], dtype=torch.bool)
    hard[:, idx] = combos
    w = model.rates(cols)[0]
    total = torch.zeros(())
    for time, recon in ((t, False), (DELTA, True)):
        tt = torch.full((1,), time)
        p = SCHEDULE.mask_prob(tt, w[None])[0]
        weight = torch.ones_like(p) if recon else SCHEDULE.weight(tt, w[None])[0]
        x_t = torch.where(hard, MASK_ID, x0.expand(len(combos), -1))
        k = len(combos)
        logits = model(
            x_t, tt.expand(k), n_atoms.expand(k), model.rates.embeddings(cols).expand(k, -1, -1)
        )
        logp = torch.log_softmax(logits.float(), -1)
        nll = -logp.gather(-1, x0.expand(k, -1)[..., None]).squeeze(-1)
        hm = hard.to(p.dtype)
        q = (hm * p.log() + (1 - hm) * (1 - p).log())[:, idx].sum(-1).exp()
        total = total + (q * (hm * weight * nll).sum(-1)).sum()
    return total / len(idx)


def test_recon_gradient_score_is_unbiased_and_straight_through_is_not(meld_model, qm9_rows):
    rows, counts, _ = qm9_rows
    i = int((counts == 2).nonzero()[0])  # a 2-atom molecule: 2 atoms + 1 bond, 8 masks
    x0, n_atoms = rows[i : i + 1], counts[i : i + 1]
    cols = meld_model.rates.columns(1, N, torch.Generator().manual_seed(0))
    with torch.no_grad():
        meld_model.rates.f_phi.bias.fill_(-1.5)  # rates well below 1, as in the collapse
    t = 0.3
    bias = meld_model.rates.f_phi.bias
    meld_model.zero_grad()
    _exact(meld_model, x0, n_atoms, cols, t).backward()
    exact = float(bias.grad)
    reps, batches = 2000, 8
    g = torch.Generator().manual_seed(1)
    est = {}
    for gradient in ("score", "st"):
        draws = []
        for _ in range(batches):
            meld_model.zero_grad()
            out = meld_loss(
                meld_model, x0.expand(reps, -1), n_atoms.expand(reps), SCHEDULE, max_atoms=N,
                t=torch.full((reps,), t), columns=cols.expand(reps, -1), generator=g,
                sampling_eps=DELTA, recon=True, gradient=gradient,
            )  # fmt: skip
            out.loss.backward()
            draws.append(float(bias.grad))
        d = torch.tensor(draws, dtype=torch.float64)
        est[gradient] = (float(d.mean()), float(d.std() / batches**0.5))
    score, se = est["score"]
    assert abs(score - exact) < 5 * se + 1e-4, (exact, est)
    st, se_st = est["st"]
    assert abs(st - exact) > 10 * max(se, se_st), (exact, est)
