"""CPU speed-up of pruned generation against its MAC speed-up, on the reproduction's models.

    python benchmarks/bench_pruned.py [--scales tiny small] [--domains digits faces]
        [--repeats N] [--threads N] [--json results/bench-pruned.json] [--quick]
        [--profile N] [--untrained]

For each scale and domain: the reproduction's tokenizer and VAR (`reproduce`'s training,
loaded from ``shared_core.data.cache_dir("toprovar")``; trained first where missing, which
takes minutes), calibrated as `reproduce` does (its calibration set, ``tau=None``,
``min_depth``), then one batch of `reproduce`'s evaluation size (100 images, classes cycled,
CFG 1.5) generated, interleaved, by:

- unpruned: ``generate(var, vq, labels)``;
- ToProVAR (the paper's adaptive rule, the default) at `reproduce`'s four budgets, through
  the packed path (one gather and one scatter per pruned layer, attention in the fused
  kernel with each row's query count and key mask: `toprovar.packed`, 0.5.0);
- the same at a = 0.5..0.9 through 0.4.0's sublayer-by-sublayer path (``packed=False``).

CPU speed-up: unpruned time / method time within each repeat (`shared_core.bench.measure`:
interleaved, rotated, one thread), median [min-max] over the repeats. MAC speed-up: the
MACs of the very generation timed (`count_macs` on the same batch, labels and seeds: the
kept tokens only; the fused kernel counts each row's computed (query, allowed key) pairs),
unpruned / method. The goal (issue 69): CPU speed-up >= 0.8 x MAC speed-up.

``--untrained``: the scale's sizes with random weights (no training; the adaptive policy
then prunes another pattern than on the trained models). ``--profile N``: at the first (scale, domain), N generations of the unpruned, the packed
a = 0.5..0.9 and the 0.4.0-path runs under `torch.profiler` (one thread): the ops with the
most self CPU time, in ms per generation (JSON key ``profile``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from typing import Any

import torch
from toprovar import fused
from toprovar.adaptive import ToProVARPolicy
from toprovar.data import NUM_CLASSES, load_domain
from toprovar.experiments.common import train_generator, train_tokenizer
from toprovar.experiments.reproduce import SCALES
from toprovar.generation import calibrate, count_macs, generate
from toprovar.model import TinyVAR
from toprovar.vq import MultiScaleVQ

from shared_core.atomic import atomic_write_text
from shared_core.bench import bench_parser, measure, paired_ratio

GOAL = 0.8  # CPU speed-up >= GOAL x MAC speed-up


def _models(scale: str, domain: str, untrained: bool = False) -> tuple[Any, Any, Any]:
    """`reproduce`'s tokenizer, VAR and calibration for (scale, domain), seed 0; `untrained`:
    the same sizes with random weights (adaLN gates opened, std 0.1), no training."""
    config = SCALES[scale]
    model = config.model
    if untrained:
        torch.manual_seed(0)
        vq = MultiScaleVQ(
            1, model.hidden, model.latent, model.vocab, model.scales, downsample=model.downsample
        ).eval()
        var = TinyVAR(
            model.vocab, model.latent, model.scales, NUM_CLASSES[domain], model.dim, model.depth,
            model.heads,
        ).eval()  # fmt: skip
        for blk in var.block_list():
            torch.nn.init.normal_(blk.ada_lin.weight, std=0.1)
    else:
        x, y = load_domain(domain, model.scales[-1] * model.downsample, "train")
        steps = (
            config.steps
            if domain == "digits"
            else replace(config.steps, var_steps=config.faces_var_steps)
        )
        vq = train_tokenizer(x, domain, model, steps, 0, "cpu").cpu()
        var = train_generator(x, y, vq, domain, NUM_CLASSES[domain], model, steps, 0, "cpu")
        var = var.cpu()
    cal = calibrate(
        var, vq, torch.arange(config.n_calib) % NUM_CLASSES[domain], tau=config.tau,
        dense_layers=config.dense_layers, min_depth=config.min_depth, cfg=config.cfg,
        seed=10_000, prune_share=config.prune_share,
    )  # fmt: skip
    return vq, var, cal


def bench_setting(
    scale: str,
    domain: str,
    repeats: int,
    threads: int,
    profile: int,
    into: dict[str, Any],
    untrained: bool = False,
) -> list[dict[str, Any]]:
    """One (scale, domain): a row per method with its times, MACs and both speed-ups; with
    ``profile > 0`` the op profile of three of the methods goes to ``into["profile"]``."""
    config = SCALES[scale]
    vq, var, cal = _models(scale, domain, untrained)
    labels = torch.arange(config.eval_batch) % NUM_CLASSES[domain]
    kw: dict[str, Any] = {"cfg": config.cfg, "seed": 0}
    methods: dict[str, tuple[Any, bool]] = {"unpruned": (None, True)}
    for lo, hi in config.toprovar_budgets:
        methods[f"ToProVAR a={lo:g}..{hi:g}"] = (ToProVARPolicy(cal, lo, hi), True)
    methods["ToProVAR a=0.5..0.9, 0.4.0 path"] = (ToProVARPolicy(cal, 0.5, 0.9), False)
    fns = {
        name: lambda pol=pol, packed=packed: generate(var, vq, labels, pol, packed=packed, **kw)
        for name, (pol, packed) in methods.items()
    }
    results = measure(fns, repeats=repeats, threads=threads, min_time=0.0)
    if profile > 0:
        picked = ("unpruned", "ToProVAR a=0.5..0.9", "ToProVAR a=0.5..0.9, 0.4.0 path")
        into["profile"] = {
            "setting": f"{scale} {domain}, {len(labels)} images, {profile} generations",
            "self_cpu_ms_per_generation": {
                name: _profile(fns[name], profile, threads) for name in picked
            },
        }
    macs = {
        name: count_macs(generate, var, vq, labels, pol, packed=packed, **kw)[1]
        for name, (pol, packed) in methods.items()
    }
    rows = []
    for name in methods:
        speed = paired_ratio(results[name], results["unpruned"])  # unpruned / method
        mac_speedup = macs["unpruned"] / macs[name]
        rows.append({
            "scale": scale + (" (untrained)" if untrained else ""),
            "domain": domain,
            "method": name,
            "cpu_ms": round(results[name].median("cpu") * 1e3, 1),
            "wall_ms": round(results[name].median("wall") * 1e3, 1),
            "MMACs_per_image": round(macs[name] / len(labels) / 1e6, 3),
            "MAC_speedup": round(mac_speedup, 2),
            "CPU_speedup": round(speed.median, 2),
            "CPU_speedup_min": round(speed.min, 2),
            "CPU_speedup_max": round(speed.max, 2),
            "CPU_over_MAC": round(speed.median / mac_speedup, 2),
            "goal_met": bool(speed.median >= GOAL * mac_speedup),
            "repeats": repeats,
        })  # fmt: skip
    return rows


def _profile(fn: Any, n: int, threads: int, top: int = 10) -> dict[str, float]:
    """The `top` ops by self CPU time over `n` calls of `fn`, in ms per call, and the total."""
    from torch.profiler import ProfilerActivity, profile

    from shared_core.device import limit_threads

    with limit_threads(threads), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(n):
            fn()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    out = {e.key: round(e.self_cpu_time_total / 1e3 / n, 2) for e in events[:top]}
    out["total"] = round(sum(e.self_cpu_time_total for e in events) / 1e3 / n, 2)
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    head = "| scale | domain | method | CPU ms | MMACs/img | MAC speed-up | CPU speed-up [min-max] | CPU / MAC |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['scale']} | {r['domain']} | {r['method']} | {r['cpu_ms']} | "
            f"{r['MMACs_per_image']} | {r['MAC_speedup']} | {r['CPU_speedup']} "
            f"[{r['CPU_speedup_min']}-{r['CPU_speedup_max']}] | {r['CPU_over_MAC']} |"
        )
    return "\n".join(lines)


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0])
    p.add_argument("--scales", nargs="+", default=["tiny", "small"], choices=["tiny", "small"])
    p.add_argument("--domains", nargs="+", default=["digits", "faces"], choices=["digits", "faces"])
    p.add_argument("--profile", type=int, default=0, help="profiled generations (0: none)")
    p.add_argument(
        "--untrained", action="store_true", help="random weights of the scale's sizes, no training"
    )
    args: argparse.Namespace = p.parse_args()
    repeats = min(args.repeats, 3) if args.quick else args.repeats
    if fused.load() is None:
        print(f"NO fused kernel ({fused.error()}): the packed path runs torch's attention")
    c0 = time.process_time()
    rows: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    for scale in args.scales:
        for domain in args.domains:
            first = not rows
            rows += bench_setting(
                scale,
                domain,
                repeats,
                args.threads,
                args.profile if first else 0,
                extra,
                args.untrained,
            )
            print(markdown(rows[-(len(SCALES[scale].toprovar_budgets) + 2) :]), flush=True)
    cpu_s = round(time.process_time() - c0, 1)
    print(f"\n{markdown(rows)}\n\nbenchmark CPU: {cpu_s} s")
    if "profile" in extra:
        print(json.dumps(extra["profile"], indent=1))
    if args.json is not None:
        payload = {
            "command": "python benchmarks/bench_pruned.py "
            + " ".join(
                [f"--scales {' '.join(args.scales)}", f"--domains {' '.join(args.domains)}"]
                + [f"--repeats {args.repeats}", f"--threads {args.threads}"]
                + ([f"--profile {args.profile}"] if args.profile else [])
                + (["--untrained"] if args.untrained else [])
                + (["--quick"] if args.quick else [])
            ),
            "cpu_s": cpu_s,
            "goal": f"CPU speed-up >= {GOAL} x MAC speed-up",
            "torch": torch.__version__,
            "rows": rows,
            **extra,
        }
        atomic_write_text(args.json, json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
