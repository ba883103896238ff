"""Reader for the TU graph-classification file layout (Morris et al. 2020, TUDataset).

A folder ``<name>/`` holds comma-separated text files, one value (or pair) per line, with
1-based node and graph ids:

- ``<name>_A.txt`` (m lines, required): ``row, col`` directed edges of the block-diagonal
  adjacency of all graphs (an undirected edge appears in both directions);
- ``<name>_graph_indicator.txt`` (n lines, required): the graph id of node i;
- ``<name>_graph_labels.txt`` (N lines, required): the class of graph i;
- ``<name>_node_labels.txt`` (n lines, optional): the label of node i;
- ``<name>_edge_labels.txt`` (m lines, optional): the label of edge i of ``_A.txt``.

Attribute files (``_node_attributes``, ``_edge_attributes``) are not read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class TUGraph:
    """One graph: edge_index ``(2, m)`` int64 with 0-based node ids local to the graph, edges in
    file order; node_labels ``(n,)`` and edge_labels ``(m,)`` int64 as in the files, or ``None``
    when the dataset has no such file."""

    num_nodes: int
    edge_index: np.ndarray
    node_labels: np.ndarray | None
    edge_labels: np.ndarray | None


def _ints(path: Path, columns: int) -> np.ndarray:
    try:
        a = np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=2)
    except ValueError as e:
        raise ValueError(
            f"path: {path} must hold {columns} integer column(s) per line: {e}"
        ) from None
    if a.shape[1] != columns:
        raise ValueError(f"path: {path} has {a.shape[1]} columns per line, expected {columns}")
    return a if columns > 1 else a[:, 0]


def read_tu(
    folder: str | os.PathLike[str], name: str | None = None
) -> tuple[list[TUGraph], np.ndarray]:
    """Read the TU dataset `name` (default: the folder's name) from `folder`.

    Returns ``(graphs, labels)``: a list of N `TUGraph` and the graph labels ``(N,)`` int64 as
    written in the file (MUTAG uses -1/1). Raises `FileNotFoundError` naming a missing
    required file and `ValueError` naming the file of any inconsistency.
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"folder: no TU dataset folder at {root}")
    name = name or root.name

    a_path, ind_path, lab_path = (
        root / f"{name}_{s}.txt" for s in ("A", "graph_indicator", "graph_labels")
    )
    for p in (a_path, ind_path, lab_path):
        if not p.is_file():
            raise FileNotFoundError(f"folder: {root} has no {p.name} (required by the TU layout)")
    edges = _ints(a_path, 2) - 1  # (m, 2), 0-based global node ids
    indicator = _ints(ind_path, 1)  # (n,)
    labels = _ints(lab_path, 1)  # (N,)
    n, n_graphs = len(indicator), len(labels)
    if np.any(np.diff(indicator) < 0) or indicator[0] != 1 or indicator[-1] != n_graphs:
        raise ValueError(
            f"path: {ind_path} must list graph ids 1..{n_graphs} (one per line of "
            f"{lab_path.name}) in non-decreasing order"
        )
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(
            f"path: {a_path} names nodes outside 1..{n} ({ind_path.name} has {n} lines)"
        )
    graph_of_edge = indicator[edges[:, 0]]
    if np.any(graph_of_edge != indicator[edges[:, 1]]):
        raise ValueError(f"path: {a_path} has an edge between two different graphs")
    optional = {}
    for suffix, length in (("node_labels", n), ("edge_labels", len(edges))):
        p = root / f"{name}_{suffix}.txt"
        if p.is_file():
            optional[suffix] = _ints(p, 1)
            if len(optional[suffix]) != length:
                raise ValueError(f"path: {p} has {len(optional[suffix])} lines, expected {length}")
    node_start = np.searchsorted(indicator, np.arange(1, n_graphs + 2))  # (N + 1,)
    order = np.argsort(graph_of_edge, kind="stable")
    edge_start = np.searchsorted(graph_of_edge[order], np.arange(1, n_graphs + 2))
    graphs = []
    for g in range(n_graphs):
        lo, hi = node_start[g], node_start[g + 1]
        if hi == lo:
            raise ValueError(f"path: {ind_path} gives graph {g + 1} no node")
        idx = order[edge_start[g] : edge_start[g + 1]]
        node_labels = optional.get("node_labels")
        edge_labels = optional.get("edge_labels")
        graphs.append(
            TUGraph(
                num_nodes=int(hi - lo),
                edge_index=np.ascontiguousarray(edges[idx].T - lo),
                node_labels=None if node_labels is None else node_labels[lo:hi],
                edge_labels=None if edge_labels is None else edge_labels[idx],
            )
        )
    return graphs, labels
