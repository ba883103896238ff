"""Sampling throughput PGM / MDLM at equal steps, width and depth, for several sequence lengths.

MDLM: `masked_diffusion.ancestral_sample` (every step runs all 4 blocks on all L positions).
PGM: `pgm.pgm_ordered_sample` with a random order (2 encoder blocks on the clean tokens only,
GroupSwap + 2 decoder blocks on this step's L/S queries only). Random weights (speed does not
depend on training). Also the training step time ratio (loss + backward + AdamW step).
Prints a table with the ratios and how the sampling ratio grows with L.
"""

from __future__ import annotations

import argparse
import time

import torch
from masked_diffusion import (
    BackboneConfig,
    LogLinearSchedule,
    MaskedDiffusionTransformer,
    ancestral_sample,
    mdlm_loss,
    random_order,
)
from pgm import PartitionTransformer, PGMConfig, pgm_loss, pgm_ordered_sample

V = 65


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _time(fn, device: str, repeats: int) -> float:
    """Best of `repeats` timed calls after one warm-up (the minimum is robust to shared CPUs)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def _train_step(model: torch.nn.Module, loss) -> object:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        out = loss(model)
        opt.zero_grad()
        out.backward()
        opt.step()

    return step


def measure(n: int, d: int, batch: int, steps: int, dev: str) -> float:
    """Print one row (sequence length n) and return the sampling ratio PGM/MDLM."""
    torch.manual_seed(0)
    mdlm = MaskedDiffusionTransformer(BackboneConfig(V, n, d, 4, 4)).to(dev)
    pgm = PartitionTransformer(PGMConfig(V, n, d, 4, 2, 2)).to(dev)
    for m in (mdlm, pgm):
        torch.nn.init.normal_(m.head.weight, std=0.1)
        m.eval()
    schedule = LogLinearSchedule()

    def gen() -> torch.Generator:
        return torch.Generator(device=dev).manual_seed(0)

    order = random_order(batch, n, gen(), dev)
    den = lambda x, t: mdlm(x, t)  # noqa: E731
    kw = dict(vocab_size=V, steps=steps, batch_size=batch, seq_len=n, device=dev)
    t_mdlm = _time(lambda: ancestral_sample(den, generator=gen(), **kw), dev, 2)
    t_pgm = _time(
        lambda: pgm_ordered_sample(pgm, order, steps=steps, generator=gen(), device=dev), dev, 2
    )
    x0 = torch.randint(0, V, (batch, n), device=dev)
    mdlm.train()
    pgm.train()
    s_mdlm = _time(
        _train_step(
            mdlm, lambda m: mdlm_loss(lambda z, t: m(z, t), x0, schedule, V, generator=gen()).loss
        ),
        dev,
        3,
    )
    s_pgm = _time(
        _train_step(pgm, lambda m: pgm_loss(m, x0, schedule, V, generator=gen()).loss), dev, 3
    )
    ratio = t_mdlm / t_pgm
    n_m = sum(q.numel() for q in mdlm.parameters())
    n_p = sum(q.numel() for q in pgm.parameters())
    print(
        f"{n:>6}{n_m:>13}{n_p:>12}{batch * n / t_mdlm:>12.0f}{batch * n / t_pgm:>11.0f}"
        f"{ratio:>13.2f}x{s_pgm / s_mdlm:>17.2f}x"
    )
    return ratio


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="shorter sequences, fewer steps (< 1 min)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--d-model", type=int, default=128)
    a = p.parse_args()
    lengths, steps, batch = ((128, 256, 512), 16, 2) if a.quick else ((128, 512, 1024), 32, 4)
    dev, d = a.device, a.d_model
    print(f"device={dev} d_model={d} heads=4 batch={batch} steps={steps} V={V}")
    print("MDLM: 4 self-attention blocks; PGM: 2 encoder + GroupSwap + 2 decoder blocks")
    header = (
        f"{'L':>6}{'MDLM params':>13}{'PGM params':>12}{'MDLM tok/s':>12}{'PGM tok/s':>11}"
        f"{'sample ratio':>14}{'train step ratio':>18}"
    )
    print(header)
    first = ratio = None
    for n in lengths:
        ratio = measure(n, d, batch, steps, dev)
        first = first or ratio
    print(f"sampling ratio growth from L={lengths[0]} to L={lengths[-1]}: {ratio / first:.2f}x")


if __name__ == "__main__":
    main()
