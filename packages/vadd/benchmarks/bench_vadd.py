"""VADD vs masked-diffusion (MDLM) on shared_core.bench: sampling and one training step.

Same decoder (d = 128, 4 layers, 4 heads), V = 65, L = 64, batch 16, 16 steps, random weights.
The peer is what a user would otherwise run: `masked_diffusion.ancestral_sample` on a
`MaskedDiffusionTransformer` and `masked_diffusion.mdlm_loss`. VADD adds the z-embedding MLP at
every sampling step and, in training, the recognition network (a second backbone of the
decoder's size). Speed-up = MDLM time / VADD time (< 1: VADD is slower, the cost of the latent).
"""

from __future__ import annotations

import torch
from masked_diffusion import (
    BackboneConfig,
    LogLinearSchedule,
    MaskedDiffusionTransformer,
    ancestral_sample,
    mdlm_loss,
)
from vadd import VADD, VADDConfig, sample, vadd_loss

from shared_core.bench import BenchTable, bench_parser, finish, measure, train_step

V, L, BATCH, STEPS = 65, 64, 16, 16


def main() -> None:
    a = bench_parser(__doc__ or "").parse_args()
    repeats = 3 if a.quick else a.repeats
    torch.manual_seed(0)
    vadd_model = VADD(VADDConfig(V, L, latent_dim=8, d_model=128, n_layers=4)).eval()
    mdlm = MaskedDiffusionTransformer(BackboneConfig(V, L, 128, 4, 4)).eval()
    for m in (vadd_model.decoder, mdlm):
        torch.nn.init.normal_(m.head.weight, std=0.1)
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    sampling = BenchTable("sampling, VADD vs MDLM (speed-up = MDLM / VADD)", "VADD")
    sampling.add(f"L={L} steps={STEPS} batch={BATCH}", measure(
        {
            "VADD": lambda: sample(vadd_model, steps=STEPS, batch_size=BATCH, generator=g()),
            "MDLM": lambda: ancestral_sample(
                lambda x, t: mdlm(x, t), vocab_size=V, steps=STEPS, batch_size=BATCH, seq_len=L,
                generator=g(),
            ),
        },
        repeats=repeats, threads=a.threads,
    ))  # fmt: skip
    x0 = torch.randint(0, V, (BATCH, L), generator=g())
    schedule = LogLinearSchedule()
    vadd_model.train()
    mdlm.train()
    training = BenchTable("one training step, VADD vs MDLM (speed-up = MDLM / VADD)", "VADD")
    training.add(f"L={L} batch={BATCH}", measure(
        {
            "VADD": train_step(vadd_model, lambda m: vadd_loss(m, x0, generator=g()).loss),
            "MDLM": train_step(
                mdlm, lambda m: mdlm_loss(lambda z, t: m(z, t), x0, schedule, V, generator=g()).loss
            ),
        },
        repeats=repeats, threads=a.threads,
    ))  # fmt: skip
    finish([sampling, training], a.json)


if __name__ == "__main__":
    main()
