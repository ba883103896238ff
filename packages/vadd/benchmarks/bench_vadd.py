"""Cost of the latent: sampling time per sample and training step time, VADD vs the MDM.

Both models have the same decoder; VADD adds the z-embedding MLP (sampling) and the recognition
network (training). Prints each time and the VADD/MDM ratio.

    python benchmarks/bench_vadd.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import torch
from masked_diffusion import LogLinearSchedule
from vadd import VADD, VADDConfig, sample, vadd_loss


def _best(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seq_len, batch, repeats = (64, 32, 2) if args.quick else (256, 64, 3)
    vocab, steps = 32, 16
    models = {
        name: VADD(VADDConfig(vocab, seq_len, latent_dim=d, d_model=128, n_layers=4)).eval()
        for name, d in (("MDM", 0), ("VADD", 8))
    }
    x0 = torch.randint(0, vocab, (batch, seq_len), generator=torch.Generator().manual_seed(0))
    schedule = LogLinearSchedule()
    rows = {}
    for name, m in models.items():
        g = torch.Generator().manual_seed(0)
        t_sample = _best(
            lambda m=m, g=g: sample(m, steps=steps, batch_size=batch, generator=g), repeats
        )
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4)

        def step(m=m, opt=opt):
            opt.zero_grad()
            vadd_loss(
                m, x0, schedule=schedule, generator=torch.Generator().manual_seed(1)
            ).loss.backward()
            opt.step()

        rows[name] = (t_sample / batch * 1e3, _best(step, repeats) * 1e3)
    print(f"L={seq_len} batch={batch} steps={steps} vocab={vocab} (CPU, 1 thread)")
    print(f"{'model':6} {'ms/sample':>10} {'ms/train step':>14}")
    for name, (s, t) in rows.items():
        print(f"{name:6} {s:10.2f} {t:14.1f}")
    (ms, mt), (vs, vt) = rows["MDM"], rows["VADD"]
    print(f"ratio VADD/MDM: sampling {vs / ms:.2f}x, training step {vt / mt:.2f}x")


if __name__ == "__main__":
    main()
