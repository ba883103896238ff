"""Input checks at the public boundary of the torch ops (clear errors, no silent broadcasting)."""

from __future__ import annotations

import torch


def check_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    Lambda: torch.Tensor,
) -> None:
    """Raise a ValueError/TypeError naming the argument when shapes or values are wrong."""
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("Lambda", Lambda)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name}: expected a floating-point tensor, got dtype {t.dtype}")
    if q.ndim != 4:
        raise ValueError(f"q: expected shape (batch, time, heads, d_k), got {tuple(q.shape)}")
    if k.shape != q.shape:
        raise ValueError(f"k: expected the shape of q {tuple(q.shape)}, got {tuple(k.shape)}")
    if v.ndim != 4 or v.shape[:3] != q.shape[:3]:
        raise ValueError(
            f"v: expected shape (batch, time, heads, d_v) = {tuple(q.shape[:3])} + (d_v,), "
            f"got {tuple(v.shape)}"
        )
    for name, t in (("g", g), ("beta", beta)):
        if t.shape != q.shape[:3]:
            raise ValueError(
                f"{name}: expected shape (batch, time, heads) = {tuple(q.shape[:3])}, "
                f"got {tuple(t.shape)}"
            )
    if Lambda.shape != (q.shape[2], q.shape[3]):
        raise ValueError(
            f"Lambda: expected shape (heads, d_k) = {(q.shape[2], q.shape[3])}, "
            f"got {tuple(Lambda.shape)}"
        )
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("Lambda", Lambda)):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name}: contains NaN or infinite values")
    if bool((g > 0).any()):
        raise ValueError("g: expected the log forget gate g = log(gamma) <= 0 everywhere")
    if bool((beta < 0).any()):
        raise ValueError("beta: expected the input gate beta >= 0 everywhere")
    if bool((Lambda <= 0).any()):
        raise ValueError(
            f"Lambda: expected every entry > 0 so that H + Lambda is SPD, got min {Lambda.min().item():.3g}"
        )


def check_state(
    state: tuple[torch.Tensor, torch.Tensor] | None, batch: int, heads: int, dk: int, dv: int
) -> None:
    if state is None:
        return
    if not (isinstance(state, tuple | list) and len(state) == 2):
        raise TypeError("initial_state: expected a pair (H_0, G_0) of tensors or None")
    H0, G0 = state
    if tuple(H0.shape) != (batch, heads, dk, dk):
        raise ValueError(
            f"initial_state: H_0 expected shape {(batch, heads, dk, dk)}, got {tuple(H0.shape)}"
        )
    if tuple(G0.shape) != (batch, heads, dv, dk):
        raise ValueError(
            f"initial_state: G_0 expected shape {(batch, heads, dv, dk)}, got {tuple(G0.shape)}"
        )
    if not (bool(torch.isfinite(H0).all()) and bool(torch.isfinite(G0).all())):
        raise ValueError("initial_state: contains NaN or infinite values")


def compute_dtype(t: torch.Tensor) -> torch.dtype:
    """float64 stays float64; everything else (fp32, bf16, fp16) is solved in float32."""
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def upcast(x: torch.Tensor) -> torch.Tensor:
    """To the compute dtype of `compute_dtype` (float32, or float64 for float64 input)."""
    return x.to(compute_dtype(x))
