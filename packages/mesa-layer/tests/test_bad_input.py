"""Bad input to the public API, in one table (issue 46's probe categories: NaN/inf, empty,
shapes, dtypes, ids/sizes/names, types): each case raises a ValueError/TypeError naming the
argument."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mesa_layer import (  # noqa: E402
    DeltaNetLayer,
    GatedLinearAttentionLayer,
    MesaLayer,
    MesaNetConfig,
    MesaNetLM,
    SoftmaxAttention,
    conjugate_gradient,
    mesa_chunk,
    mesa_exact,
    mesa_recurrent,
    mesa_step,
)

from shared_core.testing import assert_bad_input  # noqa: E402

torch.manual_seed(0)
B, T, H, K, V = 2, 5, 2, 4, 3
_Q = torch.nn.functional.normalize(torch.randn(B, T, H, K), dim=-1)
_KK = torch.nn.functional.normalize(torch.randn(B, T, H, K), dim=-1)
_V = torch.randn(B, T, H, V)
_G = -torch.rand(B, T, H)
_BETA = torch.rand(B, T, H)
_LAM = torch.ones(H, K)
_NAN_V = _V.clone()
_NAN_V[0, 1, 0, 0] = float("nan")
_STATE = (torch.zeros(B, H, K, K), torch.zeros(B, H, V, K))
_LAYER = MesaLayer(8, num_heads=2)
_X = torch.randn(2, 5, 8)
_NAN_X = _X.clone()
_NAN_X[0, 0, 0] = float("inf")
_CFG = MesaNetConfig(vocab_size=11, hidden_size=8, num_layers=1, num_heads=2, intermediate_size=8)
_LM = MesaNetLM(_CFG)
_IDS = torch.randint(0, 11, (2, 5))


def _args(**over: object) -> tuple:
    a = {"q": _Q, "k": _KK, "v": _V, "g": _G, "beta": _BETA, "Lambda": _LAM}
    a.update(over)
    return tuple(a.values())


CASES = {
    # the kernels: NaN/inf, shapes, dtypes, types, signs
    "chunk on NaN values": (lambda: mesa_chunk(*_args(v=_NAN_V)), ValueError, "v"),
    "chunk with a positive log gate": (lambda: mesa_chunk(*_args(g=-_G)), ValueError, "g"),
    "chunk with a negative beta": (lambda: mesa_chunk(*_args(beta=-_BETA)), ValueError, "beta"),
    "chunk with a zero Lambda": (lambda: mesa_chunk(*_args(Lambda=0 * _LAM)), ValueError, "Lambda"),
    "chunk with Lambda of the wrong shape": (
        lambda: mesa_chunk(*_args(Lambda=torch.ones(H, K + 1))),
        ValueError,
        "Lambda",
    ),
    "chunk with k of the wrong shape": (lambda: mesa_chunk(*_args(k=_KK[:, :4])), ValueError, "k"),
    "chunk with no time steps": (
        lambda: mesa_chunk(
            *_args(q=_Q[:, :0], k=_KK[:, :0], v=_V[:, :0], g=_G[:, :0], beta=_BETA[:, :0])
        ),
        ValueError,
        "q",
    ),
    "chunk on integer values": (lambda: mesa_chunk(*_args(v=_V.long())), TypeError, "v"),
    "chunk on a list": (lambda: mesa_chunk(*_args(q=_Q.tolist())), TypeError, "q"),
    "chunk zero chunk size": (lambda: mesa_chunk(*_args(), chunk_size=0), ValueError, "chunk_size"),
    "chunk unknown cg_start": (
        lambda: mesa_chunk(*_args(), cg_start="zzz"),
        ValueError,
        "cg_start",
    ),
    "chunk unknown backend": (lambda: mesa_chunk(*_args(), backend="zzz"), ValueError, "backend"),
    "chunk negative CG steps": (
        lambda: mesa_chunk(*_args(), max_cg_steps=-1),
        ValueError,
        "max_cg_steps",
    ),
    "chunk state of the wrong shape": (
        lambda: mesa_chunk(*_args(), initial_state=(torch.zeros(B, H, K, K + 1), _STATE[1])),
        ValueError,
        "initial_state",
    ),
    "recurrent on inf beta": (
        lambda: mesa_recurrent(*_args(beta=_BETA + float("inf"))),
        ValueError,
        "beta",
    ),
    "step on a sequence": (lambda: mesa_step(*_args(), state=_STATE), ValueError, "q"),
    "exact on NaN values": (lambda: mesa_exact(*_args(v=_NAN_V)), ValueError, "v"),
    "CG on NaN right-hand side": (
        lambda: conjugate_gradient(lambda x: x, torch.full((2, 3), float("nan"))),
        ValueError,
        "b",
    ),
    "CG negative steps": (
        lambda: conjugate_gradient(lambda x: x, torch.ones(2, 3), max_iter=-1),
        ValueError,
        "max_iter",
    ),
    "CG on integer right-hand side": (
        lambda: conjugate_gradient(lambda x: x, torch.ones(2, 3, dtype=torch.long)),
        TypeError,
        "b",
    ),
    "CG start of the wrong shape": (
        lambda: conjugate_gradient(lambda x: x, torch.ones(2, 3), x0=torch.zeros(3)),
        ValueError,
        "x0",
    ),
    "exact state of the wrong shape": (
        lambda: mesa_exact(*_args(), initial_state=(torch.zeros(B, H, K, K + 1), _STATE[1])),
        ValueError,
        "initial_state",
    ),
    # layers
    "layer heads not dividing the width": (
        lambda: MesaLayer(8, num_heads=3),
        ValueError,
        "num_heads",
    ),
    "layer on inf features": (lambda: _LAYER(_NAN_X), ValueError, "x"),
    "layer on the wrong width": (lambda: _LAYER(torch.randn(2, 5, 6)), ValueError, "x"),
    "layer on 2-D features": (lambda: _LAYER(torch.randn(5, 8)), ValueError, "x"),
    "layer on integer features": (lambda: _LAYER(_X.long()), TypeError, "x"),
    "layer cache of a zero batch": (lambda: _LAYER.init_cache(0), ValueError, "batch", "0"),
    "GLA on inf features": (lambda: GatedLinearAttentionLayer(8, 2)(_NAN_X), ValueError, "x"),
    "DeltaNet on the wrong width": (
        lambda: DeltaNetLayer(8, 2)(torch.randn(2, 5, 6)),
        ValueError,
        "x",
    ),
    "softmax attention on inf features": (lambda: SoftmaxAttention(8, 2)(_NAN_X), ValueError, "x"),
    # the LM and its config
    "config zero layers": (lambda: MesaNetConfig(num_layers=0), ValueError, "num_layers", "0"),
    "config unknown mixer": (lambda: MesaNetConfig(mixer="zzz"), ValueError, "mixer", "zzz"),
    "config unknown cg_start": (lambda: MesaNetConfig(cg_start="zzz"), ValueError, "cg_start"),
    "config unknown backend": (lambda: MesaNetConfig(backend="zzz"), ValueError, "backend", "zzz"),
    "config negative cg_tol": (lambda: MesaNetConfig(cg_tol=-1.0), ValueError, "cg_tol"),
    "config NaN norm_eps": (lambda: MesaNetConfig(norm_eps=float("nan")), ValueError, "norm_eps"),
    "LM on ids past the vocabulary": (lambda: _LM(_IDS + 11), ValueError, "idx"),
    "LM on negative ids": (lambda: _LM(_IDS - 20), ValueError, "idx"),
    "LM on float ids": (lambda: _LM(_IDS.float()), TypeError, "idx"),
    "LM on an empty sequence": (lambda: _LM(_IDS[:, :0]), ValueError, "idx"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
