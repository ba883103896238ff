"""The noise score against the loop reference and Captum; the noise mask's exact rule."""

from __future__ import annotations

import pytest
import torch
from context_denoising import attention_ig, noise_mask, noise_score
from context_denoising.attribution import integrated_gradients, saliency
from context_denoising.model import tiny_gpt2, tiny_llama
from context_denoising.reference import reference_noise_mask, reference_scores
from context_denoising.score import embedding_gradients, sequence_ce

from shared_core.testing import assert_close

VOCAB = 40


@pytest.fixture(params=["llama", "gpt2"])
def model64(request):
    make = tiny_llama if request.param == "llama" else tiny_gpt2
    return make(VOCAB, hidden_size=32, num_heads=4, seed=0, dtype=torch.float64).eval()


def padded_batch(seed: int = 0) -> dict[str, torch.Tensor]:
    """Two rows: a full one and a right-padded one, 3 answer tokens each."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(6, VOCAB, (2, 24), generator=g)
    labels = torch.full_like(ids, -100)
    attn = torch.ones_like(ids)
    labels[0, -3:] = ids[0, -3:]
    attn[1, 17:] = 0
    ids[1, 17:] = 0
    labels[1, 14:17] = ids[1, 14:17]
    return {"input_ids": ids, "labels": labels, "attention_mask": attn}


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_score_matches_loop_reference(model64, device, norm):
    batch = {k: v.to(device) for k, v in padded_batch().items()}
    # the oracle runs on `device` too: transformers' Llama computes RoPE in float32 even in a
    # float64 model, and float32 cos/sin differ by an ulp between CPU and CUDA (4e-8 here)
    ref = reference_scores(model64.to(device), batch, norm).cpu()
    for dtype, ratio in ((torch.float64, 1e-10), (torch.float32, 1e-5), (torch.bfloat16, 5e-2)):
        model = model64.to(device=device, dtype=dtype)
        fast = noise_score(model, batch, norm)
        assert_close(f"score {norm} {dtype}", ref, fast.double().cpu(), ratio)
        model64.to(device=device, dtype=torch.float64)
    model64.to(device="cpu")


def test_score_equals_captum_saliency(model64):
    batch = padded_batch(1)
    ctx = (batch["attention_mask"] == 1) & (batch["labels"] == -100)
    sal = saliency(model64, batch)  # abs=False: the raw gradient
    for norm, f in (
        ("l2", lambda s: torch.linalg.vector_norm(s, dim=-1)),
        ("l1", lambda s: s.abs().sum(-1)),
    ):
        ours = noise_score(model64, batch, norm)
        diff = (ours - f(sal) * ctx).abs().max().item()
        print(f"{norm}: max |ours - captum Saliency| = {diff:.3g}")
        assert diff <= 1e-6


def test_integrated_gradients_completeness(model64):
    batch = padded_batch(2)
    attr, delta = integrated_gradients(model64, batch, n_steps=200)
    emb = model64.get_input_embeddings()
    with torch.no_grad():
        e = emb(batch["input_ids"])

        def f(x):
            return sequence_ce(
                model64(inputs_embeds=x, attention_mask=batch["attention_mask"]).logits,
                batch["labels"],
            )

        gap = f(e) - f(torch.zeros_like(e))
    err = (attr.sum(dim=1) - gap).abs()
    print("F(x) - F(0):", gap.tolist(), "completeness error:", err.tolist())
    assert torch.all(err <= 1e-3 * gap.abs() + 1e-6)
    assert torch.allclose(err, delta.abs(), rtol=1e-6, atol=1e-9)


def test_score_of_a_row_does_not_depend_on_its_batch(model64):
    batch = padded_batch(3)
    both = noise_score(model64, batch)
    alone = noise_score(model64, {k: v[1:, :17] for k, v in batch.items()})
    assert_close("row alone vs in batch", alone, both[1:, :17], 1e-10)
    assert torch.all(both[1, 14:] == 0)  # answer and padding are not context


def test_noise_mask_is_exactly_at_or_below_the_context_mean():
    g = torch.Generator().manual_seed(0)
    scores = torch.rand(4, 30, generator=g, dtype=torch.float64)
    ctx = torch.rand(4, 30, generator=g) < 0.7
    ctx[:, 0] = True
    scores[~ctx] = 1e9  # outside the context: never counted in the mean, never noise
    mask = noise_mask(scores, ctx)
    assert torch.equal(mask, reference_noise_mask(scores, ctx))
    # a token exactly at the mean is noise (<=); just above it is not
    s = torch.tensor([[1.0, 2.0, 3.0, 100.0]], dtype=torch.float64)
    c = torch.tensor([[True, True, True, False]])
    assert noise_mask(s, c).tolist() == [[True, True, False, False]]
    s2 = torch.tensor([[1.0, 2.0 + 1e-12, 3.0]], dtype=torch.float64)
    assert noise_mask(s2, torch.ones(1, 3, dtype=torch.bool)).tolist() == [[True, False, False]]


def test_scoring_pass_leaves_params_grads_optimizer_and_rng_untouched():
    model = tiny_gpt2(VOCAB, hidden_size=32, seed=1)
    model.config.resid_pdrop = 0.1  # dropout on: the pass must not shift the RNG stream
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = padded_batch(4)
    # one real step so the optimiser has state and the parameters have grads
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    out.logits.sum().backward()
    opt.step()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    state = {k: {n: v.clone() for n, v in s.items()} for k, s in opt.state_dict()["state"].items()}
    rng = torch.get_rng_state()
    embedding_gradients(model, batch)
    assert torch.equal(rng, torch.get_rng_state())
    for n, p in model.named_parameters():
        assert torch.equal(p, params[n]), n
        assert torch.equal(p.grad, grads[n]), n
    for k, s in opt.state_dict()["state"].items():
        for n, v in s.items():
            assert torch.equal(v, state[k][n])


def _padded(left: bool) -> dict[str, torch.Tensor]:
    """Row 0 full (20 tokens), row 1 14 tokens padded on the `left` or right; 3 answer tokens."""
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(6, VOCAB, (2, 20), generator=g)
    labels = torch.full_like(ids, -100)
    labels[:, -3:] = ids[:, -3:]
    attn = torch.ones_like(ids)
    if left:
        attn[1, :6], ids[1, :6], labels[1, :6] = 0, 0, -100
    else:
        ids[1] = torch.cat([ids[1, 6:], torch.zeros(6, dtype=torch.long)])
        labels[1] = torch.cat([labels[1, 6:], torch.full((6,), -100)])
        attn[1, 14:] = 0
    return {"input_ids": ids, "labels": labels, "attention_mask": attn}


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_left_and_right_padding_give_the_same_scores(model64, norm):
    """Positions come from the attention mask, so GPT-2's learned positions see a left-padded
    row as if it were alone (before position ids it scored 33% off)."""
    left, right = _padded(True), _padded(False)
    sl, sr = noise_score(model64, left, norm), noise_score(model64, right, norm)
    assert_close("row 0", sr[0], sl[0], 1e-12)
    assert_close("row 1 left vs right", sr[1, :14], sl[1, 6:], 1e-10)
    alone = {k: v[1:, 6:] for k, v in left.items()}
    assert_close("row 1 padded vs alone", noise_score(model64, alone, norm)[0], sl[1, 6:], 1e-10)
    assert float(sl[1, 6:].abs().sum()) > 0


@pytest.mark.parametrize("form", ["note", "code"])
def test_attention_ig_left_and_right_padding_give_the_same_scores(model64, form):
    """A left-padded row's fully masked query rows (eager attention: softmax over -inf, NaN in
    float64) must not spoil the gradients: finite, and the same as right padding and alone."""
    left, right = _padded(True), _padded(False)
    gl, gr = attention_ig(model64, left, form=form), attention_ig(model64, right, form=form)
    for name, got in (("left", gl), ("right", gr)):
        assert bool(torch.isfinite(got.ig).all()) and bool(torch.isfinite(got.attention).all()), (
            name
        )
    # Llama's eager softmax runs in float32 even for a float64 model: a one-ulp flip (6e-8)
    # between batch layouts is the floor, hence 1e-6 rather than noise_score's 1e-10
    tol = 1e-6
    assert_close("ig row 0", gr.ig[0], gl.ig[0], tol)
    assert_close("ig row 1 left vs right", gr.ig[1, :14], gl.ig[1, 6:], tol)
    assert_close("mass row 1 left vs right", gr.attention[1, :14], gl.attention[1, 6:], tol)
    alone = attention_ig(model64, {k: v[1:, 6:] for k, v in left.items()}, form=form)
    assert_close("ig row 1 padded vs alone", alone.ig[0], gl.ig[1, 6:], tol)
    assert torch.all(gl.ig[1, :6] == 0) and float(gl.ig[1, 6:].sum()) > 0
