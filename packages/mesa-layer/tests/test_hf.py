"""MesaNet as a transformers model: Auto classes, generation through the recurrent step form,
the cache, save/load, Trainer and a LoRA adapter."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mesa_layer.hf import MesaNetCache, MesaNetConfig, MesaNetForCausalLM, MesaNetModel  # noqa: E402
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402

V = 19


def tiny(**kw):
    base = dict(
        vocab_size=V,
        hidden_size=16,
        num_hidden_layers=2,
        num_heads=2,
        intermediate_size=32,
        chunk_size=4,
    )
    return MesaNetConfig(**{**base, **kw})


def model64(seed=0, **kw):
    torch.manual_seed(seed)
    m = AutoModelForCausalLM.from_config(tiny(**kw)).to(torch.float64).eval()
    with torch.no_grad():  # larger weights than N(0, 0.02): logits far from uniform
        for p in m.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return m


def test_auto_classes_build_the_models_beside_fla():
    cfg = tiny()
    assert isinstance(AutoModelForCausalLM.from_config(cfg), MesaNetForCausalLM)
    assert isinstance(AutoModel.from_config(cfg), MesaNetModel)
    assert type(AutoConfig.for_model("mesa_layer_mesanet")) is MesaNetConfig
    pytest.importorskip("fla")
    import fla  # noqa: F401  (registers fla's own "mesa_net")

    assert type(AutoConfig.for_model("mesa_net")).__module__.startswith("fla.")
    assert type(AutoConfig.for_model("mesa_layer_mesanet")) is MesaNetConfig


def test_config_checks_name_the_field():
    with pytest.raises(ValueError, match="num_heads: expected a divisor of hidden_size=16"):
        tiny(num_heads=3)
    with pytest.raises(ValueError, match="cg_start"):
        tiny(cg_start="x")


def test_greedy_generate_equals_step_decode_and_full_forward():
    m = model64()
    prompt = torch.randint(0, V, (2, 7), generator=torch.Generator().manual_seed(1))
    n = 9
    out = m.generate(
        prompt,
        max_new_tokens=n,
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
    )
    seq = out.sequences
    assert seq.shape == (2, 7 + n)
    with torch.no_grad():
        full = m(seq, use_cache=False).logits  # chunked form over the whole sequence
        # by hand: prefill, then one token at a time through the step form
        step = m(prompt, use_cache=True)
        cache, logits, tokens = step.cache, [step.logits[:, -1]], []
        for _ in range(n):
            tokens.append(logits[-1].argmax(-1, keepdim=True))
            step = m(tokens[-1], cache=cache, use_cache=True)
            cache = step.cache
            logits.append(step.logits[:, -1])
    assert torch.equal(torch.cat([prompt, *tokens], 1), seq)
    by_hand = torch.stack(logits[:n], 1)
    assert_close("step decode vs full forward", full[:, 6:-1], by_hand, 1e-10)
    assert (full[:, 6:-1] - by_hand).abs().max() < 1e-10
    assert torch.equal(full[:, 6:-1].argmax(-1), seq[:, 7:])
    # generate hands out float32 logits: equal to the float64 ones up to that rounding
    gen = torch.stack(out.logits, 1)
    assert gen.dtype == torch.float32
    torch.testing.assert_close(gen.double(), by_hand, rtol=1e-6, atol=1e-6)
    assert cache.get_seq_length() == 7 + n


def test_cache_after_a_prompt_equals_the_chunked_final_state():
    m = model64(seed=2)
    ids = torch.randint(0, V, (3, 11), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        chunked = m(ids, use_cache=True).cache
        part = m(ids[:, :5], use_cache=True).cache  # chunked prefill of a prefix ...
        for t in range(5, 11):  # ... then the recurrent step form
            part = m(ids[:, t : t + 1], cache=part, use_cache=True).cache
    assert isinstance(chunked, MesaNetCache) and chunked.seen_tokens == part.seen_tokens == 11
    for a, b in zip(chunked.layers, part.layers, strict=True):
        for name in ("H", "G", "conv_q", "conv_k"):
            assert (getattr(a, name) - getattr(b, name)).abs().max() < 1e-10, name
    # and it is the state of the layer's own chunked op on that block's input
    assert chunked.layers[0].H.shape == (3, 2, 8, 8)


def test_save_and_load_give_identical_logits(tmp_path):
    m = model64(seed=4)
    m.save_pretrained(tmp_path)
    back = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float64).eval()
    assert isinstance(back, MesaNetForCausalLM)
    assert back.config.to_diff_dict() | {"_name_or_path": ""} == m.config.to_diff_dict() | {
        "_name_or_path": ""
    }
    ids = torch.randint(0, V, (2, 9), generator=torch.Generator().manual_seed(5))
    saved, loaded = m.state_dict(), back.state_dict()
    assert saved.keys() == loaded.keys()
    assert all(torch.equal(saved[k], loaded[k]) for k in saved)  # bit for bit
    with torch.no_grad():
        # the loaded weights sit in safetensors' memory map (other alignment, other SIMD
        # summation order): equal logits up to float64 rounding, not bit for bit
        assert (m(ids).logits - back(ids).logits).abs().max() < 1e-13


def test_loss_is_the_shifted_next_token_cross_entropy():
    m = model64(seed=6)
    ids = torch.randint(0, V, (2, 8), generator=torch.Generator().manual_seed(7))
    out = m(ids, labels=ids)
    ref = torch.nn.functional.cross_entropy(
        out.logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1)
    )
    assert abs(out.loss.item() - ref.item()) < 1e-12


def test_bad_inputs_name_the_argument():
    m = model64()
    with pytest.raises(ValueError, match=r"input_ids: expected ids in \[0, 19\)"):
        m(torch.tensor([[0, V]]))
    with pytest.raises(ValueError, match="attention_mask: expected all ones"):
        m(torch.tensor([[1, 2]]), attention_mask=torch.tensor([[0, 1]]))
    with pytest.raises(TypeError, match="cache: expected a MesaNetCache"):
        m(torch.tensor([[1]]), cache=object())


def _trainer_dataset(n=4, T=12):
    gen = torch.Generator().manual_seed(0)
    return [
        {"input_ids": (ids := torch.randint(0, V, (T,), generator=gen)), "labels": ids}
        for _ in range(n)
    ]


def test_one_trainer_step_updates_the_weights(tmp_path):
    torch.manual_seed(0)
    m = MesaNetForCausalLM(tiny())
    before = {k: v.clone() for k, v in m.named_parameters()}
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        learning_rate=1e-2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
    )
    result = transformers.Trainer(model=m, args=args, train_dataset=_trainer_dataset()).train()
    assert result.global_step == 1 and torch.isfinite(torch.tensor(result.training_loss))
    changed = [k for k, v in m.named_parameters() if not torch.equal(v, before[k])]
    assert "model.backbone.blocks.0.mixer.q_proj.weight" in changed and "lm_head.weight" in changed


def test_lora_adapter_attaches_to_the_projections_and_trains():
    peft = pytest.importorskip("peft")
    torch.manual_seed(0)
    base = MesaNetForCausalLM(tiny())
    targets = ["q_proj", "k_proj", "v_proj", "o_proj"]
    lm = peft.get_peft_model(
        base, peft.LoraConfig(r=4, target_modules=targets, task_type="CAUSAL_LM")
    )
    wrapped = {
        n.split(".")[-1]
        for n, mod in lm.named_modules()
        if isinstance(mod, peft.tuners.lora.Linear)
    }
    assert wrapped == set(targets)
    ids = torch.randint(0, V, (2, 12), generator=torch.Generator().manual_seed(1))
    opt = torch.optim.AdamW([p for p in lm.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(3):
        loss = lm(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        with_grad = {n for n, p in lm.named_parameters() if p.grad is not None}
        assert with_grad and all("lora_" in n for n in with_grad)
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
