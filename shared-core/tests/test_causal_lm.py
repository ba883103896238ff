"""`shared_core.causal_lm`: the loss, input checks and cache a package's causal-LM class uses."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from shared_core.causal_lm import (  # noqa: E402
    RecurrentCache,
    check_attention_mask,
    next_token_loss,
)


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(4, 6, 11, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 11, (4, 6), generator=g)
    labels[1, :3] = -100  # a prompt: not scored
    return logits, labels


def test_loss_is_the_shifted_cross_entropy_in_the_logits_dtype() -> None:
    logits, labels = _batch()
    loss = next_token_loss(logits, labels)
    terms = [
        -torch.log_softmax(logits[b, t], -1)[labels[b, t + 1]]
        for b in range(4)
        for t in range(5)
        if labels[b, t + 1] != -100
    ]
    assert loss.dtype == torch.float64
    torch.testing.assert_close(loss, torch.stack(terms).mean(), rtol=1e-12, atol=0)


def test_accumulated_halves_give_the_whole_batch_loss_and_gradient() -> None:
    """Trainer's split: each micro-batch's sum over the whole batch's token count adds up to
    the whole batch's mean, whatever the split (the labelled tokens are uneven)."""
    logits, labels = _batch(1)
    whole = logits.clone().requires_grad_(True)
    next_token_loss(whole, labels).backward()
    split = logits.clone().requires_grad_(True)
    n = int((labels[:, 1:] != -100).sum())
    parts = [next_token_loss(split[i : i + 2], labels[i : i + 2], n) for i in (0, 2)]
    total = parts[0] + parts[1]
    total.backward()
    torch.testing.assert_close(total, next_token_loss(logits, labels), rtol=1e-12, atol=0)
    torch.testing.assert_close(split.grad, whole.grad, rtol=1e-12, atol=1e-15)


def test_bad_inputs_name_the_argument() -> None:
    logits, labels = _batch()
    with pytest.raises(ValueError, match=r"labels: expected shape \(4, 6\)"):
        next_token_loss(logits, labels[:, :5])
    check_attention_mask(None)
    check_attention_mask(torch.ones(2, 3))
    with pytest.raises(ValueError, match="attention_mask: expected all ones"):
        check_attention_mask(torch.tensor([[1, 1, 0]]))


def test_cache_reports_what_generation_reads() -> None:
    class Cache(RecurrentCache[str]):
        pass

    cache = Cache(["a", "b", "c"], 7)
    assert cache.get_seq_length() == 7 and cache.is_linear == [True, True, True]
    assert not Cache.is_compileable and not Cache.is_croppable


def test_output_carries_the_loss_only_with_labels() -> None:
    from shared_core.causal_lm import causal_lm_output

    logits, labels = _batch()
    out = causal_lm_output(logits, labels, "cache", return_dict=True, num_items_in_batch=None)
    torch.testing.assert_close(out.loss, next_token_loss(logits, labels), rtol=0, atol=0)
    assert out.logits is logits and out.cache == "cache"
    assert causal_lm_output(logits, None, "c", return_dict=True).loss is None
    loss, kept, cache = causal_lm_output(logits, labels, "c", return_dict=False)
    torch.testing.assert_close(loss, out.loss, rtol=0, atol=0)
    assert kept is logits and cache == "c"
    assert causal_lm_output(logits, None, "c", return_dict=False) == (logits, "c")
