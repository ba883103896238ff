"""`FEMModel` and `FEMForCausalLM`: the package's FEM LM (`CausalLM`) as transformers models.

Prefill runs each prior's parallel form (softmax: SDPA; linear / GLA: the chunkwise form) and
a one-token step with an `FEMLMCache` the prior's own decoding state: the cached keys and
values for softmax, the constant-size recurrent state for linear and GLA (plus TDC's scan
state and the RoPE position). The caches are the layers' `FEMCache`, updated in place.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from free_energy_mixer.hf.configuration import FEMConfig
from free_energy_mixer.layer import FEMCache, RotaryEmbedding
from free_energy_mixer.model import CausalLM
from shared_core.causal_lm import RecurrentCache, causal_lm_output, check_attention_mask


class FEMLMCache(RecurrentCache[FEMCache]):
    """Decoding state of an FEM LM: one `FEMCache` per layer and the tokens read so far (the
    softmax prior's cached keys and values grow with them; the linear priors' do not)."""


class FEMPreTrainedModel(PreTrainedModel):
    """Shared transformers plumbing: config class and stateful generation."""

    config_class = FEMConfig
    config: FEMConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _no_split_modules = ["Block"]  # noqa: RUF012 (transformers declares it a list attribute)
    _is_stateful = True

    def _init_weights(self, module: nn.Module) -> None:
        # The package's layers initialise their parameters themselves (N(0, 0.02) projections
        # and embedding, zero biases, theta = beta_init): left alone. RoPE's frequencies are a
        # non-persistent buffer, which from_pretrained leaves empty: refilled here.
        if isinstance(module, RotaryEmbedding):
            with torch.no_grad():
                module.inv_freq.copy_(module.frequencies())


class FEMModel(FEMPreTrainedModel):
    """The FEM LM up to its final norm: ``input_ids (B, T) -> features (B, T, hidden)``."""

    def __init__(self, config: FEMConfig) -> None:
        super().__init__(config)
        self.lm = CausalLM(config.lm_config())
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.lm.embed

    def set_input_embeddings(self, value: nn.Module) -> None:
        if not isinstance(value, nn.Embedding):
            raise TypeError(f"value: expected an nn.Embedding, got {type(value).__name__}")
        self.lm.embed = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        cache: FEMLMCache | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> BaseModelOutputWithPast | tuple[Any, ...]:
        """Features; with `use_cache` (default in eval mode) also the `FEMLMCache` after the
        last token, continuing from (and updating in place) `cache` when one is given."""
        if input_ids is None:
            raise ValueError("input_ids: expected token ids (inputs_embeds are not supported)")
        check_attention_mask(attention_mask)
        if cache is not None and not isinstance(cache, FEMLMCache):
            raise TypeError(f"cache: expected an FEMLMCache, got {type(cache).__name__}")
        if use_cache is None:
            use_cache = bool(self.config.use_cache) and not self.training
        if cache is None and use_cache:
            cache = FEMLMCache([FEMCache() for _ in self.lm.blocks], 0)
        hidden = self.lm.features(input_ids, None if cache is None else cache.layers)
        if cache is not None:
            cache.seen_tokens += input_ids.shape[1]
        new_cache = cache if use_cache else None
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if not return_dict:
            return (hidden, new_cache)
        # the cache is duck-typed (transformers' generate reads is_linear and get_seq_length only)
        return BaseModelOutputWithPast(last_hidden_state=hidden, cache=new_cache)  # type: ignore[arg-type]


class FEMForCausalLM(FEMPreTrainedModel, GenerationMixin):
    """`FEMModel` and the head tied to its embedding: ``input_ids -> logits (B, T, vocab)``.

    ``labels`` are the inputs (transformers' convention: shifted inside, ``-100`` ignored).
    """

    def __init__(self, config: FEMConfig) -> None:
        super().__init__(config)
        self.model = FEMModel(config)
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        # generate() must not hand us a DynamicCache: the model makes its own
        return False

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.lm.embed

    def set_input_embeddings(self, value: nn.Module) -> None:
        if not isinstance(value, nn.Embedding):
            raise TypeError(f"value: expected an nn.Embedding, got {type(value).__name__}")
        self.model.lm.embed = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        cache: FEMLMCache | None = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int = 0,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast | tuple[Any, ...]:
        """Logits of the last `logits_to_keep` positions (0: all), the next-token loss with
        `labels`, and the `FEMLMCache` with `use_cache`."""
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            cache=cache,
            use_cache=use_cache,
            return_dict=True,
        )
        hidden = out.last_hidden_state
        hidden = hidden[:, -logits_to_keep:] if logits_to_keep else hidden
        logits = hidden @ self.model.lm.embed.weight.T  # tied head, as in CausalLM
        return causal_lm_output(
            logits,
            labels,
            out.cache,
            return_dict=bool(self.config.return_dict if return_dict is None else return_dict),
            num_items_in_batch=kwargs.get("num_items_in_batch"),
        )
