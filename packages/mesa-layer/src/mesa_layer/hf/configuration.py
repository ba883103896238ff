"""`MesaNetConfig`: the transformers configuration of a MesaNet causal LM.

The fields are those of `mesa_layer.torch.MesaNetConfig` (the dataclass the package's own
LM uses) under transformers' names (``num_hidden_layers``), fixed to the paper's block: the
Mesa layer then a SwiGLU MLP, each pre-normed by RMSNorm (MesaNet, Fig. 1). The layer's
defaults are the paper's as fla ships them (``fla/models/mesa_net``): forget-gate bias 0,
``lambda_lower_bound = 0.25``, 30 CG steps in training and in decoding, no output gate, RMSNorm
eps 1e-6; the widths default to the package's tiny char-LM scale. ``model_type`` is
``"mesa_layer_mesanet"``, so it registers beside fla's own ``"mesa_net"``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from transformers import PretrainedConfig

MODEL_TYPE = "mesa_layer_mesanet"


class MesaNetConfig(PretrainedConfig):
    """Width, depth and Mesa-layer settings of `MesaNetForCausalLM` (checked at construction).

    ``cg_start="q"`` and ``backend`` are the package's named options (see `MesaLayer`);
    ``backend=None`` reads ``$MESA_LAYER_BACKEND`` (unset: fla's Triton kernel on CUDA, the
    torch path elsewhere).
    """

    model_type = MODEL_TYPE
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["cache"]

    vocab_size: int = 256
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_heads: int = 2
    intermediate_size: int = 128  # SwiGLU width
    max_cg_steps_train: int = 30
    max_cg_steps_decode: int = 30
    cg_tol: float | None = None
    chunk_size: int = 32
    forget_bias_init: float = 0.0
    use_output_gate: bool = False
    lambda_lower_bound: float = 0.25
    norm_eps: float = 1e-6
    cg_start: str = "zero"
    backend: str | None = None
    initializer_range: float = 0.02
    use_cache: bool = True
    tie_word_embeddings: bool = False
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        self.block_config()  # the package's checks, with their messages
        super().__post_init__(**kwargs)

    def block_config(self) -> Any:
        """The `mesa_layer.torch.MesaNetConfig` the blocks are built from (mixer ``"mesa"``)."""
        from mesa_layer.torch.model import MesaNetConfig as BlockConfig

        return BlockConfig(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_layers=self.num_hidden_layers,
            num_heads=self.num_heads,
            intermediate_size=self.intermediate_size,
            mixer="mesa",
            max_cg_steps_train=self.max_cg_steps_train,
            max_cg_steps_decode=self.max_cg_steps_decode,
            cg_tol=self.cg_tol,
            chunk_size=self.chunk_size,
            forget_bias_init=self.forget_bias_init,
            use_output_gate=self.use_output_gate,
            lambda_lower_bound=self.lambda_lower_bound,
            norm_eps=self.norm_eps,
            cg_start=self.cg_start,
            backend=self.backend,
        )
