import sys
import types

import pytest

from shared_core.lazy import lazy_exports


@pytest.fixture
def package(monkeypatch):
    """A throw-away package `lazypkg` with a submodule `lazypkg.sub` defining `VALUE`."""
    pkg = types.ModuleType("lazypkg")
    pkg.__path__ = []
    sub = types.ModuleType("lazypkg.sub")
    sub.VALUE = 42
    monkeypatch.setitem(sys.modules, "lazypkg", pkg)
    monkeypatch.setitem(sys.modules, "lazypkg.sub", sub)
    return pkg


@pytest.mark.parametrize("module", ["sub", "lazypkg.sub"])
def test_resolves_and_caches(package, module):
    get, listing = lazy_exports("lazypkg", {"VALUE": module})
    package.__getattr__ = get
    assert "VALUE" not in vars(package)
    assert package.VALUE == 42
    assert vars(package)["VALUE"] == 42  # cached: later lookups skip __getattr__
    assert "VALUE" in listing()


def test_unknown_name_is_attribute_error(package):
    get, _ = lazy_exports("lazypkg", {"VALUE": "sub"})
    with pytest.raises(AttributeError, match="'lazypkg' has no attribute 'missing'"):
        get("missing")


def test_version_from_distribution(package):
    from importlib.metadata import version

    get, listing = lazy_exports("lazypkg", {}, distribution="shared-core")
    assert get("__version__") == version("shared-core")
    assert "__version__" in listing()
    with pytest.raises(AttributeError):
        lazy_exports("lazypkg", {})[0]("__version__")


def test_bad_package_name():
    with pytest.raises(ValueError, match="package: expected a module name"):
        lazy_exports("", {})


def test_an_export_named_like_its_submodule_is_never_shadowed(tmp_path, monkeypatch):
    """crome's case: `augment` (a function) lives in `crome/augment.py` beside `AugmentConfig`,
    and another submodule imports it. Whatever is imported first, `augment` is the function."""
    root = tmp_path / "shadowpkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        "from shared_core.lazy import lazy_exports\n"
        "__getattr__, __dir__ = lazy_exports(__name__, "
        "{'augment': 'augment', 'AugmentConfig': 'augment', 'train': 'trainer'})\n"
    )
    (root / "augment.py").write_text(
        "class AugmentConfig:\n    pass\n\ndef augment():\n    return 1\n"
    )
    (root / "trainer.py").write_text(
        "from shadowpkg.augment import augment\n\ndef train():\n    return augment()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    orders = [
        ["AugmentConfig", "augment"],  # a sibling first: the issue's `from crome import ...`
        ["train", "augment"],  # another submodule imports shadowpkg.augment first
        ["augment", "AugmentConfig", "train"],
    ]
    for order in orders:
        for name in [m for m in sys.modules if m == "shadowpkg" or m.startswith("shadowpkg.")]:
            monkeypatch.delitem(sys.modules, name)
        import importlib

        pkg = importlib.import_module("shadowpkg")
        for name in order:
            getattr(pkg, name)
        assert callable(pkg.augment) and not isinstance(pkg.augment, types.ModuleType), order
        assert pkg.augment() == 1 and pkg.train() == 1
        assert isinstance(pkg.AugmentConfig, type)
        scope: dict = {}
        exec("from shadowpkg import AugmentConfig, augment", scope)
        assert scope["augment"] is sys.modules["shadowpkg.augment"].augment, order
