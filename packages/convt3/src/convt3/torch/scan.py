"""Diagonal linear recurrences ``z_k = a z_{k-1} + b_k`` over time in PyTorch.

`parallel_scan` is a Hillis-Steele (doubling) scan: after round r, ``z[k]`` holds the sum of
the last ``2^r`` terms ``a^j b_{k-j}``, so ``ceil(log2 T)`` rounds of whole-tensor operations
give the answer (log depth, ``T log T`` work; the time-invariant ``a`` only needs squaring).
`sequential_scan` is the one-step-at-a-time loop (the inference form, constant memory).
"""

from __future__ import annotations

import torch


def parallel_scan(a: torch.Tensor, b: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """All states of ``z_k = a * z_{k-1} + b_k`` (``z_{-1} = 0``) along `dim` of `b`.

    `a` broadcasts against one time slice of `b` (it is the same at every step).
    """
    T = b.shape[dim]
    z = b
    power = a.expand_as(b.select(dim, 0)).unsqueeze(dim)
    shift = 1
    while shift < T:
        head = z.narrow(dim, 0, shift)
        tail = z.narrow(dim, shift, T - shift) + power * z.narrow(dim, 0, T - shift)
        z = torch.cat([head, tail], dim)
        power = power * power
        shift *= 2
    return z


def sequential_scan(a: torch.Tensor, b: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """`parallel_scan` by a Python loop over time (the oracle and the step-by-step form)."""
    out = []
    z = torch.zeros_like(b.select(dim, 0))
    for k in range(b.shape[dim]):
        z = a * z + b.select(dim, k)
        out.append(z)
    return torch.stack(out, dim)
