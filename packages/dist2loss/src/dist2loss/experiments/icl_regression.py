"""Finding 1: DIST2Loss helps most when data is scarce (the paper's toy regression).

A small causal transformer learns in-context linear regression written as integer tokens
(`dist2loss.data`), from N = 250, 1k, 4k training sequences, with these losses on the same
model, steps, batches and seeds. The paper's ablation rows (note, "Ablation Study"):
SFT = cross-entropy ("ce"); "- contrastive loss" = CE + DIST2Loss with the paper's
alpha = 0.1, tau = 1 and full-vocabulary KL ("dist2"); "full" = that plus our neighbor
negatives, k = 2, beta = 0.1 ("dist2_nn"); "- distance-aware target" = the full row with
uniform smoothing instead of p_d ("uniform_nn"). Place-value weighting, the paper's fifth
row, is inert here: every integer is one token. Peers: CE with label smoothing 0.1 and CE +
the Number Token Loss (``ntloss``). The metric is the error of the greedy answer y_q (MAE, RMSE, in integer units)
on held-out sequences, with a bootstrap 95 % interval over test sequences (seeds pooled).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dist2loss.data import RegressionTask
from shared_core.cli import ReproduceArgs

if TYPE_CHECKING:  # torch is imported inside the functions: `dist2loss --help` stays fast
    import torch

METHODS = ("ce", "dist2", "dist2_nn", "uniform_nn", "label_smoothing", "ntl")
LABELS = {  # row names, formatted with the run's Config as `c` (`label`)
    "ce": "CE (SFT)",
    "dist2": "CE + DIST2 (α={c.alpha:g}, τ={c.tau:g}), no neighbor negatives",
    "dist2_nn": "CE + DIST2 + neighbor negatives (k={c.negatives}, β={c.beta:g}): full",
    "uniform_nn": "CE + uniform smoothing + neighbor negatives (k={c.negatives}, β={c.beta:g})",
    "dist2_code": "CE + DIST2 (code: α=1, τ=4)",
    "label_smoothing": "CE, label smoothing {c.smoothing:g}",
    "ntl": "CE + {c.ntl_weight:g} NTL-WAS (ntloss)",
}


def label(method: str, config: Config) -> str:
    """The table row name of `method` with `config`'s constants."""
    return LABELS[method].format(c=config)


@dataclass(frozen=True)
class ModelConfig:
    """The toy's causal transformer (`dist2loss.model.TinyCausalLM`)."""

    d_model: int = 64
    layers: int = 2
    heads: int = 4
    ff: int = 128  # feed-forward width


@dataclass(frozen=True)
class Config:
    """One scale of the toy; every field is the same for all methods."""

    sizes: tuple[int, ...] = (250, 1000, 4000)  # N training sequences
    seeds: int = 1
    methods: tuple[str, ...] = METHODS
    steps: int = 500
    batch: int = 32
    lr: float = 3e-3
    test: int = 500  # held-out sequences
    task: RegressionTask = field(default_factory=RegressionTask)
    model: ModelConfig = field(default_factory=ModelConfig)
    tau: float = 1.0  # DIST2Loss temperature (paper default for numbers)
    alpha: float = 0.1  # DIST2Loss KL weight (paper default)
    negatives: int = 2  # neighbor negatives per gold (ours: the two nearest integers)
    beta: float = 0.1  # their weight (ours: the paper's alpha)
    smoothing: float = 0.1
    ntl_weight: float = 0.3


SCALES: dict[str, Config] = {
    "micro": Config(sizes=(250,), steps=20, test=64, methods=("ce", "dist2", "dist2_nn")),
    "tiny": Config(),
    "small": Config(seeds=3, steps=1000, methods=(*METHODS, "dist2_code")),
    "paper": Config(
        seeds=5,
        steps=5000,
        model=ModelConfig(d_model=128, layers=4, ff=512),
        methods=(*METHODS, "dist2_code"),
    ),
}


def ntl_peer(task: RegressionTask) -> Any:
    """ntloss's NTLoss (Wasserstein form) over the toy's integer tokens.

    ntloss finds number tokens through a Hugging Face tokenizer; ``digit_level=False``
    because every integer 0..63 is one token here (with the default only "0".."9" count).
    """
    from shared_core.data import require_extra

    require_extra(
        "dist2loss", "experiments", ("ntloss", "tokenizers", "transformers"), "the 'ntl' arm"
    )
    from ntloss import NTLoss
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {str(v): v for v in range(task.n_numbers)} | {"<bos>": task.bos}
    tok: Any = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocab=vocab, unk_token="<bos>")),
        unk_token="<bos>",
        bos_token="<bos>",
    )
    return NTLoss(tok, vocab_size=task.vocab_size, digit_level=False)


def make_loss(method: str, config: Config) -> Callable[[Any, Any], Any]:
    """``loss_fn(model, (inputs, labels))`` for `shared_core.train.fit`."""
    import torch.nn.functional as F

    from dist2loss.loss import dist2_loss

    metric = config.task.metric()
    peer = ntl_peer(config.task) if method == "ntl" else None

    def loss_fn(model: Any, batch: tuple[torch.Tensor, torch.Tensor]) -> Any:
        inputs, labels = batch
        logits = model(inputs)
        if method in ("dist2", "dist2_nn", "uniform_nn"):
            return dist2_loss(
                logits,
                labels,
                metric,
                config.tau,
                config.alpha,
                target="uniform" if method == "uniform_nn" else "distance",
                negatives=0 if method == "dist2" else config.negatives,
                beta=config.beta,
                return_parts=True,
            )
        if method == "dist2_code":  # the circulating reference code's values
            return dist2_loss(logits, labels, metric, 4.0, 1.0, restrict=True, normalise="metric")
        flat, y = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)
        if method == "label_smoothing":
            return F.cross_entropy(flat, y, label_smoothing=config.smoothing)
        ce = F.cross_entropy(flat, y)
        if method == "ntl":
            assert peer is not None
            ntl = peer(logits, labels)
            parts = {"ce": float(ce.detach()), "ntl": float(ntl.detach())}
            return ce + config.ntl_weight * ntl, parts
        return ce

    return loss_fn


def greedy_answers(model: torch.nn.Module, seq: torch.Tensor, task: RegressionTask) -> np.ndarray:
    """The model's argmax token for y_q, as a number (a non-number token counts as 0)."""
    import torch

    from dist2loss.data import inputs_and_labels

    inputs, _ = inputs_and_labels(seq)
    model.eval()
    with torch.no_grad():
        token = model(inputs)[:, -1].argmax(-1)
    return torch.where(token < task.n_numbers, token, 0).cpu().numpy().astype(np.float64)


def train_one(method: str, n: int, seed: int, config: Config, device: str) -> np.ndarray:
    """Absolute errors of the greedy answers on the test set after training on n sequences."""
    import torch

    from dist2loss.data import inputs_and_labels, make_sequences
    from dist2loss.model import TinyCausalLM
    from shared_core.train import TrainConfig, fit, step_generator

    task = config.task
    train = make_sequences(task, n, seed=1000 + seed)
    test = make_sequences(task, config.test, seed=10**6 + seed)
    torch.manual_seed(seed)
    m = config.model
    model = TinyCausalLM(task.vocab_size, m.d_model, m.layers, m.heads, m.ff, task.length)

    def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.randint(0, n, (config.batch,), generator=step_generator(seed, step))
        return inputs_and_labels(train[rows])

    tc = TrainConfig(steps=config.steps, lr=config.lr, warmup=max(1, config.steps // 20))
    fit(
        model,
        make_loss(method, config),
        batch_fn,
        tc,
        desc=f"{method} N={n} train",
        device=device,
        show_progress=False,
    )
    pred = greedy_answers(model, test.to(next(model.parameters()).device), task)
    return np.abs(pred - test[:, -1].numpy())


TITLE = "DIST2Loss on in-context linear regression (integer tokens)"


def notes(config: Config) -> str:
    return (
        f"{config.seeds} seed(s) per cell; 95 % bootstrap intervals over "
        f"{config.test * config.seeds} test answers; errors in integer units."
    )


def run(args: ReproduceArgs) -> dict[str, Any]:
    """The toy alone, in its own run folder."""
    from shared_core.report import Run

    config: Config = args.config
    with Run("dist2loss", config, out=args.out) as run:
        results = run_in(run, config, args.seed, args.device)
        run.finish(TITLE, notes=notes(config))
    return results


def run_in(run: Any, config: Config, seed: int, device: str) -> dict[str, Any]:
    """Run the toy inside an open `shared_core.report.Run` (table "toy", metric "results")."""
    from shared_core.metrics import bootstrap_ci

    unknown = [m for m in config.methods if m not in LABELS]
    if unknown:
        raise ValueError(f"methods: unknown {unknown}, expected among {list(LABELS)}")
    results: dict[str, dict[int, dict[str, float]]] = {m: {} for m in config.methods}
    for n in config.sizes:
        for method in config.methods:
            t0 = time.perf_counter()
            errs = np.concatenate(
                [train_one(method, n, seed + s, config, device) for s in range(config.seeds)]
            )
            mae, lo, hi = bootstrap_ci(lambda e: float(np.mean(e)), errs)
            rmse, rlo, rhi = bootstrap_ci(lambda e: float(np.sqrt(np.mean(e**2))), errs)
            exact = float(np.mean(errs == 0))
            results[method][n] = {
                "mae": mae,
                "mae_lo": lo,
                "mae_hi": hi,
                "rmse": rmse,
                "rmse_lo": rlo,
                "rmse_hi": rhi,
                "exact": exact,
            }
            run.add_row(
                "toy",
                N=n,
                method=label(method, config),
                MAE=f"{mae:.3f} [{lo:.3f}, {hi:.3f}]",
                RMSE=f"{rmse:.3f} [{rlo:.3f}, {rhi:.3f}]",
                exact=round(exact, 3),
                seconds=round(time.perf_counter() - t0, 1),
            )
    run.log(results={m: {str(n): v for n, v in r.items()} for m, r in results.items()})
    _plot(run, results, config)
    return results


def _plot(run: Any, results: dict[str, dict[int, dict[str, float]]], config: Config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    for ax, key in zip(axes, ("mae", "rmse"), strict=True):
        for method, rows in results.items():
            ns = sorted(rows)
            y = [rows[n][key] for n in ns]
            err = [
                [rows[n][key] - rows[n][f"{key}_lo"] for n in ns],
                [rows[n][f"{key}_hi"] - rows[n][key] for n in ns],
            ]
            ax.errorbar(ns, y, yerr=err, marker="o", capsize=3, label=label(method, config))
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(list(config.sizes), [str(n) for n in config.sizes])
        ax.set_xlabel("training sequences N")
        ax.set_ylabel(f"{key.upper()} of the greedy answer (integer units)")
        ax.grid(alpha=0.3)
    axes[0].set_title("Error vs training data (95 % bootstrap CI)")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    fig.tight_layout()
    run.save_figure("error_vs_n", fig)
