"""A generic, content-preserving restyle of any answer text: CROME's neutral rewrite made
"without any knowledge of spurious factors" (paper Sec. 3, causally aligned neutrals).

The rewriter sees only the answer's text and a predicate `keep(sentence)` naming the
sentences that carry the causal content (what the oracle knows from the causal rubrics).
It never sees which attributes of the text are spurious: this module imports nothing from
the world, and its operations are the usual surface edits an LLM makes when asked to
"rewrite preserving the substance", defined for any English text:

- ``reorder``: permute the sentences;
- ``condense``: drop one sentence that does not carry causal content;
- ``elaborate``: add a content-free discourse sentence from `DISCOURSE` (a general list, not
  the world's phrases) at the start or the end;
- ``relayout``: re-join the sentences as prose (spaces), one per line, or a ``*``/``-`` list
  (replacing any list markers the text had; without this operation the text keeps its own
  markers and line breaks);
- ``emphasise``: wrap one sentence in Markdown bold.

A causal-content sentence is never dropped nor edited inside (only moved, re-laid out or
emphasised), so the causal attribute is preserved by construction; the verifier still checks
it (`crome.augmentation.world_verifier`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

OPERATIONS = ("reorder", "condense", "elaborate", "relayout", "emphasise")
DISCOURSE = (
    "Sure.",
    "Certainly.",
    "Happy to help.",
    "Thanks for asking.",
    "Here is my reply.",
    "Let us see.",
    "In short:",
    "To summarise:",
    "Hope this helps.",
    "That is all.",
    "Good luck!",
    "Feel free to ask more.",
)
LAYOUTS = ("prose", "lines", "star-list", "dash-list")
_SENTENCE_RE = re.compile(r"(?<=[.!?])[ \t]+|\n+")
_MARKER_RE = re.compile(r"^(?:[-*\u2022]\s+)?")


def sentences(text: str) -> list[str]:
    """`text` split into sentences (at ``.!?`` + space and at line breaks), each with its own
    list marker (``- ``, ``* ``) if it had one."""
    return [s.strip() for s in _SENTENCE_RE.split(text.strip()) if s.strip()]


def _body(sentence: str) -> tuple[str, str]:
    """(list marker or "", the sentence without it)."""
    m = _MARKER_RE.match(sentence)
    marker = m.group(0) if m else ""
    return marker, sentence[len(marker) :]


def _layout(parts: list[str], layout: str) -> str:
    """`parts` (sentences, markers stripped) joined in one of `LAYOUTS`."""
    if layout == "prose":
        return " ".join(parts)
    if layout == "lines":
        return "\n".join(parts)
    mark = "*" if layout == "star-list" else "-"
    return "\n".join(f"{mark} {p}" for p in parts)


def generic_rewrite(
    text: str,
    rng: random.Random,
    keep: Callable[[str], bool] = lambda s: False,
    n_ops: tuple[int, int] = (1, 3),
    max_tries: int = 20,
) -> str:
    """`text` restyled by `n_ops` (low..high, drawn by `rng`) random `OPERATIONS`.

    `keep(sentence)` marks the sentences that carry causal content: never dropped or changed
    inside. Returns a text different from `text` (retrying up to `max_tries` draws; the last
    draw is returned if all equal `text`, which only happens for a text without sentences).
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text: expected a non-empty answer string, got {text!r}")
    low, high = n_ops
    if not 1 <= low <= high:
        raise ValueError(f"n_ops: expected (low, high) with 1 <= low <= high, got {n_ops!r}")
    out = text
    for _ in range(max_tries):
        parts = sentences(text)
        layout: str | None = None  # None: keep the text's own markers and line breaks
        bold: int | None = None
        for op in rng.sample(OPERATIONS, rng.randint(low, min(high, len(OPERATIONS)))):
            if op == "reorder":
                rng.shuffle(parts)
            elif op == "condense":
                free = [i for i, p in enumerate(parts) if not keep(p)]
                if free and len(parts) > 1:
                    del parts[rng.choice(free)]
            elif op == "elaborate":
                s = rng.choice(DISCOURSE)
                parts = [s, *parts] if rng.random() < 0.5 else [*parts, s]
            elif op == "relayout":
                layout = rng.choice(LAYOUTS)
            else:  # emphasise
                bold = rng.randrange(len(parts)) if parts else None
        if bold is not None and bold < len(parts):
            marker, body = _body(parts[bold])
            parts[bold] = f"{marker}**{body}**"
        if layout is None:
            out = ("\n" if "\n" in text.strip() else " ").join(parts)
        else:
            out = _layout([_body(p)[1] for p in parts], layout)
        if out.strip() != text.strip():
            return out
    return out
