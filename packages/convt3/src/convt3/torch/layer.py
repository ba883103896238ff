"""The ConvT3 (and ConvS5) SSM layer in PyTorch: the twin of `convt3.flax.ConvT3SSM`.

Forward pass for inputs ``U`` ``(N, T, U, H, W)`` (channel p, eigen-mode (m, n)):

1. ``mu_pmn = Lambda_p eps_p(theta_m, phi_n)``: the continuous eigenvalues of the state
   tensor ``A = (Q_P (x) Q_H (x) Q_W)[(Lambda (x) I (x) I) . E](...)^{-1}`` (paper, eq. for
   ``f(R, S)``), ``eps_p`` the spectrum of channel p's 3x3 PTT kernel (`convt3.spectral`).
2. ZOH: ``A_bar = exp(Delta_p mu)``, ``B_bar = (A_bar - 1) / mu`` per eigen-mode.
3. ``Z_k = A_bar . Z_{k-1} + B_bar . (Q_H^{-1} (B * U_k) Q_W^{-T})``: the input convolution in
   pixel space, moved to the eigenbasis by the sine transform, then a diagonal recurrence
   solved by a parallel scan over time.
4. ``X_k = Q_H Z_k Q_W^T`` and ``Y_k = 2 Re(C * X_k)``.

The recurrent state the layer returns and accepts is ``Z`` (the eigenbasis state), so that a
step costs two small matrix products per channel and no scan.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from convt3._checks import check_layer_config, check_sequence_shape, check_state_shape
from convt3.params import init_ssm_params
from convt3.spectral import sine_basis
from convt3.torch.scan import parallel_scan, sequential_scan


def _complex_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.complex128 if dtype == torch.float64 else torch.complex64


class ConvT3SSM(nn.Module):
    """ConvSSM with a 3x3 (``"3x3"``: ConvT3; ``"3x3_shared"``: MiniT3) or 1x1 (ConvS5) state kernel.

    Args:
        features: input and output channels U.
        state_size: 2P, ConvS5's ``ssm_size`` (P complex channels are kept, one per conjugate pair).
        kernel_b, kernel_c: sizes of the input (B) and output (C) convolutions.
        blocks: HiPPO-N blocks on the diagonal of the initial hidden-state matrix.
        state_kernel: ``"3x3"`` (ConvT3), ``"1x1"`` (ConvS5, no spatial parameters) or
            ``"3x3_shared"`` (MiniT3: one 3x3 spatial kernel for all channels, 3 parameters).
        discretization: ``"zoh"`` (default, the paper's continuous-time form) or ``"direct"``
            (the discrete state update itself is a 3x3 convolution; see `convt3.params`).
        lambda_param: ``"softplus"`` (ConvT3's Hurwitz map) or ``"clip"`` (ConvS5's).
        alpha_h, alpha_w: fixed off-diagonal ratios l/u of the spatial kernels (1: symmetric).
        dt_min, dt_max: range of the initial discretisation steps.
        parallel: scan in parallel (training) or step by step (the inference loop).
    """

    def __init__(
        self,
        features: int,
        state_size: int = 16,
        kernel_b: int = 3,
        kernel_c: int = 3,
        blocks: int = 1,
        state_kernel: str = "3x3",
        discretization: str = "zoh",
        lambda_param: str = "softplus",
        alpha_h: float = 1.0,
        alpha_w: float = 1.0,
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        parallel: bool = True,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        check_layer_config(
            features, state_size, kernel_b, kernel_c, blocks, state_kernel, discretization,
            lambda_param, alpha_h, alpha_w, dt_min, dt_max,
        )  # fmt: skip
        self.features, self.state_size, self.P = features, state_size, state_size // 2
        self.state_kernel, self.discretization = state_kernel, discretization
        self.lambda_param = lambda_param
        self.alpha_h, self.alpha_w = float(alpha_h), float(alpha_w)
        self.parallel = parallel
        if seed is None:
            seed = int(torch.randint(0, 2**31 - 1, ()).item())  # follows torch.manual_seed
        init = init_ssm_params(
            np.random.default_rng(seed), features, state_size, kernel_b, kernel_c, blocks,
            dt_min, dt_max, spatial=state_kernel != "1x1", lambda_param=lambda_param,
            shared_spatial=state_kernel == "3x3_shared",
        )  # fmt: skip
        dtype = torch.get_default_dtype()

        def param(name: str) -> nn.Parameter:
            return nn.Parameter(torch.tensor(init[name], dtype=dtype))

        self.Lambda_re, self.Lambda_im, self.log_step = (
            param("Lambda_re"), param("Lambda_im"), param("log_step")
        )  # fmt: skip
        self.B, self.C = param("B"), param("C")
        self.corner_logits: nn.Parameter | None = (
            param("corner_logits") if "corner_logits" in init else None
        )
        self._bases: dict[tuple[Any, ...], tuple[torch.Tensor, ...]] = {}

    # ------------------------------------------------------------------ the maths
    def continuous_lambda(self) -> torch.Tensor:
        re: torch.Tensor = self.Lambda_re
        re = -F.softplus(re) if self.lambda_param == "softplus" else re.clamp(max=-1e-4)
        return torch.complex(re, self.Lambda_im)

    def spatial_spectrum(self, H: int, W: int) -> torch.Tensor | None:
        """``(P, H, W)`` eigenvalues ``eps`` of the spatial kernels (None for 1x1)."""
        if self.corner_logits is None:
            return None
        logits: torch.Tensor = self.corner_logits
        if self.state_kernel == "3x3_shared":  # MiniT3: [l_1, l_2, l_3, 0] for every channel
            logits = F.pad(logits, (0, 1)).expand(self.P, 4)
        corners = 4 * torch.softmax(logits, -1)
        if self.discretization == "direct":
            corners = corners / corners.max(-1, keepdim=True).values
        pp, pm, mp, mm = corners.unbind(-1)
        a, b = (pp + pm + mp + mm) / 4, (pp + pm - mp - mm) / 4
        c, d = (pp - pm + mp - mm) / 4, (pp - pm - mp + mm) / 4
        ch = torch.cos(torch.arange(1, H + 1, dtype=corners.dtype) * torch.pi / (H + 1))
        cw = torch.cos(torch.arange(1, W + 1, dtype=corners.dtype) * torch.pi / (W + 1))
        ch, cw = ch.to(corners.device)[:, None], cw.to(corners.device)[None, :]
        return (
            a[:, None, None] + b[:, None, None] * ch + c[:, None, None] * cw
            + d[:, None, None] * ch * cw
        )  # fmt: skip

    def discretize(self, H: int, W: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(A_bar, B_gain)``, each ``(P, H, W)`` complex (``(P, 1, 1)`` for 1x1 kernels)."""
        Lambda = self.continuous_lambda()[:, None, None]
        step = torch.exp(self.log_step)[:, None, None]
        eps = self.spatial_spectrum(H, W)
        if eps is None or self.discretization == "direct":
            lam_bar = torch.exp(Lambda * step)
            gain = (lam_bar - 1) / Lambda
            A_bar = lam_bar if eps is None else lam_bar * eps
            return A_bar, gain
        mu = Lambda * eps
        A_bar = torch.exp(mu * step)
        return A_bar, (A_bar - 1) / mu

    def bases(self, H: int, W: int, device: Any) -> tuple[torch.Tensor, ...]:
        """Sine bases ``(Q_H, Q_H^{-1}, Q_W, Q_W^{-1})`` in the working complex dtype (cached)."""
        cdtype = _complex_dtype(self.Lambda_re.dtype)
        key = (H, W, str(device), cdtype)
        if key not in self._bases:
            Qh, Qh_inv, _ = sine_basis(H, self.alpha_h)
            Qw, Qw_inv, _ = sine_basis(W, self.alpha_w)
            self._bases[key] = tuple(
                torch.tensor(m, dtype=cdtype, device=device) for m in (Qh, Qh_inv, Qw, Qw_inv)
            )
        return self._bases[key]

    # ------------------------------------------------------------------ forward
    def _conv_complex_weight(self, w: torch.Tensor) -> torch.Tensor:
        return torch.complex(w[..., 0], w[..., 1])

    def to_eigenbasis(self, x: torch.Tensor) -> torch.Tensor:
        """Pixel-space ``(..., P, H, W)`` -> eigenbasis (identity for 1x1 kernels)."""
        if self.state_kernel == "1x1":
            return x
        _, Qh_inv, _, Qw_inv = self.bases(x.shape[-2], x.shape[-1], x.device)
        return torch.einsum("hk,...kl,wl->...hw", Qh_inv, x, Qw_inv)

    def from_eigenbasis(self, z: torch.Tensor) -> torch.Tensor:
        """Eigenbasis ``(..., P, H, W)`` -> pixel space (identity for 1x1 kernels)."""
        if self.state_kernel == "1x1":
            return z
        Qh, _, Qw, _ = self.bases(z.shape[-2], z.shape[-1], z.device)
        return torch.einsum("hk,...kl,wl->...hw", Qh, z, Qw)

    def forward(
        self, u: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``u`` ``(N, T, U, H, W)`` real, `state` ``(N, P, H, W)`` complex eigenbasis state or None.

        `u` of an integer dtype is cast to the parameters' dtype; a complex `u` or a real
        `state` (a pixel-space field passed without `to_eigenbasis`) is refused.

        Returns ``(y (N, T, U, H, W), last state (N, P, H, W))``.
        """
        if not isinstance(u, torch.Tensor):
            raise TypeError(f"u: expected a torch.Tensor, got {type(u).__name__}")
        N, T, U, H, W = check_sequence_shape(u.shape, self.features, self.alpha_h, self.alpha_w)
        if u.is_complex():
            raise TypeError(
                f"u: expected a real tensor (cast to the parameters' dtype), got {u.dtype}"
            )
        if not torch.isfinite(u).all():
            raise ValueError("u: contains NaN or infinite values")
        cdtype = _complex_dtype(self.Lambda_re.dtype)
        if state is not None:
            if not isinstance(state, torch.Tensor):
                raise TypeError(f"state: expected a torch.Tensor, got {type(state).__name__}")
            if not state.is_complex():
                raise TypeError(
                    f"state: expected the complex eigen-coordinate state (a previous call's last "
                    f"state or initial_state()), got a real {state.dtype} tensor; convert a "
                    "pixel-space field with layer.to_eigenbasis(x) first"
                )
            check_state_shape(state.shape, (N, self.P, H, W))
            if not torch.isfinite(torch.view_as_real(state)).all():
                raise ValueError("state: contains NaN or infinite values")
        A_bar, gain = self.discretize(H, W)
        Bw = self._conv_complex_weight(self.B)  # (P, U, k, k)
        Cw = self._conv_complex_weight(self.C)  # (U, P, k, k)
        flat = u.reshape(N * T, U, H, W).to(self.B.dtype)
        pad_b = Bw.shape[-1] // 2
        Bu = torch.complex(
            F.conv2d(flat, Bw.real, padding=pad_b), F.conv2d(flat, Bw.imag, padding=pad_b)
        ).reshape(N, T, self.P, H, W)
        drive = gain * self.to_eigenbasis(Bu)
        if state is not None:
            drive = torch.cat([drive[:, :1] + A_bar * state.to(cdtype)[:, None], drive[:, 1:]], 1)
        z = parallel_scan(A_bar, drive) if self.parallel else sequential_scan(A_bar, drive)
        x = self.from_eigenbasis(z).reshape(N * T, self.P, H, W)
        pad_c = Cw.shape[-1] // 2
        y = 2 * (
            F.conv2d(x.real, Cw.real, padding=pad_c) - F.conv2d(x.imag, Cw.imag, padding=pad_c)
        )
        return y.reshape(N, T, U, H, W), z[:, -1]

    def initial_state(self, batch: int, H: int, W: int) -> torch.Tensor:
        """Zeros ``(batch, P, H, W)`` complex."""
        return torch.zeros(
            batch, self.P, H, W, dtype=_complex_dtype(self.Lambda_re.dtype), device=self.B.device
        )

    def step(self, u: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One time step: ``u`` ``(N, U, H, W)``, `state` ``(N, P, H, W)`` -> ``(y (N, U, H, W), state)``."""
        if not isinstance(u, torch.Tensor) or u.dim() != 4:
            raise ValueError(
                f"u: expected a tensor of shape (batch, features, height, width), got "
                f"{getattr(u, 'shape', type(u).__name__)}"
            )
        y, z = self.forward(u[:, None], state)
        return y[:, 0], z
