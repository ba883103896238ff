"""Write orc_golden.json: Ollivier-Ricci curvatures from GraphRicciCurvature 0.6.1 (run ONCE).

GraphRicciCurvature pins scipy<=1.13.1, which clashes with the workspace lock, so it runs in an
isolated environment, e.g.::

    uvx --with GraphRicciCurvature==0.6.1 --with "scipy==1.13.1" --with networkx \
        python gen_orc_golden.py

Every graph is written as its edge list (and weights, when weighted) with the library's
``ricciCurvature`` of each edge (alpha = 0.5, its defaults otherwise: method OTDSinkhornMix,
which is exact optimal transport for supports this small; neighbour mass proportional to
exp(-w^2)).
"""

import json
from pathlib import Path

import networkx as nx
from GraphRicciCurvature.OllivierRicci import OllivierRicci


def curvatures(g: nx.Graph, weighted: bool) -> dict:
    orc = OllivierRicci(g, alpha=0.5, proc=1, verbose="ERROR")
    orc.compute_ricci_curvature()
    edges = [[int(u), int(v)] for u, v in g.edges()]
    out = {
        "num_nodes": g.number_of_nodes(),
        "edges": edges,
        "curvature": [float(orc.G[u][v]["ricciCurvature"]) for u, v in edges],
    }
    if weighted:
        out["weights"] = [float(g[u][v]["weight"]) for u, v in edges]
    return out


def main() -> None:
    karate = nx.karate_club_graph()
    graphs = {
        # networkx's karate club carries `weight` attributes, which the library uses by default
        "karate_weighted": (karate, True),
        "karate_unweighted": (nx.Graph(karate.edges()), False),
        "petersen": (nx.petersen_graph(), False),
        "barbell_5_2": (nx.barbell_graph(5, 2), False),
        "lollipop_4_3": (nx.lollipop_graph(4, 3), False),
        "grid_4x3": (nx.convert_node_labels_to_integers(nx.grid_2d_graph(4, 3)), False),
        "gnp_25_0.2_seed1": (nx.gnp_random_graph(25, 0.2, seed=1), False),
        "gnp_30_0.1_seed2": (nx.gnp_random_graph(30, 0.1, seed=2), False),
        "regular_3_16_seed3": (nx.random_regular_graph(3, 16, seed=3), False),
    }
    data = {name: curvatures(g, w) for name, (g, w) in graphs.items()}
    path = Path(__file__).with_name("orc_golden.json")
    path.write_text(json.dumps(data, indent=1) + "\n")
    sizes = ", ".join(f"{k} ({len(v['edges'])} edges)" for k, v in data.items())
    print(f"wrote {path}: {sizes}")


if __name__ == "__main__":
    main()
