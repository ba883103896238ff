"""Slow, obviously-correct PGM computations (test oracles).

- `partition_logits_loop`: the definition of the partitioned network. For every sequence and
  every group g, take the tokens of the *other* group alone (plus BOS, which belongs to group 0)
  as a short dense sequence, run the encoder on it with no mask at all, and decode the group-g
  positions. No attention mask is involved, so this is what the masked full-length `forward`
  must equal.
- `partition_terms_loop`: the PGM loss terms by a Python loop over tokens.
"""

from __future__ import annotations

import math

import torch
from masked_diffusion import Schedule

from pgm.model import PartitionTransformer


@torch.no_grad()
def partition_logits_loop(
    model: PartitionTransformer, x0: torch.Tensor, groups: torch.Tensor
) -> torch.Tensor:
    """Logits (batch, L, V), each group predicted from a dense pass over the other group alone."""
    b, n = x0.shape
    out = torch.zeros(b, n, model.cfg.vocab_size, dtype=model.head.weight.dtype)
    for i in range(b):
        for g in (False, True):
            queries = [p for p in range(n) if bool(groups[i, p]) == g]
            if not queries:
                continue
            keys = [p for p in range(n) if bool(groups[i, p]) != g]
            # model positions: BOS at 0 (group 0, visible to group-1 queries), data p at p + 1
            pos = ([0] if g else []) + [p + 1 for p in keys]
            tok = ([model.bos_id] if g else []) + [int(x0[i, p]) for p in keys]
            qpos = torch.tensor([[p + 1 for p in queries]])
            if not pos:  # an empty group: the decoder sees nothing (attention output 0)
                pos, tok = [0], [model.bos_id]
                allow = torch.zeros(1, len(queries), 1, dtype=torch.bool)
            else:
                allow = torch.ones(1, len(queries), len(pos), dtype=torch.bool)
            pos_t = torch.tensor(pos)
            k_angles = model.angles[pos_t]
            h = model.embed(torch.tensor([tok]))
            if model.pos_embed is not None:  # learned absolute positions (decode adds the queries')
                h = h + model.pos_embed[pos_t]
            h = model.encode(h, k_angles, torch.ones(1, len(pos), len(pos), dtype=torch.bool))
            pool = None
            if model.swap.pools:
                member = torch.full((1, len(pos)), bool(allow.any()))
                pool = model.swap.pool(h, member)[:, None].expand(1, len(queries), -1)
            logits = model.decode(h, k_angles, qpos, model.angles[qpos[0]], allow, pool)
            out[i, queries] = logits[0]
    return out


def partition_terms_loop(
    logits: torch.Tensor,
    x0: torch.Tensor,
    groups: torch.Tensor,
    t: torch.Tensor,
    schedule: Schedule,
) -> torch.Tensor:
    """Per-token ``(1[g=1] w(t) CE + 1[g=0] w(1-t) CE) / 2`` by loops, float64 (batch, L)."""
    b, n, _ = logits.shape
    out = torch.zeros(b, n, dtype=torch.float64)
    for i in range(b):
        ti = t[i : i + 1].double()
        w1, w0 = float(schedule.weight(ti)[0]), float(schedule.weight(1.0 - ti)[0])
        for j in range(n):
            row = [float(z) for z in logits[i, j]]
            m = max(row)
            ce = m + math.log(sum(math.exp(z - m) for z in row)) - row[int(x0[i, j])]
            out[i, j] = 0.5 * (w1 if bool(groups[i, j]) else w0) * ce
    return out
