"""Topo-Scan featurisation vs full persistence diagrams (gudhi), and a training step vs GIN.

    python benchmarks/bench_topo_scan.py [--quick] [--repeats N] [--threads N] [--json out.json]

Graphs: networkx Erdos-Renyi G(n, p) with mean degree 6 (so the flag complexes hold
triangles), n = 20 .. 2,000, one filtration (degree centrality) with 21 thresholds fitted on
the same graphs:

- featurisation: ours = `topoformer.scan` (all windows: masks, one union-find pass, GF(2)
  elimination on Python-int rows where a slice has triangles); peers = gudhi computing the
  SAME tokens window by window (a ``SimplexTree`` per slice filled with ``insert_batch``,
  ``expansion(2)``, ``compute_persistence``, ``betti_numbers``: what using gudhi for the
  slices would cost), and gudhi's single lower-star persistence diagram of the whole graph
  (what a classical PH pipeline computes before vectorising it; a different output, shown
  for scale). Ricci curvature, needed by every pipeline alike, is not timed.
- training step: forward + backward on a batch of 32 graphs; ours = TopoFormer on two
  (32, 19, 4) token sequences (independent of n), peer = torch_geometric's GIN (4 layers,
  hidden 64) on the 32 graphs themselves.

The ratio column is peer time / ours (> 1: ours faster).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch
from topoformer import TopoFormer, TopoFormerConfig, fit_thresholds, scan
from topoformer.baselines import GINModel, to_pyg
from topoformer.filtrations import degree_centrality
from topoformer.graph import as_graph
from topoformer.topo_scan import windows

from shared_core.bench import BenchTable, bench_parser, finish, measure


def gudhi_windows(g, f, th, m: int = 2) -> np.ndarray:
    """``(T, 4)`` Topo-Scan tokens with gudhi computing each slice's Betti numbers."""
    import gudhi

    win = windows(th, m)
    inside = (win[:, :1] <= f[None, :]) & (f[None, :] <= win[:, 1:])
    emask = inside[:, g.edges[:, 0]] & inside[:, g.edges[:, 1]]
    out = np.zeros((len(win), 4))
    for i in range(len(win)):
        vs, es = np.flatnonzero(inside[i]), g.edges[emask[i]].T
        if len(vs) == 0:
            continue
        st = gudhi.SimplexTree()
        st.insert_batch(vs[None, :], np.zeros(len(vs)))
        st.insert_batch(es, np.zeros(es.shape[1]))
        st.expansion(2)
        st.compute_persistence(persistence_dim_max=True)
        b = [*st.betti_numbers(), 0, 0]
        out[i] = b[0], b[1], len(vs), es.shape[1]
    return out


def gudhi_diagram(g, f) -> object:
    import gudhi

    st = gudhi.SimplexTree()
    for v in range(g.num_nodes):
        st.insert([v], filtration=float(f[v]))
    for u, v in g.edges:
        st.insert([int(u), int(v)], filtration=float(max(f[u], f[v])))
    st.expansion(2)
    st.compute_persistence(persistence_dim_max=True)
    return st.persistence_intervals_in_dimension(1)


def main() -> None:
    args = bench_parser(__doc__.splitlines()[0]).parse_args()
    sizes = [20, 100] if args.quick else [20, 100, 500, 2000]
    repeats = min(args.repeats, 3) if args.quick else args.repeats
    feat = BenchTable(
        f"featurisation of one graph (degree filtration), CPU, {args.threads} thread(s)",
        candidate="topo-scan",
    )
    step = BenchTable(
        f"training step, batch of 32 graphs, forward + backward, CPU, {args.threads} thread(s)",
        candidate="topoformer",
    )
    torch.manual_seed(0)
    for n in sizes:
        graphs = [
            as_graph(nx.gnp_random_graph(n, min(1.0, 6 / (n - 1)), seed=s)) for s in range(32)
        ]
        values = [np.round(degree_centrality(g), 6) for g in graphs]
        th = fit_thresholds(values, 20)
        g0, f0 = graphs[0], values[0]
        if not np.array_equal(scan(g0, f0, th), gudhi_windows(g0, f0, th)):
            raise AssertionError(f"n = {n}: topo-scan and gudhi per window disagree")
        res = measure(
            {"topo-scan": lambda g=g0, f=f0, th=th: scan(g, f, th, 2, "node"),
             "gudhi per window": lambda g=g0, f=f0, th=th: gudhi_windows(g, f, th),
             "gudhi persistence": lambda g=g0, f=f0: gudhi_diagram(g, f)},
            repeats=repeats, threads=args.threads,
        )  # fmt: skip
        feat.add(f"n = {n}, |E| = {g0.num_edges}", res)

        model = TopoFormer([len(th) - 2] * 2, 2, TopoFormerConfig())
        tokens = [torch.as_tensor(np.stack([scan(g, f, th) for g, f in zip(graphs, values, strict=True)]),
                                  dtype=torch.float32)] * 2  # fmt: skip
        gin = GINModel(1, 2, 64, 4)
        from torch_geometric.data import Batch

        batch = Batch.from_data_list(
            [to_pyg(g, np.ones((g.num_nodes, 1), np.float32)) for g in graphs]
        )
        y = torch.zeros(32, dtype=torch.long)

        def ours(model=model, tokens=tokens, y=y) -> None:
            torch.nn.functional.cross_entropy(model(tokens), y).backward()

        def peer(gin=gin, batch=batch, y=y) -> None:
            torch.nn.functional.cross_entropy(gin(batch), y).backward()

        res = measure({"topoformer": ours, "gin (torch_geometric)": peer}, repeats=repeats,
                      threads=args.threads)  # fmt: skip
        step.add(f"n = {n}", res)
    finish([feat, step], args.json)


if __name__ == "__main__":
    main()
