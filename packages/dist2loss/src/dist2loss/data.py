"""The paper's toy task: in-context linear regression written as integer tokens.

A sequence holds k pairs then a query, ``<bos> x_1 y_1 ... x_k y_k x_q y_q``, with
``y = a x + b + noise`` rounded to an integer and every integer a single token ("0".."63").
The model must infer (a, b) from the pairs to predict each y; the last y is the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where it is used, so the CLI's --help stays fast
    import torch

    from dist2loss.metric import MetricTable


@dataclass(frozen=True)
class RegressionTask:
    """Ranges of the toy task; defaults keep every y inside the number vocabulary."""

    pairs: int = 8  # k in-context (x, y) pairs before the query (the paper's k = 8)
    n_numbers: int = 64  # integer tokens 0..63; token id = value
    x_max: int = 9  # x ~ U{0..x_max}
    a_max: int = 4  # slope a ~ U{0..a_max}
    b_max: int = 15  # intercept b ~ U{0..b_max}
    noise: float = 1.0  # y = round(a x + b + N(0, noise^2)), clipped to the vocabulary

    @property
    def bos(self) -> int:
        return self.n_numbers

    @property
    def vocab_size(self) -> int:
        return self.n_numbers + 1

    @property
    def length(self) -> int:
        return 1 + 2 * (self.pairs + 1)

    def metric(self) -> MetricTable:
        """V_d = the integer tokens, d = squared difference."""
        from dist2loss.metric import number_table

        return number_table({v: float(v) for v in range(self.n_numbers)}, self.vocab_size)


def make_sequences(task: RegressionTask, n: int, seed: int) -> torch.Tensor:
    """(n, length) int64 token sequences, a pure function of (task, n, seed)."""
    import torch

    if n < 1:
        raise ValueError(f"n: expected a positive number of sequences, got {n}")
    g = torch.Generator().manual_seed(seed)
    m = task.pairs + 1
    a = torch.randint(0, task.a_max + 1, (n, 1), generator=g)
    b = torch.randint(0, task.b_max + 1, (n, 1), generator=g)
    x = torch.randint(0, task.x_max + 1, (n, m), generator=g)
    noise = torch.randn(n, m, generator=g, dtype=torch.float64) * task.noise
    y = (a * x + b + noise).round().clamp(0, task.n_numbers - 1).long()
    seq = torch.empty(n, task.length, dtype=torch.int64)
    seq[:, 0] = task.bos
    seq[:, 1::2] = x
    seq[:, 2::2] = y
    return seq


def inputs_and_labels(seq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Next-token pairs with a label only where the next token is a y (x's are random)."""
    inputs, labels = seq[:, :-1], seq[:, 1:].clone()
    labels[:, 0::2] = -100  # targets at odd sequence positions are x's
    return inputs, labels
