"""The fla path: dispatch, the argument mapping to fla's ``chunk_mesa_net``, the real kernels.

On CPU the mapping is checked with the kernel replaced at the import boundary
(`fla_path.fla_kernel`) by fla's own exact reference, ``naive_mesa_net_exact``
(fla/ops/mesa_net/naive.py, loaded from its file), which takes fla's conventions
(``h_kv`` key x value, ``lamb`` before ``beta``); the real Triton kernels run under Triton's
interpreter (``fla_interpreted.py``, a subprocess) and, in the ``cuda`` session, on the GPU.

The fla path is held to the bfloat16 tolerance (1e-2) for float32 inputs too: fla casts q
and k to float16 and keeps the chunk-start value states in bfloat16, so its float32 result
carries 16-bit rounding (measured under the interpreter: o 4.9e-3 float32, 8.6e-3 bfloat16,
gradients <= 4.2e-3 relative RMS against the float64 reference).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from conftest import RATIOS, cast, make_inputs  # noqa: E402
from mesa_layer.reference import mesa_exact  # noqa: E402
from mesa_layer.torch import MesaLayer, fla_path, mesa_chunk  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402

FLA_RATIO = RATIOS[torch.bfloat16]
STEPS = 50  # CG steps of the GPU comparisons (K = 64: converged in float32)


def fla_naive() -> object:
    """fla's ``fla/ops/mesa_net/naive.py`` as a module, without importing ``fla``; a skip that
    names the missing module (fla-core itself, or a dependency such as einops) otherwise."""
    try:
        return fla_path.fla_naive("mesa_net")
    except ModuleNotFoundError as err:
        what = (
            "fla-core (module 'fla') is not installed"
            if err.name == "fla"
            else f"fla-core is installed but its dependency {err.name!r} is not"
        )
        pytest.skip(f"fla's reference naive.py cannot be loaded: {what} ({err}); "
                    "install mesa-layer[test]")  # fmt: skip


def test_the_skip_names_the_missing_module(monkeypatch):
    """fla-core present but einops missing used to skip as "fla-core is not installed"."""
    if not fla_path.fla_installed():
        pytest.skip("fla-core (module 'fla') is not installed: install mesa-layer[test]")
    monkeypatch.setitem(sys.modules, "einops", None)  # an installed fla-core without einops
    with pytest.raises(pytest.skip.Exception, match=r"dependency 'einops' is not"):
        fla_naive()
    with pytest.raises(ModuleNotFoundError) as err:
        fla_path.fla_naive("mesa_net")
    assert err.value.name == "einops"
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "fla" else find_spec(name, *a)
    )
    with pytest.raises(pytest.skip.Exception, match=r"fla-core \(module 'fla'\) is not installed"):
        fla_naive()


class FakeKernel:
    """``chunk_mesa_net``'s contract, computed by fla's exact reference; records its calls."""

    def __init__(self) -> None:
        self.exact = fla_naive().naive_mesa_net_exact  # type: ignore[attr-defined]
        self.calls: list[dict] = []

    def __call__(self, q, k, v, g, beta, lamb, **kw):  # type: ignore[no-untyped-def]
        self.calls.append({"args": (q, k, v, g, beta, lamb), **kw})
        assert kw["output_final_state"] and not kw["use_qk_l2norm_in_kernel"]
        cu = kw["cu_seqlens"]
        bounds = (
            [(0, q.shape[1])]
            if cu is None
            else list(zip(cu[:-1].tolist(), cu[1:].tolist(), strict=True))
        )
        outs, hks, hvs = [], [], []
        for i, (a, b) in enumerate(bounds):
            rows = slice(None) if cu is None else slice(0, 1)
            part = [x[rows, a:b] for x in (q, k, v, g, beta)]
            h0 = [None if s is None else (s if cu is None else s[i : i + 1])
                  for s in (kw["h_kk_init"], kw["h_kv_init"])]  # fmt: skip
            o, hk, hv = self.exact(*part[:4], lamb, part[4], *h0)
            outs.append(o.to(v.dtype))
            hks.append(hk)
            hvs.append(hv)
        return torch.cat(outs, 1), torch.cat(hks, 0), torch.cat(hvs, 0)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    kernel = FakeKernel()
    monkeypatch.setattr(fla_path, "fla_kernel", lambda: kernel)
    monkeypatch.setattr(fla_path, "fla_installed", lambda: True)
    return kernel


def square(**kw):  # type: ignore[no-untyped-def]
    """Inputs fla accepts: d_v = d_k."""
    return make_inputs(**{"K": 8, "V": 8, **kw})


# ---- dispatch ---------------------------------------------------------------------------


def stand_in(cuda: bool, K: int = 8, V: int = 8, dtype=torch.float32):  # type: ignore[no-untyped-def]
    """What `resolve_backend` reads of q and v, without a GPU."""
    q = SimpleNamespace(is_cuda=cuda, shape=(1, 4, 2, K), dtype=dtype)
    return q, SimpleNamespace(shape=(1, 4, 2, V))


@pytest.mark.parametrize("installed", [True, False])
def test_auto_picks_fla_only_on_cuda_with_the_extra(monkeypatch, installed):
    monkeypatch.setattr(fla_path, "fla_installed", lambda: installed)
    monkeypatch.delenv(fla_path.BACKEND_ENV)
    supported = (None, True, "zero")  # cg_tol, custom_backward, cg_start
    expected = "fla" if installed else "torch"
    assert fla_path.resolve_backend("auto", *stand_in(True), *supported) == expected
    assert fla_path.resolve_backend(None, *stand_in(True), *supported) == expected
    assert fla_path.resolve_backend("auto", *stand_in(False), *supported) == "torch"
    assert fla_path.resolve_backend("torch", *stand_in(True), *supported) == "torch"


@pytest.mark.parametrize(
    ("kw", "stand", "match"),
    [
        ({}, {"V": 6}, "d_v == d_k"),
        ({}, {"K": 256, "V": 256}, "d_k <= 128"),
        ({}, {"dtype": torch.float64}, "float64"),
        ({"cg_tol": 1e-4}, {}, "no tolerance"),
        ({"custom_backward": False}, {}, "custom_backward=False"),
        ({"cg_start": "q"}, {}, "starts CG from zero"),
    ],
)
def test_unsupported_calls_fall_back_under_auto_and_raise_when_forced(
    monkeypatch, kw, stand, match
):
    monkeypatch.setattr(fla_path, "fla_installed", lambda: True)
    call = {"cg_tol": None, "custom_backward": True, "cg_start": "zero", **kw}
    q, v = stand_in(True, **stand)
    assert fla_path.resolve_backend("auto", q, v, **call) == "torch"
    with pytest.raises(ValueError, match=match):
        fla_path.resolve_backend("fla", q, v, **call)


def test_env_variable_selects_and_is_checked(monkeypatch):
    monkeypatch.setattr(fla_path, "fla_installed", lambda: True)
    q, v = stand_in(True)
    monkeypatch.setenv(fla_path.BACKEND_ENV, "torch")
    assert fla_path.resolve_backend(None, q, v, None, True, "zero") == "torch"
    assert fla_path.resolve_backend("fla", q, v, None, True, "zero") == "fla"  # argument wins
    monkeypatch.setenv(fla_path.BACKEND_ENV, "triton")
    with pytest.raises(ValueError, match=r"\$MESA_LAYER_BACKEND: expected one of"):
        fla_path.resolve_backend(None, q, v, None, True, "zero")
    with pytest.raises(ValueError, match="backend: expected one of .* got 'cuda'"):
        mesa_chunk(*square(), backend="cuda")
    with pytest.raises(ValueError, match="backend: expected one of"):
        MesaLayer(16, 2, backend="gpu")


def test_forcing_fla_without_the_extra_names_the_install(monkeypatch):
    monkeypatch.setattr(fla_path, "fla_installed", lambda: False)
    with pytest.raises(ModuleNotFoundError, match=r"mesa-layer\[fla\]"):
        mesa_chunk(*square(dtype=torch.float32), backend="fla")


# ---- argument mapping, kernel replaced by fla's exact reference ------------------------


def test_mapping_outputs_states_and_dtypes(fake):
    ref = square(B=2, T=20, H=2)
    H0 = torch.randn(2, 2, 8, 8, dtype=torch.float64)
    H0 = H0 @ H0.transpose(-1, -2) / 8
    G0 = torch.randn(2, 2, 8, 8, dtype=torch.float64)  # ours: value x key
    o_ref, (H_ref, G_ref) = mesa_exact(*ref, initial_state=(H0, G0))
    xs = cast(ref, torch.float32, "cpu")
    o, (H, G) = mesa_chunk(*xs, initial_state=(H0.float(), G0.float()), max_cg_steps=7,
                           backend="fla")  # fmt: skip
    (call,) = fake.calls
    q, k, v, g, beta, lamb = call["args"]
    assert q is xs[0] and k is xs[1] and v is xs[2]  # no scaling, no copy of the activations
    assert g.dtype == beta.dtype == lamb.dtype == torch.float32
    torch.testing.assert_close(lamb, xs[5])  # Lambda is fla's lamb, (H, K)
    assert call["max_CG_iteration"] == 7 and call["cu_seqlens"] is None
    assert call["h_kk_init"].dtype == call["h_kv_init"].dtype == torch.float32
    torch.testing.assert_close(call["h_kv_init"], G0.float().transpose(-1, -2))  # key x value
    assert o.dtype == torch.float32 and H.shape == H0.shape and G.shape == G0.shape
    assert_close("o (fla mapping)", o_ref, o, RATIOS[torch.float32])
    assert_close("H_T (fla mapping)", H_ref, H, RATIOS[torch.float32])
    assert_close("G_T (fla mapping: h_kv transposed)", G_ref, G, RATIOS[torch.float32])


def test_mapping_of_packed_sequences(fake):
    ref = square(B=2, T=16, H=2)
    lens = (9, 16)
    packed = [torch.cat([x[0:1, : lens[0]], x[1:2, : lens[1]]], 1) for x in ref[:5]]
    cu = torch.tensor([0, lens[0], sum(lens)], dtype=torch.int32)
    xs = [x.float() for x in (*packed, ref[5])]
    o, (H, G) = mesa_chunk(*xs, cu_seqlens=cu, backend="fla")
    (call,) = fake.calls
    assert call["cu_seqlens"].dtype == call["cu_seqlens_cpu"].dtype == torch.long
    assert call["cu_seqlens_cpu"].device.type == "cpu"
    assert call["cu_seqlens"].tolist() == cu.tolist()
    for i, n in enumerate(lens):
        o_i, (H_i, G_i) = mesa_exact(*(x[i : i + 1, :n] for x in ref[:5]), ref[5])
        a = sum(lens[:i])
        assert_close(f"o seq {i}", o_i, o[:, a : a + n], RATIOS[torch.float32])
        assert_close(f"H_T seq {i}", H_i, H[i : i + 1], RATIOS[torch.float32])
        assert_close(f"G_T seq {i}", G_i, G[i : i + 1], RATIOS[torch.float32])


def test_layer_dispatches_to_fla(fake):
    layer = MesaLayer(16, 2, backend="fla")
    y = layer(torch.randn(1, 10, 16))
    assert len(fake.calls) == 1 and y.shape == (1, 10, 16)
    ref_layer = MesaLayer(16, 2, backend="torch")
    ref_layer.load_state_dict(layer.state_dict())
    x = torch.randn(1, 10, 16)
    # fla's exact solve against our 30 converged CG steps (head_dim 8)
    assert_close("layer fla vs torch", ref_layer(x), layer(x), RATIOS[torch.float32])


# ---- the real kernels under Triton's interpreter ----------------------------------------


def test_real_fla_kernels_under_triton_interpreter(device):
    if device == "cuda":  # the GPU tests below run the same kernels compiled
        pytest.skip("a CPU-session check: it failed under the H200 machine's Triton 3.6")
    if importlib.util.find_spec("fla") is None or importlib.util.find_spec("triton") is None:
        pytest.skip("needs the fla extra (flash-linear-attention and Triton)")
    script = Path(__file__).with_name("fla_interpreted.py")
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    env.pop("MESA_LAYER_BACKEND", None)
    run = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(errors) == 19
    for name, err in errors.items():
        if name.startswith("o dtype"):
            assert err == 1.0, name
        else:
            assert err <= FLA_RATIO, f"{name}: relative RMS {err:.3g} > {FLA_RATIO}"


# ---- the real kernels on a GPU (the cuda session) -----------------------------------------


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("backend", ["fla", "torch"])
def test_gpu_paths_match_reference(device, dtype, backend):
    if backend == "fla" and not fla_path.fla_installed():
        pytest.skip("the fla extra is not installed")
    # H = 4, K = 64 here and in gpu_check.py: fla's kernels are compiled per (H, K, dtype)
    ref = make_inputs(B=2, T=200, H=4, K=64, V=64, gate_bias=3.0)
    H0 = torch.randn(2, 4, 64, 32, dtype=torch.float64)
    state64 = (H0 @ H0.transpose(-1, -2) / 64, torch.randn(2, 4, 64, 64, dtype=torch.float64))
    o_ref, (H_ref, G_ref) = mesa_exact(*ref, initial_state=state64)
    xs = [x.requires_grad_() for x in cast(ref, dtype, device)]
    state = tuple(s.float().to(device) for s in state64)
    o, (H, G) = mesa_chunk(*xs, initial_state=state, max_cg_steps=STEPS, backend=backend)
    ratio = FLA_RATIO if backend == "fla" else RATIOS[dtype]
    assert o.dtype == dtype and H.device.type == "cuda"
    assert_close(f"o {backend} {dtype}", o_ref, o, ratio)
    assert_close(f"H_T {backend} {dtype}", H_ref, H, ratio)
    assert_close(f"G_T {backend} {dtype}", G_ref, G, ratio)
    # gradients against the float64 torch path (the exact-solve gradient, converged CG)
    w = torch.randn(o.shape, dtype=torch.float64)
    grads = torch.autograd.grad((o.double() * w.to(device)).sum(), xs)
    xs64 = [x.detach().requires_grad_() for x in ref]
    o64, _ = mesa_chunk(*xs64, initial_state=state64, max_cg_steps=STEPS, backend="torch")
    grads64 = torch.autograd.grad((o64 * w).sum(), xs64)
    for n, a, b in zip(("q", "k", "v", "g", "beta", "Lambda"), grads, grads64, strict=True):
        assert_close(f"d{n} {backend} {dtype}", b, a.cpu(), ratio)


@pytest.mark.cuda
def test_gpu_fla_packed_sequences(device):
    if not fla_path.fla_installed():
        pytest.skip("the fla extra is not installed")
    ref = make_inputs(B=2, T=150, H=4, K=64, V=64)
    lens = (70, 150)
    packed = [torch.cat([x[0:1, : lens[0]], x[1:2, : lens[1]]], 1) for x in ref[:5]]
    cu = torch.tensor([0, lens[0], sum(lens)], device=device)
    xs = list(cast((*packed, ref[5]), torch.bfloat16, device))
    o, (_, G) = mesa_chunk(*xs, cu_seqlens=cu, backend="fla")
    for i, n in enumerate(lens):
        o_i, (_, G_i) = mesa_exact(*(x[i : i + 1, :n] for x in ref[:5]), ref[5])
        a = sum(lens[:i])
        assert_close(f"o seq {i} (fla, GPU)", o_i, o[:, a : a + n], FLA_RATIO)
        assert_close(f"G_T seq {i} (fla, GPU)", G_i, G[i : i + 1], FLA_RATIO)
