"""context-denoising on a user's data: ``train`` with `CDTTrainer`, ``score``, ``evaluate``.

``context-denoising train --model DIR|smollm2 --data train.jsonl --out DIR`` fine-tunes a
causal LM on JSONL records in TRL's conventions (`shared_core.finetune`: ``text``,
``prompt``/``completion``, ``messages``) with the CDT step: the paper's (`CDTConfig()`,
``sigma = lr_t * 5`` over the whole row) by default, the authors' code settings with
``--preset loomtrain|openrlhf|v0.1``, any field of `CDTConfig` with ``--set``; ``--sft``
trains the plain SFT baseline (a `transformers.Trainer`, no scoring pass) on the same flags.

``context-denoising score --model DIR --data docs.jsonl --out scores.html|.png`` writes the
per-token noise score ``||d CE(answer) / d e_i||`` and the noise mask CDT would apply to each
document (a prompt/completion record, or messages whose last turn is the assistant's answer)
as ``scores.jsonl`` and as a heat-map (`context_denoising.heatmap`); ``--ig`` adds the
paper's attention IG score.

``context-denoising evaluate --model DIR --data eval.jsonl``: the retrieval metric the paper
reports on its needle tasks (RULER's string match: the answer occurs in the greedy
generation), and the answer's teacher-forced exact match and mean log-probability.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs

PRESET_NAMES = ("paper", "loomtrain", "openrlhf", "v0.1")  # `context_denoising.cdt.PRESETS`


def train_options(p: argparse.ArgumentParser) -> None:
    """``train``'s own flags: the shared fine-tuning flags, ``--preset`` and ``--sft``."""
    from shared_core.finetune import add_finetune_flags

    add_finetune_flags(p)
    p.add_argument(
        "--preset",
        choices=PRESET_NAMES,
        default="paper",
        help="the CDT step to start from (paper: beta = 5 over the whole row, the default; "
        "loomtrain / openrlhf: the authors' code; v0.1: this package's 0.1 rule); "
        "--set beta=... etc. change it further",
    )
    p.add_argument(
        "--sft",
        action="store_true",
        help="train the plain SFT baseline (transformers.Trainer, no scoring pass) instead",
    )


def cdt_config(preset: str, overrides: Any) -> Any:
    """`PRESETS[preset]` with the fields `overrides` (a `CDTConfig` after ``--config/--set``)
    changes from the default `CDTConfig()` applied on top."""
    from context_denoising.cdt import PRESETS, CDTConfig

    default = CDTConfig()
    changed = {
        f.name: getattr(overrides, f.name)
        for f in dataclasses.fields(CDTConfig)
        if getattr(overrides, f.name) != getattr(default, f.name)
    }
    return dataclasses.replace(PRESETS[preset], **changed)


def encoded(
    path: Path, tokenizer: Any, flags: Mapping[str, Any], skip_invalid: bool, flag: str,
    *, need_context: bool,
) -> Any:  # fmt: skip
    """`shared_core.finetune.read_encoded`, and every example checked for what a CDT step
    needs: an answer token after position 0 (within ``--max-length``) and, with
    `need_context`, a prompt token to score. Errors name `flag`, the file and the line."""
    from shared_core.finetune import EncodedFile, encode_records, read_records

    read = read_records(path, skip_invalid, flag)
    where = f"{flag} {path}"
    examples = encode_records(read.records, tokenizer, flags["max_length"], where, read.lines)
    for example, line in zip(examples, read.lines, strict=True):
        labels = example["labels"]
        if all(label == -100 for label in labels[1:]):
            raise UsageError(
                f"{where}: line {line}: no answer token within --max-length "
                f"{flags['max_length']} (the prompt fills it); raise --max-length"
            )
        if need_context and labels[0] != -100:
            raise UsageError(
                f"{where}: line {line}: no prompt tokens to score; the v0.1 preset "
                "(region=context) needs prompt/completion records"
            )
    return EncodedFile(Path(path), examples, dict(read.metrics()))


def train(args: VerbArgs) -> Path:
    """Fine-tune ``--model`` on ``--data`` with the CDT step (or ``--sft``); save ``--out``."""
    from shared_core.finetune import TrainingRun

    flags = args.extra
    cdt = cdt_config(flags["preset"], args.config)
    plan(["load model and data", "train", "save"])
    phase("load model and data")
    job = TrainingRun.start(args)
    job.tokenizer.padding_side = "right"
    need_context = cdt.region == "context" and not flags["sft"]
    train_set = encoded(
        args.data_path, job.tokenizer, flags, args.skip_invalid, "--data", need_context=need_context
    )
    eval_set = None
    if flags["eval"] is not None:
        eval_set = encoded(
            flags["eval"], job.tokenizer, flags, args.skip_invalid, "--eval", need_context=False
        )
    from transformers import Trainer

    from context_denoising.trainer import CDTTrainer
    from shared_core.device import seed_everything

    # the LoRA initialisation draws from the global RNG before the Trainer seeds it: seeded
    # here, two runs with the same --seed start (and end) at the same adapter
    seed_everything(args.seed)
    common = {
        "model": job.trainable(),
        "args": job.arguments(),
        "train_dataset": train_set.examples,
        "eval_dataset": None if eval_set is None else eval_set.examples,
        "data_collator": job.collator(),
    }
    if flags["sft"]:
        trainer: Any = Trainer(**common)
        settings: dict[str, Any] = {"method": "sft"}
    else:
        trainer = CDTTrainer(**common, cdt_config=cdt)
        settings = {"method": "cdt", "preset": flags["preset"], "cdt": dataclasses.asdict(cdt)}
    return job.fit(
        trainer,
        owner=type(trainer),
        settings=settings,
        data=[train_set, eval_set],
        package="context-denoising",
    )


def _model_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        metavar="DIR",
        help="a causal-LM folder (what train wrote, or any), or 'smollm2'; or --checkpoint DIR",
    )
    p.add_argument("--max-length", type=int, default=2048, help="tokens per document (at most)")


def score_options(p: argparse.ArgumentParser) -> None:
    """``score``'s own flags."""
    _model_flag(p)
    p.add_argument(
        "--norm", choices=("l2", "l1"), default="l2", help="||g||_2 (the trainer) or ||g||_1"
    )
    p.add_argument(
        "--region",
        choices=("row", "context"),
        default="row",
        help="the tokens the noise threshold (their mean score) is taken over: the whole row "
        "(the paper's CDT step) or the prompt only",
    )
    p.add_argument(
        "--ig", action="store_true", help="add the paper's attention IG score (eager attention)"
    )


def evaluate_options(p: argparse.ArgumentParser) -> None:
    """``evaluate``'s own flags."""
    _model_flag(p)
    p.add_argument("--max-new-tokens", type=int, default=16, help="tokens generated per answer")


def _load(args: VerbArgs) -> tuple[Any, Any]:
    from shared_core.finetune import load_causal_lm

    spec = args.extra.get("model") or args.checkpoint
    if spec is None:
        raise UsageError("--model: give a model folder or 'smollm2' (or --checkpoint DIR)")
    if args.extra["max_length"] < 2:
        raise UsageError(f"--max-length: expected an integer >= 2, got {args.extra['max_length']}")
    model, tokenizer = load_causal_lm(spec)
    model.eval()
    return model, tokenizer


def prompt_and_answer(record: Mapping[str, Any], tokenizer: Any, where: str) -> tuple[str, str]:
    """The context and the answer of one record, as text.

    prompt/completion strings as they are; messages (or prompt/completion message lists)
    through the tokenizer's chat template, the last assistant turn being the answer.
    A ``text`` record has no answer to score: a `UsageError` naming `where`.
    """
    if "prompt" in record and "completion" in record:
        prompt, completion = record["prompt"], record["completion"]
        if isinstance(prompt, str) and isinstance(completion, str):
            return prompt, completion
        if isinstance(prompt, list) and isinstance(completion, list) and completion:
            return _chat(tokenizer, prompt, where), str(completion[-1].get("content", ""))
        raise UsageError(f"{where}: prompt and completion must both be strings or both messages")
    messages = record.get("messages")
    if isinstance(messages, list) and len(messages) > 1 and messages[-1].get("role") == "assistant":
        return _chat(tokenizer, messages[:-1], where), str(messages[-1]["content"])
    raise UsageError(
        f"{where}: expected prompt/completion, or messages ending with the assistant's answer "
        "(the noise score is the gradient of the answer's loss)"
    )


def _chat(tokenizer: Any, messages: list[Any], where: str) -> str:
    if not getattr(tokenizer, "chat_template", None):
        raise UsageError(
            f"{where}: holds messages but the tokenizer has no chat template; give a model "
            "whose tokenizer_config.json has one, or prompt/completion strings"
        )
    text: str = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return text


def documents(args: VerbArgs, tokenizer: Any) -> tuple[list[dict[str, Any]], list[int], Any]:
    """``--data`` as ``(examples, lines, read)``: input_ids / labels (the answer) per record.

    The prompt is truncated from the left when prompt + answer exceed ``--max-length`` (the
    question and answer stay); an answer longer than that is a `UsageError`.
    """
    from shared_core.finetune import read_records

    read = read_records(args.data_path, args.skip_invalid)
    limit = args.extra["max_length"]
    examples = []
    for record, line in zip(read.records, read.lines, strict=True):
        where = f"--data {args.data_path}: line {line}"
        prompt, answer = prompt_and_answer(record, tokenizer, where)
        head = list(tokenizer(prompt)["input_ids"])
        tail = list(tokenizer(answer, add_special_tokens=False)["input_ids"])
        if not head or not tail:
            raise UsageError(f"{where}: the prompt and the answer must both be non-empty")
        if len(tail) > limit - 1:
            raise UsageError(
                f"{where}: the answer has {len(tail)} tokens, more than --max-length {limit} - 1"
            )
        head = head[-(limit - len(tail)) :]
        examples.append(
            {"input_ids": head + tail, "labels": [-100] * len(head) + tail, "answer": answer}
        )
    return examples, list(read.lines), read


def _batch(example: Mapping[str, Any]) -> dict[str, Any]:
    import torch

    return {
        "input_ids": torch.tensor([example["input_ids"]]),
        "labels": torch.tensor([example["labels"]]),
    }


def score_document(
    model: Any, tokenizer: Any, example: Mapping[str, Any], *, norm: str = "l2",
    region: str = "row", ig: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """The scores of one document: per token its text, role, ``||g||``, noise flag (and IG).

    The noise rule is CDT's (`noise_mask`): ``||g_i||_2 <= mean`` over `region` (``"row"``:
    every token, answer included, as the paper's step; ``"context"``: the prompt), with the
    `norm` the scores are reported in.
    """
    from context_denoising.ig import attention_ig
    from context_denoising.score import embedding_gradients, noise_mask, token_norms

    batch = _batch(example)
    _, g, checked = embedding_gradients(model, batch)
    scores = token_norms(g, norm)  # (1, time)
    where = checked["attention_mask"].bool() if region == "row" else checked["context_mask"]
    noise = noise_mask(scores, where)
    context = checked["context_mask"][0]
    ids = example["input_ids"]
    out: dict[str, Any] = {
        "tokens": [tokenizer.decode([i]) for i in ids],
        "role": ["context" if bool(c) else "answer" for c in context],
        "score": [float(s) for s in scores[0]],
        "noise": [bool(n) for n in noise[0]],
        "threshold": float(scores[where].mean()),
        "noise_fraction": float(noise[0][context].float().mean()),
        "answer": example["answer"],
    }
    if ig:
        out["ig"] = [float(s) for s in attention_ig(model, batch).ig[0]]
    return out


def score(args: VerbArgs) -> Path:
    """Noise scores and masks of every ``--data`` document: ``scores.jsonl`` + the heat-map."""
    from context_denoising.heatmap import render
    from shared_core.data import write_jsonl
    from shared_core.report import Run

    out = args.out
    if out is None or out.suffix not in (".html", ".png"):
        raise UsageError(f"--out: expected a .html or .png file, got {out}")
    plan(["load", "score", "render"])
    phase("load")
    model, tokenizer = _load(args)
    examples, lines, read = documents(args, tokenizer)
    phase("score")
    scored = []
    for example, line in zip(examples, lines, strict=True):
        found = score_document(
            model, tokenizer, example, norm=args.extra["norm"], region=args.extra["region"],
            ig=args.extra["ig"],
        )  # fmt: skip
        scored.append({"line": line, **found})
    phase("render")
    jsonl = out.with_suffix(".jsonl")
    write_jsonl(jsonl, scored)
    render(scored, out, norm=args.extra["norm"], region=args.extra["region"])
    summary = {
        "documents": len(scored),
        "mean_noise_fraction": sum(d["noise_fraction"] for d in scored) / len(scored),
        **read.metrics(),
    }
    settings = {"model": str(args.extra.get("model") or args.checkpoint),
                "data": str(args.data_path), "norm": args.extra["norm"],
                "region": args.extra["region"]}  # fmt: skip
    with Run("context-denoising", settings, out=args.runs) as run:
        run.log(**summary)
        run.finish("context-denoising score")
    print(f"wrote {out} and {jsonl}: {json.dumps(summary)}")
    return out


def answer_metrics(
    model: Any, tokenizer: Any, example: Mapping[str, Any], max_new_tokens: int
) -> dict[str, Any]:
    """One document's answer: teacher-forced log-probability and exact match, and whether the
    greedy generation from the prompt contains it (RULER's string match, case-insensitive)."""
    import torch

    from context_denoising.score import sequence_ce

    batch = _batch(example)
    labels = batch["labels"]
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"]).logits
        logprob = -float(sequence_ce(logits, labels)[0])
        pred, gold = logits[0, :-1].argmax(-1), labels[0, 1:]
        exact = bool((pred[gold != -100] == gold[gold != -100]).all())
        n_prompt = int((labels[0] == -100).sum())
        prompt = batch["input_ids"][:, :n_prompt]
        generated = model.generate(
            input_ids=prompt, attention_mask=torch.ones_like(prompt),
            max_new_tokens=max_new_tokens, do_sample=False,
            pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
        )  # fmt: skip
    text = tokenizer.decode(generated[0, n_prompt:], skip_special_tokens=True)
    found = example["answer"].strip().lower() in text.lower()
    return {"answer_logprob": logprob, "exact_match": exact, "contains": found, "generated": text}


def retrieval_scores(rows: Sequence[Mapping[str, Any]]) -> dict[str, float | int]:
    """Means over documents: ``accuracy`` (string match), ``exact_match``, ``answer_logprob``."""
    if not rows:
        raise ValueError("rows: expected at least one scored document")
    n = len(rows)
    return {
        "examples": n,
        "accuracy": sum(bool(r["contains"]) for r in rows) / n,
        "exact_match": sum(bool(r["exact_match"]) for r in rows) / n,
        "answer_logprob": math.fsum(float(r["answer_logprob"]) for r in rows) / n,
    }


def evaluate(args: VerbArgs) -> dict[str, float | int]:
    """Retrieval accuracy, exact match and answer log-probability on ``--data``."""
    from shared_core.atomic import atomic_write_json
    from shared_core.report import Run

    if args.extra["max_new_tokens"] < 1:
        raise UsageError(
            f"--max-new-tokens: expected an integer >= 1, got {args.extra['max_new_tokens']}"
        )
    plan(["load", "evaluate"])
    phase("load")
    model, tokenizer = _load(args)
    examples, lines, read = documents(args, tokenizer)
    phase("evaluate")
    rows = []
    for example, line in zip(examples, lines, strict=True):
        found = answer_metrics(model, tokenizer, example, args.extra["max_new_tokens"])
        rows.append({"line": line, "answer": example["answer"], **found})
    scores = retrieval_scores(rows)
    settings = {"model": str(args.extra.get("model") or args.checkpoint),
                "data": str(args.data_path)}  # fmt: skip
    with Run("context-denoising", settings, out=args.runs) as run:
        run.log(**scores, **read.metrics())
        run.add_row("evaluate", **scores)
        run.finish("context-denoising evaluate")
    if args.out is not None:
        atomic_write_json(args.out, {"scores": scores, "answers": rows})
    print(json.dumps(scores))
    return scores
