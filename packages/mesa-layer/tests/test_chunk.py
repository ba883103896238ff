"""The chunkwise-parallel form against the exact reference and the recurrent form."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import DTYPES, RATIOS, cast, make_inputs  # noqa: E402
from mesa_layer.reference import gated_linear_attention_exact, mesa_exact  # noqa: E402
from mesa_layer.torch import mesa_chunk, mesa_recurrent, mesa_step  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402


@DTYPES
@pytest.mark.parametrize("chunk_size", [1, 16, 64])
def test_chunk_equals_exact_reference(device, dtype, chunk_size):
    ref = make_inputs(T=64)
    o_ref, (H_ref, G_ref) = mesa_exact(*ref)
    # K = 8: 12 CG steps converge to machine precision
    o, (H, G) = mesa_chunk(*cast(ref, dtype, device), chunk_size=chunk_size, max_cg_steps=12)
    assert o.dtype == dtype and o.device.type == device
    assert H.dtype == G.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
    assert_close(f"o {dtype} C={chunk_size}", o_ref, o, RATIOS[dtype])
    assert_close(f"H_T {dtype}", H_ref, H, RATIOS[dtype])
    assert_close(f"G_T {dtype}", G_ref, G, RATIOS[dtype])


@DTYPES
def test_recurrent_equals_exact_reference(device, dtype):
    ref = make_inputs(T=40)
    o_ref, (H_ref, G_ref) = mesa_exact(*ref)
    o, (H, G) = mesa_recurrent(*cast(ref, dtype, device), max_cg_steps=12)
    assert_close(f"recurrent o {dtype}", o_ref, o, RATIOS[dtype])
    assert_close(f"recurrent H_T {dtype}", H_ref, H, RATIOS[dtype])
    assert_close(f"recurrent G_T {dtype}", G_ref, G, RATIOS[dtype])


def test_d_cg_steps_equal_exact_solve_float64(inputs64):
    o_ref, (H_ref, G_ref) = mesa_exact(*inputs64)
    o, (H, G) = mesa_chunk(*inputs64, chunk_size=16, max_cg_steps=8)
    torch.testing.assert_close(o, o_ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(H, H_ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(G, G_ref, atol=1e-12, rtol=0)


def test_fewer_cg_steps_approach_the_exact_output(inputs64):
    o_ref, _ = mesa_exact(*inputs64)
    errs = [(mesa_chunk(*inputs64, max_cg_steps=s)[0] - o_ref).norm().item() for s in (1, 2, 4, 8)]
    assert errs[0] > errs[1] > errs[2] > errs[3] and errs[3] < 1e-8


def test_length_not_divisible_by_chunk_is_padded_correctly(inputs64):
    o_ref, (H_ref, _) = mesa_exact(*inputs64)  # T = 37
    o, (H, _) = mesa_chunk(*inputs64, chunk_size=10, max_cg_steps=10)
    torch.testing.assert_close(o, o_ref, atol=1e-8, rtol=0)
    torch.testing.assert_close(H, H_ref, atol=1e-12, rtol=0)


def test_large_lambda_limit_is_gated_linear_attention(inputs64):
    q, k, v, g, beta, _ = inputs64
    gla = gated_linear_attention_exact(q, k, v, g, beta)
    errs = []
    for lam in (1e1, 1e3, 1e5):
        o, _ = mesa_chunk(
            q, k, v, g, beta, torch.full((2, 8), lam, dtype=torch.float64), max_cg_steps=8
        )
        errs.append((o * lam - gla).abs().max().item())
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-3 * gla.abs().max().item()


def test_decoding_state_equals_chunk_final_state(inputs64):
    q, k, v, g, beta, Lambda = inputs64
    B, T, H, K = q.shape
    state = (
        torch.zeros(B, H, K, K, dtype=q.dtype),
        torch.zeros(B, H, v.shape[-1], K, dtype=q.dtype),
    )
    for t in range(T):
        _, state = mesa_step(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], Lambda, state, 10)
    _, (H_c, G_c) = mesa_chunk(*inputs64, chunk_size=16, max_cg_steps=10)
    torch.testing.assert_close(state[0], H_c, atol=1e-12, rtol=0)
    torch.testing.assert_close(state[1], G_c, atol=1e-12, rtol=0)


def test_nonzero_initial_state_is_honoured(inputs64):
    q, k, v, g, beta, Lambda = inputs64
    o_full, (H_full, G_full) = mesa_chunk(*inputs64, chunk_size=8, max_cg_steps=10)
    s = 20
    o1, st = mesa_chunk(
        q[:, :s], k[:, :s], v[:, :s], g[:, :s], beta[:, :s], Lambda, chunk_size=8, max_cg_steps=10
    )
    o2, (H2, G2) = mesa_chunk(
        q[:, s:],
        k[:, s:],
        v[:, s:],
        g[:, s:],
        beta[:, s:],
        Lambda,
        initial_state=st,
        chunk_size=8,
        max_cg_steps=10,
    )
    torch.testing.assert_close(torch.cat([o1, o2], 1), o_full, atol=1e-9, rtol=0)
    torch.testing.assert_close(H2, H_full, atol=1e-12, rtol=0)
    torch.testing.assert_close(G2, G_full, atol=1e-12, rtol=0)
    ref, _ = mesa_exact(
        q[:, s:], k[:, s:], v[:, s:], g[:, s:], beta[:, s:], Lambda, initial_state=st
    )
    torch.testing.assert_close(o2, ref, atol=1e-8, rtol=0)


def test_packed_variable_lengths_equal_each_sequence_alone():
    lengths = [5, 17, 9]
    seqs = [make_inputs(B=1, T=n, seed=i) for i, n in enumerate(lengths)]
    Lambda = seqs[0][5]
    packed = [torch.cat([s[j] for s in seqs], 1) for j in range(5)]
    cu = torch.tensor([0, 5, 22, 31])
    o, (H, G) = mesa_chunk(*packed, Lambda, cu_seqlens=cu, chunk_size=4, max_cg_steps=10)
    for i, s in enumerate(seqs):
        o_i, (H_i, G_i) = mesa_exact(*s[:5], Lambda)
        torch.testing.assert_close(o[:, cu[i] : cu[i + 1]], o_i, atol=1e-8, rtol=0)
        torch.testing.assert_close(H[i : i + 1], H_i, atol=1e-12, rtol=0)
        torch.testing.assert_close(G[i : i + 1], G_i, atol=1e-12, rtol=0)


def test_cg_tolerance_stops_early_but_stays_close(inputs64):
    o_ref, _ = mesa_exact(*inputs64)
    o, _ = mesa_chunk(*inputs64, max_cg_steps=100, cg_tol=1e-10)
    torch.testing.assert_close(o, o_ref, atol=1e-7, rtol=0)


@pytest.mark.cuda
def test_long_bfloat16_sequence_on_gpu_matches_float64_reference(device):
    ref = make_inputs(B=2, T=1024, H=4, K=32, V=32, gate_bias=4.0)
    o_ref, _ = mesa_chunk(*ref, max_cg_steps=40)
    o, (H, _) = mesa_chunk(*cast(ref, torch.bfloat16, device), max_cg_steps=40)
    assert H.dtype == torch.float32 and H.device.type == "cuda"
    assert_close("o bf16 T=1024 on GPU", o_ref, o, RATIOS[torch.bfloat16])


def test_empty_time_axis_raises():
    q, k, v, g, beta, Lambda = make_inputs(T=1)
    with pytest.raises(ValueError, match="q: expected at least one time step"):
        mesa_chunk(q[:, :0], k[:, :0], v[:, :0], g[:, :0], beta[:, :0], Lambda)


def test_seeded_determinism():
    a = mesa_chunk(*make_inputs(seed=3, dtype=torch.float32))[0]
    b = mesa_chunk(*make_inputs(seed=3, dtype=torch.float32))[0]
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    "field,bad,match",
    [
        (0, torch.zeros(2, 37, 2), "q: expected shape"),
        (1, torch.zeros(2, 37, 2, 7), "k: expected the shape of q"),
        (2, torch.zeros(2, 36, 2, 6), "v: expected shape"),
        (3, torch.zeros(2, 37, 3), "g: expected shape"),
        (4, torch.zeros(2, 37), "beta: expected shape"),
        (5, torch.ones(3, 8), "Lambda: expected shape"),
    ],
)
def test_wrong_shapes_raise(inputs64, field, bad, match):
    ins = list(inputs64)
    ins[field] = bad.to(torch.float64)
    with pytest.raises(ValueError, match=match):
        mesa_chunk(*ins)


def test_bad_values_raise(inputs64):
    q, k, v, g, beta, Lambda = inputs64
    bad_v = v.clone()
    bad_v[0, 3, 1, 2] = float("nan")
    with pytest.raises(ValueError, match="v: contains NaN"):
        mesa_chunk(q, k, bad_v, g, beta, Lambda)
    with pytest.raises(ValueError, match="Lambda: expected every entry > 0"):
        mesa_chunk(q, k, v, g, beta, Lambda - 1.0)
    with pytest.raises(ValueError, match="g: expected the log forget gate"):
        mesa_chunk(q, k, v, -g, beta, Lambda)
    with pytest.raises(ValueError, match="chunk_size"):
        mesa_chunk(*inputs64, chunk_size=0)
    with pytest.raises(TypeError, match="q: expected a torch.Tensor"):
        mesa_chunk(q.numpy(), k, v, g, beta, Lambda)
    with pytest.raises(ValueError, match="initial_state"):
        mesa_chunk(*inputs64, initial_state=(torch.zeros(2, 2, 8, 8), torch.zeros(2, 2, 5, 8)))
    with pytest.raises(ValueError, match="cu_seqlens"):
        mesa_chunk(*(x[:1] for x in inputs64[:5]), Lambda, cu_seqlens=torch.tensor([0, 10, 5, 37]))
    with pytest.raises(TypeError, match="cu_seqlens"):
        mesa_chunk(*(x[:1] for x in inputs64[:5]), Lambda, cu_seqlens=torch.tensor([0.0, 37.0]))
    with pytest.raises(ValueError, match="max_cg_steps"):
        mesa_chunk(*inputs64, max_cg_steps=-1)
    with pytest.raises(ValueError, match="cg_tol"):
        mesa_chunk(*inputs64, cg_tol=-1.0)
    with pytest.raises(TypeError, match="q: expected a floating-point"):
        mesa_chunk(q.long(), k, v, g, beta, Lambda)


def test_mesa_step_validates_its_inputs(inputs64):
    q, k, v, g, beta, Lambda = (x[:, 0] if x.ndim > 2 else x for x in inputs64)
    B, H, K = q.shape
    state = (torch.zeros(B, H, K, K, dtype=q.dtype), torch.zeros(B, H, 6, K, dtype=q.dtype))
    o, _ = mesa_step(q, k, v, g, beta, Lambda, state)
    assert o.shape == (B, H, 6)
    with pytest.raises(ValueError, match=r"q: expected shape \(batch, heads, d_k\)"):
        mesa_step(q[None], k, v, g, beta, Lambda, state)
    with pytest.raises(ValueError, match="g: expected shape"):
        mesa_step(q, k, v, g[:, :1], beta, Lambda, state)
    with pytest.raises(ValueError, match="g: expected the log forget gate"):
        mesa_step(q, k, v, -g, beta, Lambda, state)
    with pytest.raises(ValueError, match=r"state: G_0 expected shape \(2, 2, 6, 8\)"):
        mesa_step(q, k, v, g, beta, Lambda, (state[0], torch.zeros(B, H, K, K)))
    with pytest.raises(TypeError, match="state: expected a pair"):
        mesa_step(q, k, v, g, beta, Lambda, state[0])
    with pytest.raises(TypeError, match="state: expected H and G both float32"):
        mesa_step(q, k, v, g, beta, Lambda, (state[0].half(), state[1].half()))
    with pytest.raises(ValueError, match="max_cg_steps"):
        mesa_step(q, k, v, g, beta, Lambda, state, max_cg_steps=-2)


def test_q_start_zero_steps_is_the_gla_read_and_converges_to_the_solve(inputs64):
    q, k, v, g, beta, _ = inputs64
    # cg_start="q": 0 CG steps give q* = q, so o_t = G_t q_t (the GLA read-out)
    o0, _ = mesa_chunk(*inputs64, max_cg_steps=0, cg_start="q", chunk_size=16)
    o_gla = gated_linear_attention_exact(q, k, v, g, beta)
    torch.testing.assert_close(o0, o_gla, atol=1e-12, rtol=0)
    # the default zero start outputs 0 at 0 steps
    assert mesa_chunk(*inputs64, max_cg_steps=0)[0].abs().max() == 0
    o_ref, _ = mesa_exact(*inputs64)
    o, _ = mesa_chunk(*inputs64, max_cg_steps=10, cg_start="q", chunk_size=16)
    assert_close("q-start converged", o_ref, o, RATIOS[torch.float64])
    # the autograd-through-CG path starts from q too
    o_ag, _ = mesa_chunk(*inputs64, max_cg_steps=3, cg_start="q", custom_backward=False)
    o_cb, _ = mesa_chunk(*inputs64, max_cg_steps=3, cg_start="q")
    torch.testing.assert_close(o_ag, o_cb, atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="cg_start: expected one of"):
        mesa_chunk(*inputs64, cg_start="jacobi")
