"""Fine-tuning a causal LM on a user's records: what the LLM packages' ``train`` verbs share.

context-denoising, dist2loss, nextquill and crome each keep their own `transformers.Trainer`
subclass (their loss); this module gives them the rest, once:

- `load_causal_lm(spec)`: a local Hugging Face model folder (refused, naming the folder, when
  its config is not a causal LM) or a name of `shared_core.models` (``smollm2`` for the offline
  SmolLM2-135M), with its tokenizer;
- `encode_records(records, tokenizer, max_length)`: records in TRL's dataset conventions
  (``text``; ``prompt``/``completion``; ``messages`` through the tokenizer's chat template) as
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

SFT_FORMATS = ("text", "prompt_completion", "messages")


def record_format(record: Mapping[str, Any]) -> str:
    """The TRL convention a record follows: ``text``, ``prompt_completion`` or ``messages``."""
    if "messages" in record:
        return "messages"
    if "prompt" in record and "completion" in record:
        return "prompt_completion"
    if "text" in record:
        return "text"
    raise ValueError(
        f"record: expected the fields text, prompt+completion or messages, got {sorted(record)}"
    )


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

    Every record must follow the first record's convention; record ``i`` of a wrong shape, or
    ``messages`` without a chat template on the tokenizer, is a `UsageError` naming `where`
    and the record number (1-based, the JSONL line).
    """
    if not records:
        raise UsageError(f"{where}: no records")
    if max_length < 2:
        raise ValueError(f"max_length: expected >= 2, got {max_length}")
    first = record_format(records[0])
    if first == "messages" and not getattr(tokenizer, "chat_template", None):
        raise UsageError(
            f"{where}: records hold messages but the tokenizer has no chat template; give a "
            "model whose tokenizer_config.json has one, or text / prompt+completion records"
        )
    eos = tokenizer.eos_token_id
    out = []
    for i, record in enumerate(records, 1):
        try:
            kind = record_format(record)
        except ValueError as e:
            raise UsageError(f"{where}: record {i}: {e}") from None
        if kind != first:
            raise UsageError(f"{where}: record {i} is {kind}, record 1 is {first}")
        if kind == "messages":
            _check_messages(record["messages"], f"{where}: record {i}")
            text = tokenizer.apply_chat_template(record["messages"], tokenize=False)
            prompt, completion = [], tokenizer(text, add_special_tokens=False)["input_ids"]
        elif kind == "prompt_completion":
            for key in ("prompt", "completion"):
                if not isinstance(record[key], str):
                    raise UsageError(f"{where}: record {i}: {key} must be a string")
            prompt = tokenizer(record["prompt"])["input_ids"]
            completion = tokenizer(record["completion"], add_special_tokens=False)["input_ids"]
        else:
            if not isinstance(record["text"], str) or not record["text"]:
                raise UsageError(f"{where}: record {i}: text must be a non-empty string")
            prompt, completion = [], tokenizer(record["text"])["input_ids"]
        ids = (list(prompt) + list(completion) + ([eos] if eos is not None else []))[:max_length]
        labels = ([-100] * len(prompt) + ids[len(prompt) :])[: len(ids)]
        out.append({"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels})
    return out


def _check_messages(messages: Any, where: str) -> None:
    if not isinstance(messages, list) or not messages:
        raise UsageError(f"{where}: messages must be a non-empty list")
    for turn in messages:
        if not (isinstance(turn, Mapping) and {"role", "content"} <= set(turn)):
            raise UsageError(f"{where}: each message needs role and content, got {turn!r}")


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
