from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from edt_former.patching import (
    brics_group_ids,
    compact,
    entropy_group_ids,
    local_tokens,
    pad_ids,
    peak_group_ids,
    pool_groups,
)
from edt_former.reference import (
    entropy_group_ids_reference,
    peak_group_ids_reference,
    pool_groups_reference,
)
from rdkit import Chem
from rdkit.Chem import BRICS

from shared_core.testing import assert_close


def _rising_edges(e: torch.Tensor, q: float) -> list[int]:
    thr = torch.quantile(e.double(), q)
    high = [bool(v > thr) for v in e.double()]
    return [k for k in range(len(high)) if high[k] and (k == 0 or not high[k - 1])]


@pytest.mark.parametrize("seed", range(20))
def test_group_ids_match_official_loop_and_invariants(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    n = int(torch.randint(1, 30, (1,), generator=g))
    e = torch.rand(n, generator=g) * 3
    ids = entropy_group_ids(e[None], q=0.75)[0].tolist()
    assert ids == entropy_group_ids_reference(e, 0.75)
    assert ids[0] == 0
    steps = np.diff(ids)
    assert set(steps.tolist()) <= {0, 1}  # never decreases, never skips
    # the id changes exactly after each rising edge (the rising atom ends its group)
    changes = [k for k in range(1, n) if ids[k] != ids[k - 1]]
    assert changes == [k + 1 for k in _rising_edges(e, 0.75) if k + 1 < n]


def test_constant_entropy_and_quantile_one_give_one_group() -> None:
    assert entropy_group_ids(torch.full((1, 9), 1.7)).unique().tolist() == [0]
    e = torch.rand(3, 12, generator=torch.Generator().manual_seed(0))
    assert entropy_group_ids(e, q=1.0).unique().tolist() == [0]


def test_batched_group_ids_equal_per_molecule() -> None:
    g = torch.Generator().manual_seed(1)
    lengths = [5, 12, 1, 8]
    rows = [torch.rand(n, generator=g) for n in lengths]
    e = torch.zeros(4, 12)
    mask = torch.zeros(4, 12, dtype=torch.bool)
    for b, r in enumerate(rows):
        e[b, : len(r)] = r
        mask[b, : len(r)] = True
    ids = entropy_group_ids(e, mask)
    for b, r in enumerate(rows):
        assert ids[b, : len(r)].tolist() == entropy_group_ids_reference(r)
        assert (ids[b, len(r) :] == -1).all()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"entropy": torch.rand(5)}, ValueError, "shape \\(batch, atoms\\)"),
        ({"entropy": torch.ones(2, 3, dtype=torch.long)}, TypeError, "floating-point"),
        ({"entropy": torch.rand(2, 3), "q": 1.5}, ValueError, "quantile in \\[0, 1\\]"),
        (
            {"entropy": torch.rand(2, 3), "mask": torch.ones(2, 4, dtype=torch.bool)},
            ValueError,
            "bool tensor of shape",
        ),
        (
            {"entropy": torch.rand(1, 3), "mask": torch.tensor([[False, True, True]])},
            ValueError,
            "right",
        ),
        (
            {"entropy": torch.rand(1, 3), "mask": torch.zeros(1, 3, dtype=torch.bool)},
            ValueError,
            "at least one atom",
        ),
        ({"entropy": torch.tensor([[0.1, float("nan")]])}, ValueError, "NaN"),
    ],
)
def test_group_ids_bad_input(kwargs: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        entropy_group_ids(**kwargs)


@pytest.mark.parametrize(
    "smiles",
    ["CCOC(=O)c1ccccc1NC(=O)C", "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "c1ccccc1", "CN1CCC[C@H]1c2cccnc2"],
)
def test_brics_fragments_match_rdkit(smiles: str) -> None:
    ids = brics_group_ids(smiles)
    mol = Chem.MolFromSmiles(smiles)
    assert len(ids) == mol.GetNumAtoms()
    broken = BRICS.BreakBRICSBonds(mol)  # adds dummy atoms at every cut
    assert ids.max() + 1 == len(Chem.GetMolFrags(broken))
    # ids appear in first-seen order: 0, then each new id is the next integer
    seen: list[int] = []
    for i in ids.tolist():
        if i not in seen:
            assert i == len(seen)
            seen.append(i)


def test_brics_bad_input() -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        brics_group_ids("C1CC")
    with pytest.raises(ValueError, match="non-empty"):
        brics_group_ids("")


def test_pool_groups_equals_loop(device: str) -> None:
    g = torch.Generator().manual_seed(0)
    ids = [[0, 0, 1, 2, 2, 2], [0, 1, 1]]
    x = torch.randn(2, 6, 5, generator=g, dtype=torch.float64)
    pooled, mask = pool_groups(x.to(device), pad_ids(ids).to(device))
    assert mask.tolist() == [[True, True, True], [True, True, False]]
    for b, row in enumerate(ids):
        ref = pool_groups_reference(x[b, : len(row)], row)
        assert_close(f"pooled[{b}]", ref, pooled[b, : ref.shape[0]].cpu(), 1e-12)
    assert (pooled[1, 2] == 0).all()


def test_local_token_count_and_truncation() -> None:
    x = torch.randn(2, 7, 4)
    brics = pad_ids([[0, 0, 1, 1, 2, 2, 2], [0, 0, 1]])  # 3 and 2 fragments
    ent = pad_ids([[0, 1, 1, 1, 1, 2, 3], [0, 0, 0]])  # 4 and 1 groups
    tok, mask = local_tokens(x, brics, ent, budget=64)
    assert mask.sum(1).tolist() == [3 + 4, 2 + 1]
    assert tok.shape == (2, 64, 4)
    # BRICS fragments first, then entropy groups
    fb, _ = pool_groups(x, brics)
    fe, _ = pool_groups(x, ent)
    assert torch.equal(tok[0, :3], fb[0, :3]) and torch.equal(tok[0, 3:7], fe[0, :4])
    assert torch.equal(tok[1, :2], fb[1, :2]) and torch.equal(tok[1, 2], fe[1, 0])
    # a budget below the count keeps the leftmost tokens: fragments survive, groups are cut
    tok4, mask4 = local_tokens(x, brics, ent, budget=4)
    assert mask4.sum(1).tolist() == [4, 3]
    assert torch.equal(tok4[0], tok[0, :4])
    tok0, mask0 = local_tokens(x, brics, None, budget=0)
    assert tok0.shape == (2, 0, 4) and mask0.shape == (2, 0)


def test_compact_and_pool_bad_input() -> None:
    with pytest.raises(ValueError, match="budget"):
        compact(torch.zeros(1, 2, 3), torch.ones(1, 2, dtype=torch.bool), -1)
    with pytest.raises(ValueError, match="nodes: expected shape"):
        pool_groups(torch.zeros(3, 4), torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="group_ids: expected shape"):
        pool_groups(torch.zeros(1, 3, 4), torch.zeros(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="num_groups"):
        pool_groups(torch.zeros(1, 3, 4), torch.tensor([[0, 1, 2]]), num_groups=2)


# --- the paper's peak rule (local maxima, NMS gap Delta, prominence gamma) ---


def _peaks_of(ids: list[int]) -> list[int]:
    """Kept peaks = the last atom of every patch but the final one."""
    return [k for k in range(len(ids) - 1) if ids[k + 1] != ids[k]]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("delta,gamma", [(1, 0.0), (2, 0.25), (3, 0.5), (5, 1.0)])
def test_peak_ids_match_scipy_reference(
    dtype: torch.dtype, delta: int, gamma: float, device: str
) -> None:
    g = torch.Generator().manual_seed(delta * 100 + int(gamma * 10))
    lengths = [int(n) for n in torch.randint(1, 40, (24,), generator=g)]
    width = max(lengths)
    e = torch.zeros(len(lengths), width, dtype=torch.float64)
    mask = torch.zeros(len(lengths), width, dtype=torch.bool)
    for b, n in enumerate(lengths):
        e[b, :n] = torch.rand(n, generator=g, dtype=torch.float64) * 3
        mask[b, :n] = True
    ids = peak_group_ids(e.to(dtype).to(device), mask.to(device), delta, gamma).cpu()
    want = pad_ids([peak_group_ids_reference(e[b, :n].to(dtype), delta, gamma)
                    for b, n in enumerate(lengths)], width)  # fmt: skip
    assert ids.tolist() == want.tolist()  # integer ids: exact, atom by atom


def test_peak_nms_gap_respected() -> None:
    # peaks at 1 (5.0) and 3 (4.0) are 2 apart: with Delta = 3 the lower one is suppressed
    e = torch.tensor([[0.0, 5.0, 0.0, 4.0, 0.0, 0.0, 0.0, 6.0, 0.0]])
    assert peak_group_ids(e, delta=3, gamma=0.0)[0].tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 2]
    assert _peaks_of(peak_group_ids(e, delta=2, gamma=0.0)[0].tolist()) == [1, 3, 7]
    g = torch.Generator().manual_seed(3)
    x = torch.rand(50, 30, generator=g)
    for delta in (1, 2, 4, 7):
        for row in peak_group_ids(x, delta=delta, gamma=0.0).tolist():
            p = _peaks_of(row)
            assert all(b - a >= delta for a, b in itertools.pairwise(p))
    # local maxima are >= 2 apart, so Delta = 2 changes nothing; larger gaps keep fewer peaks
    counts = [int(peak_group_ids(x, delta=d, gamma=0.0).max(1).values.sum()) for d in (1, 2, 3, 5)]
    assert counts[0] == counts[1] > counts[2] > counts[3]


def test_peak_prominence_threshold_respected() -> None:
    # peak 1 has prominence 3.0; peak 3 (2.8) sits on a 2.5 shoulder: prominence 0.3
    e = torch.tensor([[0.0, 3.0, 2.5, 2.8, 0.0, 0.0]])
    assert _peaks_of(peak_group_ids(e, delta=1, gamma=0.2)[0].tolist()) == [1, 3]
    assert _peaks_of(peak_group_ids(e, delta=1, gamma=0.35)[0].tolist()) == [1]
    assert _peaks_of(peak_group_ids(e, delta=1, gamma=3.0)[0].tolist()) == [1]
    assert _peaks_of(peak_group_ids(e, delta=1, gamma=3.01)[0].tolist()) == []
    # lowering a shoulder raises the prominence of the small peak past the threshold
    e2 = torch.tensor([[0.0, 3.0, 2.0, 2.8, 0.0, 0.0]])
    assert _peaks_of(peak_group_ids(e2, delta=1, gamma=0.35)[0].tolist()) == [1, 3]


def test_peak_flat_and_monotone_curves_give_one_patch() -> None:
    flat = torch.full((2, 11), 1.3)
    assert peak_group_ids(flat, delta=1, gamma=0.0).unique().tolist() == [0]
    ramp = torch.linspace(0, 3, 9)[None]
    assert peak_group_ids(ramp, delta=1, gamma=0.0).unique().tolist() == [0]
    assert peak_group_ids(ramp.flip(1), delta=1, gamma=0.0).unique().tolist() == [0]
    single = torch.tensor([[2.0]])  # one atom: one patch
    assert peak_group_ids(single).tolist() == [[0]]


def test_peak_patch_is_closed_by_its_peak_and_padding_ignored() -> None:
    e = torch.tensor([[0.1, 0.9, 0.2, 0.3, 0.0], [0.1, 0.9, 0.2, 0.0, 0.0]])
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    ids = peak_group_ids(e, mask, delta=1, gamma=0.0)
    assert ids[0].tolist() == [0, 0, 1, 1, 2]
    assert ids[1].tolist() == [0, 0, 1, -1, -1]  # atom 2 is the last real atom: no peak there


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"delta": 0}, "delta"),
        ({"delta": 2.0}, "delta"),
        ({"delta": True}, "delta"),
        ({"gamma": -0.1}, "gamma"),
        ({"gamma": float("nan")}, "gamma"),
        ({"gamma": "0.5"}, "gamma"),
    ],
)
def test_peak_rejects_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        peak_group_ids(torch.rand(2, 5), **kwargs)  # type: ignore[arg-type]


def test_peak_rejects_bad_signal() -> None:
    with pytest.raises(TypeError, match="entropy"):
        peak_group_ids(torch.ones(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="entropy"):
        peak_group_ids(torch.rand(5))
    with pytest.raises(ValueError, match="mask"):
        peak_group_ids(torch.rand(2, 5), torch.tensor([[True, False, True, True, True]] * 2))
