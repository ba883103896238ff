"""EDT-Former (ICLR 2026): entropy-guided dynamic query tokens between a frozen molecular
graph encoder and a frozen LLM.

Entropy patches (`atom_entropies` + `entropy_group_ids`) and BRICS fragments
(`brics_group_ids`) are mean-pooled into local queries next to the static ones
(`EDTConnector`); their Q-Former outputs enter the frozen LLM through ``<mol>`` slots
(`EDTFormer`), and only the connector and the new token rows train (`freeze_llm`).
`EDTFormerQA` is the same model trained on a user's (SMILES, question, answer) file and
saved as a checkpoint folder (the ``train`` / ``ask`` / ``evaluate`` verbs).

The names below are imported on first use, so that ``edt-former --help`` never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from edt_former.atoms import AtomVocab, parse_smiles, tokenize_atoms
    from edt_former.encoder import GIN, FrozenGIN, NodeEncoder, pretrain_gin
    from edt_former.entropy_model import atom_entropies, build_entropy_model, train_entropy_model
    from edt_former.model import (
        ConnectorConfig,
        EDTConnector,
        EDTFormer,
        freeze_llm,
        inject_queries,
        stage1_loss,
        unlock_new_token_embeddings,
    )
    from edt_former.patching import (
        brics_group_ids,
        entropy_group_ids,
        local_tokens,
        peak_group_ids,
        pool_groups,
    )
    from edt_former.qa_model import EDTFormerQA, QAModelConfig
    from edt_former.qformer import QFormer, QFormerConfig

_HOME = {
    "AtomVocab": "atoms",
    "parse_smiles": "atoms",
    "tokenize_atoms": "atoms",
    "GIN": "encoder",
    "FrozenGIN": "encoder",
    "NodeEncoder": "encoder",
    "pretrain_gin": "encoder",
    "atom_entropies": "entropy_model",
    "build_entropy_model": "entropy_model",
    "train_entropy_model": "entropy_model",
    "ConnectorConfig": "model",
    "EDTConnector": "model",
    "EDTFormer": "model",
    "freeze_llm": "model",
    "inject_queries": "model",
    "stage1_loss": "model",
    "unlock_new_token_embeddings": "model",
    "brics_group_ids": "patching",
    "entropy_group_ids": "patching",
    "local_tokens": "patching",
    "peak_group_ids": "patching",
    "pool_groups": "patching",
    "EDTFormerQA": "qa_model",
    "QAModelConfig": "qa_model",
    "QFormer": "qformer",
    "QFormerConfig": "qformer",
}
__all__ = [
    "GIN",
    "AtomVocab",
    "ConnectorConfig",
    "EDTConnector",
    "EDTFormer",
    "EDTFormerQA",
    "FrozenGIN",
    "NodeEncoder",
    "QAModelConfig",
    "QFormer",
    "QFormerConfig",
    "atom_entropies",
    "brics_group_ids",
    "build_entropy_model",
    "entropy_group_ids",
    "freeze_llm",
    "inject_queries",
    "local_tokens",
    "parse_smiles",
    "peak_group_ids",
    "pool_groups",
    "pretrain_gin",
    "stage1_loss",
    "tokenize_atoms",
    "train_entropy_model",
    "unlock_new_token_embeddings",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOME)
