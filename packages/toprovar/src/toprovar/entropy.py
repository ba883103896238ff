"""Attention entropy computed inside a blockwise (flash-style) attention, and the statistics
ToProVAR derives from it.

Flash-Attention-Entropy. For query i with scores ``s_ij`` the entropy of its softmax row is

    H_i = -sum_j a_ij log a_ij = log Z_i - (sum_j e^{s_ij} s_ij) / Z_i,   Z_i = sum_j e^{s_ij}.

Keys are visited block by block keeping, per query, the running max ``m``, the rescaled
partition sum ``Z = sum_j e^{s_ij - m}``, the rescaled first moment ``A = sum_j e^{s_ij - m}
(s_ij - m)`` and the output accumulator, exactly as flash attention keeps ``Z`` and the
output. When a block raises the max from ``m`` to ``m'`` every accumulator is multiplied by
``alpha = e^{m - m'}`` and A also shifts by ``(m - m') Z`` (its centre moved). At the end
``H = log Z - A / Z``; centring the moment on the running max avoids the cancellation of
``m + log Z - sum a s`` in low precision. The entropy costs two reductions per block on top of
attention (no extra matmul, nothing of size n_q x n_k kept).

The scale, layer and token statistics (paper, Sec. "tri-dimensional" analysis):

- scale: ``rho_s`` = share of tokens of scale s with entropy below the scale's mean; pruning
  starts at ``D = min{s : rho_s >= tau}``;
- layer: singular values of the layer's entropy map at a scale, ``varrho = sigma_1 /
  sigma_2``, score ``R = exp(-beta (varrho - 1))`` (R -> 1: "detail" layer, prunable; R -> 0:
  "global" layer, kept);
- token: ``q_i = phi(s) R Hhat_i`` with ``phi(s) = s / S_max`` and ``P_keep = 1`` before D,
  else ``1 - clip(a_min + (a_max - a_min) q_i, 0, 1)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from toprovar import _checks, fused

METHODS = ("sdpa", "chunked", "blockwise")


def attention_with_entropy(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    block_size: int = 128,
    need_entropy: bool = True,
    method: str = "sdpa",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Softmax attention with each query's attention entropy.

    ``method="blockwise"`` is the paper's Flash-Attention-Entropy: keys in blocks of
    `block_size`, the entropy accumulated online (module docstring). ``method="sdpa"``
    (default, the fastest): without the entropy, `F.scaled_dot_product_attention`; with it,
    on CPU (float32/float64, no mask), the same Flash-Attention-Entropy as one fused C++
    kernel (`toprovar.fused`, compiled on first use: 1.0x SDPA's time, Benchmark in the
    README); where that kernel cannot run or be built, torch's fused flash attention for the
    output and each row's log-sum-exp ``L_i``, then one cache-blocked pass over the scores for
    ``sum_j a_ij s_ij = sum_j e^{s_ij - L_i} s_ij``, and ``H_i = L_i - sum_j a_ij s_ij``;
    elsewhere (CUDA, a torch without that private op, mixed dtypes, ``dim_v != dim``) it is
    ``"chunked"``: queries in chunks of `block_size`, one softmax per chunk and one product
    with ``[V, K]``, which gives the output and ``sum_j a_ij k_j``, hence ``sum_j a_ij s_ij =
    q_i . (sum_j a_ij k_j) / sqrt(d)`` and ``H_i = log Z_i + m_i - sum_j a_ij s_ij``.

    Args:
        q: ``(batch, heads, n_q, dim)``; k: ``(batch, heads, n_k, dim)``; v: ``(batch,
            heads, n_k, dim_v)``. Scores are ``q k^T / sqrt(dim)``.
        mask: optional boolean, broadcastable to ``(batch, heads, n_q, n_k)``, True where
            query i may attend key j; every query needs at least one allowed key.
        block_size: keys per block (blockwise) or queries per chunk (chunked; unused by the
            fused CPU path); any positive int, the result does not depend on it up to rounding.
        need_entropy: compute H (False: plain attention, H is None).
        method: ``"sdpa"``, ``"chunked"`` or ``"blockwise"`` (`METHODS`).

    Returns:
        ``(out (batch, heads, n_q, dim_v) in q's dtype, H (batch, heads, n_q) float32 or
        float64, in nats)``. Statistics are accumulated in float32 (float64 for float64 input).
    """
    _checks.tensor("q", q, 4)
    _checks.tensor("k", k, 4)
    _checks.tensor("v", v, 4)
    for name, x in (("q", q), ("k", k), ("v", v)):
        _checks.floating(name, x)
        _checks.finite(name, x)
    if k.shape[:3] != v.shape[:3] or q.shape[:2] != k.shape[:2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            "q, k, v: expected (batch, heads, n_q, dim), (batch, heads, n_k, dim), "
            f"(batch, heads, n_k, dim_v), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if 0 in q.shape or 0 in k.shape or 0 in v.shape:
        raise ValueError(
            "q, k, v: expected non-empty tensors (batch, heads, n_q, n_k, dim >= 1), got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    _checks.positive_int("block_size", block_size)
    n_k = k.shape[2]
    if mask is not None:
        _checks.tensor("mask", mask)
        if mask.dtype != torch.bool:
            raise TypeError(f"mask: expected a bool tensor, got dtype {mask.dtype}")
        try:
            full = torch.broadcast_shapes(mask.shape, (*q.shape[:3], n_k))
        except RuntimeError:
            full = ()
        if full != (*q.shape[:3], n_k):
            raise ValueError(
                f"mask: expected a shape broadcastable to {(*q.shape[:3], n_k)}, "
                f"got {tuple(mask.shape)}"
            )
        if not bool(mask.any(-1).all()):
            raise ValueError(
                "mask: every query needs at least one allowed key (a row is all False)"
            )
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    return attend(q, k, v, mask, block_size, need_entropy, method)


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    block_size: int,
    need_entropy: bool,
    method: str,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`attention_with_entropy` without its input checks (the generation's inner loop)."""
    if method in ("sdpa", "chunked"):
        if method == "sdpa" and need_entropy and fused.applies(q, k, v, mask):
            op = fused.load()
            if op is not None:
                out, ent, _ = op(q, k, v, 1.0 / math.sqrt(q.shape[-1]))
                return out, ent
        if method == "sdpa" and need_entropy and _lse_path_applies(q, k, v):
            return _lse_entropy(q, k, v, mask)
        return _sdpa_entropy(q, k, v, mask, block_size, need_entropy)
    n_k = k.shape[2]
    acc_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
    scale = 1.0 / math.sqrt(q.shape[-1])
    shape = q.shape[:3]
    m = torch.full(shape, -math.inf, dtype=acc_dtype, device=q.device)
    z = torch.zeros(shape, dtype=acc_dtype, device=q.device)
    a = torch.zeros(shape, dtype=acc_dtype, device=q.device) if need_entropy else None
    out = torch.zeros((*shape, v.shape[-1]), dtype=acc_dtype, device=q.device)
    for j0 in range(0, n_k, block_size):
        j1 = min(n_k, j0 + block_size)
        s = (q @ k[:, :, j0:j1].transpose(-1, -2)).to(acc_dtype) * scale
        if mask is not None:
            s = s.masked_fill(~mask[..., j0:j1], -math.inf)
        m_new = torch.maximum(m, s.amax(-1))
        m_safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        alpha = torch.exp(m - m_safe)  # 0 while nothing was seen (m = -inf)
        p = torch.exp(s - m_safe[..., None])  # 0 at masked keys
        if a is not None:
            shift = torch.where(torch.isfinite(m), m - m_safe, torch.zeros_like(m))
            centred = p * (s - m_safe[..., None])
            if mask is not None:  # 0 * -inf at masked keys: those terms are 0
                centred = torch.where(p > 0, centred, torch.zeros_like(p))
            a = alpha * (a + shift * z) + centred.sum(-1)
        z = alpha * z + p.sum(-1)
        out = alpha[..., None] * out + p.to(v.dtype) @ v[:, :, j0:j1]
        m = m_new
    result = (out / z[..., None]).to(q.dtype)
    entropy = None if a is None else torch.log(z) - a / z
    return result, entropy


# CPU flash attention that also returns each row's log-sum-exp (private; None where missing)
_FLASH_LSE = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_LSE_DTYPES = (torch.float64, torch.float32, torch.bfloat16)
_LSE_CHUNK = 1 << 16  # scores per second-pass chunk: S and exp(S) (2 x 256 KiB) stay in L2


def _lse_path_applies(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether `_lse_entropy` can run: CPU, the private op present, one dtype, equal head sizes."""
    return (
        _FLASH_LSE is not None
        and q.device.type == "cpu"
        and q.dtype in _LSE_DTYPES
        and q.dtype == k.dtype == v.dtype
        and q.shape[-1] == v.shape[-1]
        and q.numel() > 0  # the op dies (SIGFPE) on zero queries
        and k.numel() > 0
    )


def _lse_entropy(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Output and log-sum-exp ``L_i`` from torch's fused CPU flash attention, then one pass
    over the scores for ``sum_j a_ij s_ij = sum_j e^{s_ij - L_i} s_ij``; ``H_i = L_i - that``.

    The second pass recomputes ``S = Q K^T / sqrt(d)`` in cache-sized chunks (one ``n_q n_k
    d`` product, one exp, one product-sum per score): nothing of size ``n_q x n_k`` is kept.
    """
    assert _FLASH_LSE is not None
    scale = 1.0 / math.sqrt(q.shape[-1])
    bias = None
    if mask is not None:  # the op takes an additive mask of q's dtype
        bias = torch.zeros(mask.shape, dtype=q.dtype).masked_fill_(~mask, -math.inf)
    out, lse = _FLASH_LSE(q, k, v, 0.0, False, attn_mask=bias, scale=scale)[:2]
    acc = lse.dtype  # float64 for float64 input, else float32
    b, h, n_q, d = q.shape
    n_k = k.shape[2]
    qs = (q.to(acc) * scale).reshape(b * h, n_q, d)
    kt = k.to(acc).reshape(b * h, n_k, d).transpose(1, 2)
    neg_lse = -lse.reshape(b * h, n_q, 1)
    full = None if mask is None else mask.expand(b, h, n_q, n_k)  # a view
    rows = min(n_q, max(1, _LSE_CHUNK // n_k))  # queries per chunk
    heads = max(1, _LSE_CHUNK // (rows * n_k))  # (batch, head) pairs per chunk
    mean_score = torch.empty(b * h, n_q, dtype=acc)
    for h0 in range(0, b * h, heads):
        pairs = torch.arange(h0, min(b * h, h0 + heads))  # flat (batch, head) indices
        for i0 in range(0, n_q, rows):
            i1 = min(n_q, i0 + rows)
            base = neg_lse[h0 : h0 + heads, i0:i1]
            if full is not None:  # masked keys: score -inf
                allowed = full[pairs // h, pairs % h, i0:i1]
                base = torch.where(allowed, base, -math.inf)
            s = torch.baddbmm(base, qs[h0 : h0 + heads, i0:i1], kt[h0 : h0 + heads])  # s - L
            p = torch.exp(s)
            if full is not None:  # masked keys: 0 * -inf -> 0
                s.clamp_(min=torch.finfo(acc).min)
            mean_score[h0 : h0 + heads, i0:i1] = p.mul_(s).sum(-1)  # sum_j a_ij (s_ij - L_i)
    return out, -mean_score.reshape(b, h, n_q)


def _sdpa_entropy(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    chunk: int,
    need_entropy: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    if not need_entropy:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None
    acc_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
    scale = 1.0 / math.sqrt(q.shape[-1])
    qa, ka = q.to(acc_dtype), k.to(acc_dtype)
    kv = torch.cat([v.to(acc_dtype), ka], -1)
    kt = ka.transpose(-1, -2)
    dv = v.shape[-1]
    outs, ents = [], []
    for i0 in range(0, q.shape[2], chunk):
        qi = qa[:, :, i0 : i0 + chunk]
        s = (qi * scale) @ kt
        if mask is not None:
            s.masked_fill_(~mask[..., i0 : i0 + chunk, :], -math.inf)
        m = s.amax(-1, keepdim=True)
        p = s.sub_(m).exp_()  # in place: the chunk's scores become its unnormalised softmax
        z = p.sum(-1, keepdim=True)
        o = (p @ kv).div_(z)
        outs.append(o[..., :dv])
        mean_score = (qi * o[..., dv:]).sum(-1) * scale  # sum_j a_ij s_ij
        ents.append((torch.log(z) + m).squeeze(-1) - mean_score)
    return torch.cat(outs, 2).to(q.dtype), torch.cat(ents, 2)


def scale_sparsity(entropy: torch.Tensor) -> torch.Tensor:
    """``rho``: share of tokens with entropy strictly below their row's mean.

    `entropy` is ``(..., n_tokens)`` (one scale's tokens in the last axis); returns ``(...)``
    in [0, 1].
    """
    _checks.tensor("entropy", entropy)
    if entropy.ndim < 1 or entropy.shape[-1] < 1:
        raise ValueError(
            f"entropy: expected (..., n_tokens) with n_tokens >= 1, got {tuple(entropy.shape)}"
        )
    below = entropy < entropy.mean(-1, keepdim=True)
    return below.to(torch.float64).mean(-1)


def pruning_depth(rho: torch.Tensor, tau: float) -> int:
    """``D = min{s : rho_s >= tau}`` (1-based scale index); ``len(rho) + 1`` when none qualifies."""
    _checks.tensor("rho", rho, 1)
    _checks.number("tau", tau, 0.0, 1.0)
    hits = torch.nonzero(rho >= tau).flatten()
    return int(hits[0]) + 1 if len(hits) else len(rho) + 1


def spectral_ratio(entropy_map: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """``varrho = sigma_1 / sigma_2`` of entropy maps ``(..., h, w)`` with h, w >= 2 (float64).

    ``sigma_2`` is floored at ``eps sigma_1``, so a rank-one map gives a large finite ratio.
    """
    _checks.tensor("entropy_map", entropy_map)
    if entropy_map.ndim < 2 or min(entropy_map.shape[-2:]) < 2:
        raise ValueError(
            f"entropy_map: expected (..., h, w) with h, w >= 2, got {tuple(entropy_map.shape)}"
        )
    sigma = torch.linalg.svdvals(entropy_map.to(torch.float64))
    s1 = sigma[..., 0]
    s2 = torch.maximum(sigma[..., 1], eps * torch.clamp(s1, min=eps))
    return s1 / s2


def layer_score(entropy_map: torch.Tensor, beta: float, eps: float = 1e-12) -> torch.Tensor:
    """``R = exp(-beta (sigma_1 / sigma_2 - 1))`` of entropy maps ``(..., h, w)``, min(h, w) >= 2.

    In (0, 1]: R = 1 exactly when sigma_1 = sigma_2 (a map with two equal leading singular
    values); R -> 0 for a map dominated by one rank-one pattern ("global" layer).
    """
    varrho = spectral_ratio(entropy_map, eps)
    beta = _checks.number("beta", beta, 0.0)
    # at least the smallest positive float64, so R stays in (0, 1] for any beta
    return torch.exp(-beta * (varrho - 1.0)).clamp(min=torch.finfo(torch.float64).tiny)


def normalise_entropy(entropy: torch.Tensor) -> torch.Tensor:
    """``Hhat``: each row of ``(..., n)`` mapped to [0, 1] by its min and max (constant row -> 0)."""
    _checks.tensor("entropy", entropy)
    lo = entropy.amin(-1, keepdim=True)
    span = entropy.amax(-1, keepdim=True) - lo
    return torch.where(span > 0, (entropy - lo) / torch.where(span > 0, span, 1), 0 * entropy)


def keep_probability(
    entropy_hat: torch.Tensor,
    scale: int,
    n_scales: int,
    start: int,
    score: float | torch.Tensor,
    a_min: float,
    a_max: float,
) -> torch.Tensor:
    """``P_keep`` of each token (paper's token rule); `scale` and `start` (= D) are 1-based.

    ``q = (scale / n_scales) * score * entropy_hat``; ``P_keep = 1`` if ``scale < start``
    else ``1 - clip(a_min + (a_max - a_min) q, 0, 1)``. `entropy_hat` is in [0, 1].
    """
    _checks.tensor("entropy_hat", entropy_hat)
    _checks.positive_int("n_scales", n_scales)
    _checks.positive_int("scale", scale)
    if scale > n_scales:
        raise ValueError(f"scale: expected 1..n_scales={n_scales}, got {scale}")
    _checks.positive_int("start", start)
    a_min = _checks.number("a_min", a_min, 0.0, 1.0)
    a_max = _checks.number("a_max", a_max, 0.0, 1.0)
    if a_max < a_min:
        raise ValueError(f"a_max: expected >= a_min={a_min}, got {a_max}")
    if scale < start:
        return torch.ones_like(entropy_hat)
    q = (scale / n_scales) * score * entropy_hat
    return 1.0 - torch.clamp(a_min + (a_max - a_min) * q, 0.0, 1.0)
