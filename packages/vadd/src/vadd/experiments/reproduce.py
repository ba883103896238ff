"""``vadd reproduce``: few-step sampling of VADD vs the MDM on a 2-D toy (toy2d.py), digits and text."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan
from vadd.experiments.scales import ReproduceConfig, Toy2DConfig

if TYPE_CHECKING:
    from shared_core.report import Run


# CPU seconds per scale, one thread: the heartbeat's ETA and the costs `vadd reproduce --help`
# prints: `cpu_s` of the committed results/tiny.json and results/small.json.
ESTIMATE_S = {"micro": 15.0, "tiny": 184.0, "small": 743.0}


def run(args: ReproduceArgs) -> int:
    """The three findings, one report: exact TV vs steps on the toy, digits, then text."""
    from shared_core.device import seed_everything
    from shared_core.distributed import init_distributed
    from shared_core.report import Run
    from vadd.experiments.digits import run_digits
    from vadd.experiments.text import plot_text, run_text
    from vadd.experiments.toy2d import evaluate, train_pair

    scale: ReproduceConfig = args.config
    cfg, digits_cfg = scale.toy2d, scale.digits
    phases = ["checkerboard: train", "checkerboard: exact TV", "digits", "text", "report"]
    plan(phases, ESTIMATE_S.get(args.scale))
    seed_everything(args.seed)
    info = init_distributed(args.device)
    report = Run("vadd", dataclasses.asdict(scale), out=args.out, enabled=info.is_main)
    phase("checkerboard: train")
    P, models = train_pair(cfg, args.seed, args.device, show_progress=info.is_main)
    phase("checkerboard: exact TV")
    rows, samples, H = evaluate(P, models, cfg, args.seed)
    for row in rows:
        report.add_row(**row)
    report.log(data_entropy_nats=H)
    series = {
        name: ([r["steps"] for r in rows if r["model"] == name],
               [r["tv"] for r in rows if r["model"] == name])
        for name in models
    }  # fmt: skip
    report.plot("tv_vs_steps", series, xlabel="sampling steps T", ylabel="TV(data, T-step sampler)",
             logx=True, title=f"checkerboard {cfg.bins}x{cfg.bins}: exact TV vs steps")  # fmt: skip
    _scatter(report, samples, cfg)
    phase("digits")
    digit_rows, digit_ref = run_digits(digits_cfg, args.seed, args.device, info.is_main)
    for row in digit_rows:
        report.add_row("digits (binarised 8x8)", **row)
    report.log(**{f"digits_{k}": v for k, v in digit_ref.items()})
    phase("text")
    text_rows, text_ref = run_text(scale.text, args.seed, args.device, info.is_main)
    for row in text_rows:
        report.add_row("text (char-level Shakespeare)", **row)
    report.log(**{f"text_{k}": v for k, v in text_ref.items()})
    plot_text(report, text_rows, text_ref, scale.text)
    phase("report")
    report.finish(
        title="vadd reproduce: few-step sampling, VADD vs MDM (2-D checkerboard)",
        notes=(
            "Both models share decoder size, optimiser, data and batches; VADD adds a per-step "
            f"latent (d = {cfg.latent_dim}) and a recognition model, trained with the paper's "
            "DELBO and linear KL annealing. tv/kl are exact over all bins^2 cells (the z integral "
            f"by {cfg.n_latent} scrambled-Sobol points per step, mean of {cfg.quad_reps} "
            "independent replicates; tv_se the standard error from their spread); mass_on_support is the probability the "
            "sampler puts on the checkerboard's white cells (1 for the data). Digits: "
            f"bits_per_dim is the valid T-step bound on {digit_ref['bound_test_rows']} of the "
            f"{digit_ref['test_rows']} test images (DigitsConfig.eval_rows); mean_err / corr_err "
            "are the mean absolute errors of pixel means / pixel-pair correlations of "
            f"{digits_cfg.n_samples} samples vs the test images (train vs test: "
            "digits_train_vs_test_*). Text: gen_nll_nats / gen_ppl are the per-character NLL "
            f"(± se over {scale.text.n_samples} windows) / perplexity of the samples under a "
            "small causal char-level transformer trained on the same split (the paper uses "
            "GPT-2 large); text_reference_* are the same numbers for "
            f"{text_ref['reference_rows']} held-out real windows. unigram_entropy_bits is the "
            "entropy of all samples' characters pooled, seq_entropy_bits the mean entropy of "
            "one window's characters (low = repetitive samples)."
        ),
    )
    return 0


def _scatter(report: Run, samples: dict, cfg: Toy2DConfig) -> None:
    import matplotlib
    import torch

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({name for name, _ in samples})
    fig, axes = plt.subplots(
        len(names), len(cfg.steps), figsize=(3 * len(cfg.steps), 3 * len(names))
    )
    for i, name in enumerate(names):
        for j, T in enumerate(cfg.steps):
            x = samples[(name, T)].float()
            jitter = torch.rand_like(x)
            ax = axes[i][j]
            ax.scatter(x[:, 0] + jitter[:, 0], x[:, 1] + jitter[:, 1], s=1, alpha=0.4)
            ax.set_xlim(0, cfg.bins)
            ax.set_ylim(0, cfg.bins)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{name}, T={T}")
    fig.tight_layout()
    report.save_figure("samples", fig)
