import pytest
import torch
from conftest import make_model
from masked_diffusion import (
    confidence_sample,
    halton_order,
    ordered_sample,
    random_order,
    reveal_counts,
)
from pgm import as_denoiser, pgm_confidence_sample, pgm_ordered_sample


def _gen(seed=3):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("steps", [1, 5, 12])
def test_packed_ordered_sampler_equals_masked_diffusion_on_the_full_model(model, steps):
    order = random_order(4, 12, _gen(1))
    fast = pgm_ordered_sample(model, order, steps=steps, generator=_gen())
    slow = ordered_sample(as_denoiser(model, 7), order, vocab_size=7, steps=steps, generator=_gen())
    assert torch.equal(fast, slow)


@pytest.mark.parametrize("choice_temperature", [0.0, 4.5])
def test_packed_confidence_sampler_equals_masked_diffusion(model, choice_temperature):
    kw = dict(steps=4, batch_size=3, choice_temperature=choice_temperature, counts="arccos")
    fast = pgm_confidence_sample(model, generator=_gen(), **kw)
    slow = confidence_sample(
        as_denoiser(model, 7), vocab_size=7, seq_len=12, generator=_gen(), **kw
    )
    assert torch.equal(fast, slow)


def test_halton_order_plugs_in():
    m = make_model(v=4, n=16)
    order = halton_order(4, 4)
    fast = pgm_ordered_sample(m, order, steps=4, batch_size=2, counts="arccos", generator=_gen())
    slow = ordered_sample(
        as_denoiser(m, 4),
        order,
        vocab_size=4,
        steps=4,
        batch_size=2,
        counts="arccos",
        generator=_gen(),
    )
    assert torch.equal(fast, slow)


def _record_lengths(model):
    seen = []
    hooks = [
        model.encoder[0].register_forward_pre_hook(
            lambda mod, a: seen.append(("enc", a[0].shape[1]))
        ),
        model.swap.register_forward_pre_hook(lambda mod, a: seen.append(("dec", a[2].shape[1]))),
    ]
    return seen, hooks


@pytest.mark.parametrize("steps", [3, 12])
def test_encoder_sees_only_clean_tokens_and_decoder_only_new_ones(model, steps):
    seen, hooks = _record_lengths(model)
    x = pgm_ordered_sample(model, random_order(2, 12, _gen(0)), steps=steps, generator=_gen())
    for h in hooks:
        h.remove()
    counts = reveal_counts(12, steps, "linear")
    prev = [0, *counts[:-1]]
    want = []
    for p, c in zip(prev, counts, strict=True):
        if c > p:
            want += [("enc", 1 + p), ("dec", c - p)]  # BOS + revealed; revealed this step
    assert seen == want
    assert x.shape == (2, 12) and torch.all((x >= 0) & (x < 7))  # no unfilled position


def test_confidence_encoder_lengths(model):
    seen, hooks = _record_lengths(model)
    x = pgm_confidence_sample(model, steps=4, batch_size=2, generator=_gen())
    for h in hooks:
        h.remove()
    counts = reveal_counts(12, 4, "cosine")
    prev = [0, *counts[:-1]]
    assert seen[0::2] == [("enc", 1 + p) for p in prev]
    assert seen[1::2] == [("dec", 12 - p) for p in prev]
    assert torch.all((x >= 0) & (x < 7))


def test_seeded_sampling_is_deterministic(model):
    order = random_order(3, 12, _gen(5))
    a = pgm_ordered_sample(model, order, steps=4, generator=_gen(9))
    b = pgm_ordered_sample(model, order, steps=4, generator=_gen(9))
    c = pgm_ordered_sample(model, order, steps=4, generator=_gen(10))
    assert torch.equal(a, b) and not torch.equal(a, c)
    d = pgm_confidence_sample(model, steps=4, batch_size=3, generator=_gen(9))
    e = pgm_confidence_sample(model, steps=4, batch_size=3, generator=_gen(9))
    assert torch.equal(d, e)


def test_bad_sampler_input(model):
    order = torch.arange(12)
    with pytest.raises(ValueError, match="steps"):
        pgm_ordered_sample(model, order, steps=0)
    with pytest.raises(ValueError, match="order"):
        pgm_ordered_sample(model, torch.arange(10), steps=2)
    with pytest.raises(ValueError, match="order"):
        pgm_ordered_sample(model, torch.zeros(12, dtype=torch.long), steps=2)
    with pytest.raises(ValueError, match="temperature"):
        pgm_ordered_sample(model, order, steps=2, temperature=0.0)
    with pytest.raises(ValueError, match="steps"):
        pgm_confidence_sample(model, steps=0)
    with pytest.raises(ValueError, match="batch_size"):
        pgm_confidence_sample(model, steps=2, batch_size=0)
    with pytest.raises(ValueError, match="counts: .*square"):
        pgm_confidence_sample(model, steps=2, counts="square")
    with pytest.raises(TypeError, match="model"):
        pgm_confidence_sample(lambda x, t: x, steps=2)
