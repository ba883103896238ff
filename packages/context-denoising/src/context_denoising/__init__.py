"""Context Denoising Training (Tang et al., ICLR 2026) for any Hugging Face causal LM.

- `noise_score`, `noise_mask`, `embedding_gradients`: the gradient noise score of context
  tokens (``||d CE(answer) / d e_i||``, L1 or L2) and the noise rule ``||g_i||_2 <= mean``.
- `cdt_step` / `cdt_loss` / `make_cdt_loss`: the CDT training step, in your loop or as a
  ``loss_fn`` for `shared_core.train.fit`; `CDTTrainer`: in a `transformers.Trainer`;
  `sft_step` / `sft_loss`: the plain baseline.
- `attention_ig`: the paper's attention IG score (``A * |dL/dA|``, or the code's form);
  `manual_denoising`: the analysis's ``E - 0.1 g`` outside the evidence; `rank_correlation`.
- `integrated_gradients`, `saliency` (``captum`` extra): Captum references.
- `RetrievalTask`, `make_batch`: the needle / distractor / haystack / low-frequency task;
  `needle_documents`: the same task as text records (prompt/completion) for the verbs.
"""

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

_WHERE = {
    "integrated_gradients": "attribution",
    "saliency": "attribution",
    "CDTConfig": "cdt",
    "cdt_loss": "cdt",
    "cdt_step": "cdt",
    "make_cdt_loss": "cdt",
    "perturbation": "cdt",
    "sft_loss": "cdt",
    "sft_step": "cdt",
    "KINDS": "data",
    "RetrievalTask": "data",
    "make_batch": "data",
    "needle_documents": "documents",
    "embedding_gradients": "score",
    "lm_loss": "score",
    "noise_mask": "score",
    "noise_score": "score",
    "PRESETS": "cdt",
    "CDTTrainer": "trainer",
    "attention_ig": "ig",
    "manual_denoising": "ig",
    "rank_correlation": "ig",
}

if TYPE_CHECKING:
    from context_denoising.attribution import integrated_gradients, saliency
    from context_denoising.cdt import (
        PRESETS,
        CDTConfig,
        cdt_loss,
        cdt_step,
        make_cdt_loss,
        perturbation,
        sft_loss,
        sft_step,
    )
    from context_denoising.data import KINDS, RetrievalTask, make_batch
    from context_denoising.documents import needle_documents
    from context_denoising.ig import attention_ig, manual_denoising, rank_correlation
    from context_denoising.score import embedding_gradients, lm_loss, noise_mask, noise_score
    from context_denoising.trainer import CDTTrainer


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)


__all__ = [
    "KINDS",
    "PRESETS",
    "CDTConfig",
    "CDTTrainer",
    "RetrievalTask",
    "attention_ig",
    "cdt_loss",
    "cdt_step",
    "embedding_gradients",
    "integrated_gradients",
    "lm_loss",
    "make_batch",
    "make_cdt_loss",
    "manual_denoising",
    "needle_documents",
    "noise_mask",
    "noise_score",
    "perturbation",
    "rank_correlation",
    "saliency",
    "sft_loss",
    "sft_step",
]
