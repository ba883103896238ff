"""The attention IG score against loops over A and dL/dA captured the authors' way
(retain_grad on each layer's attention probabilities), the proportionality claim, manual
denoising, and rank correlation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from context_denoising import attention_ig, manual_denoising, noise_score, rank_correlation
from context_denoising.model import tiny_gpt2, tiny_llama
from context_denoising.reference import reference_attention_ig
from context_denoising.score import forward, sequence_ce

from shared_core.testing import assert_close

VOCAB = 40


def small_batch(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(6, VOCAB, (2, 12), generator=g)
    labels = torch.full_like(ids, -100)
    labels[:, -2:] = ids[:, -2:]
    attn = torch.ones_like(ids)
    attn[1, 9:], ids[1, 9:] = 0, 0  # row 1 right-padded, answer at 7-8
    labels[1] = -100
    labels[1, 7:9] = ids[1, 7:9]
    return {"input_ids": ids, "labels": labels, "attention_mask": attn}


def _layers(model):
    return model.model.layers if hasattr(model, "model") else model.transformer.h


def hooked_attention(model, batch):
    """A and dL/dA as the authors' AttentionAdapter gets them: retain_grad in the forward."""
    model.set_attn_implementation("eager")
    kept: list[torch.Tensor] = []

    def hook(_module, _args, output):
        output[1].retain_grad()
        kept.append(output[1])

    handles = [
        (layer.self_attn if hasattr(layer, "self_attn") else layer.attn).register_forward_hook(hook)
        for layer in _layers(model)
    ]
    try:
        out = forward(model, batch, input_ids=batch["input_ids"])
        sequence_ce(out.logits, batch["labels"]).sum().backward()
    finally:
        for h in handles:
            h.remove()
        model.set_attn_implementation("sdpa")
    return [a.detach() for a in kept], [a.grad for a in kept]


@pytest.mark.parametrize("make", [tiny_llama, tiny_gpt2])
@pytest.mark.parametrize("form", ["note", "code"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_attention_ig_matches_loops_over_hooked_attention(make, form, dtype, device):
    model = make(VOCAB, hidden_size=32, num_layers=3, seed=0, dtype=dtype).to(device).eval()
    b = {k: v.to(device) for k, v in small_batch().items()}
    ctx = (b["labels"] == -100) & (b["attention_mask"] == 1)
    start = 1 if form == "code" else 0
    got = attention_ig(model, b, form=form, start_layer=start)
    attns, grads = hooked_attention(model, b)
    ref_ig, ref_mass = reference_attention_ig(
        [a.cpu() for a in attns[start:]],
        [g.cpu() for g in grads[start:]],
        b["labels"].cpu(),
        ctx.cpu(),
        form,
    )
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    assert_close(f"ig {form}", ref_ig, got.ig.cpu().double(), tol)
    assert_close(f"attention {form}", ref_mass, got.attention.cpu().double(), tol)
    assert float(got.ig.sum()) > 0
    assert torch.all(got.ig[~ctx] == 0)
    # the model is back on its own attention path
    assert model.config._attn_implementation == "sdpa"


def test_code_form_is_the_abs_of_the_signed_head_sum_not_the_note_form():
    model = tiny_llama(VOCAB, hidden_size=32, seed=1, dtype=torch.float64).eval()
    b = small_batch(1)
    note, code = attention_ig(model, b, form="note"), attention_ig(model, b, form="code")
    assert not torch.allclose(note.ig, code.ig)
    # heads of one sign: |sum_h A G| <= sum_h A |G|, i.e. code <= n_rows * n_heads * note
    rows = (b["labels"][:, 1:] != -100).sum(1, keepdim=True)
    assert torch.all(code.ig * rows <= 4 * note.ig + 1e-12)


def _mean_rho(sharpness: float) -> float:
    model = tiny_llama(VOCAB, hidden_size=32, num_layers=1, seed=0, dtype=torch.float64).eval()
    with torch.no_grad():  # attention logits scale with sharpness**2
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(sharpness)
            layer.self_attn.k_proj.weight.mul_(sharpness)
    rhos = []
    for seed in range(8):
        b = small_batch(seed)
        ctx = (b["labels"] == -100) & (b["attention_mask"] == 1)
        rhos += rank_correlation(noise_score(model, b), attention_ig(model, b).ig, ctx).tolist()
    return float(np.mean(rhos))


def test_proportionality_of_embedding_gradient_and_attention_ig():
    """The paper (App. C) argues ||dL/dE(x_j)|| is proportional to x_j's IG score. With one
    layer, a context token reaches the answer only through attention, and both scores carry
    the factor A[i, j]: when attention is peaked, A's spread dominates and the two rank the
    tokens alike; when it is near uniform (a random init), the other factors decide."""
    peaked, uniform = _mean_rho(100.0), _mean_rho(1.0)
    print(
        f"Spearman rho(||g||, IG note), 1-layer Llama: peaked {peaked:.3f}, uniform {uniform:.3f}"
    )
    assert peaked > 0.5
    assert peaked > uniform + 0.3


def test_manual_denoising_moves_only_tokens_outside_the_kept_spans():
    model = tiny_llama(VOCAB, hidden_size=32, seed=0, dtype=torch.float64).eval()
    b = small_batch()
    keep = torch.zeros(2, 12, dtype=torch.bool)
    keep[:, 2:5] = True
    delta = manual_denoising(model, b, keep, factor=0.1)
    assert torch.all(delta[keep] == 0) and torch.all(delta[b["attention_mask"] == 0] == 0)
    from context_denoising.score import embedding_gradients

    _, g, _ = embedding_gradients(model, b)
    moved = ~keep & (b["attention_mask"] == 1)
    assert_close("delta = -0.1 g", -0.1 * g[moved], delta[moved], 1e-15)
    base, after = attention_ig(model, b), attention_ig(model, b, delta=delta)
    assert not torch.allclose(base.attention, after.attention)
    assert torch.equal(attention_ig(model, b, delta=0 * delta).ig, base.ig)
    bad = delta.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="delta: expected finite values"):
        attention_ig(model, b, delta=bad)


def test_rank_correlation_matches_numpy():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(3, 20, generator=g), torch.randn(3, 20, generator=g)
    mask = torch.rand(3, 20, generator=g) < 0.7
    got = rank_correlation(x, y, mask)
    for r in range(3):
        a, c = x[r][mask[r]].numpy(), y[r][mask[r]].numpy()
        ra, rc = a.argsort().argsort(), c.argsort().argsort()
        assert got[r].item() == pytest.approx(np.corrcoef(ra, rc)[0, 1], abs=1e-12)
    assert rank_correlation(x, x, mask).tolist() == pytest.approx([1.0] * 3)
    assert rank_correlation(x, -x, mask).tolist() == pytest.approx([-1.0] * 3)


def test_bad_arguments():
    model = tiny_llama(VOCAB, hidden_size=32)
    b = small_batch()
    with pytest.raises(ValueError, match="form"):
        attention_ig(model, b, form="abs")
    with pytest.raises(ValueError, match="start_layer"):
        attention_ig(model, b, start_layer=2)
    with pytest.raises(TypeError, match="start_layer"):
        attention_ig(model, b, start_layer=1.0)
    with pytest.raises(ValueError, match="delta"):
        attention_ig(model, b, delta=torch.zeros(2, 12, 3))
    with pytest.raises(TypeError, match="keep"):
        manual_denoising(model, b, torch.zeros(2, 12))
    with pytest.raises(ValueError, match="keep"):
        manual_denoising(model, b, torch.zeros(2, 11, dtype=torch.bool))
    with pytest.raises(ValueError, match="factor"):
        manual_denoising(model, b, torch.zeros(2, 12, dtype=torch.bool), factor=-1.0)
    with pytest.raises(ValueError, match="x, y, mask"):
        rank_correlation(torch.zeros(2, 3), torch.zeros(2, 4), torch.ones(2, 3, dtype=torch.bool))
