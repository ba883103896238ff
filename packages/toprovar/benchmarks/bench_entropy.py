"""Cost of the attention entropy inside attention, and end-to-end pruned generation speed.

    python benchmarks/bench_entropy.py [--quick] [--repeats N] [--threads N] [--json out.json]

Table 1, attention with each query's entropy (batch 2, 4 heads, head dim 64, n queries over
n keys, CPU):

- ours: `attention_with_entropy` (default ``method="sdpa"``: on CPU the fused C++ kernel of
  `toprovar.fused`, flash attention carrying the entropy's moment, compiled before timing);
- flash + pass (0.2.2): 0.2.1-0.2.2's default and today's fallback where the kernel cannot
  be built: torch's fused CPU flash attention for the output and each row's log-sum-exp,
  then one cache-blocked pass over the scores for the entropy;
- chunked (0.2.0): ``method="chunked"``, one softmax per query chunk and one product with
  ``[V, K]`` for the output and the entropy (the fallback where the fused op cannot run);
- sdpa alone: `F.scaled_dot_product_attention`, no entropy (issue 44's bar: ours at most
  1.25x of it);
- blockwise (FAE): ``method="blockwise"``, the paper's online accumulation over key blocks;
- sdpa + naive H: SDPA for the output plus a second pass that materialises softmax(QK^T) and
  takes -sum a log a: what a user would otherwise write;
- naive: `toprovar.reference.attention_entropy` (one materialised softmax for both);
- QK^T alone: only the scores ``Q K^T`` in the same 256 KiB blocks as ours' second pass, no
  softmax: the product an exact entropy needs beyond SDPA unless fused into its kernel (a
  floor for ours: ``ours >= sdpa alone + QK^T alone``).

Table 2, generation of a batch (1 and 16 images) with an untrained tiny VAR (4 blocks, width
64, scales 1-2-4-8, CFG): the unpruned generation against ToProVAR (adaptive, a = 0.5..0.9;
its online entropies and SVDs included), ToProVAR top-k (a = 0.5..0.9), FastVAR
(drop 0.5 of the last scale) and SkipVAR (last scale skipped). The ratio column is peer time
/ ours, so with ours = the unpruned generation a ratio < 1 is a method's wall speed-up
inverted: speed-up = 1 / ratio.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from toprovar import entropy, fused, reference
from toprovar.adaptive import ToProVARPolicy
from toprovar.entropy import attention_with_entropy
from toprovar.generation import calibrate, generate
from toprovar.model import TinyVAR
from toprovar.pruning import FastVARPolicy, SkipVARPolicy, ToProVARTopKPolicy
from toprovar.vq import MultiScaleVQ

from shared_core.bench import BenchTable, bench_parser, finish, measure


def _sdpa_plus_entropy(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    F.scaled_dot_product_attention(q, k, v)
    a = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, -1)
    (-(a * torch.log(a.clamp_min(1e-30))).sum(-1)).sum()


def _scores_alone(q: torch.Tensor, k: torch.Tensor) -> None:
    bh, n, d = q.shape[0] * q.shape[1], q.shape[2], q.shape[3]
    qf, kt = q.reshape(bh, n, d), k.reshape(bh, -1, d).transpose(1, 2)
    rows = min(n, max(1, (1 << 16) // kt.shape[-1]))
    heads = max(1, (1 << 16) // (rows * kt.shape[-1]))
    for h0 in range(0, bh, heads):
        for i0 in range(0, n, rows):
            torch.bmm(qf[h0 : h0 + heads, i0 : i0 + rows], kt[h0 : h0 + heads])


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0])
    args = p.parse_args()
    repeats = min(args.repeats, 3) if args.quick else args.repeats
    g = torch.Generator().manual_seed(0)
    kernel = "fused C++ kernel" if fused.load() is not None else f"NO fused kernel: {fused.error()}"
    attn = BenchTable(
        f"attention + per-query entropy, batch 2, 4 heads, dim 64, CPU, {args.threads} "
        f"thread(s); ours = {kernel}",
        candidate="ours",
    )
    for n in [256] if args.quick else [256, 1024]:
        q, k, v = (torch.randn(2, 4, n, 64, generator=g) for _ in range(3))
        results = measure(
            {
                "ours": lambda q=q, k=k, v=v: attention_with_entropy(q, k, v),
                "sdpa alone": lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v),
                "flash + pass (0.2.2)": lambda q=q, k=k, v=v: entropy._lse_entropy(q, k, v, None),
                "chunked (0.2.0)": lambda q=q, k=k, v=v: attention_with_entropy(
                    q, k, v, method="chunked"
                ),
                "blockwise (FAE)": lambda q=q, k=k, v=v: attention_with_entropy(
                    q, k, v, method="blockwise"
                ),
                "sdpa + naive H": lambda q=q, k=k, v=v: _sdpa_plus_entropy(q, k, v),
                "naive": lambda q=q, k=k, v=v: reference.attention_entropy(q, k, v),
                "QK^T alone": lambda q=q, k=k: _scores_alone(q, k),
            },
            repeats=repeats,
            threads=args.threads,
        )
        attn.add(f"n = {n}", results)

    torch.manual_seed(0)
    vq = MultiScaleVQ(scales=(1, 2, 4, 8), downsample=2).eval()
    var = TinyVAR(64, 16, (1, 2, 4, 8), 10).eval()
    for blk in var.blocks:
        torch.nn.init.normal_(blk.ada_lin.weight, std=0.1)
    cal = calibrate(var, vq, torch.arange(20) % 10, tau=None, min_depth=3, seed=1)
    gen = BenchTable(
        f"tiny-VAR generation (scales 1-2-4-8, CFG 1.5), CPU, {args.threads} thread(s); "
        "ratio = method time / unpruned time",
        candidate="unpruned",
    )
    for batch in [1] if args.quick else [1, 16]:
        labels = torch.arange(batch) % 10
        policies = {
            "ToProVAR a=0.5..0.9": ToProVARPolicy(cal, 0.5, 0.9),
            "top-k a=0.5..0.9": ToProVARTopKPolicy(cal, 0.5, 0.9),
            "FastVAR drop 0.5": FastVARPolicy({3: 0.5}),
            "SkipVAR skip 1": SkipVARPolicy(1),
        }
        fns = {"unpruned": lambda labels=labels: generate(var, vq, labels)}
        for name, pol in policies.items():
            fns[name] = lambda labels=labels, pol=pol: generate(var, vq, labels, pol)
        gen.add(f"batch {batch}", measure(fns, repeats=repeats, threads=args.threads))
    finish([attn, gen], args.json)


if __name__ == "__main__":
    main()
