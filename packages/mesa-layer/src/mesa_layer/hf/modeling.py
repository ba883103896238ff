"""`MesaNetModel` and `MesaNetForCausalLM`: the package's MesaNet blocks as transformers models.

The blocks are `mesa_layer.torch.MesaNetBackbone` (Mesa layer + SwiGLU, pre-norm), so the
maths is the package's: a sequence runs the chunkwise-parallel form (`mesa_chunk`: fla's Triton
kernel on CUDA through the existing dispatch, the torch path elsewhere) and a one-token step
with a `MesaNetCache` the recurrent step form (`mesa_step`). ``generate()`` therefore prefills
the prompt in one chunked call and decodes one token at a time with constant memory.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from mesa_layer.hf.configuration import MesaNetConfig
from mesa_layer.torch.layer import MesaCache
from mesa_layer.torch.model import MesaNetBackbone, init_weights
from shared_core.causal_lm import (
    RecurrentCache,
    causal_lm_output,
    check_attention_mask,
)


class MesaNetCache(RecurrentCache[MesaCache]):
    """Decoding state of a MesaNet LM: one `MesaCache` (``H``, ``G`` and the short-conv
    inputs) per block, and how many tokens it has read. Its memory does not grow with them."""


def check_input_ids(input_ids: Any, vocab_size: int) -> None:
    """``input_ids`` ``(batch, time)`` integer ids in ``[0, vocab_size)``; else a TypeError
    or ValueError naming ``input_ids``, what it got and what was expected."""
    if not isinstance(input_ids, torch.Tensor):
        raise TypeError(f"input_ids: expected a torch.Tensor, got {type(input_ids).__name__}")
    if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
        raise TypeError(f"input_ids: expected integer token ids, got dtype {input_ids.dtype}")
    if input_ids.ndim != 2 or input_ids.numel() == 0:
        raise ValueError(
            f"input_ids: expected a non-empty (batch, time) tensor, got {tuple(input_ids.shape)}"
        )
    lo, hi = int(input_ids.min()), int(input_ids.max())
    if lo < 0 or hi >= vocab_size:
        raise ValueError(
            f"input_ids: expected ids in [0, {vocab_size}) (vocab_size), got min {lo}, max {hi}"
        )


class MesaNetPreTrainedModel(PreTrainedModel):
    """Shared transformers plumbing: config class, initialisation, stateful generation."""

    config_class = MesaNetConfig
    config: MesaNetConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _no_split_modules = ["MesaNetBlock"]  # noqa: RUF012 (transformers declares it a list attribute)
    _is_stateful = True  # transformers refuses assisted decoding (no rollback of H, G)

    def _init_weights(self, module: nn.Module) -> None:
        init_weights(module, self.config.initializer_range)


class MesaNetModel(MesaNetPreTrainedModel):
    """Token embedding and `MesaNetBackbone`: ``input_ids (B, T) -> features (B, T, hidden)``."""

    def __init__(self, config: MesaNetConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.backbone = MesaNetBackbone(config.block_config())
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        if not isinstance(value, nn.Embedding):
            raise TypeError(f"value: expected an nn.Embedding, got {type(value).__name__}")
        self.embeddings = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        cache: MesaNetCache | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> BaseModelOutputWithPast | tuple[Any, ...]:
        """Features ``(B, T, hidden)``; with `use_cache` (default in eval mode) also the
        `MesaNetCache` after the last token, continuing from `cache` when one is given."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("input_ids / inputs_embeds: expected exactly one of them")
        check_attention_mask(attention_mask)
        if cache is not None and not isinstance(cache, MesaNetCache):
            raise TypeError(f"cache: expected a MesaNetCache, got {type(cache).__name__}")
        if use_cache is None:
            use_cache = bool(self.config.use_cache) and not self.training
        if inputs_embeds is None:
            assert input_ids is not None
            check_input_ids(input_ids, self.config.vocab_size)
            inputs_embeds = self.embeddings(input_ids)
        T = inputs_embeds.shape[1]
        new_cache = None
        if use_cache or cache is not None:
            hidden, layers = self.backbone.forward_cached(
                inputs_embeds, None if cache is None else cache.layers
            )
            seen = T if cache is None else cache.seen_tokens + T
            new_cache = MesaNetCache(layers, seen) if use_cache else None
        else:
            hidden = self.backbone(inputs_embeds)
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if not return_dict:
            return (hidden, new_cache)
        # the cache is duck-typed (transformers' generate reads is_linear and get_seq_length only)
        return BaseModelOutputWithPast(last_hidden_state=hidden, cache=new_cache)  # type: ignore[arg-type]


class MesaNetForCausalLM(MesaNetPreTrainedModel, GenerationMixin):
    """`MesaNetModel` and an untied LM head: ``input_ids (B, T) -> logits (B, T, vocab)``.

    ``labels`` are the inputs (transformers' convention: shifted inside, ``-100`` ignored).
    """

    def __init__(self, config: MesaNetConfig) -> None:
        super().__init__(config)
        self.model = MesaNetModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        # generate() must not hand us a key/value DynamicCache: the model makes its own
        return False

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        if not isinstance(value, nn.Embedding):
            raise TypeError(f"value: expected an nn.Embedding, got {type(value).__name__}")
        self.model.embeddings = value

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Module) -> None:
        self.lm_head = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        cache: MesaNetCache | None = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int = 0,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast | tuple[Any, ...]:
        """Logits of the last `logits_to_keep` positions (0: all), the next-token loss with
        `labels`, and the `MesaNetCache` with `use_cache`."""
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            cache=cache,
            use_cache=use_cache,
            return_dict=True,
        )
        hidden = out.last_hidden_state
        logits = self.lm_head(hidden[:, -logits_to_keep:] if logits_to_keep else hidden)
        return causal_lm_output(
            logits,
            labels,
            out.cache,
            return_dict=bool(self.config.return_dict if return_dict is None else return_dict),
            num_items_in_batch=kwargs.get("num_items_in_batch"),
        )
