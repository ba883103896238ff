from __future__ import annotations

import pytest
import torch
from edt_former.llm import tiny_llm
from edt_former.model import (
    IGNORE,
    MOL,
    NEW_TOKENS,
    ConnectorConfig,
    EDTConnector,
    EDTFormer,
    answer_loss,
    freeze_llm,
    inject_queries,
    stage1_loss,
    unlock_new_token_embeddings,
)
from edt_former.patching import pad_ids
from edt_former.qformer import QFormerConfig, Stage1Heads, contrastive_loss

from shared_core.train import TrainConfig, fit

QF = QFormerConfig(hidden=16, layers=1, heads=2, ffn=32)


def _graph_batch(b: int = 3, n: int = 6, d: int = 8, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    sizes = [n, n - 2, 3][:b] + [n] * max(0, b - 3)
    brics = pad_ids([[i // 2 for i in range(s)] for s in sizes], n)
    ent = pad_ids([[min(i, 1) for i in range(s)] for s in sizes], n)
    return {
        "nodes": torch.randn(b, n, d, generator=g),
        "node_mask": brics >= 0,
        "brics_ids": brics,
        "entropy_ids": ent,
    }


def _prompt_batch(tok: object, n_static: int, b: int) -> dict[str, torch.Tensor]:
    text = "question : is it ? molecule : <mol_start>" + MOL * n_static + "<mol_end> answer : yes"
    ids = torch.tensor(tok(text, add_special_tokens=False)["input_ids"])  # type: ignore[operator]
    rows = ids.repeat(b, 1)
    attn = torch.ones_like(rows)
    attn[1, -2:] = 0  # a right-padded row
    rows[1, -2:] = 0
    labels = torch.full_like(rows, IGNORE)
    labels[:, -1] = rows[:, -1]
    labels[1, -1] = IGNORE
    labels[1, -3] = rows[1, -3]
    return {"input_ids": rows, "attention_mask": attn, "labels": labels}


@pytest.mark.parametrize("tied", [False, True])
def test_stage2_step_changes_only_new_rows_and_connector(tied: bool) -> None:
    llm, tok = tiny_llm()
    if tied:
        llm.config.tie_word_embeddings = True
        llm.tie_weights()
        llm.lm_head.weight = llm.get_input_embeddings().weight
    new_ids = freeze_llm(llm, tok)
    mol_id = tok.convert_tokens_to_ids(MOL)
    cc = ConnectorConfig(n_static=3, local_budget=4, qformer=QF)
    model = EDTFormer(EDTConnector(cc, 8), llm, mol_id, new_ids)
    before = {k: v.detach().clone() for k, v in llm.state_dict().items()}
    conn_before = {k: v.detach().clone() for k, v in model.connector.state_dict().items()}
    batch = {**_graph_batch(), **_prompt_batch(tok, 3, 3)}
    fit(
        model,
        answer_loss,
        lambda step: batch,
        TrainConfig(steps=3, lr=1e-2, weight_decay=0.1),
        show_progress=False,
        device="cpu",
    )
    emb_key = "model.embed_tokens.weight"
    old = torch.ones(len(tok), dtype=torch.bool)
    old[new_ids] = False
    for k, v in llm.state_dict().items():
        if k == emb_key or (tied and k == "lm_head.weight"):
            assert torch.equal(v[old], before[k][old]), k  # every old row bit-identical
            assert not torch.equal(v[~old], before[k][~old]), k  # the new rows moved
        else:
            assert torch.equal(v, before[k]), k  # every other LLM weight bit-identical
    assert any(not torch.equal(v, conn_before[k]) for k, v in model.connector.state_dict().items())
    assert model.trainable_parameters() == (
        sum(p.numel() for p in model.connector.parameters())
        + sum(p.numel() for p in model.llm_proj.parameters())
        + len(NEW_TOKENS) * llm.config.hidden_size
    )


def test_new_rows_start_at_the_mean_and_bad_ids_raise() -> None:
    llm, _tok = tiny_llm()
    w = llm.get_input_embeddings().weight
    mean = w[:-1].mean(0).detach().clone()
    unlock_new_token_embeddings(llm, [w.shape[0] - 1])
    assert torch.allclose(w[-1], mean)
    with pytest.raises(ValueError, match="new_ids: expected ids in"):
        unlock_new_token_embeddings(llm, [w.shape[0]])
    with pytest.raises(ValueError, match="at least one"):
        unlock_new_token_embeddings(llm, [])
    with pytest.raises(ValueError, match="init"):
        unlock_new_token_embeddings(llm, [0], init="random")


def test_lora_option_trains_only_adapters_and_new_rows() -> None:
    pytest.importorskip("peft")
    llm, tok = tiny_llm()
    freeze_llm(llm, tok, lora_r=8)
    names = [n for n, p in llm.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n or "embed_tokens" in n for n in names)
    assert any("embed_tokens" in n for n in names)


def test_injection_places_local_tokens_after_last_mol() -> None:
    llm, tok = tiny_llm()
    freeze_llm(llm, tok)
    mol_id = tok.convert_tokens_to_ids(MOL)
    batch = _prompt_batch(tok, 3, 3)
    ids = batch["input_ids"]
    emb = torch.randn(*ids.shape, 4)
    q = torch.randn(3, 3 + 4, 4)
    qm = torch.tensor([[True] * 3 + [True, True, False, False]] * 2 + [[True] * 3 + [False] * 4])
    out, attn, labels = inject_queries(
        emb, ids, batch["attention_mask"], batch["labels"], q, qm, mol_id, 3
    )
    for b in range(3):
        pos = (ids[b] == mol_id).nonzero().flatten().tolist()
        last = pos[-1]
        n_loc = int(qm[b, 3:].sum())
        for j, p in enumerate(pos):
            assert torch.equal(out[b, p], q[b, j])  # <mol> j holds static query j
            assert labels[b, p] == IGNORE
        assert torch.equal(out[b, last + 1 : last + 1 + n_loc], q[b, 3:][qm[b, 3:]])
        assert (labels[b, last + 1 : last + 1 + n_loc] == IGNORE).all()
        # the text after the slots is shifted by the local tokens, unchanged
        n_real = int(batch["attention_mask"][b].sum())
        assert torch.equal(out[b, last + 1 + n_loc : n_real + n_loc], emb[b, last + 1 : n_real])
        assert int(attn[b].sum()) == n_real + n_loc
        assert (labels[b] != IGNORE).sum() == 1
    with pytest.raises(ValueError, match="expected 2"):
        inject_queries(emb, ids, batch["attention_mask"], batch["labels"], q, qm, mol_id, 2)
    bad = batch["attention_mask"].clone()
    bad[0, 0] = 0
    with pytest.raises(ValueError, match="right-padded"):
        inject_queries(emb, ids, bad, batch["labels"], q, qm, mol_id, 3)


def test_connector_query_layout() -> None:
    batch = _graph_batch()
    for use_b, use_e, want in [
        (True, True, [5, 4, 4]),
        (True, False, [3, 2, 2]),
        (False, True, [2, 2, 2]),
    ]:
        cc = ConnectorConfig(
            n_static=2, local_budget=7, use_brics=use_b, use_entropy=use_e, qformer=QF
        )
        out, qm = EDTConnector(cc, 8)(batch)
        assert out.shape == (3, 2 + 7, 16)
        assert (qm.sum(1) - 2).tolist() == [min(7, w) for w in want]
        assert torch.isfinite(out).all()
    out, qm = EDTConnector(ConnectorConfig(n_static=5, local_budget=0, qformer=QF), 8)(batch)
    assert out.shape == (3, 5, 16) and qm.all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_static": 0}, "n_static"),
        ({"local_budget": -1}, "local_budget"),
        ({"local_budget": 4, "use_brics": False, "use_entropy": False}, "neither"),
    ],
)
def test_connector_config_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ConnectorConfig(**kwargs)


def test_connector_needs_ids_it_uses() -> None:
    batch = _graph_batch()
    del batch["entropy_ids"]
    conn = EDTConnector(ConnectorConfig(n_static=2, local_budget=4, qformer=QF), 8)
    with pytest.raises(ValueError, match="entropy_ids"):
        conn(batch)


def test_stage1_losses() -> None:
    qf = QFormerConfig(hidden=16, layers=1, heads=2, ffn=32, vocab_size=20, max_text=8, embed_dim=8)
    conn = EDTConnector(ConnectorConfig(n_static=2, local_budget=3, qformer=qf), 8)
    heads = Stage1Heads(qf)
    g = torch.Generator().manual_seed(0)
    batch = {
        **_graph_batch(),
        "text_ids": torch.randint(1, 20, (3, 6), generator=g),
        "text_mask": torch.ones(3, 6, dtype=torch.long),
    }
    batch["text_mask"][2, 4:] = 0
    loss, parts = stage1_loss(conn, heads, batch, torch.Generator().manual_seed(1))
    assert torch.isfinite(loss) and set(parts) == {"gtc", "gtm", "lm"}
    loss.backward()
    assert conn.static.grad is not None and conn.local_proj.weight.grad is not None
    # queries never see text: the causal pass gives the query-only outputs
    q, qm, nodes, nm = conn.queries(batch)
    a = conn.qformer(q, qm, nodes, nm, mode="query")
    b = conn.qformer(q, qm, nodes, nm, batch["text_ids"], batch["text_mask"], mode="causal")[:, :5]
    assert torch.allclose(a, b, atol=1e-5)


def test_contrastive_similarity_is_max_over_real_queries() -> None:
    g = torch.nn.functional.normalize(torch.randn(2, 3, 4), dim=-1)
    t = torch.nn.functional.normalize(torch.randn(2, 4), dim=-1)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    _, sim = contrastive_loss(g, mask, t, 0.1)
    for i in range(2):
        for j in range(2):
            want = max(float(g[i, k] @ t[j]) for k in range(3) if mask[i, k]) / 0.1
            assert sim[i, j].item() == pytest.approx(want, rel=1e-5)
