"""Finding (3) at laptop scale: few-step text generation, VADD vs the MDM (char-level Shakespeare).

The paper trains on OpenWebText with GPT-2 tokens and scores unconditional samples by their
generative perplexity under GPT-2 large, beside their entropy, at few sampling steps. Here:
windows of `seq_len` characters of Shakespeare (`masked_diffusion.shakespeare_chars`), an MDM
and a VADD with the same decoder, data and batches (`train_mdm_and_vadd`), and a small causal
transformer (`masked_diffusion.CausalCharLM`) trained on the same training split as the
evaluator. Per model and number of sampling steps T: the generative NLL/perplexity of
`n_samples` windows, their pooled unigram entropy and their mean per-window entropy; the
evaluator's perplexity and the entropies of held-out real windows are the reference.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from masked_diffusion import mdlm_train_config, require_shakespeare, row_batches, shakespeare_chars
from masked_diffusion.evaluation import (
    CausalCharLM,
    CharLMConfig,
    evaluator_loss_fn,
    generative_nll,
    sequence_entropy,
)

from shared_core.metrics import unigram_entropy
from shared_core.train import fit
from vadd.experiments.common import train_mdm_and_vadd
from vadd.experiments.scales import TextConfig
from vadd.loss import gaussian_kl
from vadd.model import VADD
from vadd.sampling import sample


def train_evaluator(
    data: torch.Tensor, vocab_size: int, cfg: TextConfig, seed: int, device: str,
    show_progress: bool = True,
) -> CausalCharLM:  # fmt: skip
    """The causal char-level evaluator, trained on `data` (rows, seq_len) by `fit`."""
    torch.manual_seed(seed)
    model = CausalCharLM(
        CharLMConfig(vocab_size, data.shape[1], d_model=cfg.eval_d_model, n_layers=cfg.eval_layers)
    )
    fit(
        model, evaluator_loss_fn(), row_batches(data, cfg.batch_size, seed + 1),
        mdlm_train_config(cfg.eval_train_steps, lr=cfg.eval_lr, warmup=20),
        desc="evaluator train (text)", show_progress=show_progress, device=device,
    )  # fmt: skip
    return model.cpu().eval()


@torch.no_grad()
def latent_kl(model: VADD, x0: torch.Tensor, seed: int) -> float:
    """Mean ``KL(r_phi(z | x0, x_t, t) || p(z))`` in nats per window over held-out rows x0
    (batch, L), t ~ U(0, 1) and x_t ~ q(x_t | x0) (linear masking rate t): 0 when the recognition
    model has collapsed onto the prior, so that the decoder cannot use z."""
    if model.latent_dim == 0:
        raise ValueError("model: expected a VADD with latent_dim > 0, got latent_dim=0")
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(len(x0), generator=g)
    masked = torch.rand(x0.shape, generator=g) < t[:, None]
    x_t = torch.where(masked, torch.full_like(x0, model.mask_id), x0)
    m, log_sigma = model.posterior(x0, x_t, t)
    return float(gaussian_kl(m, log_sigma).mean())


def _scores(evaluator: CausalCharLM, x: torch.Tensor, vocab_size: int) -> dict[str, float]:
    nll = generative_nll(evaluator, x, vocab_size)
    mean, se = float(nll.mean()), float(nll.std() / math.sqrt(len(nll))) if len(nll) > 1 else 0.0
    return {
        "gen_nll_nats": mean,
        "gen_nll_se": se,
        "gen_ppl": math.exp(mean),
        "unigram_entropy_bits": unigram_entropy(x.numpy(), vocab_size),
        "seq_entropy_bits": float(sequence_entropy(x, vocab_size).mean()),
    }


def run_text(
    cfg: TextConfig, seed: int, device: str, show_progress: bool = True
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows ``{model, steps, gen_nll_nats, gen_nll_se, gen_ppl, *_entropy_bits}`` and the
    reference ``{reference_*: the evaluator and entropies on held-out windows, samples}``."""
    require_shakespeare("vadd")
    data = shakespeare_chars(seq_len=cfg.seq_len, plays=cfg.plays, seed=seed)
    v = data.vocab_size
    models = train_mdm_and_vadd(
        data.train, v, cfg, seed=seed, device=device, show_progress=show_progress, task="text",
        n_heads=cfg.n_heads, learned_positions=cfg.learned_positions,
    )  # fmt: skip
    evaluator = train_evaluator(data.train, v, cfg, seed, device, show_progress)
    held_out = data.val[: cfg.eval_rows]
    ref: dict[str, Any] = {
        f"reference_{k}": val for k, val in _scores(evaluator, held_out, v).items()
    }
    ref.update(reference_rows=len(held_out), vocab_size=v, train_rows=len(data.train))
    ref["vadd_latent_kl_nats"] = latent_kl(models["VADD"], held_out, seed)
    rows = []
    for name, model in models.items():
        for T in cfg.steps:
            g = torch.Generator().manual_seed(seed + T)
            x = sample(model, steps=T, batch_size=cfg.n_samples, generator=g)
            rows.append({"model": name, "steps": T, **_scores(evaluator, x, v)})
            ref[f"sample {name} T={T}"] = data.decode(x[0])
    return rows, ref


def plot_text(
    report: Any, rows: list[dict[str, Any]], ref: dict[str, Any], cfg: TextConfig
) -> None:
    """``text_gen_ppl.png``: generative perplexity and per-window entropy vs T, both models,
    the evaluator on held-out text as the reference line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_p, ax_h) = plt.subplots(1, 2, figsize=(11, 4), dpi=120)
    for name in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == name]
        ts = [r["steps"] for r in mine]
        ax_p.plot(ts, [r["gen_ppl"] for r in mine], marker="o", label=name)
        ax_h.plot(ts, [r["seq_entropy_bits"] for r in mine], marker="o", label=name)
    ax_p.axhline(ref["reference_gen_ppl"], color="k", ls="--", label="held-out real text")
    ax_h.axhline(ref["reference_seq_entropy_bits"], color="k", ls="--", label="held-out real text")
    for ax in (ax_p, ax_h):
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(cfg.steps), [str(t) for t in cfg.steps])
        ax.set_xlabel("sampling steps T")
        ax.grid(alpha=0.3)
    ax_p.set_yscale("log")
    ax_p.set_ylabel("generative perplexity (per char, evaluator)")
    ax_p.set_title("generative perplexity vs steps (lower = more text-like)")
    ax_h.set_ylabel("entropy of a window's characters (bits)")
    ax_h.set_title("sample entropy vs steps (low = repetitive)")
    ax_h.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8)
    fig.suptitle(f"char-level Shakespeare, {cfg.seq_len}-char windows: VADD vs MDM")
    fig.tight_layout()
    report.save_figure("text_gen_ppl", fig)
