"""Pruning policies over the same generation hooks: none, ToProVAR, FastVAR, SkipVAR.

A policy is asked, for every scale k (0-based), layer l and sublayer (``"attn"``, ``"mlp"``),
which tokens to compute (`select`: ``None`` for all, else ``(B, n_keep)`` indices). The
sublayer runs on the kept tokens only (attention: the kept queries, and only their keys and
values enter the KV cache); `restore` puts the kept outputs back and fills the dropped
positions from the last densely computed output of the same sublayer, upsampled to the
current scale (FastVAR's cached restoration: gather -> compute -> scatter into the cache).

- `ToProVARPolicy`: from a `Calibration` of the unpruned model (attention entropies of a few
  generations): pruning depth D from ``rho_s`` and ``tau``, layer scores ``R_{l,s}`` from the
  spectral ratio of the layer's entropy map, and token keep probabilities ``P_keep = 1 -
  clip(a_min + (a_max - a_min) phi(s) R Hhat_i)``. The number kept at (s, l) is the
  calibrated expected count ``round(n mean P_keep)``; the kept tokens are those with the
  highest ``P_keep`` (lowest normalised entropy) of the current sample, with the entropy of
  the always-dense first `dense_layers` layers at the current scale (Flash-Attention-Entropy).
- `FastVARPolicy`: tokens ranked by ``||x_i - mean(x)||^2`` of the sublayer's input, fixed
  drop ratios on given scales, layers ``first_layer..last_layer-1``.
- `SkipVARPolicy`: the last `n_skip` scales are not generated; the image is decoded from the
  accumulated feature (already at full resolution).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from toprovar import _checks
from toprovar.entropy import keep_probability, normalise_entropy

SUBLAYERS = ("attn", "mlp")


def gather_tokens(x: torch.Tensor, idx: torch.Tensor | None) -> torch.Tensor:
    """``x (B, n, d)`` at ``idx (B, k)`` -> ``(B, k, d)``; ``idx=None`` returns `x` itself.

    A negative index is padding (rows of a batch keep different numbers of tokens): it gathers
    token 0, whose result `restore_tokens` discards and whose key the attention masks out.
    """
    if idx is None:
        return x
    return torch.gather(x, 1, idx.clamp(min=0).unsqueeze(-1).expand(-1, -1, x.shape[-1]))


def upsample_tokens(cached: torch.Tensor, side_from: int, side_to: int) -> torch.Tensor:
    """``(B, side_from^2, d)`` token map -> ``(B, side_to^2, d)`` by area interpolation (FastVAR)."""
    b, _, d = cached.shape
    grid = cached.transpose(1, 2).reshape(b, d, side_from, side_from)
    if side_from != side_to:
        grid = F.interpolate(grid, size=(side_to, side_to), mode="area")
    return grid.reshape(b, d, side_to * side_to).transpose(1, 2)


def restore_tokens(
    kept: torch.Tensor, idx: torch.Tensor | None, fallback: torch.Tensor | None
) -> torch.Tensor:
    """Scatter ``kept (B, k, d)`` into a copy of ``fallback (B, n, d)`` at ``idx (B, k)``.

    ``idx=None`` (all kept) returns `kept` itself: keep-all gather then restore is the identity.
    Padding (negative indices) is dropped.
    """
    if idx is None:
        return kept
    if fallback is None:
        raise ValueError(
            "fallback: a pruned sublayer needs an earlier dense output to restore from"
        )
    n = fallback.shape[1]
    if bool((idx < 0).any()):  # padding lands in one extra row that is cut off
        idx = torch.where(idx < 0, n, idx)
        fallback = torch.cat([fallback, fallback[:, :1]], 1)
    out = fallback.scatter(1, idx.unsqueeze(-1).expand(-1, -1, kept.shape[-1]), kept)
    return out[:, :n]


def _sorted_topk(score: torch.Tensor, k: int) -> torch.Tensor:
    return torch.topk(score, k, dim=-1, sorted=False).indices.sort(-1).values


class PruningPolicy:
    """No pruning; the base of the others (its restoration cache is shared by all)."""

    name = "none"
    # True: `select(k, l, "mlp", ...)` returns the tokens `select(k, l, "attn", ...)` returned
    # (one keep set per layer), so `generate` can run a pruned layer in one gather and scatter
    layer_keep = False

    def __init__(self) -> None:
        self._dense: dict[tuple[int, str], tuple[torch.Tensor, int]] = {}
        self.copies = 1

    def reset(self, copies: int = 1) -> None:
        """Forget the previous generation's cached outputs (called at its start).

        `copies`: rows per image in the batch (2 under classifier-free guidance: the
        conditional rows first, then the unconditional ones).
        """
        self._dense = {}
        self.copies = copies

    def check_scales(self, n_scales: int) -> None:
        """Raise if the policy names a scale the model does not have (called by `generate`)."""

    def skip_scale(self, k: int, n_scales: int) -> bool:
        return False

    def wants_entropy(self, k: int, layer: int) -> bool:
        return False

    def observe(
        self, k: int, layer: int, entropy: torch.Tensor, idx: torch.Tensor | None = None
    ) -> None:
        """Entropy ``(B, n_kept)`` (mean over heads) of the queries ``idx`` (None: all) computed
        at scale k, layer `layer`."""

    def select(
        self, k: int, layer: int, sublayer: str, x: torch.Tensor, side: int
    ) -> torch.Tensor | None:
        return None

    def restore(
        self, layer: int, sublayer: str, out: torch.Tensor, idx: torch.Tensor | None, side: int
    ) -> torch.Tensor:
        """The sublayer's full ``(B, side^2, d)`` output; dense outputs are cached for later scales."""
        if idx is None:
            self._dense[(layer, sublayer)] = (out, side)
            return out
        return restore_tokens(out, idx, self.fallback(layer, sublayer, side))

    def fallback(self, layer: int, sublayer: str, side: int) -> torch.Tensor:
        """What a pruned sublayer's dropped positions get: its last dense output, upsampled to
        the current scale, ``(B, side^2, d)``."""
        key = (layer, sublayer)
        if key not in self._dense:
            raise ValueError(
                f"layer {layer} {sublayer}: pruned before any dense scale was computed "
                "(prune from scale 2 on)"
            )
        cached, side_from = self._dense[key]
        return upsample_tokens(cached, side_from, side)


class FastVARPolicy(PruningPolicy):
    """FastVAR's rule: keep the ``(1 - drop_k)`` share of tokens farthest from the scale mean.

    Args:
        drop: ``{scale index k (0-based): drop ratio in [0, 1)}``.
        first_layer, last_layer: the pruned layers ``first_layer <= l < last_layer``
            (FastVAR leaves the first and last few of Infinity's 32 layers dense).
    """

    name = "fastvar"

    def __init__(
        self, drop: Mapping[int, float], first_layer: int = 1, last_layer: int | None = None
    ) -> None:
        super().__init__()
        for k, r in drop.items():
            _checks.number(f"drop[{k}]", r, 0.0, 1.0)
            if r >= 1.0:
                raise ValueError(f"drop[{k}]: expected a ratio in [0, 1), got {r}")
            if k < 1:
                raise ValueError(
                    f"drop: scale index {k} cannot be pruned (needs an earlier dense scale)"
                )
        self.drop = dict(drop)
        self.first_layer, self.last_layer = first_layer, last_layer

    def check_scales(self, n_scales: int) -> None:
        beyond = sorted(k for k in self.drop if k >= n_scales)
        if beyond:
            raise ValueError(
                f"drop: scale indices {beyond} do not exist in a model with {n_scales} scales "
                f"(expected indices 1..{n_scales - 1})"
            )

    def select(
        self, k: int, layer: int, sublayer: str, x: torch.Tensor, side: int
    ) -> torch.Tensor | None:
        last = self.last_layer if self.last_layer is not None else 1 << 30
        if k not in self.drop or not self.first_layer <= layer < last:
            return None
        n = x.shape[1]
        keep = n - int(n * self.drop[k])
        if keep >= n:
            return None
        score = ((x - x.mean(1, keepdim=True)) ** 2).sum(-1)
        return _sorted_topk(score, keep)


class SkipVARPolicy(PruningPolicy):
    """Skip the last `n_skip` scales (decode the accumulated, already full-resolution feature)."""

    name = "skipvar"

    def __init__(self, n_skip: int = 1) -> None:
        super().__init__()
        self.n_skip = _checks.positive_int("n_skip", n_skip)

    def skip_scale(self, k: int, n_scales: int) -> bool:
        if self.n_skip >= n_scales:
            raise ValueError(f"n_skip: expected < n_scales={n_scales}, got {self.n_skip}")
        return k >= n_scales - self.n_skip


@dataclass
class Calibration:
    """ToProVAR's statistics of the unpruned model (`toprovar.generation.calibrate`).

    rho: ``(K,)`` share of below-mean-entropy tokens per scale (mean over layers, samples).
    depth: D, the first pruned scale (1-based).
    varrho: ``(layers, K)`` mean spectral ratio sigma_1 / sigma_2 (NaN for 1x1 scales).
    score: ``(layers, K)`` mean layer score R = exp(-beta (varrho - 1)) (NaN for 1x1).
    beta: the beta used.
    source: per scale, ``(N, n_k)`` normalised entropy Hhat of the source layers.
    min_depth: the earliest prunable scale (1-based, >= 2).
    rho_images: ``(N, K)`` each calibration image's rho_s from the source layers (what the
        adaptive policy computes online).
    """

    rho: torch.Tensor
    depth: int
    varrho: torch.Tensor
    score: torch.Tensor
    beta: float
    tau: float
    dense_layers: int
    source: list[torch.Tensor] = field(default_factory=list)
    min_depth: int = 2
    rho_images: torch.Tensor | None = None

    @property
    def n_scales(self) -> int:
        return int(self.rho.shape[0])

    def keep_ratio(self, k: int, layer: int, a_min: float, a_max: float) -> float:
        """Calibrated mean P_keep at scale index k (0-based), layer `layer`."""
        if k + 1 < self.depth or layer < self.dense_layers:
            return 1.0
        r = float(self.score[layer, k])
        if math.isnan(r):
            return 1.0
        p = keep_probability(self.source[k], k + 1, self.n_scales, self.depth, r, a_min, a_max)
        return float(p.mean())


def calibrated_range(calibration: object, a_min: object, a_max: object) -> tuple[float, float]:
    """The ToProVAR policies' common arguments: a `Calibration` and ``0 <= a_min <= a_max <= 1``."""
    if not isinstance(calibration, Calibration):
        raise TypeError(f"calibration: expected a Calibration, got {type(calibration).__name__}")
    lo, hi = _checks.number("a_min", a_min, 0.0, 1.0), _checks.number("a_max", a_max, 0.0, 1.0)
    if hi < lo:
        raise ValueError(f"a_max: expected >= a_min={a_min}, got {a_max}")
    return lo, hi


class ToProVARTopKPolicy(PruningPolicy):
    """0.1.0's offline-calibrated, deterministic variant (an option; not the paper's rule).

    D, R and the number kept at (s, l) (``round(n mean P_keep)`` over the calibration set) are
    fixed offline; the kept tokens are the current sample's highest-``P_keep`` ones. The cost
    is then a function of the budget only.

    Args:
        calibration: the unpruned model's `Calibration`.
        a_min, a_max: the token rule's pruning-probability range (``0 <= a_min <= a_max <= 1``).
    """

    name = "toprovar-topk"
    layer_keep = True  # the kept tokens depend on (scale, layer) and the source entropy only

    def __init__(self, calibration: Calibration, a_min: float = 0.0, a_max: float = 0.75) -> None:
        super().__init__()
        self.a_min, self.a_max = calibrated_range(calibration, a_min, a_max)
        self.cal = calibration
        self._keep: dict[tuple[int, int], float] = {}  # calibrated mean P_keep per (k, layer)
        self._source: torch.Tensor | None = None
        self._source_count = 0

    def reset(self, copies: int = 1) -> None:
        super().reset(copies)
        self._source, self._source_count = None, 0

    def _active(self, k: int) -> bool:
        return k + 1 >= self.cal.depth

    def wants_entropy(self, k: int, layer: int) -> bool:
        return self._active(k) and layer < self.cal.dense_layers

    def observe(
        self, k: int, layer: int, entropy: torch.Tensor, idx: torch.Tensor | None = None
    ) -> None:
        if layer >= self.cal.dense_layers:
            return
        if layer == 0 or self._source is None:
            self._source, self._source_count = entropy, 1
        else:  # running mean over the dense source layers of this scale
            self._source_count += 1
            self._source = self._source + (entropy - self._source) / self._source_count

    def select(
        self, k: int, layer: int, sublayer: str, x: torch.Tensor, side: int
    ) -> torch.Tensor | None:
        if not self._active(k) or layer < self.cal.dense_layers:
            return None
        n = x.shape[1]
        if (k, layer) not in self._keep:
            self._keep[(k, layer)] = self.cal.keep_ratio(k, layer, self.a_min, self.a_max)
        keep = round(n * self._keep[(k, layer)])
        if keep >= n:
            return None
        keep = max(1, keep)
        if self._source is None or self._source.shape[1] != n:
            raise ValueError("ToProVAR: no entropy of this scale was observed (dense_layers >= 1?)")
        score = float(self.cal.score[layer, k])
        p = keep_probability(
            normalise_entropy(self._source),
            k + 1,
            self.cal.n_scales,
            self.cal.depth,
            score,
            self.a_min,
            self.a_max,
        )
        # ties (equal P_keep) are broken towards lower entropy
        return _sorted_topk(p - 1e-6 * normalise_entropy(self._source), keep)
