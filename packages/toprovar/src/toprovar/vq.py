"""The VAR tokenizer: a multi-scale residual vector quantiser with VAR's per-scale phi convs.

Tian et al. (2024), ``models/quant.py`` of FoundationVision/VAR. The image goes through a
small conv encoder to a feature ``f`` of ``(latent, H, W)`` (the image's resolution,
or half of it with ``downsample=2``). For scales ``pn_1 < ... < pn_K = H`` the residual is quantised coarse to fine
with one shared codebook:

    z_k = area_down(f - f_hat_{k-1}, pn_k);  r_k = argmin_v ||z_k - e_v||;
    h_k = phi_k(bicubic_up(e[r_k], H));      f_hat_k = f_hat_{k-1} + h_k,

with ``phi_k(h) = (1 - ratio) h + ratio conv3x3_k(h)`` (VAR's `Phi`, ratio 0.5; no resize at
the last scale). Loss: reconstruction L2 + the VQ loss ``mean_k beta ||sg(f_hat_k) - f||^2 +
||f_hat_k - sg(f)||^2`` with a straight-through ``f_hat``. The generator's teacher-forcing
input for scale k+1 is ``area_down(f_hat_k, pn_{k+1})`` (`next_scale_inputs`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn


class Phi(nn.Module):
    """VAR's residual 3x3 conv after each scale's upsampled codes: ``(1-r) h + r conv(h)``."""

    def __init__(self, channels: int, ratio: float = 0.5) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.ratio = ratio

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h * (1.0 - self.ratio) + self.conv(h) * self.ratio


class MultiScaleVQ(nn.Module):
    """Conv encoder, multi-scale residual VQ (shared codebook, one phi per scale), conv decoder.

    Args:
        in_channels: image channels (1 for digits and faces).
        hidden: conv width.
        latent: codebook vector size (the feature's channels, VAR's Cvae).
        vocab: codebook size.
        scales: side lengths ``pn_k`` (increasing; the last is the feature's side).
        beta: commitment weight (VAR's 0.25).
        downsample: image side / feature side, 1 or 2 (a stride-2 conv and its transpose).
    """

    def __init__(
        self,
        in_channels: int = 1,
        hidden: int = 32,
        latent: int = 16,
        vocab: int = 64,
        scales: Sequence[int] = (1, 2, 4, 8, 16),
        beta: float = 0.25,
        downsample: int = 1,
    ) -> None:
        super().__init__()
        if list(scales) != sorted(set(scales)) or scales[0] < 1:
            raise ValueError(f"scales: expected strictly increasing positive sides, got {scales!r}")
        if downsample not in (1, 2):
            raise ValueError(f"downsample: expected 1 or 2, got {downsample!r}")
        self.scales = tuple(int(s) for s in scales)
        self.latent, self.vocab, self.beta, self.down_factor = latent, vocab, beta, downsample
        down: nn.Module = (
            nn.Conv2d(hidden, hidden, 4, stride=2, padding=1)
            if downsample == 2
            else nn.Conv2d(hidden, hidden, 3, padding=1)
        )
        up: nn.Module = (
            nn.ConvTranspose2d(hidden, hidden, 4, stride=2, padding=1)
            if downsample == 2
            else nn.Conv2d(hidden, hidden, 3, padding=1)
        )
        self.encoder = nn.Sequential(
            nn.Conv2d(in_channels, hidden, 3, padding=1),
            nn.SiLU(),
            down,
            nn.SiLU(),
            nn.Conv2d(hidden, latent, 1),
        )
        self.decoder = nn.Sequential(
            nn.Conv2d(latent, hidden, 3, padding=1),
            nn.SiLU(),
            up,
            nn.SiLU(),
            nn.Conv2d(hidden, in_channels, 3, padding=1),
        )
        self.codebook = nn.Embedding(vocab, latent)
        # VAR initialises the codebook uniformly in +-1/vocab
        nn.init.uniform_(self.codebook.weight, -1.0 / vocab, 1.0 / vocab)
        self.phis = nn.ModuleList(Phi(latent) for _ in self.scales)

    @property
    def side(self) -> int:
        """The feature map's side (the last scale)."""
        return self.scales[-1]

    @property
    def image_side(self) -> int:
        return self.scales[-1] * self.down_factor

    def _up(self, h: torch.Tensor, k: int) -> torch.Tensor:
        """Scale k's code map to the feature's side, then phi_k (no resize at the last scale)."""
        if k != len(self.scales) - 1:
            h = F.interpolate(h, size=(self.side, self.side), mode="bicubic")
        return self.phis[k](h)

    def codes_to_map(self, idx: torch.Tensor, k: int) -> torch.Tensor:
        """``(B, pn_k^2)`` code indices -> ``(B, latent, pn_k, pn_k)`` codebook vectors."""
        pn = self.scales[k]
        return self.codebook(idx).transpose(1, 2).reshape(idx.shape[0], self.latent, pn, pn)

    def quantise(self, f: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        """Residual quantisation of ``f (B, latent, H, W)``: ``(f_hat, [idx_k (B, pn_k^2)], vq_loss)``.

        `f_hat` is the exact sum of the scales' phi-mapped codes (`fhat_from_codes` of the
        codes gives it bit for bit); `forward` adds the straight-through gradient.
        """
        f_rest = f.detach().clone()
        f_hat = torch.zeros_like(f_rest)
        idx_list: list[torch.Tensor] = []
        vq_loss = f.new_zeros(())
        last = len(self.scales) - 1
        for k, pn in enumerate(self.scales):
            z = F.interpolate(f_rest, size=(pn, pn), mode="area") if k != last else f_rest
            z = z.permute(0, 2, 3, 1).reshape(-1, self.latent)
            dist = (z * z).sum(1, keepdim=True) - 2 * z @ self.codebook.weight.T
            dist = dist + (self.codebook.weight**2).sum(1)[None]
            idx = dist.argmin(1).view(f.shape[0], pn * pn)
            idx_list.append(idx)
            h = self._up(self.codes_to_map(idx, k), k)
            f_hat = f_hat + h
            f_rest = f_rest - h.detach()
            vq_loss = (
                vq_loss + self.beta * F.mse_loss(f_hat.detach(), f) + F.mse_loss(f_hat, f.detach())
            )
        return f_hat, idx_list, vq_loss / len(self.scales)

    def fhat_from_codes(self, idx_list: Sequence[torch.Tensor]) -> torch.Tensor:
        """Sum of the upsampled, phi-mapped codes of the given (first len(idx_list)) scales."""
        f_hat: torch.Tensor | None = None
        for k, idx in enumerate(idx_list):
            h = self._up(self.codes_to_map(idx, k), k)
            f_hat = h if f_hat is None else f_hat + h
        if f_hat is None:
            raise ValueError("idx_list: expected at least one scale of codes, got none")
        return f_hat

    def next_scale_inputs(self, idx_list: Sequence[torch.Tensor]) -> torch.Tensor:
        """Teacher forcing: ``(B, sum_{k>=2} pn_k^2, latent)``, area_down(f_hat_k, pn_{k+1}) per scale."""
        out = []
        f_hat: torch.Tensor | None = None
        for k in range(len(self.scales) - 1):
            h = self._up(self.codes_to_map(idx_list[k], k), k)
            f_hat = h if f_hat is None else f_hat + h
            out.append(self.downsample(f_hat, k + 1))
        return torch.cat(out, 1)

    def downsample(self, f_hat: torch.Tensor, k: int) -> torch.Tensor:
        """``f_hat (B, latent, H, W)`` -> scale k's tokens ``(B, pn_k^2, latent)`` (area)."""
        pn = self.scales[k]
        z = f_hat if pn == self.side else F.interpolate(f_hat, size=(pn, pn), mode="area")
        return z.flatten(2).transpose(1, 2)

    def decode(self, f_hat: torch.Tensor) -> torch.Tensor:
        """``f_hat (B, latent, H, W)`` -> images ``(B, C, H, W)``."""
        return self.decoder(f_hat)

    def forward(
        self, images: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        """``(reconstruction, codes, vq_loss)`` of images ``(B, C, H, W)`` in [-1, 1]."""
        f = self.encoder(images)
        f_hat, idx, vq_loss = self.quantise(f)
        f_st = f + (f_hat - f).detach()  # straight-through: the decoder's gradient reaches f
        return self.decode(f_st), idx, vq_loss
