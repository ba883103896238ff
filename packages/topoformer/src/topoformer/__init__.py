"""TopoFormer (ICLR 2026): Topo-Scan token sequences of graphs, read by a Transformer.

``TopoScan`` fits dataset-global thresholds on training graphs and turns any graph into one
``(T, 4)`` sequence of ``(b0, b1, |V|, |E|)`` tokens per filtration; ``TopoFormer`` is the
model; ``ollivier_ricci``, ``flag_betti`` and ``stability_bound`` are the pieces underneath.

The names below are loaded on first use, so ``import topoformer`` (and ``topoformer --help``)
does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.lazy import lazy_exports

if TYPE_CHECKING:
    from topoformer.filtrations import (
        FILTRATIONS,
        atomic_weight,
        degree_centrality,
        filtration_values,
        heat_kernel_signature,
        ollivier_ricci,
    )
    from topoformer.graph import Graph, as_graph, make_graph
    from topoformer.homology import flag_betti, gf2_rank
    from topoformer.model import (
        PAPER_TEXT_CONFIG,
        TopoFormer,
        TopoFormerConfig,
        TopoSequenceEncoder,
    )
    from topoformer.protocol import Selection, inner_split, kfold, select
    from topoformer.stability import stability_bound, threshold_crossings, token_change_bound
    from topoformer.topo_scan import (
        TOKEN_FIELDS,
        FilteredGraph,
        TopoScan,
        filter_graphs,
        fit_thresholds,
        minmax_scale,
        scan,
        windows,
    )

_LAZY = {
    "FILTRATIONS": "topoformer.filtrations",
    "atomic_weight": "topoformer.filtrations",
    "degree_centrality": "topoformer.filtrations",
    "filtration_values": "topoformer.filtrations",
    "heat_kernel_signature": "topoformer.filtrations",
    "ollivier_ricci": "topoformer.filtrations",
    "Graph": "topoformer.graph",
    "as_graph": "topoformer.graph",
    "make_graph": "topoformer.graph",
    "flag_betti": "topoformer.homology",
    "gf2_rank": "topoformer.homology",
    "PAPER_TEXT_CONFIG": "topoformer.model",
    "TopoFormer": "topoformer.model",
    "TopoFormerConfig": "topoformer.model",
    "TopoSequenceEncoder": "topoformer.model",
    "Selection": "topoformer.protocol",
    "inner_split": "topoformer.protocol",
    "kfold": "topoformer.protocol",
    "select": "topoformer.protocol",
    "stability_bound": "topoformer.stability",
    "threshold_crossings": "topoformer.stability",
    "token_change_bound": "topoformer.stability",
    "TOKEN_FIELDS": "topoformer.topo_scan",
    "FilteredGraph": "topoformer.topo_scan",
    "TopoScan": "topoformer.topo_scan",
    "filter_graphs": "topoformer.topo_scan",
    "fit_thresholds": "topoformer.topo_scan",
    "minmax_scale": "topoformer.topo_scan",
    "scan": "topoformer.topo_scan",
    "windows": "topoformer.topo_scan",
}

__all__ = [
    "FILTRATIONS",
    "PAPER_TEXT_CONFIG",
    "TOKEN_FIELDS",
    "FilteredGraph",
    "Graph",
    "Selection",
    "TopoFormer",
    "TopoFormerConfig",
    "TopoScan",
    "TopoSequenceEncoder",
    "as_graph",
    "atomic_weight",
    "degree_centrality",
    "filter_graphs",
    "filtration_values",
    "fit_thresholds",
    "flag_betti",
    "gf2_rank",
    "heat_kernel_signature",
    "inner_split",
    "kfold",
    "make_graph",
    "minmax_scale",
    "ollivier_ricci",
    "scan",
    "select",
    "stability_bound",
    "threshold_crossings",
    "token_change_bound",
    "windows",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
