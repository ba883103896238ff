"""Device, seed and thread handling for torch (seeds for JAX too), and the environment record for reports.

torch and JAX are imported inside the functions that need them, never at module import.
"""

from __future__ import annotations

import os
import platform
import random
import subprocess
import sys
from contextlib import contextmanager
from importlib import metadata
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterator

    import torch

DEVICE_ENV = "SHARED_CORE_DEVICE"
"""Environment variable that overrides ``"auto"`` (the nox ``cuda`` sessions set it)."""


def _auto_spec() -> str:
    return os.environ.get(DEVICE_ENV, "auto")


def resolve_device(spec: str = "auto") -> torch.device:
    """Turn ``"auto" | "cpu" | "cuda" | "cuda:N"`` into a `torch.device`.

    ``"auto"`` honours ``$SHARED_CORE_DEVICE`` and otherwise picks CUDA when present.
    Asking for CUDA where there is none raises a `ValueError` that says so.
    """
    import torch

    if not isinstance(spec, str):
        raise TypeError(
            f"device: expected a string such as 'auto', 'cpu' or 'cuda:0', got {spec!r}"
        )
    spec = spec.strip().lower()
    if spec == "auto":
        spec = _auto_spec().strip().lower()
        if spec == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if spec == "cpu":
        return torch.device("cpu")
    if spec == "cuda" or spec.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"device: {spec!r} was requested but CUDA is not available "
                "(torch.cuda.is_available() is False); use 'cpu' or 'auto'"
            )
        if spec == "cuda":
            return torch.device("cuda")
        index = spec.split(":", 1)[1]
        count = torch.cuda.device_count()
        if not index.isdigit() or int(index) >= count:
            raise ValueError(f"device: {spec!r} is not one of the {count} CUDA device(s) cuda:0..")
        return torch.device("cuda", int(index))
    raise ValueError(f"device: expected 'auto', 'cpu', 'cuda' or 'cuda:N', got {spec!r}")


def seed_everything(seed: int) -> Any:
    """Seed Python, NumPy and (if installed) torch; return a JAX PRNG key if JAX is installed.

    JAX is imported only when it is installed; otherwise the return value is ``None``.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if _installed("torch"):
        import torch

        torch.manual_seed(seed)
    if _installed("jax"):
        import jax

        return jax.random.key(seed)
    return None


def _installed(dist: str) -> bool:
    try:
        metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment(packages: tuple[str, ...] = ()) -> dict[str, Any]:
    """Versions, device and git commit, for the header of a run report.

    Reads torch/JAX versions from package metadata; imports torch only if it is already
    imported (so recording the environment never pulls a framework in).
    """
    names = ("numpy", "torch", "jax", "flax", "transformers", *packages)
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
        "git_commit": _git_commit(),
    }
    torch_mod = sys.modules.get("torch")
    if torch_mod is not None:
        cuda = torch_mod.cuda.is_available()
        env["cuda"] = cuda
        if cuda:
            env["gpu"] = torch_mod.cuda.get_device_name(0)
    return env


THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@contextmanager
def limit_threads(n: int) -> Iterator[int]:
    """Run the block with at most `n` threads in torch, BLAS and OpenMP; restore them after.

    Why: on a shared 2-core machine, torch with 2 intra-op threads ran 3-15x SLOWER than
    with 1 when another process kept the cores busy (threads spin-wait on each other), and
    results such as a training loss differ with the thread count. Every test, reproduce
    run and benchmark therefore pins its threads through this one helper and records `n`.

    Sets ``torch.set_num_threads`` (when torch is installed), the native BLAS/OpenMP pools
    through threadpoolctl, and ``OMP_NUM_THREADS`` & co. for child processes.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"threads: expected a positive int, got {n!r}")
    from threadpoolctl import threadpool_limits

    old_env = {k: os.environ.get(k) for k in THREAD_ENV_VARS}
    old_torch: int | None = None
    try:
        import torch
    except ImportError:  # torch is optional (or broken): pin the native pools only
        torch = None  # type: ignore[assignment]
    if torch is not None:
        old_torch = torch.get_num_threads()
        torch.set_num_threads(n)
    os.environ.update({k: str(n) for k in THREAD_ENV_VARS})
    try:
        with threadpool_limits(limits=n):
            yield n
    finally:
        if old_torch is not None:
            import torch

            torch.set_num_threads(old_torch)
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
