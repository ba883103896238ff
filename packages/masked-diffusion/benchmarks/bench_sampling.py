"""Sampling throughput: MDLM ancestral (with and without caching) vs MaskGIT confidence vs the
per-position reference loop, on a small untrained-but-random transformer. Prints ratios."""

from __future__ import annotations

import argparse
import time

import torch
from masked_diffusion import (
    BackboneConfig,
    MaskedDiffusionTransformer,
    ancestral_sample,
    confidence_sample,
)
from masked_diffusion.reference import ancestral_sample_loop


def _time(fn, repeats: int) -> float:
    fn()  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="small sizes (< 1 min on CPU)")
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    v, n, batch, steps = (65, 64, 8, 16) if a.quick else (65, 128, 32, 64)
    torch.manual_seed(0)
    model = MaskedDiffusionTransformer(BackboneConfig(v, n, 128, 4, 3)).to(a.device).eval()
    torch.nn.init.normal_(model.head.weight, std=0.1)
    den = lambda x, t: model(x, t)  # noqa: E731
    kw = dict(vocab_size=v, steps=steps, batch_size=batch, seq_len=n, device=a.device)
    g = lambda: torch.Generator(device=a.device).manual_seed(0)  # noqa: E731
    rows = {
        "ancestral": _time(lambda: ancestral_sample(den, generator=g(), **kw), 1 if a.quick else 3),
        "ancestral+cache": _time(
            lambda: ancestral_sample(den, generator=g(), cache=True, **kw), 1 if a.quick else 3
        ),
        "confidence": _time(
            lambda: confidence_sample(den, generator=g(), **kw), 1 if a.quick else 3
        ),
    }
    ref_kw = dict(vocab_size=v, steps=steps, batch_size=batch, seq_len=n)
    ref_s = _time(
        lambda: ancestral_sample_loop(den, generator=torch.Generator().manual_seed(0), **ref_kw), 1
    )
    ref_tps = batch * n / ref_s
    print(f"L={n} V={v} batch={batch} steps={steps} device={a.device}")
    print(f"{'sampler':<18}{'tokens/s':>12}{'vs reference loop':>20}")
    for name, s in rows.items():
        tps = batch * n / s
        print(f"{name:<18}{tps:>12.0f}{tps / ref_tps:>19.1f}x")
    print(f"{'reference loop':<18}{ref_tps:>12.0f}{1.0:>19.1f}x")
    print(f"confidence / ancestral throughput ratio: {rows['ancestral'] / rows['confidence']:.2f}")


if __name__ == "__main__":
    main()
