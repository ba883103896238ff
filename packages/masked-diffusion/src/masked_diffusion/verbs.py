"""``train`` / ``sample`` / ``evaluate`` on a user's corpus or images, for any masked diffusion model.

One skeleton, parameterised by a `Method` (the model class, how to build it, its training loss,
its samplers and its evaluation), serves masked-diffusion's MDLM (`MDLM_METHOD`, bottom of this
module), pgm-diffusion and vadd, so the three packages take the same flags and files:

    train    --data corpus.txt --tokenizer char|DIR --seq-len N   (or --data images.npz|folder/
             --bits B [--size WxH]) --out DIR   -> a `shared_core.hub` checkpoint folder
    sample   --checkpoint DIR -n 16 --steps T --sampler NAME --out samples.txt|grid.png|rows.npz
    evaluate --checkpoint DIR --data valid.txt  -> NELBO, bits per char (text) or per dim (images)

Training goes through `shared_core.train.fit` (MDLM's optimiser: warm-up, then a constant
rate); its resumable state ``train_state.pt`` sits beside the checkpoint's files, so
``train --resume`` continues an interrupted (or finished, with more ``--set steps=``) run exactly.
This module imports torch only inside the verbs, so ``--help`` stays light.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from shared_core.cli import UsageError
from shared_core.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import torch

    from masked_diffusion.corpus import TokenSpec
    from shared_core.verbs import VerbArgs

TRAIN_STATE = "train_state.pt"
"""The resumable training state (`shared_core.train.fit`'s checkpoint) inside a checkpoint folder."""

Sampler = Callable[..., "torch.Tensor"]
"""``sampler(model, *, steps, batch_size, temperature, generator, x_init, device) -> (n, L)`` ids.

`x_init` is None or (n, L) ids with the mask id at the free positions (a text prompt). A sampler
that cannot start from a prompt raises `UsageError` when given one."""


@dataclass(frozen=True)
class Method:
    """What the verbs need to know about one package's model.

    model_class: a ``shared_core.hub.Pretrained`` model whose ``config.data`` is the
        `TokenSpec` and whose ``cfg.seq_len`` is the row length.
    build: ``build(settings, spec, seq_len) -> model`` (untrained).
    loss_fn: ``loss_fn(settings, model) -> loss_fn(model, batch)`` for `shared_core.train.fit`.
    samplers: name -> `Sampler`; the first is the default.
    evaluate: ``evaluate(model, rows (n, L), extra, seed) -> {"nelbo_nats": NELBOEstimate, ...}``
        (nats per token; other float entries are reported as they are).
    """

    package: str
    label: str
    model_class: type
    build: Callable[[Any, TokenSpec, int], torch.nn.Module]
    loss_fn: Callable[[Any, torch.nn.Module], Callable[..., Any]]
    samplers: Mapping[str, Sampler]
    evaluate: Callable[[Any, torch.Tensor, Mapping[str, Any], int], dict[str, float]]


@dataclass(frozen=True)
class TrainSettings:
    """MDLM's ``train`` settings (``--set key=value``); the defaults fit a corpus of a few hundred
    KB in minutes on one CPU thread."""

    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 25
    checkpoint_every: int = 100  # steps between saves of the resumable train_state.pt
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    schedule: str = "loglinear"  # MDLM's default; or "cosine"

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "checkpoint_every", "d_model", "n_heads", "n_layers"):
            check_positive(name, getattr(self, name))
        if not self.lr > 0:
            raise UsageError(f"lr: expected a positive learning rate, got {self.lr!r}")


def check_positive(name: str, value: object) -> int:
    """`value` if it is a positive int, else a `UsageError` naming the setting."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"{name}: expected a positive int, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# flags


def _size(text: str) -> tuple[int, int]:
    """argparse type of ``--size``: ``WxH`` or ``N`` (square)."""
    w, sep, h = text.lower().partition("x")
    try:
        size = (int(w), int(h) if sep else int(w))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT or N, got {text!r}") from None
    if min(size) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive sizes, got {text!r}")
    return size


def train_options(p: argparse.ArgumentParser) -> None:
    """``train``'s data flags (the same in the three packages)."""
    p.add_argument(
        "--tokenizer", default="char", metavar="char|DIR",
        help="text: 'char' (the sorted characters of --data) or a text checkpoint folder whose "
        "character vocabulary to reuse (default: char)",
    )  # fmt: skip
    p.add_argument("--seq-len", type=int, default=64, metavar="N",
                   help="text: characters per training window (default: 64)")  # fmt: skip
    p.add_argument("--bits", type=int, default=1, metavar="B",
                   help="images: bit depth of a pixel token, 1 = binarised (default: 1)")  # fmt: skip
    p.add_argument("--size", type=_size, default=None, metavar="WxH",
                   help="image folder: resize every image to WxH (needed when sizes differ)")  # fmt: skip


def sample_options(samplers: tuple[str, ...]) -> Callable[[argparse.ArgumentParser], None]:
    """``sample``'s flags; `samplers` lists the method's sampler names (the first is the default)."""

    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("-n", "--num", type=int, default=16, metavar="N",
                       help="how many samples (default: 16)")  # fmt: skip
        p.add_argument("--steps", type=int, default=64, metavar="T",
                       help="denoising steps (network calls) per sample (default: 64)")  # fmt: skip
        p.add_argument("--sampler", choices=samplers, default=samplers[0],
                       help=f"default: {samplers[0]}")  # fmt: skip
        p.add_argument("--temperature", type=float, default=1.0,
                       help="softmax temperature of the token draws (default: 1)")  # fmt: skip
        p.add_argument("--prompt", default=None, metavar="TEXT",
                       help="text models: every sample starts with TEXT (kept fixed)")  # fmt: skip

    return add


def evaluate_options(p: argparse.ArgumentParser) -> None:
    """``evaluate``'s Monte-Carlo budget."""
    p.add_argument("--samples", type=int, default=4, metavar="K",
                   help="(time, mask) draws per row of the NELBO estimate (default: 4)")  # fmt: skip


# ---------------------------------------------------------------------------------------------
# data and checkpoints


def is_image_data(path: Path) -> bool:
    """A folder or a .npy/.npz file is image data; anything else is a text corpus."""
    return path.is_dir() or path.suffix.lower() in (".npy", ".npz")


def training_rows(args: VerbArgs) -> tuple[TokenSpec, np.ndarray]:
    """(spec, rows (n, L)) of ``--data`` for a model trained from scratch."""
    from masked_diffusion.corpus import (
        TokenSpec,
        encode_text,
        quantise,
        read_pixels,
        spec_from_text,
        text_windows,
    )

    path, extra = args.data_path, args.extra
    if is_image_data(path):
        bits = extra["bits"]
        if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 8:
            raise UsageError(f"--bits: expected an int in [1, 8], got {bits!r}")
        pixels = read_pixels(path, extra["size"], args.skip_invalid)
        spec = TokenSpec("image", height=pixels.shape[1], width=pixels.shape[2], bits=bits)
        return spec, quantise(pixels, bits)
    if extra["size"] is not None:
        raise UsageError(f"--size: {path.name} is a text corpus; --size is for image folders")
    seq_len = check_positive("--seq-len", extra["seq_len"])
    spec, text = spec_from_text(path, extra["tokenizer"])
    return spec, text_windows(encode_text(text, spec.alphabet, str(path)), seq_len, str(path))


def load_model(method: Method, folder: Path, device: str = "cpu") -> Any:
    """``method.model_class.from_pretrained(folder)`` on `device`; a folder of another package or
    class, a newer version or a corrupt file is one `UsageError` naming the folder."""
    try:
        return cast(Any, method.model_class).from_pretrained(folder, map_location=device)
    except ValueError as e:
        raise UsageError(f"--checkpoint: {e}") from None


def _rows_tensor(rows: np.ndarray) -> torch.Tensor:
    import torch

    return torch.from_numpy(rows).long()


# ---------------------------------------------------------------------------------------------
# the verbs


def run_train(method: Method, args: VerbArgs) -> int:
    """``train``: fit `method`'s model on ``--data``; write the checkpoint folder ``--out``."""
    from masked_diffusion.corpus import rows_for
    from masked_diffusion.data import row_batches
    from masked_diffusion.loss import mdlm_train_config
    from shared_core.device import seed_everything
    from shared_core.distributed import init_distributed
    from shared_core.progress import phase, plan
    from shared_core.report import Run
    from shared_core.train import fit
    from shared_core.verbs import record_checkpoint

    settings = args.config
    out = args.out
    assert out is not None  # train_command requires --out
    state = out / TRAIN_STATE
    if args.resume and not state.is_file():
        raise UsageError(f"--resume: {out} holds no {TRAIN_STATE} to continue from")
    plan(["read data", f"train {method.label}", "save"], 0.1 * settings.steps)
    phase("read data")
    seed_everything(args.seed)
    if args.checkpoint is not None:
        model = load_model(method, args.checkpoint)
        spec = model.config.data
        rows = rows_for(spec, args.data_path, model.cfg.seq_len, args.skip_invalid)
    else:
        spec, rows = training_rows(args)
        model = method.build(settings, spec, rows.shape[1])
    data = _rows_tensor(rows)
    print(
        f"{method.label}: {data.shape[0]} rows of {data.shape[1]} tokens "
        f"(vocabulary {spec.vocab_size}, {spec.kind}); {settings.steps} steps",
        flush=True,
    )
    report = Run(method.package, asdict(settings), out=args.runs)
    phase(f"train {method.label}")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    train_config = mdlm_train_config(
        settings.steps, lr=settings.lr, warmup=settings.warmup,
        checkpoint_every=settings.checkpoint_every,
    )  # fmt: skip
    result = fit(
        model, method.loss_fn(settings, model), row_batches(data, settings.batch_size, args.seed),
        train_config, checkpoint=state, resume=args.resume, desc=f"{method.label} train",
        info=init_distributed(args.device),
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    phase("save")
    tail = result.losses[-20:]
    final = float(sum(tail) / len(tail)) if tail else math.nan
    if not math.isfinite(final):
        report.fail("training diverged (non-finite loss)")
        raise FloatingPointError(f"{method.label}: training diverged (final loss {final})")
    metrics = {"final_train_loss_nats_per_token": final, "train_seconds": seconds,
               "steps": settings.steps, "rows": int(data.shape[0])}  # fmt: skip
    aside = out.parent / f".{out.name}.{TRAIN_STATE}"
    os.replace(state, aside)  # the checkpoint folder is replaced as a whole; the state rejoins it
    try:
        model.save_pretrained(out, metrics=metrics, data=[args.data_path])
    finally:
        os.replace(aside, out / TRAIN_STATE)
    report.log(**metrics)
    if result.losses:
        losses = result.losses
        report.plot(
            "train_loss", {f"{method.label} loss (nats/token)": (list(range(1, len(losses) + 1)), losses)},
            xlabel="step", ylabel="loss (nats/token)", logy=True,
        )  # fmt: skip
    record_checkpoint(report, out)
    report.finish(title=f"{method.package} train", print_tables=False)
    print(f"final train loss {final:.4f} nats/token ({seconds:.1f} s); checkpoint: {out}")
    return 0


def prompt_ids(spec: TokenSpec, prompt: str | None, n: int, seq_len: int) -> torch.Tensor | None:
    """(n, seq_len) start rows: the prompt's ids, then the mask id; None without a prompt."""
    import torch

    from masked_diffusion.corpus import encode_text

    if prompt is None:
        return None
    if spec.kind != "text":
        raise UsageError("--prompt: this checkpoint models images; a prompt is text")
    if not prompt or len(prompt) >= seq_len:
        raise UsageError(
            f"--prompt: expected 1 to {seq_len - 1} characters (the window is {seq_len}), "
            f"got {len(prompt)}"
        )
    try:
        ids = encode_text(prompt, spec.alphabet, "--prompt")
    except InputError as e:
        raise UsageError(str(e)) from None
    x = torch.full((n, seq_len), spec.vocab_size, dtype=torch.long)
    x[:, : len(ids)] = torch.from_numpy(ids)
    return x


def check_out(spec: TokenSpec, out: Path) -> None:
    """`UsageError` unless `out` is a file kind `write_samples` writes for `spec`'s data."""
    suffix = out.suffix.lower()
    if spec.kind == "text" and suffix != ".txt":
        raise UsageError(f"--out: a text model writes a .txt file, got {out.name!r}")
    if spec.kind == "image" and suffix not in (".png", ".npz"):
        raise UsageError(f"--out: an image model writes a .png grid or an .npz, got {out.name!r}")


def write_samples(spec: TokenSpec, rows: np.ndarray, out: Path) -> None:
    """Write sample rows (`check_out` first): text to ``.txt`` (a ``--- sample i ---`` line before
    each), images to ``.png`` (a grid) or ``.npz`` (``images`` (n, height, width) uint8 and
    ``tokens``)."""
    from masked_diffusion.corpus import decode_text, to_pixels
    from shared_core.atomic import atomic_write_text
    from shared_core.data import write_arrays

    check_out(spec, out)
    if spec.kind == "text":
        text = "".join(f"--- sample {i} ---\n{decode_text(spec, r)}\n" for i, r in enumerate(rows))
        atomic_write_text(out, text)
    elif out.suffix.lower() == ".npz":
        write_arrays(out, {"images": to_pixels(spec, rows), "tokens": rows})
    else:
        write_grid(to_pixels(spec, rows), out)


def write_grid(images: np.ndarray, out: Path, pad: int = 1) -> None:
    """A PNG grid (about square, 4x upscaled, grey padding) of uint8 images (n, height, width)."""
    import io

    import numpy as np

    from shared_core.atomic import atomic_write_bytes
    from shared_core.data import require_extra

    require_extra("shared-core", "images", "PIL", "writing a PNG grid", in_root=False)
    from PIL import Image

    n, h, w = images.shape
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    grid = np.full((rows * (h + pad) + pad, cols * (w + pad) + pad), 128, dtype=np.uint8)
    for i, image in enumerate(images):
        r, c = divmod(i, cols)
        grid[
            pad + r * (h + pad) : pad + r * (h + pad) + h,
            pad + c * (w + pad) : pad + c * (w + pad) + w,
        ] = image
    picture = Image.fromarray(grid, mode="L").resize(
        (grid.shape[1] * 4, grid.shape[0] * 4), Image.Resampling.NEAREST
    )
    buf = io.BytesIO()
    picture.save(buf, format="PNG")
    atomic_write_bytes(out, buf.getvalue())


def run_sample(method: Method, args: VerbArgs) -> int:
    """``sample``: draw ``-n`` rows from ``--checkpoint`` with ``--sampler``; write ``--out``."""
    import torch

    from shared_core.device import resolve_device
    from shared_core.progress import phase, plan

    extra = args.extra
    steps = check_positive("--steps", extra["steps"])
    n = check_positive("-n", extra["num"])
    if not extra["temperature"] > 0:
        raise UsageError(f"--temperature: expected > 0, got {extra['temperature']!r}")
    out = args.out
    assert out is not None  # sample_command requires --out
    plan(["load", f"sample {extra['sampler']}", "write"], None)
    phase("load")
    device = resolve_device(args.device)
    assert args.checkpoint is not None  # sample_command requires --checkpoint
    model = load_model(method, args.checkpoint, str(device))
    spec = model.config.data
    x_init = prompt_ids(spec, extra["prompt"], n, model.cfg.seq_len)
    check_out(spec, out)  # before sampling: a wrong --out costs nothing
    phase(f"sample {extra['sampler']}")
    g = torch.Generator(device=device).manual_seed(args.seed)
    t0 = time.perf_counter()
    rows = method.samplers[extra["sampler"]](
        model, steps=steps, batch_size=n, temperature=float(extra["temperature"]), generator=g,
        x_init=None if x_init is None else x_init.to(device), device=device,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    phase("write")
    write_samples(spec, rows.cpu().numpy(), out)
    print(f"{n} samples, {steps} steps, sampler {extra['sampler']}: {seconds:.2f} s; wrote {out}")
    return 0


def run_evaluate(method: Method, args: VerbArgs) -> int:
    """``evaluate``: NELBO of every ``--data`` file under ``--checkpoint`` (nats and bits per
    token); ``--out`` writes them as JSON."""
    from masked_diffusion.corpus import rows_for
    from shared_core.atomic import atomic_write_json
    from shared_core.progress import phase, plan

    if args.checkpoint is None:
        raise UsageError("--checkpoint: evaluate needs the folder written by train")
    check_positive("--samples", args.extra["samples"])
    plan(["load", "evaluate"], None)
    phase("load")
    model = load_model(method, args.checkpoint)
    spec = model.config.data
    phase("evaluate")
    results: dict[str, dict[str, float]] = {}
    for path in args.data:
        rows = _rows_tensor(rows_for(spec, path, model.cfg.seq_len, args.skip_invalid))
        numbers = method.evaluate(model, rows, args.extra, args.seed)
        nats = numbers.pop("nelbo_nats")
        stderr = float(getattr(nats, "stderr", math.nan))
        entry = {
            "rows": int(rows.shape[0]),
            "nelbo_nats_per_token": float(nats),
            "nelbo_nats_stderr": stderr,
            f"bits_per_{spec.unit}": float(nats) / math.log(2),
            **numbers,
        }
        results[str(path)] = entry
        line = ", ".join(
            f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in entry.items()
        )
        print(f"{path}: {line}")
    if args.out is not None:
        atomic_write_json(args.out, results)
        print(f"wrote {args.out}")
    return 0


# ---------------------------------------------------------------------------------------------
# MDLM


def _mdlm_build(settings: TrainSettings, spec: TokenSpec, seq_len: int) -> torch.nn.Module:
    from masked_diffusion.backbone import BackboneConfig
    from masked_diffusion.pretrained import MDLM, MDLMConfig

    image = spec.kind == "image"
    backbone = BackboneConfig(
        spec.vocab_size, seq_len, settings.d_model, settings.n_heads, settings.n_layers,
        grid=(spec.height, spec.width) if image else None, learned_positions=image,
    )  # fmt: skip
    return MDLM(MDLMConfig(backbone, spec, settings.schedule))


def _mdlm_loss_fn(settings: TrainSettings, model: torch.nn.Module) -> Callable[..., Any]:
    from masked_diffusion.loss import mdlm_loss_fn
    from masked_diffusion.schedule import get_schedule

    vocab_size = cast(Any, model).cfg.vocab_size
    return mdlm_loss_fn(get_schedule(settings.schedule), vocab_size)


def _mdlm_sampler(kind: str) -> Sampler:
    def sample(model: Any, **kw: Any) -> torch.Tensor:
        from masked_diffusion.sampling import ancestral_sample, confidence_sample
        from masked_diffusion.schedule import get_schedule

        common = {"vocab_size": model.cfg.vocab_size, "seq_len": model.cfg.seq_len, **kw}
        if kind == "ancestral":
            return ancestral_sample(model, schedule=get_schedule(model.config.schedule), **common)
        return confidence_sample(model, **common)

    return sample


def _mdlm_evaluate(
    model: Any, rows: torch.Tensor, extra: Mapping[str, Any], seed: int
) -> dict[str, float]:
    from masked_diffusion.loss import nelbo
    from masked_diffusion.schedule import get_schedule

    schedule = get_schedule(model.config.schedule)
    value = nelbo(
        model, rows, schedule, model.cfg.vocab_size, n_samples=extra["samples"], seed=seed
    )
    return {"nelbo_nats": value}


MDLM_SAMPLERS = ("ancestral", "confidence")
"""MDLM's samplers: ancestral (MDLM, the default) and MaskGIT greedy confidence decoding."""


@functools.cache
def mdlm_method() -> Method:
    """masked-diffusion's `Method`: the MDLM denoiser, its NELBO, its samplers."""
    from masked_diffusion.pretrained import MDLM

    return Method(
        package="masked-diffusion", label="MDLM", model_class=MDLM, build=_mdlm_build,
        loss_fn=_mdlm_loss_fn, samplers={k: _mdlm_sampler(k) for k in MDLM_SAMPLERS},
        evaluate=_mdlm_evaluate,
    )  # fmt: skip


def train(args: VerbArgs) -> int:
    """``masked-diffusion train``."""
    return run_train(mdlm_method(), args)


def sample(args: VerbArgs) -> int:
    """``masked-diffusion sample``."""
    return run_sample(mdlm_method(), args)


def evaluate(args: VerbArgs) -> int:
    """``masked-diffusion evaluate``."""
    return run_evaluate(mdlm_method(), args)
