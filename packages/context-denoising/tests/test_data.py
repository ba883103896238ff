"""The generated retrieval task: layout, labels, kinds and determinism."""

from __future__ import annotations

import torch
from context_denoising.data import (
    DISTRACTOR,
    HAYSTACK,
    NEEDLE,
    QUERY,
    RARE,
    SEP,
    RetrievalTask,
    make_batch,
)


def test_layout_labels_and_kinds():
    task = RetrievalTask(min_len=128, max_len=512, n_distractors=3, n_rare_tokens=5)
    b = make_batch(task, 16, seed=3, index=7)
    for row in range(16):
        n = int(b["attention_mask"][row].sum())
        assert 128 <= n <= 512
        ids, kinds = b["input_ids"][row, :n], b["kinds"][row, :n]
        assert ids[n - 4] == QUERY
        needle = ids[kinds == NEEDLE].tolist()
        assert len(needle) == 3 and needle[0] == SEP
        assert needle[1] == ids[n - 3]  # the query asks for the needle's key
        ans = (b["labels"][row] != -100).nonzero().flatten().tolist()
        value = int(b["labels"][row, n - 2])
        assert ans == [n - 2] and needle[2] == task.pair_id(needle[1], value)
        assert value in task.value_ids.tolist()
        assert int((kinds == DISTRACTOR).sum()) == 9
        assert int((kinds == RARE).sum()) == 5
        assert set(ids[kinds == RARE].tolist()) <= set(task.rare_ids.tolist())
        assert set(ids[kinds == HAYSTACK].tolist()) <= set(task.filler_ids.tolist())
        dkeys = ids[kinds == DISTRACTOR].view(-1, 3)[:, 1].tolist()
        assert needle[1] not in dkeys  # distractor keys differ from the needle's
    ctx = b["context_mask"]
    assert torch.equal(ctx, (b["kinds"] >= NEEDLE) & (b["attention_mask"] == 1))
    assert int(b["input_ids"].max()) < task.vocab_size


def test_batches_are_a_pure_function_of_seed_and_index():
    task = RetrievalTask()
    a, b, c = make_batch(task, 4, 1, 2), make_batch(task, 4, 1, 2), make_batch(task, 4, 1, 3)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["input_ids"][:, :50], c["input_ids"][:, :50])
