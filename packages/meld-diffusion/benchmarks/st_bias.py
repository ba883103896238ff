"""How biased is the straight-through gradient of MELD's schedule? An exact check.

On QM9 molecules small enough to enumerate every mask (3 heavy atoms: 3 atoms + 3 bonds, 64
masks), the expected NELBO over masks at a fixed time t and column assignment pi is a finite
sum, so its gradient with respect to phi (f_phi's bias: the common time warp; f_phi's weight:
the relative rates) is exact. Integrated over a midpoint grid of t in [sampling_eps, 1] it is
the gradient of the training objective itself. Each estimator of `meld.element_terms` is
averaged over many mask draws on the same grid and compared with it.

    python benchmarks/st_bias.py --steps 300 --grid 100 --draws 32

``--cutoffs 1e-3 1e-5`` (0.4.1) instead computes only exact gradients, on a log-spaced midpoint
grid in t over ``[cutoff, 1]`` (quadrature weights ``t ds``), for each cut-off: of the
truncated objective, and of the truncated objective plus the reconstruction term at the cut-off
(`meld_loss(recon=True)`). The continuous-time NELBO is flat in the common time warp only up to
the denoiser's time input, so these separate what the cut-off adds to the common-warp gradient.

    python benchmarks/st_bias.py --steps 300 --grid 60 --cutoffs 1e-3 1e-5 --out cutoff.json

``--recon`` (0.4.2) checks the estimators on the objective with the reconstruction term
(`meld_loss(recon=True)`): MELD is trained with ``recon=True`` and ``--train-gradient`` for
``--steps`` steps, the exact gradient is that of the truncated objective plus the exact
reconstruction term at the cut-off, and every estimator runs `meld_loss` with ``recon=True``.

    python benchmarks/st_bias.py --recon --train-gradient st --steps 300 --grid 60 \
        --estimators st score --out recon_bias.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from dataclasses import replace

import numpy as np
import torch
from meld_diffusion.data import MASK_ID, qm9_graphs, relayout, small_qm9_graphs, valid_positions
from meld_diffusion.experiments.qm9 import SCALES, train
from meld_diffusion.meld import GRADIENTS, _nll, meld_loss

N = 9


def exact_loss(model, x0, n_atoms, cols, t, schedule, dt=None, recon=False):  # type: ignore[no-untyped-def]
    """Sum over times t (k,) with quadrature weights dt (default 1/k: the mean) of E over every
    mask of the loss of graphs x0 (b, L); backpropagates one time at a time (the parameters'
    .grad holds the exact gradient) and returns the value. ``recon``: NELBO weight 1 (the
    reconstruction term ``1[masked] CE``) instead of ``w_i / t``."""
    rates = model.rates
    valid = valid_positions(n_atoms, N)
    idx = valid[0].nonzero().squeeze(1)
    combos = torch.tensor(list(itertools.product([0, 1], repeat=len(idx))), dtype=torch.bool)
    b, k, c = x0.shape[0], t.shape[0], combos.shape[0]
    w = rates(cols)  # (b, L)
    out = 0.0
    for j in range(k):
        tt = t[j].expand(b)
        p = schedule.mask_prob(tt, w).double()  # (b, L)
        weight = torch.ones_like(p) if recon else schedule.weight(tt, w).double()
        hard = torch.zeros(b, c, x0.shape[1], dtype=torch.bool)
        hard[:, :, idx] = combos[None]
        x_t = torch.where(hard, MASK_ID, x0[:, None].expand(-1, c, -1)).reshape(b * c, -1)
        pos = rates.embeddings(cols).repeat_interleave(c, 0)
        logits = model(x_t, tt.repeat_interleave(c), n_atoms.repeat_interleave(c), pos)
        nll, _ = _nll(logits, x0.repeat_interleave(c, 0))
        nll = nll.double().view(b, c, -1)
        hm = hard.double()
        logq = (hm * p[:, None].log() + (1 - hm) * (1 - p[:, None]).log())[:, :, idx].sum(-1)
        terms = (hm * weight[:, None] * nll).sum(-1)  # (b, c)
        dtj = 1.0 / k if dt is None else float(dt[j])
        value = (logq.exp() * terms).sum() / valid.sum() * dtj
        value.backward()
        out += value.item()
        w = rates(cols)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--grid", type=int, default=100)
    ap.add_argument("--draws", type=int, default=32)
    ap.add_argument("--bias", type=float, nargs="*", default=[0.0])
    ap.add_argument("--out", default="st_bias.json")
    ap.add_argument("--cutoffs", type=float, nargs="*", default=[])
    ap.add_argument("--recon", action="store_true")
    ap.add_argument("--train-gradient", default="st", choices=GRADIENTS)
    ap.add_argument("--estimators", nargs="*", default=list(GRADIENTS), choices=GRADIENTS)
    a = ap.parse_args()
    torch.manual_seed(0)
    cpu0 = time.process_time()
    config = replace(SCALES["tiny"], steps=a.steps, recon=a.recon, gradient=a.train_gradient)
    data = qm9_graphs(limit=config.n_train, seed=0)
    model, _ = train("meld", config, data.rows, data.n_atoms, 0, "cpu")
    model.double()
    sel = relayout(small_qm9_graphs(3)[3], 3, N)  # every 3-heavy-atom QM9 molecule
    x0 = torch.as_tensor(sel)
    n_atoms = torch.full((len(sel),), 3)
    g = torch.Generator().manual_seed(1)
    cols = model.rates.columns(len(sel), N, g)
    schedule = config.meld.schedule()
    lo = 1e-3
    t = lo + (1 - lo) * (torch.arange(a.grid, dtype=torch.float64) + 0.5) / a.grid
    f = model.rates.f_phi
    base_bias = float(f.bias.detach())
    report: dict[str, object] = {"molecules": len(sel), "steps": a.steps, "grid": a.grid}
    report |= {"recon": a.recon, "train_gradient": a.train_gradient}
    if a.cutoffs:
        f = model.rates.f_phi
        w = model.rates(cols).detach()[valid_positions(n_atoms, N)]
        report |= {"w_mean": float(w.mean()), "w_min": float(w.min()), "w_max": float(w.max())}
        for cut in a.cutoffs:
            s = np.log(cut) * (1 - (np.arange(a.grid) + 0.5) / a.grid)  # midpoints in log t
            tc = torch.as_tensor(np.exp(s))
            dt = tc * (-np.log(cut) / a.grid)  # dt = t ds
            model.zero_grad()
            loss = exact_loss(model, x0, n_atoms, cols, tc, schedule, dt=dt)
            d_trunc = float(f.bias.grad)
            model.zero_grad()
            rec = exact_loss(model, x0, n_atoms, cols, torch.tensor([cut]).double(), schedule,
                             dt=[1.0], recon=True)  # fmt: skip
            d_rec = float(f.bias.grad)
            row = {
                "truncated": {"loss": loss, "d_bias": d_trunc},
                "recon_term": {"loss": rec, "d_bias": d_rec},
                "truncated+recon": {"loss": loss + rec, "d_bias": d_trunc + d_rec},
            }
            report[f"cutoff {cut:g}"] = row
            print(cut, json.dumps(row), flush=True)
        report["cpu_s"] = time.process_time() - cpu0
        print("cpu_s", report["cpu_s"])
        with open(a.out, "w") as fh:
            json.dump(report, fh, indent=1)
        return
    for shift in a.bias:
        with torch.no_grad():
            f.bias.fill_(base_bias + shift)
        w = model.rates(cols).detach()[valid_positions(n_atoms, N)]
        row: dict[str, object] = {"w_mean": float(w.mean()), "w_min": float(w.min())}
        model.zero_grad()
        loss = exact_loss(model, x0, n_atoms, cols, t, schedule)
        if a.recon:  # + the exact reconstruction term at t = lo (gradients accumulate)
            row["exact truncated"] = {"loss": loss, "d_bias": float(f.bias.grad)}
            loss += exact_loss(model, x0, n_atoms, cols, torch.tensor([lo]).double(), schedule,
                               dt=[1.0], recon=True)  # fmt: skip
        exact_b, exact_w = float(f.bias.grad), f.weight.grad.clone().flatten()
        row["exact"] = {"loss": loss, "d_bias": exact_b}
        for gradient in a.estimators:
            for tau in (1.0, 0.1) if gradient != "score" else (1.0,):
                gb, gw = [], torch.zeros_like(exact_w)
                for _ in range(a.draws):
                    model.zero_grad()
                    tt = t.repeat_interleave(len(sel))
                    rep = len(t)
                    out = meld_loss(
                        model,
                        x0.repeat(rep, 1),
                        n_atoms.repeat(rep),
                        schedule,
                        max_atoms=N,
                        t=tt,
                        columns=cols.repeat(rep, 1),
                        generator=g,
                        tau=tau,
                        gradient=gradient,
                        recon=a.recon,
                    )
                    out.loss.backward()
                    gb.append(float(f.bias.grad))
                    gw += f.weight.grad.flatten() / a.draws
                cos = float(torch.nn.functional.cosine_similarity(gw, exact_w, dim=0))
                row[f"{gradient} tau={tau}"] = {
                    "d_bias": float(np.mean(gb)),
                    "d_bias_se": float(np.std(gb) / np.sqrt(len(gb))),
                    "cos_weight": cos,
                }
        report[f"shift {shift}"] = row
        print(json.dumps(row), flush=True)
    report["cpu_s"] = time.process_time() - cpu0
    print("cpu_s", report["cpu_s"])
    with open(a.out, "w") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
