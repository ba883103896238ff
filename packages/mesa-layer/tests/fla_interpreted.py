"""Run fla's real Triton Mesa kernels on the CPU under Triton's interpreter; print JSON errors.

Started by ``test_fla_path.py`` in a subprocess with ``TRITON_INTERPRET=1`` (the variable
must be set before Triton is imported). Three gaps of the interpreter are bridged here, in
this process only: the autotuner benchmarks its configs through a GPU driver (each config
gets the same dummy time instead, so the first runs); ``for i in range(n)`` inside a
kernel yields Python ints, on which fla calls ``.to(tl.int64)`` (an int subclass whose
``.to`` is the identity stands in); and ``tl.dot`` multiplies bfloat16 operands as their
raw uint16 bit patterns (Triton 3.9's interpreter stores bfloat16 as uint16), so
bfloat16 operands are widened exactly to float32 first, as a GPU's tensor cores do with
a float32 accumulator. Nothing else of the kernels' arithmetic is changed. ``fla``'s
top-level ``__init__`` (its layers and models, which import transformers: ~10 s) is not
run: an empty package module stands in, so only ``fla.ops``, ``fla.modules`` and
``fla.utils`` are loaded.

Each case compares ``mesa_chunk(..., backend="fla")`` with the float64 torch path
(converged CG, so the exact solve) and reports relative RMS errors
(`shared_core.testing.relative_rms` style: ``||a - b|| / ||b||``).
"""

from __future__ import annotations

import builtins
import json
import os
import sys

import numpy as np
import torch
import triton.language as tl
import triton.runtime.autotuner as autotuner
from triton.runtime import interpreter

sys.path.insert(0, os.path.dirname(__file__))
from conftest import make_inputs


class _Counter(int):
    def to(self, *args: object, **kwargs: object) -> _Counter:
        return self


def _range(*args: int) -> map:
    return map(_Counter, builtins.range(*args))


def _widen_bf16(h: interpreter.TensorHandle) -> interpreter.TensorHandle:
    if h.dtype != tl.bfloat16:
        return h
    bits = h.data.astype(np.uint32) << np.uint32(16)
    return interpreter.TensorHandle(bits.view(np.float32), tl.float32)


def _patch_interpreter() -> None:
    import importlib.metadata
    import importlib.util
    import types

    spec = importlib.util.find_spec("fla")
    assert spec is not None and spec.submodule_search_locations is not None
    package = types.ModuleType("fla")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__version__ = importlib.metadata.version("fla-core")  # type: ignore[attr-defined]
    sys.modules["fla"] = package
    autotuner.Autotuner._bench = lambda self, *a, config, **k: [0.0, 0.0, 0.0]
    create_dot = interpreter.InterpreterBuilder.create_dot

    def dot(self, a, b, d, *args):  # type: ignore[no-untyped-def]
        return create_dot(self, _widen_bf16(a), _widen_bf16(b), d, *args)

    interpreter.InterpreterBuilder.create_dot = dot
    import fla.ops.mesa_net  # noqa: F401  (loads every module the kernels live in)

    for name, module in list(sys.modules.items()):
        if name.startswith("fla.ops") and module is not None:
            module.range = _range  # type: ignore[attr-defined]


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm() / b.norm())


def main() -> None:
    _patch_interpreter()
    from mesa_layer.torch import mesa_chunk

    out: dict[str, float] = {}
    torch.manual_seed(0)
    # T = 80: two chunks of fla's fixed 64 plus a partial one's worth of masking
    B, T, H, K = 2, 80, 2, 16
    ref = make_inputs(B=B, T=T, H=H, K=K, V=K, gate_bias=2.0)
    H0 = torch.randn(B, H, K, 4, dtype=torch.float64)
    H0 = H0 @ H0.transpose(-1, -2) / 4
    G0 = torch.randn(B, H, K, K, dtype=torch.float64)
    for dtype in (torch.float32, torch.bfloat16):
        name = str(dtype).split(".")[-1]
        xs = [x.to(dtype if i < 3 else torch.float32) for i, x in enumerate(ref)]
        state = (H0.float(), G0.float())
        o, (HT, GT) = mesa_chunk(*xs, initial_state=state, max_cg_steps=30, backend="fla")
        o_ref, (HT_ref, GT_ref) = mesa_chunk(*ref, initial_state=(H0, G0), max_cg_steps=40)
        out[f"o {name}"], out[f"H_T {name}"], out[f"G_T {name}"] = (
            rel(o, o_ref),
            rel(HT, HT_ref),
            rel(GT, GT_ref),
        )
        out[f"o dtype is v dtype {name}"] = float(o.dtype == dtype)
    # gradients, float32, with an initial state
    xs = [x.float().requires_grad_() for x in ref]
    st = [H0.float().requires_grad_(), G0.float().requires_grad_()]
    w = torch.randn(B, T, H, K)
    o, _ = mesa_chunk(*xs, initial_state=tuple(st), max_cg_steps=30, backend="fla")
    grads = torch.autograd.grad((o * w).sum(), xs + st)
    xs64 = [x.detach().double().requires_grad_() for x in xs]
    st64 = [s.detach().double().requires_grad_() for s in st]
    o64, _ = mesa_chunk(*xs64, initial_state=tuple(st64), max_cg_steps=40)
    grads64 = torch.autograd.grad((o64 * w.double()).sum(), xs64 + st64)
    for n, a, b in zip(
        ("q", "k", "v", "g", "beta", "Lambda", "H_0", "G_0"), grads, grads64, strict=True
    ):
        out[f"d{n}"] = rel(a, b)
    # packed sequences: cu_seqlens, one initial state per sequence
    cu = torch.tensor([0, 30, 80])
    packed = [torch.cat([x[0:1, :30], x[1:2, :50]], 1) for x in ref[:5]]
    xs = [x.float() for x in packed] + [ref[5].float()]
    o, (HT, GT) = mesa_chunk(
        *xs, initial_state=(H0.float(), G0.float()), cu_seqlens=cu, backend="fla"
    )
    o_ref, (HT_ref, GT_ref) = mesa_chunk(
        *packed, ref[5], initial_state=(H0, G0), cu_seqlens=cu, max_cg_steps=40
    )
    out["o cu_seqlens"], out["H_T cu_seqlens"], out["G_T cu_seqlens"] = (
        rel(o, o_ref),
        rel(HT, HT_ref),
        rel(GT, GT_ref),
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
