"""Train and sample a transformers causal LM on a plain-text file: the ``train`` / ``sample`` verbs.

A package whose model is a registered transformers causal LM (its config class with the Auto
classes) gets both verbs from here: `train_text_lm` reads the text, tokenizes it (`CharTokenizer`
or a local transformers tokenizer), trains through `shared_core.train.fit` on random windows and
writes a folder that ``AutoModelForCausalLM.from_pretrained`` and `sample_text_lm` read: the
model (``config.json``, safetensors), the tokenizer, ``train_summary.json`` and the fit state
for ``--resume``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared_core.atomic import atomic_write_json
from shared_core.errors import InputError

if TYPE_CHECKING:
    import numpy as np

_CHAR_VOCAB = "char_vocab.json"
_FIT_STATE = "fit_state.pt"
_SUMMARY = "train_summary.json"


class CharTokenizer:
    """Characters as ids over a fixed alphabet (id = position; `char_corpus`'s encoding).

    Saved beside a model as ``char_vocab.json`` (``{"alphabet": "..."}``).
    """

    def __init__(self, alphabet: str) -> None:
        if not isinstance(alphabet, str) or not alphabet:
            raise ValueError(f"alphabet: expected a non-empty str, got {alphabet!r:.60}")
        if len(set(alphabet)) != len(alphabet):
            raise ValueError("alphabet: expected distinct characters, got repeats")
        self.alphabet = alphabet
        self._ids = {c: i for i, c in enumerate(alphabet)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The sorted alphabet of `text`."""
        return cls("".join(sorted(set(text))))

    @property
    def vocab_size(self) -> int:
        return len(self.alphabet)

    def encode(self, text: str) -> list[int]:
        """Ids of `text`; a character outside the alphabet is a ValueError naming it."""
        unknown = sorted(set(text) - self._ids.keys())
        if unknown:
            raise ValueError(
                f"text: characters {''.join(unknown)!r} are not in the tokenizer's alphabet "
                f"of {self.vocab_size} (those of the training text)"
            )
        return [self._ids[c] for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.alphabet[i] for i in ids)

    def save_pretrained(self, folder: str | os.PathLike[str]) -> None:
        atomic_write_json(Path(folder) / _CHAR_VOCAB, {"alphabet": self.alphabet})

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike[str]) -> CharTokenizer:
        return cls(json.loads((Path(folder) / _CHAR_VOCAB).read_text(encoding="utf-8"))["alphabet"])


def _load_tokenizer(spec: str, text: str) -> Any:
    """``"char"``: a `CharTokenizer` over `text`'s alphabet; otherwise a local folder read by
    ``AutoTokenizer.from_pretrained`` (no download)."""
    if spec == "char":
        return CharTokenizer.from_text(text)
    folder = Path(spec)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"tokenizer: expected 'char' or a folder holding a transformers tokenizer, got {spec!r}"
        )
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


def _checkpoint_tokenizer(folder: str | os.PathLike[str]) -> Any:
    """The tokenizer saved in a `train_text_lm` folder (char vocabulary or transformers')."""
    if (Path(folder) / _CHAR_VOCAB).is_file():
        return CharTokenizer.from_pretrained(folder)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


def _encode(tokenizer: Any, text: str) -> list[int]:
    if isinstance(tokenizer, CharTokenizer):
        return tokenizer.encode(text)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _vocab_size(tokenizer: Any) -> int:
    return tokenizer.vocab_size if isinstance(tokenizer, CharTokenizer) else len(tokenizer)


@dataclass(frozen=True)
class TextTrainConfig:
    """The training half of a ``--config`` file (the rest configures the model).

    Defaults: a minute-scale char-LM on CPU.
    """

    steps: int = 200
    batch_size: int = 16
    seq_len: int = 64  # tokens predicted per window
    lr: float = 3e-3
    warmup: int = 20
    weight_decay: float = 0.1
    val_fraction: float = 0.1  # the text's tail held out for the validation loss
    eval_windows: int = 64  # validation windows of seq_len + 1 tokens (at most)

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "seq_len", "eval_windows"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if not isinstance(self.warmup, int) or isinstance(self.warmup, bool) or self.warmup < 0:
            raise ValueError(f"warmup: expected a non-negative int, got {self.warmup!r}")
        if not 0 < self.val_fraction < 1:
            raise ValueError(
                f"val_fraction: expected a number in (0, 1), got {self.val_fraction!r}"
            )


_MODEL_SETTINGS_SKIP = frozenset(
    {
        "vocab_size",
        "pad_token_id",
        "bos_token_id",
        "eos_token_id",
        "use_cache",
        "tie_word_embeddings",
    }
)
"""Fields of a model config that no ``--set`` reaches: the tokenizer fixes the vocabulary,
and the rest are structural."""


def _text_lm_settings(config_class: Any) -> type:
    """The dataclass that ``--config`` / ``--set`` override for `config_class`'s train verb:
    ``model`` (the config class's own fields with their defaults, less `_MODEL_SETTINGS_SKIP`;
    ``--set model.hidden_size=128``) and ``train`` (`TextTrainConfig`; ``--set train.steps=500``).

    transformers' configs cannot serve directly (their base class's annotations name torch
    types that `typing.get_type_hints` cannot resolve), so the class's own fields are copied,
    their annotations evaluated in its module.
    """
    import inspect

    own = inspect.get_annotations(config_class, eval_str=True)  # this class's fields only
    by_name = {f.name: f for f in dataclasses.fields(config_class)}
    fields = []
    for name, annotation in own.items():
        if name in _MODEL_SETTINGS_SKIP or name not in by_name or name.startswith("_"):
            continue
        fields.append((name, annotation, dataclasses.field(default=by_name[name].default)))
    model = dataclasses.make_dataclass(f"{config_class.__name__}Settings", fields, frozen=True)
    return dataclasses.make_dataclass(
        f"{config_class.__name__}TrainSettings",
        [
            ("model", model, dataclasses.field(default_factory=model)),
            ("train", TextTrainConfig, dataclasses.field(default_factory=TextTrainConfig)),
        ],
        frozen=True,
    )


def _windows(ids: np.ndarray, starts: Any, length: int) -> Any:
    import torch

    offsets = torch.arange(length)
    return torch.as_tensor(ids)[torch.as_tensor(starts)[:, None] + offsets]


def _validation_loss(model: Any, val: np.ndarray, cfg: TextTrainConfig) -> float:
    """Mean next-token loss over non-overlapping windows of the held-out tail (nats/token)."""
    import numpy as np
    import torch

    L = cfg.seq_len + 1
    n = min(cfg.eval_windows, len(val) // L)
    if n < 1:
        raise ValueError(
            f"val_fraction: the held-out tail has {len(val)} tokens, fewer than one window of "
            f"seq_len + 1 = {L}; use a longer text, a larger val_fraction or a shorter seq_len"
        )
    device = next(model.parameters()).device
    batch = _windows(val, np.arange(n) * L, L).to(device)
    model.eval()
    with torch.no_grad():
        return float(model(input_ids=batch, labels=batch, use_cache=False).loss)


def _save_folder(out: Path, write: Any) -> None:
    """Write files into a scratch folder beside `out`, then move each into `out` atomically."""
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".save-", dir=out))
    try:
        write(scratch)
        for f in scratch.iterdir():
            os.replace(f, out / f.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def train_text_lm(
    config_class: Any,
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    tokenizer: str = "char",
    model: Mapping[str, Any] | None = None,
    train: TextTrainConfig | None = None,
    seed: int = 0,
    device: str = "auto",
    resume: bool = False,
    stop_at: int | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Train ``AutoModelForCausalLM.from_config(config_class(...))`` on the text file `data`.

    Batches are `batch_size` random windows of ``seq_len + 1`` tokens from the text's head
    (a pure function of the step and `seed`); the loss is the model's own (``labels =
    input_ids``). Writes the model, the tokenizer, `fit_state.pt` (continued with `resume`) and
    `train_summary.json` (steps, losses, sizes, seconds) into `out`, and returns the summary.
    `stop_at` ends the run early (as `fit`'s, how tests interrupt one).
    """
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    from shared_core.device import seed_everything
    from shared_core.train import TrainConfig, fit, step_generator

    path = Path(data)
    if not path.is_file():
        raise FileNotFoundError(f"data: no such file {str(path)!r}")
    out_dir = Path(out)
    state = out_dir / _FIT_STATE
    if not resume and state.exists():
        raise ValueError(
            f"out: {str(out_dir)!r} already holds a training run; pass --resume to continue it "
            "or choose another folder"
        )
    text = path.read_text(encoding="utf-8")
    train_cfg = TextTrainConfig() if train is None else train
    model_kwargs = dict(model or {})
    if "vocab_size" in model_kwargs:
        raise ValueError("model: vocab_size comes from the tokenizer; leave it out")
    tok = _load_tokenizer(tokenizer, text)
    ids = np.asarray(_encode(tok, text), dtype=np.int64)
    n_val = int(len(ids) * train_cfg.val_fraction)
    head, tail = ids[: len(ids) - n_val], ids[len(ids) - n_val :]
    L = train_cfg.seq_len + 1
    if len(head) <= L:
        raise ValueError(
            f"data: {len(head)} training tokens, fewer than one window of seq_len + 1 = {L}"
        )
    seed_everything(seed)
    from huggingface_hub.errors import StrictDataclassError

    try:
        config = config_class(vocab_size=_vocab_size(tok), **model_kwargs)
    except (ValueError, TypeError, StrictDataclassError) as e:  # the config's own checks
        raise InputError(f"model: {e}") from None
    lm = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]

    def batch_fn(step: int) -> Any:
        gen = step_generator(seed, step)
        starts = torch.randint(0, len(head) - L + 1, (train_cfg.batch_size,), generator=gen)
        return _windows(head, starts, L)

    def loss_fn(m: Any, batch: Any) -> Any:
        return m(input_ids=batch, labels=batch, use_cache=False).loss

    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result = fit(
        lm,
        loss_fn,
        batch_fn,
        TrainConfig(
            steps=train_cfg.steps,
            lr=train_cfg.lr,
            warmup=train_cfg.warmup,
            weight_decay=train_cfg.weight_decay,
        ),
        checkpoint=state,
        resume=resume,
        stop_at=stop_at,
        desc=f"{config_class.model_type} train",
        show_progress=show_progress,
        device=device,
    )
    val = _validation_loss(lm, tail, train_cfg)
    last = result.losses[-10:]
    summary = {
        "model_type": config_class.model_type,
        "steps": result.step,
        "train_loss_last10": sum(last) / len(last) if last else math.nan,
        "val_loss": val,
        "parameters": sum(p.numel() for p in lm.parameters()),
        "vocab_size": _vocab_size(tok),
        "train_tokens": len(head),
        "val_tokens": len(tail),
        "seconds": round(time.perf_counter() - t0, 2),
        "seed": seed,
        "model": model_kwargs,
        "train": dataclasses.asdict(train_cfg),
    }

    def write(folder: Path) -> None:
        lm.save_pretrained(folder)
        tok.save_pretrained(folder)

    _save_folder(out_dir, write)
    atomic_write_json(out_dir / _SUMMARY, summary)
    return summary


def sample_text_lm(
    checkpoint: str | os.PathLike[str],
    prompt: str,
    *,
    max_new_tokens: int = 200,
    temperature: float = 0.0,
    seed: int = 0,
    device: str = "auto",
) -> str:
    """The prompt and its continuation by the model saved in `checkpoint` (``generate``;
    `temperature` 0: greedy, else sampling at that temperature)."""
    import torch
    from transformers import AutoModelForCausalLM

    from shared_core.device import resolve_device, seed_everything

    folder = Path(checkpoint)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"checkpoint: expected a folder written by `train` (with config.json), got {str(folder)!r}"
        )
    if not isinstance(prompt, str) or not prompt:
        raise ValueError(f"prompt: expected a non-empty str, got {prompt!r}")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens: expected a positive int, got {max_new_tokens!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature: expected a number >= 0, got {temperature!r}")
    seed_everything(seed)
    dev = resolve_device(device)
    model: Any = AutoModelForCausalLM.from_pretrained(folder)
    model = model.to(dev).eval()
    tok = _checkpoint_tokenizer(folder)
    ids = torch.tensor([_encode(tok, prompt)], device=dev)
    sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {}
    out = model.generate(
        ids,
        max_new_tokens=max_new_tokens,
        do_sample=bool(sampling),
        **{k: v for k, v in sampling.items() if k != "do_sample"},
    )
    return str(tok.decode(out[0].tolist()))


def text_lm_commands(config_spec: str, what: str) -> list[Any]:
    """The ``train`` and ``sample`` verbs (`shared_core.verbs`) of a package whose causal LM
    `what` is built from the config class ``"module:Class"`` (imported, and so registered with
    the Auto classes, only when a verb runs).

    ``train --data FILE --out DIR [--tokenizer char|DIR] [--config FILE] [--set model.k=v]
    [--set train.k=v] [--resume]`` and ``sample --checkpoint DIR --prompt TEXT
    [--max-new-tokens N] [--temperature T] [--out FILE]``.
    """
    import argparse

    from shared_core.verbs import Slots, VerbArgs, train_command, verb_command

    def config_class() -> Any:
        module, _, name = config_spec.partition(":")
        return getattr(importlib.import_module(module), name)

    def settings() -> Any:
        return _text_lm_settings(config_class())()

    def tokenizer_flag(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--tokenizer", default="char", metavar="char|DIR",
            help="'char' (the text's characters) or a local transformers tokenizer folder",
        )  # fmt: skip

    def train(args: VerbArgs) -> int:
        assert args.out is not None
        summary = train_text_lm(
            config_class(),
            args.data_path,
            args.out,
            tokenizer=args.extra["tokenizer"],
            model=dataclasses.asdict(args.config.model),
            train=args.config.train,
            seed=args.seed,
            device=args.device,
            resume=args.resume,
        )
        print(
            f"{summary['steps']} steps, train loss {summary['train_loss_last10']:.4f} (mean of "
            f"the last 10), val loss {summary['val_loss']:.4f}, {summary['parameters']} "
            f"parameters, {summary['seconds']} s -> {args.out}"
        )
        return 0

    def sample_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--prompt", required=True, help="the text to continue")
        p.add_argument("--max-new-tokens", type=int, default=200, metavar="N")
        p.add_argument("--temperature", type=float, default=0.0, help="0: greedy")

    def sample(args: VerbArgs) -> int:
        assert args.checkpoint is not None
        config_class()  # registers the model type
        text = sample_text_lm(
            args.checkpoint,
            args.extra["prompt"],
            max_new_tokens=args.extra["max_new_tokens"],
            temperature=args.extra["temperature"],
            seed=args.seed,
            device=args.device,
        )
        if args.out is not None:
            from shared_core.atomic import atomic_write_text

            atomic_write_text(args.out, text + "\n")
        print(text)
        return 0

    return [
        train_command(
            train,
            f"Train {what} on a text file and save it as a transformers model folder "
            "(from_pretrained / generate read it).",
            config=settings,
            options=tokenizer_flag,
        ),
        verb_command(
            "sample",
            sample,
            f"Continue a prompt with a {what} saved by train.",
            Slots(data="none", checkpoint="required", out="optional"),
            options=sample_flags,
        ),
    ]
