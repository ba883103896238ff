"""Lazy top-level exports for a package's ``__init__`` (PEP 562).

A package lists where each public name lives and gets the module ``__getattr__`` and
``__dir__`` from `lazy_exports`, so ``import <package>`` and the console script's ``--help`` do
not import torch until a name is used::

    __getattr__, __dir__ = lazy_exports(__name__, {"MyModel": "model", "fit_it": "train"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, where: Mapping[str, str], *, distribution: str | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` pair of `package` for the names in `where`.

    Args:
        package: the package's import name (pass ``__name__``).
        where: public name -> the module that defines it, relative to `package` (``"model"``)
            or absolute (``"package.model"``).
        distribution: when given, ``package.__version__`` reads this distribution's installed
            version.

    The first access to a name imports its module and caches the value in the package's
    namespace, so later accesses are plain attribute lookups. Importing a submodule makes
    Python bind the submodule itself as an attribute of the package, which would shadow an
    export of the same name (a function ``augment`` defined in ``pkg/augment.py``); so after
    every import, each export whose module is loaded is (re)bound to its value. That cannot
    cover ``from pkg.augment import X; from pkg import augment`` (no ``__getattr__`` runs), so
    no export may share a submodule's name: `shared_core.testing.shadowed_exports` checks it.
    """
    if not isinstance(package, str) or not package:
        raise ValueError(f"package: expected a module name, got {package!r}")
    prefix = package + "."
    modules = {
        name: module if module.startswith(prefix) else prefix + module
        for name, module in where.items()
    }

    def __getattr__(name: str) -> Any:
        if name == "__version__" and distribution is not None:
            from importlib.metadata import version

            return version(distribution)
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace = vars(sys.modules[package])
        for other, where_other in modules.items():
            loaded = sys.modules.get(where_other)
            if loaded is not None and hasattr(loaded, other):
                namespace[other] = getattr(loaded, other)
        namespace[name] = value
        return value

    extra = () if distribution is None else ("__version__",)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *modules, *extra})

    return __getattr__, __dir__
