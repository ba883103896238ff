r"""The free-energy read: the mean and free-energy reads of every value channel in ONE prior call.

Lu & Yang (2026), the free-energy read. For a prior $p_t(i)$ over the causal support $i \le t$ and a
value channel $j$ with inverse temperature $\beta_j > 0$,

$$\mu_{tj} = \sum_i p_t(i)\, v_{ij}, \qquad
  F_{tj} = \frac{1}{\beta_j} \log \sum_i p_t(i)\, e^{\beta_j v_{ij}}
        = \max_{q \ll p_t} \Big( \mathbb{E}_{q}[v_{\cdot j}] - \tfrac{1}{\beta_j}
          \mathrm{KL}(q \,\|\, p_t) \Big),$$

the second form being the Gibbs variational principle: $F$ is the best value channel $j$
can read from any re-weighting $q$ of the prior, paid for by its divergence from the prior.
Hence $\mu \le F \le \max_{i: p_t(i) > 0} v_{ij}$, $F \to \mu$ as $\beta \to 0$, $F$ is
non-decreasing in $\beta$ and $F(v + c) = F(v) + c$.

One prior call. Both reads are linear in the values, so the prior reads the concatenation
$[V_c ;\ e^{\beta V_c - M}]$ once and $F = (\log z + M)/\beta$ with $z$ the second half of
the read. $V_c$ is $V$ clipped elementwise to $\pm\,\mathrm{cap}/\beta$ (cap = 40, as in the
public code) so that $|\beta V_c| \le$ cap; $\mu$ also reads $V_c$.

The shift $M$ (the paper's max trick). The public code takes a detached max over the WHOLE
sequence: exact in real arithmetic, but the output at position $t$ then depends on later
inputs through $M$ (in bfloat16 a single large future value moves $M$ to the cap and
changes, or underflows, every earlier read). Inside one prior call the exponentiated values
are indexed by the key $i$ only, so a shift that varies with the query $t$ (a per-query
prefix max) cannot be applied there, and a per-key shift would change the sum. We therefore
shift by the largest value any prefix max can take: because of the clip $\beta V_c \le$ cap,
so $M = \mathrm{cap}$ is an upper bound of the causal prefix max of every position. It
depends on no input (so causality holds exactly, in every dtype), it is exact in real
arithmetic like any shift, and every exponentiated entry lies in $[e^{-2\,\mathrm{cap}}, 1]
= [1.8 \cdot 10^{-35}, 1]$, inside the normal range of float32 and bfloat16 (float16 inputs
are read in float32, where that range fits). The log is taken in float32 or wider.
"""

from __future__ import annotations

import torch

from free_energy_mixer._checks import check_positive, check_same, check_tensor
from free_energy_mixer.priors import Prior

DEFAULT_CAP = 40.0  # |beta * V_c| <= cap (public code: value_logexp_cap = 40)


def clip_values(v: torch.Tensor, beta: torch.Tensor, cap: float = DEFAULT_CAP) -> torch.Tensor:
    """``V_c``: `v` ``(B, H, T, d_v)`` clipped elementwise to ``+-cap / beta`` (`beta` ``(H, d_v)``).

    The clip is part of the method (the public code's ``value_logexp_cap``): it bounds every
    value the prior reads, ``mu`` included, at ``cap / beta``, which is 20 at the initial beta
    (~1.95) but only 0.4 at beta = 100. A model whose values are large where beta is large
    reads clipped values; compare ``(v.abs() > cap / beta)`` to see how many.
    """
    if not isinstance(v, torch.Tensor) or v.ndim != 4:
        got = tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__
        raise ValueError(f"v: expected a tensor (batch, heads, time, d_v), got {got}")
    if not isinstance(beta, torch.Tensor) or beta.shape != (v.shape[1], v.shape[3]):
        got = tuple(beta.shape) if isinstance(beta, torch.Tensor) else type(beta).__name__
        raise ValueError(
            f"beta: expected shape (heads, d_v) = {(v.shape[1], v.shape[3])}, got {got}"
        )
    check_positive("cap", cap)
    limit = (cap / beta)[None, :, None, :].to(v.dtype)
    return torch.minimum(torch.maximum(v, -limit), limit)


def free_energy_read(
    prior: Prior,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor | float,
    *,
    cap: float = DEFAULT_CAP,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean read ``mu`` and the free-energy read ``F`` of every value channel.

    Args:
        prior: a normalised causal read ``prior(q, k, values) -> read`` (see `priors`).
        q, k: ``(B, H, T, d_k)``, passed to the prior unchanged.
        v: values ``(B, H, T, d_v)``.
        beta: inverse temperatures ``(H, d_v)``, > 0; a Python number or a 0-d tensor is
            one temperature for every channel.
        cap: ``|beta * V_c| <= cap`` after clipping (values beyond ``cap / beta`` are read as
            ``+-cap / beta``: see `clip_values`).

    Returns:
        ``(mu, F)``, each ``(B, H, T, d_v)`` in the dtype of `v`.
    """
    check_tensor("v", v, 4, "(batch, heads, time, d_v)")
    check_tensor("q", q, 4, "(batch, heads, time, d_k)")
    check_tensor("k", k, 4, "(batch, heads, time, d_k)")
    check_same("q", q, "v", v, "...")
    check_same("k", k, "q", q, "....")
    if isinstance(beta, int | float) and not isinstance(beta, bool):
        beta = torch.tensor(float(beta), dtype=v.dtype)
    if isinstance(beta, torch.Tensor) and beta.ndim == 0:
        beta = beta.expand(v.shape[1], v.shape[3])
    if not isinstance(beta, torch.Tensor) or beta.shape != (v.shape[1], v.shape[3]):
        got = tuple(beta.shape) if isinstance(beta, torch.Tensor) else type(beta).__name__
        raise ValueError(
            f"beta: expected shape (heads, d_v) = {(v.shape[1], v.shape[3])}, got {got}"
        )
    if not bool(torch.isfinite(beta).all()) or not bool((beta > 0).all()):
        raise ValueError(f"beta: expected finite inverse temperatures > 0, got min {beta.min()}")
    check_positive("cap", cap)
    if q.shape[:3] != v.shape[:3]:
        raise ValueError(
            f"q: shape {tuple(q.shape)} does not match v's {tuple(v.shape)} in (batch, heads, time)"
        )
    dtype = v.dtype
    if dtype == torch.float16:  # e^{-2 cap} underflows float16: read in float32
        q, k, v = q.float(), k.float(), v.float()
    b = beta.to(v.device)
    v_c = clip_values(v, b, cap)
    # the exponent in float32 or wider: beta v - cap rounded in bfloat16 would lose beta v
    work = torch.promote_types(v.dtype, torch.float32)
    bw = b.to(work)[None, :, None, :]
    shifted = torch.exp(bw * v_c.to(work) - cap).to(v.dtype)  # in [e^{-2cap}, 1]
    read = prior(q, k, torch.cat([v_c, shifted], dim=-1))
    if read.shape != (*v.shape[:3], 2 * v.shape[3]):
        raise ValueError(
            f"prior: expected a read of shape {(*v.shape[:3], 2 * v.shape[3])}, got {tuple(read.shape)}"
        )
    mu, z = read.split(v.shape[-1], dim=-1)
    log_z = torch.log(z.to(work).clamp_min(torch.finfo(work).tiny))  # z > 0 in exact arithmetic
    free = (log_z + cap) / bw
    return mu.to(dtype), free.to(dtype)


def combine(
    mu: torch.Tensor, free: torch.Tensor, lam: torch.Tensor, gate: torch.Tensor | None = None
) -> torch.Tensor:
    """``g * ((1 - lambda) mu + lambda F)``: the inner and outer levels of the two-level gate."""
    out = (1.0 - lam) * mu + lam * free
    return out if gate is None else gate * out
