"""ToProVAR's per-image adaptive policy (the paper's rule, the default).

Everything is decided online, per image, while it is generated (paper note 61440062035,
"Key designs" 1-3; the authors' code is not public):

- scale: after the always-dense first `dense_layers` layers of scale s, ``rho_s`` (share of
  the image's tokens below its mean entropy) is computed; the image's pruning depth is ``D =
  min{s >= min_depth : rho_s >= tau}`` and ``P_keep = 1`` for ``s < D``;
- layer: ``R^(l,s) = exp(-beta (sigma_1 / sigma_2 - 1))`` from an SVD of layer l's entropy
  map, done online on the map of the previous scale (the latest complete map of that layer:
  positions it did not compute are filled from its earlier map, area-upsampled);
- token: ``q_i = phi(s) R Hhat_i`` with ``phi(s) = s / S_max``, ``P_keep = 1 - clip(a_min +
  (a_max - a_min) q_i, 0, 1)``, and each token is kept with probability ``P_keep``
  (`sample_keep`, a Bernoulli draw from the policy's own generator seeded by `seed`, so a
  generation is reproducible). One draw per (scale, layer) serves its attention and MLP, and
  an image's conditional and unconditional (CFG) rows keep the same tokens.

``tau``, ``beta`` and the fallbacks come from a `Calibration` of the unpruned model
(pre-sampling); ``a_min`` / ``a_max`` are the budget.
"""

from __future__ import annotations

import math
import time

import torch

from toprovar import _checks
from toprovar.entropy import keep_probability, layer_score, normalise_entropy, scale_sparsity
from toprovar.pruning import (
    Calibration,
    PruningPolicy,
    calibrated_range,
    restore_tokens,
    upsample_tokens,
)


def sample_keep(p_keep: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Keep token i with probability ``p_keep[..., i]``: ``u < p_keep``, u uniform from `generator`.

    Returns a bool tensor of `p_keep`'s shape; its expected sum is ``p_keep.sum()``.
    """
    _checks.tensor("p_keep", p_keep)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
    u = torch.rand(p_keep.shape, generator=generator, dtype=torch.float64)
    return u.to(p_keep.device) < p_keep


def padded_indices(keep: torch.Tensor) -> torch.Tensor:
    """``(B, n)`` keep mask -> ``(B, m)`` ascending kept indices, ``-1``-padded, ``m = max(1, max
    count)`` (the padding convention of `gather_tokens` / `restore_tokens`)."""
    counts = keep.sum(1)
    m = max(1, int(counts.max()))
    order = torch.argsort((~keep).to(torch.int8), dim=1, stable=True)[:, :m]
    pos = torch.arange(m, device=keep.device)
    return torch.where(pos[None] < counts[:, None], order, torch.full_like(order, -1))


class ToProVARPolicy(PruningPolicy):
    """The paper's per-image adaptive ToProVAR (see the module docstring).

    Args:
        calibration: `Calibration` of the unpruned model: ``tau``, ``beta``, ``dense_layers``,
            ``min_depth``, and the offline R used where the previous map is 1x1.
        a_min, a_max: the token rule's pruning range (``0 <= a_min <= a_max <= 1``).
        seed: the keep sampler's generator seed (reset at every generation).

    After a generation: ``depth`` ``(B,)`` each image's D (``K + 1``: never pruned),
    ``scores[(k, l)]`` ``(B,)`` the online R, ``maps[(k, l)]`` ``(B, n_k)`` the entropy maps,
    ``kept[(k, l)]`` ``(B,)`` the tokens kept, ``svd_seconds`` the time spent in the SVDs.
    """

    name = "toprovar"
    layer_keep = True  # one draw per (scale, layer) serves its attention and MLP

    def __init__(
        self, calibration: Calibration, a_min: float = 0.0, a_max: float = 0.75, seed: int = 0
    ) -> None:
        super().__init__()
        self.a_min, self.a_max = calibrated_range(calibration, a_min, a_max)
        if not isinstance(seed, int):
            raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
        self.cal, self.seed = calibration, seed
        self.reset()

    def reset(self, copies: int = 1) -> None:
        super().reset(copies)
        self._gen = torch.Generator().manual_seed(self.seed)
        self.depth: torch.Tensor | None = None
        self.scores: dict[tuple[int, int], torch.Tensor] = {}
        self.maps: dict[tuple[int, int], torch.Tensor] = {}
        self.kept: dict[tuple[int, int], torch.Tensor] = {}
        self.svd_seconds = 0.0
        self._latest: dict[int, tuple[torch.Tensor, int]] = {}  # layer -> (map, side)
        self._source: torch.Tensor | None = None
        self._mlp: dict[tuple[int, int], torch.Tensor] = {}
        self._side = 1

    def wants_entropy(self, k: int, layer: int) -> bool:
        if layer < self.cal.dense_layers:  # the source: rho and Hhat at a prunable scale
            return k + 1 >= self.cal.min_depth
        # a pruned layer's map at scale k+1 gives its R at scale k+2
        return k + 2 >= self.cal.min_depth and k + 1 < self.cal.n_scales

    def observe(
        self, k: int, layer: int, entropy: torch.Tensor, idx: torch.Tensor | None = None
    ) -> None:
        b = entropy.shape[0] // self.copies
        e = entropy[:b].double()
        side = self._side
        if idx is not None:
            prev, side_prev = self._latest[layer]
            fallback = upsample_tokens(prev[..., None], side_prev, side)
            e = restore_tokens(e[..., None], idx[:b], fallback)[..., 0]
        self._latest[layer] = (e, side)
        self.maps[(k, layer)] = e
        if layer >= self.cal.dense_layers:
            return
        self._source = e if layer == 0 or self._source is None else self._source + e
        if layer == self.cal.dense_layers - 1:
            self._source = self._source / self.cal.dense_layers
            if self.depth is None:
                self.depth = torch.full((b,), self.cal.n_scales + 1, dtype=torch.long)
            if k + 1 >= self.cal.min_depth:
                hit = (scale_sparsity(self._source) >= self.cal.tau).cpu()
                self.depth = torch.where(hit & (self.depth > k + 1), k + 1, self.depth)

    def _layer_score(self, k: int, layer: int, b: int) -> torch.Tensor:
        prev = self._latest.get(layer)
        if prev is None or prev[1] < 2:
            r = float(self.cal.score[layer, k])
            return torch.full((b,), 1.0 if math.isnan(r) else r, dtype=torch.float64)
        t0 = time.perf_counter()
        score = layer_score(prev[0].reshape(b, prev[1], prev[1]), self.cal.beta).cpu()
        self.svd_seconds += time.perf_counter() - t0
        return score

    def select(
        self, k: int, layer: int, sublayer: str, x: torch.Tensor, side: int
    ) -> torch.Tensor | None:
        self._side = side
        if sublayer == "mlp":
            return self._mlp.pop((k, layer), None)
        if k == 0 or layer < self.cal.dense_layers or self.depth is None:
            return None
        active = self.depth <= k + 1
        if not bool(active.any()):
            return None
        if self._source is None or self._source.shape[1] != x.shape[1]:
            raise ValueError("ToProVAR: no entropy of this scale was observed (dense_layers >= 1?)")
        b = x.shape[0] // self.copies
        score = self._layer_score(k, layer, b)
        self.scores[(k, layer)] = score
        p = keep_probability(
            normalise_entropy(self._source).cpu(),
            k + 1,
            self.cal.n_scales,
            1,
            score[:, None],
            self.a_min,
            self.a_max,
        )
        keep = sample_keep(torch.where(active[:, None], p, torch.ones_like(p)), self._gen)
        self.kept[(k, layer)] = keep.sum(1)
        if bool(keep.all()):
            return None
        idx = padded_indices(keep).to(x.device).repeat(self.copies, 1)
        self._mlp[(k, layer)] = idx
        return idx
