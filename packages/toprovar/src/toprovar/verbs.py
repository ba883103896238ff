"""The verbs on a user's own images: ``train``, ``calibrate`` and ``generate``.

- ``train --data image_folder/ --size 32 --out DIR``: the images under ``image_folder/<class>/``
  (labels from the sub-folders), resized to ``size x size`` (without ``--size`` they must all
  share one square size), greyscale (``--rgb``: colour); trains the multi-scale VQ tokenizer,
  then the class-conditional VAR on its codes (`toprovar.experiments.common`'s losses, through
  `shared_core.train.fit`); saves a `VARGenerator` folder.
- ``calibrate --checkpoint DIR``: ToProVAR's offline statistics (tau, beta, the scale
  sparsities, layer scores) from unpruned generations, saved as ``DIR/calibration.safetensors``.
- ``generate --checkpoint DIR --policy toprovar|topk|fastvar|skipvar|none -n 64 --out
  grid.png``: images of the classes in turn (or ``--label NAME``), with the pruning policy, and
  the same seeds unpruned; prints MACs per image, CPU time and the speed-up over unpruned.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs

POLICIES = ("toprovar", "topk", "fastvar", "skipvar", "none")


@dataclass(frozen=True)
class TrainSettings:
    """``toprovar train`` settings (``--set name=value``); defaults are `reproduce`'s tiny scale."""

    vocab: int = 64  # shared codebook size
    latent: int = 16  # codebook vector size
    hidden: int = 32  # tokenizer conv width
    dim: int = 64  # transformer width
    depth: int = 4  # transformer blocks
    heads: int = 4
    cond_drop: float = 0.1  # null-class rate (classifier-free guidance)
    vq_steps: int = 300  # tokenizer AdamW steps
    var_steps: int = 400  # VAR AdamW steps
    batch: int = 32
    vq_lr: float = 2e-3
    var_lr: float = 2e-3


@dataclass(frozen=True)
class GenerateSettings:
    """``generate`` and ``calibrate`` settings (``--set name=value``); `reproduce`'s defaults."""

    cfg: float = 1.5  # classifier-free guidance (VAR's linear ramp over scales)
    a_min: float = 0.5  # ToProVAR's pruning-probability range (both toprovar and topk)
    a_max: float = 0.9
    fastvar_drop: float = 0.5  # FastVAR: share of the last scale's tokens dropped
    skip_scales: int = 1  # SkipVAR: last scales skipped
    calib_images: int = 40  # unpruned generations that calibrate ToProVAR
    min_depth: int = 2  # the earliest prunable scale (1-based, >= 2)
    dense_layers: int = 1  # always-dense first layers: ToProVAR's entropy source
    macs_images: int = 4  # single-image generations whose MACs are averaged


def train_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--size", type=int, default=None, metavar="SIDE",
        help="resize every image to SIDE x SIDE (even, >= 4); without it all must share one square size",
    )  # fmt: skip
    p.add_argument("--rgb", action="store_true", help="colour images (default: greyscale)")


def generate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", choices=POLICIES, default="toprovar", help="pruning policy")
    p.add_argument("-n", type=int, default=64, dest="n", help="images to generate (default 64)")
    p.add_argument(
        "--label", default=None, help="generate this class only (default: every class in turn)"
    )
    p.add_argument(
        "--results", type=Path, default=None, metavar="FILE",
        help="a JSON file the numbers are merged into, keyed by policy (created if absent)",
    )  # fmt: skip


def _load(checkpoint: Path) -> Any:
    from toprovar.generator import VARGenerator

    try:
        return VARGenerator.from_pretrained(checkpoint)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(f"--checkpoint: {e}") from None


def read_images(path: Path, size: int | None, rgb: bool, skip_invalid: bool) -> Any:
    """The folder's images as ``(N, C, side, side)`` float32 in [-1, 1], labels and class names."""
    from shared_core.data import read_image_folder
    from shared_core.errors import InputError

    if size is not None and (size < 4 or size % 2):
        raise UsageError(f"--size: expected an even side >= 4, got {size}")
    try:
        folder = read_image_folder(
            path, size=None if size is None else (size, size), mode="RGB" if rgb else "L",
            skip_invalid=skip_invalid,
        )  # fmt: skip
    except InputError as e:
        hint = " (pass --size SIDE to resize them)" if "one size" in str(e) else ""
        raise UsageError(f"--data: {e}{hint}") from None
    h, w = folder.images.shape[1:3]
    if h != w or h < 4 or h % 2:
        raise UsageError(
            f"--data: the images in {path} are {w}x{h}; expected square images of an even side "
            ">= 4 (pass --size to resize them)"
        )
    x = folder.images.astype(np.float32) / 127.5 - 1.0
    x = x[:, None] if x.ndim == 3 else x.transpose(0, 3, 1, 2)
    return x, folder.labels, folder


def train(args: VerbArgs) -> dict[str, Any]:
    """Train the tokenizer and the VAR on ``--data`` and save them to ``--out``."""
    import torch
    import torch.nn.functional as F

    from shared_core.report import Run
    from shared_core.train import TrainConfig, fit, step_generator
    from shared_core.verbs import record_checkpoint
    from toprovar.generator import GeneratorConfig, VARGenerator

    s: TrainSettings = args.config
    for name in ("vq_steps", "var_steps", "batch"):
        if int(getattr(s, name)) < 1:
            raise UsageError(f"--set {name}: expected an int >= 1, got {getattr(s, name)}")
    assert args.out is not None
    plan(
        ["read images", "train tokenizer", "train VAR", "save"],
        0.05 * s.vq_steps + 0.1 * s.var_steps,
    )
    phase("read images")
    x_np, y_np, folder = read_images(
        args.data_path, args.extra.get("size"), args.extra.get("rgb", False), args.skip_invalid
    )
    images, labels = torch.from_numpy(x_np), torch.from_numpy(y_np)
    n, channels, side = len(images), images.shape[1], images.shape[-1]
    start = args.out if args.resume and (args.out / "config.json").is_file() else args.checkpoint
    if start is not None:  # --resume: continue the model in --out; --checkpoint: start from one
        model = _load(start)
        c = model.config
        if (c.side, c.channels, c.classes) != (side, channels, tuple(folder.classes)):
            raise UsageError(
                f"--checkpoint: {start} was trained on {c.side}px, {c.channels} channel(s), classes "
                f"{list(c.classes)}; --data gives {side}px, {channels}, {folder.classes}"
            )
    else:
        try:
            config = GeneratorConfig(
                classes=tuple(folder.classes), channels=channels, side=side, vocab=s.vocab,
                latent=s.latent, hidden=s.hidden, dim=s.dim, depth=s.depth, heads=s.heads,
                cond_drop=s.cond_drop,
            )  # fmt: skip
            torch.manual_seed(args.seed)
            model = VARGenerator(config)
        except (TypeError, ValueError) as e:
            raise UsageError(f"--set: {e}") from None
    vq, var = model.vq, model.var
    num_classes = len(model.config.classes)

    def index(step: int, seed: int) -> tuple[torch.Generator, torch.Tensor]:
        g = step_generator(seed, step)
        return g, torch.randint(0, n, (min(s.batch, n),), generator=g)

    def vq_loss(m: Any, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        rec, _, q = m(x)
        l2 = F.mse_loss(rec, x)
        return l2 + q, {"l2": float(l2.detach()), "vq": float(q.detach())}

    with Run("toprovar", s, out=args.runs) as run:
        phase("train tokenizer")
        vq.train()
        vq_cfg = TrainConfig(
            steps=s.vq_steps, lr=s.vq_lr, warmup=min(20, s.vq_steps), weight_decay=0.0
        )
        r_vq = fit(vq, vq_loss, lambda step: images[index(step, args.seed)[1]], vq_cfg,
                   desc="tokenizer", show_progress=False, device="cpu")  # fmt: skip
        vq.eval()
        with torch.no_grad():
            _, codes, _ = vq.quantise(vq.encoder(images))
            inputs, targets = vq.next_scale_inputs(codes), torch.cat(codes, 1)
            rec_mse = float(F.mse_loss(vq(images)[0], images))

        def var_batch(step: int) -> tuple[torch.Tensor, ...]:
            g, i = index(step, args.seed + 1)
            drop = torch.rand(len(i), generator=g) < model.config.cond_drop
            y = torch.where(drop, torch.full_like(labels[i], num_classes), labels[i])
            return y, inputs[i], targets[i]

        def var_loss(m: Any, b: tuple[torch.Tensor, ...]) -> torch.Tensor:
            logits = m(b[0], b[1])
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[2].reshape(-1))

        phase("train VAR")
        var.train()
        var_cfg = TrainConfig(steps=s.var_steps, lr=s.var_lr, warmup=min(50, s.var_steps))
        r_var = fit(
            var, var_loss, var_batch, var_cfg, desc="VAR", show_progress=False, device="cpu"
        )
        var.eval()
        phase("save")
        metrics = {
            "images": n,
            "classes": num_classes,
            "side": side,
            "tokenizer_l2": float(np.mean(r_vq.losses[-10:])),
            "reconstruction_mse": rec_mse,
            "var_cross_entropy": float(np.mean(r_var.losses[-10:])),
        }
        model.save_pretrained(args.out, metrics=metrics, data=[args.data_path])
        run.log(**metrics)
        record_checkpoint(run, args.out)
        run.finish(print_tables=False)
    print(
        f"trained on {n} images ({side}x{side}, {channels} channel(s), classes {folder.classes}), "
        f"scales {model.scales}: reconstruction MSE {rec_mse:.4f}, VAR cross-entropy "
        f"{metrics['var_cross_entropy']:.3f}; checkpoint {args.out}"
    )
    return metrics


def calibrate(args: VerbArgs) -> Path:
    """ToProVAR's statistics of ``--checkpoint``'s unpruned model, saved beside it."""
    import torch

    from toprovar.calibration_file import save_calibration
    from toprovar.generation import calibrate as calibrate_model

    g: GenerateSettings = args.config
    if g.calib_images < 1:
        raise UsageError(f"--set calib_images: expected an int >= 1, got {g.calib_images}")
    assert args.checkpoint is not None
    plan(["load", "calibrate", "save"])
    phase("load")
    model = _load(args.checkpoint)
    phase("calibrate")
    labels = torch.arange(g.calib_images) % len(model.config.classes)
    try:
        with torch.no_grad():
            cal = calibrate_model(
                model.var, model.vq, labels, tau=None, dense_layers=g.dense_layers,
                min_depth=g.min_depth, cfg=g.cfg, seed=10_000 + args.seed,
            )  # fmt: skip
    except (TypeError, ValueError) as e:
        raise UsageError(f"--set: {e}") from None
    phase("save")
    path = save_calibration(cal, args.checkpoint)
    rho = ", ".join(f"{float(r):.2f}" for r in cal.rho)
    print(
        f"calibrated on {g.calib_images} unpruned images: tau {cal.tau:.3f}, beta {cal.beta:.3f}, "
        f"rho per scale [{rho}], top-k depth D = {cal.depth} of {cal.n_scales} scales"
        f"{' (no scale pruned)' if cal.depth > cal.n_scales else ''}; wrote {path}"
    )
    return path


def make_policy(name: str, g: GenerateSettings, checkpoint: Path, n_scales: int, seed: int) -> Any:
    """The `PruningPolicy` named `name` with the settings `g` for a model of `n_scales` scales
    (ToProVAR's calibration read from `checkpoint`)."""
    from toprovar.adaptive import ToProVARPolicy
    from toprovar.calibration_file import load_calibration
    from toprovar.pruning import (
        FastVARPolicy,
        PruningPolicy,
        SkipVARPolicy,
        ToProVARTopKPolicy,
    )

    if name == "none":
        return PruningPolicy()
    if name == "fastvar":
        return FastVARPolicy({n_scales - 1: g.fastvar_drop})  # the last scale
    if name == "skipvar":
        return SkipVARPolicy(g.skip_scales)
    try:
        cal = load_calibration(checkpoint)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(f"--policy {name}: {e}") from None
    if name == "topk":
        return ToProVARTopKPolicy(cal, g.a_min, g.a_max)
    return ToProVARPolicy(cal, g.a_min, g.a_max, seed=seed)


def generate(args: VerbArgs) -> dict[str, Any]:
    """Generate ``-n`` images under ``--policy`` and unpruned (same seeds); write a grid PNG."""
    import torch

    from toprovar.generation import count_macs
    from toprovar.generation import generate as generate_images

    g: GenerateSettings = args.config
    n, name = args.extra["n"], args.extra["policy"]
    if n < 1:
        raise UsageError(f"-n: expected an int >= 1, got {n}")
    assert args.out is not None and args.checkpoint is not None
    if args.out.suffix.lower() != ".png":
        raise UsageError(f"--out: expected a .png file name, got {args.out.name!r}")
    results = args.extra.get("results")
    if results is not None and results.suffix.lower() != ".json":
        raise UsageError(f"--results: expected a .json file name, got {results.name!r}")
    keys = [name, "unpruned"] if name != "none" else ["unpruned"]
    plan(["load", *(f"generate ({k})" for k in keys), "count MACs", "write"])
    phase("load")
    model = _load(args.checkpoint)
    classes = list(model.config.classes)
    label = args.extra.get("label")
    if label is not None and label not in classes:
        raise UsageError(f"--label: expected one of {classes}, got {label!r}")
    try:
        policy = make_policy(name, g, args.checkpoint, len(model.scales), args.seed)
    except UsageError:
        raise
    except (TypeError, ValueError) as e:
        raise UsageError(f"--set: {e}") from None
    labels = (
        torch.full((n,), classes.index(label))
        if label is not None
        else torch.arange(n) % len(classes)
    )
    arms = dict(zip(keys, [policy, None] if name != "none" else [None], strict=True))
    runs: dict[str, tuple[Any, float]] = {}
    macs: dict[str, float] = {}
    with torch.no_grad():
        for key, pol in arms.items():
            phase(f"generate ({key})")
            # untimed warm-up: the first call pays one-time costs (allocation, kernel choice)
            generate_images(model.var, model.vq, labels[:1], pol, cfg=g.cfg, seed=args.seed)
            started = time.process_time()
            try:
                out = generate_images(model.var, model.vq, labels, pol, cfg=g.cfg, seed=args.seed)
            except (TypeError, ValueError) as e:
                raise UsageError(f"--set: {e}") from None
            runs[key] = (out, time.process_time() - started)
        phase("count MACs")
        for key, pol in arms.items():
            macs[key] = float(np.mean([
                count_macs(generate_images, model.var, model.vq, labels[j : j + 1], pol,
                           cfg=g.cfg, seed=args.seed + j, attention="blockwise")[1]
                for j in range(min(n, g.macs_images))
            ]))  # fmt: skip
    runs.setdefault(name, runs["unpruned"])
    macs.setdefault(name, macs["unpruned"])
    phase("write")
    images = runs[name][0].images
    write_grid(args.out, images)
    cpu, base_cpu = runs[name][1], runs["unpruned"][1]
    same = float((runs[name][0].images - runs["unpruned"][0].images).abs().mean())
    result = {
        "policy": name,
        "images": n,
        "macs_per_image": macs[name],
        "unpruned_macs_per_image": macs["unpruned"],
        "mac_reduction": macs["unpruned"] / macs[name],
        "cpu_s": cpu,
        "unpruned_cpu_s": base_cpu,
        "speedup": base_cpu / cpu if cpu > 0 else float("nan"),
        "mean_abs_difference": same,
    }
    if args.extra.get("results") is not None:
        merge_results(args.extra["results"], name, result)
    print(
        f"{name}: {n} images in {cpu:.2f} s CPU, {macs[name] / 1e6:.2f} M MACs per image; "
        f"unpruned (same seeds): {base_cpu:.2f} s, {macs['unpruned'] / 1e6:.2f} M MACs; "
        f"speed-up {result['speedup']:.2f}x (CPU), {result['mac_reduction']:.2f}x (MACs); "
        f"mean |pruned - unpruned| pixel {same:.3f}; grid {args.out}"
    )
    return result


def write_grid(path: Path, images: Any, columns: int = 8) -> Path:
    """A PNG grid of ``images (B, C, H, W)`` in about [-1, 1], `columns` per row, 1-pixel gaps."""
    import torch
    from PIL import Image

    from shared_core.atomic import atomic_write

    x = ((images.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).numpy()
    b, c, h, w = x.shape
    cols = min(columns, b)
    rows = -(-b // cols)
    grid = np.full((rows * (h + 1) + 1, cols * (w + 1) + 1, c), 255, np.uint8)
    for i in range(b):
        r, q = divmod(i, cols)
        grid[1 + r * (h + 1) : 1 + r * (h + 1) + h, 1 + q * (w + 1) : 1 + q * (w + 1) + w] = x[
            i
        ].transpose(1, 2, 0)
    zoom = max(1, 256 // grid.shape[1])
    grid = grid.repeat(zoom, 0).repeat(zoom, 1)
    image = Image.fromarray(grid[..., 0] if c == 1 else grid)
    return atomic_write(path, lambda f: image.save(f, format="PNG"))


def merge_results(path: Path, policy: str, result: dict[str, Any]) -> Path:
    """Write `result` under ``policies[policy]`` of the JSON file `path` (others kept), atomically."""
    import json

    from shared_core.atomic import atomic_write_json

    data: dict[str, Any] = {"policies": {}}
    if path.is_file():
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise UsageError(f"--results: {path} is not valid JSON ({e})") from None
        if not isinstance(data, dict) or not isinstance(data.get("policies"), dict):
            raise UsageError(f"--results: {path} was not written by `toprovar generate`")
    data["policies"][policy] = result
    return atomic_write_json(path, data)
