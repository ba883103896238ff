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
- `add_finetune_flags(parser)` and `training_arguments(out, flags)`: the same ``--model``,
  ``--eval``, ``--lora r,alpha``, ``--merge``, ``--grad-accum``, ``--epochs`` / ``--max-steps``,
  ``--lr``, ``--optim``, ``--batch-size``, ``--max-length``, ``--bf16``, ``--save-steps`` in
  every package, mapped onto `transformers.TrainingArguments` (no reports, no hub, CPU unless
  ``--device cuda``; the Trainer's checkpoints every ``--save-steps`` steps in
  ``<out>/checkpoints``, the last one kept, from which ``--resume`` continues);
  `add_schedule_flags(parser)` adds only the optimisation flags among them (``--grad-accum``,
  ``--epochs`` / ``--max-steps``, ``--lr``, ``--bf16``), for crome's reward models, which train
  on `shared_core.train.fit`;
- `read_records` / `read_encoded`: ``--data`` / ``--eval`` through `shared_core.data.read_jsonl`
  (errors naming the flag, file and line) and `encode_records`;
- `TrainingRun`: a whole ``train`` verb around the package's Trainer (load, LoRA, arguments,
  collator; `TrainingRun.fit` trains, resumes, evaluates and writes ``--out`` as a
  `shared_core.hub` folder with ``training_config.json`` and ``training_log.json``);
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared_core.cli import UsageError, positive_int

SFT_FORMATS = ("language_modeling", "prompt_completion", "conversational")
"""The `shared_core.data.JSONL_FORMATS` a causal LM is fine-tuned on (preference pairs are
crome's)."""


def load_causal_lm(spec: str | os.PathLike[str], dtype: str = "float32") -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a local model folder or a `shared_core.models` name.

    ``smollm2`` is short for ``smollm2-135m-instruct``. A peft adapter folder (adapter_config.json,
    no config.json) loads on its base model. A folder whose ``config.json`` names no
    ``*ForCausalLM`` architecture (an encoder, a classifier) is a `UsageError` naming it.
    """
    from shared_core.models import load_model, load_tokenizer, models

    name = "smollm2-135m-instruct" if str(spec) == "smollm2" else str(spec)
    if name in {m.name for m in models()}:
        return _trainable(load_model(name, dtype)), load_tokenizer(name)
    folder = Path(spec)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if (folder / "adapter_config.json").is_file() and not (folder / "config.json").is_file():
        return _load_adapter(folder, dtype)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"--model: {folder} is neither a model folder (no config.json) nor one of "
            f"{['smollm2', *(m.name for m in models())]}"
        )
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


def _trainable(model: Any) -> Any:
    """`model` without the quantization marks of a GGUF load (the offline SmolLM2).

    transformers de-quantizes a GGUF file to float weights but leaves the model marked
    quantized: the Trainer then refuses to fine-tune it and save_pretrained writes the GGUF
    quantization_config into config.json (so the saved folder would not load without the
    file). The weights are plain floats, so the marks go.
    """
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None and type(quantizer).__name__ == "GgufHfQuantizer":
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    return model


def _load_adapter(folder: Path, dtype: str) -> tuple[Any, Any]:
    """A peft LoRA adapter folder (``train --lora`` without ``--merge``) on its base model."""
    from shared_core.data import require_extra

    require_extra("shared-core", "lora", "peft", "a LoRA adapter folder (peft)")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(
        str(folder), local_files_only=True, dtype=getattr(torch, dtype)
    )
    return model, AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def encode_records(
    records: Sequence[Mapping[str, Any]],
    tokenizer: Any,
    max_length: int,
    where: str = "data",
    lines: Sequence[int] | None = None,
) -> list[dict[str, list[int]]]:
    """Token ids, attention mask and labels of each record (truncated to `max_length`).

    Every record must follow the first record's convention (`shared_core.data.jsonl_format`;
    one of `SFT_FORMATS`); a record of a wrong shape, or messages without a chat template on
    the tokenizer, is a `UsageError` naming `where` and the record: ``line N`` with `lines`
    (each record's JSONL line, as `shared_core.data.read_jsonl` gives them), else ``record i``
    (1-based). A prompt/completion pair may be two strings or, as TRL allows, two lists of
    messages.
    """
    from shared_core.data import check_record, jsonl_format

    if not records:
        raise UsageError(f"{where}: no records")
    if lines is not None and len(lines) != len(records):
        raise ValueError(f"lines: expected {len(records)} line numbers, got {len(lines)}")
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
        at = f"{where}: line {lines[i - 1]}" if lines is not None else f"{where}: record {i}"
        try:
            check_record(record, first)
        except ValueError as e:
            raise UsageError(f"{at}: {e}") from None
        prompt, completion = _split(record, first, tokenizer, at)
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


def add_schedule_flags(p: argparse.ArgumentParser, *, keep_config: bool = False) -> None:
    """``--grad-accum``, ``--epochs`` / ``--max-steps``, ``--lr`` and ``--bf16``: the optimisation
    flags of `add_finetune_flags`, alone for a ``train`` on its own loop (crome's reward models
    on `shared_core.train.fit`), which maps them onto its config.

    With `keep_config` a flag left out is absent from the parsed arguments (the caller's config,
    ``--set`` included, keeps its value; ``--help`` says so) instead of taking the defaults that
    `training_arguments` reads.
    """
    note = " (default: the config's value)" if keep_config else ""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if keep_config else value

    p.add_argument(
        "--grad-accum",
        type=positive_int,
        default=default(1),
        metavar="K",
        help="gradient-accumulation steps per optimiser step" + note,
    )
    p.add_argument("--epochs", type=float, default=default(1.0), help="passes over the data" + note)
    p.add_argument(
        "--max-steps",
        type=int,
        default=default(-1),
        help="optimiser steps (overrides --epochs)" + note,
    )
    p.add_argument("--lr", type=float, default=default(5e-5), help="peak learning rate" + note)
    p.add_argument(
        "--bf16",
        action="store_true",
        default=default(False),
        help="bfloat16 mixed precision (default fp32)",
    )


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
    add_schedule_flags(p)
    p.add_argument(
        "--optim",
        default="adamw_torch",
        help="transformers optimizer name (adamw_torch, sgd, adafactor, ...)",
    )
    p.add_argument(
        "--batch-size", type=positive_int, default=4, help="examples per process and step"
    )
    p.add_argument("--max-length", type=positive_int, default=512, help="tokens per example")
    p.add_argument(
        "--save-steps",
        type=positive_int,
        default=50,
        metavar="N",
        help="save a checkpoint every N optimiser steps in OUT/checkpoints (for --resume)",
    )


_CHECKPOINTS = "checkpoints"
"""The subfolder of ``--out`` holding the Trainer's checkpoints while a run trains."""


def _last_checkpoint(out: str | os.PathLike[str]) -> str | None:
    """The newest ``checkpoint-N`` folder under ``<out>/checkpoints`` (None when there is none)."""
    from transformers import trainer_utils

    folder = Path(out) / _CHECKPOINTS
    last: Any = trainer_utils.get_last_checkpoint  # untyped in transformers 5
    found: str | None = last(str(folder)) if folder.is_dir() else None
    return found


def training_arguments(
    out: str | os.PathLike[str], extra: Mapping[str, Any], *, seed: int = 0,
    device: str = "auto", **overrides: Any,
) -> Any:  # fmt: skip
    """`transformers.TrainingArguments` from the flags of `add_finetune_flags` (``extra``).

    `out` is the folder the trained model goes to; the Trainer writes its checkpoints (the last
    one kept) to ``<out>/checkpoints``. Under ``torchrun`` on CPU the processes talk over gloo.
    """
    from transformers import TrainingArguments
    from transformers.training_args import OptimizerNames

    if extra.get("merge") and not extra.get("lora"):
        raise UsageError("--merge: only with --lora (without it the full weights are saved)")
    if not extra["lr"] > 0:
        raise UsageError(f"--lr: expected a number > 0, got {extra['lr']}")
    if not (extra["max_steps"] > 0 or extra["epochs"] > 0):
        raise UsageError("--epochs/--max-steps: expected --epochs > 0 or --max-steps >= 1")
    optimizers = [o.value for o in OptimizerNames]
    if extra["optim"] not in optimizers:
        raise UsageError(f"--optim: expected one of {optimizers}, got {extra['optim']!r}")
    cpu = not device.startswith("cuda")
    settings: dict[str, Any] = {
        "output_dir": str(Path(out) / _CHECKPOINTS),
        "per_device_train_batch_size": extra["batch_size"],
        "per_device_eval_batch_size": extra["batch_size"],
        "gradient_accumulation_steps": extra["grad_accum"], "num_train_epochs": extra["epochs"],
        "max_steps": extra["max_steps"], "learning_rate": extra["lr"], "bf16": extra["bf16"],
        "optim": extra["optim"], "seed": seed, "data_seed": seed, "report_to": [],
        "save_strategy": "steps", "save_steps": extra["save_steps"], "save_total_limit": 1,
        "logging_steps": 1, "use_cpu": cpu, "remove_unused_columns": False, "disable_tqdm": True,
    }  # fmt: skip
    if cpu and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        settings["ddp_backend"] = "gloo"
    settings.update(overrides)
    return TrainingArguments(**settings)


def apply_lora(
    model: Any,
    r: int,
    alpha: int,
    target_modules: Sequence[str] | str = "all-linear",
    task_type: str = "CAUSAL_LM",
) -> Any:
    """``model`` wrapped by peft with a LoRA adapter of rank `r` and scale `alpha`.

    `task_type` is peft's: ``CAUSAL_LM``, or ``SEQ_CLS`` for a ``*ForSequenceClassification``
    model (a reward model), whose fresh ``score``/``classifier`` head then trains in full and
    is saved with the adapter.
    """
    from shared_core.data import require_extra

    require_extra("shared-core", "lora", "peft", "--lora (peft)")
    from peft import LoraConfig, get_peft_model

    targets = target_modules if isinstance(target_modules, str) else list(target_modules)
    config = LoraConfig(r=r, lora_alpha=alpha, target_modules=targets, task_type=task_type)
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


_TRAINING_CONFIG = "training_config.json"
_TRAINING_LOG = "training_log.json"


def _save_trained(
    out: str | os.PathLike[str],
    model: Any,
    tokenizer: Any,
    *,
    owner: type,
    settings: Mapping[str, Any],
    log_history: Sequence[Mapping[str, Any]] = (),
    merge: bool = False,
    metrics: Mapping[str, float | int | str] | None = None,
    data: Sequence[str | os.PathLike[str]] = (),
    distribution: str | None = None,
) -> Path:
    """Write the trained model to `out` as a `shared_core.hub` folder, atomically.

    The folder holds what `save_finetuned` writes (the model and tokenizer, or a LoRA adapter:
    without a config.json, so that ``AutoModelForCausalLM.from_pretrained`` loads it as one),
    ``training_config.json`` (`settings`: the package's config and flags), ``training_log.json`` (the Trainer's `log_history`: the
    loss of every step), provenance.json and the model card. The Trainer's checkpoints in
    ``<out>/checkpoints`` are moved aside while the folder is written and removed once it is
    in place (put back if writing fails, so ``--resume`` still finds them).
    """
    import json
    import shutil
    import tempfile

    from shared_core.hub import save_folder

    folder = Path(out)
    checkpoints = folder / _CHECKPOINTS
    aside: Path | None = None
    if checkpoints.is_dir():
        aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent)) / _CHECKPOINTS
        os.replace(checkpoints, aside)
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()

    def write(tmp: Path, _provenance: Mapping[str, Any]) -> None:
        save_finetuned(model, tokenizer, tmp, merge=merge)
        (tmp / _TRAINING_LOG).write_text(json.dumps(list(log_history), indent=2))

    try:
        save_folder(
            folder, write, owner=owner, config=json.loads(json.dumps(settings, default=str)),
            metrics=metrics, data=list(data), config_name=_TRAINING_CONFIG,
            distribution=distribution,
        )  # fmt: skip
    except BaseException:
        if aside is not None:
            folder.mkdir(parents=True, exist_ok=True)
            os.replace(aside, checkpoints)
            shutil.rmtree(aside.parent, ignore_errors=True)
        raise
    if aside is not None:
        shutil.rmtree(aside.parent, ignore_errors=True)
    return folder


def read_records(
    path: str | os.PathLike[str], skip_invalid: bool = False, flag: str = "--data"
) -> Any:
    """`shared_core.data.read_jsonl` of a user's file; a malformed file is a `UsageError`
    naming `flag`, the file and the line (``.records``, ``.lines``, ``.metrics()``)."""
    from shared_core.data import read_jsonl

    try:
        return read_jsonl(path, skip_invalid=skip_invalid)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None


@dataclass
class EncodedFile:
    """A JSONL file read and encoded by `read_encoded`: its path, examples and reader metrics."""

    path: Path
    examples: list[dict[str, Any]]
    metrics: dict[str, Any]


def read_encoded(
    path: str | os.PathLike[str],
    tokenizer: Any,
    flags: Mapping[str, Any],
    skip_invalid: bool = False,
    flag: str = "--data",
) -> EncodedFile:
    """`read_records` then `encode_records` (``flags["max_length"]`` tokens per example);
    every error names `flag`, the file and the JSONL line."""
    read = read_records(path, skip_invalid, flag)
    examples = encode_records(
        read.records, tokenizer, flags["max_length"], f"{flag} {path}", lines=read.lines
    )
    return EncodedFile(Path(path), examples, dict(read.metrics()))


class TrainingRun:
    """One LLM ``train`` verb from start to saved folder, around a package's Trainer subclass.

    `start(args)` loads ``--model`` (pad token = EOS when the tokenizer has none); the package
    builds its Trainer from `trainable()` (the model, with ``--lora`` a peft adapter),
    `arguments()` (`training_arguments`) and `collator()`; `fit(trainer, ...)` trains (from
    the last checkpoint in ``--out`` with ``--resume``), reports ``--eval``'s loss, and on
    the main process saves the folder (`_save_trained`) and the run report.
    """

    def __init__(self, args: Any, model: Any, tokenizer: Any) -> None:
        self.args = args
        self.flags: Mapping[str, Any] = args.extra
        self.model = model
        self.tokenizer = tokenizer

    @classmethod
    def start(cls, args: Any) -> TrainingRun:
        """Check the common flags and load ``--model`` (`args`: `shared_core.verbs.VerbArgs`)."""
        if args.checkpoint is not None:
            raise UsageError("--checkpoint: train starts from --model DIR (a model folder)")
        if args.extra.get("merge") and not args.extra.get("lora"):
            raise UsageError("--merge: only with --lora (without it the full weights are saved)")
        model, tokenizer = load_causal_lm(args.extra["model"])
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        return cls(args, model, tokenizer)

    def trainable(self) -> Any:
        """The model to train: with ``--lora r,alpha`` wrapped in a peft adapter, whose random
        start is seeded from ``--seed`` first (so two runs with one seed get one adapter)."""
        if self.flags.get("lora"):
            from shared_core.device import seed_everything

            seed_everything(self.args.seed)
            self.model = apply_lora(self.model, *self.flags["lora"])
        return self.model

    def arguments(self, **overrides: Any) -> Any:
        """`training_arguments` for ``--out`` and the common flags."""
        return training_arguments(
            self.args.out, self.flags, seed=self.args.seed, device=self.args.device, **overrides
        )

    def collator(self) -> Any:
        """Pads ``input_ids``/``attention_mask`` with the pad token and ``labels`` with -100."""
        from transformers import DataCollatorForSeq2Seq

        return DataCollatorForSeq2Seq(self.tokenizer, padding=True)

    def fit(
        self,
        trainer: Any,
        *,
        owner: type,
        settings: Mapping[str, Any],
        data: Sequence[EncodedFile | None] = (),
        package: str | None = None,
    ) -> Path:
        """Train, evaluate on the trainer's eval set, save ``--out``; returns the folder.

        `owner` (the Trainer class) and `package` (default: the distribution defining `owner`)
        go to the folder's provenance; `settings` to its training_config.json.
        """
        from shared_core.progress import phase
        from shared_core.report import Run
        from shared_core.verbs import record_checkpoint

        out = Path(self.args.out)
        resume_from = _last_checkpoint(out) if self.args.resume else None
        if self.args.resume and resume_from is None:
            print(f"--resume: no checkpoint in {out / _CHECKPOINTS}; training from the start")
        phase("train")
        result = trainer.train(resume_from_checkpoint=resume_from)
        files = [d for d in data if d is not None]
        metrics: dict[str, Any] = {
            "train_loss": float(result.training_loss),
            "steps": int(trainer.state.global_step),
        }
        for d, name in zip(files, ("data", "eval"), strict=False):
            metrics.update({f"{name}_{k}": v for k, v in d.metrics.items()})
        if trainer.eval_dataset is not None:
            metrics["eval_loss"] = float(trainer.evaluate()["eval_loss"])
        phase("save")
        flags = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.flags.items()}
        all_settings = {**settings, "flags": flags, "seed": self.args.seed,
                        "data": [str(d.path) for d in files]}  # fmt: skip
        if trainer.is_world_process_zero():
            package = package or owner.__module__.split(".")[0].replace("_", "-")
            with Run(package, all_settings, out=self.args.runs) as run:
                _save_trained(
                    out, self.model, self.tokenizer, owner=owner, settings=all_settings,
                    log_history=trainer.state.log_history, merge=bool(self.flags.get("merge")),
                    metrics={k: v for k, v in metrics.items() if isinstance(v, (int, float, str))},
                    data=[d.path for d in files], distribution=package,
                )  # fmt: skip
                run.log(**metrics)
                record_checkpoint(run, out)
                run.finish(f"{package} train")
        trainer.accelerator.wait_for_everyone()
        return out
