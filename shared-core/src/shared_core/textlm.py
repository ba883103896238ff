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

if TYPE_CHECKING:
    import numpy as np

CHAR_VOCAB = "char_vocab.json"
FIT_STATE = "fit_state.pt"
SUMMARY = "train_summary.json"


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
        atomic_write_json(Path(folder) / CHAR_VOCAB, {"alphabet": self.alphabet})

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike[str]) -> CharTokenizer:
        return cls(json.loads((Path(folder) / CHAR_VOCAB).read_text(encoding="utf-8"))["alphabet"])


def load_tokenizer(spec: str, text: str) -> Any:
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


def checkpoint_tokenizer(folder: str | os.PathLike[str]) -> Any:
    """The tokenizer saved in a `train_text_lm` folder (char vocabulary or transformers')."""
    if (Path(folder) / CHAR_VOCAB).is_file():
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


TRAIN_KEYS = tuple(f.name for f in dataclasses.fields(TextTrainConfig))


def split_settings(
    settings: Mapping[str, Any], config_class: Any
) -> tuple[TextTrainConfig, dict[str, Any]]:
    """Split one flat settings mapping into the `TextTrainConfig` and the model config's
    keyword arguments; a key that is neither is a ValueError naming it and the known keys."""
    model_keys = {f.name for f in dataclasses.fields(config_class)} - {"vocab_size"}
    unknown = sorted(set(settings) - set(TRAIN_KEYS) - model_keys)
    if unknown:
        raise ValueError(
            f"config: unknown keys {unknown}; training keys are {list(TRAIN_KEYS)}, model keys "
            f"those of {config_class.__name__} (e.g. {sorted(model_keys)[:8]}); vocab_size "
            "comes from the tokenizer"
        )
    train = TextTrainConfig(**{k: v for k, v in settings.items() if k in TRAIN_KEYS})
    return train, {k: v for k, v in settings.items() if k not in TRAIN_KEYS}


def read_settings(
    config: str | os.PathLike[str] | None, overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """The ``--config`` JSON object (none: empty) with ``key=value`` overrides on top; a value
    is read as JSON when it parses (``3``, ``1e-3``, ``true``), else as a string."""
    settings: dict[str, Any] = {}
    if config is not None:
        path = Path(config)
        if not path.is_file():
            raise FileNotFoundError(f"config: no such file {str(path)!r}")
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ValueError(
                f"config: expected a JSON object in {str(path)!r}, got {type(loaded).__name__}"
            )
        settings.update(loaded)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"set: expected key=value, got {item!r}")
        try:
            settings[key] = json.loads(raw)
        except json.JSONDecodeError:
            settings[key] = raw
    return settings


def _windows(ids: np.ndarray, starts: Any, length: int) -> Any:
    import torch

    offsets = torch.arange(length)
    return torch.as_tensor(ids)[torch.as_tensor(starts)[:, None] + offsets]


def validation_loss(model: Any, val: np.ndarray, cfg: TextTrainConfig) -> float:
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
    settings: Mapping[str, Any] | None = None,
    seed: int = 0,
    device: str = "auto",
    resume: bool = False,
    stop_at: int | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Train ``AutoModelForCausalLM.from_config(config_class(...))`` on the text file `data`.

    Batches are `batch_size` random windows of ``seq_len + 1`` tokens from the text's head
    (a pure function of the step and `seed`); the loss is the model's own (``labels =
    input_ids``). Writes the model, the tokenizer, `FIT_STATE` (continued with `resume`) and
    `SUMMARY` (steps, losses, sizes, seconds) into `out`, and returns the summary.
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
    state = out_dir / FIT_STATE
    if not resume and state.exists():
        raise ValueError(
            f"out: {str(out_dir)!r} already holds a training run; pass --resume to continue it "
            "or choose another folder"
        )
    text = path.read_text(encoding="utf-8")
    train_cfg, model_kwargs = split_settings(settings or {}, config_class)
    tok = load_tokenizer(tokenizer, text)
    ids = np.asarray(_encode(tok, text), dtype=np.int64)
    n_val = int(len(ids) * train_cfg.val_fraction)
    head, tail = ids[: len(ids) - n_val], ids[len(ids) - n_val :]
    L = train_cfg.seq_len + 1
    if len(head) <= L:
        raise ValueError(
            f"data: {len(head)} training tokens, fewer than one window of seq_len + 1 = {L}"
        )
    seed_everything(seed)
    model = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
        config_class(vocab_size=_vocab_size(tok), **model_kwargs)
    )

    def batch_fn(step: int) -> Any:
        gen = step_generator(seed, step)
        starts = torch.randint(0, len(head) - L + 1, (train_cfg.batch_size,), generator=gen)
        return _windows(head, starts, L)

    def loss_fn(m: Any, batch: Any) -> Any:
        return m(input_ids=batch, labels=batch, use_cache=False).loss

    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result = fit(
        model,
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
    val = validation_loss(model, tail, train_cfg)
    last = result.losses[-10:]
    summary = {
        "model_type": config_class.model_type,
        "steps": result.step,
        "train_loss_last10": sum(last) / len(last) if last else math.nan,
        "val_loss": val,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": _vocab_size(tok),
        "train_tokens": len(head),
        "val_tokens": len(tail),
        "seconds": round(time.perf_counter() - t0, 2),
        "seed": seed,
        "settings": dict(settings or {}),
    }

    def write(folder: Path) -> None:
        model.save_pretrained(folder)
        tok.save_pretrained(folder)

    _save_folder(out_dir, write)
    atomic_write_json(out_dir / SUMMARY, summary)
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
    tok = checkpoint_tokenizer(folder)
    ids = torch.tensor([_encode(tok, prompt)], device=dev)
    sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {}
    out = model.generate(
        ids,
        max_new_tokens=max_new_tokens,
        do_sample=bool(sampling),
        **{k: v for k, v in sampling.items() if k != "do_sample"},
    )
    return str(tok.decode(out[0].tolist()))


def text_lm_commands(load_config_class: Any, what: str) -> list[Any]:
    """The ``train`` and ``sample`` `Command`s of a package whose causal LM `what` is built
    from the config class that ``load_config_class()`` imports (and registers)."""
    import argparse

    from shared_core.cli import Command, UsageError, device_arg, nonneg_int, positive_int
    from shared_core.device import limit_threads

    def configure_train(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data", required=True, help="a UTF-8 text file to train on")
        p.add_argument("--tokenizer", default="char", help="'char' or a local tokenizer folder")
        p.add_argument("--config", default=None, help="a JSON object of model and training keys")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override one key of --config (repeatable)")  # fmt: skip
        p.add_argument("--out", required=True, help="the folder the model is written to")
        p.add_argument("--resume", action="store_true", help="continue the run saved in --out")
        p.add_argument("--device", type=device_arg, default="auto")
        p.add_argument("--threads", type=positive_int, default=1)
        p.add_argument("--seed", type=nonneg_int, default=0)

    def train(ns: argparse.Namespace) -> int:
        try:
            settings = read_settings(ns.config, ns.set)
            config_class = load_config_class()
            with limit_threads(ns.threads):
                summary = train_text_lm(
                    config_class,
                    ns.data,
                    ns.out,
                    tokenizer=ns.tokenizer,
                    settings=settings,
                    seed=ns.seed,
                    device=ns.device,
                    resume=ns.resume,
                )
        except (ValueError, TypeError, json.JSONDecodeError) as e:
            raise UsageError(str(e)) from None
        print(
            f"{summary['steps']} steps, train loss {summary['train_loss_last10']:.4f} (last 10), "
            f"val loss {summary['val_loss']:.4f}, {summary['parameters']} parameters, "
            f"{summary['seconds']} s -> {ns.out}"
        )
        return 0

    def configure_sample(p: argparse.ArgumentParser) -> None:
        p.add_argument("--checkpoint", required=True, help="a folder written by train")
        p.add_argument("--prompt", required=True)
        p.add_argument("--max-new-tokens", type=positive_int, default=200)
        p.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
        p.add_argument("--device", type=device_arg, default="auto")
        p.add_argument("--threads", type=positive_int, default=1)
        p.add_argument("--seed", type=nonneg_int, default=0)

    def sample(ns: argparse.Namespace) -> int:
        try:
            load_config_class()
            with limit_threads(ns.threads):
                text = sample_text_lm(
                    ns.checkpoint,
                    ns.prompt,
                    max_new_tokens=ns.max_new_tokens,
                    temperature=ns.temperature,
                    seed=ns.seed,
                    device=ns.device,
                )
        except (ValueError, TypeError) as e:
            raise UsageError(str(e)) from None
        print(text)
        return 0

    return [
        Command(
            "train",
            f"Train {what} on a text file (char or local tokenizer) and save it as a "
            "transformers model folder.",
            train,
            configure_train,
        ),
        Command(
            "sample", f"Continue a prompt with a {what} saved by train.", sample, configure_sample
        ),
    ]
