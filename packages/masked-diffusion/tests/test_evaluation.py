import math

import pytest
import torch
from masked_diffusion import row_batches
from masked_diffusion.evaluation import (
    CausalCharLM,
    CharLMConfig,
    evaluator_loss_fn,
    generative_nll,
    sequence_entropy,
)

from shared_core.metrics import unigram_entropy
from shared_core.testing import assert_close
from shared_core.train import TrainConfig, fit

V = 5


def small_lm(seq_len: int = 12) -> CausalCharLM:
    torch.manual_seed(0)
    return CausalCharLM(CharLMConfig(V, seq_len, d_model=16, n_heads=2, n_layers=2)).eval()


def unigram_evaluator(p: torch.Tensor):
    """A planted evaluator: every character independent with probabilities p."""

    def evaluator(x: torch.Tensor) -> torch.Tensor:
        return p.log().expand(*x.shape, len(p)).clone()

    return evaluator


def markov_evaluator(start: torch.Tensor, trans: torch.Tensor):
    """A planted first-order Markov chain: p(x^1) = start, p(x^i | x^{i-1}) = trans[x^{i-1}]."""

    def evaluator(x: torch.Tensor) -> torch.Tensor:
        prev = trans[x[:, :-1]]  # (n, L - 1, V)
        return torch.cat([start.expand(len(x), 1, len(start)), prev], dim=1).log()

    return evaluator


def test_shapes_and_nll(device):
    # float64, so the two definitions of the NLL agree to rounding on any device
    lm = small_lm().to(device, torch.float64)
    x = torch.randint(0, V, (3, 12), generator=torch.Generator().manual_seed(0)).to(device)
    assert lm(x).shape == (3, 12, V)
    assert lm(x[:, :7]).shape == (3, 7, V)  # shorter windows are allowed
    # under no_grad, as generative_nll runs: with grad on for one call only, the two differed
    # by 6e-6 relative in float64 on an H200 (torch's TransformerEncoder takes its fused fast
    # path only without grad); on CPU they agree to 1e-15 either way
    with torch.no_grad():
        nll = lm.token_nll(x)
    assert nll.shape == (3, 12) and bool((nll > 0).all())
    assert_close("token_nll vs generative_nll", nll.mean(dim=1).double(),
                 generative_nll(lm, x, V), 1e-12)  # fmt: skip


def test_causal_row_i_never_sees_token_i():
    lm = small_lm()
    x = torch.randint(0, V, (2, 12), generator=torch.Generator().manual_seed(1))
    base = lm(x)
    for j in (0, 5, 11):
        y = x.clone()
        y[:, j] = (y[:, j] + 1) % V
        out = lm(y)
        assert torch.allclose(
            out[:, : j + 1], base[:, : j + 1], rtol=0, atol=1e-6
        )  # rows <= j: no x^j
        if j < 11:
            assert not torch.allclose(out[:, j + 1 :], base[:, j + 1 :])


def test_generative_nll_on_a_planted_unigram_is_exact_and_tends_to_the_entropy():
    p = torch.tensor([0.5, 0.2, 0.15, 0.1, 0.05], dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    x = torch.multinomial(p, 4000 * 16, replacement=True, generator=g).view(4000, 16)
    nll = generative_nll(unigram_evaluator(p), x, V)
    torch.testing.assert_close(nll, -p.log()[x].mean(dim=1))  # closed form, row by row
    H = float(-(p * p.log()).sum())
    se = float(nll.std()) / math.sqrt(len(nll))
    assert abs(float(nll.mean()) - H) < 4 * se
    # and the per-row / pooled entropies of the samples approach H(p) in bits
    assert abs(unigram_entropy(x.numpy(), V) - H / math.log(2)) < 0.01


def test_generative_nll_on_a_planted_markov_chain_is_its_entropy_rate():
    g = torch.Generator().manual_seed(1)
    trans = torch.softmax(3 * torch.randn(V, V, generator=g, dtype=torch.float64), dim=-1)
    # stationary start, so every position has the same marginal and the rate is exact
    evals, evecs = torch.linalg.eig(trans.T)
    pi = evecs[:, evals.real.argmax()].real
    pi = pi / pi.sum()
    n, L = 3000, 20
    x = torch.empty((n, L), dtype=torch.long)
    x[:, 0] = torch.multinomial(pi, n, replacement=True, generator=g)
    for i in range(1, L):
        x[:, i] = torch.multinomial(trans[x[:, i - 1]], 1, generator=g).squeeze(1)
    nll = generative_nll(markov_evaluator(pi, trans), x, V)
    rate = float(-(pi[:, None] * trans * trans.log()).sum())
    expected = (float(-(pi * pi.log()).sum()) + (L - 1) * rate) / L
    assert abs(float(nll.mean()) - expected) < 4 * float(nll.std()) / math.sqrt(n)


def test_generative_nll_does_not_depend_on_the_batch_size():
    lm = small_lm()
    x = torch.randint(0, V, (7, 12), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(generative_nll(lm, x, V, batch_size=2), generative_nll(lm, x, V))


def test_trained_evaluator_learns_a_planted_periodic_text():
    # windows of the cycle 0 1 2 3 4 0 1 ... at a random phase: after the first character the
    # next is certain, so a good evaluator scores them near log(V) / L, random rows near log V
    g = torch.Generator().manual_seed(0)
    phase = torch.randint(0, V, (512, 1), generator=g)
    data = (phase + torch.arange(12)) % V
    lm = CausalCharLM(CharLMConfig(V, 12, d_model=16, n_heads=2, n_layers=1))
    fit(lm, evaluator_loss_fn(), row_batches(data, 64, seed=0),
        TrainConfig(steps=80, lr=1e-2, warmup=10), show_progress=False, device="cpu")  # fmt: skip
    planted = generative_nll(lm, data[:64], V).mean()
    noise = generative_nll(lm, torch.randint(0, V, (64, 12), generator=g), V).mean()
    assert float(planted) < 2 * math.log(V) / 12
    assert float(noise) > math.log(V)


def test_perturbing_one_token_changes_only_later_predictions():
    torch.manual_seed(0)
    m = CausalCharLM(CharLMConfig(5, 6, d_model=16, n_heads=2, n_layers=2)).eval()
    torch.nn.init.normal_(m.head.weight, std=0.5)
    x = torch.randint(0, 5, (1, 6))
    base = m(x)
    y = x.clone()
    y[0, 3] = (y[0, 3] + 1) % 5
    out = m(y)
    # the prediction of x_l uses x_<l only: positions <= 3 unchanged, position 4 changes
    torch.testing.assert_close(out[:, :4], base[:, :4])
    assert not torch.allclose(out[:, 4], base[:, 4])


def test_uniform_scorer_has_vocab_perplexity():
    m = CausalCharLM(CharLMConfig(7, 4, d_model=8, n_heads=2, n_layers=1))
    torch.nn.init.zeros_(m.head.weight)
    torch.nn.init.zeros_(m.head.bias)
    nll = generative_nll(m, torch.randint(0, 7, (3, 4)), 7)
    assert math.exp(float(nll.mean())) == pytest.approx(7.0)
    with pytest.raises(ValueError, match="x"):
        m(torch.zeros(2, 5, dtype=torch.long))


def test_sequence_entropy():
    x = torch.tensor([[0, 0, 0, 0, 0], [0, 1, 2, 3, 4], [0, 0, 1, 1, 1]])
    h = sequence_entropy(x, V)
    torch.testing.assert_close(h[:2], torch.tensor([0.0, math.log2(V)], dtype=torch.float64))
    assert math.isclose(float(h[2]), unigram_entropy(x[2].numpy(), V), rel_tol=1e-12)


def test_bad_input():
    lm = small_lm()
    x = torch.zeros((2, 12), dtype=torch.long)
    with pytest.raises(TypeError, match="samples"):
        generative_nll(lm, x.float(), V)
    with pytest.raises(ValueError, match="samples"):
        generative_nll(lm, x + V, V)
    with pytest.raises(ValueError, match="batch_size"):
        generative_nll(lm, x, V, batch_size=0)
    with pytest.raises(ValueError, match="evaluator"):
        generative_nll(lambda y: torch.zeros(len(y), 12, V + 1), x, V)
    with pytest.raises(ValueError, match="x: expected at most 12"):
        lm(torch.zeros((2, 13), dtype=torch.long))
    with pytest.raises(ValueError, match="x"):
        lm(x - 1)
    with pytest.raises(ValueError, match="samples"):
        sequence_entropy(x[0], V)
    with pytest.raises(ValueError, match="n_heads"):
        CharLMConfig(V, 12, d_model=16, n_heads=3)
    with pytest.raises(ValueError, match="vocab_size"):
        CharLMConfig(0, 12)
    with pytest.raises(ValueError, match="seq_len"):
        CharLMConfig(V, True)
