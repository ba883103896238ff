"""The verbs on a user's files (train on SDF ensembles -> generate SDF -> evaluate), the
checkpoint round trip and bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from msgen.cli import main
from msgen.pretrained import MSGENModel

DATA = Path(__file__).parent / "data"
TINY = ["--set", "stage1_steps=4", "--set", "stage2_steps=4", "--set", "batch_size=4"]
TINY += ["--set", "epsnet.hidden=8", "--set", "epsnet.num_convs=1"]
TINY += ["--set", "epsnet.num_convs_local=1", "--set", "ld_steps=5"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("msgen")
    out = tmp / "ckpt"
    args = ["train", "--data", str(DATA / "ensembles.sdf"), "--out", str(out)]
    assert main([*args, "--runs", str(tmp / "runs"), *TINY]) == 0
    return out


def test_train_generate_read_back_evaluate(checkpoint: Path, tmp_path: Path, capsys) -> None:
    from rdkit import Chem

    prov = json.loads((checkpoint / "provenance.json").read_text())
    assert prov["metrics"]["conformers"] == 15 and prov["metrics"]["molecules"] == 5
    out = tmp_path / "confs.sdf"
    args = ["generate", "--checkpoint", str(checkpoint), "--data", str(DATA / "mols.smi")]
    assert main([*args, "--num-confs", "3", "--out", str(out)]) == 0
    assert "wrote 6 conformers of 2 molecules" in capsys.readouterr().out
    records = list(Chem.SDMolSupplier(str(out), removeHs=False))
    assert [m.GetProp("_Name") for m in records] == ["ethanol"] * 3 + ["acetic_acid"] * 3
    for m, smiles in zip(records, ["CCO"] * 3 + ["CC(=O)O"] * 3, strict=True):
        want = Chem.AddHs(Chem.MolFromSmiles(smiles))  # same atoms, order and bonds
        assert [a.GetSymbol() for a in m.GetAtoms()] == [a.GetSymbol() for a in want.GetAtoms()]
        bonds = {(b.GetBeginAtomIdx(), b.GetEndAtomIdx(), b.GetBondType()) for b in m.GetBonds()}
        assert bonds == {
            (b.GetBeginAtomIdx(), b.GetEndAtomIdx(), b.GetBondType()) for b in want.GetBonds()
        }
        assert m.GetConformer().Is3D() and np.isfinite(m.GetConformer().GetPositions()).all()
    metrics = tmp_path / "m.json"
    args = ["evaluate", "--data", str(out), "--data", str(DATA / "ensembles.sdf")]
    assert main([*args, "--out", str(metrics)]) == 0
    m = json.loads(metrics.read_text())
    assert m["molecules"] == 2 and m["reference_only"] == 3
    assert 0 <= m["COV-R@0.5"] <= 1 and m["MAT-R"] > 0 and m["MAT-P"] > 0


def test_smiles_flag_and_from_pretrained_identical(checkpoint: Path, tmp_path: Path) -> None:
    from msgen.data import molecule

    a = MSGENModel.from_pretrained(checkpoint).msgen
    b = MSGENModel.from_pretrained(checkpoint).msgen
    g = [molecule("CCO")]
    assert np.array_equal(a.sample(g, 2, seed=5)[0], b.sample(g, 2, seed=5)[0])
    out = tmp_path / "one.sdf"
    args = ["generate", "--checkpoint", str(checkpoint), "--smiles", "CCO"]
    assert main([*args, "--num-confs", "2", "--out", str(out)]) == 0
    assert out.read_text().count("$$$$") == 2


def _error(capsys, args: list[str]) -> str:
    assert main(args) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("msgen: error:"), errors
    return errors[0]


def test_bad_files(checkpoint: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "c"
    train = ["train", "--out", str(out), "--runs", str(tmp_path / "runs"), *TINY]
    err = _error(capsys, [*train, "--data", str(DATA / "no_coords.sdf")])
    assert "ethanol_2d" in err and "no 3-D coordinates" in err
    err = _error(capsys, [*train, "--data", str(DATA / "implicit_h.sdf")])
    assert "ethanol_no_h" in err and "6 implicit hydrogens" in err
    err = _error(capsys, [*train, "--data", str(DATA / "empty.sdf")])
    assert "is empty" in err
    assert not out.exists()
    gen = ["generate", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "g.sdf")]
    err = _error(capsys, [*gen, "--data", str(DATA / "bad_smiles.smi")])
    assert "bad_smiles.smi, line 2" in err and "C1CC(" in err
    err = _error(capsys, [*gen, "--data", str(DATA / "no_column.csv")])
    assert "no column 'smiles'" in err
    assert not (tmp_path / "g.sdf").exists()


def test_another_packages_folder_is_refused(tmp_path: Path, capsys) -> None:
    from shared_core.hub import save_folder

    class Other:
        pass

    folder = tmp_path / "other"
    save_folder(
        folder, lambda tmp, prov: None, owner=Other, config={"a": 1}, distribution="shared-core"
    )
    out = tmp_path / "g.sdf"
    err = _error(
        capsys, ["generate", "--checkpoint", str(folder), "--smiles", "CCO", "--out", str(out)]
    )
    assert "written by package 'shared-core'" in err
    assert not out.exists()


def test_loss_plot_label_matches_the_network_loss() -> None:
    """The reproduce plot's label is the plotted loss's (0.4.2 put the EGNN's "3.0 = predicting
    zero" over GeoDiff-loss curves at 300-11,000 on a linear axis)."""
    from msgen.experiments.reproduce import loss_plot_labels

    ylabel, title, logy = loss_plot_labels("geodiff")
    assert "GeoDiff loss" in ylabel and "3.0" not in ylabel + title and logy
    ylabel, _, logy = loss_plot_labels("egnn")
    assert "3.0 = predicting zero" in ylabel and not logy
    with pytest.raises(ValueError, match="network: expected one of"):
        loss_plot_labels("schnet")


def test_skip_invalid_counts_the_molecule_without_coordinates(tmp_path: Path, capsys) -> None:
    mixed = tmp_path / "mixed.sdf"
    mixed.write_text((DATA / "ensembles.sdf").read_text() + (DATA / "no_coords.sdf").read_text())
    out = tmp_path / "c"
    args = ["train", "--data", str(mixed), "--out", str(out), "--skip-invalid"]
    assert main([*args, "--runs", str(tmp_path / "runs"), *TINY]) == 0
    assert "15 conformers of 5 molecules (1 skipped)" in capsys.readouterr().out
    assert json.loads((out / "provenance.json").read_text())["metrics"]["skipped"] == 1
