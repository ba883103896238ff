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
