import numpy as np
import pytest
import torch
from meld_diffusion.clashing import permute_rows
from meld_diffusion.data import pair_index, seq_len
from meld_diffusion.model import (
    GraphTransformerConfig,
    ScheduleNetwork,
    UnitRates,
)

from shared_core.testing import assert_close

N = 6


def _batch(qm9_rows, k: int = 8):
    rows, counts, _ = qm9_rows
    idx = torch.arange(len(rows))[counts == N][:k]
    return rows[idx], counts[idx]


def test_permuting_atoms_permutes_outputs(denoiser, qm9_rows):
    x, n = _batch(qm9_rows)
    t = torch.linspace(0.1, 0.9, len(x))
    x = x.clone()
    x[:, ::3] = 4  # some masks, so the input is a noisy state
    perm = np.random.default_rng(0).permutation(N)
    xp = torch.as_tensor(permute_rows(x.numpy(), perm, N))
    out = denoiser(x, n, t).detach()
    out_p = denoiser(xp, n, t).detach()
    assert_close("permuted", _apply(out, perm), out_p, 1e-5)


def _apply(out: torch.Tensor, perm: np.ndarray) -> torch.Tensor:
    # position k of the original goes to the position its atoms are renamed to
    res = torch.empty_like(out)
    res[:, torch.as_tensor(perm)] = out[:, :N]
    pi, pj = pair_index(N)
    where = {(int(a), int(b)): N + k for k, (a, b) in enumerate(zip(pi, pj, strict=True))}
    for k, (a, b) in enumerate(zip(perm[pi], perm[pj], strict=True)):
        res[:, where[(min(a, b), max(a, b))]] = out[:, N + k]
    return res


def test_padding_does_not_leak(denoiser, qm9_rows):
    rows, counts, _ = qm9_rows
    x, n = rows[counts == 4][:4], counts[counts == 4][:4]
    t = torch.full((4,), 0.5)
    noisy = x.clone()
    valid = torch.zeros(seq_len(N), dtype=torch.bool)
    valid[:4] = True
    _, pj = pair_index(N)
    valid[N:] = torch.as_tensor(pj < 4)
    noisy[:, ~valid] = 3  # garbage in the padding
    a = denoiser(x, n, t)[:, valid]
    b = denoiser(noisy, n, t)[:, valid]
    assert_close("padding", a, b, 1e-6)


def test_float32_matches_float64_reference(denoiser, qm9_rows, device):
    x, n = _batch(qm9_rows)
    t = torch.linspace(0.1, 0.9, len(x))
    ref = denoiser.double()(x, n, t.double()).detach()
    fast = denoiser.float().to(device)(x.to(device), n.to(device), t.to(device))
    assert_close("logits", ref, fast, 1e-5)


def test_schedule_network_rates_bounded_and_start_at_one(rates, qm9_rows):
    x, n = _batch(qm9_rows)
    w = rates(x, n)
    assert w.shape == x.shape and torch.all(w > 1 / 5) and torch.all(w < 5)
    assert w.std() > 0.05  # random weights: rates differ between elements
    fresh = ScheduleNetwork(GraphTransformerConfig(max_atoms=N, out_dim=1, time_conditioning=False))
    assert torch.equal(fresh(x, n), torch.ones(x.shape))
    assert torch.equal(UnitRates()(x, n), torch.ones(x.shape))


def test_bond_rate_is_symmetric_in_its_atoms(rates, qm9_rows):
    x, n = _batch(qm9_rows)
    for a, b in [(0, 1), (2, 5)]:
        perm = np.arange(N)
        perm[[a, b]] = perm[[b, a]]
        xp = torch.as_tensor(permute_rows(x.numpy(), perm, N))
        pairs = list(zip(*pair_index(N), strict=True))
        k = N + pairs.index((a, b))
        assert_close("w_ab", rates(x, n)[:, k], rates(xp, n)[:, k], 1e-6)


def test_input_checks(denoiser):
    n = torch.tensor([3])
    with pytest.raises(ValueError, match=r"x: expected \(batch, 21\)"):
        denoiser(torch.zeros(1, 5, dtype=torch.long), n, torch.ones(1))
    with pytest.raises(ValueError, match="one-hot"):
        denoiser(torch.zeros(1, 21, 3), n, torch.ones(1))
    with pytest.raises(ValueError, match="n_atoms: expected shape"):
        denoiser(torch.zeros(2, 21, dtype=torch.long), n, torch.ones(2))
    with pytest.raises(ValueError, match="t: expected"):
        denoiser(torch.zeros(1, 21, dtype=torch.long), n, None)
    with pytest.raises(ValueError, match="n_heads: must divide"):
        GraphTransformerConfig(d_node=10, n_heads=4)
    with pytest.raises(ValueError, match="d_edge"):
        GraphTransformerConfig(d_edge=0)
    with pytest.raises(ValueError, match="w_max"):
        ScheduleNetwork(GraphTransformerConfig(out_dim=1, time_conditioning=False), w_max=1.0)
    with pytest.raises(ValueError, match="out_dim=1 and time_conditioning=False"):
        ScheduleNetwork(GraphTransformerConfig())
