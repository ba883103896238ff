"""Slow, obviously-correct versions of the NELBO and the ancestral sampler (test oracles)."""

from __future__ import annotations

import math

import torch

from masked_diffusion.loss import Denoiser
from masked_diffusion.sampling import time_grid
from masked_diffusion.schedule import LogLinearSchedule, Schedule


def nelbo_terms_loop(
    logits: torch.Tensor, x0: torch.Tensor, x_t: torch.Tensor, t: torch.Tensor, schedule: Schedule
) -> torch.Tensor:
    """Per-token NELBO terms by a Python loop over every (sequence, position)."""
    b, n, v = logits.shape
    out = torch.zeros(b, n, dtype=torch.float64)
    for i in range(b):
        w = float(schedule.weight(t[i : i + 1].double())[0])
        for j in range(n):
            if int(x_t[i, j]) != v:  # carry-over: an unmasked token costs nothing
                continue
            row = [float(z) for z in logits[i, j]]
            m = max(row)
            log_z = m + math.log(sum(math.exp(z - m) for z in row))
            out[i, j] = w * (log_z - row[int(x0[i, j])])
    return out


@torch.no_grad()
def ancestral_sample_loop(
    denoiser: Denoiser,
    *,
    vocab_size: int,
    steps: int,
    batch_size: int,
    seq_len: int,
    schedule: Schedule | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """MDLM ancestral sampling one position at a time, drawing the same uniforms as the fast one."""
    schedule = schedule or LogLinearSchedule()
    x = torch.full((batch_size, seq_len), vocab_size, dtype=torch.long)
    ts = time_grid(steps)
    for i in range(steps):
        t, s = ts[i], ts[i + 1]
        logits = denoiser(x.clone(), t.expand(batch_size))
        a_t, a_s = float(schedule.alpha(t)), float(schedule.alpha(s))
        p = (a_s - a_t) / (1.0 - a_t) if i < steps - 1 else 1.0
        u = torch.rand((batch_size, seq_len), generator=generator)
        g = torch.rand((batch_size, seq_len, vocab_size), generator=generator)
        new = x.clone()
        for bi in range(batch_size):
            for j in range(seq_len):
                if int(x[bi, j]) != vocab_size or not float(u[bi, j]) < p:
                    continue
                probs = torch.softmax(logits[bi, j].float(), dim=-1)
                best, arg = -math.inf, 0
                for k in range(vocab_size):
                    gk = -math.log(-math.log(min(max(float(g[bi, j, k]), 1e-20), 1 - 1e-7)))
                    score = math.log(max(float(probs[k]), 1e-45)) + gk
                    if score > best:
                        best, arg = score, k
                new[bi, j] = arg
        x = new
    return x
