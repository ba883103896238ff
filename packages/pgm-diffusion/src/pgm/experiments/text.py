"""PGM vs MDLM on char-level Shakespeare: throughput, generative perplexity, entropy, NELBO.

Both models have the same width and depth (every PGM arm: ``n_encoder + n_decoder ==
mdlm_layers``) and are trained with the same optimiser, steps
and batches (`shared_core.train.fit`). At each number of sampling steps S, MDLM uses its
ancestral sampler and PGM the packed random-order sampler (the authors' ``efficient-uniform``;
the same reveal rate per step), on the same batch size. MDLM also runs PGM's sampler (the same
random order and counts, full-length), which separates the model from the sampler. Samples are
scored by a small autoregressive char model (`masked_diffusion.CausalCharLM`) trained here on
the same training split.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from masked_diffusion import (
    BackboneConfig,
    CausalCharLM,
    CharLMConfig,
    LogLinearSchedule,
    MaskedDiffusionTransformer,
    ancestral_sample,
    evaluator_loss_fn,
    generative_nll,
    nelbo,
    ordered_sample,
    random_order,
    require_shakespeare,
    shakespeare_chars,
)

from pgm.experiments.common import (
    ReproduceConfig,
    build_pgms,
    fit_arms,
    fit_timed,
    n_params,
    timed,
)
from pgm.loss import pgm_nelbo
from pgm.sampling import pgm_ordered_sample
from shared_core.distributed import DistInfo
from shared_core.metrics import bits_per_dim, unigram_entropy
from shared_core.report import Run


def run_text(
    cfg: ReproduceConfig, seed: int, info: DistInfo, run: Run
) -> dict[str, tuple[list[float], list[float]]]:
    """Train MDLM, PGM and the AR scorer; fill the `text` table; return plot series."""
    dev = info.device
    require_shakespeare("pgm-diffusion")
    data = shakespeare_chars(seq_len=cfg.seq_len, plays=cfg.plays, seed=seed)
    v, n = data.vocab_size, cfg.seq_len
    schedule = LogLinearSchedule()
    torch.manual_seed(seed)
    mdlm = MaskedDiffusionTransformer(
        BackboneConfig(v, n, cfg.d_model, cfg.n_heads, cfg.mdlm_layers)
    )
    pgms = build_pgms(cfg, v, n, seed)
    torch.manual_seed(seed)
    scorer = CausalCharLM(
        CharLMConfig(v, n, d_model=cfg.d_model, n_heads=cfg.n_heads, n_layers=cfg.scorer_layers)
    )

    fits = fit_arms(mdlm, pgms, data.train, schedule, v, cfg, cfg.steps, seed, info, "text")
    fit_timed(
        scorer, evaluator_loss_fn(), data.train, cfg, cfg.scorer_steps, seed, info,
        "char GPT scorer train",
    )  # fmt: skip

    val = data.val[: cfg.eval_rows].to(dev)
    kw = dict(n_samples=cfg.eval_samples, seed=seed)
    nelbo_bits = {"MDLM": bits_per_dim(nelbo(lambda x, t: mdlm(x, t), val, schedule, v, **kw))}
    for label, pgm in pgms.items():
        nelbo_bits[label] = bits_per_dim(pgm_nelbo(pgm, val, schedule, v, **kw))
    val_nll = float(generative_nll(scorer, val, v).mean())
    scorer_bits = bits_per_dim(val_nll)
    data_ppl = math.exp(val_nll)
    data_entropy = unigram_entropy(data.train.numpy(), v)
    params = {"MDLM": n_params(mdlm)} | {label: n_params(m) for label, m in pgms.items()}
    run.log(
        text_scorer_val_bits_per_char=scorer_bits,
        text_data_gen_ppl=data_ppl,
        text_data_unigram_entropy_bits=data_entropy,
    )
    for label, (_, step_s) in fits.items():
        run.log(**{f"text_train_step_s {label}": step_s, f"text_params {label}": params[label]})
    series: dict[str, tuple[list[float], list[float]]] = {}
    den = lambda z, t: mdlm(z, t)  # noqa: E731
    order = lambda: random_order(  # noqa: E731
        cfg.n_generate, n, torch.Generator(device=dev).manual_seed(seed), dev
    )
    gen = lambda: torch.Generator(device=dev).manual_seed(seed)  # noqa: E731
    for steps in cfg.sample_steps:
        # (model, sampler): MDLM's ancestral sampler (binomial reveal counts), and MDLM on PGM's
        # sampler (same random order, L / S tokens per step, same random numbers), so that the
        # model comparison is not confounded by the sampler
        samplers: dict[tuple[str, str], Callable[..., torch.Tensor]] = {
            ("MDLM", "ancestral"): lambda s=steps: ancestral_sample(
                den,
                vocab_size=v,
                steps=s,
                batch_size=cfg.n_generate,
                seq_len=n,
                generator=gen(),
                device=dev,
            ),
            ("MDLM", "random order"): lambda s=steps: ordered_sample(
                den, order(), vocab_size=v, steps=s, generator=gen(), device=dev
            ),
        }
        for label, pgm in pgms.items():
            samplers[label, "random order"] = lambda s=steps, m=pgm: pgm_ordered_sample(
                m, order(), steps=s, generator=gen(), device=dev
            )
        for (name, kind), sampler in samplers.items():
            x, sec = timed(sampler, f"{name.lower()} sample {kind} L={n} steps={steps}")
            tps = x.numel() / sec
            ppl = math.exp(float(generative_nll(scorer, x, v).mean()))
            run.add_row(
                "text",
                model=name,
                sampler=kind,
                params=params[name],
                sampling_steps=steps,
                tokens_per_s=tps,
                gen_ppl=ppl,
                unigram_entropy_bits=unigram_entropy(x.cpu().numpy(), v),
                val_nelbo_bits_per_char=nelbo_bits[name],
            )
            xs, ys = series.setdefault(f"{name} {kind}", ([], []))
            xs.append(tps)
            ys.append(ppl)
            if steps == cfg.sample_steps[-1]:
                run.log(**{f"text_sample {name} {kind}": data.decode(x[0].cpu())})
    run.add_row(
        "text",
        model="data (validation windows)",
        sampler=None,
        params=None,
        sampling_steps=None,
        tokens_per_s=None,
        gen_ppl=data_ppl,
        unigram_entropy_bits=data_entropy,
        val_nelbo_bits_per_char=scorer_bits,
    )
    steps_axis = list(range(1, cfg.steps + 1))
    run.plot(
        "text_train_loss",
        {name: (steps_axis, losses) for name, (losses, _) in fits.items()},
        xlabel="training step",
        ylabel="loss (nats/char)",
        logy=True,
    )
    return series
