"""SFT vs CDT on the generated key-value retrieval task with a 2-layer d = 64 Llama.

Four arms trained by `shared_core.train.fit` on the same batches: SFT, CDT with the paper's
step (``sigma = lr_t * 5``, `CDTConfig()`), CDT with a step 200 times larger (``beta = 1e3``,
ours) for the same number of optimiser steps, and (micro and paper scales) SFT for
``flops_ratio`` times as many steps (the same training FLOPs: a CDT step is a plain step,
3 forward-equivalents, plus the scoring pass, a forward and an input-only backward, ~2
more, so ~5/3). Each is scored on held-out examples and on longer examples with more
distractors: answer accuracy, the attention mass on the needle from the answer position,
the noise detector (``||g||_2 <= mean``) against the planted labels, the paper's attention
IG score (the needle's share; its rank correlation with the embedding-gradient norm, the
paper's proportionality claim) and the manual-denoising analysis (the needle's attention and
IG share after ``E - 0.1 g`` outside the needle and distractors, as the authors'
``ZeroEmbedAdapter``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from context_denoising.cdt import CDTConfig, make_cdt_loss, sft_loss
from context_denoising.data import (
    DISTRACTOR,
    HAYSTACK,
    KINDS,
    NEEDLE,
    RARE,
    RetrievalTask,
    make_batch,
)
from context_denoising.ig import attention_ig, manual_denoising, rank_correlation
from context_denoising.model import tiny_llama
from context_denoising.score import embedding_gradients, forward, noise_mask, token_norms
from shared_core.progress import phase

ARMS = ("SFT", "CDT", "CDT large step", "SFT equal-FLOPs")


@dataclass(frozen=True)
class Config:
    """One scale of the experiment; the defaults are the tiny scale."""

    task: RetrievalTask = field(
        default_factory=lambda: RetrievalTask(
            n_keys=8, n_values=4, min_len=128, max_len=160, n_distractors=3
        )
    )
    long_task: RetrievalTask = field(  # longer contexts, more distractors: out of distribution
        default_factory=lambda: RetrievalTask(
            n_keys=8, n_values=4, min_len=384, max_len=512, n_distractors=6
        )
    )
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    batch_size: int = 16
    steps: int = 200
    lr: float = 3e-3
    warmup: int = 20
    cdt: CDTConfig = field(default_factory=CDTConfig)  # the paper's: sigma = lr_t * 5, whole row
    # the "CDT large step" arm (ours): sigma = lr_t * 1e3; 0.1.0's lr_t * 1e4 moved noise
    # embeddings by ~7x their norm in training and the task was not learned
    cdt_large: CDTConfig = field(default_factory=lambda: CDTConfig(beta=1e3))
    flops_ratio: float = 5 / 3  # CDT step cost in plain steps (see the module docstring)
    seeds: int = 2  # 3 seeds of 3 arms at a batch that learns the task: ~300 s of CPU
    n_test: int = 64
    eval_batch: int = 32
    arms: tuple[str, ...] = ARMS[:3]  # the equal-FLOPs arm costs 5/3 of a CDT arm
    # manual-denoising steps: 0.1 is the authors' ZeroEmbedAdapter factor; 10 is ours (0.1
    # barely moves a d = 64 model's embeddings)
    denoise_factors: tuple[float, ...] = (0.1, 10.0)


SCALES: dict[str, Config] = {  # "small" is SmolLM2-135M: see `smollm.SmallConfig`
    "micro": Config(steps=8, batch_size=4, seeds=1, n_test=8, eval_batch=8, warmup=2, arms=ARMS),
    "tiny": Config(),
    "paper": Config(steps=2000, batch_size=32, seeds=3, n_test=1024, arms=ARMS),
}


def _train_config(cfg: Config, steps: int) -> Any:
    from shared_core.train import TrainConfig

    return TrainConfig(steps=steps, lr=cfg.lr, warmup=cfg.warmup, weight_decay=0.01)


def train_arm(arm: str, cfg: Config, seed: int, device: str = "cpu") -> tuple[Any, Any]:
    """Train one arm from the seed's initialisation; return the model and `fit`'s result."""
    from shared_core.train import fit

    if arm not in ARMS:
        raise ValueError(f"arm: expected one of {ARMS}, got {arm!r}")
    steps = round(cfg.steps * cfg.flops_ratio) if arm == "SFT equal-FLOPs" else cfg.steps
    tc = _train_config(cfg, steps)
    model = tiny_llama(
        cfg.task.vocab_size,
        hidden_size=cfg.hidden_size,
        num_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        seed=seed,
    )

    def batch_fn(step: int) -> dict[str, Any]:
        # the same stream of batches for every arm; the equal-FLOPs arm reads further on
        return make_batch(cfg.task, cfg.batch_size, seed, step)

    cdt = {"CDT": cfg.cdt, "CDT large step": cfg.cdt_large}.get(arm)
    loss_fn = sft_loss if cdt is None else make_cdt_loss(cdt)
    result = fit(model, loss_fn, batch_fn, tc, desc=f"{arm} train seed {seed}", device=device)
    return model, result


def _batches(task: RetrievalTask, cfg: Config, seed: int):
    for i in range(0, cfg.n_test, cfg.eval_batch):
        yield make_batch(task, min(cfg.eval_batch, cfg.n_test - i), 10_000 + seed, i)


def evaluate(model: Any, task: RetrievalTask, cfg: Config, seed: int) -> dict[str, float]:
    """Accuracy, needle attention mass, detector precision/recall, mean score by kind."""
    device = next(model.parameters()).device
    model.eval()
    model.set_attn_implementation("eager")  # attention probabilities need the eager path
    correct = total = 0
    mass: list[float] = []
    tp = fp = fn = 0  # "critical" (score > mean) vs the planted needle
    ntp = nfp = nfn = 0  # "noise" (score <= mean) vs the planted noise
    by_kind: dict[int, list[float]] = {k: [] for k in (NEEDLE, DISTRACTOR, HAYSTACK, RARE)}
    flows: dict[str, list[float]] = {k: [] for k in FLOW_KEYS}
    for b in _batches(task, cfg, seed):
        b = {k: v.to(device) for k, v in b.items()}
        with torch.no_grad():
            out = forward(model, b, input_ids=b["input_ids"], output_attentions=True)
        rows, ans = (b["labels"] != -100).nonzero(as_tuple=True)
        pred = out.logits[rows, ans - 1].argmax(-1)
        correct += int((pred == b["labels"][rows, ans]).sum())
        total += len(rows)
        # attention from the position that predicts the answer, mean over layers and heads
        att = torch.stack([a[rows, :, ans - 1] for a in out.attentions]).mean(dim=(0, 2))
        needle = b["kinds"] == NEEDLE
        mass += (att * needle).sum(-1).tolist()
        model.set_attn_implementation("sdpa")  # the same gradients, at a third of the cost
        _, g, checked = embedding_gradients(model, b)
        model.set_attn_implementation("eager")
        ctx = checked["context_mask"]
        s = token_norms(g, "l2")
        s = s / ((s * ctx).sum(1, keepdim=True) / ctx.sum(1, keepdim=True))  # mean context = 1
        noise = noise_mask(s, ctx)
        crit = ctx & ~noise
        tp += int((crit & needle).sum())
        fp += int((crit & ~needle).sum())
        fn += int((noise & needle).sum())
        truth_noise = ctx & ~needle
        ntp += int((noise & truth_noise).sum())
        nfp += int((noise & needle).sum())
        nfn += int((crit & truth_noise).sum())
        for k in by_kind:
            by_kind[k] += s[b["kinds"] == k].tolist()
        # the paper's attention IG score: needle share and rank correlation with ||g||
        # (the code form over the last quarter of the layers, as test_score.py's 24 of 32)
        for form, start in (("note", 0), ("code", (3 * cfg.num_layers) // 4)):
            flow = attention_ig(model, b, form=form, start_layer=start)
            flows[f"ig share {form}"] += _share(flow.ig, needle)
            flows[f"rho(grad, ig {form})"] += rank_correlation(s, flow.ig, ctx).tolist()
            if form == "note":
                flows["rho(grad, attention)"] += rank_correlation(s, flow.attention, ctx).tolist()
        # manual denoising: E - 0.1 g outside the supporting and interference records
        keep = needle | (b["kinds"] == DISTRACTOR)
        for factor in cfg.denoise_factors:
            delta = manual_denoising(model, b, keep, factor)
            after = attention_ig(model, b, form="note", delta=delta)
            mass_after = (after.attention * needle).sum(-1).tolist()
            flows.setdefault(f"denoised {factor:g} needle attention", []).extend(mass_after)
            flows.setdefault(f"denoised {factor:g} ig share note", []).extend(
                _share(after.ig, needle)
            )
    model.set_attn_implementation("sdpa")
    out_d = {
        "accuracy": correct / total,
        "needle attention": float(np.mean(mass)),
        "critical precision": tp / max(1, tp + fp),
        "critical recall": tp / max(1, tp + fn),
        "noise precision": ntp / max(1, ntp + nfp),
        "noise recall": ntp / max(1, ntp + nfn),
    }
    for k, v in by_kind.items():
        out_d[f"score {KINDS[k]}"] = float(np.mean(v)) if v else float("nan")
    out_d.update({k: float(np.nanmean(v)) for k, v in flows.items()})
    return out_d


FLOW_KEYS = (
    "ig share note",
    "ig share code",
    "rho(grad, ig note)",
    "rho(grad, ig code)",
    "rho(grad, attention)",
)


def _share(score: torch.Tensor, part: torch.Tensor) -> list[float]:
    """Per row: the part's fraction of the row's total score."""
    return ((score * part).sum(-1) / score.sum(-1).clamp_min(1e-30)).tolist()


def run(cfg: Config, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Train each of ``cfg.arms`` for ``cfg.seeds`` seeds; per-arm, per-test-set metrics."""
    for arm in cfg.arms:
        if arm not in ARMS:
            raise ValueError(f"arms: expected names among {ARMS}, got {arm!r}")
    results: dict[str, Any] = {"runs": []}
    for s in range(seed, seed + cfg.seeds):
        for arm in cfg.arms:
            phase(f"train + evaluate {arm}")
            model, fitted = train_arm(arm, cfg, s, device)
            # ||delta_i|| / ||e_i|| on the moved tokens, median over training steps (0 for SFT)
            shift = float(np.median([h.get("shift_ratio", 0.0) for h in fitted.history]))
            for name, task in (("held-out", cfg.task), ("long + distractors", cfg.long_task)):
                metrics = evaluate(model, task, cfg, s)
                results["runs"].append(
                    {
                        "seed": s,
                        "arm": arm,
                        "test": name,
                        "final loss": fitted.losses[-1],
                        "shift ratio": shift,
                        **metrics,
                    }
                )
    return results


def summarise(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Mean ± std over seeds per (arm, test)."""
    rows = []
    keys = [k for k in results["runs"][0] if k not in ("seed", "arm", "test")]
    for test in dict.fromkeys(r["test"] for r in results["runs"]):
        for arm in dict.fromkeys(r["arm"] for r in results["runs"]):
            runs = [r for r in results["runs"] if r["arm"] == arm and r["test"] == test]
            row: dict[str, Any] = {"test": test, "arm": arm, "seeds": len(runs)}
            for k in keys:
                v = np.array([r[k] for r in runs], dtype=float)
                f = ".2e" if k == "shift ratio" else ".3f"  # the default step's shift is ~1e-5
                row[k] = f"{v.mean():{f}} ± {v.std():{f}}" if len(v) > 1 else f"{v.mean():{f}}"
            rows.append(row)
    return rows
