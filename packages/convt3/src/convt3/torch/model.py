"""Blocks and frame predictors in PyTorch: ConvT3/ConvS5 stacks and the ConvLSTM baseline.

`ConvSSMBlock` is ConvS5's ``SequenceLayer`` with the ``"standard"`` C/D configuration
(NVlabs/ConvSSM ``Diag_CD_Conv``): ``h = GELU(GroupNorm(SSM(u) + D * u))``, then a residual
connection and a post-LayerNorm over channels. `FramePredictor` puts a 3x3 encoder
convolution before a stack of blocks and a 1x1 decoder after it, and predicts the next frame
as the current one plus the decoded change, for every model alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from convt3._checks import check_choice, check_int
from convt3.torch.layer import ConvT3SSM

MODELS = ("convt3", "minit3", "convs5", "convlstm")
SSM_KINDS = {  # model -> (state_kernel, lambda_param); MiniT3 is ConvT3 with one shared kernel
    "convt3": ("3x3", "softplus"),
    "minit3": ("3x3_shared", "softplus"),
    "convs5": ("1x1", "clip"),
}


def channel_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """LayerNorm over the channel axis of ``(..., C, H, W)`` (eps 1e-5, as torch and the Flax twin)."""
    mean = x.mean(-3, keepdim=True)
    var = x.var(-3, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * weight[:, None, None] + bias[:, None, None]


class ConvSSMBlock(nn.Module):
    """``(N, T, C, H, W) -> (N, T, C, H, W)``: SSM, D conv, GroupNorm, GELU, skip, LayerNorm."""

    def __init__(
        self,
        features: int,
        state_size: int,
        kernel_d: int = 3,
        groups: int = 1,
        **ssm_kwargs: object,
    ) -> None:
        super().__init__()
        check_int("groups", groups)
        if features % groups:
            raise ValueError(f"groups: expected a divisor of features={features}, got {groups}")
        self.ssm = ConvT3SSM(features, state_size, **ssm_kwargs)  # type: ignore[arg-type]
        self.D = nn.Conv2d(features, features, kernel_d, padding=kernel_d // 2)
        self.group_norm = nn.GroupNorm(groups, features)
        self.norm_weight = nn.Parameter(torch.ones(features))
        self.norm_bias = nn.Parameter(torch.zeros(features))

    def _post(self, u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        shape = u.shape
        flat_u = u.reshape(-1, *shape[-3:])
        h = y.reshape(-1, *shape[-3:]) + self.D(flat_u)
        h = F.gelu(self.group_norm(h))
        return channel_layer_norm(flat_u + h, self.norm_weight, self.norm_bias).reshape(shape)

    def forward(
        self, u: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        y, last = self.ssm(u, state)
        return self._post(u, y), last


@dataclass(frozen=True)
class PredictorConfig:
    """A small encoder / sequence model / decoder for next-frame prediction."""

    model: str = "convt3"  # convt3 | minit3 | convs5 | convlstm
    in_channels: int = 1  # frame channels plus known inputs (e.g. forcing)
    out_channels: int = 1  # predicted frame channels (the first out_channels of the input)
    d_model: int = 8
    state_size: int = 16  # ConvS5's ssm_size (2P); ConvLSTM: hidden channels
    n_layers: int = 2
    discretization: str = "zoh"
    groups: int = 1
    kernel_bc: int = 3  # size of the SSM's input (B) and output (C) kernels; 1 = the paper's
    # regime of largest ConvT3 gain (Hong et al. 2026, ablation: "B or C restricted to 1x1")
    dt_min: float = (
        1e-3  # initial SSM step range (ConvS5's default); ~1/sequence length is sensible
    )
    dt_max: float = 1e-1


class FramePredictor(nn.Module):
    """``frames (N, T, in_channels, H, W) -> next frames (N, T, out_channels, H, W)``.

    ``predict[:, k]`` estimates frame ``k + 1`` from frames ``0..k``.
    """

    def __init__(self, config: PredictorConfig) -> None:
        super().__init__()
        check_choice("model", config.model, MODELS)
        for name in ("in_channels", "out_channels", "d_model", "state_size", "n_layers"):
            check_int(name, getattr(config, name))
        if config.out_channels > config.in_channels:
            raise ValueError(
                f"out_channels: expected <= in_channels={config.in_channels}, got {config.out_channels}"
            )
        self.config = config
        d = config.d_model
        self.encoder = nn.Conv2d(config.in_channels, d, 3, padding=1)
        self.layers: nn.ModuleList
        if config.model == "convlstm":
            self.layers = nn.ModuleList(
                ConvLSTMCell(d, config.state_size) for _ in range(config.n_layers)
            )
        else:
            kernel, lam = SSM_KINDS[config.model]
            self.layers = nn.ModuleList(
                ConvSSMBlock(
                    d,
                    config.state_size,
                    groups=config.groups,
                    kernel_b=config.kernel_bc,
                    kernel_c=config.kernel_bc,
                    state_kernel=kernel,
                    discretization=config.discretization,
                    lambda_param=lam,
                    dt_min=config.dt_min,
                    dt_max=config.dt_max,
                )
                for _ in range(config.n_layers)
            )
        self.decoder = nn.Conv2d(d, config.out_channels, 1)

    def _check(self, frames: torch.Tensor) -> None:
        if not isinstance(frames, torch.Tensor) or frames.dim() != 5:
            raise ValueError(
                "frames: expected a tensor (batch, time, channels, height, width), got "
                f"{getattr(frames, 'shape', type(frames).__name__)}"
            )
        if frames.shape[2] != self.config.in_channels:
            raise ValueError(
                f"frames: expected {self.config.in_channels} channels on axis 2, got {tuple(frames.shape)}"
            )

    def forward(
        self, frames: torch.Tensor, states: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        self._check(frames)
        return self.run(frames, states)[0]

    def run(
        self, frames: torch.Tensor, states: list[torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Predictions and each layer's last state (pass them back to continue the sequence)."""
        N, T, C, H, W = frames.shape
        h = self.encoder(frames.reshape(N * T, C, H, W)).reshape(N, T, -1, H, W)
        new_states = []
        for i, layer in enumerate(self.layers):
            h, s = layer(h, None if states is None else states[i])
            new_states.append(s)
        delta = self.decoder(h.reshape(N * T, -1, H, W)).reshape(N, T, -1, H, W)
        return frames[:, :, : self.config.out_channels] + delta, new_states

    @torch.no_grad()
    def rollout(
        self, context: torch.Tensor, horizon: int, inputs: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Closed-loop prediction: read `context` ``(N, T0, C, H, W)``, then feed predictions back.

        `inputs` ``(N, horizon, C - out_channels, H, W)``: the known extra channels (forcing) of
        the frames being predicted, appended to each fed-back prediction. Returns
        ``(N, horizon, out_channels, H, W)``; the state is carried step by step (constant memory).
        """
        self._check(context)
        check_int("horizon", horizon)
        extra = self.config.in_channels - self.config.out_channels
        if extra and (inputs is None or inputs.shape[1] < horizon - 1 or inputs.shape[2] != extra):
            raise ValueError(
                f"inputs: expected (batch, >= horizon - 1, {extra}, H, W) known channels, got "
                f"{None if inputs is None else tuple(inputs.shape)}"
            )
        pred, states = self.run(context)
        frame = pred[:, -1:]
        out = [frame]
        for k in range(horizon - 1):
            nxt = frame if not extra else torch.cat([frame, inputs[:, k : k + 1]], 2)  # type: ignore[index]
            frame, states = self.run(nxt, states)
            out.append(frame)
        return torch.cat(out, 1)


class ConvLSTMCell(nn.Module):
    """ConvLSTM (Shi et al. 2015) as a sequence layer: ``(N, T, C, H, W) -> (N, T, C, H, W)``.

    Gates from one 3x3 convolution of ``[x_k, h_{k-1}]``; the hidden state is projected back
    to C channels by a 1x1 convolution and added to the input (the blocks' residual form).
    """

    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.gates = nn.Conv2d(features + hidden, 4 * hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, features, 1)

    def forward(
        self, x: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        N, T, _, H, W = x.shape
        if state is None:
            h = x.new_zeros(N, self.hidden, H, W)
            c = x.new_zeros(N, self.hidden, H, W)
        else:
            h, c = state.unbind(0)
        outs = []
        for k in range(T):
            i, f, o, g = self.gates(torch.cat([x[:, k], h], 1)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(x[:, k] + self.out(h))
        return torch.stack(outs, 1), torch.stack([h, c])


def count_parameters(model: nn.Module) -> int:
    """Trainable scalars (a complex parameter stored as (real, imag) counts twice)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def convlstm_hidden_for(target: int, config: PredictorConfig) -> int:
    """The ConvLSTM hidden size whose `FramePredictor` has closest to `target` parameters."""
    best, best_gap = 1, None
    for hidden in range(1, 4 * config.d_model + 1):
        n = count_parameters(FramePredictor(_replace(config, model="convlstm", state_size=hidden)))
        gap = abs(n - target)
        if best_gap is None or gap < best_gap:
            best, best_gap = hidden, gap
    return best


def _replace(config: PredictorConfig, **changes: object) -> PredictorConfig:
    from dataclasses import replace

    return replace(config, **changes)  # type: ignore[arg-type]
