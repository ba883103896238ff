"""The VADD networks: a latent-conditioned masked-diffusion denoiser and the recognition model.

Both are the `masked_diffusion` transformer (MDLM's DiT, shrunk); nothing is copied.

* Decoder ``mu_theta(x_t, z, t)`` (paper Sec. 3, "GenDIT" in the authors' code): the MDM denoiser
  with the latent injected through adaLN. ``c = latent_mlp(z)`` is the backbone's ``cond``, so
  every block computes ``LN(h)(1 + scale) + shift`` with ``(shift, scale, gate) = W c``. With
  ``latent_dim = 0`` the decoder *is* the unconditioned MDM network (no extra parameters).
* Recognition ``r_phi(z | x0, x_t, t) = N(m_phi, diag sigma_phi^2)`` ("InferDIT"): the same
  backbone reads the clean tokens x0; the mask pattern ``M_t`` of x_t enters as a learned vector
  ``R_phi`` added to the adaLN input of the masked positions only (``c_i = c_t + M_t^i R_phi``),
  and t through the time embedding. Per-token outputs are mean-pooled to one global
  ``(m, log sigma)`` in R^d, matching the paper's ``p(z) = N(0_d, I_d)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from masked_diffusion import BackboneConfig, MaskedDiffusionTransformer
from torch import nn

LOG_SIGMA_RANGE = (-7.0, 3.0)
"""Clamp of the recognition log-std (keeps exp(2 log sigma) finite early in training)."""


@dataclass(frozen=True)
class VADDConfig:
    """Sizes of the decoder and the recognition model.

    latent_dim: d, the dimension of z (0 switches the latent off: a plain MDM).
    latent_hidden: width of the z-embedding MLP ``z -> c`` (the paper's ``latentMLP``).
    recog_d_model / recog_layers: recognition size (default: as the decoder).
    learned_positions: add absolute positions (needed on 2-D toys and images, where the
        all-mask start is a constant input; see `masked_diffusion.BackboneConfig`).
    """

    vocab_size: int
    seq_len: int
    latent_dim: int = 4
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    mlp_ratio: int = 4
    latent_hidden: int = 64
    recog_d_model: int | None = None
    recog_layers: int | None = None
    grid: tuple[int, int] | None = None
    learned_positions: bool = True
    time_conditioning: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.latent_dim, int) or self.latent_dim < 0:
            raise ValueError(f"latent_dim: expected an int >= 0, got {self.latent_dim!r}")
        if not isinstance(self.latent_hidden, int) or self.latent_hidden <= 0:
            raise ValueError(f"latent_hidden: expected a positive int, got {self.latent_hidden!r}")
        self.backbone()  # validates the decoder's sizes now, not at model construction

    def backbone(self) -> BackboneConfig:
        """The decoder's backbone config (``d_cond`` only when the latent is on)."""
        return BackboneConfig(
            self.vocab_size,
            self.seq_len,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            mlp_ratio=self.mlp_ratio,
            d_cond=self.latent_hidden if self.latent_dim > 0 else None,
            time_conditioning=self.time_conditioning,
            grid=self.grid,
            learned_positions=self.learned_positions,
        )


class Recognition(nn.Module):
    """``r_phi(z | x0, M_t, t)``: diagonal Gaussian over the global latent z in R^d.

    Initialisation: the output head is zero, so r = N(0, I) = p(z) at the start (KL = 0);
    ``R_phi ~ N(0, 1/d)`` as in the authors' code.
    """

    def __init__(self, cfg: VADDConfig) -> None:
        super().__init__()
        d = cfg.recog_d_model or cfg.d_model
        self.latent_dim = cfg.latent_dim
        self.net = MaskedDiffusionTransformer(
            BackboneConfig(
                cfg.vocab_size,
                cfg.seq_len,
                d_model=d,
                n_heads=cfg.n_heads,
                n_layers=cfg.recog_layers or cfg.n_layers,
                mlp_ratio=cfg.mlp_ratio,
                d_cond=d,
                time_conditioning=True,
                grid=cfg.grid,
                learned_positions=cfg.learned_positions,
            )
        )
        # The backbone's vocabulary head becomes the (m, log sigma) head: reuse, not a copy.
        self.net.head = nn.Linear(d, 2 * cfg.latent_dim)
        nn.init.zeros_(self.net.head.weight)
        nn.init.zeros_(self.net.head.bias)
        self.mask_vector = nn.Parameter(torch.randn(d) / math.sqrt(d))

    def forward(
        self, x0: torch.Tensor, masked: torch.Tensor, t: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(m, log sigma), each (batch, d), for x0 (batch, L), masked (batch, L) bool, t (batch,)."""
        cond = masked.to(self.mask_vector.dtype)[..., None] * self.mask_vector
        out = self.net(x0, t, cond=cond).mean(dim=1)
        m, log_sigma = out.chunk(2, dim=-1)
        return m, log_sigma.clamp(*LOG_SIGMA_RANGE)


class VADD(nn.Module):
    """Decoder ``mu_theta(x_t, z, t)`` plus recognition ``r_phi(z | x0, x_t, t)``.

    ``model.logits(x_t, t, z)`` is the z-conditioned denoiser; ``model.posterior(x0, x_t, t)``
    the recognition Gaussian; ``model.prior_denoiser(...)`` the sampler's denoiser with
    ``z ~ N(0, I)`` drawn afresh at every call (every denoising step, paper Algorithm 2).
    """

    def __init__(self, cfg: VADDConfig) -> None:
        super().__init__()
        if not isinstance(cfg, VADDConfig):
            raise TypeError(f"cfg: expected a VADDConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.decoder = MaskedDiffusionTransformer(cfg.backbone())
        self.latent_mlp: nn.Module | None = None
        self.recognition: Recognition | None = None
        if cfg.latent_dim > 0:
            h = cfg.latent_hidden
            self.latent_mlp = nn.Sequential(
                nn.Linear(cfg.latent_dim, h), nn.SiLU(), nn.Linear(h, h)
            )
            self.recognition = Recognition(cfg)

    @property
    def vocab_size(self) -> int:
        return self.cfg.vocab_size

    @property
    def mask_id(self) -> int:
        return self.cfg.vocab_size

    @property
    def latent_dim(self) -> int:
        return self.cfg.latent_dim

    def logits(
        self, x_t: torch.Tensor, t: torch.Tensor, z: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Decoder logits (batch, L, V) for x_t (batch, L), t (batch,), z (batch, d) or None."""
        if z is None or self.latent_mlp is None:
            if z is not None:
                raise ValueError("z: this model has latent_dim=0; pass z=None")
            return self.decoder(x_t, t)
        if z.ndim != 2 or tuple(z.shape) != (x_t.shape[0], self.latent_dim):
            raise ValueError(
                f"z: expected shape ({x_t.shape[0]}, {self.latent_dim}), got {tuple(z.shape)}"
            )
        if not bool(torch.isfinite(z).all()):
            raise ValueError("z: contains NaN or infinite values")
        return self.decoder(x_t, t, cond=self.latent_mlp(z))

    def posterior(
        self, x0: torch.Tensor, x_t: torch.Tensor, t: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(m, log sigma) of ``r_phi(z | x0, x_t, t)``; x_t enters only through its mask pattern."""
        if self.recognition is None:
            raise ValueError("latent_dim: the model has no latent (latent_dim=0)")
        return self.recognition(x0, x_t == self.mask_id, t)

    def forward(self, x0: torch.Tensor, generator: torch.Generator | None = None, **kw):
        """The training loss (a scalar); see `vadd.loss.vadd_loss` for the keyword arguments.

        Going through ``forward`` keeps DDP's gradient synchronisation working.
        """
        from vadd.loss import vadd_loss

        return vadd_loss(self, x0, generator=generator, **kw).loss

    def prior_denoiser(
        self, generator: torch.Generator | None = None, latent: str = "step"
    ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        """The denoiser ``f(x_t, t) -> logits`` of the sampler, for `masked_diffusion` samplers.

        latent: ``"step"`` draws a fresh ``z ~ N(0, I)`` at every call (one latent per denoising
        step, the paper's Algorithm 2); ``"sample"`` draws one z per sequence at the first call and
        keeps it for the whole chain (a conditional-VAE style variant, for ablations).
        """
        if latent not in ("step", "sample"):
            raise ValueError(f"latent: expected 'step' or 'sample', got {latent!r}")
        fixed: dict[str, torch.Tensor] = {}

        def denoiser(x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            if self.latent_dim == 0:
                return self.logits(x_t, t)
            if latent == "sample" and "z" in fixed:
                z = fixed["z"]
            else:
                z = torch.randn(
                    (x_t.shape[0], self.latent_dim), generator=generator, device=x_t.device
                )
                fixed["z"] = z
            return self.logits(x_t, t, z)

        return denoiser
