"""The one training loop of the monorepo: every package trains through `fit`.

A package supplies three things: the model, ``batch_fn(step) -> batch`` and
``loss_fn(model, batch) -> loss`` (or ``(loss, {name: float})`` to log parts of it). A loss
that needs the step's learning rate declares a keyword ``lr`` (``loss_fn(model, batch, *, lr)``)
and `fit` passes it.

- **Exact resume.** The batch of a step is a pure function of the step (draw any
  randomness inside `batch_fn` from `step_generator`), and the checkpoint holds the model,
  optimiser, schedule, step and every RNG state, so a run interrupted and resumed ends at
  the same weights as an uninterrupted one.
- **Data parallel, world-size invariant.** Under ``torchrun`` each rank takes its share
  (`shard`) of the same global batch and DDP averages the gradients, so N processes take
  the same steps as one process on the whole batch (equal shards).
- **One schedule.** Linear warm-up over `warmup` steps, then cosine decay to
  ``min_lr_ratio * lr`` or a constant learning rate (`lr_factor`).
- **Gradient accumulation.** With ``grad_accum = K`` each step's (sharded) batch goes through
  the model in K micro-batches (`shard` again: rows ``i, i + K, ...``), each loss weighted by
  its share of the rows, and one optimiser step follows: the gradient of the whole batch with
  1/K of its activations in memory.
- AdamW with weight decay on matrices only (biases, norms, gains and 1-D parameters are
  not decayed; a parameter with ``_no_weight_decay = True`` is also exempt), gradient
  clipping, and optional autocast (``amp_dtype="bfloat16"`` or ``"float16"`` with a
  gradient scaler).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from shared_core.distributed import DistInfo

BatchFn = Callable[[int], Any]
"""``batch_fn(step) -> batch``: the WHOLE (global) batch of `step`, a pure function of it."""
LossFn = Callable[..., "torch.Tensor | tuple[torch.Tensor, Mapping[str, float]]"]
"""``loss_fn(model, batch) -> loss | (loss, parts)``; `model` may be DDP-wrapped. With a
keyword parameter ``lr`` it is called as ``loss_fn(model, batch, lr=lr_t)``, `lr_t` being the
first parameter group's rate at this step (after warm-up and decay)."""
Callback = Callable[[int, dict[str, float]], None]
"""``callback(step, record)`` after each step on rank 0; `step` counts steps done (1-based)."""

SCHEDULES = ("cosine", "constant")
AMP_DTYPES = ("bfloat16", "float16")


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings; each CLI option of a package maps to one field.

    The defaults are nanoGPT's AdamW at a small scale: ``betas = (0.9, 0.95)``, weight decay
    0.1 on matrices, clipping at 1.0, a short warm-up then cosine decay to zero.
    """

    steps: int = 200
    lr: float = 1e-3
    warmup: int = 0  # linear warm-up steps (0: start at `lr`)
    schedule: str = "cosine"  # "cosine" (to min_lr_ratio * lr at `steps`) or "constant"
    min_lr_ratio: float = 0.0
    weight_decay: float = 0.1  # on parameters with ndim >= 2 only
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0  # max global grad norm; 0 disables clipping
    amp_dtype: str | None = None  # autocast dtype: None, "bfloat16" or "float16"
    checkpoint_every: int = 0  # also save every N steps (a checkpoint is always written at the end)
    grad_accum: int = 1  # micro-batches per step: the same step, 1/grad_accum of the activations

    def __post_init__(self) -> None:
        for name in ("steps", "grad_accum"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        for name in ("warmup", "checkpoint_every"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{name}: expected a non-negative int, got {v!r}")
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr: expected a finite number > 0, got {self.lr!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule: expected one of {SCHEDULES}, got {self.schedule!r}")
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError(
                f"min_lr_ratio: expected a number in [0, 1], got {self.min_lr_ratio!r}"
            )
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay: expected >= 0, got {self.weight_decay!r}")
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"betas: expected two numbers in [0, 1), got {self.betas!r}")
        if not self.grad_clip >= 0:
            raise ValueError(f"grad_clip: expected >= 0 (0 disables), got {self.grad_clip!r}")
        if self.amp_dtype is not None and self.amp_dtype not in AMP_DTYPES:
            raise ValueError(
                f"amp_dtype: expected None or one of {AMP_DTYPES}, got {self.amp_dtype!r}"
            )


@dataclass
class FitResult:
    """What `fit` returns: per-step records (``loss``, ``lr``, logged parts) and the final step."""

    history: list[dict[str, float]] = field(default_factory=list)
    step: int = 0

    @property
    def losses(self) -> list[float]:
        """The training loss of every step recorded so far (averaged over ranks)."""
        return [r["loss"] for r in self.history]


def lr_factor(step: int, config: TrainConfig) -> float:
    """The multiplier of the base learning rate at `step` (0-based): warm-up, then decay.

    Warm-up is linear, ``(step + 1) / warmup``; the cosine then falls from 1 at the end of
    warm-up to `min_lr_ratio` at ``steps`` (and stays there).
    """
    if step < config.warmup:
        return (step + 1) / config.warmup
    if config.schedule == "constant":
        return 1.0
    frac = min(1.0, (step - config.warmup) / max(1, config.steps - config.warmup))
    lo = config.min_lr_ratio
    return lo + (1.0 - lo) * 0.5 * (1.0 + math.cos(math.pi * frac))


def decay_groups(
    model: torch.nn.Module, weight_decay: float, lr: float | None = None
) -> list[dict[str, Any]]:
    """AdamW parameter groups: decay on trainable matrices, none on 1-D parameters.

    `lr`, if given, is set on both groups (for a second, differently-paced part of a model).
    """
    decay: list[torch.nn.Parameter] = []
    plain: list[torch.nn.Parameter] = []
    for p in model.parameters():
        if not p.requires_grad:
            continue
        (plain if p.ndim < 2 or getattr(p, "_no_weight_decay", False) else decay).append(p)
    groups: list[dict[str, Any]] = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": plain, "weight_decay": 0.0},
    ]
    if lr is not None:
        for g in groups:
            g["lr"] = lr
    return [g for g in groups if g["params"]]


def step_generator(seed: int, step: int, device: Any = "cpu") -> torch.Generator:
    """A `torch.Generator` that is a pure function of ``(seed, step)``: randomness for a batch."""
    import torch

    return torch.Generator(device=device).manual_seed(seed * 1_000_003 + step)


def shard(batch: Any, rank: int, world_size: int) -> Any:
    """This rank's rows ``rank, rank + world, ...`` of every tensor/array/list in `batch`.

    Dicts, tuples and lists of such are sharded leaf by leaf along their first axis;
    scalars, strings and ``None`` are passed through. With one process it is the identity.
    """
    if world_size == 1:
        return batch
    import numpy as np
    import torch

    if isinstance(batch, (torch.Tensor, np.ndarray)):
        if batch.ndim == 0:
            return batch
        return batch[rank::world_size]
    if isinstance(batch, Mapping):
        return {k: shard(v, rank, world_size) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(shard(v, rank, world_size) for v in batch))
    if isinstance(batch, tuple):
        return tuple(shard(v, rank, world_size) for v in batch)
    if isinstance(batch, list):
        return batch[rank::world_size]
    return batch


def _rows(batch: Any) -> int:
    """The number of rows of a (nested) batch: the first axis of its first leaf with one."""
    if isinstance(batch, Mapping):
        batch = next(iter(batch.values()), None)
    elif isinstance(batch, tuple) and batch:
        batch = batch[0]
    shape = getattr(batch, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    return len(batch) if isinstance(batch, list) else 1


def to_device(batch: Any, device: Any) -> Any:
    """Move every tensor in a (nested) batch to `device`; other leaves are left as they are.

    An object with its own ``.to(device)`` (a torch_geometric ``Batch``, a transformers
    ``BatchEncoding``) is moved by that method.
    """
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if not isinstance(batch, (Mapping, tuple, list, str, bytes)) and callable(
        getattr(batch, "to", None)
    ):
        return batch.to(device)
    if isinstance(batch, Mapping):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def _accepts_lr(loss_fn: LossFn) -> bool:
    """Whether `loss_fn` takes the step's learning rate: a parameter named ``lr``."""
    try:
        params = inspect.signature(loss_fn).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False
    p = params.get("lr")
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def fit(
    model: torch.nn.Module,
    loss_fn: LossFn,
    batch_fn: BatchFn,
    config: TrainConfig,
    *,
    param_groups: Iterable[dict[str, Any]] | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool = True,
    stop_at: int | None = None,
    callback: Callback | None = None,
    desc: str = "train",
    show_progress: bool = True,
    device: str = "auto",
    info: DistInfo | None = None,
) -> FitResult:
    """Train `model` in place for ``config.steps`` steps and return the per-step records.

    Args:
        model: any `torch.nn.Module`; it is moved to the process's device (and wrapped in
            DDP under torchrun). It is left in ``eval()`` mode.
        loss_fn: ``loss_fn(model, batch)`` -> scalar loss, or ``(loss, parts)`` where `parts`
            maps names to floats logged beside the loss. If it has a parameter named ``lr``
            it gets the step's learning rate (the first group's) as ``lr=``.
        batch_fn: ``batch_fn(step)`` -> the global batch of `step` (tensors are moved to the
            device; every rank gets its `shard`). Must depend on `step` only.
        config: the `TrainConfig`.
        param_groups: optimiser groups (e.g. two learning rates); default `decay_groups`.
            A group's ``lr`` is its base rate; the schedule multiplies every group's rate.
        checkpoint: a file written at the end and every ``config.checkpoint_every`` steps;
            with `resume`, training continues from it when it exists.
        stop_at: stop after this many steps (a checkpoint is written): how tests interrupt.
        callback: ``callback(step, record)`` on rank 0 after each step.
        desc: the progress bar's label; name the phase (``"mdlm train"``).
        device: where to train (``"auto"``, ``"cpu"``, ``"cuda:N"``) when `info` is not given.
        info: the `DistInfo` from `init_distributed`; by default it is created here.
    """
    import torch

    from shared_core.checkpoint import load_checkpoint, save_checkpoint
    from shared_core.cli import progress
    from shared_core.distributed import all_reduce_mean, init_distributed, wrap_ddp

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
    if stop_at is not None and (not isinstance(stop_at, int) or stop_at < 0):
        raise ValueError(f"stop_at: expected a non-negative int or None, got {stop_at!r}")
    info = info or init_distributed(device)
    model.to(info.device)
    groups = list(param_groups) if param_groups is not None else None
    groups = groups if groups is not None else decay_groups(model, config.weight_decay)
    if not any(p.requires_grad for g in groups for p in g["params"]):
        raise ValueError("model: has no trainable parameter (requires_grad is False everywhere)")
    opt = torch.optim.AdamW(
        groups, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay
    )  # a group without its own weight_decay gets the config's, not AdamW's 0.01
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, config))
    use_scaler = config.amp_dtype == "float16"
    scaler = torch.amp.GradScaler(info.device.type, enabled=use_scaler)
    result = FitResult()
    start = 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if resume and ckpt is not None and ckpt.is_file():
        state = load_checkpoint(ckpt, model=model, optimizer=opt, scheduler=sched)
        start = int(state["step"])
        result.history = [dict(r) for r in state["extra"].get("history", [])]
    result.step = start
    ddp = wrap_ddp(model, info)
    wants_lr = _accepts_lr(loss_fn)
    end = config.steps if stop_at is None else min(stop_at, config.steps)
    amp = (
        torch.autocast(info.device.type, dtype=getattr(torch, config.amp_dtype))
        if config.amp_dtype is not None
        else None
    )

    def save(step: int) -> None:
        if ckpt is not None and info.is_main:
            extra = {"history": result.history}
            save_checkpoint(
                ckpt, model=model, optimizer=opt, scheduler=sched, step=step, extra=extra
            )

    model.train()
    bar = progress(
        range(start, end), desc=desc, total=end - start, enabled=show_progress and info.is_main
    )
    accum = config.grad_accum
    for step in bar:
        batch = to_device(shard(batch_fn(step), info.rank, info.world_size), info.device)
        kwargs = {"lr": float(sched.get_last_lr()[0])} if wants_lr else {}
        micro = [shard(batch, i, accum) for i in range(accum)] if accum > 1 else [batch]
        n = sum(_rows(b) for b in micro)
        if accum > 1 and min(_rows(b) for b in micro) < 1:
            raise ValueError(
                f"grad_accum: expected at most one micro-batch per row, got {accum} for a "
                f"batch of {n} rows on this process"
            )
        opt.zero_grad(set_to_none=True)
        loss = torch.zeros((), device=info.device)
        part_sums: dict[str, list[float]] = {}  # name -> [weighted sum, weight] over micro-batches
        for i, mb in enumerate(micro):
            weight = _rows(mb) / n
            # DDP averages gradients once per step: at the last micro-batch's backward
            sync = i == accum - 1 or not hasattr(ddp, "no_sync")
            with contextlib.nullcontext() if sync else ddp.no_sync():
                with amp if amp is not None else contextlib.nullcontext():
                    out = loss_fn(ddp, mb, **kwargs)
                mb_loss, mb_parts = out if isinstance(out, tuple) else (out, {})
                if not torch.isfinite(mb_loss.detach()):
                    raise FloatingPointError(
                        f"{desc}: loss is {mb_loss.item()} at step {step}; lower lr or check "
                        "the data"
                    )
                scaler.scale(mb_loss * weight).backward()  # type: ignore[no-untyped-call]
            loss = loss + mb_loss.detach().float() * weight
            for name, v in mb_parts.items():
                if math.isfinite(float(v)):  # a micro-batch without rows of a part logs NaN
                    acc = part_sums.setdefault(name, [0.0, 0.0])
                    acc[0] += float(v) * weight
                    acc[1] += weight
                else:
                    part_sums.setdefault(name, [0.0, 0.0])
        parts = {name: s / w if w > 0 else float("nan") for name, (s, w) in part_sums.items()}
        if config.grad_clip > 0:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        scaler.step(opt)
        scaler.update()
        record: dict[str, float] = {
            "loss": float(all_reduce_mean(loss.detach().float())),
            "lr": float(sched.get_last_lr()[0]),
        }
        record.update({k: float(v) for k, v in parts.items()})
        sched.step()
        result.history.append(record)
        result.step = step + 1
        if info.is_main:
            if result.step % 10 == 0 and hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{record['loss']:.4f}", refresh=False)
            if callback is not None:
                callback(result.step, record)
        every = config.checkpoint_every
        if every and result.step % every == 0 and result.step != end:
            save(result.step)
    if result.step > start or (ckpt is not None and not ckpt.exists()):
        save(result.step)
    model.eval()
    return result
