"""Distributed start-up from torchrun's environment (gloo on CPU, nccl on CUDA).

Without torchrun's variables everything degrades to one process: `init_distributed`
returns rank 0 of 1 and the collectives are identities, so one training loop serves both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DistInfo:
    """Where this process stands: `rank` of `world_size`, its `local_rank` and torch `device`."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: Any = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}: expected an integer in the environment, got {raw!r}") from None


def init_distributed(device: str = "auto", backend: str | None = None) -> DistInfo:
    """Join the process group torchrun describes (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``).

    Picks nccl for CUDA and gloo for CPU unless `backend` is given; under CUDA each process
    takes ``cuda:<LOCAL_RANK>``. Without torchrun it returns a single-process `DistInfo`.
    """
    import torch
    import torch.distributed as dist

    from shared_core.device import resolve_device

    world = _env_int("WORLD_SIZE", 1)
    rank = _env_int("RANK", 0)
    local = _env_int("LOCAL_RANK", 0)
    dev = resolve_device(device)
    if dev.type == "cuda" and world > 1:
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend=backend or ("nccl" if dev.type == "cuda" else "gloo"))
    return DistInfo(rank=rank, world_size=world, local_rank=local, device=dev)


def is_main() -> bool:
    """True on rank 0, and in a plain single process."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    return _env_int("RANK", 0) == 0


def wrap_ddp(model: Any, info: DistInfo) -> Any:
    """Move `model` to the process's device and wrap it in DDP when there are several processes."""
    from torch.nn.parallel import DistributedDataParallel

    model = model.to(info.device)
    if not info.enabled:
        return model
    ids = [info.device.index] if info.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids)


def all_reduce_mean(value: Any) -> Any:
    """Average a tensor (or float) over all ranks; identity in a single process."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return value
    t = value.detach().clone() if isinstance(value, torch.Tensor) else torch.tensor(float(value))
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    t /= dist.get_world_size()
    return t if isinstance(value, torch.Tensor) else float(t)


def shutdown() -> None:
    """Leave the process group (no-op in a single process).

    All ranks meet at a barrier first, so no rank tears its group down while a peer is still
    inside the last collective.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
