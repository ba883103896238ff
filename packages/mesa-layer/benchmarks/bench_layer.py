"""Forward+backward throughput and peak memory: chunkwise Mesa vs naive sequential Mesa vs softmax attention.

Each (method, T) runs in its own subprocess; its peak memory is the resident-set high-water
mark sampled while it runs, minus the RSS with the inputs allocated. Prints tokens/s, peak MiB, the
ratios against the chunkwise layer and the growth from one T to the next (linear in T
means time ~x4 when T grows x4).

    python benchmarks/bench_layer.py            # T = 512, 2048, 8192
    python benchmarks/bench_layer.py --quick    # T = 256, 1024, 8 CG steps (< 1 min on CPU)
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import resource
import subprocess
import sys
import threading
import time


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def one(method: str, T: int, heads: int, dim: int, cg_steps: int, threads: int) -> dict:
    import torch
    import torch.nn.functional as F
    from mesa_layer.torch import mesa_chunk, mesa_recurrent

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    B = 1
    q = F.normalize(torch.randn(B, T, heads, dim), dim=-1).requires_grad_(True)
    k = F.normalize(torch.randn(B, T, heads, dim), dim=-1).requires_grad_(True)
    v = torch.randn(B, T, heads, dim, requires_grad=True)
    g = F.logsigmoid(torch.randn(B, T, heads) + 3).requires_grad_(True)
    beta = torch.sigmoid(torch.randn(B, T, heads)).requires_grad_(True)
    lam = torch.ones(heads, dim, requires_grad=True)

    def step() -> None:
        if method == "chunk":
            o = mesa_chunk(q, k, v, g, beta, lam, chunk_size=64, max_cg_steps=cg_steps)[0]
        elif method == "sequential":
            o = mesa_recurrent(q, k, v, g, beta, lam, max_cg_steps=cg_steps)[0]
        else:
            qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
            o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
        o.square().sum().backward()

    def clear() -> None:
        for x in (q, k, v, g, beta, lam):
            x.grad = None

    gc.collect()
    base = _rss_mib()
    high = [base]
    done = threading.Event()

    def sample() -> None:  # resident-memory high-water mark while the steps run
        while not done.is_set():
            high[0] = max(high[0], _rss_mib())
            time.sleep(0.0005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    times = []
    # the first call is a warm-up for the fast forms; the naive form runs once (compute-bound)
    for _ in range(1 if method == "sequential" else 3):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        clear()
    done.set()
    sampler.join()
    elapsed = min(times[1:]) if len(times) > 1 else times[0]
    peak = high[0] - base
    return {
        "method": method,
        "T": T,
        "seconds": elapsed,
        "tokens_per_s": T / elapsed,
        "peak_mib": max(peak, 0.0),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="T = 256, 1024 and 8 CG steps")
    p.add_argument("--lengths", type=int, nargs="*", default=None)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--cg-steps", type=int, default=None, help="CG steps (default 30, quick 8)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--sequential-max-T",
        type=int,
        default=None,
        help="skip the naive form above this T (512; quick 256)",
    )
    p.add_argument("--one", nargs=2, metavar=("METHOD", "T"), help=argparse.SUPPRESS)
    a = p.parse_args()
    cg = a.cg_steps or (8 if a.quick else 30)
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]), a.heads, a.dim, cg, a.threads)))
        return
    lengths = a.lengths or ([256, 1024] if a.quick else [512, 2048, 8192])
    seq_max = a.sequential_max_T or (256 if a.quick else 512)
    rows = []
    for T in lengths:
        for method in ("chunk", "sequential", "attention"):
            if method == "sequential" and seq_max < T:
                continue
            cmd = [sys.executable, __file__, "--one", method, str(T), "--heads", str(a.heads), "--dim", str(a.dim),
                   "--cg-steps", str(cg), "--threads", str(a.threads)]  # fmt: skip
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            r = rows[-1]
            print(
                f"  {r['method']:>10} T={T:>5}: {r['tokens_per_s']:9.0f} tok/s  {r['peak_mib']:8.1f} MiB",
                flush=True,
            )
    print(
        f"\nforward+backward, B=1, {a.heads} heads x d={a.dim}, {cg} CG steps, {a.threads} thread(s)"
    )
    print("| T | method | tokens/s | peak MiB | time vs chunk | memory vs chunk |")
    print("| --- | --- | --- | --- | --- | --- |")
    by = {(r["method"], r["T"]): r for r in rows}
    for T in lengths:
        c = by[("chunk", T)]
        for m in ("chunk", "sequential", "attention"):
            if (m, T) in by:
                r = by[(m, T)]
                print(f"| {T} | {m} | {r['tokens_per_s']:.0f} | {r['peak_mib']:.1f} | "
                      f"{r['seconds'] / c['seconds']:.2f}x | {r['peak_mib'] / max(c['peak_mib'], 1e-9):.2f}x |")  # fmt: skip
    print("\ngrowth with T (time ratio between consecutive lengths; linear = the length ratio)")
    for m in ("chunk", "sequential", "attention"):
        ts = [(T, by[(m, T)]["seconds"]) for T in lengths if (m, T) in by]
        parts = [
            f"T {t0}->{t1}: x{s1 / s0:.2f} (length x{t1 / t0:.0f})"
            for (t0, s0), (t1, s1) in itertools.pairwise(ts)
        ]
        if parts:
            print(f"  {m}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
