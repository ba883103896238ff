import math

import pytest
import torch
from masked_diffusion.cli import main, unigram_cross_entropy_bits, unigram_entropy_bits


def test_unigram_metrics():
    x = torch.arange(8).repeat(10)
    assert unigram_entropy_bits(x, 8) == pytest.approx(3.0)
    assert unigram_entropy_bits(torch.zeros(5, dtype=torch.long), 8) == pytest.approx(0.0)
    # add-one unigram on uniform data evaluated on the same data: log2(8)
    assert unigram_cross_entropy_bits(x, x, 8) == pytest.approx(math.log2(8))


def test_bad_scale_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2
    assert "scale" in capsys.readouterr().err
