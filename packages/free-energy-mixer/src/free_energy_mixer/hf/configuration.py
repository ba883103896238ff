"""`FEMConfig`: the transformers configuration of a causal LM whose mixer is FEM.

The LM is the package's own (`free_energy_mixer.model.CausalLM`: pre-LayerNorm blocks of
``"fem-<prior>"`` then a GELU MLP, embedding tied to the head); the fields are those of its
`LMConfig` and of the layer's config, under transformers' names (``hidden_size``,
``num_hidden_layers``). Layer defaults are the public code's (value width 0.5 d, TDC on, RoPE);
``tdc_hidden`` 16 and the widths are the package's small-model defaults. Not to be confused
with `free_energy_mixer.FEMConfig`, the configuration of one layer.
"""

from __future__ import annotations

from typing import Any, ClassVar

from transformers import PretrainedConfig

MODEL_TYPE = "free_energy_mixer"


class FEMConfig(PretrainedConfig):
    """Width, depth and prior of `FEMForCausalLM` (checked at construction).

    ``prior``: ``"softmax"`` (the cache holds every key and value), ``"linear"`` or ``"gla"``
    (the cache is the prior's constant-size state).
    """

    model_type = MODEL_TYPE
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["cache"]

    vocab_size: int = 256
    prior: str = "softmax"
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_heads: int = 4
    mlp_ratio: int = 4
    use_tdc: bool = True
    tdc_hidden: int = 16
    use_cache: bool = True
    tie_word_embeddings: bool = True
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        self.lm_config()  # the package's checks, with their messages
        super().__post_init__(**kwargs)

    def lm_config(self) -> Any:
        """The `free_energy_mixer.LMConfig` of the wrapped `CausalLM` (mixer ``"fem-<prior>"``)."""
        from free_energy_mixer.model import LMConfig

        if not isinstance(self.prior, str):
            raise TypeError(f"prior: expected a str, got {self.prior!r}")
        return LMConfig(
            vocab_size=self.vocab_size,
            mixer=f"fem-{self.prior}",
            d_model=self.hidden_size,
            num_layers=self.num_hidden_layers,
            num_heads=self.num_heads,
            mlp_ratio=self.mlp_ratio,
            tdc_hidden=self.tdc_hidden,
            use_tdc=self.use_tdc,
        )
