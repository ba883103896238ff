"""The in-memory tokenizer, the tiny Llama builder and greedy decoding."""

from __future__ import annotations

import pytest
import torch
from nextquill.model import TinyLlamaConfig, greedy_decode, tiny_llama, word_tokenizer


def test_word_tokenizer_round_trips_and_rejects_bad_words():
    tok = word_tokenizer(["a", "b", "c"])
    assert tok("a c b", add_special_tokens=False)["input_ids"] == [4, 6, 5]
    assert tok.decode([4, 6, 5]) == "a c b"
    assert (tok.pad_token_id, tok.eos_token_id) == (0, 3)
    with pytest.raises(ValueError, match="words: expected non-empty words without spaces"):
        word_tokenizer(["a b"])


def test_tiny_llama_rejects_a_bad_vocabulary():
    with pytest.raises(ValueError, match="vocab_size: expected an int >= 4"):
        tiny_llama(1)


def test_batched_greedy_decoding_equals_one_by_one(tok, examples):
    from nextquill import encode_one

    model = tiny_llama(len(tok), TinyLlamaConfig(hidden=32, layers=1, ff=64), seed=0).double()
    prompts = [encode_one(e, tok).with_history[:-3] for e in examples[:4]]
    batched = greedy_decode(model, prompts, 6, tok.eos_token_id)
    single = [greedy_decode(model, [p], 6, tok.eos_token_id)[0] for p in prompts]
    assert batched == single
    assert all(len(o) <= 6 for o in batched)
    with torch.no_grad():
        first = model(input_ids=torch.tensor([prompts[0]])).logits[0, -1].argmax()
    assert batched[0][:1] == ([] if int(first) == tok.eos_token_id else [int(first)])


def test_nextquill_loss_trains_only_the_lora_adapters(tok, examples):
    peft = pytest.importorskip("peft")
    from nextquill import encode, nextquill_loss

    base = tiny_llama(len(tok), TinyLlamaConfig(hidden=32, layers=1, ff=64), seed=0)
    lora = peft.get_peft_model(
        base, peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    )
    loss = nextquill_loss(lora, encode(examples, tok))
    loss.backward()
    grads = {n: p.grad for n, p in lora.named_parameters() if p.grad is not None}
    assert grads and all("lora_" in n for n in grads)
    assert any(float(g.abs().max()) > 0 for g in grads.values())
