"""Audit throughput on QM9 (molecules/s) and peak memory; vectorised frames vs the per-molecule reference.

    python benchmarks/bench_audit.py            # 20,000 QM9 molecules, < 1 min on CPU
    python benchmarks/bench_audit.py --full     # all 130,831 (about 4 min on 2 cores)

Baseline: `reference.principal_frame_reference`, one molecule and one atom at a time (timed on
a subset and extrapolated per molecule). Needs the qm9pack wheel (extra ``qm9``).
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

from orient_bias.audit import AuditConfig, audit_poses
from orient_bias.data import load_qm9
from orient_bias.features import orientation_features
from orient_bias.frames import principal_frames
from orient_bias.reference import principal_frame_reference


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="all 130,831 molecules instead of 20,000")
    ap.add_argument("--quick", action="store_true", help="the default: 20,000 molecules")
    ap.add_argument("--reference-molecules", type=int, default=300)
    args = ap.parse_args()
    n = None if args.full else 20000
    t = time.perf_counter()
    data = load_qm9(n, seed=0)
    t_load = time.perf_counter() - t
    poses = data.poses
    N = len(poses)

    tracemalloc.start()
    t = time.perf_counter()
    fr = principal_frames(poses)
    orientation_features(poses, fr)
    t_fast = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    m = min(args.reference_molecules, N)
    t = time.perf_counter()
    for b in range(m):
        k = int(poses.n_atoms[b])
        principal_frame_reference(poses.positions[b, :k], poses.numbers[b, :k])
    t_ref = (time.perf_counter() - t) / m * N

    t = time.perf_counter()
    result, _ = audit_poses(
        poses, AuditConfig(max_molecules=N, n_bootstrap=200, n_permutations=1000)
    )
    t_audit = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"molecules: {N} (load from cache {t_load:.1f} s)")
    print(
        f"frames+features, vectorised : {t_fast:.2f} s = {N / t_fast:,.0f} molecules/s, peak {peak / 2**20:.0f} MiB (tracemalloc)"
    )
    print(
        f"frames, per-molecule reference: {t_ref:.1f} s (extrapolated from {m}) = {N / t_ref:,.0f} molecules/s"
    )
    print(f"speed-up vectorised / reference: {t_ref / t_fast:.0f}x")
    print(
        f"full audit (both poses, HGB, bootstrap, permutations, uniformity): {t_audit:.1f} s = {N / t_audit:,.0f} molecules/s"
    )
    print(
        f"audit AUC {result.auc:.3f} [{result.ci_low:.3f}, {result.ci_high:.3f}], p = {result.p_value:.2g}"
    )
    print(f"peak RSS of the process: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
