"""Where does the common drift of MELD's raw rates come from? Logs it during training.

Trains the tiny MELD arm exactly as `reproduce` does (`experiments.qm9.train`'s call of
`shared_core.train.fit`: AdamW, lr 1e-3, warm-up then decay, grad-clip 1) with the given
options, and records every step: the mean log rate of the batch's elements, f_phi's bias (the
common warp) and its gradient (as the optimiser saw it, after clipping). It then compares the bias's actual (AdamW) movement with the
movement plain SGD at the same learning rates would have made from the same gradients,
``-sum_t lr_t g_t``: AdamW divides each step by the gradient's running RMS, so a gradient of
consistent sign moves the bias at about ``lr`` per step however small it is.

    python benchmarks/rate_drift.py --recon --gradient score --out rate_drift.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np
import torch
from masked_diffusion import row_batches
from meld_diffusion.data import qm9_graphs
from meld_diffusion.experiments.qm9 import SCALES, _schedule, build
from meld_diffusion.meld import GRADIENTS, graph_loss_fn, with_counts

from shared_core.atomic import atomic_write_json
from shared_core.train import TrainConfig, fit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gradient", default="st", choices=GRADIENTS)
    ap.add_argument("--recon", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--out", default="rate_drift.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    cpu0 = time.process_time()
    config = replace(SCALES["tiny"], steps=a.steps, gradient=a.gradient, recon=a.recon)
    data = qm9_graphs(limit=config.n_train + config.n_reference, seed=a.seed)
    split = np.random.default_rng(a.seed).permutation(len(data))
    tr = split[config.n_reference :]  # the training split `reproduce` uses
    model = build("meld", config, a.seed)
    bias = model.rates.f_phi.bias
    rows = with_counts(torch.as_tensor(data.rows[tr]), torch.as_tensor(data.n_atoms[tr]))
    log: dict[str, list[float]] = {"bias": [], "grad": [], "lr": [], "log_w_mean": []}

    def callback(step: int, record: dict[str, float]) -> None:
        log["bias"].append(float(bias.detach()))
        log["grad"].append(float(bias.grad))
        log["lr"].append(record["lr"])
        log["log_w_mean"].append(record["log_w_mean"])

    start = float(bias.detach())
    tc = TrainConfig(steps=config.steps, lr=config.lr, warmup=config.warmup, weight_decay=0.0)
    loss_fn = graph_loss_fn(
        _schedule(config), config.denoiser.max_atoms, tau=config.tau, gradient=config.gradient,
        sampling_eps=config.sampling_eps, recon=config.recon,
    )  # fmt: skip
    fit(model, loss_fn, row_batches(rows, config.batch, a.seed), tc, callback=callback,
        show_progress=False, device="cpu")  # fmt: skip
    g, lr = np.array(log["grad"]), np.array(log["lr"])
    report: dict[str, object] = {"gradient": a.gradient, "recon": a.recon, "seed": a.seed}
    for end in sorted({100, 300, len(g) // 2, len(g)} & set(range(1, len(g) + 1))):
        gs = g[:end]
        report[f"step {end}"] = {
            "log_w_mean": float(np.mean(log["log_w_mean"][max(0, end - 20) : end])),
            "bias_moved": log["bias"][end - 1] - start,
            "sgd_would_move": float(-(lr[:end] * gs).sum()),
            "grad_mean": float(gs.mean()),
            "grad_std": float(gs.std()),
            "grad_positive_fraction": float((gs > 0).mean()),
        }
        print(end, json.dumps(report[f"step {end}"]), flush=True)
    report["cpu_s"] = time.process_time() - cpu0
    print("cpu_s", report["cpu_s"])
    atomic_write_json(a.out, report)


if __name__ == "__main__":
    main()
