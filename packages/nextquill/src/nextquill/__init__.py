"""NextQuill: causal preference alignment for LLM personalisation (ICLR 2026).

`nextquill_loss(model, batch)` is ``L_n + alpha L_p`` on a batch of `encode(examples, tokenizer)`
(each prompt with and without its history block); `NextQuillTrainer` (module `nextquill.hf`,
extra ``hf``) is the same loss inside `transformers.Trainer`. The names below load on first
use, so ``import nextquill`` (and ``nextquill --help``) does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from nextquill.data import (
        Encoded,
        Example,
        character_examples,
        collate,
        encode,
        encode_one,
        read_reviews,
        review_examples,
    )
    from nextquill.loss import (
        AllWeightsEpsWarning,
        NextQuillConfig,
        NextQuillTerms,
        PreferenceShare,
        data_side_effect,
        nextquill_from_logits,
        nextquill_loss,
        nextquill_terms,
        preference_weights,
        target_logits,
    )
    from nextquill.model import greedy_decode, tiny_llama, word_tokenizer
    from nextquill.world import (
        World,
        WorldConfig,
        make_world,
        review_records,
        write_review_files,
    )

_HOME = {
    "data": (
        "Encoded",
        "Example",
        "character_examples",
        "collate",
        "encode",
        "encode_one",
        "read_reviews",
        "review_examples",
    ),
    "loss": (
        "AllWeightsEpsWarning",
        "NextQuillConfig",
        "NextQuillTerms",
        "PreferenceShare",
        "data_side_effect",
        "nextquill_from_logits",
        "nextquill_loss",
        "nextquill_terms",
        "preference_weights",
        "target_logits",
    ),
    "model": ("greedy_decode", "tiny_llama", "word_tokenizer"),
    "world": ("World", "WorldConfig", "make_world", "review_records", "write_review_files"),
}
_MODULE_OF = {name: module for module, names in _HOME.items() for name in names}

__all__ = [
    "AllWeightsEpsWarning",
    "Encoded",
    "Example",
    "NextQuillConfig",
    "NextQuillTerms",
    "PreferenceShare",
    "World",
    "WorldConfig",
    "character_examples",
    "collate",
    "data_side_effect",
    "encode",
    "encode_one",
    "greedy_decode",
    "make_world",
    "nextquill_from_logits",
    "nextquill_loss",
    "nextquill_terms",
    "preference_weights",
    "read_reviews",
    "review_examples",
    "review_records",
    "target_logits",
    "tiny_llama",
    "word_tokenizer",
    "write_review_files",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF)
