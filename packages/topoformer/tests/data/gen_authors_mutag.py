"""Write authors_mutag.npz: the authors' published MUTAG Topo-Scan features (run ONCE).

Source: github.com/joshem163/TopoTransformer, ``Slicing_vectors_quantiles/MUTAG{ricci,degcent}.pkl``
(a dict keyed by the window width m; entry ``[m][k][graph][slice]`` with k = b0, b1, |V|, |E|).
Usage: ``python gen_authors_mutag.py <folder holding the two .pkl files>``. The tests check
that `TopoScan` with thresholds fitted on all 188 graphs (as the notebooks do) reproduces them.
"""

import pickle
import sys
from pathlib import Path

import numpy as np


def main(folder: str) -> None:
    out = {}
    for name, key in (("MUTAGdegcent", "degree"), ("MUTAGricci", "ricci")):
        with open(Path(folder) / f"{name}.pkl", "rb") as fh:
            d = pickle.load(fh)[2]  # m = 2
        out[key] = np.stack([np.asarray(d[k]) for k in range(4)], axis=-1).astype(np.int16)
    path = Path(__file__).with_name("authors_mutag.npz")
    np.savez_compressed(path, **out)
    print(f"wrote {path}: " + ", ".join(f"{k} {v.shape}" for k, v in out.items()))


if __name__ == "__main__":
    main(sys.argv[1])
