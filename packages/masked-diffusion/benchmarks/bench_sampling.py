"""MDLM sampling on shared_core.bench: the vectorised ancestral sampler against the per-position
reference loop, and the sampler's ``cache=True`` against no cache.

``cache=True`` (MDLM's ``_ddpm_caching_update``) reuses the previous step's logits when the last
step revealed no token in any row, skipping the network call; it is exact for denoisers that
ignore t (time conditioning off, MDLM's default). It saves calls only when steps outnumber the
tokens revealed, so it is timed at few (16) and many (256) steps. Random weights (speed does not
depend on training): 3 x 128 transformer, V = 65, L = 64, batch 4.
"""

from __future__ import annotations

import torch
from masked_diffusion import BackboneConfig, MaskedDiffusionTransformer, ancestral_sample
from masked_diffusion.reference import ancestral_sample_loop

from shared_core.bench import BenchTable, bench_parser, finish, measure


def main() -> None:
    a = bench_parser(__doc__ or "").parse_args()
    v, n, batch = 65, 64, 4
    torch.manual_seed(0)
    model = MaskedDiffusionTransformer(BackboneConfig(v, n, 128, 4, 3)).eval()
    torch.nn.init.normal_(model.head.weight, std=0.1)
    den = lambda x, t: model(x, t)  # noqa: E731
    kw = dict(vocab_size=v, batch_size=batch, seq_len=n)
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    repeats = 3 if a.quick else a.repeats

    loop = BenchTable("MDLM ancestral sampling vs the per-position reference loop", "ancestral")
    cache = BenchTable("MDLM ancestral sampling: cache=True vs no cache", "cache=True")
    for steps in (16,) if a.quick else (16, 256):
        if steps == 16:
            res = measure(
                {
                    "ancestral": lambda: ancestral_sample(den, steps=16, generator=g(), **kw),
                    "reference loop": lambda: ancestral_sample_loop(
                        den, steps=16, generator=g(), **kw
                    ),
                },
                repeats=repeats, threads=a.threads,
            )  # fmt: skip
            loop.add(f"L={n} steps=16 batch={batch}", res)
        res = measure(
            {
                "cache=True": lambda s=steps: ancestral_sample(
                    den, steps=s, generator=g(), cache=True, **kw
                ),
                "no cache": lambda s=steps: ancestral_sample(den, steps=s, generator=g(), **kw),
            },
            repeats=repeats, threads=a.threads,
        )  # fmt: skip
        cache.add(f"L={n} steps={steps} batch={batch}", res)
    finish([loop, cache], a.json)


if __name__ == "__main__":
    main()
