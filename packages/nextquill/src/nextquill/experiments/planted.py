"""Finding: on a task whose only personal signal is planted word choice, which of NextQuill's
two causal effects (data side L_n, model side L_p) learns the user's words faster than plain
SFT with the history in the prompt, in the paper's form and in the public code's form.

Every arm trains the same randomly initialised tiny Llama (`nextquill.model.tiny_llama`) on the
same generated users (`nextquill.world`), with the same steps, batches and seeds, through
`shared_core.train.fit`; the arms are `nextquill.experiments.arms.ARMS` (ContextSFT, then L_n
only, L_p only and NextQuill in the paper's form and in the code's form).

theta_D, the paper's reference model for the data-side effect ("trained on D"), is a ContextSFT
model of the same seed trained for ``reference_steps`` (several times an arm's steps), frozen;
its own metrics and the mean training loss of its last two tenths of steps are reported. Metrics on held-out users
reviewing held-out plays: slot-token accuracy (teacher-forced argmax at the tokens the user's
map decides), ROUGE-1 F of greedy reviews (rouge-score), and the data-side detector
``DCE > delta`` of each final model against the planted preference tokens (precision, recall).
Differences from ContextSFT (and NextQuill minus L_n only, the paper's ablation) are paired
by seed, with a Student-t 95 % interval over seeds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from nextquill.experiments.arms import ARMS, LABELS, USES_REFERENCE, make_loss
from nextquill.experiments.costs import ESTIMATE_S
from nextquill.loss import NextQuillConfig
from nextquill.model import TinyLlamaConfig
from nextquill.world import WorldConfig
from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan

if TYPE_CHECKING:  # torch is imported inside the functions: `nextquill --help` stays fast
    import torch

    from nextquill.world import PlantedExample, World

PAIRS = (
    *((a, "sft") for a in ARMS[1:]),
    ("nextquill", "ln"),  # the paper's ablation: full objective vs data-side weighting alone
    ("nextquill_code", "ln_code"),
)
"""(arm, baseline) differences reported paired by seed."""


@dataclass(frozen=True)
class Config:
    """One scale of the planted-preference experiment; every field is shared by all arms."""

    world: WorldConfig = field(default_factory=WorldConfig)
    model: TinyLlamaConfig = field(default_factory=TinyLlamaConfig)
    arms: tuple[str, ...] = ARMS
    seeds: int = 3
    steps: int = 250
    reference_steps: int = 1000  # theta_D: ContextSFT on D for this many steps
    batch: int = 16
    lr: float = 6e-3
    loss: NextQuillConfig = field(default_factory=NextQuillConfig)
    eval_examples: int = 96  # held-out examples scored (teacher-forced) and decoded
    smollm2: bool = False  # also fine-tune SmolLM2-135M with LoRA on Shakespeare's characters
    smollm2_steps: int = 60
    smollm2_batch: int = 4
    reviews: bool = False  # also the same SmolLM2 arms on $NEXTQUILL_REVIEWS (Amazon-style JSON)


SCALES: dict[str, Config] = {
    "micro": Config(
        world=WorldConfig(users=24, test_users=6, reviews_per_user=3),
        model=TinyLlamaConfig(hidden=32, layers=1, ff=64),
        arms=("sft", "nextquill"),
        seeds=1,
        steps=8,
        reference_steps=8,
        batch=8,
        eval_examples=8,
    ),
    "tiny": Config(steps=150, reference_steps=600),
    # the paper's ablation (full NextQuill vs data-side weighting alone, paper form, theta_D
    # trained on D) with more seeds; tiny already shows the other arms. 753 CPU-s (0.2.1).
    "small": Config(
        world=WorldConfig(users=400, test_users=80),
        arms=("sft", "ln", "nextquill"),
        seeds=5,
        steps=400,
        reference_steps=1600,
        batch=32,
        eval_examples=256,
    ),
    "paper": Config(
        world=WorldConfig(users=2000, test_users=200, reviews_per_user=9, max_history=8),
        model=TinyLlamaConfig(hidden=256, layers=4, heads=8, kv_heads=4, ff=1024),
        steps=5000,
        reference_steps=20000,
        batch=64,
        lr=1e-3,
        eval_examples=1000,
        smollm2=True,
        smollm2_steps=2000,
        smollm2_batch=8,
        reviews=True,
    ),
}


def evaluate(
    model: Any, tokenizer: Any, examples: list[PlantedExample], config: NextQuillConfig
) -> dict[str, float]:
    """Slot accuracy, ROUGE-1 F of greedy reviews, and the detector's precision/recall."""
    import torch
    from rouge_score import rouge_scorer

    from nextquill.data import collate, encode_one, pad_id_of
    from nextquill.loss import both_passes, data_side_effect
    from nextquill.model import greedy_decode

    enc = [encode_one(e.example, tokenizer) for e in examples]
    batch = collate(enc, pad_id_of(tokenizer))
    device = next(model.parameters()).device
    batch = {k: v.to(device) for k, v in batch.items()}
    model.eval()
    with torch.no_grad():
        lw, l0, targets = both_passes(model, batch)
        dce = data_side_effect(lw, l0, targets).cpu()
        pred = lw.argmax(-1).cpu()
    # the planted truth per target token (the EOS that closes each response is not a slot)
    pref = torch.tensor([p for e in examples for p in (*e.preference_mask, False)])
    has_history = torch.tensor(
        [bool(e.example.history) for e in examples for _ in range(len(e.words) + 1)]
    )
    correct = pred == targets.cpu()
    slot_acc = float(correct[pref].float().mean()) if bool(pref.any()) else float("nan")
    flagged = (dce > config.delta) & has_history
    tp = int((flagged & pref).sum())
    precision = tp / max(1, int(flagged.sum()))
    recall = tp / max(1, int(pref.sum()))
    prompts = [e.with_history[: -e.n_target] for e in enc]
    max_new = max(e.n_target for e in enc) + 1
    outs = greedy_decode(model, prompts, max_new, int(tokenizer.eos_token_id), pad_id_of(tokenizer))
    scorer = rouge_scorer.RougeScorer(["rouge1"])
    rouge = [
        scorer.score(e.example.target, tokenizer.decode(o))["rouge1"].fmeasure
        for e, o in zip(examples, outs, strict=True)
    ]
    return {
        "slot_acc": slot_acc,
        "rouge1": float(np.mean(rouge)),
        "det_precision": precision,
        "det_recall": recall,
    }


def train_arm(
    arm: str, world: World, tokenizer: Any, seed: int, config: Config, device: str, reference: Any
) -> Any:
    """A fresh tiny Llama trained by one arm's loss; returns the model (eval mode)."""
    return _train(arm, world, tokenizer, seed, config, device, reference)[0]


def _train(
    arm: str, world: World, tokenizer: Any, seed: int, config: Config, device: str, reference: Any
) -> tuple[Any, list[dict[str, float]]]:
    """`train_arm`'s model and its training record, one dict per step (``loss``, and for the
    weighted arms ``over_delta``: the batch's share of tokens with DCE > delta)."""
    import torch

    from nextquill.data import collate, encode_one, pad_id_of
    from nextquill.model import tiny_llama
    from shared_core.train import TrainConfig, fit, step_generator

    enc = [encode_one(e.example, tokenizer) for e in world.train]
    pad = pad_id_of(tokenizer)
    model = tiny_llama(len(tokenizer), config.model, seed=seed)

    def batch_fn(step: int) -> dict[str, torch.Tensor]:
        rows = torch.randint(0, len(enc), (config.batch,), generator=step_generator(seed, step))
        return collate([enc[int(i)] for i in rows], pad)

    tc = TrainConfig(steps=config.steps, lr=config.lr, warmup=max(1, config.steps // 20))
    result = fit(
        model,
        make_loss(arm, config.loss, reference),
        batch_fn,
        tc,
        desc=f"{arm} seed {seed}",
        device=device,
        show_progress=False,
    )
    return model, result.history


def reproduce(args: ReproduceArgs) -> dict[str, Any]:
    """Train every arm on every seed, print and write the table, plot, optionally SmolLM2
    (``nextquill reproduce --ablate`` runs `nextquill.experiments.ablation` instead)."""
    from nextquill.model import word_tokenizer
    from nextquill.world import make_world
    from shared_core.report import Run

    config: Config = args.config
    unknown = [a for a in config.arms if a not in LABELS]
    if unknown:
        raise ValueError(f"arms: unknown {unknown}, expected among {list(LABELS)}")
    if config.reviews:
        from nextquill.experiments.smollm2 import reviews_path

        path = reviews_path()  # fail before hours of training, not after
    seeds = [f"seed {args.seed + s}" for s in range(config.seeds)]
    llm = ["SmolLM2 (Shakespeare)"] * config.smollm2 + ["SmolLM2 (reviews)"] * config.reviews
    plan([*seeds, "report", *llm], ESTIMATE_S.get(args.scale))
    results: dict[str, list[dict[str, float]]] = {a: [] for a in config.arms}
    theta: list[dict[str, float]] = []
    with Run("nextquill", config, out=args.out) as run:
        for s in range(config.seeds):
            seed = args.seed + s
            phase(f"seed {seed}")
            world = make_world(config.world, seed=seed)
            tok = word_tokenizer(world.vocabulary)
            test = world.test[: config.eval_examples]
            reference = None
            if any(a in USES_REFERENCE for a in config.arms):
                t0 = time.process_time()
                ref_config = replace(config, steps=config.reference_steps)
                reference, record = _train("sft", world, tok, seed, ref_config, args.device, None)
                losses = [r["loss"] for r in record]
                reference.requires_grad_(False)
                metrics = evaluate(reference, tok, test, config.loss)
                tail = max(1, len(losses) // 10)
                metrics["train_loss_last_tenth"] = float(np.mean(losses[-tail:]))
                metrics["train_loss_previous_tenth"] = float(np.mean(losses[-2 * tail : -tail]))
                metrics["cpu_s"] = time.process_time() - t0
                theta.append(metrics)
            for arm in config.arms:
                t0 = time.process_time()
                model, record = _train(
                    arm, world, tok, seed, config, args.device,
                    reference if arm in USES_REFERENCE else None,
                )  # fmt: skip
                metrics = evaluate(model, tok, test, config.loss)
                if "over_delta" in record[0]:  # the weighted arms: mean share over the steps
                    metrics["over_delta"] = float(np.mean([r["over_delta"] for r in record]))
                metrics["cpu_s"] = time.process_time() - t0
                results[arm].append(metrics)
        phase("report")
        rows = {LABELS[a]: r for a, r in results.items()}
        if theta:
            rows[f"θ_D (ContextSFT, {config.reference_steps} steps)"] = theta
        for label, per_seed in rows.items():
            row = {k: float(np.mean([r[k] for r in per_seed])) for k in per_seed[0]}
            sd = {k: float(np.std([r[k] for r in per_seed])) for k in per_seed[0]}
            run.add_row(
                "planted",
                arm=label,
                slot_acc=f"{row['slot_acc']:.3f} ± {sd['slot_acc']:.3f}",
                rouge1=f"{row['rouge1']:.3f} ± {sd['rouge1']:.3f}",
                det_precision=round(row["det_precision"], 3),
                det_recall=round(row["det_recall"], 3),
                cpu_s_per_seed=round(row["cpu_s"], 1),
            )
        paired = paired_differences(results)
        for (arm, base), diff in paired.items():
            run.add_row(
                "paired",
                difference=f"{arm} − {base}",
                **{k: f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for k, (m, lo, hi) in diff.items()},
            )
        run.log(theta_d=theta, paired={f"{a} - {b}": d for (a, b), d in paired.items()})
        run.log(results=results)
        _plot(run, results, config)
        if config.smollm2:
            from nextquill.experiments.smollm2 import run_smollm2

            phase("SmolLM2 (Shakespeare)")
            run.log(smollm2=run_smollm2(run, config, args))
        if config.reviews:
            from nextquill.experiments.smollm2 import review_split, run_smollm2

            phase("SmolLM2 (reviews)")
            data = review_split(path, args.seed)
            run.log(reviews=run_smollm2(run, config, args, data, table="reviews"))
        run.finish(
            "NextQuill on planted preferences (held-out users and plays)",
            notes=f"{config.seeds} seed(s), mean ± sd over seeds; {config.steps} steps of "
            f"batch {config.batch} per arm; slot_acc and detector on "
            f"{config.eval_examples} held-out examples; θ_D = ContextSFT of the same seed "
            f"trained {config.reference_steps} steps; paired: mean difference over seeds "
            "[Student-t 95 % interval].",
        )
    return results


def paired_differences(
    results: dict[str, list[dict[str, float]]], keys: tuple[str, ...] = ("slot_acc", "rouge1")
) -> dict[tuple[str, str], dict[str, tuple[float, float, float]]]:
    """``{(arm, base): {key: (mean, low, high)}}``: the per-seed difference arm − base of each
    metric in `keys`, its mean and Student-t 95 % interval (for every pair of `PAIRS` whose
    two arms ran; the interval is (mean, mean) with one seed)."""
    out: dict[tuple[str, str], dict[str, tuple[float, float, float]]] = {}
    for arm, base in PAIRS:
        if arm not in results or base not in results:
            continue
        out[arm, base] = {
            key: t_interval(
                [a[key] - b[key] for a, b in zip(results[arm], results[base], strict=True)]
            )
            for key in keys
        }
    return out


def t_interval(diffs: list[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of per-seed `diffs` and its Student-t 95 % interval
    ((mean, mean) with one seed)."""
    from scipy import stats

    d = np.asarray(diffs, dtype=float)
    mean = float(d.mean())
    half = 0.0
    if len(d) > 1:
        half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    return mean, mean - half, mean + half


def _plot(run: Any, results: dict[str, list[dict[str, float]]], config: Config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = (("slot_acc", "slot-token accuracy"), ("rouge1", "ROUGE-1 F"))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    arms = list(results)
    for ax, (key, label) in zip(axes, keys, strict=True):
        for i, arm in enumerate(arms):
            vals = [r[key] for r in results[arm]]
            ax.bar(i, float(np.mean(vals)), yerr=float(np.std(vals)), capsize=3, label=LABELS[arm])
            ax.scatter([i] * len(vals), vals, color="k", s=8, zorder=3)
        ax.set_xticks(range(len(arms)), [a for a in arms], rotation=20)
        ax.set_ylabel(f"{label} (held-out users)")
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    axes[0].axhline(1 / 4, color="grey", ls="--", lw=1, label="chance (1 of 4 synonyms)")
    axes[0].set_title(f"Planted preferences, {config.steps} steps, {config.seeds} seed(s)")
    axes[1].set_title("Greedy reviews vs the held-out reviews")
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", ncol=3, bbox_to_anchor=(0.5, 0.0), fontsize=8)
    fig.tight_layout(rect=(0.0, 0.14, 1.0, 1.0))
    run.save_figure("planted", fig)
