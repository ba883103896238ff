"""CROME's augmentation pipeline (paper Sec. 3-4): causal pairs, neutral (tie) pairs, filtering.

- Causal augmentations: for each original pair and each causal rubric C_j of its prompt,
  degrade the chosen answer along C_j, giving (A_chosen > A_tilde(C_j <- degraded)), and
  upgrade the rejected answer, giving (A_tilde(C_j <- upgraded) > A_rejected).
- Neutral augmentations, labelled tie: irrelevant-query neutrals (IQN), an answer pair
  re-attached to a different question for which neither answer is relevant, and
  causally-aligned neutrals, an answer paired with a restyled copy whose causal rubrics are
  unchanged.
- Filtering: keep only the augmented pairs that a baseline RM trained on the original data
  gets wrong or is unsure about (`filter_augmentations`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from crome import world
from crome.data import PairRow, check_rows
from crome.oracle import Oracle
from shared_core.cli import progress

Verifier = Callable[[str, str, str, str], bool]
"""``verify(kind, question, original, rewritten) -> accept``; kind is upgrade/degrade/neutral."""


@dataclass(frozen=True)
class AugmentConfig:
    """Which augmentations to generate. `max_rubrics` caps the rubrics used per prompt."""

    causal: bool = True
    iqn: bool = True
    causal_aligned: bool = True
    max_rubrics: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.max_rubrics, int) or isinstance(self.max_rubrics, bool):
            raise TypeError(f"max_rubrics: expected an int, got {self.max_rubrics!r}")
        if self.max_rubrics < 1:
            raise ValueError(
                f"max_rubrics: expected at least 1 rubric per prompt, got {self.max_rubrics} "
                "(0 would silently produce no causal or causally aligned augmentation)"
            )
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise TypeError(f"seed: expected an int, got {self.seed!r}")
        if not (self.causal or self.iqn or self.causal_aligned):
            raise ValueError(
                "causal, iqn, causal_aligned: all are False; expected at least one kind of "
                "augmentation"
            )


@dataclass
class AugmentStats:
    """Rewrites requested and accepted, per kind (upgrade, degrade, neutral)."""

    attempted: dict[str, int] = field(default_factory=dict)
    accepted: dict[str, int] = field(default_factory=dict)

    def record(self, kind: str, ok: bool) -> None:
        self.attempted[kind] = self.attempted.get(kind, 0) + 1
        self.accepted[kind] = self.accepted.get(kind, 0) + int(ok)

    @property
    def acceptance_rate(self) -> float:
        n = sum(self.attempted.values())
        return sum(self.accepted.values()) / n if n else float("nan")

    def rates(self) -> dict[str, float]:
        return {k: self.accepted[k] / n for k, n in self.attempted.items() if n}


def basic_verifier(kind: str, question: str, original: str, rewritten: str) -> bool:
    """Accept a rewrite that is non-empty, differs from the original and is not runaway long."""
    text = rewritten.strip()
    return bool(text) and text != original.strip() and len(text) <= 4 * len(original) + 200


def world_verifier(kind: str, question: str, original: str, rewritten: str) -> bool:
    """Exact check of the CAUSAL content in the synthetic world, blind to decoration.

    An upgrade must make the answer correct and a degrade make it wrong, with every character
    other than the final value unchanged; a neutral rewrite must keep the final value (so its
    correctness). Only `world.final_value` reads the text: the verifier knows nothing about
    the spurious attributes (issue 49; the paper's augmentations are made "without any
    knowledge of spurious factors").
    """
    if not basic_verifier(kind, question, original, rewritten):
        return False
    try:
        v_before = world.final_value(original)
        v_after = world.final_value(rewritten)
        ok_before = world.is_correct(question, original)
        ok_after = world.is_correct(question, rewritten)
    except ValueError:
        return False
    same_rest = world.with_value(rewritten, v_before) == original
    if kind == "upgrade":
        return ok_after and not ok_before and same_rest
    if kind == "degrade":
        return ok_before and not ok_after and same_rest
    return v_after == v_before


def _rewrite(
    oracle: Oracle,
    kind: str,
    q: str,
    answer: str,
    rubric: str,
    verify: Verifier,
    stats: AugmentStats,
) -> str | None:
    try:
        new = oracle.rewrite(q, answer, rubric, kind)
    except ValueError:
        new = ""
    ok = verify(kind, q, answer, new)
    stats.record(kind, ok)
    return new if ok else None


def causal_augmentations(
    rows: Sequence[PairRow],
    oracle: Oracle,
    rubrics: dict[str, list[str]],
    verify: Verifier = basic_verifier,
    stats: AugmentStats | None = None,
    show_progress: bool = False,
) -> list[PairRow]:
    """D_causal: per pair and rubric, (chosen > degraded chosen) and (upgraded rejected > rejected)."""
    rows = check_rows(rows)
    _check_rubrics(rows, rubrics)
    stats = stats if stats is not None else AugmentStats()
    out = []
    for i, r in enumerate(progress(rows, desc="causal augment", enabled=show_progress)):
        for rubric in rubrics[r.prompt]:
            meta = {"source": i, "rubric": rubric}
            worse = _rewrite(oracle, "degrade", r.prompt, r.chosen, rubric, verify, stats)
            if worse is not None:
                out.append(
                    PairRow(r.prompt, r.chosen, worse, "preference", "causal-degrade", meta=meta)
                )
            better = _rewrite(oracle, "upgrade", r.prompt, r.rejected, rubric, verify, stats)
            if better is not None:
                out.append(
                    PairRow(r.prompt, better, r.rejected, "preference", "causal-upgrade", meta=meta)
                )
    return out


def irrelevant_query_neutrals(
    rows: Sequence[PairRow],
    prompts: Sequence[str],
    rng: random.Random,
    irrelevant: Callable[[str, PairRow], bool] | None = None,
    max_tries: int = 50,
) -> list[PairRow]:
    """D_neutral (IQN): each pair's two answers re-attached to another prompt, labelled tie.

    The new prompt is never the pair's own; `irrelevant(prompt, row)` may veto prompts for
    which an answer would still be relevant (in the world: its value is the new sum). A pair
    with no acceptable prompt after `max_tries` draws is skipped.
    """
    rows = check_rows(rows)
    if isinstance(prompts, str) or not all(isinstance(p, str) for p in prompts):
        raise TypeError("prompts: expected a sequence of prompt strings")
    if not isinstance(max_tries, int) or max_tries < 1:
        raise ValueError(f"max_tries: expected a positive int, got {max_tries!r}")
    pool = sorted(set(prompts))
    out = []
    for i, r in enumerate(rows):
        if not any(p != r.prompt for p in pool):
            raise ValueError("prompts: need at least one prompt different from the pair's own")
        for _ in range(max_tries):
            q = rng.choice(pool)
            if q != r.prompt and (irrelevant is None or irrelevant(q, r)):
                out.append(
                    PairRow(
                        q,
                        r.chosen,
                        r.rejected,
                        "tie",
                        "neutral-iqn",
                        meta={"source": i, "from": r.prompt},
                    )
                )
                break
    return out


def causally_aligned_neutrals(
    rows: Sequence[PairRow],
    oracle: Oracle,
    rubrics: dict[str, list[str]],
    verify: Verifier = basic_verifier,
    stats: AugmentStats | None = None,
) -> list[PairRow]:
    """D_neutral (causally aligned): (chosen, restyled chosen with the same rubric values), tie."""
    rows = check_rows(rows)
    _check_rubrics(rows, rubrics)
    stats = stats if stats is not None else AugmentStats()
    out = []
    for i, r in enumerate(rows):
        try:
            new = oracle.neutral_rewrite(r.prompt, r.chosen, rubrics[r.prompt])
        except ValueError:
            new = ""
        ok = verify("neutral", r.prompt, r.chosen, new)
        stats.record("neutral", ok)
        if ok:
            out.append(
                PairRow(
                    r.prompt, r.chosen, new, "tie", "neutral-causal-aligned", meta={"source": i}
                )
            )
    return out


def augment(
    rows: Sequence[PairRow],
    oracle: Oracle,
    config: AugmentConfig = AugmentConfig(),
    verify: Verifier = basic_verifier,
    irrelevant: Callable[[str, PairRow], bool] | None = None,
    show_progress: bool = False,
) -> tuple[list[PairRow], AugmentStats]:
    """D_aug = D_causal u D_neutral for the original preference `rows` (before filtering)."""
    rows = check_rows(rows)
    ties = [i for i, r in enumerate(rows) if r.label != "preference"]
    if ties:
        raise ValueError(
            f"rows: augmentation starts from preference pairs; rows {ties[:5]} are tie rows"
        )
    if not isinstance(oracle, Oracle):
        raise TypeError(
            f"oracle: expected an Oracle (name, rubrics, rewrite, neutral_rewrite), "
            f"got {type(oracle).__name__}"
        )
    if not isinstance(config, AugmentConfig):
        raise TypeError(f"config: expected an AugmentConfig, got {type(config).__name__}")
    if not callable(verify):
        raise TypeError(f"verify: expected a callable verifier, got {type(verify).__name__}")
    if irrelevant is not None and not callable(irrelevant):
        raise TypeError(f"irrelevant: expected a callable or None, got {type(irrelevant).__name__}")
    stats = AugmentStats()
    rubrics = {
        q: oracle.rubrics(q)[: config.max_rubrics] for q in dict.fromkeys(r.prompt for r in rows)
    }
    out: list[PairRow] = []
    if config.causal:
        out += causal_augmentations(rows, oracle, rubrics, verify, stats, show_progress)
    if config.iqn:
        rng = random.Random(config.seed)
        out += irrelevant_query_neutrals(rows, [r.prompt for r in rows], rng, irrelevant)
    if config.causal_aligned:
        out += causally_aligned_neutrals(rows, oracle, rubrics, verify, stats)
    return out, stats


def filter_augmentations(
    rows: Sequence[PairRow],
    margins: Sequence[float] | np.ndarray,
    tau: float = 0.9,
    delta: float = 0.1,
) -> list[PairRow]:
    """Keep the pairs the baseline RM gets wrong or is unsure about.

    `margins` are the baseline's Delta = R(Q, chosen) - R(Q, rejected), one per row. A
    preference pair is kept when sigma(Delta) < tau; a tie pair when |sigma(Delta) - 1/2| > delta
    (the baseline is confidently NOT tied).
    """
    rows = check_rows(rows, allow_empty=True)
    try:
        m = np.asarray(margins, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"margins: expected a sequence of numbers, got {type(margins).__name__}"
        ) from None
    if m.shape != (len(rows),):
        raise ValueError(f"margins: expected shape ({len(rows)},) to match rows, got {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError("margins: contains NaN or infinite values")
    if not 0.5 <= tau <= 1.0:
        raise ValueError(f"tau: expected a probability in [0.5, 1], got {tau}")
    if not 0.0 <= delta < 0.5:
        raise ValueError(f"delta: expected a value in [0, 0.5), got {delta}")
    p = 1.0 / (1.0 + np.exp(-m))
    keep = []
    for r, pi in zip(rows, p, strict=True):
        if (r.label == "preference" and pi < tau) or (r.label == "tie" and abs(pi - 0.5) > delta):
            keep.append(r)
    return keep


def _check_rubrics(rows: Sequence[PairRow], rubrics: dict[str, list[str]]) -> None:
    missing = [r.prompt for r in rows if not rubrics.get(r.prompt)]
    if missing:
        raise ValueError(
            f"rubrics: no rubric for {len(missing)} prompt(s), e.g. {missing[0]!r}; expected "
            "a non-empty list for every prompt of rows"
        )


def world_irrelevant(prompt: str, row: PairRow) -> bool:
    """In the world, a prompt is irrelevant to a pair if neither answer's value is its sum."""
    a, b = world.parse_prompt(prompt)
    try:
        values = {world.final_value(row.chosen), world.final_value(row.rejected)}
    except ValueError:
        return True
    return (a + b) not in values
