"""The reproduction: does entropy-guided pruning lose less quality than FastVAR at equal MACs?

For each domain (sklearn digits, scikit-image's LFW faces; 16x16 grey images) a tokenizer,
a tiny VAR and an evaluator CNN are trained (`common`, cached). ToProVAR is calibrated on
unpruned generations of a calibration set (pre-sampling: tau, beta, the offline statistics
of the top-k option), then the same images (same classes, same sampling random numbers) are
generated with no pruning, ToProVAR (the paper's per-image adaptive policy, sampled keep) and
ToProVAR top-k (0.1.0's offline deterministic variant) at several ``(a_min, a_max)``,
FastVAR at several drop ratios of the last scale(s), and SkipVAR (last scale skipped).
Reported per method and budget:

- cost: MACs per image (`torch.utils.flop_counter` on single-image generations, the model's
  MACs), MAC speed-up, and wall-clock and CPU-time speed-ups of the batched generations
  against the unpruned one (one thread; the adaptive policy's online SVDs and entropies are
  inside these times, and their SVD seconds are reported);
- fidelity to the unpruned generation at the same seed: image MSE and the share of equal
  last-scale codes;
- quality: the evaluator's accuracy on the requested class and the Frechet distance between
  its features of generated and real images.

The claim is checked at matched MACs: each ToProVAR point against FastVAR's (and the top-k
variant's) curve interpolated (linearly in MAC speed-up) to the same speed-up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from shared_core.cli import ReproduceArgs, UsageError
from shared_core.progress import phase, plan
from toprovar.experiments import ESTIMATE_S
from toprovar.experiments.common import ModelConfig, TrainSteps


@dataclass(frozen=True)
class Config:
    """One scale of the reproduction; the same models and samples serve every method."""

    domains: tuple[str, ...] = ("digits", "faces")
    model: ModelConfig = field(default_factory=ModelConfig)
    steps: TrainSteps = field(default_factory=TrainSteps)
    faces_var_steps: int = 300  # the faces set has 160 training images
    n_eval: int = 200  # generated images per method and budget (classes cycled)
    n_calib: int = 40  # unpruned generations that calibrate ToProVAR (other seeds)
    eval_batch: int = 100
    cfg: float = 1.5  # classifier-free guidance (VAR's linear ramp over scales)
    top_k: int = 0  # 0: sample from the full distribution
    top_p: float = 0.0
    tau: float | None = None  # scale rule D = min{s : rho_s >= tau}; None: calibrated
    prune_share: float = 0.9  # tau=None: this share of calibration images reach tau
    min_depth: int = 3  # the earliest prunable scale (1-based): scales 1-2 stay dense
    dense_layers: int = 1  # always-dense first layers: ToProVAR's entropy source
    toprovar_budgets: tuple[tuple[float, float], ...] = (
        (0.25, 0.75), (0.5, 0.9), (0.7, 1.0), (0.85, 1.0),
    )  # fmt: skip  # (a_min, a_max)
    topk_budgets: tuple[tuple[float, float], ...] = (
        (0.25, 0.75), (0.5, 0.9), (0.7, 1.0), (0.85, 1.0),
    )  # fmt: skip  # 0.1.0's deterministic top-k at the same (a_min, a_max)
    # FastVAR: drop ratios per scale counted from the end (-1: the last scale)
    fastvar_drops: tuple[tuple[tuple[int, float], ...], ...] = (
        ((-1, 0.25),), ((-1, 0.5),), ((-1, 0.75),), ((-1, 0.9),),
        ((-2, 0.5), (-1, 0.9)), ((-2, 0.9), (-1, 0.9)),
    )  # fmt: skip
    fastvar_first_layer: int = 1  # layers >= this are pruned (FastVAR keeps the first dense)
    skip_scales: tuple[int, ...] = (1,)  # SkipVAR: number of last scales skipped
    n_macs: int = 10  # single-image generations whose MACs are averaged


SCALES: dict[str, Config] = {
    "micro": Config(
        domains=("digits",),
        model=ModelConfig(scales=(1, 2, 4), dim=32, depth=2, heads=2, hidden=16),
        steps=TrainSteps(vq_steps=30, var_steps=40, clf_steps=30, batch=32),
        n_eval=20,
        n_calib=10,
        eval_batch=20,
        toprovar_budgets=((0.5, 0.9),),
        topk_budgets=((0.5, 0.9),),
        fastvar_drops=(((-1, 0.5),),),
        min_depth=2,
        n_macs=2,
    ),
    "tiny": Config(
        steps=TrainSteps(vq_steps=300, var_steps=400, clf_steps=150, batch=32),
        faces_var_steps=250,
    ),
    "small": Config(  # <= 30 CPU-minutes with one thread (the budget)
        model=ModelConfig(scales=(1, 2, 4, 8, 16), downsample=1, dim=64, depth=6, heads=4),
        steps=TrainSteps(vq_steps=600, var_steps=1000, clf_steps=300, batch=32),
        faces_var_steps=700,  # the faces set has 160 training images
        n_eval=200,
        skip_scales=(1, 2),
    ),
    # GPU-sized (not run here): Infinity-like 10-scale schedule on a 16-block, width-512 VAR
    "paper": Config(
        model=ModelConfig(
            scales=(1, 2, 3, 4, 5, 6, 8, 10, 13, 16),
            downsample=1,
            vocab=512,
            latent=32,
            hidden=64,
            dim=512,
            depth=16,
            heads=8,
        ),
        steps=TrainSteps(vq_steps=5000, var_steps=20000, clf_steps=1000, batch=64),
        faces_var_steps=10000,
        n_eval=2000,
        n_calib=200,
        min_depth=5,
        fastvar_drops=(
            ((-1, 0.5),),
            ((-1, 0.75),),
            ((-2, 0.5), (-1, 0.75)),
            ((-3, 0.5), (-2, 0.75), (-1, 0.9)),
        ),
        skip_scales=(1, 2),
        n_macs=20,
    ),
}


def _interp(x: float, xs: list[float], ys: list[float]) -> float | None:
    """Linear interpolation of (xs, ys) at x; None outside the range of xs."""
    order = np.argsort(xs)
    xs_s, ys_s = np.asarray(xs)[order], np.asarray(ys)[order]
    if not xs_s[0] <= x <= xs_s[-1]:
        return None
    return float(np.interp(x, xs_s, ys_s))


def _sig(v: float) -> float:
    """`v` to four significant digits (MSEs span several decades)."""
    return float(f"{v:.4g}")


def run_domain(
    domain: str, config: Config, seed: int, device: str, samples: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Train (cached), calibrate and evaluate every method on one domain; one row per point.

    `samples`, if given, receives the first images of each method and budget (for a figure).
    """
    import torch

    from shared_core.metrics import frechet_distance
    from toprovar.adaptive import ToProVARPolicy
    from toprovar.data import NUM_CLASSES, load_domain
    from toprovar.experiments.common import train_classifier, train_generator, train_tokenizer
    from toprovar.generation import calibrate, count_macs, generate
    from toprovar.pruning import FastVARPolicy, PruningPolicy, SkipVARPolicy, ToProVARTopKPolicy

    phase(f"{domain}: train (cached)")
    model = config.model
    side = model.scales[-1] * model.downsample
    x, y = load_domain(domain, side, "train")
    real, _ = load_domain(domain, side, "all")
    n_cls = NUM_CLASSES[domain]
    steps = (
        config.steps
        if domain == "digits"
        else replace(config.steps, var_steps=config.faces_var_steps)
    )
    vq = train_tokenizer(x, domain, model, steps, seed, device).cpu()
    clf = train_classifier(x, y, domain, n_cls, steps, seed, device).cpu()
    var = train_generator(x, y, vq, domain, n_cls, model, steps, seed, device).cpu()
    n_scales = len(model.scales)
    with torch.no_grad():
        real_feats = clf.features(real).numpy()
    phase(f"{domain}: calibrate + generate")
    calib_labels = torch.arange(config.n_calib) % n_cls
    cal = calibrate(
        var, vq, calib_labels, tau=config.tau, dense_layers=config.dense_layers,
        min_depth=config.min_depth, cfg=config.cfg, seed=10_000 + seed,
        prune_share=config.prune_share,
    )  # fmt: skip
    methods: list[tuple[str, str, PruningPolicy]] = [("none", "-", PruningPolicy())]
    methods += [
        ("ToProVAR", f"a={lo:g}..{hi:g}", ToProVARPolicy(cal, lo, hi, seed=seed))
        for lo, hi in config.toprovar_budgets
    ]
    methods += [
        ("ToProVAR top-k", f"a={lo:g}..{hi:g}", ToProVARTopKPolicy(cal, lo, hi))
        for lo, hi in config.topk_budgets
    ]
    for drops in config.fastvar_drops:
        label = ", ".join(f"{r:g} (s{n_scales + off + 1})" for off, r in drops)
        fast = FastVARPolicy({n_scales + off: r for off, r in drops}, config.fastvar_first_layer)
        methods.append(("FastVAR", f"drop {label}", fast))
    methods += [("SkipVAR", f"skip {n}", SkipVARPolicy(n)) for n in config.skip_scales]
    labels = torch.arange(config.n_eval) % n_cls
    batches = [labels[i : i + config.eval_batch] for i in range(0, len(labels), config.eval_batch)]
    kw: dict[str, Any] = {"cfg": config.cfg, "top_k": config.top_k, "top_p": config.top_p}
    rows: list[dict[str, Any]] = []
    ref_images: torch.Tensor | None = None
    ref_codes: torch.Tensor | None = None
    base_macs = base_wall = base_cpu = 0.0
    # untimed warm-up at the evaluation batch size: the first large batch pays one-time costs
    # (allocator growth, kernel selection) that would otherwise land on the unpruned time
    generate(var, vq, batches[0], None, seed=seed * 1000, **kw)
    for name, budget, policy in methods:
        t0, c0 = time.perf_counter(), time.process_time()
        outs, svd_s, depths, kept = [], 0.0, [], []
        for i, b in enumerate(batches):
            outs.append(generate(var, vq, b, policy, seed=seed * 1000 + i, **kw))
            if isinstance(policy, ToProVARPolicy):
                svd_s += policy.svd_seconds
                assert policy.depth is not None
                depths.append(policy.depth)
                kept.append(
                    [policy.kept.get((n_scales - 1, layer)) for layer in range(model.depth)]
                )
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        macs = float(np.mean([
            count_macs(generate, var, vq, labels[j : j + 1], policy, seed=seed * 1000 + j,
                       attention="blockwise", **kw)[1]
            for j in range(config.n_macs)
        ]))  # fmt: skip
        images = torch.cat([o.images for o in outs])
        last = torch.cat([o.codes[-1] for o in outs]) if len(outs[0].codes) == n_scales else None
        with torch.no_grad():
            logits = clf(images)
            feats = clf.features(images).numpy()
        if name == "none":
            ref_images, ref_codes = images, last
            base_macs, base_wall, base_cpu = macs, wall, cpu
        if samples is not None:
            samples[f"{name} {budget}" if name != "none" else "unpruned"] = images[:10]
        assert ref_images is not None
        agree = (
            float((last == ref_codes).float().mean())
            if last is not None and ref_codes is not None
            else 0.0
        )
        keep, extra = "-", ""
        if isinstance(policy, ToProVARPolicy):  # mean kept share per layer, last scale
            n_last = model.scales[-1] ** 2
            shares = []
            for layer in range(model.depth):
                parts = [ks[layer] for ks in kept]
                counts = [
                    c.double() if c is not None else torch.full((len(d),), float(n_last))
                    for c, d in zip(parts, depths, strict=True)
                ]
                shares.append(float(torch.cat(counts).mean()) / n_last)
            keep = "/".join(f"{r:.2f}" for r in shares)
            d = torch.cat(depths)
            extra = (
                "D: " + ", ".join(
                    f"{int(v) if v <= n_scales else 'none'} x{int((d == v).sum())}"
                    for v in torch.unique(d)
                ) + f"; SVD {svd_s:.3f} s ({100 * svd_s / wall:.1f} % of wall)"
            )  # fmt: skip
        elif isinstance(policy, ToProVARTopKPolicy):
            keep = "/".join(
                f"{cal.keep_ratio(n_scales - 1, layer, policy.a_min, policy.a_max):.2f}"
                for layer in range(model.depth)
            )
            extra = f"D: {cal.depth} (all images)"
        elif isinstance(policy, FastVARPolicy):
            r = 1 - policy.drop.get(n_scales - 1, 0.0)
            keep = "/".join(
                "1.00" if layer < policy.first_layer else f"{r:.2f}" for layer in range(model.depth)
            )
        rows.append({
            "domain": domain,
            "method": name,
            "budget": budget,
            "keep per layer": keep,
            "MMACs/img": round(macs / 1e6, 3),
            "MAC speed-up": round(base_macs / macs, 3),
            "wall speed-up": round(base_wall / wall, 2),
            "CPU speed-up": round(base_cpu / cpu, 2),
            "MSE vs unpruned": _sig(float(((images - ref_images) ** 2).mean())),
            "codes agree": round(agree, 3),
            "accuracy": round(float((logits.argmax(1) == labels).float().mean()), 3),
            "FD": round(frechet_distance(feats, real_feats), 3),
            "notes": extra,
        })  # fmt: skip
    finite = ~torch.isnan(cal.score)
    rows[0]["calibration"] = (
        f"tau={cal.tau:.3g} (share {config.prune_share:g}), min_depth={cal.min_depth}, "
        f"top-k D={cal.depth}, rho={[round(float(r), 3) for r in cal.rho]}, "
        f"beta={cal.beta:.3g}, "
        f"varrho {float(cal.varrho[finite].min()):.3g}..{float(cal.varrho[finite].max()):.3g}, "
        f"R {float(cal.score[finite].min()):.3g}..{float(cal.score[finite].max()):.3g}"
    )
    return rows


def matched(
    rows: list[dict[str, Any]], metric: str, method: str = "ToProVAR", against: str = "FastVAR"
) -> list[dict[str, Any]]:
    """Each `method` point against `against`'s curve (through the unpruned point)
    interpolated to its MAC speed-up."""
    peer = [r for r in rows if r["method"] == against]
    base = [r for r in rows if r["method"] == "none"]
    xs = [1.0] + [r["MAC speed-up"] for r in peer]
    ys = [base[0][metric]] + [r[metric] for r in peer]
    out = []
    for r in rows:
        if r["method"] != method:
            continue
        f = _interp(r["MAC speed-up"], xs, ys)
        out.append({
            "domain": r["domain"], "method": method, "budget": r["budget"],
            "MAC speed-up": r["MAC speed-up"], "metric": metric, "value": r[metric],
            "against": against, "against (interp.)": None if f is None else round(f, 4),
        })  # fmt: skip
    return out


def _wins(table: list[dict[str, Any]], higher_is_better: bool = False) -> str:
    """'k of n': points better than the peer's interpolated value."""
    pts = [r for r in table if r["against (interp.)"] is not None]
    if higher_is_better:
        wins = sum(r["value"] > r["against (interp.)"] for r in pts)
    else:
        wins = sum(r["value"] < r["against (interp.)"] for r in pts)
    return f"{wins} of {len(pts)}"


def _sample_figure(run: Any, domain: str, samples: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(samples)
    cols = max(len(v) for v in samples.values())
    fig, axes = plt.subplots(len(names), cols, figsize=(cols * 0.8 + 2.2, len(names) * 0.85))
    for i, name in enumerate(names):
        for j in range(cols):
            ax = axes[i, j]
            ax.axis("off")
            if j < len(samples[name]):
                ax.imshow(samples[name][j, 0].clamp(-1, 1).numpy(), cmap="gray", vmin=-1, vmax=1)
        axes[i, 0].text(-0.15, 0.5, name, transform=axes[i, 0].transAxes, ha="right",
                        va="center", fontsize=7)  # fmt: skip
    fig.suptitle(f"{domain}: the same classes and random numbers, by method and budget", fontsize=9)
    fig.subplots_adjust(left=0.22, wspace=0.05, hspace=0.05)
    run.save_figure(f"{domain}_samples", fig)


def reproduce(args: ReproduceArgs) -> dict[str, Any]:
    import torch

    from shared_core.data import require_extra
    from shared_core.device import seed_everything
    from shared_core.report import Run

    config: Config = args.config
    min_depth = args.extra.get("min_depth")
    if min_depth is not None:
        if not isinstance(min_depth, int) or min_depth < 2:
            raise UsageError(f"--min-depth: expected an int >= 2, got {min_depth!r}")
        config = replace(config, min_depth=min_depth)
    for domain in config.domains:  # a missing extra is one line, before the plan's
        module, what = ("sklearn", "digits") if domain == "digits" else ("skimage", "faces")
        require_extra("toprovar", "data", module, f"the {what} domain")
    phases = [
        f"{d}: {s}" for d in config.domains for s in ("train (cached)", "calibrate + generate")
    ]
    plan([*phases, "report"], ESTIMATE_S.get(args.scale))
    device = "cpu" if args.device == "auto" else args.device
    seed_everything(args.seed)
    torch.set_grad_enabled(True)
    with Run("toprovar", config, out=args.out) as run:
        all_rows: list[dict[str, Any]] = []
        for domain in config.domains:
            t0, c0 = time.perf_counter(), time.process_time()
            samples: dict[str, Any] = {}
            rows = run_domain(domain, config, args.seed, device, samples)
            _sample_figure(run, domain, samples)
            all_rows += rows
            for r in rows:
                run.add_row(
                    f"{domain}: quality vs cost",
                    **{k: v for k, v in r.items() if k != "calibration"},
                )
            run.log(**{f"{domain}_calibration": rows[0]["calibration"],
                       f"{domain}_wall_s": time.perf_counter() - t0,
                       f"{domain}_cpu_s": time.process_time() - c0})  # fmt: skip
            print(f"{domain}: calibration {rows[0]['calibration']}")
            pairs = (("ToProVAR", "FastVAR"), ("ToProVAR", "ToProVAR top-k"),
                     ("ToProVAR top-k", "FastVAR"))  # fmt: skip
            for method, against in pairs:
                for metric in ("MSE vs unpruned", "FD", "accuracy"):
                    table = matched(rows, metric, method, against)
                    for m in table:
                        run.add_row("matched MACs", **m)
                    wins = _wins(table, higher_is_better=metric == "accuracy")
                    slug = f"{domain}_{metric.split()[0]}_{method}_vs_{against}".replace(" ", "")
                    run.log(**{slug: wins})
                    print(f"{domain}: {method} better than {against} in {metric} at matched "
                          f"MACs: {wins}")  # fmt: skip
            for metric, label in (
                ("MSE vs unpruned", "image MSE to the unpruned generation"),
                ("FD", "Frechet distance to real images (evaluator features)"),
                ("accuracy", "evaluator accuracy on the requested class"),
            ):
                series = {}
                for method in ("ToProVAR", "ToProVAR top-k", "FastVAR", "SkipVAR"):
                    # SkipVAR has one point: no line from the unpruned point through it
                    keep = (method,) if method == "SkipVAR" else (method, "none")
                    pts = [r for r in rows if r["method"] in keep]
                    series[method] = ([p["MAC speed-up"] for p in pts], [p[metric] for p in pts])
                slug = metric.split()[0].lower()
                run.plot(
                    f"{domain}_{slug}", series, xlabel="speed-up in MACs (unpruned = 1)",
                    ylabel=label, title=f"{domain}: {label} vs MAC speed-up", kind="line",
                )  # fmt: skip
        phase("report")
        run.log(rows=all_rows)
        run.finish(
            "ToProVAR (adaptive and top-k) vs FastVAR vs SkipVAR on a tiny VAR",
            notes=(
                f"{config.n_eval} images per method and budget, the same classes and sampling "
                "random numbers for all methods; MACs from torch.utils.flop_counter (whole "
                "generation incl. decoder, CFG doubles the transformer batch). Matched MACs: "
                "'against (interp.)' is the peer's metric interpolated linearly in MAC "
                "speed-up (through the unpruned point) at the row's speed-up; – where that "
                "speed-up is outside the peer's measured range. The 'k of n' metrics count "
                "the rows beating that value among the n rows where it exists (0 of 0: none)."
            ),
        )
    return {"rows": all_rows}
