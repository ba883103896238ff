"""Bad input to the loss raises a ValueError/TypeError naming the argument and the value."""

from __future__ import annotations

import math

import pytest
import torch
from dist2loss import causal_dist2_loss, dist2_kl, dist2_loss, number_table, place_values


@pytest.fixture
def case():
    table = number_table({i: float(i) for i in range(10)}, 12)
    logits = torch.randn(2, 3, 12)
    labels = torch.tensor([[1, 2, 11], [3, -100, 4]])
    return table, logits, labels


@pytest.mark.parametrize("tau", [0.0, -1.0, math.nan, math.inf, True, "1"])
def test_bad_tau(case, tau):
    table, logits, labels = case
    with pytest.raises(ValueError, match="tau"):
        dist2_loss(logits, labels, table, tau=tau)
    with pytest.raises(ValueError, match="tau"):
        dist2_kl(logits, labels, table, tau=tau)


@pytest.mark.parametrize("alpha", [-0.1, math.nan, math.inf])
def test_bad_alpha(case, alpha):
    table, logits, labels = case
    with pytest.raises(ValueError, match="alpha"):
        dist2_loss(logits, labels, table, alpha=alpha)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"beta": -1.0}, "beta: expected >= 0"),
        ({"beta": math.nan}, "beta: expected a finite"),
        ({"negatives": -1}, "negatives: expected an int >= 0"),
        ({"negatives": 1.5}, "negatives: expected an int >= 0"),
        ({"negatives": 10}, "negatives: expected fewer than"),
        ({"target": "gauss"}, "target: expected one of"),
        ({"num_items_in_batch": 0}, "num_items_in_batch: expected a positive count"),
        ({"num_items_in_batch": torch.ones(2)}, "num_items_in_batch: expected a scalar"),
        ({"num_items_in_batch": 5, "normalise": "metric"}, "num_metric_in_batch: expected"),
    ],
)
def test_bad_options(case, kwargs, match):
    table, logits, labels = case
    with pytest.raises(ValueError, match=match):
        dist2_loss(logits, labels, table, **kwargs)


@pytest.mark.parametrize("bad", [12, 50, -1, -7])
def test_labels_outside_the_vocabulary(case, bad):
    table, logits, labels = case
    labels = labels.clone()
    labels[0, 0] = bad
    with pytest.raises(ValueError, match=rf"labels: expected ids in \[0, 12\).*{bad}"):
        dist2_loss(logits, labels, table)


def test_metric_table_of_the_wrong_size(case):
    _, logits, labels = case
    small = number_table({i: float(i) for i in range(10)}, 11)
    with pytest.raises(
        ValueError, match="metric: its table is for a vocabulary of 11 tokens but logits have 12"
    ):
        dist2_loss(logits, labels, small)
    with pytest.raises(TypeError, match="metric: expected a MetricTable"):
        dist2_loss(logits, labels, {i: float(i) for i in range(10)})


def test_shapes_and_dtypes(case):
    table, logits, labels = case
    with pytest.raises(ValueError, match="labels: expected shape"):
        dist2_loss(logits, labels[:, :2], table)
    with pytest.raises(TypeError, match="labels: expected an int64"):
        dist2_loss(logits, labels.float(), table)
    with pytest.raises(TypeError, match="labels: expected an int64"):
        dist2_loss(logits, labels.int(), table)
    with pytest.raises(TypeError, match="logits: expected a floating-point"):
        dist2_loss(logits.long(), labels, table)
    with pytest.raises(ValueError, match="labels: expected at least one position"):
        dist2_loss(logits[:, :0], labels[:, :0], table)
    with pytest.raises(ValueError, match="weights: expected a tensor of the labels' shape"):
        dist2_loss(logits, labels, table, weights=torch.ones(3))
    with pytest.raises(ValueError, match="weights: expected finite, non-negative"):
        dist2_loss(logits, labels, table, weights=-torch.ones(2, 3))
    with pytest.raises(ValueError, match="normalise"):
        dist2_loss(logits, labels, table, normalise="batch")
    with pytest.raises(ValueError, match="logits: expected \\(..., time, vocab\\)"):
        causal_dist2_loss(torch.randn(12), labels, table)
    with pytest.raises(TypeError, match="labels"):
        place_values(labels.float(), table)


def test_nan_logits_and_all_ignored(case):
    table, logits, labels = case
    bad = logits.clone()
    bad[1, 2, 4] = math.nan
    with pytest.raises(ValueError, match="logits: the loss is nan"):
        dist2_loss(bad, labels, table)
    with pytest.raises(ValueError, match="every position is ignored"):
        dist2_loss(logits, torch.full_like(labels, -100), table)
