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
    fn()  # warm-up
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    _sync(device)
    return (time.perf_counter() - t0) / repeats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="shorter sequences, fewer steps (< 1 min)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--d-model", type=int, default=128)
    a = p.parse_args()
    lengths, steps, batch = ((128, 256, 512), 16, 2) if a.quick else ((128, 512, 1024), 32, 4)
    dev, d = a.device, a.d_model
    schedule = LogLinearSchedule()
    print(f"device={dev} d_model={d} heads=4 batch={batch} steps={steps} V={V}")
    print("MDLM: 4 self-attention blocks; PGM: 2 encoder + GroupSwap + 2 decoder blocks")
    header = (
        f"{'L':>6}{'MDLM params':>13}{'PGM params':>12}{'MDLM tok/s':>12}{'PGM tok/s':>11}"
        f"{'sample ratio':>14}{'train step ratio':>18}"
    )
    print(header)
    first = None
    for n in lengths:
        torch.manual_seed(0)
        mdlm = MaskedDiffusionTransformer(BackboneConfig(V, n, d, 4, 4)).to(dev)
        pgm = PartitionTransformer(PGMConfig(V, n, d, 4, 2, 2)).to(dev)
        for m in (mdlm, pgm):
            torch.nn.init.normal_(m.head.weight, std=0.1)
            m.eval()
        gen = lambda: torch.Generator(device=dev).manual_seed(0)  # noqa: E731
        order = random_order(batch, n, gen(), dev)
        t_mdlm = _time(
            lambda: ancestral_sample(
                lambda x, t: mdlm(x, t), vocab_size=V, steps=steps, batch_size=batch,
                seq_len=n, generator=gen(), device=dev,
            ),
            dev, 1,
        )
        t_pgm = _time(
            lambda: pgm_ordered_sample(pgm, order, steps=steps, generator=gen(), device=dev), dev, 1
        )
        x0 = torch.randint(0, V, (batch, n), device=dev)

        def train_step(model, loss):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

            def step():
                out = loss(model, x0)
                opt.zero_grad()
                out.backward()
                opt.step()

            return step

        model_train = [mdlm.train(), pgm.train()]
        s_mdlm = _time(
            train_step(
                model_train[0],
                lambda m, x: mdlm_loss(lambda z, t: m(z, t), x, schedule, V, generator=gen()).loss,
            ),
            dev, 3,
        )
        s_pgm = _time(
            train_step(model_train[1], lambda m, x: pgm_loss(m, x, schedule, V, generator=gen()).loss),
            dev, 3,
        )
        ratio = t_mdlm / t_pgm
        first = first or ratio
        n_m = sum(q.numel() for q in mdlm.parameters())
        n_p = sum(q.numel() for q in pgm.parameters())
        print(
            f"{n:>6}{n_m:>13}{n_p:>12}{batch * n / t_mdlm:>12.0f}{batch * n / t_pgm:>11.0f}"
            f"{ratio:>13.2f}x{s_pgm / s_mdlm:>17.2f}x"
        )
    print(f"sampling ratio growth from L={lengths[0]} to L={lengths[-1]}: {ratio / first:.2f}x")


if __name__ == "__main__":
    main()
