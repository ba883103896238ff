"""The CUDA path: flash-linear-attention's Triton Mesa kernels behind `mesa_chunk`'s API.

fla's ``chunk_mesa_net`` (fla-core 0.6.0, ``fla/ops/mesa_net/chunk.py``) computes the same
op as `mesa_layer.torch.chunk.mesa_chunk`; the argument mapping, checked against fla's
kernels and its naive reference (``fla/ops/mesa_net/naive.py``):

- ``q, k, v`` ``(B, T, H, K)``: same layout, no scaling of q (the layer L2-normalises q
  and k itself, so ``use_qk_l2norm_in_kernel=False``); fla needs ``d_v = d_k <= 128``.
- ``g`` ``(B, T, H)``: the same natural-log forget gate (fla rescales it by 1/ln 2 inside
  and uses ``exp2``); ``beta`` ``(B, T, H)`` the same input gate; ``Lambda`` ``(H, K)`` is
  fla's ``lamb``. Gates and Lambda are passed in float32, as fla recommends.
- States: our ``H`` (``k k^T``, symmetric) is fla's ``h_kk``; our ``G`` is stored
  ``value x key`` (``v k^T``), fla's ``h_kv`` ``key x value``: ``G = h_kv^T``. fla keeps
  them in float32 and wants the initial states in float32.
- ``cu_seqlens``: the same offsets, as a ``long`` tensor on the device plus a CPU copy.
- CG: ``max_CG_iteration`` fixed steps from ``x_0 = 0``, with fla's 1e-5 added to every
  denominator; no tolerance. fla's chunk length is fixed at 64, which does not change the
  result (only how the work is split).

Precision differs from the torch path: fla casts q and k to float16 and keeps the
chunk-start states in the keys' dtype (float16), so a float32 call carries float16
rounding (relative error ~1e-3 against the float64 reference instead of ~1e-7).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

import torch

BACKENDS = ("auto", "torch", "fla")
BACKEND_ENV = "MESA_LAYER_BACKEND"
FLA_MAX_HEAD_DIM = 128


def fla_installed() -> bool:
    """Whether flash-linear-attention (the ``fla`` extra) can be imported; imports nothing."""
    return importlib.util.find_spec("fla") is not None


def fla_kernel() -> Callable[..., Any]:
    """fla's ``chunk_mesa_net`` (imported on first use; the boundary the tests mock)."""
    from fla.ops.mesa_net import chunk_mesa_net

    return chunk_mesa_net  # type: ignore[no-any-return]


def fla_unsupported(
    q: torch.Tensor,
    v: torch.Tensor,
    cg_tol: float | None,
    custom_backward: bool,
    cg_start: str,
) -> str | None:
    """Why fla's kernel cannot run this call (None when it can)."""
    K, V = q.shape[-1], v.shape[-1]
    if K != V:
        return f"fla's kernel needs d_v == d_k, got d_k={K}, d_v={V}"
    if K > FLA_MAX_HEAD_DIM:
        return f"fla's kernel needs d_k <= {FLA_MAX_HEAD_DIM}, got {K}"
    if q.dtype == torch.float64:
        return "fla's kernel has no float64 path (it computes q, k in float16)"
    if cg_tol is not None:
        return f"fla's kernel runs fixed CG steps, no tolerance (got cg_tol={cg_tol})"
    if not custom_backward:
        return "custom_backward=False (autograd through CG) exists only in the torch path"
    if cg_start != "zero":
        return f"fla's kernel starts CG from zero (got cg_start={cg_start!r})"
    return None


def resolve_backend(
    backend: str | None,
    q: torch.Tensor,
    v: torch.Tensor,
    cg_tol: float | None,
    custom_backward: bool,
    cg_start: str,
) -> str:
    """``"torch"`` or ``"fla"`` for this call.

    `backend` None reads ``$MESA_LAYER_BACKEND`` (default ``"auto"``). ``"auto"``: fla on a
    CUDA tensor when the extra is installed and the call is supported, else torch.
    ``"torch"`` always runs ours; ``"fla"`` runs fla or raises, naming the reason.
    """
    source = "backend"
    if backend is None:
        backend, source = os.environ.get(BACKEND_ENV, "auto"), f"${BACKEND_ENV}"
    if backend not in BACKENDS:
        raise ValueError(f"{source}: expected one of {BACKENDS}, got {backend!r}")
    if backend == "torch":
        return "torch"
    reason = fla_unsupported(q, v, cg_tol, custom_backward, cg_start)
    if backend == "auto":
        return "fla" if q.is_cuda and reason is None and fla_installed() else "torch"
    if not fla_installed():
        raise ModuleNotFoundError(
            f"{source}='fla' needs flash-linear-attention: pip install 'mesa-layer[fla]'"
        )
    if reason is not None:
        raise ValueError(f"{source}='fla': {reason}")
    return "fla"


def mesa_chunk_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    Lambda: torch.Tensor,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None,
    max_cg_steps: int,
    cu_seqlens: torch.Tensor | None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """`mesa_chunk` (already checked) through fla's ``chunk_mesa_net``; the mapping above."""
    h_kk0 = h_kv0 = None
    if initial_state is not None:
        h_kk0 = initial_state[0].float().contiguous()
        h_kv0 = initial_state[1].float().transpose(-1, -2).contiguous()
    offsets = offsets_cpu = None
    if cu_seqlens is not None:
        offsets_cpu = cu_seqlens.to(device="cpu", dtype=torch.long)
        offsets = offsets_cpu.to(q.device)
    o, h_kk, h_kv = fla_kernel()(
        q,
        k,
        v,
        g.float(),
        beta.float(),
        Lambda.float(),
        h_kk_init=h_kk0,
        h_kv_init=h_kv0,
        output_final_state=True,
        max_CG_iteration=max_cg_steps,
        use_qk_l2norm_in_kernel=False,
        cu_seqlens=offsets,
        cu_seqlens_cpu=offsets_cpu,
    )
    return o.to(v.dtype), (h_kk, h_kv.transpose(-1, -2))


def fla_naive(op: str = "mesa_net") -> Any:
    """fla's pure-PyTorch reference ``fla/ops/<op>/naive.py`` as a module, loaded from its file
    so that neither ``fla`` nor Triton is imported (the benchmarks' and tests' peer).

    Raises `ModuleNotFoundError` naming the install when fla-core is absent (``name="fla"``);
    a dependency of naive.py that is missing (einops) raises its own, with that ``name``.
    """
    import importlib.util

    spec = importlib.util.find_spec("fla")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "flash-linear-attention's references are not installed: in the workspace they come "
            "with the test group (`uv sync --package mesa-layer --group test`); with pip "
            "`pip install fla-core`",
            name="fla",
        )
    path = os.path.join(os.path.dirname(spec.origin), "ops", op, "naive.py")
    file_spec = importlib.util.spec_from_file_location(f"fla_naive_{op}", path)
    assert file_spec is not None and file_spec.loader is not None
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    return module
