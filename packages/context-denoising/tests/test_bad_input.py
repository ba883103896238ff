"""Every public entry point refuses bad input with an error naming the argument."""

from __future__ import annotations

import math

import pytest
import torch
from context_denoising import (
    CDTConfig,
    RetrievalTask,
    cdt_loss,
    cdt_step,
    make_batch,
    noise_mask,
    noise_score,
    perturbation,
)
from context_denoising.attribution import integrated_gradients
from context_denoising.model import tiny_llama

VOCAB = 30


@pytest.fixture(scope="module")
def model():
    return tiny_llama(VOCAB, hidden_size=16, num_heads=2, seed=0)


def good() -> dict[str, torch.Tensor]:
    ids = torch.randint(6, VOCAB, (2, 10), generator=torch.Generator().manual_seed(0))
    labels = torch.full_like(ids, -100)
    labels[:, -1] = ids[:, -1]
    return {"input_ids": ids, "labels": labels, "attention_mask": torch.ones_like(ids)}


def with_(**changes):
    b = good()
    b.update(changes)
    return b


CASES = [
    (
        "no answer tokens",
        lambda b: with_(labels=torch.full_like(b["labels"], -100)),
        ValueError,
        "no answer token",
    ),
    (
        "answer only at position 0",
        lambda b: with_(labels=torch.cat([b["input_ids"][:, :1], torch.full((2, 9), -100)], 1)),
        ValueError,
        "no answer token",
    ),
    ("labels shape", lambda b: with_(labels=b["labels"][:, :-1]), ValueError, "labels"),
    (
        "attention_mask shape",
        lambda b: with_(attention_mask=torch.ones(2, 9, dtype=torch.long)),
        ValueError,
        "attention_mask",
    ),
    (
        "attention_mask values",
        lambda b: with_(attention_mask=torch.full((2, 10), 2)),
        ValueError,
        "attention_mask",
    ),
    (
        "float attention_mask",
        lambda b: with_(attention_mask=torch.ones(2, 10)),
        ValueError,
        "attention_mask",
    ),
    (
        "answer under padding",
        lambda b: with_(
            attention_mask=torch.cat(
                [torch.ones(2, 9, dtype=torch.long), torch.zeros(2, 1, dtype=torch.long)], 1
            )
        ),
        ValueError,
        "attention_mask is 0",
    ),
    (
        "context_mask shape",
        lambda b: with_(context_mask=torch.ones(2, 11, dtype=torch.bool)),
        ValueError,
        "context_mask",
    ),
    (
        "context_mask dtype",
        lambda b: with_(context_mask=torch.ones(2, 10, dtype=torch.long)),
        TypeError,
        "context_mask",
    ),
    (
        "empty context",
        lambda b: with_(context_mask=torch.zeros(2, 10, dtype=torch.bool)),
        ValueError,
        "no context token",
    ),
    (
        "ids out of range",
        lambda b: with_(input_ids=b["input_ids"] + VOCAB),
        ValueError,
        "input_ids",
    ),
    ("negative ids", lambda b: with_(input_ids=b["input_ids"] - 100), ValueError, "input_ids"),
    ("float ids", lambda b: with_(input_ids=b["input_ids"].float()), TypeError, "input_ids"),
    ("1-D ids", lambda b: with_(input_ids=b["input_ids"][0]), ValueError, "input_ids"),
    ("empty batch", lambda b: with_(input_ids=b["input_ids"][:0]), ValueError, "input_ids"),
    (
        "labels out of range",
        lambda b: with_(labels=b["labels"].clamp(min=0) + VOCAB),
        ValueError,
        "labels",
    ),
    ("missing labels", lambda b: {"input_ids": b["input_ids"]}, ValueError, "labels"),
    ("numpy ids", lambda b: with_(input_ids=b["input_ids"].numpy()), TypeError, "input_ids"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_batches(model, case):
    _, make, kind, words = case
    with pytest.raises(kind, match=words):
        noise_score(model, make(good()))
    with pytest.raises(kind, match=words):  # the context rule needs a context in every row
        cdt_loss(model, make(good()), CDTConfig(eps=0.1, region="context"))
    if case[0] != "empty context":  # the paper's whole-row rule does not
        with pytest.raises(kind, match=words):
            cdt_loss(model, make(good()), CDTConfig(eps=0.1))


def test_not_a_mapping(model):
    with pytest.raises(TypeError, match="batch"):
        noise_score(model, good()["input_ids"])


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"eps": -0.1}, "eps"),
        ({"eps": math.nan}, "eps"),
        ({"eps": math.inf}, "eps"),
        ({"beta": -1.0}, "beta"),
        ({"beta": "1"}, "beta"),
        ({"variant": "same"}, "variant"),
        ({"signs": "megatron"}, "signs"),
        ({"region": "answer"}, "region"),
    ],
)
def test_bad_config(kwargs, words):
    with pytest.raises(ValueError, match=words):
        CDTConfig(**kwargs)


def test_missing_or_bad_lr(model):
    with pytest.raises(ValueError, match="lr"):
        cdt_loss(model, good(), CDTConfig())
    with pytest.raises(ValueError, match="lr"):
        cdt_loss(model, good(), CDTConfig(), lr=-1.0)
    with pytest.raises(ValueError, match="lr"):
        perturbation(torch.ones(1, 3, 2), torch.ones(1, 3, dtype=torch.bool), CDTConfig())


def test_bad_norm_and_mask_arguments(model):
    with pytest.raises(ValueError, match="norm"):
        noise_score(model, good(), norm="l3")
    with pytest.raises(ValueError, match="context_mask"):
        noise_mask(torch.ones(2, 3), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="context_mask"):
        noise_mask(torch.ones(2, 3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="scores"):
        noise_mask(torch.ones(3), torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="scores"):
        noise_mask(torch.full((1, 3), math.nan), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="g"):
        perturbation(torch.ones(1, 4, 2), torch.ones(1, 3, dtype=torch.bool), CDTConfig(eps=1.0))
    with pytest.raises(TypeError, match="config"):
        perturbation(torch.ones(1, 3, 2), torch.ones(1, 3, dtype=torch.bool), {"eps": 1.0})


def test_bad_step_arguments(model):
    with pytest.raises(TypeError, match="optimizer"):
        cdt_step(model, good(), "adamw")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="grad_clip"):
        cdt_step(model, good(), opt, grad_clip=-1.0)


def test_bad_integrated_gradients_arguments(model):
    with pytest.raises(ValueError, match="n_steps"):
        integrated_gradients(model, good(), n_steps=0)
    with pytest.raises(ValueError, match="baseline"):
        integrated_gradients(model, good(), baseline="noise")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"n_keys": 0}, "n_keys"),
        ({"n_distractors": 40}, "n_distractors"),
        ({"n_distractors": -1}, "n_distractors"),
        ({"min_len": 10}, "min_len"),
        ({"min_len": 200, "max_len": 150}, "max_len"),
        ({"n_values": 1.5}, "n_values"),
    ],
)
def test_bad_task(kwargs, words):
    with pytest.raises(ValueError, match=words):
        RetrievalTask(**kwargs)
    with pytest.raises(ValueError, match="batch_size"):
        make_batch(RetrievalTask(), 0, seed=0)


def test_bad_model_arguments():
    with pytest.raises(ValueError, match="num_heads"):
        tiny_llama(10, hidden_size=30, num_heads=4)
    with pytest.raises(ValueError, match="vocab_size"):
        tiny_llama(0)


def test_attributions_without_captum_name_the_extra(model, monkeypatch):
    import importlib.util

    from context_denoising.attribution import saliency

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name.split(".")[0] == "captum" else real(name, *a, **k),
    )
    with pytest.raises(FileNotFoundError, match=r"'captum' extra of context-denoising") as e:
        saliency(model, good())
    assert "pip install 'context-denoising[captum]'" in str(e.value)
