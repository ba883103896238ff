"""dist2loss on a user's data: ``train`` a causal LM with `Dist2Trainer`, ``evaluate`` its numbers.

``dist2loss train --model DIR --data train.jsonl --out DIR`` fine-tunes a local Hugging Face
model (or ``smollm2``) on JSONL records in TRL's conventions (`shared_core.finetune`) with
CE + alpha KL(p_d || p_theta) on the metric tokens: by default the tokenizer's pure-digit
tokens valued as integers (``--table numbers``), or a user's token -> value / token -> point
table (``--table file.json``, `dist2loss.metric.table_from_json`). ``--set alpha=0`` is plain
cross-entropy (SFT), the baseline, bit for bit.

``dist2loss evaluate --model DIR --data eval.jsonl`` generates greedily from each prompt and
reads the first number of the answer: exact match (the number equals the gold completion's)
and mean absolute error over the answers that hold a number.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class TrainConfig:
    """DIST2Loss's settings (`Dist2Trainer`); defaults are the paper's for numbers."""

    tau: float = 1.0  # temperature of p_d: exp(-d/tau) is a Gaussian of variance tau/2
    alpha: float = 0.1  # weight of the KL term; 0 is plain cross-entropy (SFT)
    restrict: bool = False  # KL against p_theta renormalised over V_d (paper: full vocabulary)
    target: str = "distance"  # "uniform": the ablation target
    negatives: int = 0  # neighbor negatives (our option; paper: none)
    beta: float = 0.1  # weight of the neighbor-negative term
    normalise: str = "tokens"  # divide the sums by all predicted tokens ("metric": by V_d's)


def train_options(p: argparse.ArgumentParser) -> None:
    """``train``'s own flags: the shared fine-tuning flags and ``--table``."""
    from shared_core.finetune import add_finetune_flags

    add_finetune_flags(p)
    p.add_argument(
        "--table",
        default="numbers",
        metavar="numbers|FILE.json",
        help="metric tokens: the tokenizer's digit tokens (default), or a JSON object "
        "token -> number or token -> [x, y, ...]",
    )


def metric_for(spec: str, tokenizer: Any, vocab_size: int) -> Any:
    """The `MetricTable` that ``--table`` names, over a vocabulary of `vocab_size` ids."""
    from dist2loss.metric import number_table_from_tokenizer, table_from_json

    if spec == "numbers":
        try:
            return number_table_from_tokenizer(tokenizer, vocab_size=vocab_size)
        except ValueError as e:
            raise UsageError(
                f"--table numbers: {e}; give your metric tokens as --table FILE.json"
            ) from None
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"--table: expected 'numbers' or a JSON file, got {spec!r}")
    try:
        return table_from_json(path, tokenizer, vocab_size)
    except ValueError as e:
        raise UsageError(f"--table: {e}") from None


def train(args: VerbArgs) -> Path:
    """Fine-tune ``--model`` on ``--data`` with DIST2Loss and save it to ``--out``."""
    from shared_core.finetune import (
        TrainingRun,
        read_encoded,
    )

    flags = args.extra
    config: TrainConfig = args.config
    plan(["load model and data", "train", "save"])
    phase("load model and data")
    job = TrainingRun.start(args)
    vocab = job.model.get_output_embeddings().weight.shape[0]
    table = metric_for(flags["table"], job.tokenizer, vocab)
    train_set = read_encoded(args.data_path, job.tokenizer, flags, args.skip_invalid)
    eval_set = None
    if flags["eval"] is not None:
        eval_set = read_encoded(flags["eval"], job.tokenizer, flags, args.skip_invalid, "--eval")
    from dist2loss.hf import Dist2Trainer

    trainer = Dist2Trainer(
        model=job.trainable(),
        args=job.arguments(),
        train_dataset=train_set.examples,
        eval_dataset=None if eval_set is None else eval_set.examples,
        data_collator=job.collator(),
        metric=table,
        **dataclasses.asdict(config),
    )
    settings = {
        "method": "dist2loss",
        "dist2loss": dataclasses.asdict(config),
        "table": flags["table"],
        "metric_tokens": table.size,
    }
    return job.fit(trainer, owner=Dist2Trainer, settings=settings, data=[train_set, eval_set])


def evaluate_options(p: argparse.ArgumentParser) -> None:
    """``evaluate``'s own flags."""
    p.add_argument("--model", metavar="DIR", help="the trained model folder (or --checkpoint)")
    p.add_argument("--batch-size", type=int, default=8, help="prompts generated together")
    p.add_argument("--max-new-tokens", type=int, default=16, help="tokens generated per answer")


def first_number(text: str) -> float | None:
    """The first number written in `text` (``-12``, ``3.5``), or None."""
    found = NUMBER.search(text.replace(",", ""))
    return None if found is None else float(found.group())


def numeric_scores(predicted: Sequence[float | None], gold: Sequence[float]) -> dict[str, Any]:
    """Exact match over all answers; mean absolute error over those that hold a number."""
    if len(predicted) != len(gold) or not gold:
        raise ValueError(f"predicted: expected {len(gold)} answers (>= 1), got {len(predicted)}")
    errors = [abs(p - g) for p, g in zip(predicted, gold, strict=True) if p is not None]
    return {
        "examples": len(gold),
        "exact_match": sum(e == 0 for e in errors) / len(gold),
        "mean_abs_error": sum(errors) / len(errors) if errors else math.nan,
        "no_number": len(gold) - len(errors),
    }


def _prompt_and_answer(record: Mapping[str, Any], tokenizer: Any, where: str) -> tuple[str, str]:
    if "prompt" in record and "completion" in record:
        return str(record["prompt"]), str(record["completion"])
    messages = record.get("messages")
    if isinstance(messages, list) and messages and messages[-1].get("role") == "assistant":
        if not getattr(tokenizer, "chat_template", None):
            raise UsageError(f"{where}: messages need a tokenizer with a chat template")
        prompt = tokenizer.apply_chat_template(
            messages[:-1], tokenize=False, add_generation_prompt=True
        )
        return str(prompt), str(messages[-1]["content"])
    raise UsageError(
        f"{where}: expected prompt/completion, or messages ending with the assistant's answer"
    )


def evaluate(args: VerbArgs) -> dict[str, Any]:
    """Exact match and mean absolute error of the model's numeric answers on ``--data``."""
    import torch

    from shared_core.atomic import atomic_write_json
    from shared_core.finetune import load_causal_lm, read_records
    from shared_core.report import Run

    spec = args.extra.get("model") or args.checkpoint
    if spec is None:
        raise UsageError("--model: give the trained model folder (or --checkpoint DIR)")
    if args.extra["batch_size"] < 1 or args.extra["max_new_tokens"] < 1:
        raise UsageError("--batch-size/--max-new-tokens: expected integers >= 1")
    plan(["load", "generate"])
    phase("load")
    model, tok = load_causal_lm(spec)
    model.eval()
    records = read_records(args.data_path, args.skip_invalid)
    prompts, gold = [], []
    for record, line in zip(records.records, records.lines, strict=True):
        where = f"{args.data_path}: line {line}"
        prompt, answer = _prompt_and_answer(record, tok, where)
        value = first_number(answer)
        if value is None:
            raise UsageError(f"{where}: the answer {answer!r} holds no number")
        prompts.append(prompt)
        gold.append(value)
    phase("generate")
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    texts: list[str] = []
    size = args.extra["batch_size"]
    with torch.no_grad():
        for start in range(0, len(prompts), size):
            batch = tok(prompts[start : start + size], return_tensors="pt", padding=True)
            out = model.generate(
                **batch, max_new_tokens=args.extra["max_new_tokens"], do_sample=False,
                pad_token_id=tok.pad_token_id,
            )  # fmt: skip
            new = out[:, batch["input_ids"].shape[1] :]
            texts += tok.batch_decode(new, skip_special_tokens=True)
    scores = numeric_scores([first_number(t) for t in texts], gold)
    with Run("dist2loss", {"model": str(spec), "data": str(args.data_path)}, out=args.runs) as run:
        run.log(**scores, **records.metrics())
        run.add_row("evaluate", **scores)
        run.finish("dist2loss evaluate")
    if args.out is not None:
        answers = [{"prediction": t, "gold": g} for t, g in zip(texts, gold, strict=True)]
        atomic_write_json(args.out, {"scores": scores, "answers": answers})
    print(json.dumps(scores))
    return scores
