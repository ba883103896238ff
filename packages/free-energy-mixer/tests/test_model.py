"""The causal LM: every mixer runs, learns a little, decodes with caches, and rejects bad ids."""

from __future__ import annotations

import pytest
import torch
from free_energy_mixer.layer import FEMCache
from free_energy_mixer.model import MIXERS, CausalLM, LMConfig

from shared_core.testing import assert_close


@pytest.mark.parametrize("mixer", MIXERS)
def test_forward_loss_and_cache(mixer: str) -> None:
    torch.manual_seed(0)
    model = CausalLM(LMConfig(vocab_size=17, mixer=mixer, d_model=32, num_heads=2, tdc_hidden=4))
    ids = torch.randint(0, 17, (2, 12))
    logits, loss = model(ids, ids)
    assert logits.shape == (2, 12, 17) and loss is not None
    uniform = torch.log(torch.tensor(17.0)).item()
    assert abs(float(loss.detach()) - uniform) < 0.5  # near uniform at init
    caches = [FEMCache() for _ in model.blocks]
    steps = [model(ids[:, :5], caches=caches)[0]]
    steps += [model(ids[:, t : t + 1], caches=caches)[0] for t in range(5, 12)]
    assert_close(f"{mixer} decode", logits, torch.cat(steps, 1), 1e-5)


def test_future_tokens_do_not_change_logits() -> None:
    torch.manual_seed(0)
    model = CausalLM(LMConfig(vocab_size=11, mixer="fem-gla", d_model=32, num_heads=2))
    ids = torch.randint(0, 11, (1, 20))
    ids2 = ids.clone()
    ids2[0, 10:] = (ids2[0, 10:] + 3) % 11
    assert torch.equal(model(ids)[0][:, :10], model(ids2)[0][:, :10])


def test_bad_inputs() -> None:
    model = CausalLM(LMConfig(vocab_size=5, d_model=16, num_heads=2))
    with pytest.raises(ValueError, match=r"ids: expected token ids in \[0, 5\)"):
        model(torch.tensor([[0, 5]]))
    with pytest.raises(TypeError, match="ids: expected a \\(batch, time\\) int64 tensor"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="ids: expected a non-empty"):
        model(torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="labels: expected shape"):
        model(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="caches: expected 2 FEMCache"):
        model(torch.zeros(1, 3, dtype=torch.long), caches=[FEMCache()])
    with pytest.raises(ValueError, match="mixer: expected one of"):
        LMConfig(vocab_size=5, mixer="mamba")
    with pytest.raises(ValueError, match="vocab_size: expected a positive int"):
        LMConfig(vocab_size=0)
    with pytest.raises(TypeError, match="config: expected an LMConfig"):
        CausalLM({"vocab_size": 5})  # type: ignore[arg-type]
