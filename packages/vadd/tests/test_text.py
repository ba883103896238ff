import dataclasses
import math

import pytest
import torch
from masked_diffusion import shakespeare_chars
from vadd.experiments.scales import SCALES, TextConfig
from vadd.experiments.text import latent_kl, run_text
from vadd.model import VADD, VADDConfig

from shared_core.data import load


def test_data_windows_are_deterministic_and_cut_from_the_text():
    a = shakespeare_chars(seq_len=16, plays=1, seed=0)
    b = shakespeare_chars(seq_len=16, plays=1, seed=0)
    for x, y in ((a.train, b.train), (a.val, b.val), (a.test, b.test)):
        assert torch.equal(x, y)
    assert not torch.equal(a.train[:50], shakespeare_chars(seq_len=16, plays=1, seed=1).train[:50])
    text = load("shakespeare", plays=1)
    assert all(a.decode(row) in text for row in a.val[:20])
    n = len(a.train) + len(a.val) + len(a.test)
    assert n == len(text) // 16  # non-overlapping windows, the tail dropped


def test_run_text_micro_rows_and_reference():
    cfg = SCALES["micro"].text
    rows, ref = run_text(cfg, seed=0, device="cpu", show_progress=False)
    assert [(r["model"], r["steps"]) for r in rows] == [
        ("MDM", 1), ("MDM", 2), ("VADD", 1), ("VADD", 2)
    ]  # fmt: skip
    v = ref["vocab_size"]
    for r in (*rows, {k.removeprefix("reference_"): x for k, x in ref.items()}):
        assert r["gen_nll_nats"] > 0
        assert r["gen_ppl"] == pytest.approx(math.exp(r["gen_nll_nats"]))
        assert 0 <= r["seq_entropy_bits"] <= r["unigram_entropy_bits"] + 1e-9
        assert r["unigram_entropy_bits"] <= torch.log2(torch.tensor(float(v))) + 1e-9
    assert ref["reference_rows"] == cfg.eval_rows
    assert ref["vadd_latent_kl_nats"] >= 0
    assert len(ref["sample VADD T=2"]) == cfg.seq_len
    again, _ = run_text(cfg, seed=0, device="cpu", show_progress=False)
    assert again == rows  # seeded: the same numbers


@pytest.mark.parametrize(
    "field, value",
    [("seq_len", 0), ("plays", 0), ("steps", ()), ("steps", (2, 0)), ("n_samples", True),
     ("anneal_steps", -1), ("lr", 0.0), ("eval_rows", 1.5)],
)  # fmt: skip
def test_text_config_bad_input(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(TextConfig(), **{field: value})


def test_latent_kl_is_zero_at_the_prior_and_positive_off_it():
    torch.manual_seed(0)
    model = VADD(VADDConfig(5, 8, latent_dim=3, d_model=16, n_heads=2, n_layers=1))
    x0 = torch.randint(0, 5, (16, 8), generator=torch.Generator().manual_seed(0))
    assert latent_kl(model, x0, seed=0) == 0.0  # zero recognition head: r = p
    assert model.recognition is not None
    with torch.no_grad():
        model.recognition.net.head.bias[0] = 1.0  # shift the mean of z_1 by 1: KL = 1/2
    assert latent_kl(model, x0, seed=0) == pytest.approx(0.5, abs=1e-6)
    with pytest.raises(ValueError, match="latent_dim"):
        latent_kl(VADD(VADDConfig(5, 8, latent_dim=0, d_model=16, n_heads=2, n_layers=1)), x0, 0)
