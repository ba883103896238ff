"""PGM vs MDLM (MaskGIT-style samplers) on sklearn 8x8 digits as 64 pixel tokens.

Samplers at S steps, both models: the Halton order with arccos reveal counts (Halton-MaskGIT)
and MaskGIT confidence decoding (annealed Gumbel, choice temperature 4.5). Quality is the
Frechet distance between classifier features of the samples and of the test images
(an FID stand-in, with a classifier trained here). Both models get the same positional code:
2-D axial RoPE over the 8x8 grid plus learned absolute positions (for PGM on the input tokens
and on the GroupSwap queries, the analogue of MDLM's mask-token inputs).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from masked_diffusion import (
    BackboneConfig,
    LogLinearSchedule,
    MaskedDiffusionTransformer,
    confidence_sample,
    digits_grid,
    halton_order,
    nelbo,
    ordered_sample,
)

from pgm.evaluation import train_classifier
from pgm.experiments.common import ReproduceConfig, build_pgms, fit_arms, n_params, timed
from pgm.loss import pgm_nelbo
from pgm.sampling import pgm_confidence_sample, pgm_ordered_sample
from shared_core.data import load, split_indices
from shared_core.distributed import DistInfo
from shared_core.metrics import accuracy, bits_per_dim, frechet_distance, unigram_entropy
from shared_core.report import Run

FRACTIONS = (0.8, 0.1, 0.1)


def digit_labels(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Labels aligned with `digits_grid(seed=seed)` (same `split_indices` permutation)."""
    _, labels = load("digits")
    parts = split_indices(len(labels), FRACTIONS, seed=seed)
    train, val, test = (torch.from_numpy(np.asarray(labels)[p]).long() for p in parts)
    return train, val, test


def run_digits(
    cfg: ReproduceConfig, seed: int, info: DistInfo, run: Run
) -> dict[str, tuple[list[float], list[float]]]:
    dev = info.device
    data = digits_grid(levels=cfg.digit_levels, fractions=FRACTIONS, seed=seed)
    y_train, _, y_test = digit_labels(seed)
    v, n = data.vocab_size, 64
    schedule = LogLinearSchedule()
    torch.manual_seed(seed)
    mdlm = MaskedDiffusionTransformer(
        BackboneConfig(
            v, n, cfg.d_model, cfg.n_heads, cfg.mdlm_layers, grid=(8, 8), learned_positions=True
        )
    )
    pgms = build_pgms(cfg, v, n, seed, grid=(8, 8))
    fits = fit_arms(mdlm, pgms, data.train, schedule, v, cfg, cfg.digit_steps, seed, info, "digits")
    clf = train_classifier(data.train, y_train, v, seed=seed)
    test_acc = accuracy(y_test.numpy(), clf(data.test).argmax(-1).numpy())
    with torch.no_grad():
        ref_feat = clf.features(data.test).numpy()
        floor = frechet_distance(clf.features(data.train).numpy(), ref_feat)
    val = data.val.to(dev)
    kw = dict(n_samples=cfg.eval_samples, seed=seed)
    nelbo_bits = {"MDLM": bits_per_dim(nelbo(lambda x, t: mdlm(x, t), val, schedule, v, **kw))}
    for label, pgm in pgms.items():
        nelbo_bits[label] = bits_per_dim(pgm_nelbo(pgm, val, schedule, v, **kw))
    params = {"MDLM": n_params(mdlm)} | {label: n_params(m) for label, m in pgms.items()}
    run.log(digits_classifier_test_accuracy=test_acc, digits_fd_train_vs_test=floor)
    for label, (_, step_s) in fits.items():
        run.log(**{f"digits_train_step_s {label}": step_s})
    order = halton_order(8, 8)
    b = cfg.n_digit_samples
    series: dict[str, tuple[list[float], list[float]]] = {}
    gen = lambda: torch.Generator(device=dev).manual_seed(seed)  # noqa: E731
    den = lambda z, t: mdlm(z, t)  # noqa: E731
    for steps in cfg.digit_sample_steps:
        samplers: dict[tuple[str, str], Callable[..., torch.Tensor]] = {
            ("MDLM", "halton"): lambda s=steps: ordered_sample(
                den,
                order,
                vocab_size=v,
                steps=s,
                batch_size=b,
                counts="arccos",
                generator=gen(),
                device=dev,
            ),
            ("MDLM", "confidence"): lambda s=steps: confidence_sample(
                den,
                vocab_size=v,
                steps=s,
                batch_size=b,
                seq_len=n,
                choice_temperature=4.5,
                counts="arccos",
                generator=gen(),
                device=dev,
            ),
        }
        for label, pgm in pgms.items():
            samplers[label, "halton"] = lambda s=steps, m=pgm: pgm_ordered_sample(
                m, order, steps=s, batch_size=b, counts="arccos", generator=gen(), device=dev
            )
            samplers[label, "confidence"] = lambda s=steps, m=pgm: pgm_confidence_sample(
                m,
                steps=s,
                batch_size=b,
                choice_temperature=4.5,
                counts="arccos",
                generator=gen(),
                device=dev,
            )
        for (name, kind), sampler in samplers.items():
            x, sec = timed(sampler, f"{name.lower()} sample digits {kind} steps={steps}")
            x = x.cpu()
            with torch.no_grad():
                fd = frechet_distance(clf.features(x).numpy(), ref_feat)
                classes = torch.bincount(clf(x).argmax(-1), minlength=10).double() / len(x)
            class_entropy = float(-(classes[classes > 0] * classes[classes > 0].log2()).sum())
            tps = x.numel() / sec
            run.add_row(
                "digits",
                model=name,
                sampler=kind,
                params=params[name],
                sampling_steps=steps,
                tokens_per_s=tps,
                frechet_distance=fd,
                class_entropy_bits=class_entropy,
                unigram_entropy_bits=unigram_entropy(x.numpy(), v),
                val_nelbo_bits_per_pixel=nelbo_bits[name],
            )
            xs, ys = series.setdefault(f"{name} {kind}", ([], []))
            xs.append(tps)
            ys.append(fd)
    run.add_row(
        "digits",
        model="data (train vs test images)",
        sampler=None,
        params=None,
        sampling_steps=None,
        tokens_per_s=None,
        frechet_distance=floor,
        class_entropy_bits=None,
        unigram_entropy_bits=unigram_entropy(data.train.numpy(), v),
        val_nelbo_bits_per_pixel=None,
    )
    return series
