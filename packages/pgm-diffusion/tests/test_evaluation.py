import math

import pytest
import torch
from pgm.evaluation import CharGPT, DigitClassifier, generative_perplexity


def test_char_gpt_is_causal():
    torch.manual_seed(0)
    m = CharGPT(5, 6, 16, 2, 2).eval()
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
    m = CharGPT(7, 4, 8, 2, 1)
    torch.nn.init.zeros_(m.head.weight)
    torch.nn.init.zeros_(m.head.bias)
    assert generative_perplexity(m, torch.randint(0, 7, (3, 4))) == pytest.approx(7.0)
    with pytest.raises(ValueError, match="x"):
        m(torch.zeros(2, 5, dtype=torch.long))


def test_classifier_features_shape():
    clf = DigitClassifier(levels=4)
    f = clf.features(torch.randint(0, 4, (5, 64)))
    assert f.shape == (5, 64) and torch.all(f >= 0)
    with torch.no_grad():
        assert math.isfinite(float(clf(torch.zeros(1, 64, dtype=torch.long)).sum()))
