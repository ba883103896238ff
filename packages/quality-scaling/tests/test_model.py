"""The tiny GPT and its training run: dtype/device agreement with a float64 CPU reference,
seeded determinism, and bad input."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from quality_scaling.data import MarkovSource
from quality_scaling.model import GPT, GPTConfig
from quality_scaling.train import TrainConfig, lm_loss, train_run

from shared_core.testing import assert_close

CFG = GPTConfig(vocab_size=32, seq_len=16, d_model=32, n_layer=2, n_head=2)
SRC = MarkovSource(vocab_size=32, seed=0)


def _seqs(rows: int, seed: int) -> np.ndarray:
    return SRC.sample(rows, CFG.seq_len, np.random.default_rng(seed))


@pytest.mark.parametrize(
    ("dtype", "ratio"), [(torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 3e-2)]
)
def test_gpt_forward_and_loss_match_float64_reference(
    device: str, dtype: torch.dtype, ratio: float
) -> None:
    torch.manual_seed(0)
    ref_model = GPT(CFG).double()
    x = torch.as_tensor(_seqs(8, 1))
    with torch.no_grad():
        ref_logits = ref_model(x[:, :-1])
        ref_loss = lm_loss(ref_model, x, None)
        fast = GPT(CFG).to(device=device, dtype=dtype)
        fast.load_state_dict(ref_model.state_dict())
        logits = fast(x[:, :-1].to(device))
        loss = lm_loss(fast, x.to(device), None)
    assert_close("logits", ref_logits, logits, ratio)
    assert_close("loss", ref_loss, loss, ratio)


def test_train_run_is_deterministic_and_learns(device: str) -> None:
    train, test = _seqs(512, 2), _seqs(256, 3)
    cfg = TrainConfig(batch_size=8, lr=1e-2, device=device)
    small = GPTConfig(32, 16, 16, 1, 1)
    a = train_run(small, train, test, cfg)
    b = train_run(small, train, test, cfg)
    assert a == b
    assert a["steps"] == 64
    assert SRC.entropy_rate < a["loss"] < np.log(32)  # better than uniform, not below the floor


def _mask_run(mask: np.ndarray) -> object:
    return train_run(GPTConfig(32, 16, 16, 1, 1), _seqs(16, 0), _seqs(8, 1), mask=mask)


MODEL_CASES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("n_head 0", lambda: GPTConfig(32, n_head=0), ValueError, "n_head: expected a positive int"),
    (
        "d_model not a head multiple",
        lambda: GPTConfig(32, d_model=30, n_head=4),
        ValueError,
        "d_model: expected a multiple",
    ),
    ("vocab 0", lambda: GPTConfig(0), ValueError, "vocab_size: expected a positive int"),
    ("float ids", lambda: GPT(CFG)(torch.zeros(2, 4)), TypeError, "idx: expected integer"),
    (
        "ids >= vocab",
        lambda: GPT(CFG)(torch.full((2, 4), 32)),
        ValueError,
        "idx: token ids must lie in",
    ),
    (
        "time > seq_len",
        lambda: GPT(CFG)(torch.zeros(2, 17, dtype=torch.long)),
        ValueError,
        "idx: expected (batch >= 1",
    ),
    (
        "time 0",
        lambda: GPT(CFG)(torch.zeros(2, 0, dtype=torch.long)),
        ValueError,
        "idx: expected (batch >= 1",
    ),
    ("batch_size 0", lambda: TrainConfig(batch_size=0), ValueError, "batch_size: expected"),
    ("warmup_frac 1", lambda: TrainConfig(warmup_frac=1.0), ValueError, "warmup_frac: expected"),
    (
        "train wrong length",
        lambda: train_run(CFG, np.zeros((4, 9), dtype=np.int64), _seqs(4, 0)),
        ValueError,
        "train_seqs: expected shape",
    ),
    (
        "train float",
        lambda: train_run(CFG, np.zeros((4, 17)), _seqs(4, 0)),
        TypeError,
        "train_seqs: expected an integer",
    ),
    (
        "train empty",
        lambda: train_run(CFG, np.zeros((0, 17), dtype=np.int64), _seqs(4, 0)),
        ValueError,
        "train_seqs: expected shape",
    ),
    (
        "test ids >= vocab",
        lambda: train_run(CFG, _seqs(4, 0), np.full((4, 17), 40)),
        ValueError,
        "test_seqs: token ids",
    ),
    ("mask shape", lambda: _mask_run(np.ones(3, bool)), ValueError, "mask: expected"),
    ("mask all False", lambda: _mask_run(np.zeros(16, bool)), ValueError, "mask: expected"),
]


@pytest.mark.parametrize(
    ("call", "error", "match"), [c[1:] for c in MODEL_CASES], ids=[c[0] for c in MODEL_CASES]
)
def test_bad_model_input_is_rejected(
    call: Callable[[], object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error) as info:
        call()
    assert match in str(info.value), str(info.value)
