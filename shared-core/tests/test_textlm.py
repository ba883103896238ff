"""The train / sample verbs' library (`shared_core.textlm`) on a tiny GPT-2 from transformers."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from shared_core.textlm import (  # noqa: E402
    _CHAR_VOCAB,
    _FIT_STATE,
    CharTokenizer,
    TextTrainConfig,
    _text_lm_settings,
    sample_text_lm,
    train_text_lm,
)

TEXT = "the cat sat on the mat. the dog sat on the log. " * 40
# untied: shared_core.checkpoint (the fit state) saves through safetensors, which refuses
# shared tensors
GPT2 = {
    "n_layer": 1,
    "n_embd": 16,
    "n_head": 2,
    "n_positions": 64,
    "tie_word_embeddings": False,
    "bos_token_id": None,
    "eos_token_id": None,  # sampling runs the full max_new_tokens
}


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def test_char_tokenizer_round_trips_and_names_unknown_characters(tmp_path):
    tok = CharTokenizer.from_text(TEXT)
    assert tok.alphabet == "".join(sorted(set(TEXT))) and tok.vocab_size == len(set(TEXT))
    assert tok.decode(tok.encode("the log.")) == "the log."
    with pytest.raises(ValueError, match=r"characters 'XZ' are not in the tokenizer's alphabet"):
        tok.encode("the ZX")
    tok.save_pretrained(tmp_path)
    assert json.loads((tmp_path / _CHAR_VOCAB).read_text())["alphabet"] == tok.alphabet
    assert CharTokenizer.from_pretrained(tmp_path).alphabet == tok.alphabet
    with pytest.raises(ValueError, match="alphabet: expected distinct characters"):
        CharTokenizer("aa")


def test_settings_are_the_config_class_fields_and_the_training_ones(tmp_path):
    from shared_core.cli import UsageError
    from shared_core.config import apply_overrides

    Settings = _text_lm_settings(transformers.GPT2Config)
    cfg = tmp_path / "small.json"
    cfg.write_text(json.dumps({"model": {"n_embd": 16}, "train": {"steps": 5}}))
    s = apply_overrides(Settings(), cfg, ["train.steps=7", "train.lr=1e-2", "model.n_layer=1"])
    assert s.train == TextTrainConfig(steps=7, lr=0.01)
    assert (s.model.n_embd, s.model.n_layer, s.model.n_head) == (16, 1, 12)  # GPT-2's defaults
    with pytest.raises(UsageError, match="has no setting 'vocab_size'"):
        apply_overrides(Settings(), None, ["model.vocab_size=3"])
    with pytest.raises(UsageError, match="steps: expected a positive int, got 0"):
        apply_overrides(Settings(), None, ["train.steps=0"])


def test_train_writes_a_model_folder_that_samples_and_resumes_exactly(corpus, tmp_path):
    train = TextTrainConfig(steps=4, batch_size=4, seq_len=16, warmup=0)
    kw = dict(model=GPT2, train=train, device="cpu", show_progress=False)
    summary = train_text_lm(transformers.GPT2Config, corpus, tmp_path / "a", **kw)
    assert summary["steps"] == 4 and summary["vocab_size"] == len(set(TEXT))
    assert summary["val_loss"] > 0 and summary["train_tokens"] + summary["val_tokens"] == len(TEXT)
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "a")
    assert model.config.vocab_size == summary["vocab_size"]
    text = sample_text_lm(tmp_path / "a", "the ", max_new_tokens=5, device="cpu")
    assert text.startswith("the ") and len(text) == 9
    with pytest.raises(ValueError, match="already holds a training run; pass --resume"):
        train_text_lm(transformers.GPT2Config, corpus, tmp_path / "a", **kw)
    # interrupted after 2 steps, resumed to 4: the same weights as the straight run
    train_text_lm(transformers.GPT2Config, corpus, tmp_path / "b", stop_at=2, **kw)
    assert (tmp_path / "b" / _FIT_STATE).is_file()
    train_text_lm(transformers.GPT2Config, corpus, tmp_path / "b", resume=True, **kw)
    resumed = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "b")
    for (name, p), q in zip(model.named_parameters(), resumed.parameters(), strict=True):
        assert torch.equal(p, q), name


def test_a_local_transformers_tokenizer_folder(corpus, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    chars = sorted(set(TEXT))
    vocab = {c: i for i, c in enumerate(["[UNK]", *chars])}
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer(tokenizers.models.BPE(vocab, [], unk_token="[UNK]")),
        unk_token="[UNK]",
    )
    fast.save_pretrained(tmp_path / "tok")
    summary = train_text_lm(
        transformers.GPT2Config, corpus, tmp_path / "m", tokenizer=str(tmp_path / "tok"),
        model=GPT2, train=TextTrainConfig(steps=2, batch_size=2, seq_len=8), device="cpu",
        show_progress=False,
    )  # fmt: skip
    assert summary["vocab_size"] == len(vocab) and summary["train_tokens"] > len(TEXT) * 0.8
    assert not (tmp_path / "m" / _CHAR_VOCAB).exists()
    text = sample_text_lm(tmp_path / "m", "the", max_new_tokens=3, device="cpu")
    assert text.replace(" ", "").startswith("the")


def test_bad_paths_name_the_argument(corpus, tmp_path):
    with pytest.raises(FileNotFoundError, match="data: no such file"):
        train_text_lm(transformers.GPT2Config, tmp_path / "no.txt", tmp_path / "o")
    with pytest.raises(FileNotFoundError, match="tokenizer: expected 'char' or a folder"):
        train_text_lm(transformers.GPT2Config, corpus, tmp_path / "o", tokenizer="nope")
    with pytest.raises(FileNotFoundError, match="checkpoint: expected a folder written by `train`"):
        sample_text_lm(tmp_path, "x")
    with pytest.raises(ValueError, match=r"(?s)model: .*n_layer.*expected int"):  # config check
        train_text_lm(
            transformers.GPT2Config, corpus, tmp_path / "o", model={**GPT2, "n_layer": "one"},
            train=TextTrainConfig(steps=1, batch_size=1, seq_len=8), show_progress=False,
        )  # fmt: skip
