"""MELD (Seo et al., ICLR 2026): masked element-wise learnable diffusion for molecular graphs.

Names are imported lazily (PEP 562), so ``import meld_diffusion`` and the console script's
``--help`` do not pay for torch until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "GeneratorConfig": "generator",
    "MELDGenerator": "generator",
    "ATOM_TYPES": "data",
    "BOND_TYPES": "data",
    "GraphData": "data",
    "MASK_ID": "data",
    "VOCAB_SIZE": "data",
    "decode": "data",
    "encode": "data",
    "pair_index": "data",
    "qm9_graphs": "data",
    "seq_len": "data",
    "valid_positions": "data",
    "ElementwiseSchedule": "schedule",
    "GraphTransformer": "model",
    "GraphTransformerConfig": "model",
    "ClassRates": "rates",
    "ElementRates": "rates",
    "MELDConfig": "rates",
    "GraphLossOutput": "meld",
    "GraphMDM": "meld",
    "class_loss": "meld",
    "class_sample": "meld",
    "meld_loss": "meld",
    "meld_sample": "meld",
    "vanilla_loss": "meld",
    "vanilla_sample": "meld",
    "ClashCurves": "clashing",
    "clashing_curves": "clashing",
    "permutation_closure": "clashing",
}

__all__ = [
    "ATOM_TYPES",
    "BOND_TYPES",
    "MASK_ID",
    "VOCAB_SIZE",
    "ClashCurves",
    "ClassRates",
    "ElementRates",
    "ElementwiseSchedule",
    "GeneratorConfig",
    "GraphData",
    "GraphLossOutput",
    "GraphMDM",
    "GraphTransformer",
    "GraphTransformerConfig",
    "MELDConfig",
    "MELDGenerator",
    "clashing_curves",
    "class_loss",
    "class_sample",
    "decode",
    "encode",
    "meld_loss",
    "meld_sample",
    "pair_index",
    "permutation_closure",
    "qm9_graphs",
    "seq_len",
    "valid_positions",
    "vanilla_loss",
    "vanilla_sample",
]

if TYPE_CHECKING:
    from meld_diffusion.clashing import ClashCurves, clashing_curves, permutation_closure
    from meld_diffusion.data import (
        ATOM_TYPES,
        BOND_TYPES,
        MASK_ID,
        VOCAB_SIZE,
        GraphData,
        decode,
        encode,
        pair_index,
        qm9_graphs,
        seq_len,
        valid_positions,
    )
    from meld_diffusion.generator import GeneratorConfig, MELDGenerator
    from meld_diffusion.meld import (
        GraphLossOutput,
        GraphMDM,
        class_loss,
        class_sample,
        meld_loss,
        meld_sample,
        vanilla_loss,
        vanilla_sample,
    )
    from meld_diffusion.model import GraphTransformer, GraphTransformerConfig
    from meld_diffusion.rates import ClassRates, ElementRates, MELDConfig
    from meld_diffusion.schedule import ElementwiseSchedule


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
