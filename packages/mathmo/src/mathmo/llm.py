"""LLM operators over any OpenAI-compatible chat-completions endpoint (stdlib HTTP only).

The roles of `mathmo.operators.Operators` become prompts. The model chooses within the task's
frameworks: frameworks by name, candidates as settings of a framework (numeric keys anywhere
between the grid's extremes, other keys snapped to an allowed value), predictions as objective
vectors in ``[0, 1]`` (sampled at temperature 0.7, so the search's ``q`` calls differ), repairs
as corrected settings given the error, and pair judgements as the probability that model A is
preferred. Whatever cannot be parsed falls back to
`ProgrammaticOperators` and is counted in ``fallbacks`` (an LLM that answers nonsense degrades to
the programmatic search, it never stops it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from mathmo.operators import Evaluation, ProgrammaticOperators
from mathmo.tasks.base import Candidate, Framework, ModelCard, Task
from shared_core.chat import ChatClient, ChatError

T = TypeVar("T")

_SYSTEM = (
    "You are an expert in mathematical modelling assisting a search over models. "
    "Answer with JSON only, no prose."
)


def chat(
    base_url: str, model: str, prompt: str, api_key: str | None = None, timeout: float = 60.0
) -> str:
    """One chat-completions call (`shared_core.chat.ChatClient`, temperature 0.7, no retry);
    returns the first choice's message text."""
    client = ChatClient(base_url, model, api_key=api_key, timeout=timeout, max_retries=0)
    return _complete(client, prompt)


def _complete(client: ChatClient, prompt: str) -> str:
    messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}]
    return client.complete(messages, temperature=0.7)


def _json(text: str) -> Any:
    """The first JSON value in ``text`` (models often wrap it in prose or code fences)."""
    match = re.search(r"[\[{].*[\]}]", text, re.S)
    if match is None:
        raise ValueError("no JSON in the answer")
    return json.loads(match.group(0))


def _setting(fw: Framework, key: str, value: Any) -> Any:
    """An answered value made valid: numeric keys clipped into the grid's range (integers
    rounded), categorical ones must be an allowed value."""
    values = fw.grid[key]
    if value in values:
        return value
    if fw.is_numeric(key) and isinstance(value, int | float) and not isinstance(value, bool):
        return fw.value_at(key, fw.position(key, min(max(value, values[0]), values[-1])))
    raise ValueError(f"{value!r} is not one of {values}")


class OpenAIOperators:
    """`Operators` backed by an OpenAI-compatible endpoint (``base_url`` ends in ``/v1``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        fallback: ProgrammaticOperators | None = None,
    ) -> None:
        # ChatClient checks the arguments (errors name base_url, model, timeout)
        self.client = ChatClient(base_url, model, api_key=api_key, timeout=timeout, max_retries=0)
        self.fallback = fallback or ProgrammaticOperators()
        self.fallbacks = 0
        self.calls = 0

    def _ask(self, prompt: str) -> Any:
        self.calls += 1
        return _json(_complete(self.client, prompt))

    def _answer(self, prompt: str, read: Callable[[Any], T], fallback: Callable[[], T]) -> T:
        """``read`` of the model's JSON answer to `prompt`; when the call fails or `read`
        refuses the answer (ValueError, TypeError, KeyError), ``fallback()``, counted."""
        try:
            return read(self._ask(prompt))
        except (ValueError, TypeError, KeyError, ChatError):
            self.fallbacks += 1
            return fallback()

    def propose_frameworks(self, task: Task, n: int, rng: np.random.Generator) -> list[str]:
        names = [f.name for f in task.frameworks]
        library = "\n".join(f"- {f.name}: {f.description}" for f in task.frameworks)
        prompt = (
            f"Problem: {task.describe()}\nCandidate modelling frameworks:\n{library}\n"
            f"Return a JSON list of the {n} most promising framework names, best first."
        )

        def read(answer: Any) -> list[str]:
            known = [a for a in answer if a in names]
            if not known:
                raise ValueError("no known framework")
            return list(dict.fromkeys(known))[:n]

        return self._answer(prompt, read, lambda: self.fallback.propose_frameworks(task, n, rng))

    def propose_candidates(
        self,
        task: Task,
        framework: str,
        history: list[Evaluation],
        l: int,
        rng: np.random.Generator,
    ) -> list[Candidate]:
        fw = task.framework(framework)
        tried = [
            {"settings": dict(e.candidate.params), "objectives": np.round(e.y, 3).tolist()}
            for e in history[-20:]
        ]
        prompt = (
            f"Problem: {task.describe()}\nFramework: {fw.name} ({fw.description}).\n"
            f"Settings (numbers may lie anywhere between a key's listed extremes; other keys take "
            f"one listed value): {json.dumps(fw.grid)}\n"
            f"Tried so far (objectives {list(task.objectives)}, normalised, higher is better): {json.dumps(tried)}\n"
            f"Return a JSON list of {l} new settings objects likely to improve the Pareto front."
        )
        out: list[Candidate] = []
        try:
            for item in self._ask(prompt)[:l]:
                out.append(
                    Candidate.of(framework, **{k: _setting(fw, k, item[k]) for k in fw.grid})
                )
        except (ValueError, TypeError, KeyError, ChatError):
            self.fallbacks += 1
        if len(out) < l:
            out += self.fallback.propose_candidates(task, framework, history, l - len(out), rng)
        return out

    def predict_objectives(
        self,
        task: Task,
        candidates: list[Candidate],
        history: list[Evaluation],
        rng: np.random.Generator,
    ) -> np.ndarray:
        k = len(task.objectives)
        seen = [
            {"model": e.candidate.label(), "objectives": np.round(e.y, 3).tolist()}
            for e in history[-30:]
        ]
        prompt = (
            f"Problem: {task.describe()}\nEvaluated models (objectives {list(task.objectives)} in [0, 1], higher "
            f"is better): {json.dumps(seen)}\nPredict the objectives of: "
            f"{json.dumps([c.label() for c in candidates])}\nReturn a JSON list of {len(candidates)} lists of {k} numbers."
        )

        def read(answer: Any) -> np.ndarray:
            pred = np.asarray(answer, dtype=np.float64)
            if pred.shape != (len(candidates), k) or not np.all(np.isfinite(pred)):
                raise ValueError(f"prediction of shape {pred.shape}")
            return np.clip(pred, 0.0, 1.0)

        return self._answer(
            prompt, read, lambda: self.fallback.predict_objectives(task, candidates, history, rng)
        )

    def repair_candidate(
        self,
        task: Task,
        candidate: Candidate,
        error: str,
        history: list[Evaluation],
        rng: np.random.Generator,
    ) -> Candidate:
        fw = task.framework(candidate.framework)
        prompt = (
            f"Problem: {task.describe()}\nFramework: {fw.name} ({fw.description}).\n"
            f"Settings: {json.dumps(fw.grid)}\nThe model {json.dumps(dict(candidate.params))} "
            f"failed with: {error[-500:]}\nReturn one JSON settings object that fixes it."
        )
        return self._answer(
            prompt,
            lambda item: Candidate.of(fw.name, **{k: _setting(fw, k, item[k]) for k in fw.grid}),
            lambda: self.fallback.repair_candidate(task, candidate, error, history, rng),
        )

    def judge_pair(self, a: ModelCard, b: ModelCard) -> float:
        prompt = (
            "Which model is more interpretable to a domain scientist?\n"
            f"A: {a.description} ({a.n_params} parameters, {'mechanistic' if a.mechanistic else 'phenomenological'})\n"
            f"B: {b.description} ({b.n_params} parameters, {'mechanistic' if b.mechanistic else 'phenomenological'})\n"
            'Return {"p_a": <probability that A is more interpretable>}.'
        )

        def read(answer: Any) -> float:
            p = float(answer["p_a"])
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"probability {p}")
            return p

        return self._answer(prompt, read, lambda: self.fallback.judge_pair(a, b))
