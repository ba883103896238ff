"""Word frequencies: reconstruct bag-of-words count vectors of Shakespeare documents.

The paper's WikiText-2 experiment, on the offline Shakespeare text: the vocabulary is the
`vocab_size` most frequent words of the training plays. The paper's metric (note, "Word
Frequency Analysis": top and bottom 2,241 of 19,962 words, overlap and Jaccard) is corpus
level: the head (top `head_fraction`) and tail (bottom `tail_fraction`) word sets of the
summed held-out counts vs those of the summed reconstructions, overlap ``|A & B| / |A|`` and
Jaccard (`metrics.frequency_rank_scores`). Also per document: the words of the head/tail
columns present vs those the reconstruction predicts (count >= 0.5), averaged. Train and test
documents come from different plays (`shared_core.data.group_split`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from paretovae.data import bag_of_words, shakespeare_documents
from paretovae.experiments.common import Budget, train_family
from paretovae.metrics import frequency_rank_scores, word_set_scores
from paretovae.model import VAEConfig
from shared_core.data import group_split


@dataclass
class WordsConfig:
    vocab_size: int = 1000  # the paper: 5k words of WikiText-2
    speeches_per_doc: int = 40  # one "scene"
    head_fraction: float = 2241 / 19962  # the paper's WikiText-2 head and tail sizes
    tail_fraction: float = 2241 / 19962
    vae: VAEConfig = field(default_factory=lambda: VAEConfig(n=1000, m=16, hidden=64, nu=5.0))
    budget: Budget = field(default_factory=Budget)


def run(cfg: WordsConfig, seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    docs, plays = shakespeare_documents(cfg.speeches_per_doc)
    train_idx, test_idx = group_split(plays, (0.8, 0.2), seed=0)
    train_counts, vocab = bag_of_words([docs[i] for i in train_idx], cfg.vocab_size)
    test_counts, _ = bag_of_words([docs[i] for i in test_idx], cfg.vocab_size, vocab=vocab)
    v = len(vocab)
    head = np.arange(round(cfg.head_fraction * v))
    tail = np.arange(v - round(cfg.tail_fraction * v), v)
    vae = dataclasses.replace(cfg.vae, n=v)
    out: dict[str, Any] = {
        "metrics": {},
        "num_train_docs": len(train_idx),
        "num_test_docs": len(test_idx),
        "vocab": v,
        "mean_words_per_doc": float(test_counts.sum(1).mean()),
    }
    for family in cfg.budget.families:
        rows = []
        for k in range(cfg.budget.seeds):
            model = train_family(family, vae, train_counts, cfg.budget, seed + k, device=device)
            recon = model.reconstruct(test_counts)
            scores = word_set_scores(test_counts, recon, head, tail)
            scores.update(frequency_rank_scores(test_counts, recon, len(head), len(tail)))
            rows.append(scores)
        out["metrics"][family] = rows
    return out
