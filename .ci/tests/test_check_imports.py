"""The import-cycle checker: planted cycles are found with their path, the repository has none.

python -m pytest .ci/tests -p no:cacheprovider
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "check_imports", Path(__file__).resolve().parent.parent / "check_imports.py"
)
assert _SPEC is not None and _SPEC.loader is not None
ci = importlib.util.module_from_spec(_SPEC)
sys.modules["check_imports"] = ci  # dataclasses look their module up
_SPEC.loader.exec_module(ci)


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "src"


def test_self_test_passes():
    ci.self_test()


def test_a_function_level_cycle_is_reported_with_its_path(tmp_path):
    """toprovar's case: a check module reaching up into a module that imports it."""
    src = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/_checks.py": "def f():\n    from pkg.pruning import C\n    return C\n",
            "pkg/pruning.py": "from pkg import _checks\n\nclass C:\n    pass\n",
        },
    )
    (problem,) = ci.check_src(src)
    assert "import cycle pkg._checks -> pkg.pruning -> pkg._checks" in problem
    assert "pkg/_checks.py:2 imports pkg.pruning" in problem
    assert "pkg/pruning.py:1 imports pkg._checks" in problem
    assert ci.main([str(src)]) == 1


def test_type_checking_imports_and_other_packages_are_not_edges(tmp_path):
    src = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.b import B\n",
            "pkg/b.py": "import numpy\nfrom pkg import a\nB = 1\n",
        },
    )
    assert ci.check_src(src) == []


def test_the_repository_has_no_import_cycle():
    assert ci.main([]) == 0
