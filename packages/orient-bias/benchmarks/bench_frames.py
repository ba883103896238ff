"""Principal-axes frames of QM9 batches: orient-bias against the plain NumPy a user would write.

    python benchmarks/bench_frames.py              # B = 1,000 and 20,000 QM9 molecules, 15 repeats
    python benchmarks/bench_frames.py --quick      # B = 1,000 only, 5 repeats

Peer ("plain numpy"): what one writes without this package, fully vectorised: centre, the
second-moment (covariance) tensor per molecule as one batched matmul, ``np.linalg.eigh``,
eigenvectors in decreasing order, the sign of PC1/PC2 by the largest projection and
PC3 = PC1 x PC2. It implements no tie-breaking and no degenerate-top policy, which
`principal_frames` adds. A secondary table times the per-atom Python loop of
`orient_bias.reference` on 300 molecules (the baseline of the 0.1.0 README's 121x/387x).
Timing: `shared_core.bench` (interleaved repeats, one thread, CPU time). Needs the qm9pack
wheel (extra ``qm9``).
"""

from __future__ import annotations

import numpy as np
from orient_bias.data import load_qm9
from orient_bias.frames import Poses, principal_frames
from orient_bias.reference import principal_frame_reference

from shared_core.bench import BenchTable, bench_parser, finish, measure


def numpy_frames(positions: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """Plain vectorised NumPy principal axes ``(B, 3, 3)`` (rows PC1, PC2, PC3) of a padded batch."""
    mask = (numbers > 0)[..., None]  # (B, N, 1)
    n = mask.sum(1)  # (B, 1)
    c = (positions * mask).sum(1) / n  # centroid (B, 3)
    x = (positions - c[:, None]) * mask
    S = np.matmul(x.transpose(0, 2, 1), x) / n[..., None]  # (B, 3, 3) covariance
    _, V = np.linalg.eigh(S)
    V = V[:, :, ::-1]  # columns by decreasing eigenvalue
    p = np.matmul(x, V)  # projections (B, N, 3)
    sign = np.where(p.max(1) >= -p.min(1), 1.0, -1.0)  # largest projection positive
    V = V * sign[:, None, :]
    axes = np.swapaxes(V, 1, 2).copy()
    axes[:, 2] = np.cross(axes[:, 0], axes[:, 1])
    return axes


def per_atom_loop(poses: Poses) -> None:
    for b in range(len(poses)):
        k = int(poses.n_atoms[b])
        principal_frame_reference(poses.positions[b, :k], poses.numbers[b, :k])


def main() -> None:
    args = bench_parser(__doc__.splitlines()[0]).parse_args()
    repeats = 5 if args.quick else args.repeats
    sizes = (1000,) if args.quick else (1000, 20000)
    data = load_qm9(max(sizes), seed=0)
    table = BenchTable("principal frames of QM9 molecules (N = 29 padded atoms)", "orient-bias")
    for b in sizes:
        poses = data.poses.subset(slice(0, b))
        ours, peer = principal_frames(poses).axes, numpy_frames(poses.positions, poses.numbers)
        agree = np.mean(np.all(np.abs(ours - peer) < 1e-8, axis=(1, 2)))
        print(f"B={b}: plain numpy gives the same frame for {agree:.1%} of the molecules")
        results = measure(
            {
                "orient-bias": lambda p=poses: principal_frames(p),
                "plain numpy": lambda p=poses: numpy_frames(p.positions, p.numbers),
            },
            repeats=repeats,
            threads=args.threads,
        )
        table.add(f"B={b:,}", results)
    loop = BenchTable("the same frames against the per-atom Python loop", "orient-bias")
    small = data.poses.subset(slice(0, 300))
    results = measure(
        {
            "orient-bias": lambda: principal_frames(small),
            "per-atom loop (reference.py)": lambda: per_atom_loop(small),
        },
        repeats=max(3, repeats // 3),
        threads=args.threads,
    )
    loop.add("B=300", results)
    finish([table, loop], args.json)


if __name__ == "__main__":
    main()
