"""The CDT step: sigma = 0 is plain SFT bit for bit, the perturbation matches the loop
reference, only the intended tokens move, LoRA scoring uses the base model, and `fit` runs it."""

from __future__ import annotations

import copy

import pytest
import torch
from context_denoising import CDTConfig, cdt_loss, cdt_step, make_cdt_loss, perturbation, sft_step
from context_denoising.cdt import PRESETS
from context_denoising.model import tiny_gpt2, tiny_llama
from context_denoising.reference import reference_delta
from context_denoising.score import embedding_gradients, noise_score

from shared_core.testing import assert_close
from shared_core.train import TrainConfig, fit, lr_factor

VOCAB = 40


def batch(seed: int = 0, rows: int = 3, time: int = 20) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(6, VOCAB, (rows, time), generator=g)
    labels = torch.full_like(ids, -100)
    labels[:, -2:] = ids[:, -2:]
    attn = torch.ones_like(ids)
    attn[-1, : time // 4] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": attn}


def models(make, dropout: bool = False):
    model = make(VOCAB, hidden_size=32, seed=3)
    if dropout:
        model.config.resid_pdrop = model.config.embd_pdrop = 0.1
        model = type(model)(model.config)
    model.train()
    return model, copy.deepcopy(model)


@pytest.mark.parametrize("make", [tiny_llama, tiny_gpt2])
@pytest.mark.parametrize("sigma_zero", [CDTConfig(eps=0.0), CDTConfig(beta=0.0)])
def test_sigma_zero_is_bit_identical_to_a_plain_sft_step(make, sigma_zero):
    a, b = models(make, dropout=make is tiny_gpt2)
    opt_a = torch.optim.AdamW(a.parameters(), lr=1e-2)
    opt_b = torch.optim.AdamW(b.parameters(), lr=1e-2)
    for step in range(3):
        torch.manual_seed(step)  # same dropout stream for both
        la = sft_step(a, batch(step), opt_a, grad_clip=1.0)["loss"]
        torch.manual_seed(step)
        lb = cdt_step(b, batch(step), opt_b, sigma_zero, grad_clip=1.0)["loss"]
        assert la == lb
    for (n, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), n
        assert torch.equal(p.grad, q.grad), n
    sa, sb = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
    for k in sa:
        for name in sa[k]:
            assert torch.equal(sa[k][name], sb[k][name])


def test_nonzero_sigma_changes_the_step():
    a, b = models(tiny_llama)
    opt_a = torch.optim.AdamW(a.parameters(), lr=1e-2)
    opt_b = torch.optim.AdamW(b.parameters(), lr=1e-2)
    la = sft_step(a, batch(), opt_a)["loss"]
    lb = cdt_step(b, batch(), opt_b, CDTConfig(eps=5.0))["loss"]
    assert la != lb


@pytest.mark.parametrize("signs", ["loomtrain", "openrlhf"])
@pytest.mark.parametrize("variant", ["opposite", "both", "other"])
@pytest.mark.parametrize("eps", [None, 0.3])
def test_perturbation_matches_loop_reference(variant, eps, signs):
    g = torch.Generator().manual_seed(1)
    grads = torch.randn(3, 16, 8, generator=g, dtype=torch.float64)
    ctx = torch.rand(3, 16, generator=g) < 0.8
    ctx[:, 0] = True
    config = CDTConfig(eps=eps, beta=0.5, variant=variant, signs=signs)
    delta, noise = perturbation(grads, ctx, config, lr=0.02)
    ref = reference_delta(grads, ctx, variant, eps, 0.02 * 0.5, signs)
    assert_close(f"delta {variant} eps={eps}", ref, delta, 1e-12)
    assert torch.all(delta[~ctx] == 0)  # only context tokens ever move
    norms = torch.linalg.vector_norm(grads, dim=-1)
    if variant == "opposite":  # tokens scoring above the mean are never perturbed
        assert torch.all(delta[ctx & ~noise] == 0)
        assert torch.all(delta[noise].abs().sum(-1) > 0)
    if variant == "other":
        assert torch.all(delta[noise] == 0)
    assert torch.equal(
        noise, ctx & (norms <= (norms * ctx).sum(1, keepdim=True) / ctx.sum(1, keepdim=True))
    )


def test_sigma_formula():
    grads = torch.zeros(1, 3, 4, dtype=torch.float64)
    grads[0, 0, 0], grads[0, 1, 0], grads[0, 2, 0] = 1.0, 3.0, 8.0  # mean 4: tokens 0, 1 noise
    ctx = torch.ones(1, 3, dtype=torch.bool)
    delta, _ = perturbation(grads, ctx, CDTConfig(eps=2.0), lr=None)
    assert delta[0, :, 0].tolist() == [-2.0 / 2.0 * 1.0, -2.0 / 4.0 * 3.0, 0.0]
    delta, _ = perturbation(grads, ctx, CDTConfig(beta=10.0), lr=0.1)
    assert torch.allclose(delta[0, :, 0], torch.tensor([-1.0, -3.0, 0.0], dtype=torch.float64))


def test_paper_default_is_lr_times_five_over_the_whole_row():
    """E' = E - I(x) g lr beta, beta = 5, the mean over every attended token of the row."""
    assert CDTConfig() == PRESETS["paper"]
    assert (CDTConfig().beta, CDTConfig().variant, CDTConfig().region) == (5.0, "opposite", "row")
    assert PRESETS["loomtrain"].beta == 1e-6 and PRESETS["openrlhf"].beta == 1.0
    model = tiny_llama(VOCAB, hidden_size=32, seed=0, dtype=torch.float64)
    b = batch(3)
    _, g, checked = embedding_gradients(model, b)
    attn = checked["attention_mask"].bool()
    delta, noise = perturbation(g, attn, CDTConfig(), lr=1e-5)
    norms = torch.linalg.vector_norm(g, dim=-1)
    mean = (norms * attn).sum(1, keepdim=True) / attn.sum(1, keepdim=True)
    expected = torch.where((attn & (norms <= mean)).unsqueeze(-1), -5e-5 * g, torch.zeros_like(g))
    assert_close("paper delta", expected, delta, 1e-15)
    # answer tokens belong to the row: some of them are below the mean and move
    answer = checked["labels"] != -100
    assert (noise & answer).any()
    # the 0.1 rule (mean over the context only) is a named option and differs
    ctx_delta, _ = perturbation(g, checked["context_mask"], PRESETS["v0.1"], lr=1e-5)
    assert torch.all(ctx_delta[answer] == 0)


@pytest.mark.parametrize("eps", [None, 0.3])
def test_both_is_opposite_plus_other_with_loomtrain_signs(eps):
    g = torch.Generator().manual_seed(2)
    grads = torch.randn(2, 12, 8, generator=g, dtype=torch.float64)
    mask = torch.ones(2, 12, dtype=torch.bool)
    parts = {
        v: perturbation(grads, mask, CDTConfig(eps=eps, variant=v), lr=0.1)[0]
        for v in ("opposite", "other", "both")
    }
    assert_close(
        "both = opposite + other", parts["opposite"] + parts["other"], parts["both"], 1e-15
    )
    # the OpenRLHF copy flips "other", so there "both" = opposite - other (relative gap 2)
    other = perturbation(grads, mask, CDTConfig(eps=eps, variant="other", signs="openrlhf"), 0.1)[0]
    assert torch.equal(other, -parts["other"])
    gap = (parts["opposite"] + other - parts["both"]).norm() / parts["both"].norm()
    assert float(gap) > 1.0


def test_supporting_tokens_are_not_perturbed_under_opposite():
    """Tokens the answer depends on score above the mean, so "opposite" leaves them alone."""
    model = tiny_llama(VOCAB, hidden_size=32, seed=0, dtype=torch.float64)
    b = batch(5, rows=2, time=24)
    _, g, checked = embedding_gradients(model, b)
    delta, noise = perturbation(g, checked["context_mask"], CDTConfig(eps=1.0))
    above = checked["context_mask"] & ~noise
    assert above.any()
    assert torch.all(delta[above] == 0)
    assert torch.all(delta[~checked["context_mask"]] == 0)


def test_cdt_step_in_a_users_loop_reads_the_schedulers_lr():
    model = tiny_llama(VOCAB, hidden_size=32, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5**s)
    losses = []
    for _step in range(3):
        out = cdt_step(model, batch(0), opt, CDTConfig(), grad_clip=1.0)
        sched.step()
        losses.append(out["loss"])
        assert 0 < out["noise_fraction"] <= 1
    assert losses[-1] < losses[0]


def test_fit_hands_the_cdt_loss_the_scheduled_rate():
    model = tiny_llama(VOCAB, hidden_size=32, seed=0)
    config = TrainConfig(steps=3, lr=1e-2, warmup=1)
    cdt = make_cdt_loss(CDTConfig())
    seen: list[float] = []

    def loss_fn(m, b, *, lr):
        seen.append(lr)
        return cdt(m, b, lr=lr)

    result = fit(model, loss_fn, batch, config, show_progress=False, device="cpu")
    assert len(result.losses) == 3 and "noise_fraction" in result.history[0]
    assert seen == [config.lr * lr_factor(s, config) for s in range(3)]
    with pytest.raises(ValueError, match="lr"):  # sigma = lr_t * beta needs the rate
        cdt(model, batch(0))


def test_lora_scoring_uses_the_base_model_and_only_adapters_train():
    peft = pytest.importorskip("peft")
    base = tiny_llama(VOCAB, hidden_size=32, seed=0, dtype=torch.float64)
    plain_scores = noise_score(base, batch(2))
    model = peft.get_peft_model(
        copy.deepcopy(base), peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    )
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5)  # adapters now change the outputs
    assert_close("scores with adapters disabled", plain_scores, noise_score(model, batch(2)), 1e-12)
    frozen = {n: p.clone() for n, p in model.named_parameters() if not p.requires_grad}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    cdt_step(model, batch(2), opt, CDTConfig(eps=0.5))
    for n, p in model.named_parameters():
        if n in frozen:
            assert torch.equal(p, frozen[n]), n
    # the adapters are back on after the scoring pass
    with torch.no_grad():
        on = model(input_ids=batch(2)["input_ids"]).logits
        with model.disable_adapter():
            off = model(input_ids=batch(2)["input_ids"]).logits
    assert not torch.allclose(on, off)


def test_cdt_loss_on_the_sdpa_and_eager_paths_agree():
    model = tiny_llama(VOCAB, hidden_size=32, seed=0, dtype=torch.float64)
    a, _ = cdt_loss(model, batch(1), CDTConfig(eps=0.5))
    model.set_attn_implementation("eager")
    b, _ = cdt_loss(model, batch(1), CDTConfig(eps=0.5))
    assert_close("cdt loss sdpa vs eager", a.detach(), b.detach(), 1e-9)


@pytest.mark.parametrize("variant", ["opposite", "both", "other"])
def test_shift_ratio_is_the_relative_move_of_the_moved_embeddings(variant):
    model = tiny_llama(VOCAB, hidden_size=32, seed=0, dtype=torch.float64)
    b = batch(4)
    config = CDTConfig(beta=50.0, variant=variant)
    _, parts = cdt_loss(model, b, config, lr=0.1)
    e, g, checked = embedding_gradients(model, b)
    ctx = checked["attention_mask"].bool()  # the paper's region: the whole row
    delta, noise = perturbation(g, ctx, config, lr=0.1)
    moved = {"opposite": noise, "both": ctx, "other": ctx & ~noise}[variant]
    ratio = (delta.norm(dim=-1) / e.norm(dim=-1))[moved].mean()
    assert parts["shift_ratio"] == pytest.approx(float(ratio), rel=1e-6)
    assert parts["shift_ratio"] > 0
    _, still = cdt_loss(model, b, CDTConfig(beta=0.0, variant=variant), lr=0.1)
    assert still["shift_ratio"] == 0.0
