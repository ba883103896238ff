import numpy as np
import pytest
import torch
from meld_diffusion.clashing import permute_rows
from meld_diffusion.data import pair_index, seq_len
from meld_diffusion.model import GraphTransformer, GraphTransformerConfig

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


def test_embeddings_make_it_equivariant_jointly(qm9_rows):
    """With element embeddings, permuting atoms AND their embeddings permutes the outputs;
    permuting atoms alone does not (the denoiser models p(g | pi))."""
    torch.manual_seed(0)
    net = GraphTransformer(GraphTransformerConfig(max_atoms=N, d_node=16, d_edge=8, d_pos=5))
    for p in net.parameters():
        torch.nn.init.normal_(p, std=0.3)
    x, n = _batch(qm9_rows)
    t = torch.linspace(0.1, 0.9, len(x))
    pos = torch.randn(len(x), N, 5)
    perm = np.random.default_rng(2).permutation(N)
    xp = torch.as_tensor(permute_rows(x.numpy(), perm, N))
    posp = torch.empty_like(pos)
    posp[:, torch.as_tensor(perm)] = pos
    out = net(x, n, t, pos).detach()
    moved = torch.as_tensor(
        permute_rows(out.numpy().transpose(0, 2, 1).reshape(-1, out.shape[1]), perm, N)
    )
    moved = moved.reshape(len(x), -1, out.shape[1]).permute(0, 2, 1)
    assert_close("joint permutation", moved, net(xp, n, t, posp).detach(), 1e-5)
    assert (moved - net(xp, n, t, pos).detach()).abs().max() > 1e-3


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
    with pytest.raises(ValueError, match="d_pos: expected"):
        GraphTransformerConfig(d_pos=-1)
    with pytest.raises(ValueError, match="pos: expected None"):
        denoiser(torch.zeros(1, 21, dtype=torch.long), n, torch.ones(1), torch.zeros(1, 6, 4))
