"""The fused CPU attention-with-entropy kernel (C++, compiled on first use).

``csrc/attention_entropy.cpp`` is flash-style blocked attention that carries, beside each
query's running max ``m`` and sum ``Z``, the centred first moment ``A = sum_j e^{s_ij - m}
(s_ij - m)`` (the paper's Flash-Attention-Entropy, `toprovar.entropy`), so the entropy
``H = log Z - A / Z`` costs one multiply-add per score inside the exp loop. The block
products go through the BLAS that libtorch exports (``sgemm_`` / ``dgemm_``); the loop's
layout (query blocks, key blocks of 512) follows torch's own CPU flash attention
(``aten/src/ATen/native/cpu/FlashAttentionKernel.cpp``). It is compiled once per CPU type with
`torch.utils.cpp_extension.load` (``-O3 -march=native``; torch caches the build under
``TORCH_EXTENSIONS_DIR``, default ``~/.cache/torch_extensions``) and registered as
``torch.ops.toprovar_fused.attention_entropy``.

The pruned layers' variant, ``torch.ops.toprovar_fused.attention_entropy_masked`` (`masked`),
takes per-row query counts (the queries after them are padding: skipped, output 0) and a
per-row key mask (each row's allowed keys are gathered once per (row, head), so masked keys
cost nothing): a batch whose images keep different numbers of tokens stays in the fused
kernel and costs what its kept tokens cost. Both ops read strided views whose last
dimension is contiguous (heads split off a qkv projection, without a copy) and return the
output as the ``(B, H, N, D)`` view of a ``(B, N, H, D)`` tensor, so merging heads is free.

Where it cannot be built (no C++ compiler, a torch without those BLAS symbols, a build error)
`load` warns once and returns None, and `attention_with_entropy` keeps its torch path.
``TOPROVAR_FUSED=0`` in the environment turns the kernel off without trying to build it.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import platform
import warnings
from pathlib import Path
from typing import Any

import torch

SOURCE = Path(__file__).with_name("csrc") / "attention_entropy.cpp"
NAME = "toprovar_fused"
DTYPES = (torch.float32, torch.float64)

_state: dict[str, Any] = {}  # "op": the loaded op or None, "error": why not


def _build_name() -> str:
    """`NAME` plus a digest of this CPU's instruction-set flags: the build uses
    ``-march=native`` and torch's cache keys on name, sources and flags only, so a cache shared
    by two machines (an NFS home) would otherwise load a binary built for the other CPU."""
    cpu = platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        cpu += next((line for line in f if line.startswith(("flags", "Features"))), "")
    return f"{NAME}_{hashlib.sha1(cpu.encode()).hexdigest()[:10]}"


def enabled() -> bool:
    """False when ``TOPROVAR_FUSED`` is ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get("TOPROVAR_FUSED", "1").strip().lower() not in ("0", "false", "no", "off")


def load(warn: bool = True) -> Any | None:
    """The compiled op (``q, k, v, scale -> (out, entropy, lse)``), or None where it cannot be
    built; the first failure is remembered (and warned about once, if `warn`)."""
    if not enabled():
        return None  # checked on every call: the variable may change
    if "op" in _state:
        return _state["op"]
    try:
        from torch.utils.cpp_extension import load as _build

        _build(
            name=_build_name(),
            sources=[str(SOURCE)],
            extra_cflags=["-O3", "-march=native"],
            is_python_module=False,
            verbose=False,
        )
        op = torch.ops.toprovar_fused.attention_entropy
    except Exception as exc:  # any build or load failure: fall back
        _state["op"], _state["error"] = None, f"{type(exc).__name__}: {exc}".splitlines()[0]
        if warn:
            warnings.warn(
                "toprovar: the fused CPU attention-entropy kernel could not be built "
                f"({_state['error']}); using the torch path",
                RuntimeWarning,
                stacklevel=2,
            )
        return None
    _register_flops(op)
    _state["op"], _state["error"] = op, None
    return op


def cpu_flash_flops(
    query_shape: torch.Size,
    key_shape: torch.Size,
    value_shape: torch.Size,
    *args: object,
    out_shape: object = None,
    **kwargs: object,
) -> int:
    """FLOPs of one fused attention call: ``Q K^T`` and ``A V``, 2 FLOPs per multiply-add
    (``2 b h n_q n_k (d + d_v)``; a mask does not lower the count, as for the explicit paths)."""
    *batch, n_q, d = query_shape
    n_k, d_v = key_shape[-2], value_shape[-1]
    return 2 * math.prod(batch) * n_q * n_k * (d + d_v)


def masked_flops(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    q_len: torch.Tensor | None,
    key_mask: torch.Tensor | None,
    *args: object,
    out_val: object = None,
    **kwargs: object,
) -> int:
    """FLOPs of one `masked` call: ``2 (d + d_v)`` per head and computed (query, allowed key)
    pair, i.e. the padding and the masked keys count nothing (as they cost nothing)."""
    b, h, n_q, d = q.shape
    n_k, d_v = k.shape[2], v.shape[-1]
    queries = torch.full((b,), n_q) if q_len is None else q_len.clamp(max=n_q).cpu()
    keys = torch.full((b,), n_k) if key_mask is None else key_mask.sum(1).cpu()
    return 2 * h * (d + d_v) * int((queries.long() * keys.long()).sum())


def _register_flops(op: Any) -> None:
    """`count_macs` (torch's FLOP counter) counts the kernel as torch's fused attention:
    ``n_q n_k (d + d_v)`` MACs per head; the entropy adds no product, as in the paper's FAE."""
    from torch.utils.flop_counter import register_flop_formula

    with contextlib.suppress(RuntimeError):  # registered already (a second load)
        register_flop_formula(op)(cpu_flash_flops)
    with contextlib.suppress(RuntimeError):
        register_flop_formula(torch.ops.toprovar_fused.attention_entropy_masked, get_raw=True)(
            masked_flops
        )


def masked() -> Any | None:
    """The pruned layers' op (``q, k, v, scale, q_len, key_mask -> (out, entropy, lse)``; see
    the module docstring), or None where the kernel cannot be built or is turned off."""
    return None if load(warn=False) is None else torch.ops.toprovar_fused.attention_entropy_masked


def error() -> str | None:
    """Why the last `load` failed (None: it did not fail, or was not tried)."""
    return _state.get("error")


def applies(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> bool:
    """Whether the fused kernel can take these inputs: CPU, float32/float64, one dtype, no mask,
    no gradient wanted (the kernel has no backward)."""
    return (
        mask is None
        and not (
            torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
        )
        and q.device.type == "cpu"
        and q.dtype in DTYPES
        and q.dtype == k.dtype == v.dtype
        and k.device.type == "cpu"
        and v.device.type == "cpu"
    )
