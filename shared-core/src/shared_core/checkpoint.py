"""Checkpoints: model, optimiser, scheduler, step and RNG state in ONE safetensors file.

Tensors go into the safetensors body, everything else into its JSON metadata. The file
is written beside the target and renamed over it, so a crash never leaves half a
checkpoint. Loading restores the RNG states, so training resumes to the same result.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.atomic import atomic_path

_META_KEY = "shared_core"


def _flatten(obj: Any, prefix: str, tensors: dict[str, Any]) -> Any:
    """Replace every tensor in a nested dict/list by a reference ``{"__tensor__": key}``."""
    import torch

    if isinstance(obj, torch.Tensor):
        key = prefix.rstrip(".")
        tensors[key] = obj.detach().cpu().contiguous()
        return {"__tensor__": key}
    if isinstance(obj, np.ndarray):
        key = prefix.rstrip(".")
        arr = obj.astype(np.int64) if obj.dtype == np.uint32 else obj  # torch lacks uint32 ops
        tensors[key] = torch.from_numpy(np.ascontiguousarray(arr))
        return {"__ndarray__": key}
    if isinstance(obj, dict):
        if not all(isinstance(k, (str, int)) for k in obj):
            raise TypeError(f"checkpoint: dict keys must be str or int at {prefix!r}")
        return {
            "__dict__": [[k, _flatten(v, f"{prefix}{k}.", tensors)] for k, v in obj.items()],
        }
    if isinstance(obj, (list, tuple)):
        items = [_flatten(v, f"{prefix}{i}.", tensors) for i, v in enumerate(obj)]
        return {"__tuple__": items} if isinstance(obj, tuple) else items
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"checkpoint: cannot store a {type(obj).__name__} at {prefix!r}")


def _unflatten(obj: Any, tensors: dict[str, Any]) -> Any:
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]]
        if "__ndarray__" in obj:
            return tensors[obj["__ndarray__"]].numpy()
        if "__tuple__" in obj:
            return tuple(_unflatten(v, tensors) for v in obj["__tuple__"])
        return {k: _unflatten(v, tensors) for k, v in obj["__dict__"]}
    if isinstance(obj, list):
        return [_unflatten(v, tensors) for v in obj]
    return obj


def _rng_state() -> dict[str, Any]:
    """Python, NumPy and torch (CPU and every CUDA device) generator states."""
    import torch

    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    import torch

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state(
        (name, np.asarray(keys, dtype=np.uint32), int(pos), int(has_gauss), float(cached))
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(list(state["cuda"]))


def save_checkpoint(
    path: str | os.PathLike[str],
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    step: int = 0,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write model/optimiser/scheduler state, `step`, RNG states and `extra` atomically to `path`.

    `model` may be a DDP-wrapped module: its ``.module`` is saved, so the file loads anywhere.
    """
    from safetensors.torch import save_file

    module = getattr(model, "module", model)
    payload = {
        "step": int(step),
        "model": module.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "rng": _rng_state(),
        "extra": extra or {},
    }
    tensors: dict[str, Any] = {}
    tree = _flatten(payload, "", tensors)
    target = Path(path)
    with atomic_path(target) as tmp:
        save_file(tensors, str(tmp), metadata={_META_KEY: json.dumps(tree)})
    return target


def load_checkpoint(
    path: str | os.PathLike[str],
    *,
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    restore_rng: bool = True,
    map_location: str = "cpu",
) -> dict[str, Any]:
    """Load what `save_checkpoint` wrote into the given objects; return ``{"step", "extra"}``."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path: no checkpoint at {p}")
    try:
        with safe_open(str(p), framework="pt") as f:
            meta = f.metadata() or {}
        tensors = load_file(str(p), device=map_location)
    except Exception as e:  # safetensors raises its own error type for truncated/corrupt files
        raise ValueError(
            f"path: {p} is not a readable checkpoint ({type(e).__name__}: {e}); it is truncated "
            "or corrupt: delete it to start the run afresh, or point to an intact copy"
        ) from e
    if _META_KEY not in meta:
        raise ValueError(f"path: {p} is a safetensors file but not a shared_core checkpoint")
    payload = _unflatten(json.loads(meta[_META_KEY]), tensors)
    getattr(model, "module", model).load_state_dict(payload["model"])
    if optimizer is not None:
        if payload["optimizer"] is None:
            raise ValueError(f"optimizer: checkpoint {p} holds no optimiser state")
        optimizer.load_state_dict(payload["optimizer"])
    if scheduler is not None:
        if payload["scheduler"] is None:
            raise ValueError(f"scheduler: checkpoint {p} holds no scheduler state")
        scheduler.load_state_dict(payload["scheduler"])
    if restore_rng:
        _set_rng_state(payload["rng"])
    return {"step": payload["step"], "extra": payload["extra"]}
