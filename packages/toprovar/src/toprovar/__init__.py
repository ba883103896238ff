"""ToProVAR (Chen et al., ICLR 2026): attention-entropy-guided token, layer and scale sparsity
for Visual AutoRegressive (VAR) generation.

``attention_with_entropy(q, k, v)`` is softmax attention that also returns every query's
attention entropy: on CPU by default one fused C++ kernel (`toprovar.fused`, flash attention
carrying the entropy's moment); ``method="blockwise"`` accumulates it online in torch, as the
paper's Flash-Attention-Entropy. From the entropies
of an unpruned model, `calibrate` derives tau, beta and the offline statistics;
`ToProVARPolicy` (the paper's rule) then decides per image and online the pruning depth D
(scale), the layer scores R (an SVD of each layer's entropy map) and samples the kept tokens
from P_keep; `ToProVARTopKPolicy` is 0.1.0's offline, deterministic top-k variant;
`FastVARPolicy` and `SkipVARPolicy` prune by their own rules. `MultiScaleVQ` and `TinyVAR` are a
small, CPU-trainable VAR.

The names below are imported on first use, so that ``toprovar --help`` never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from toprovar.adaptive import ToProVARPolicy, sample_keep
    from toprovar.entropy import (
        attention_with_entropy,
        keep_probability,
        layer_score,
        normalise_entropy,
        pruning_depth,
        scale_sparsity,
        spectral_ratio,
    )
    from toprovar.generation import Generation, calibrate, count_macs, generate
    from toprovar.model import TinyVAR, block_causal_mask
    from toprovar.pruning import (
        Calibration,
        FastVARPolicy,
        PruningPolicy,
        SkipVARPolicy,
        ToProVARTopKPolicy,
        gather_tokens,
        restore_tokens,
        upsample_tokens,
    )
    from toprovar.vq import MultiScaleVQ

_HOME = {
    "attention_with_entropy": "entropy",
    "keep_probability": "entropy",
    "layer_score": "entropy",
    "normalise_entropy": "entropy",
    "pruning_depth": "entropy",
    "scale_sparsity": "entropy",
    "spectral_ratio": "entropy",
    "Generation": "generation",
    "calibrate": "generation",
    "count_macs": "generation",
    "generate": "generation",
    "TinyVAR": "model",
    "block_causal_mask": "model",
    "Calibration": "pruning",
    "FastVARPolicy": "pruning",
    "PruningPolicy": "pruning",
    "SkipVARPolicy": "pruning",
    "ToProVARPolicy": "adaptive",
    "ToProVARTopKPolicy": "pruning",
    "sample_keep": "adaptive",
    "gather_tokens": "pruning",
    "restore_tokens": "pruning",
    "upsample_tokens": "pruning",
    "MultiScaleVQ": "vq",
}
__all__ = [
    "Calibration",
    "FastVARPolicy",
    "Generation",
    "MultiScaleVQ",
    "PruningPolicy",
    "SkipVARPolicy",
    "TinyVAR",
    "ToProVARPolicy",
    "ToProVARTopKPolicy",
    "attention_with_entropy",
    "block_causal_mask",
    "calibrate",
    "count_macs",
    "gather_tokens",
    "generate",
    "keep_probability",
    "layer_score",
    "normalise_entropy",
    "pruning_depth",
    "restore_tokens",
    "sample_keep",
    "scale_sparsity",
    "spectral_ratio",
    "upsample_tokens",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOME)
