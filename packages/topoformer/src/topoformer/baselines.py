"""The baselines, each from the library a user would run: GIN (torch_geometric), the
Weisfeiler-Lehman subtree kernel + SVM (grakel + scikit-learn) and persistence images of the
same filtrations (gudhi) read by an MLP. Our code is only the glue and the training loop.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from topoformer.graph import Graph


def one_hot_labels(graph: Graph, vocabulary: Sequence[int]) -> np.ndarray:
    """``(n, len(vocabulary) + 1)`` one-hot node labels; the last column is "other"."""
    if graph.node_labels is None:
        return np.ones((graph.num_nodes, 1), dtype=np.float32)
    pos = {v: i for i, v in enumerate(vocabulary)}
    x = np.zeros((graph.num_nodes, len(vocabulary) + 1), dtype=np.float32)
    x[np.arange(graph.num_nodes), [pos.get(int(v), len(vocabulary)) for v in graph.node_labels]] = 1
    return x


def import_pyg() -> None:
    """Import torch_geometric, without the FutureWarning torch (2.15 here) gives for the
    ``torch.jit.script`` that torch_geometric's own modules call at import (theirs, not ours:
    a run's output should not carry it). Later imports are cached, so they stay quiet."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"`torch\.jit\.script` is deprecated", category=FutureWarning
        )
        import torch_geometric.data
        import torch_geometric.nn  # noqa: F401


def to_pyg(graph: Graph, features: np.ndarray) -> Any:
    """A torch_geometric ``Data`` with both edge directions."""
    import_pyg()
    from torch_geometric.data import Data

    e = torch.as_tensor(graph.edges.T, dtype=torch.long)
    return Data(x=torch.as_tensor(features), edge_index=torch.cat([e, e.flip(0)], 1),
                num_nodes=graph.num_nodes)  # fmt: skip


class GINModel(nn.Module):
    """torch_geometric's ``GIN`` (Xu et al. 2019), sum pooling and an MLP head."""

    def __init__(
        self, in_channels: int, num_outputs: int, hidden: int = 64, num_layers: int = 4,
        dropout: float = 0.5,
    ) -> None:  # fmt: skip
        super().__init__()
        import_pyg()
        from torch_geometric.nn import GIN

        self.gnn = GIN(in_channels, hidden, num_layers, norm="batch_norm")
        self.head = nn.Sequential(
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, num_outputs),
        )

    def forward(self, batch: Any) -> torch.Tensor:
        from torch_geometric.nn import global_add_pool

        h = self.gnn(batch.x, batch.edge_index)
        return self.head(global_add_pool(h, batch.batch))


def wl_features(graphs: Sequence[Graph], fit_idx: np.ndarray, n_iter: int = 5) -> np.ndarray:
    """``(N, N)`` normalised WL subtree kernel: grakel's ``WeisfeilerLehman`` fitted on the
    graphs of `fit_idx` (its label dictionary), then evaluated between every graph and those."""
    from grakel.kernels import VertexHistogram, WeisfeilerLehman

    def grakel_graph(g: Graph) -> list[Any]:
        labels = g.node_labels if g.node_labels is not None else np.zeros(g.num_nodes, np.int64)
        edges = {(int(u), int(v)) for u, v in g.edges} | {(int(v), int(u)) for u, v in g.edges}
        return [edges, {i: int(labels[i]) for i in range(g.num_nodes)}]

    kernel = WeisfeilerLehman(n_iter=n_iter, base_graph_kernel=VertexHistogram, normalize=True)
    kernel.fit([grakel_graph(graphs[i]) for i in fit_idx])
    return np.asarray(kernel.transform([grakel_graph(g) for g in graphs]))  # (N, |fit|)


def wl_svm_select(
    kernel: np.ndarray, labels: np.ndarray, fit_idx: np.ndarray, val_idx: np.ndarray,
    test_idx: np.ndarray, cs: Sequence[float] = (0.01, 0.1, 1.0, 10.0, 100.0),
) -> tuple[list[float], list[float]]:  # fmt: skip
    """Validation and test accuracies of ``SVC(kernel="precomputed", C)`` for each C.

    `kernel` is `wl_features`'s ``(N, |fit_idx|)`` matrix (columns in `fit_idx` order).
    """
    from sklearn.svm import SVC

    val, test = [], []
    for c in cs:
        svm = SVC(kernel="precomputed", C=c).fit(kernel[fit_idx], labels[fit_idx])
        val.append(float((svm.predict(kernel[val_idx]) == labels[val_idx]).mean()))
        test.append(float((svm.predict(kernel[test_idx]) == labels[test_idx]).mean()))
    return val, test


def persistence_diagrams(graph: Graph, values: np.ndarray, kind: str) -> list[np.ndarray]:
    """H0 and H1 diagrams ``[(k0, 2), (k1, 2)]`` of the lower-star flag filtration (gudhi).

    Node values filter vertices (an edge or triangle enters at the max of its vertices);
    edge values filter edges (a vertex enters at the min of its edges, a triangle at the max
    of its edges). Essential classes die at the largest value of the graph.
    """
    import gudhi

    st = gudhi.SimplexTree()
    if kind == "node":
        for v in range(graph.num_nodes):
            st.insert([v], filtration=float(values[v]))
        for u, v in graph.edges:
            st.insert([int(u), int(v)], filtration=float(max(values[u], values[v])))
    else:
        for k, (u, v) in enumerate(graph.edges):
            st.insert([int(u), int(v)], filtration=float(values[k]))
        for v in range(graph.num_nodes):  # isolated vertices would otherwise be missing
            if not st.find([v]):
                st.insert([v], filtration=float(values.min()) if len(values) else 0.0)
    st.expansion(2)
    st.compute_persistence(persistence_dim_max=True)
    top = float(values.max()) if len(values) else 0.0
    out = []
    for dim in (0, 1):
        d = st.persistence_intervals_in_dimension(dim).reshape(-1, 2)
        d = np.where(np.isinf(d), top, d)
        out.append(d)
    return out


def persistence_images(
    diagrams: Sequence[np.ndarray], fit_idx: np.ndarray, resolution: int = 8
) -> np.ndarray:
    """``(N, resolution**2)`` gudhi persistence images, range and bandwidth fitted on `fit_idx`."""
    from gudhi.representations import PersistenceImage

    pers = np.concatenate([diagrams[i][:, 1] - diagrams[i][:, 0] for i in fit_idx] + [np.zeros(1)])
    births = np.concatenate([diagrams[i][:, 0] for i in fit_idx] + [np.zeros(1)])
    lo, hi = float(births.min()), float(births.max())
    ptop = float(pers.max()) or 1.0
    span = max(hi - lo, ptop, 1e-6)
    pi = PersistenceImage(
        bandwidth=span / resolution, resolution=[resolution, resolution],
        im_range=[lo, lo + span, 0.0, ptop], weight=lambda x: x[1] / ptop,
    )  # fmt: skip
    return np.asarray(
        pi.fit_transform([np.asarray(d, dtype=np.float64).reshape(-1, 2) for d in diagrams])
    )


class MLP(nn.Module):
    """The classifier on persistence images: Linear-ReLU-Dropout-Linear."""

    def __init__(
        self, in_features: int, num_outputs: int, hidden: int = 64, dropout: float = 0.5
    ) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, num_outputs),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
