"""ConvT3 in JAX/Flax (nnx): the primary API (`ConvT3SSM`, `ConvSSMBlock`, `FramePredictor`).

Training: `convt3.flax.train.fit_flax` (optax; imported on demand).
"""

from convt3.flax.layer import (
    ConvSSMBlock,
    ConvT3SSM,
    FramePredictor,
    load_torch_state_dict,
    parallel_scan,
    sequential_scan,
)

__all__ = [
    "ConvSSMBlock",
    "ConvT3SSM",
    "FramePredictor",
    "load_torch_state_dict",
    "parallel_scan",
    "sequential_scan",
]
