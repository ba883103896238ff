"""Fine-tuning a causal LM on a user's records: what the LLM packages' ``train`` verbs share.

context-denoising, dist2loss, nextquill and crome each keep their own `transformers.Trainer`
subclass (their loss); this module gives them the rest, once:

- `load_causal_lm(spec)`: a local Hugging Face model folder (refused, naming the folder, when
  its config is not a causal LM) or a name of `shared_core.models` (``smollm2`` for the offline
  SmolLM2-135M), with its tokenizer;
- `encode_records(records, tokenizer, max_length)`: records in TRL's dataset conventions, as
  `shared_core.data.read_jsonl` reads them (``text``; ``prompt``/``completion``; ``messages``
  through the tokenizer's chat template) as
  ``input_ids`` / ``attention_mask`` / ``labels``. As TRL's `SFTTrainer` does by default, the
  EOS token ends each example, a prompt/completion pair is trained on the completion only
  (prompt labels -100) and a conversation on every token;
- `add_finetune_flags(parser)` and `training_arguments(args)`: the same ``--model``,
  ``--eval``, ``--lora r,alpha``, ``--merge``, ``--grad-accum``, ``--epochs`` / ``--max-steps``,
  ``--lr``, ``--batch-size``, ``--max-length``, ``--bf16`` in every package, mapped onto
  `transformers.TrainingArguments` (no reports, no hub, CPU unless ``--device cuda``);
- `apply_lora(model, r, alpha)` through peft, and `save_finetuned(model, tokenizer, out,
  merge)`: the adapter, or with `merge` the merged weights, in a folder
  ``AutoModelForCausalLM.from_pretrained`` (or peft's ``AutoPeftModelForCausalLM``) loads.

Under ``torchrun --nproc_per_node N`` the Trainer runs data-parallel by itself (gloo on CPU);
``--batch-size`` is per process, so the global batch is ``batch-size * N * grad-accum``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shared_core.cli import UsageError, positive_int

SFT_FORMATS = ("language_modeling", "prompt_completion", "conversational")
"""The `shared_core.data.JSONL_FORMATS` a causal LM is fine-tuned on (preference pairs are
crome's)."""


def load_causal_lm(spec: str | os.PathLike[str], dtype: str = "float32") -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a local model folder or a `shared_core.models` name.

    ``smollm2`` is short for ``smollm2-135m-instruct``. A folder whose ``config.json`` names no
    ``*ForCausalLM`` architecture (an encoder, a classifier) is a `UsageError` naming it.
    """
    from shared_core.models import load_model, load_tokenizer, models

    name = "smollm2-135m-instruct" if str(spec) == "smollm2" else str(spec)
    if name in {m.name for m in models()}:
        return load_model(name, dtype), load_tokenizer(name)
    folder = Path(spec)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"--model: {folder} is neither a model folder (no config.json) nor one of "
            f"{['smollm2', *(m.name for m in models())]}"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    architectures = list(getattr(config, "architectures", None) or [])
    if not any(a.endswith("ForCausalLM") or a.endswith("LMHeadModel") for a in architectures):
        raise UsageError(
            f"--model: {folder} is not a causal LM (its config.json names {architectures or 'no'}"
            " architectures); expected a folder saved from an AutoModelForCausalLM"
        )
    model = AutoModelForCausalLM.from_pretrained(
        str(folder), local_files_only=True, dtype=getattr(torch, dtype)
    )
    return model, AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def encode_records(
    records: Sequence[Mapping[str, Any]], tokenizer: Any, max_length: int, where: str = "data"
) -> list[dict[str, list[int]]]:
    """Token ids, attention mask and labels of each record (truncated to `max_length`).

    Every record must follow the first record's convention (`shared_core.data.jsonl_format`;
    one of `SFT_FORMATS`); record ``i`` of a wrong shape, or messages without a chat template on
    the tokenizer, is a `UsageError` naming `where` and the record number (1-based). A
    prompt/completion pair may be two strings or, as TRL allows, two lists of messages.
    """
    from shared_core.data import check_record, jsonl_format

    if not records:
        raise UsageError(f"{where}: no records")
    if max_length < 2:
        raise ValueError(f"max_length: expected >= 2, got {max_length}")
    try:
        first = jsonl_format(records[0])
    except ValueError as e:
        raise UsageError(f"{where}: record 1: {e}") from None
    if first not in SFT_FORMATS:
        raise UsageError(f"{where}: records are {first}; expected one of {SFT_FORMATS}")
    eos = tokenizer.eos_token_id
    out = []
    for i, record in enumerate(records, 1):
        try:
            check_record(record, first)
        except ValueError as e:
            raise UsageError(f"{where}: record {i}: {e}") from None
        prompt, completion = _split(record, first, tokenizer, f"{where}: record {i}")
        ids = (prompt + completion + ([eos] if eos is not None else []))[:max_length]
        labels = ([-100] * len(prompt) + ids[len(prompt) :])[: len(ids)]
        out.append({"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels})
    return out


def _split(
    record: Mapping[str, Any], kind: str, tokenizer: Any, where: str
) -> tuple[list[int], list[int]]:
    """The prompt's ids (not trained on) and the trained ids of one record."""
    if kind == "language_modeling":
        if not record["text"]:
            raise UsageError(f"{where}: text must be a non-empty string")
        return [], list(tokenizer(record["text"])["input_ids"])
    if kind == "conversational":
        text = _template(tokenizer, record["messages"], where)
        return [], list(tokenizer(text, add_special_tokens=False)["input_ids"])
    prompt, completion = record["prompt"], record["completion"]
    if isinstance(prompt, str) and isinstance(completion, str):
        return (
            list(tokenizer(prompt)["input_ids"]),
            list(tokenizer(completion, add_special_tokens=False)["input_ids"]),
        )
    if not (isinstance(prompt, list) and isinstance(completion, list)):
        raise UsageError(f"{where}: prompt and completion must both be strings or both messages")
    head = _template(tokenizer, prompt, where, add_generation_prompt=True)
    full = _template(tokenizer, prompt + completion, where)
    if not full.startswith(head):
        raise UsageError(f"{where}: the chat template does not extend the prompt by the completion")
    return (
        list(tokenizer(head, add_special_tokens=False)["input_ids"]),
        list(tokenizer(full[len(head) :], add_special_tokens=False)["input_ids"]),
    )


def _template(
    tokenizer: Any, messages: Any, where: str, add_generation_prompt: bool = False
) -> str:
    if not getattr(tokenizer, "chat_template", None):
        raise UsageError(
            f"{where}: holds messages but the tokenizer has no chat template; give a model "
            "whose tokenizer_config.json has one, or text / prompt+completion strings"
        )
    text: str = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=add_generation_prompt
    )
    return text


def lora_arg(text: str) -> tuple[int, int]:
    """argparse type of ``--lora r,alpha`` (two positive integers)."""
    parts = text.split(",")
    try:
        r, alpha = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected r,alpha (e.g. 8,16), got {text!r}") from None
    if r < 1 or alpha < 1:
        raise argparse.ArgumentTypeError(f"expected r,alpha >= 1, got {text!r}")
    return r, alpha


def add_finetune_flags(p: argparse.ArgumentParser) -> None:
    """The fine-tuning flags every LLM package's ``train`` takes (beside `shared_core.verbs`')."""
    p.add_argument(
        "--model",
        required=True,
        metavar="DIR",
        help="a local Hugging Face model folder, or 'smollm2' (offline SmolLM2-135M)",
    )
    p.add_argument("--eval", type=Path, metavar="PATH", help="held-out records (JSONL)")
    p.add_argument(
        "--lora",
        type=lora_arg,
        metavar="R,ALPHA",
        help="train a LoRA adapter of rank R and scale ALPHA (peft) instead of all weights",
    )
    p.add_argument(
        "--merge", action="store_true", help="with --lora: save the merged weights, not the adapter"
    )
    p.add_argument(
        "--grad-accum",
        type=positive_int,
        default=1,
        metavar="K",
        help="gradient-accumulation steps per optimiser step",
    )
    p.add_argument("--epochs", type=float, default=1.0, help="passes over the data")
    p.add_argument("--max-steps", type=int, default=-1, help="optimiser steps (overrides --epochs)")
    p.add_argument("--lr", type=float, default=5e-5, help="peak learning rate (AdamW)")
    p.add_argument(
        "--batch-size", type=positive_int, default=4, help="examples per process and step"
    )
    p.add_argument("--max-length", type=positive_int, default=512, help="tokens per example")
    p.add_argument("--bf16", action="store_true", help="bfloat16 mixed precision (default fp32)")


def training_arguments(
    out: str | os.PathLike[str], extra: Mapping[str, Any], *, seed: int = 0,
    device: str = "auto", **overrides: Any,
) -> Any:  # fmt: skip
    """`transformers.TrainingArguments` from the flags of `add_finetune_flags` (``extra``)."""
    from transformers import TrainingArguments

    if extra.get("merge") and not extra.get("lora"):
        raise UsageError("--merge: only with --lora (without it the full weights are saved)")
    if not extra["lr"] > 0:
        raise UsageError(f"--lr: expected a number > 0, got {extra['lr']}")
    if not (extra["max_steps"] > 0 or extra["epochs"] > 0):
        raise UsageError("--epochs/--max-steps: expected --epochs > 0 or --max-steps >= 1")
    settings: dict[str, Any] = {
        "output_dir": str(out), "per_device_train_batch_size": extra["batch_size"],
        "per_device_eval_batch_size": extra["batch_size"],
        "gradient_accumulation_steps": extra["grad_accum"], "num_train_epochs": extra["epochs"],
        "max_steps": extra["max_steps"], "learning_rate": extra["lr"], "bf16": extra["bf16"],
        "seed": seed, "data_seed": seed, "report_to": [], "save_strategy": "no",
        "logging_steps": 1, "use_cpu": not device.startswith("cuda"),
        "remove_unused_columns": False, "disable_tqdm": True,
    }  # fmt: skip
    settings.update(overrides)
    return TrainingArguments(**settings)


def apply_lora(
    model: Any, r: int, alpha: int, target_modules: Sequence[str] | str = "all-linear"
) -> Any:
    """``model`` wrapped by peft with a LoRA adapter of rank `r` and scale `alpha`."""
    from shared_core.data import require_extra

    require_extra("shared-core", "lora", "peft", "--lora (peft)")
    from peft import LoraConfig, get_peft_model

    targets = target_modules if isinstance(target_modules, str) else list(target_modules)
    config = LoraConfig(r=r, lora_alpha=alpha, target_modules=targets, task_type="CAUSAL_LM")
    return get_peft_model(model, config)


def save_finetuned(
    model: Any, tokenizer: Any, out: str | os.PathLike[str], merge: bool = False
) -> Path:
    """Save the trained model (an adapter, or with `merge` the merged weights) and tokenizer."""
    folder = Path(out)
    if merge:
        model = model.merge_and_unload()
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder
