"""The linear priors: chunkwise == recurrent == dense reference, with states."""

from __future__ import annotations

import pytest
import torch
from free_energy_mixer import reference as R
from free_energy_mixer.priors import (
    chunk_normalized_read,
    feature_map,
    linear_prior,
    recurrent_normalized_read,
    softmax_prior,
)

from shared_core.testing import assert_close


def _inputs(T: int = 45, dtype: torch.dtype = torch.float64, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 3, T, 8, generator=g, dtype=dtype)
    k = torch.randn(2, 3, T, 8, generator=g, dtype=dtype)
    v = torch.randn(2, 3, T, 6, generator=g, dtype=dtype)
    a = -torch.rand(2, 3, T, generator=g, dtype=dtype) * 0.5
    return q, k, v, a


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("chunk", [1, 8, 16, 64])
def test_chunkwise_equals_recurrent_float32(gated: bool, chunk: int) -> None:
    q, k, v, a = _inputs(dtype=torch.float32)
    a = a if gated else None
    o1, s1 = chunk_normalized_read(feature_map(q), feature_map(k), v, a, chunk_size=chunk)
    o2, s2 = recurrent_normalized_read(feature_map(q), feature_map(k), v, a)
    assert_close("output", o2, o1, 1e-5)
    assert_close("state", s2, s1, 1e-5)


@pytest.mark.parametrize("gated", [False, True])
def test_split_sequence_with_state(gated: bool) -> None:
    """Reading [0, 20) then [20, T) from the carried state equals one read of [0, T)."""
    q, k, v, a = _inputs()
    a = a if gated else None
    fq, fk = feature_map(q), feature_map(k)
    full, S = chunk_normalized_read(fq, fk, v, a, chunk_size=8)
    cut = slice(0, 20), slice(20, None)
    o1, S1 = chunk_normalized_read(fq[:, :, cut[0]], fk[:, :, cut[0]], v[:, :, cut[0]],
                                   None if a is None else a[:, :, cut[0]], chunk_size=8)  # fmt: skip
    o2, S2 = recurrent_normalized_read(fq[:, :, cut[1]], fk[:, :, cut[1]], v[:, :, cut[1]],
                                       None if a is None else a[:, :, cut[1]], state=S1)  # fmt: skip
    assert_close("output", full, torch.cat([o1, o2], 2), 1e-12)
    assert_close("state", S, S2, 1e-12)


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize(
    ("dtype", "ratio"), [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 2e-2)]
)
def test_chunkwise_against_dense_reference(
    device: str, gated: bool, dtype: torch.dtype, ratio: float
) -> None:
    q, k, v, a = _inputs(T=70)
    ref = R.linear_prior_matrix(q, k, a if gated else None) @ v
    dq, dk_, dv, da = (t.to(device, dtype) for t in (q, k, v, a))
    out, _ = chunk_normalized_read(
        feature_map(dq), feature_map(dk_), dv, da if gated else None, chunk_size=16
    )
    assert_close(f"linear prior gated={gated} {dtype}", ref, out, ratio)


@pytest.mark.parametrize(
    ("dtype", "ratio"), [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 2e-2)]
)
def test_softmax_prior_against_dense_reference(
    device: str, dtype: torch.dtype, ratio: float
) -> None:
    q, k, v, _ = _inputs(T=33)
    ref = R.softmax_prior_matrix(q, k) @ v
    out = softmax_prior(*(t.to(device, dtype) for t in (q, k, v)))
    assert_close(f"softmax prior {dtype}", ref, out, ratio)


def test_prior_rows_are_normalised() -> None:
    q, k, _, a = _inputs(T=20)
    for P in (
        R.softmax_prior_matrix(q, k),
        R.linear_prior_matrix(q, k),
        R.linear_prior_matrix(q, k, a),
    ):
        assert torch.allclose(P.sum(-1), torch.ones(()).double())
        assert (P.triu(1) == 0).all() and (P >= 0).all()


def test_linear_prior_reads_a_constant_exactly() -> None:
    """Normalised: a constant value is read back unchanged even where phi(q) is tiny."""
    q, k, v, _ = _inputs(T=30)
    q = -q.abs() - 1  # phi(q) = 1e-6 everywhere
    out = linear_prior(q, k, torch.full_like(v, 3.0))
    assert_close("constant", torch.full_like(v, 3.0), out, 1e-12)


def test_chunkwise_gradcheck() -> None:
    q, k, v, a = _inputs(T=9, seed=2)
    args = [t[:1, :1].clone().requires_grad_(True) for t in (q, k, v, a)]

    def f(q, k, v, a):
        return chunk_normalized_read(feature_map(q), feature_map(k), v, a, chunk_size=4)

    assert torch.autograd.gradcheck(f, tuple(args))


def test_bad_inputs() -> None:
    q, k, v, a = _inputs(T=8)
    fq, fk = feature_map(q), feature_map(k)
    with pytest.raises(ValueError, match="phi_k: expected the shape of phi_q"):
        chunk_normalized_read(fq, fk[..., :4], v)
    with pytest.raises(ValueError, match=r"v: expected \(batch, heads, time\)"):
        chunk_normalized_read(fq, fk, v[:, :, :5])
    with pytest.raises(ValueError, match="log_decay: expected shape"):
        chunk_normalized_read(fq, fk, v, a[..., :3])
    with pytest.raises(ValueError, match="state: expected shape"):
        recurrent_normalized_read(fq, fk, v, a, state=torch.zeros(2, 3, 8, 6))
    with pytest.raises(ValueError, match="chunk_size: expected a positive int"):
        chunk_normalized_read(fq, fk, v, chunk_size=0)
    with pytest.raises(ValueError, match="phi_q: expected a non-empty tensor"):
        recurrent_normalized_read(fq[0], fk, v)
