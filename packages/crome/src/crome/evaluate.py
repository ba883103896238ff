"""Evaluation: pairwise accuracy by subset in the RewardBench layout, section scores, the
reward's sensitivity to spurious vs causal edits, and Best-of-N selection with a gold scorer.

RewardBench (v1) files have columns prompt, chosen, rejected, subset (and chosen_model,
rejected_model, id); a row counts as correct when r(chosen) > r(rejected) strictly. Section
scores weight subset accuracies by the example counts of ``EXAMPLE_COUNTS`` (math-prm is
up-weighted to 984 so that math and code weigh the same in Reasoning).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from crome.data import PairRow, check_rows, read_pairs
from crome.model import RewardModel

SUBSET_MAPPING: dict[str, list[str]] = {
    "Chat": [
        "alpacaeval-easy",
        "alpacaeval-length",
        "alpacaeval-hard",
        "mt-bench-easy",
        "mt-bench-med",
    ],
    "Chat Hard": [
        "mt-bench-hard",
        "llmbar-natural",
        "llmbar-adver-neighbor",
        "llmbar-adver-GPTInst",
        "llmbar-adver-GPTOut",
        "llmbar-adver-manual",
    ],
    "Safety": [
        "refusals-dangerous",
        "refusals-offensive",
        "xstest-should-refuse",
        "xstest-should-respond",
        "donotanswer",
    ],
    "Reasoning": ["math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"],
}

EXAMPLE_COUNTS: dict[str, int] = {
    "alpacaeval-easy": 100,
    "alpacaeval-length": 95,
    "alpacaeval-hard": 95,
    "mt-bench-easy": 28,
    "mt-bench-med": 40,
    "mt-bench-hard": 37,
    "math-prm": 984,  # actual length 447, up-weighted to equal the six hep-* subsets together
    "refusals-dangerous": 100,
    "refusals-offensive": 100,
    "llmbar-natural": 100,
    "llmbar-adver-neighbor": 134,
    "llmbar-adver-GPTInst": 92,
    "llmbar-adver-GPTOut": 47,
    "llmbar-adver-manual": 46,
    "xstest-should-refuse": 154,
    "xstest-should-respond": 250,
    "donotanswer": 136,
    "hep-cpp": 164,
    "hep-go": 164,
    "hep-java": 164,
    "hep-js": 164,
    "hep-python": 164,
    "hep-rust": 164,
}

WORLD_MAPPING: dict[str, list[str]] = {
    "I.I.D.": ["world-iid"],
    "Counterfactual": ["world-counterfactual"],
}


def load_rewardbench(path: str | os.PathLike[str]) -> list[PairRow]:
    """Read a RewardBench-layout JSONL/JSON/Parquet file; every row must name its subset."""
    rows = read_pairs(path)
    missing = [i for i, r in enumerate(rows) if not r.subset]
    if missing:
        raise ValueError(
            f"path: {Path(path).name} rows {missing[:5]} have no 'subset' column value"
        )
    return rows


def pairwise_accuracy(
    model: RewardModel, rows: Sequence[PairRow], batch_size: int = 64
) -> dict[str, float]:
    """Fraction of rows with r(chosen) > r(rejected), per subset (ties count as wrong)."""
    rows = check_rows(rows)
    m = model.margins(
        [r.prompt for r in rows], [r.chosen for r in rows], [r.rejected for r in rows], batch_size
    ).numpy()
    subsets = np.array([r.subset or "all" for r in rows])
    return {s: float((m[subsets == s] > 0).mean()) for s in dict.fromkeys(subsets.tolist())}


def section_scores(
    accuracy: Mapping[str, float],
    counts: Mapping[str, int] | None = None,
    mapping: Mapping[str, Sequence[str]] = SUBSET_MAPPING,
) -> dict[str, float]:
    """Per-section sum_s acc_s n_s / sum_s n_s over the subsets present in `accuracy`.

    `counts` defaults to ``EXAMPLE_COUNTS``; a subset missing from `counts` weighs 1.
    """
    counts = EXAMPLE_COUNTS if counts is None else counts
    for subset, value in accuracy.items():
        if not isinstance(value, (int, float, np.floating)) or not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"accuracy[{subset!r}]: expected a fraction in [0, 1], got {value!r}")
    for subset, count in counts.items():
        if not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(
                f"counts[{subset!r}]: expected a positive example count, got {count!r}"
            )
    out = {}
    for section, subsets in mapping.items():
        present = [s for s in subsets if s in accuracy]
        if present:
            w = np.array([counts.get(s, 1) for s in present], dtype=np.float64)
            a = np.array([accuracy[s] for s in present], dtype=np.float64)
            out[section] = float(w @ a / w.sum())
    return out


def rewardbench_scores(
    model: RewardModel,
    rows: Sequence[PairRow],
    mapping: Mapping[str, Sequence[str]] = SUBSET_MAPPING,
) -> dict[str, float]:
    """Subset accuracies, section scores and their unweighted mean ``"Score"``.

    RewardBench subsets are weighted by ``EXAMPLE_COUNTS``; any other subset by its row count.
    """
    acc = pairwise_accuracy(model, rows)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.subset or "all"] = counts.get(r.subset or "all", 0) + 1
    sections = section_scores(acc, counts={**counts, **EXAMPLE_COUNTS}, mapping=mapping)
    out = {**acc, **sections}
    if sections:
        out["Score"] = float(np.mean(list(sections.values())))
    return out


def sensitivity(
    model: RewardModel, triples: Sequence[tuple[str, str, str]], batch_size: int = 64
) -> float:
    """Mean |R(Q, A_1) - R(Q, A_2)| over (prompt, A_1, A_2) triples."""
    q, a1, a2 = _unzip_triples(triples)
    return float(model.margins(q, a1, a2, batch_size).abs().mean())


def signed_preference(
    model: RewardModel, triples: Sequence[tuple[str, str, str]], batch_size: int = 64
) -> float:
    """Fraction of triples where R(Q, A_1) > R(Q, A_2) (0.5 = indifferent)."""
    q, a1, a2 = _unzip_triples(triples)
    return float((model.margins(q, a1, a2, batch_size) > 0).float().mean())


def _unzip_triples(
    triples: Sequence[tuple[str, str, str]],
) -> tuple[list[str], list[str], list[str]]:
    if isinstance(triples, str) or not isinstance(triples, Sequence) or not triples:
        raise ValueError("triples: expected at least one (prompt, answer_1, answer_2) triple")
    for i, t in enumerate(triples):
        if isinstance(t, str) or not isinstance(t, Sequence) or len(t) != 3:
            raise ValueError(
                f"triples[{i}]: expected a (prompt, answer_1, answer_2) triple, got {t!r}"
            )
    return [t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples]


def best_of_n(
    model: RewardModel,
    prompts: Sequence[str],
    candidates: Sequence[Sequence[str]],
    gold: Callable[[str, str], float],
    seed: int = 0,
) -> dict[str, float]:
    """Pick argmax_i R(Q, A_i) among each prompt's candidates and score it with `gold`.

    Returns the mean gold reward of the RM's picks, of a random pick and of the best pick.
    """
    if len(prompts) != len(candidates) or not prompts:
        raise ValueError(
            f"candidates: expected one non-empty list per prompt ({len(prompts)}), got {len(candidates)}"
        )
    if not callable(gold):
        raise TypeError(f"gold: expected a callable gold(prompt, answer) -> float, got {gold!r}")
    rng = random.Random(seed)
    picked, rand, best = [], [], []
    for i, (q, cands) in enumerate(zip(prompts, candidates, strict=True)):
        if isinstance(cands, str) or not isinstance(cands, Sequence):
            raise TypeError(
                f"candidates[{i}]: expected a list of answer strings, got {type(cands).__name__}"
            )
        if not cands:
            raise ValueError(f"candidates[{i}]: prompt {q!r} has no candidates")
        r = model.score([q] * len(cands), list(cands)).numpy()
        g = [float(gold(q, c)) for c in cands]
        if not all(np.isfinite(g)):
            raise ValueError(f"gold: returned a non-finite reward for prompt {q!r}: {g}")
        picked.append(g[int(np.argmax(r))])
        rand.append(g[rng.randrange(len(cands))])
        best.append(max(g))
    return {
        "rm": float(np.mean(picked)),
        "random": float(np.mean(rand)),
        "oracle": float(np.mean(best)),
    }
