import itertools
import math

import pytest
import torch
from masked_diffusion import (
    CosineSchedule,
    ancestral_sample,
    confidence_sample,
    halton_order,
    ordered_sample,
    random_order,
    reveal_counts,
)
from masked_diffusion.reference import ancestral_sample_loop

from shared_core.testing import assert_close

V, L = 5, 9


class Recorder:
    """Wraps a denoiser and records every x_t it is called with."""

    def __init__(self, f):
        self.f, self.calls = f, []

    def __call__(self, x, t):
        self.calls.append(x.clone())
        return self.f(x, t)


def _den(x, t):
    g = torch.Generator().manual_seed(3)
    table = torch.randn(V + 1, V, generator=g)
    return table[torch.roll(x, 1, dims=1)] + 0.1 * t[:, None, None]


def _samplers():
    return {
        "ancestral": lambda d, steps, g, **kw: ancestral_sample(
            d, vocab_size=V, steps=steps, batch_size=4, seq_len=L, generator=g, **kw
        ),
        "ancestral-cosine": lambda d, steps, g, **kw: ancestral_sample(
            d,
            vocab_size=V,
            steps=steps,
            batch_size=4,
            seq_len=L,
            generator=g,
            schedule=CosineSchedule(),
            **kw,
        ),
        "confidence": lambda d, steps, g, **kw: confidence_sample(
            d,
            vocab_size=V,
            steps=steps,
            batch_size=4,
            seq_len=L,
            generator=g,
            choice_temperature=4.5,
            **kw,
        ),
        "halton": lambda d, steps, g, **kw: ordered_sample(
            d, halton_order(3, 3), vocab_size=V, steps=steps, batch_size=4, generator=g, **kw
        ),
        "random-order": lambda d, steps, g, **kw: ordered_sample(
            d,
            random_order(4, L, generator=torch.Generator().manual_seed(9)),
            vocab_size=V,
            steps=steps,
            generator=g,
            counts="cosine",
            **kw,
        ),
    }


@pytest.mark.parametrize("name", list(_samplers()))
@pytest.mark.parametrize("steps", [1, 2, 7, L])
def test_all_positions_unmasked_and_carry_over(name, steps):
    rec = Recorder(_den)
    x = _samplers()[name](rec, steps, torch.Generator().manual_seed(0))
    assert x.shape == (4, L) and x.dtype == torch.long
    assert ((x >= 0) & (x < V)).all()
    states = [*rec.calls, x]
    assert len(rec.calls) == steps
    for a, b in itertools.pairwise(states):
        kept = a != V
        assert torch.equal(a[kept], b[kept])  # carry-over: revealed tokens never change


@pytest.mark.parametrize("name", list(_samplers()))
def test_seeded_determinism(name):
    s = _samplers()[name]
    a = s(_den, 4, torch.Generator().manual_seed(5))
    b = s(_den, 4, torch.Generator().manual_seed(5))
    c = s(_den, 4, torch.Generator().manual_seed(6))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


@pytest.mark.parametrize("steps", [1, 3, L])
def test_ancestral_matches_loop_reference(steps):
    fast = ancestral_sample(
        _den,
        vocab_size=V,
        steps=steps,
        batch_size=3,
        seq_len=L,
        generator=torch.Generator().manual_seed(2),
    )
    ref = ancestral_sample_loop(
        _den,
        vocab_size=V,
        steps=steps,
        batch_size=3,
        seq_len=L,
        generator=torch.Generator().manual_seed(2),
    )
    assert torch.equal(fast, ref)


def test_ancestral_cache_keeps_samples():
    def time_free(x, t):
        return _den(x, torch.zeros_like(t))

    rec = Recorder(time_free)
    a = ancestral_sample(
        rec,
        vocab_size=V,
        steps=64,
        batch_size=2,
        seq_len=L,
        generator=torch.Generator().manual_seed(1),
        cache=True,
    )
    b = ancestral_sample(
        time_free,
        vocab_size=V,
        steps=64,
        batch_size=2,
        seq_len=L,
        generator=torch.Generator().manual_seed(1),
    )
    assert torch.equal(a, b)
    assert len(rec.calls) < 64


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("sampler", ["ancestral", "confidence"])
def test_one_step_draws_follow_softmax_in_each_dtype(device, dtype, sampler):
    """One step from all-mask with logits in `dtype` on `device` draws from their softmax.

    Reference: the float64 softmax on CPU. The tolerance is the sampling noise of 20 000 draws
    per position (relative RMS ~0.01), far above any dtype's rounding of the logits.
    """
    logits = torch.tensor([2.0, 0.0, -1.0, 1.0, 0.5], dtype=torch.float64)
    fn = ancestral_sample if sampler == "ancestral" else confidence_sample
    x = fn(
        lambda x, t: logits.to(device, dtype).expand(*x.shape, V), vocab_size=V, steps=1,
        batch_size=20000, seq_len=2, generator=torch.Generator(device).manual_seed(0),
        device=device,
    )  # fmt: skip
    assert x.device.type == torch.device(device).type
    freq = torch.bincount(x.cpu().flatten(), minlength=V).double() / x.numel()
    assert_close(f"{sampler} frequencies {dtype}", torch.softmax(logits, -1), freq, 0.03)


@pytest.mark.cuda
def test_backbone_samples_on_cuda_in_bfloat16():
    """The whole sampler loop stays on the GPU with a bfloat16 denoiser (no host round trip)."""
    from masked_diffusion import BackboneConfig, MaskedDiffusionTransformer

    m = MaskedDiffusionTransformer(BackboneConfig(V, L, 32, 2, 1)).to("cuda", torch.bfloat16)
    x = ancestral_sample(
        lambda z, t: m(z, t), vocab_size=V, steps=4, batch_size=8, seq_len=L,
        generator=torch.Generator("cuda").manual_seed(0), device="cuda", cache=True,
    )  # fmt: skip
    assert x.is_cuda and int(x.max()) < V and int(x.min()) >= 0


def test_ancestral_samples_the_model_distribution():
    """One step from all-mask with fixed logits draws from softmax(logits) per position."""
    logits = torch.tensor([2.0, 0.0, -1.0, 1.0, 0.5])
    x = ancestral_sample(
        lambda x, t: logits.expand(*x.shape, V),
        vocab_size=V,
        steps=1,
        batch_size=20000,
        seq_len=1,
        generator=torch.Generator().manual_seed(0),
    )
    freq = torch.bincount(x.flatten(), minlength=V).float() / x.numel()
    torch.testing.assert_close(freq, torch.softmax(logits, -1), atol=0.01, rtol=0)


def test_confidence_greedy_reveals_most_confident_first():
    # position j's distribution gets sharper with j: greedy confidence reveals the last first
    sharp = torch.arange(L, dtype=torch.float32)[None, :, None] * torch.eye(V)[0]

    rec = Recorder(lambda x, t: sharp.expand(x.shape[0], L, V))
    confidence_sample(
        rec,
        vocab_size=V,
        steps=L,
        batch_size=1,
        seq_len=L,
        generator=torch.Generator().manual_seed(0),
        counts="linear",
    )
    first_revealed = (rec.calls[1][0] != V).nonzero().flatten().tolist()
    assert first_revealed == [L - 1]


def test_in_filling_keeps_given_tokens():
    x_init = torch.full((2, L), V)
    x_init[:, ::2] = 1
    for fn in (ancestral_sample, confidence_sample):
        x = fn(
            _den, vocab_size=V, steps=3, x_init=x_init, generator=torch.Generator().manual_seed(0)
        )
        assert (x[:, ::2] == 1).all() and (x != V).all()


def test_halton_order_is_a_spread_permutation():
    o = halton_order(8, 8)
    assert sorted(o.tolist()) == list(range(64))
    rows, cols = o[:4] // 8, o[:4] % 8
    assert len(set(rows.tolist())) == 4 and len(set(cols.tolist())) >= 3


@pytest.mark.parametrize("kind", ["linear", "cosine", "arccos"])
@pytest.mark.parametrize("steps", [1, 2, 7, 16, 40])
def test_reveal_counts(kind, steps):
    c = reveal_counts(16, steps, kind)
    assert len(c) == steps and c[-1] == 16
    assert all(b >= a for a, b in itertools.pairwise(c))


def test_bad_input():
    with pytest.raises(ValueError, match="steps"):
        ancestral_sample(_den, vocab_size=V, steps=0, seq_len=L)
    with pytest.raises(ValueError, match="steps"):
        confidence_sample(_den, vocab_size=V, steps=-2, seq_len=L)
    with pytest.raises(ValueError, match="seq_len"):
        ancestral_sample(_den, vocab_size=V, steps=2)
    with pytest.raises(ValueError, match="x_init"):
        ancestral_sample(_den, vocab_size=V, steps=2, x_init=torch.full((1, L), V + 1))
    with pytest.raises(ValueError, match="logits"):
        ancestral_sample(
            lambda x, t: torch.full((*x.shape, V), math.nan), vocab_size=V, steps=2, seq_len=L
        )
    with pytest.raises(ValueError, match="logits"):
        confidence_sample(lambda x, t: torch.zeros(x.shape[0], V), vocab_size=V, steps=2, seq_len=L)
    with pytest.raises(ValueError, match="order"):
        ordered_sample(_den, torch.zeros(L, dtype=torch.long), vocab_size=V, steps=2)
    with pytest.raises(ValueError, match="kind"):
        reveal_counts(4, 2, "square")
    with pytest.raises(ValueError, match="temperature"):
        ancestral_sample(_den, vocab_size=V, steps=2, seq_len=L, temperature=0.0)
    with pytest.raises(ValueError, match="temperature"):
        ancestral_sample(_den, vocab_size=V, steps=2, seq_len=L, temperature=float("nan"))
    with pytest.raises(ValueError, match="vocab_size"):
        ancestral_sample(_den, vocab_size=0, steps=2, seq_len=L)
    with pytest.raises(ValueError, match="batch_size"):
        ancestral_sample(_den, vocab_size=V, steps=2, seq_len=L, batch_size=0)
    with pytest.raises(ValueError, match="choice_temperature"):
        confidence_sample(_den, vocab_size=V, steps=2, seq_len=L, choice_temperature=-1.0)
    with pytest.raises(ValueError, match="counts"):
        confidence_sample(_den, vocab_size=V, steps=2, seq_len=L, counts="square")
    with pytest.raises(TypeError, match="x_init"):
        ancestral_sample(_den, vocab_size=V, steps=2, x_init=torch.zeros(1, L))


def test_unmask_hook_with_the_shared_rate_reproduces_the_sampler():
    """A per-token hook that returns the schedule's own rate draws the same samples."""
    sched = CosineSchedule()

    def hook(x, t, s):
        return sched.unmask_prob(t, s)[:, None].expand(x.shape).float()

    a = ancestral_sample(
        _den, vocab_size=V, steps=6, batch_size=4, seq_len=L, schedule=sched,
        generator=torch.Generator().manual_seed(5),
    )  # fmt: skip
    b = ancestral_sample(
        _den, vocab_size=V, steps=6, batch_size=4, seq_len=L, schedule=sched,
        generator=torch.Generator().manual_seed(5), unmask_prob=hook,
    )  # fmt: skip
    assert torch.equal(a, b)


@pytest.mark.parametrize("per_value", [False, True])
def test_unmask_hook_one_step_law_matches_enumeration(per_value):
    """Two steps from all-mask: after step 1 each token is masked / value k with the exact law
    (per-token rate r_l, or per-value rates r_lk with the factorised posterior)."""
    n_tok, vocab = 2, 3
    logits = torch.tensor([[[0.3, -0.5, 1.0], [1.2, 0.1, -0.4]]])
    rates = torch.tensor([[[0.2, 0.7, 0.5], [0.9, 0.1, 0.4]]])
    r = rates if per_value else rates[..., 0]

    def hook(x, t, s):
        return r.expand(x.shape[0], *r.shape[1:])

    batch = 20000
    gen = torch.Generator().manual_seed(0)
    seen = []

    def den(x, t):
        seen.append(x.clone())
        return logits.expand(x.shape[0], -1, -1)

    ancestral_sample(
        den, vocab_size=vocab, steps=2, batch_size=batch, seq_len=n_tok, generator=gen,
        unmask_prob=hook,
    )  # fmt: skip
    after = seen[1]  # the state after the first step
    mu = torch.softmax(logits[0], -1)
    for l_ in range(n_tok):
        rl = rates[0, l_] if per_value else rates[0, l_, 0].expand(vocab)
        expect = torch.cat([mu[l_] * rl, (1 - (mu[l_] * rl).sum())[None]])
        got = torch.bincount(after[:, l_], minlength=vocab + 1).double() / batch
        assert torch.allclose(got, expect.double(), atol=0.015), (l_, got, expect)


def test_unmask_hook_bad_output():
    with pytest.raises(ValueError, match="unmask_prob: expected shape"):
        ancestral_sample(
            _den, vocab_size=V, steps=3, batch_size=2, seq_len=L,
            unmask_prob=lambda x, t, s: torch.full((2, L + 1), 0.5),
        )  # fmt: skip
    with pytest.raises(ValueError, match="probabilities in"):
        ancestral_sample(
            _den, vocab_size=V, steps=3, batch_size=2, seq_len=L,
            unmask_prob=lambda x, t, s: torch.full((2, L), 1.5),
        )  # fmt: skip
