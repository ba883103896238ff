"""A reward model on a causal LM: transformers' ``*ForSequenceClassification`` with one label.

R_theta(Q, A) = w^T h_last(LM(text(Q, A))): the last non-padding token's hidden state of the
decoder, through a bias-free linear ``score`` head. This is the reward model of the paper (its
Gemma-2 / Qwen2.5 reward models) and of TRL's `RewardTrainer`; a folder it saves is a
transformers folder that ``AutoModelForSequenceClassification.from_pretrained`` loads as it is
(or, with an unmerged ``--lora`` adapter, peft's ``AutoPeftModelForSequenceClassification``
when the base model is a folder). ``text(Q, A)`` is the tokenizer's chat template on a
user/assistant exchange, or ``Q + "\\n" + A`` for a tokenizer without one.

As `crome.RewardModel`, the head starts at zero (every answer at reward 0: "no preference").
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from crome.model import RewardScorer, _check_texts, write_json_files

REWARD_CONFIG = "reward_config.json"
"""crome's own settings in a saved folder (config.json is the transformers config)."""


@dataclass(frozen=True)
class SequenceRewardConfig:
    """What a saved folder needs beside the transformers files.

    `base`: the causal LM the model was built from (``smollm2`` or a folder), which an
    unmerged LoRA adapter loads onto; `lora`: ``(r, alpha)`` of the adapter the folder holds
    (None: full weights).
    """

    max_length: int = 64
    base: str = ""
    lora: tuple[int, int] | None = None


class SequenceRewardModel(RewardScorer):
    """Scalar reward of (prompt, answer) texts from a ``*ForSequenceClassification`` `net`.

    `net` has ``num_labels=1`` and its config's ``pad_token_id`` set (transformers finds the
    last token from it); after `add_lora` it is a peft model wrapping that classifier.
    """

    def __init__(
        self, net: nn.Module, tokenizer: Any, max_length: int = 64, base: str = ""
    ) -> None:
        super().__init__()
        config = getattr(net, "config", None)
        if getattr(config, "num_labels", None) != 1:
            raise ValueError(
                f"net: expected a transformers *ForSequenceClassification with num_labels=1, "
                f"got {type(net).__name__} with num_labels={getattr(config, 'num_labels', None)}"
            )
        if getattr(config, "pad_token_id", None) is None:
            raise ValueError("net: its config has no pad_token_id; the last token is not found")
        if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 8:
            raise ValueError(f"max_length: expected an int >= 8, got {max_length!r}")
        self.net = net
        # a text longer than max_length loses its start (the system prompt), never the answer
        tokenizer.truncation_side = "left"
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.base = base
        self.lora: tuple[int, int] | None = None

    @classmethod
    def from_causal_lm(
        cls, spec: str | os.PathLike[str], max_length: int = 64
    ) -> SequenceRewardModel:
        """The causal LM `spec` (a folder, or ``smollm2`` for the offline SmolLM2-135M) with its
        LM head replaced by a zero ``score`` head (`shared_core.finetune.load_causal_lm`)."""
        from transformers import AutoModelForSequenceClassification

        from shared_core.finetune import load_causal_lm

        lm, tokenizer = load_causal_lm(spec)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        config = copy.deepcopy(lm.config)
        config.num_labels = 1
        config.pad_token_id = tokenizer.pad_token_id
        config.architectures = None
        net = AutoModelForSequenceClassification.from_config(config)
        missing, _ = net.load_state_dict(lm.state_dict(), strict=False)
        if set(missing) != {"score.weight"}:
            raise ValueError(
                f"--model: {spec}: its weights do not fill the classifier (missing {missing})"
            )
        nn.init.zeros_(net.score.weight)
        return cls(net, tokenizer, max_length, base=str(spec))

    def add_lora(self, r: int, alpha: int) -> None:
        """Train a LoRA adapter (rank `r`, scale `alpha`, every linear layer) and the head in
        full instead of the weights (`shared_core.finetune.apply_lora`, peft ``SEQ_CLS``)."""
        from shared_core.finetune import apply_lora

        if self.lora is not None:
            raise ValueError(f"lora: the model already holds a LoRA adapter {self.lora}")
        self.net = apply_lora(self.net, r, alpha, task_type="SEQ_CLS")
        self.lora = (r, alpha)

    @property
    def classifier(self) -> nn.Module:
        """The ``*ForSequenceClassification`` model (inside the peft wrapper, if any)."""
        net: Any = self.net
        inner: nn.Module = net.get_base_model() if self.lora is not None else net
        return inner

    @property
    def head(self) -> nn.Module:
        """The ``score`` head (peft's trained copy of it under LoRA)."""
        c: Any = self.classifier
        score: nn.Module = c.score
        return score

    @property
    def backbone(self) -> nn.Module:
        """The decoder under the head (LoRA layers included)."""
        c: Any = self.classifier
        body: nn.Module = getattr(c, c.base_model_prefix)
        return body

    def freeze(self, trainable_layers: int) -> None:
        """Train the head and the top `trainable_layers` decoder layers and the final norm
        (-1: every layer and the embeddings, 0: the head only). With a LoRA adapter, the
        adapters of those layers train and every original weight stays frozen."""
        if not isinstance(trainable_layers, int) or isinstance(trainable_layers, bool):
            raise TypeError(f"trainable_layers: expected an int, got {trainable_layers!r}")
        layers = list(getattr(self.backbone, "layers", []))
        if not layers:
            raise ValueError(f"backbone: no .layers on {type(self.backbone).__name__}")
        if trainable_layers < -1 or trainable_layers > len(layers):
            raise ValueError(
                f"trainable_layers: expected -1 (all), 0 (head only) or up to {len(layers)} "
                f"layers, got {trainable_layers}"
            )
        body: Any = self.backbone
        top = layers if trainable_layers == -1 else layers[len(layers) - trainable_layers :]
        parts: list[nn.Module] = list(top)
        if trainable_layers == -1:
            parts = [body]
        elif trainable_layers > 0 and hasattr(body, "norm"):
            parts.append(body.norm)
        for p in self.net.parameters():
            p.requires_grad_(False)
        for part in parts:
            for name, p in part.named_parameters():
                p.requires_grad_(self.lora is None or "lora_" in name)
        for name, p in self.head.named_parameters():
            # under LoRA the head is peft's ModulesToSaveWrapper: its copy trains
            p.requires_grad_(self.lora is None or "modules_to_save" in name)

    def text(self, prompt: str, answer: str) -> str:
        """The text scored for (`prompt`, `answer`): the chat template of a user turn and an
        assistant turn when the tokenizer has one, else ``prompt + "\\n" + answer``."""
        if getattr(self.tokenizer, "chat_template", None):
            messages = [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": answer},
            ]
            out: str = self.tokenizer.apply_chat_template(messages, tokenize=False)
            return out
        return f"{prompt}\n{answer}"

    def encode(self, prompts: Sequence[str], answers: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tokenise the `text` of each pair, padded to the longest, on the model's device."""
        _check_texts(prompts, "prompts")
        _check_texts(answers, "answers")
        if len(prompts) != len(answers):
            raise ValueError(
                f"answers: expected one answer per prompt ({len(prompts)}), got {len(answers)}"
            )
        texts = [self.text(q, a) for q, a in zip(prompts, answers, strict=True)]
        enc = self.tokenizer(
            texts,
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
            add_special_tokens=not getattr(self.tokenizer, "chat_template", None),
        )
        dev = next(self.net.parameters()).device
        return {k: enc[k].to(dev) for k in ("input_ids", "attention_mask")}

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Rewards of shape ``(batch,)`` for token ids ``(batch, time)``."""
        logits = self.net(input_ids=input_ids, attention_mask=attention_mask).logits
        return logits.squeeze(-1)  # type: ignore[no-any-return]

    def save_pretrained(
        self,
        path: str | os.PathLike[str],
        *,
        merge: bool = False,
        metrics: Mapping[str, float | int | str] | None = None,
        command: str | Sequence[str] | None = None,
        data: Sequence[str | os.PathLike[str]] | None = None,
        files: Mapping[str, Any] | None = None,
    ) -> Path:
        """Write the folder atomically (`shared_core.hub.save_folder`): the transformers
        classifier (config.json, model.safetensors) or, under LoRA without `merge`, peft's
        adapter (adapter_config.json, adapter_model.safetensors with the head); the
        tokenizer; reward_config.json (`SequenceRewardConfig`); provenance.json, the model
        card and each of `files` (name -> JSON-able value) as a JSON file.

        `merge` folds the adapter into the weights of the saved folder (the model in memory
        keeps its adapter).
        """
        from shared_core.hub import save_folder

        if merge and self.lora is None:
            raise ValueError("merge: the model has no LoRA adapter to merge")
        lora = None if merge else self.lora

        def save(tmp: Path, provenance: Mapping[str, Any]) -> None:
            net: Any = self.net
            if merge:
                net = copy.deepcopy(net).merge_and_unload()
            net.save_pretrained(str(tmp))
            self.tokenizer.save_pretrained(str(tmp))
            write_json_files(tmp, files)

        config = SequenceRewardConfig(max_length=self.max_length, base=self.base, lora=lora)
        return save_folder(
            path,
            save,
            owner=SequenceRewardModel,
            config=config,
            metrics=metrics,
            command=command,
            data=data,
            config_name=REWARD_CONFIG,
        )

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str]) -> SequenceRewardModel:
        """Load what `save_pretrained` wrote (no download); an adapter folder loads onto its
        base model. FileNotFoundError / ValueError naming the folder as `shared_core.hub`."""
        os.environ["HF_HUB_OFFLINE"] = "1"
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from shared_core.hub import load_folder

        p = Path(path)
        config, _ = load_folder(
            p, SequenceRewardModel, SequenceRewardConfig, config_name=REWARD_CONFIG
        )
        if config.lora is None:
            net = AutoModelForSequenceClassification.from_pretrained(str(p), local_files_only=True)
            return cls(net, AutoTokenizer.from_pretrained(str(p)), config.max_length, config.base)
        from peft import PeftModel

        model = cls.from_causal_lm(config.base, config.max_length)
        model.net = PeftModel.from_pretrained(model.net, str(p))
        model.lora = tuple(config.lora)  # type: ignore[assignment]
        model.tokenizer = AutoTokenizer.from_pretrained(str(p))
        return model


def is_sequence_folder(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a folder `SequenceRewardModel.save_pretrained` wrote."""
    return (Path(path) / REWARD_CONFIG).is_file()
