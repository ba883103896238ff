"""The verbs on a user's own sequences: ``train``, ``rollout`` and ``evaluate``.

Data are NumPy arrays ``(N, T, C, H, W)`` (sequences, time, channels, height, width) in a
``.npy`` or ``.npz`` file (``--key`` names the array of a ``.npz`` holding several).

- ``train --data sequences.npz --out DIR``: a `Forecaster` (ConvT3 by default; ``--set
  model=convs5`` for the baseline) trained teacher-forced to predict frame k + 1 from frames
  0..k, every channel, by `shared_core.train.fit`; the checkpoint is a `shared_core.hub` folder.
- ``rollout --checkpoint DIR --data start.npz --steps K --out rollout.npz``: reads every frame
  of `start` as context and predicts the next K frames closed loop; writes ``rollout``
  ``(N, K, C, H, W)``, plus ``<out>.gif`` (context then rollout of the first sequence, channel
  0) and ``<out>.png`` (the same as a strip of frames).
- ``evaluate --checkpoint DIR --data sequences.npz --context T0``: rolls out from the first T0
  frames and compares with the rest: per-step MSE (and MSE / variance of the truth), beside
  persistence (the last context frame repeated) and, with ``--baseline DIR``, another
  checkpoint on the same frames.
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


@dataclass(frozen=True)
class TrainSettings:
    """``convt3 train`` settings (``--set name=value``); defaults are `reproduce`'s tiny scale."""

    model: str = "convt3"  # convt3 | minit3 | convs5 | convlstm (`convt3.torch.model.MODELS`)
    d_model: int = 8
    state_size: int = 16  # 2P: P = 8 complex state channels
    n_layers: int = 1
    kernel_bc: int = 3  # B and C kernel size (1: the paper's regime of largest ConvT3 gain)
    dt_min: float = 0.02  # initial SSM steps: time constants of about 4 to 100 steps
    dt_max: float = 0.5
    steps: int = 150  # AdamW steps (shared_core.train.fit: warm-up then cosine)
    batch: int = 4  # sequences per step
    lr: float = 1e-2


def key_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--key",
        default=None,
        help="the array to read from a .npz holding several (default: its one)",
    )


def rollout_options(p: argparse.ArgumentParser) -> None:
    key_option(p)
    p.add_argument("--steps", type=int, required=True, metavar="K", help="frames to predict (>= 1)")


def evaluate_options(p: argparse.ArgumentParser) -> None:
    key_option(p)
    p.add_argument(
        "--context", type=int, default=10, metavar="T0",
        help="frames read before the rollout starts (default 10)",
    )  # fmt: skip
    p.add_argument(
        "--steps", type=int, default=None, metavar="K",
        help="frames to predict and score (default: all after the context)",
    )  # fmt: skip
    p.add_argument(
        "--baseline", type=Path, default=None, metavar="DIR",
        help="a second checkpoint (e.g. ConvS5) scored on the same frames",
    )  # fmt: skip


def read_sequences(path: Path, key: str | None, min_frames: int = 1) -> np.ndarray:
    """``(N, T, C, H, W)`` float32 from `path` (a UsageError naming the file if it is not one)."""
    from shared_core.data import read_array

    array = read_array(path, key, ndim=5)
    if array.size == 0:
        raise UsageError(f"--data: {path} holds an empty array of shape {array.shape}")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise UsageError(f"--data: {path} holds {array.dtype} values; expected real numbers")
    array = array.astype(np.float32)
    if not np.all(np.isfinite(array)):
        raise UsageError(f"--data: {path} holds NaN or infinite values")
    if array.shape[1] < min_frames:
        raise UsageError(
            f"--data: {path} has sequences of {array.shape[1]} frames (shape {array.shape}); "
            f"expected at least {min_frames}"
        )
    from convt3._checks import check_sequence_shape

    try:
        check_sequence_shape(array.shape, array.shape[2], 1.0, 1.0)
    except (TypeError, ValueError) as e:
        raise UsageError(f"--data: {path}: {e}") from None
    return array


def _load(checkpoint: Path, flag: str = "--checkpoint") -> Any:
    from convt3.torch.forecaster import Forecaster

    try:
        return Forecaster.from_pretrained(checkpoint)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(f"{flag}: {e}") from None


def _check_channels(model: Any, frames: np.ndarray, path: Path) -> None:
    want = model.config.predictor.in_channels
    if frames.shape[2] != want:
        raise UsageError(
            f"--data: {path} has {frames.shape[2]} channels (shape {frames.shape}); the "
            f"checkpoint was trained on {want}"
        )


def train(args: VerbArgs) -> dict[str, Any]:
    """Train a `Forecaster` on ``--data`` and save it to ``--out``."""
    import torch

    from convt3.experiments.common import train_next_frame
    from convt3.torch.forecaster import Forecaster, ForecasterConfig
    from convt3.torch.model import PredictorConfig
    from shared_core.report import Run
    from shared_core.verbs import record_checkpoint

    s: TrainSettings = args.config
    for name in ("steps", "batch", "d_model", "state_size", "n_layers"):
        if int(getattr(s, name)) < 1:
            raise UsageError(f"--set {name}: expected an int >= 1, got {getattr(s, name)}")
    assert args.out is not None
    plan(["read data", "train", "save"], estimate_s=0.15 * s.steps)
    phase("read data")
    frames = read_sequences(args.data_path, args.extra.get("key"), min_frames=2)
    N, T, C, H, W = frames.shape
    mean = frames.mean(axis=(0, 1, 3, 4))
    std = frames.std(axis=(0, 1, 3, 4))
    std = np.where(std > 0, std, 1.0)
    start = args.out if args.resume and (args.out / "config.json").is_file() else args.checkpoint
    if start is not None:  # --resume: continue the model in --out; --checkpoint: start from one
        model = _load(start)
        _check_channels(model, frames, args.data_path)
    else:
        try:
            predictor = PredictorConfig(
                model=s.model, in_channels=C, out_channels=C, d_model=s.d_model,
                state_size=s.state_size, n_layers=s.n_layers, kernel_bc=s.kernel_bc,
                dt_min=s.dt_min, dt_max=s.dt_max,
            )  # fmt: skip
            config = ForecasterConfig(
                predictor=predictor,
                mean=tuple(float(m) for m in mean),
                std=tuple(float(v) for v in std),
                grid=(H, W),
            )
            torch.manual_seed(args.seed)
            model = Forecaster(config)
        except (TypeError, ValueError) as e:
            raise UsageError(f"--set: {e}") from None
    x = model.normalise(torch.from_numpy(frames))
    with Run("convt3", s, out=args.runs) as run:  # a failed run is marked so and renamed
        phase("train")
        model.train()
        losses = train_next_frame(
            model.net, x[:, :-1], x[:, 1:], s.steps, s.batch, s.lr, args.seed, desc="train"
        )
        model.eval()
        phase("save")
        metrics = {
            "final_loss": float(np.mean(losses[-10:])),
            "sequences": N,
            "frames": T,
            "channels": C,
            "grid": f"{H}x{W}",
        }
        model.save_pretrained(args.out, metrics=metrics, data=[args.data_path])
        run.log(**metrics)
        record_checkpoint(run, args.out)
        run.finish(print_tables=False)
    print(
        f"trained {s.model} on {N} sequences of {T} frames, {C} channel(s), {H}x{W}: "
        f"final loss {metrics['final_loss']:.4g} (normalised MSE); checkpoint {args.out}"
    )
    return metrics


def _positive(flag: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or value < 1):
        raise UsageError(f"{flag}: expected an int >= 1, got {value}")


def rollout(args: VerbArgs) -> Path:
    """Predict ``--steps`` frames after every sequence of ``--data``; write them to ``--out``."""
    import torch

    from shared_core.data import write_arrays

    steps = args.extra["steps"]
    _positive("--steps", steps)
    assert args.out is not None and args.checkpoint is not None
    if args.out.suffix.lower() != ".npz":
        raise UsageError(f"--out: expected a .npz file name, got {args.out.name!r}")
    plan(["load", "rollout", "write"])
    phase("load")
    model = _load(args.checkpoint)
    context = read_sequences(args.data_path, args.extra.get("key"))
    _check_channels(model, context, args.data_path)
    phase("rollout")
    started = time.process_time()
    pred = model.rollout(torch.from_numpy(context), steps).numpy()
    cpu = time.process_time() - started
    phase("write")
    write_arrays(args.out, {"rollout": pred})
    frames = np.concatenate([context[0, :, 0], pred[0, :, 0]])  # (T0 + K, H, W)
    write_animation(args.out.with_suffix(".gif"), frames, first_predicted=context.shape[1])
    write_strip(args.out.with_suffix(".png"), frames, first_predicted=context.shape[1])
    print(
        f"rolled out {steps} steps after {context.shape[1]} context frames for "
        f"{context.shape[0]} sequences in {cpu:.2f} s CPU: {args.out} "
        f"(+ {args.out.with_suffix('.gif').name}, {args.out.with_suffix('.png').name})"
    )
    return args.out


def _per_step(model: Any, context: np.ndarray, truth: np.ndarray) -> dict[str, list[float]]:
    import torch

    pred = model.rollout(torch.from_numpy(context), truth.shape[1]).numpy()
    mse = ((pred - truth) ** 2).mean(axis=(0, 2, 3, 4))
    return {"mse": [float(v) for v in mse], "relative": [float(v) for v in mse / truth.var()]}


def evaluate(args: VerbArgs) -> dict[str, Any]:
    """Per-step rollout MSE of ``--checkpoint`` (and ``--baseline``) after ``--context`` frames."""
    T0, steps = args.extra["context"], args.extra.get("steps")
    _positive("--context", T0)
    _positive("--steps", steps)
    if args.checkpoint is None:
        raise UsageError("--checkpoint: evaluate needs a folder written by `convt3 train`")
    if args.out is not None and args.out.suffix.lower() != ".json":
        raise UsageError(f"--out: expected a .json file name, got {args.out.name!r}")
    plan(["load", "rollout", "write"])
    phase("load")
    models = {"model": _load(args.checkpoint)}
    if args.extra.get("baseline") is not None:
        models["baseline"] = _load(args.extra["baseline"], "--baseline")
    frames = read_sequences(args.data_path, args.extra.get("key"), min_frames=T0 + 1)
    for m in models.values():
        _check_channels(m, frames, args.data_path)
    steps = steps or frames.shape[1] - T0
    if T0 + steps > frames.shape[1]:
        raise UsageError(
            f"--steps: {steps} steps after {T0} context frames need {T0 + steps} frames; "
            f"{args.data_path} has {frames.shape[1]}"
        )
    context, truth = frames[:, :T0], frames[:, T0 : T0 + steps]
    phase("rollout")
    rows: dict[str, Any] = {}
    for role, m in models.items():
        rows[f"{role}: {m.config.predictor.model}"] = _per_step(m, context, truth)
    last = np.repeat(context[:, -1:], steps, axis=1)
    mse = ((last - truth) ** 2).mean(axis=(0, 2, 3, 4))
    rows["persistence"] = {"mse": mse.tolist(), "relative": (mse / truth.var()).tolist()}
    result = {
        "data": args.data_path.name,
        "sequences": frames.shape[0],
        "grid": f"{frames.shape[3]}x{frames.shape[4]}",
        "context": T0,
        "steps": steps,
        "models": rows,
    }
    horizons = sorted({1, min(10, steps), steps} | ({steps // 2} if steps > 2 else set()))
    print(f"rollout MSE / variance after {T0} context frames ({frames.shape[0]} sequences):")
    print("| model | " + " | ".join(f"step {h}" for h in horizons) + " |")
    print("| --- " * (len(horizons) + 1) + "|")
    for name, r in rows.items():
        print(f"| {name} | " + " | ".join(f"{r['relative'][h - 1]:.4f}" for h in horizons) + " |")
    phase("write")
    if args.out is not None:
        from shared_core.atomic import atomic_write_json

        atomic_write_json(args.out, result)
        print(f"per-step MSE written to {args.out}")
    return result


def _to_uint8(frames: np.ndarray) -> np.ndarray:
    """``(T, H, W)`` -> uint8 greyscale on the frames' common range, upscaled to >= 96 pixels."""
    lo, hi = float(frames.min()), float(frames.max())
    grey = np.round(255 * (frames - lo) / (hi - lo if hi > lo else 1.0)).astype(np.uint8)
    zoom = max(1, -(-96 // max(frames.shape[1:])))
    return grey.repeat(zoom, axis=1).repeat(zoom, axis=2)


def write_animation(path: Path, frames: np.ndarray, first_predicted: int) -> Path:
    """An animated GIF of `frames` ``(T, H, W)``; predicted frames get a white top-left mark."""
    from PIL import Image

    from shared_core.atomic import atomic_write

    grey = _to_uint8(frames)
    grey[first_predicted:, :4, :4] = 255
    images = [Image.fromarray(g) for g in grey]
    return atomic_write(
        path,
        lambda f: images[0].save(
            f, format="GIF", save_all=True, append_images=images[1:], duration=120, loop=0
        ),
    )


def write_strip(path: Path, frames: np.ndarray, first_predicted: int, most: int = 24) -> Path:
    """A PNG strip of `frames` ``(T, H, W)`` left to right (every k-th, at most `most`), a grey
    bar before the first predicted one."""
    from PIL import Image

    from shared_core.atomic import atomic_write

    every = -(-len(frames) // most)
    grey = _to_uint8(frames[::every])
    H = grey.shape[1]
    cut = -(-first_predicted // every)
    pieces = [*grey[:cut], np.full((H, 4), 128, np.uint8), *grey[cut:]]
    strip = np.concatenate(pieces, axis=1)
    image = Image.fromarray(strip)
    return atomic_write(path, lambda f: image.save(f, format="PNG"))
