"""The Mesa layer as an ``nn.Module`` (MesaNet, Sec. 3 and Fig. 1; fla's ``MesaNet`` layer).

x -> q, k (linear, short causal conv k=4 + SiLU, per-head L2 norm), v (linear),
gamma = exp(logsigmoid(W_a x)), beta = sigmoid(W_b x) (one scalar per head),
Lambda = softplus(theta) + lambda_lower_bound (per head and key dim, init 1.0),
o_t = G_t (H_t + Lambda)^{-1} q_t, per-head RMSNorm (optionally gated by SiLU(W_g x)), W_o.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mesa_layer.torch._checks import check_features, check_heads, check_state, upcast
from mesa_layer.torch.chunk import CG_STARTS, mesa_chunk
from mesa_layer.torch.fla_path import BACKENDS
from mesa_layer.torch.recurrent import mesa_step


@dataclass
class MesaCache:
    """Decoding state of one layer: ``(H, G)`` and the last ``conv_size - 1`` inputs of each conv."""

    H: torch.Tensor  # (B, heads, K, K), float32 (float64 for a float64 layer)
    G: torch.Tensor  # (B, heads, V, K): V the value head size, K the key head size
    conv_q: torch.Tensor  # (B, conv_size - 1, key_dim)
    conv_k: torch.Tensor


class ShortConvolution(nn.Module):
    """Depthwise causal 1-D convolution over time with SiLU, no bias (fla ``ShortConvolution``)."""

    def __init__(self, dim: int, kernel_size: int = 4) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.weight = nn.Parameter(torch.empty(dim, 1, kernel_size))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # nn.Conv1d's default

    def forward(
        self, x: torch.Tensor, past: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` ``(B, T, D)``; `past` the previous ``kernel_size - 1`` inputs. Returns (y, new past)."""
        B, _T, D = x.shape
        if past is None:
            past = x.new_zeros(B, self.kernel_size - 1, D)
        full = torch.cat([past.to(x.dtype), x], dim=1)
        y = F.conv1d(full.transpose(1, 2), self.weight.to(x.dtype), groups=D).transpose(1, 2)
        return F.silu(y), full[:, full.shape[1] - (self.kernel_size - 1) :]


class MesaLayer(nn.Module):
    """Drop-in sequence mixer ``(B, T, hidden) -> (B, T, hidden)``.

    Args:
        hidden_size: model width.
        num_heads: heads; must divide `hidden_size` unless `head_dim` is given.
        head_dim: key and value size per head (fla: K = V); default ``hidden_size // num_heads``.
        conv_size: short-convolution kernel on q and k (4).
        use_output_gate: RMSNorm(o) * SiLU(W_g x) instead of plain RMSNorm(o).
        lambda_lower_bound: floor of Lambda (0.25); must be > 0 so ``H + Lambda`` is SPD.
        lambda_init: initial Lambda (1.0).
        max_cg_steps_train / max_cg_steps_decode: CG iterations (30 / 30 in fla).
        cg_tol: optional relative residual tolerance for early stopping.
        chunk_size: chunk length of the chunkwise-parallel form (32; fla uses 64).
        forget_bias_init: initial bias of W_a (fla: 0, i.e. gamma ~ 0.5 at init).
        cg_start: ``"zero"`` (fla; 0 CG steps output 0) or ``"q"`` (0 steps give the GLA
            read-out ``G_t q_t``, the paper's k = 0 limit) for the chunkwise form.
        backend: which chunkwise op runs: ``"auto"``, ``"torch"`` or ``"fla"`` (fla's Triton
            kernels, CUDA); None reads ``$MESA_LAYER_BACKEND``. See `mesa_chunk`.
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int = 4,
        head_dim: int | None = None,
        conv_size: int = 4,
        use_output_gate: bool = False,
        lambda_lower_bound: float = 0.25,
        lambda_init: float = 1.0,
        max_cg_steps_train: int = 30,
        max_cg_steps_decode: int = 30,
        cg_tol: float | None = None,
        chunk_size: int = 32,
        norm_eps: float = 1e-6,
        forget_bias_init: float = 0.0,
        cg_start: str = "zero",
        backend: str | None = None,
    ) -> None:
        super().__init__()
        if cg_start not in CG_STARTS:
            raise ValueError(f"cg_start: expected one of {CG_STARTS}, got {cg_start!r}")
        if backend is not None and backend not in BACKENDS:
            raise ValueError(f"backend: expected one of {BACKENDS} or None, got {backend!r}")
        self.cg_start, self.backend = cg_start, backend
        for name, value in (("conv_size", conv_size), ("chunk_size", chunk_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        if head_dim is None:
            check_heads(hidden_size, num_heads)
        else:
            check_heads(hidden_size, 1)
            check_heads(num_heads, 1)
        for name, steps in (("max_cg_steps_train", max_cg_steps_train),
                            ("max_cg_steps_decode", max_cg_steps_decode)):  # fmt: skip
            if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
                raise ValueError(f"{name}: expected a non-negative int, got {steps!r}")
        if not lambda_lower_bound > 0:
            raise ValueError(
                f"lambda_lower_bound: expected > 0 (H + Lambda must stay SPD), got {lambda_lower_bound}"
            )
        if not lambda_init > lambda_lower_bound:
            raise ValueError(
                f"lambda_init: expected > lambda_lower_bound={lambda_lower_bound}, got {lambda_init}"
            )
        head_dim = hidden_size // num_heads if head_dim is None else head_dim
        if not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < 1:
            raise ValueError(f"head_dim: expected a positive int, got {head_dim!r}")
        self.hidden_size, self.num_heads, self.head_dim = hidden_size, num_heads, head_dim
        self.value_head_dim = head_dim  # v_proj has num_heads * head_dim outputs, as in fla
        self.key_dim = num_heads * head_dim
        self.lambda_lower_bound = lambda_lower_bound
        self.max_cg_steps_train, self.max_cg_steps_decode = max_cg_steps_train, max_cg_steps_decode
        self.cg_tol, self.chunk_size, self.norm_eps = cg_tol, chunk_size, norm_eps
        self.use_output_gate = use_output_gate
        self.q_proj = nn.Linear(hidden_size, self.key_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, self.key_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, self.key_dim, bias=False)
        self.a_proj = nn.Linear(hidden_size, num_heads, bias=True)  # forget gate gamma
        self.b_proj = nn.Linear(hidden_size, num_heads, bias=True)  # input gate beta
        self.q_conv = ShortConvolution(self.key_dim, conv_size)
        self.k_conv = ShortConvolution(self.key_dim, conv_size)
        # Lambda = softplus(theta) + floor; theta chosen so that Lambda = lambda_init
        theta0 = math.log(math.expm1(lambda_init - lambda_lower_bound))
        self.lambda_params = nn.Parameter(torch.full((self.key_dim,), theta0))
        self.lambda_params._no_weight_decay = True  # type: ignore[attr-defined]
        self.o_norm_weight = nn.Parameter(torch.ones(head_dim))
        self.g_proj = nn.Linear(hidden_size, self.key_dim, bias=False) if use_output_gate else None
        self.o_proj = nn.Linear(self.key_dim, hidden_size, bias=False)
        with torch.no_grad():
            self.a_proj.bias.fill_(forget_bias_init)
            self.b_proj.bias.zero_()

    @property
    def Lambda(self) -> torch.Tensor:
        """``(heads, head_dim)`` diagonal regulariser, always ``>= lambda_lower_bound``."""
        lam = F.softplus(upcast(self.lambda_params)) + self.lambda_lower_bound
        return lam.view(self.num_heads, self.head_dim)

    def init_cache(
        self, batch: int, device: torch.device | None = None, dtype: torch.dtype = torch.float32
    ) -> MesaCache:
        """An empty cache; states are float32 (or float64), never lower precision."""
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ValueError(f"batch: expected a positive int, got {batch!r}")
        K, V, NH = self.head_dim, self.value_head_dim, self.num_heads
        pad = self.q_conv.kernel_size - 1
        sdt = torch.float64 if dtype == torch.float64 else torch.float32
        return MesaCache(
            H=torch.zeros(batch, NH, K, K, device=device, dtype=sdt),
            G=torch.zeros(batch, NH, V, K, device=device, dtype=sdt),
            conv_q=torch.zeros(batch, pad, self.key_dim, device=device, dtype=dtype),
            conv_k=torch.zeros(batch, pad, self.key_dim, device=device, dtype=dtype),
        )

    def _project(self, x: torch.Tensor, cache: MesaCache | None) -> tuple[torch.Tensor, ...]:
        B, T, _ = x.shape
        q, conv_q = self.q_conv(self.q_proj(x), None if cache is None else cache.conv_q)
        k, conv_k = self.k_conv(self.k_proj(x), None if cache is None else cache.conv_k)
        v = self.v_proj(x)
        shape = (B, T, self.num_heads, self.head_dim)
        q = F.normalize(upcast(q.view(shape)), dim=-1)
        k = F.normalize(upcast(k.view(shape)), dim=-1)
        v = v.view(shape)
        g = F.logsigmoid(upcast(self.a_proj(x)))  # log gamma_t
        beta = torch.sigmoid(upcast(self.b_proj(x)))
        return q, k, v, g, beta, conv_q, conv_k

    def _output(self, o: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        B, T = x.shape[:2]
        o = F.rms_norm(upcast(o), (self.head_dim,), upcast(self.o_norm_weight), self.norm_eps)
        if self.g_proj is not None:
            o = o * F.silu(upcast(self.g_proj(x)).view(o.shape))
        return self.o_proj(o.reshape(B, T, self.key_dim).to(x.dtype))

    def _check_input(
        self, x: torch.Tensor, cache: MesaCache | None, cg_steps: int | None, cg_tol: float | None
    ) -> None:
        check_features(x, self.hidden_size, self.q_proj.weight.dtype)
        if cg_steps is not None and (
            not isinstance(cg_steps, int) or isinstance(cg_steps, bool) or cg_steps < 0
        ):
            raise ValueError(f"cg_steps: expected a non-negative int or None, got {cg_steps!r}")
        if cg_tol is not None and not (isinstance(cg_tol, int | float) and cg_tol >= 0):
            raise ValueError(f"cg_tol: expected a non-negative float or None, got {cg_tol!r}")
        if cache is None:
            return
        if not isinstance(cache, MesaCache):
            raise TypeError(
                f"cache: expected a MesaCache (layer.init_cache), got {type(cache).__name__}"
            )
        B = x.shape[0]
        conv = (B, self.q_conv.kernel_size - 1, self.key_dim)
        for name, t in (("conv_q", cache.conv_q), ("conv_k", cache.conv_k)):
            if tuple(t.shape) != conv:
                raise ValueError(f"cache: {name} expected shape {conv}, got {tuple(t.shape)}")
        check_state(
            (cache.H, cache.G), B, self.num_heads, self.head_dim, self.value_head_dim, "cache"
        )

    def forward(
        self,
        x: torch.Tensor,
        cache: MesaCache | None = None,
        use_cache: bool = False,
        cg_steps: int | None = None,
        cg_tol: float | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, MesaCache]:
        """``x`` ``(B, T, hidden)``. With `use_cache`, returns ``(y, cache)``.

        A one-token input with a cache runs the recurrent step (Jacobi-started CG,
        ``max_cg_steps_decode``); anything else the chunkwise form starting from the
        cache's state (CG from 0, ``max_cg_steps_train``). `cg_steps` / `cg_tol` override
        the layer's defaults (inference-time compute).
        """
        self._check_input(x, cache, cg_steps, cg_tol)
        tol = self.cg_tol if cg_tol is None else cg_tol
        q, k, v, g, beta, conv_q, conv_k = self._project(x, cache)
        if cache is not None and x.shape[1] == 1:
            steps = self.max_cg_steps_decode if cg_steps is None else cg_steps
            o, (H, G) = mesa_step(
                q[:, 0],
                k[:, 0],
                v[:, 0],
                g[:, 0],
                beta[:, 0],
                self.Lambda,
                (cache.H, cache.G),
                steps,
                tol,
            )
            o = o[:, None]
        else:
            steps = self.max_cg_steps_train if cg_steps is None else cg_steps
            state = None if cache is None else (cache.H, cache.G)
            o, (H, G) = mesa_chunk(
                q,
                k,
                v,
                g,
                beta,
                self.Lambda,
                state,
                chunk_size=self.chunk_size,
                max_cg_steps=steps,
                cg_tol=tol,
                cg_start=self.cg_start,
                backend=self.backend,
            )
        y = self._output(o, x)
        if use_cache:
            return y, MesaCache(H=H, G=G, conv_q=conv_q, conv_k=conv_k)
        return y
