"""nextquill on a user's data: ``train-reference`` (theta_D), ``train`` (NextQuill), ``evaluate``.

The records are TRL prompt/completion JSONL with the user's history as its own field, so that
the counterfactual prompt can drop exactly that block::

    {"prefix": "item : hamlet ; ", "history": "history : lear is superb ... ; ",
     "prompt": "review :", "completion": " hamlet is superb ..."}

The prompt is ``prefix + history + prompt`` as written (``prefix`` is optional, ``history``
may be empty: a user without history). As in the paper:

- ``nextquill train-reference --model DIR --data all_users.jsonl --out theta_D`` trains the
  reference model theta_D on everybody's data with the history in the prompt (ContextSFT:
  cross-entropy on the completion);
- ``nextquill train --model DIR --reference theta_D --data user.jsonl --out DIR`` fine-tunes
  with ``L_n + alpha L_p`` (`NextQuillTrainer`), the data-side effect DCE from theta_D
  (``--self-weights``: from the model being trained, the public code's form);
- ``nextquill evaluate --model DIR --data heldout.jsonl`` generates each review greedily and
  scores it against the user's review with ROUGE-1 and ROUGE-L F (the paper's headline
  metrics; rouge-score).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs

if TYPE_CHECKING:  # nextquill.data imports torch; `--help` must not
    from nextquill.data import Example


def read_examples(
    path: Path, skip_invalid: bool = False, flag: str = "--data"
) -> tuple[list[Example], dict[str, Any]]:
    """The `Example` of each JSONL record (prompt, completion, history; optional prefix) and
    the reader's metrics; a bad record is a `UsageError` naming `flag`, the file and line."""
    from nextquill.data import Example
    from shared_core.finetune import read_records

    read = read_records(path, skip_invalid, flag)
    if read.format != "prompt_completion":
        raise UsageError(
            f"{flag}: {path} holds {read.format} records; expected prompt/completion records "
            "with a history field"
        )
    examples = []
    for record, line in zip(read.records, read.lines, strict=True):
        where = f"{flag}: {path}, line {line}"
        fields = {"prefix": record.get("prefix", ""), "history": record.get("history")}
        fields |= {"suffix": record["prompt"], "target": record["completion"]}
        if fields["history"] is None:
            raise UsageError(f'{where}: no history field (give "history": "" for none)')
        for name, value in fields.items():
            if not isinstance(value, str):
                key = {"suffix": "prompt", "target": "completion"}.get(name, name)
                raise UsageError(f"{where}: {key} must be a string, got {type(value).__name__}")
        if not fields["target"].strip():
            raise UsageError(f"{where}: completion is empty")
        examples.append(Example(**fields))
    return examples, dict(read.metrics())


def _add_data_flags(p: argparse.ArgumentParser) -> None:
    from shared_core.finetune import add_finetune_flags

    add_finetune_flags(p)


def train_reference_options(p: argparse.ArgumentParser) -> None:
    """``train-reference``'s flags: the shared fine-tuning flags."""
    _add_data_flags(p)


def train_options(p: argparse.ArgumentParser) -> None:
    """``train``'s flags: the shared fine-tuning flags, ``--reference``, ``--self-weights``."""
    _add_data_flags(p)
    p.add_argument(
        "--reference", type=Path, metavar="DIR", help="theta_D, from `nextquill train-reference`"
    )
    p.add_argument(
        "--self-weights",
        action="store_true",
        help="no theta_D: the DCE from the model being trained (the public code's form)",
    )


def context_sft_rows(
    examples: Sequence[Example], tokenizer: Any, max_length: int
) -> list[dict[str, list[int]]]:
    """ContextSFT rows (ids of ``prefix + history + prompt + completion + EOS``, labels on the
    completion and EOS), tokenised piece by piece as `nextquill.data.encode` does, so theta_D
    reads exactly the ids it later scores."""
    from nextquill.data import IGNORE, encode_one

    rows = []
    for e in examples:
        enc = encode_one(e, tokenizer, max_length)
        ids, n = enc.with_history, enc.n_target
        labels = [IGNORE] * (len(ids) - n) + ids[-n:]
        rows.append({"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels})
    return rows


def _encoded(
    examples: Sequence[Example], tokenizer: Any, max_length: int, where: str
) -> list[dict[str, list[int]]]:
    try:
        return context_sft_rows(examples, tokenizer, max_length)
    except ValueError as e:
        raise UsageError(f"{where}: {e}") from None


def train_reference(args: VerbArgs) -> Path:
    """theta_D: the model fine-tuned on all users' records with the history in the prompt."""
    import transformers

    from shared_core.finetune import EncodedFile, TrainingRun

    plan(["load model and data", "train", "save"])
    phase("load model and data")
    job = TrainingRun.start(args)
    files = []
    for flag, path in (("--data", args.data_path), ("--eval", args.extra["eval"])):
        if path is None:
            continue
        examples, metrics = read_examples(path, args.skip_invalid, flag)
        encoded = _encoded(examples, job.tokenizer, args.extra["max_length"], f"{flag} {path}")
        files.append(EncodedFile(path, encoded, metrics))
    trainer = transformers.Trainer(
        model=job.trainable(),
        args=job.arguments(),
        train_dataset=files[0].examples,
        eval_dataset=files[1].examples if len(files) > 1 else None,
        data_collator=job.collator(),
    )
    settings = {"method": "nextquill theta_D (ContextSFT on all users)"}
    return job.fit(
        trainer, owner=transformers.Trainer, settings=settings, data=files, package="nextquill"
    )


def train(args: VerbArgs) -> Path:
    """Fine-tune ``--model`` on one user's records with NextQuill's loss."""
    import dataclasses

    from nextquill.hf import NextQuillCollator, NextQuillTrainer
    from shared_core.finetune import EncodedFile, TrainingRun, load_causal_lm

    flags = args.extra
    if (flags["reference"] is None) == (not flags["self_weights"]):
        raise UsageError(
            "--reference: give theta_D's folder (nextquill train-reference), or --self-weights "
            "for the public code's self-weighting (not both)"
        )
    plan(["load model and data", "train", "save"])
    phase("load model and data")
    job = TrainingRun.start(args)
    reference = None
    if flags["reference"] is not None:
        reference, ref_tok = load_causal_lm(flags["reference"])
        if ref_tok.get_vocab() != job.tokenizer.get_vocab():
            raise UsageError(
                f"--reference: {flags['reference']} has another tokenizer than --model "
                f"{flags['model']}; theta_D must be trained from the same model"
            )
    files = []
    for flag, path in (("--data", args.data_path), ("--eval", flags["eval"])):
        if path is not None:
            examples, metrics = read_examples(path, args.skip_invalid, flag)
            rows = [dataclasses.asdict(e) for e in examples]
            # every example fits --max-length: one error now rather than mid-training
            _encoded(examples, job.tokenizer, flags["max_length"], f"{flag} {path}")
            files.append(EncodedFile(path, rows, metrics))
    trainer = NextQuillTrainer(
        model=job.trainable(),
        args=job.arguments(),
        train_dataset=files[0].examples,
        eval_dataset=files[1].examples if len(files) > 1 else None,
        data_collator=NextQuillCollator(job.tokenizer, max_length=flags["max_length"]),
        config=args.config,
        reference_model=reference,
    )
    settings = {
        "method": "nextquill",
        "nextquill": dataclasses.asdict(args.config),
        "reference": None if reference is None else str(flags["reference"]),
    }
    return job.fit(trainer, owner=NextQuillTrainer, settings=settings, data=files)


def evaluate_options(p: argparse.ArgumentParser) -> None:
    """``evaluate``'s own flags."""
    p.add_argument("--model", metavar="DIR", help="the trained model folder (or --checkpoint)")
    p.add_argument("--max-new-tokens", type=int, default=64, help="tokens generated per review")
    p.add_argument("--max-length", type=int, default=512, help="prompt tokens (oldest history cut)")


def prompt_ids(example: Example, tokenizer: Any, max_length: int) -> list[int]:
    """The ids of ``prefix + history + prompt`` as training encodes them (oldest history cut
    to fit `max_length`)."""
    from nextquill.data import encode_one

    n = encode_one(example, tokenizer, add_eos=False).n_target
    enc = encode_one(example, tokenizer, max_length + n, add_eos=False)
    return enc.with_history[: len(enc.with_history) - n]


def rouge_scores(generated: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Mean ROUGE-1 and ROUGE-L F (rouge-score, no stemming) of `generated` vs `references`."""
    from rouge_score import rouge_scorer

    if len(generated) != len(references) or not references:
        raise ValueError(
            f"generated: expected {len(references)} texts (>= 1), got {len(generated)}"
        )
    scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"])
    scores = [scorer.score(r, g) for g, r in zip(generated, references, strict=True)]
    return {
        "rouge1": sum(s["rouge1"].fmeasure for s in scores) / len(scores),
        "rougeL": sum(s["rougeL"].fmeasure for s in scores) / len(scores),
    }


def evaluate(args: VerbArgs) -> dict[str, Any]:
    """ROUGE-1 / ROUGE-L of the model's greedy reviews on held-out records."""
    import torch

    from shared_core.atomic import atomic_write_json
    from shared_core.finetune import load_causal_lm
    from shared_core.report import Run

    spec = args.extra.get("model") or args.checkpoint
    if spec is None:
        raise UsageError("--model: give the trained model folder (or --checkpoint DIR)")
    if args.extra["max_new_tokens"] < 1 or args.extra["max_length"] < 2:
        raise UsageError("--max-new-tokens/--max-length: expected >= 1 / >= 2")
    plan(["load", "generate"])
    phase("load")
    model, tok = load_causal_lm(spec)
    model.eval()
    examples, metrics = read_examples(args.data_path, args.skip_invalid)
    phase("generate")
    texts = []
    with torch.no_grad():
        for e in examples:
            ids = prompt_ids(e, tok, args.extra["max_length"])
            out = model.generate(
                input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=args.extra["max_new_tokens"], do_sample=False,
                pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            )  # fmt: skip
            texts.append(tok.decode(out[0, len(ids) :], skip_special_tokens=True))
    scores: dict[str, Any] = {"examples": len(examples)}
    scores |= rouge_scores(texts, [e.target for e in examples])
    with Run("nextquill", {"model": str(spec), "data": str(args.data_path)}, out=args.runs) as run:
        run.log(**scores, **metrics)
        run.add_row("evaluate", **scores)
        run.finish("nextquill evaluate")
    if args.out is not None:
        reviews = [
            {"generated": t, "reference": e.target} for t, e in zip(texts, examples, strict=True)
        ]
        atomic_write_json(args.out, {"scores": scores, "reviews": reviews})
    print(json.dumps(scores))
    return scores
