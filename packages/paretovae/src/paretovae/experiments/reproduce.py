"""``paretovae reproduce``: the five families on the four data sets at one scale, one report."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paretovae.costs import ESTIMATE_S
from paretovae.experiments import denoise, heavy_tail, words
from paretovae.experiments.common import LABELS, Budget, train_config
from paretovae.model import VAEConfig
from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan


@dataclass
class ReproduceConfig:
    """All experiments at one scale (`SCALES`)."""

    heavy_tail: heavy_tail.HeavyTailConfig = field(default_factory=heavy_tail.HeavyTailConfig)
    words: words.WordsConfig = field(default_factory=words.WordsConfig)
    denoise: denoise.DenoiseConfig = field(default_factory=denoise.DenoiseConfig)


def _budget(steps: int, seeds: int, batch_size: int = 128, lr: float = 2e-3) -> Budget:
    return Budget(
        seeds=seeds,
        batch_size=batch_size,
        train=train_config(steps, lr=lr, warmup=min(20, steps // 5)),
    )


def _scale(
    steps: int, seeds: int, *, n2d: int, nodes: int, vocab: int, hidden: int, batch: int
) -> ReproduceConfig:
    b = _budget(steps, seeds, batch)
    return ReproduceConfig(
        heavy_tail=heavy_tail.HeavyTailConfig(
            num_train=n2d, num_test=n2d, num_nodes=nodes, num_generated=n2d,
            vae=VAEConfig(n=2, m=1, hidden=hidden, nu=5.0), budget=b,
        ),
        words=words.WordsConfig(
            vocab_size=vocab, vae=VAEConfig(n=vocab, m=16, hidden=hidden, nu=5.0), budget=b
        ),
        denoise=denoise.DenoiseConfig(
            vae=VAEConfig(n=64, m=8, hidden=hidden, nu=5.0, recon_sigma=0.1), budget=b
        ),
    )  # fmt: skip


SCALES: dict[str, ReproduceConfig] = {
    # every code path end to end in seconds (CI): 3 steps, one seed, toy sizes
    "micro": _scale(3, 1, n2d=500, nodes=300, vocab=100, hidden=8, batch=16),
    # the headline comparison, 3 seeds, within ~5 minutes on 2 busy CPU cores (one thread)
    "tiny": _scale(400, 3, n2d=20_000, nodes=5_000, vocab=1000, hidden=64, batch=128),
    # the same comparison with 2.5x the steps, 5 seeds (paired by seed), a wider MLP, 2.5x the
    # 2-D points, 4x the graph nodes and twice the vocabulary: ~10 CPU-minutes, one thread
    "small": _scale(1000, 5, n2d=50_000, nodes=20_000, vocab=2000, hidden=128, batch=128),
    # the paper's sizes on this data (its MNIST/WikiText-2/Epinions are not offline here)
    "paper": _scale(20_000, 5, n2d=200_000, nodes=100_000, vocab=5000, hidden=512, batch=512),
}


def _mean_sd(rows: list[dict[str, float]], key: str) -> str:
    vals = np.array([r[key] for r in rows], dtype=float)
    vals = vals[np.isfinite(vals)]
    if len(vals) == 0:
        return "nan"
    if len(vals) == 1:
        return f"{vals[0]:.4g}"
    return f"{vals.mean():.4g} ± {vals.std(ddof=1):.2g}"


def _plot_ccdf(run: Any, name: str, curves: dict[str, tuple[list[float], list[float]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=120)
    for key, (t, s) in curves.items():
        style = {"color": "black", "linewidth": 2.5} if key == "held-out data" else {}
        ax.loglog(t, s, label=LABELS.get(key, key), **style)
    ax.set_xlabel("Euclidean norm ||x||")
    ax.set_ylabel("P(||x|| > t)")
    ax.set_title(f"{name}: tail CCDF of generated vs held-out points (seed 0)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    run.save_figure(f"ccdf_{name}", fig)


def _plot_strip(run: Any, strip: dict[str, Any], p: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(strip)
    cols = len(strip["clean"])
    fig, axes = plt.subplots(len(rows), cols, figsize=(1.1 * cols + 2.6, 1.1 * len(rows)), dpi=120)
    for i, key in enumerate(rows):
        for j in range(cols):
            ax = axes[i, j]
            ax.imshow(np.asarray(strip[key][j]).reshape(8, 8), cmap="gray", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[i, 0].set_ylabel(LABELS.get(key, key), rotation=0, ha="right", va="center", fontsize=7)
    fig.suptitle(
        f"Digits under salt-and-pepper noise p = {p}: clean, noisy, reconstructions (seed 0)"
    )
    fig.tight_layout()
    run.save_figure("denoising_strip", fig)


def reproduce(args: ReproduceArgs) -> int:
    """Run the three experiments of ``args.config`` and write one report."""
    from paretovae.data import require_experiment_extras
    from shared_core.device import resolve_device, seed_everything
    from shared_core.report import Run

    cfg: ReproduceConfig = args.config
    require_experiment_extras()  # fail before the first experiment, not after it
    plan(["heavy tails", "word counts", "denoising digits", "report"], ESTIMATE_S.get(args.scale))
    device = str(resolve_device(args.device))
    seed_everything(args.seed)
    run = Run(
        "paretovae",
        {"scale": args.scale, "seed": args.seed, **dataclasses.asdict(cfg)},
        out=args.out,
    )
    timings: dict[str, float] = {}

    phase("heavy tails")
    t0 = time.time()
    ht = heavy_tail.run(cfg.heavy_tail, seed=args.seed, device=device)
    timings["heavy_tail_s"] = time.time() - t0
    seeds = cfg.heavy_tail.budget.seeds
    for name, by_family in ht["metrics"].items():
        title = (
            f"{name}: tail (norm > held-out {cfg.heavy_tail.quantile:.0%} quantile) of generated "
            f"points, mean ± sd over {seeds} seed(s); lower is better, mass ratio 1 is right"
        )
        for family, rows in by_family.items():
            run.add_row(
                title, model=LABELS[family], tail_MMD=_mean_sd(rows, "tail_mmd"),
                tail_SW=_mean_sd(rows, "tail_sw"), tail_mass_ratio=_mean_sd(rows, "tail_mass_ratio"),
                MMD_all=_mean_sd(rows, "mmd"),
            )  # fmt: skip
        _plot_ccdf(run, name, ht["ccdf"][name])
    top = cfg.heavy_tail.recon_top
    for name, by_family in ht["recon"].items():
        title = (
            f"{name}, reconstruction of held-out points (the paper's degree experiment): SW "
            f"overall and between the tails (each set's top {top:.0%} by norm), tail MMD, and the "
            f"mass ratio beyond the held-out top-{top:.0%} radius, mean ± sd over {seeds} "
            "seed(s); lower is better, mass ratio 1 is right"
        )
        for family, rows in by_family.items():
            run.add_row(
                title, model=LABELS[family], SW=_mean_sd(rows, "sw"),
                tail_SW=_mean_sd(rows, "tail_sw"), tail_MMD=_mean_sd(rows, "tail_mmd"),
                tail_mass_ratio=_mean_sd(rows, "tail_mass_ratio"),
            )  # fmt: skip

    phase("word counts")
    t0 = time.time()
    wd = words.run(cfg.words, seed=args.seed, device=device)
    timings["words_s"] = time.time() - t0
    title = (
        f"Shakespeare bag-of-words ({wd['vocab']} words, {wd['num_test_docs']} held-out documents "
        f"of other plays): head / tail = top / bottom {cfg.words.head_fraction:.1%} of words by "
        "summed frequency, held-out vs reconstructed (the paper's), and per-document tail "
        f"Jaccard; mean ± sd over {cfg.words.budget.seeds} seed(s); higher is better"
    )
    for family, rows in wd["metrics"].items():
        run.add_row(
            title, model=LABELS[family], head_overlap=_mean_sd(rows, "corpus_head_overlap"),
            head_jaccard=_mean_sd(rows, "corpus_head_jaccard"),
            tail_overlap=_mean_sd(rows, "corpus_tail_overlap"),
            tail_jaccard=_mean_sd(rows, "corpus_tail_jaccard"),
            per_doc_tail_jaccard=_mean_sd(rows, "tail_jaccard"),
        )  # fmt: skip

    phase("denoising digits")
    t0 = time.time()
    dn = denoise.run(cfg.denoise, seed=args.seed, device=device)
    timings["denoise_s"] = time.time() - t0
    title = (
        f"Digits, salt-and-pepper p = {cfg.denoise.noise}: PSNR (dB) / SSIM of reconstructions of "
        f"noisy held-out images vs clean, mean ± sd over {cfg.denoise.budget.seeds} seed(s)"
    )
    run.add_row(title, model="noisy input (no model)", PSNR=f"{dn['noisy_input']['psnr']:.4g}",
                SSIM=f"{dn['noisy_input']['ssim']:.4g}")  # fmt: skip
    for family, rows in dn["metrics"].items():
        run.add_row(
            title, model=LABELS[family], PSNR=_mean_sd(rows, "psnr"), SSIM=_mean_sd(rows, "ssim")
        )
    _plot_strip(run, dn["strip"], cfg.denoise.noise)

    phase("report")
    run.log(
        **timings,
        heavy_tail=ht["metrics"],
        reconstruction=ht["recon"],
        words={k: v for k, v in wd.items()},
        denoise={"metrics": dn["metrics"], "noisy_input": dn["noisy_input"]},
        nan_rows=sum(
            1 for by in ht["metrics"].values() for rows in by.values() for r in rows
            if not all(math.isfinite(v) for v in r.values())
        ),
    )  # fmt: skip
    run.finish(title="paretovae reproduce: ParetoVAE vs VAE, LaplaceVAE and t3VAE")
    return 0
