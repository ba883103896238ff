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
    step: bool = False,
) -> None:
    """Raise a ValueError/TypeError naming the argument when shapes or values are wrong.

    Layout ``(batch, time, heads, dim)`` for a sequence, ``(batch, heads, dim)`` for one
    decoding `step`.
    """
    lead = "(batch, heads" if step else "(batch, time, heads"
    n_lead = 2 if step else 3
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("Lambda", Lambda)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name}: expected a floating-point tensor, got dtype {t.dtype}")
    if q.ndim != n_lead + 1:
        raise ValueError(f"q: expected shape {lead}, d_k), got {tuple(q.shape)}")
    if not step and q.shape[1] == 0:
        raise ValueError(f"q: expected at least one time step, got shape {tuple(q.shape)}")
    if k.shape != q.shape:
        raise ValueError(f"k: expected the shape of q {tuple(q.shape)}, got {tuple(k.shape)}")
    if v.ndim != n_lead + 1 or v.shape[:n_lead] != q.shape[:n_lead]:
        raise ValueError(
            f"v: expected shape {lead}, d_v) = {tuple(q.shape[:n_lead])} + (d_v,), "
            f"got {tuple(v.shape)}"
        )
    for name, t in (("g", g), ("beta", beta)):
        if t.shape != q.shape[:n_lead]:
            raise ValueError(
                f"{name}: expected shape {lead}) = {tuple(q.shape[:n_lead])}, got {tuple(t.shape)}"
            )
    heads, dk = q.shape[-2], q.shape[-1]
    if Lambda.shape != (heads, dk):
        raise ValueError(
            f"Lambda: expected shape (heads, d_k) = {(heads, dk)}, got {tuple(Lambda.shape)}"
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
    state: tuple[torch.Tensor, torch.Tensor] | None,
    batch: int,
    heads: int,
    dk: int,
    dv: int,
    name: str = "initial_state",
) -> None:
    """``(H, G)`` of shapes ``(batch, heads, d_k, d_k)`` and ``(batch, heads, d_v, d_k)``, finite."""
    if state is None:
        return
    if not (isinstance(state, tuple | list) and len(state) == 2):
        raise TypeError(f"{name}: expected a pair (H_0, G_0) of tensors or None")
    H0, G0 = state
    for part, t in (("H_0", H0), ("G_0", G0)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name}: {part} expected a floating-point torch.Tensor, got {t!r:.60}")
    if tuple(H0.shape) != (batch, heads, dk, dk):
        raise ValueError(
            f"{name}: H_0 expected shape {(batch, heads, dk, dk)}, got {tuple(H0.shape)}"
        )
    if tuple(G0.shape) != (batch, heads, dv, dk):
        raise ValueError(
            f"{name}: G_0 expected shape {(batch, heads, dv, dk)} (value head size d_v = {dv}), "
            f"got {tuple(G0.shape)}"
        )
    if not (bool(torch.isfinite(H0).all()) and bool(torch.isfinite(G0).all())):
        raise ValueError(f"{name}: contains NaN or infinite values")


def check_cg(max_cg_steps: int, cg_tol: float | None) -> None:
    """`max_cg_steps` a non-negative int, `cg_tol` None or a non-negative number."""
    if not isinstance(max_cg_steps, int) or isinstance(max_cg_steps, bool) or max_cg_steps < 0:
        raise ValueError(f"max_cg_steps: expected a non-negative int, got {max_cg_steps!r}")
    if cg_tol is not None and not (isinstance(cg_tol, int | float) and cg_tol >= 0):
        raise ValueError(f"cg_tol: expected a non-negative float or None, got {cg_tol!r}")


def check_heads(hidden_size: int, num_heads: int) -> None:
    """`hidden_size` and `num_heads` positive ints, `num_heads` a divisor of `hidden_size`."""
    for name, value in (("hidden_size", hidden_size), ("num_heads", num_heads)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
    if hidden_size % num_heads:
        raise ValueError(
            f"num_heads: expected a divisor of hidden_size={hidden_size}, got {num_heads} "
            f"({num_heads} heads of {hidden_size // num_heads} dims would silently use only "
            f"{hidden_size // num_heads * num_heads} of the {hidden_size} features)"
        )


def check_features(x: torch.Tensor, hidden_size: int, param_dtype: torch.dtype) -> None:
    """A layer's input: a finite floating ``(batch >= 1, time >= 1, hidden_size)`` tensor in the
    parameters' dtype (or under autocast)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x: expected a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(
            f"x: expected floating-point features (batch, time, {hidden_size}), got dtype "
            f"{x.dtype}; token ids go through an embedding first (MesaNetLM)"
        )
    if x.dtype != param_dtype and not torch.is_autocast_enabled(x.device.type):
        raise TypeError(
            f"x: dtype {x.dtype} differs from the layer's parameters ({param_dtype}); convert one "
            f"of them (layer.to({x.dtype}) or x.to({param_dtype})) or run under torch.autocast"
        )
    if x.ndim != 3 or x.shape[-1] != hidden_size:
        raise ValueError(f"x: expected shape (batch, time, {hidden_size}), got {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(
            f"x: expected at least one sequence and one time step, got shape {tuple(x.shape)}"
        )
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x: contains NaN or infinite values")


def compute_dtype(t: torch.Tensor) -> torch.dtype:
    """float64 stays float64; everything else (fp32, bf16, fp16) is solved in float32."""
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def upcast(x: torch.Tensor) -> torch.Tensor:
    """To the compute dtype of `compute_dtype` (float32, or float64 for float64 input)."""
    return x.to(compute_dtype(x))
