"""The verbs on a user's SMILES (train -> sample -> evaluate), save/load and bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from meld_diffusion.cli import main
from meld_diffusion.data import atom_label, decode, encode, parse_label, valence
from meld_diffusion.generator import GeneratorConfig, MELDGenerator, generator_config
from meld_diffusion.model import GraphTransformerConfig
from meld_diffusion.rates import MELDConfig

from shared_core import mol_metrics as mm
from shared_core.data import mol_graph

DATA = Path(__file__).parent / "data"
TINY = ["--set", "steps=6", "--set", "batch=8", "--set", "warmup=1", "--set", "sample_steps=4"]
TINY += ["--set", "denoiser.d_node=16", "--set", "denoiser.d_edge=8"]
TINY += ["--set", "denoiser.n_layers=1", "--set", "meld.dim=8"]


def _train(tmp_path: Path, *extra: str, data: Path = DATA / "mols.smi") -> Path:
    out = tmp_path / "ckpt"
    args = ["train", "--data", str(data), "--out", str(out), "--runs", str(tmp_path / "runs")]
    assert main([*args, *TINY, *extra]) == 0
    return out


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _train(tmp_path_factory.mktemp("meld"))


def test_labels_and_valences() -> None:
    assert atom_label(7, 1) == "N+" and atom_label(8, -1) == "O-" and atom_label(17, 0) == "Cl"
    assert parse_label("N+") == (7, 1) and parse_label("C2-") == (6, -2)
    assert [valence(t) for t in ("C", "N+", "O-", "C-", "S", "Br")] == [4, 4, 1, 3, 2, 1]
    with pytest.raises(ValueError, match="Z=11 is not supported"):
        atom_label(11, 0)
    with pytest.raises(ValueError, match="atom_types: 'Xx'"):
        parse_label("Xx")


def test_charged_vocabulary_round_trips() -> None:
    """Every molecule of the committed file comes back from its rows with the same SMILES."""
    smiles = [line.split()[0] for line in (DATA / "mols.smi").read_text().splitlines()]
    graphs = [mol_graph(s, kekulize=True) for s in smiles]
    from meld_diffusion.verbs import vocabulary

    types = vocabulary(graphs)
    assert types[:3] == ("C", "N", "O") and {"N+", "O-", "S", "P", "I"} <= set(types)
    n = max(g.num_atoms for g in graphs)
    rows, counts = encode(graphs, n, types)
    assert mm.canonical_smiles(decode(rows, counts, n, types)) == mm.canonical_smiles(smiles)


def test_train_sample_evaluate(checkpoint: Path, tmp_path: Path, capsys) -> None:
    cfg = json.loads((checkpoint / "config.json").read_text())
    assert cfg["arm"] == "meld" and cfg["denoiser"]["max_atoms"] == 10
    assert "N+" in cfg["atom_types"] and abs(sum(cfg["count_probs"]) - 1) < 1e-9
    out = tmp_path / "samples.smi"
    assert main(["sample", "--checkpoint", str(checkpoint), "-n", "30", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 30  # invalid graphs are empty lines, never dropped
    printed = capsys.readouterr().out
    invalid = sum(not line for line in lines)
    assert f"{30 - invalid} valid, {invalid} invalid" in printed
    for line in lines:
        if line:
            assert mm.canonical_smiles([line]) == [line]  # canonical
    metrics = tmp_path / "metrics.json"
    args = ["evaluate", "--data", str(out), "--data", str(DATA / "mols.smi")]
    assert main([*args, "--out", str(metrics)]) == 0
    m = json.loads(metrics.read_text())
    assert m["samples"] == 30 and m["reference"] == 40
    assert m["validity"] == pytest.approx((30 - invalid) / 30)
    assert {"uniqueness", "novelty", "nspdk", "scaffold"} <= set(m)


def test_from_pretrained_gives_identical_samples(checkpoint: Path) -> None:
    a = MELDGenerator.from_pretrained(checkpoint)
    b = MELDGenerator.from_pretrained(checkpoint)
    ra, ca = a.sample_rows(12, seed=3)
    rb, cb = b.sample_rows(12, seed=3)
    assert np.array_equal(ra, rb) and np.array_equal(ca, cb)
    for (k, v), w in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(v, w), k


@pytest.mark.parametrize("arm", ["vanilla", "class"])
def test_baseline_arms_save_and_sample(arm: str, tmp_path: Path) -> None:
    folder = _train(tmp_path, "--arm", arm, data=DATA / "mols.csv")
    model = MELDGenerator.from_pretrained(folder)
    assert model.config.arm == arm and model.config.max_atoms == 9
    assert len(model.sample_smiles(5, seed=0)) == 5


def test_save_load_in_memory(tmp_path: Path) -> None:
    """save_pretrained -> from_pretrained keeps the weights, config and sampled rows."""
    cfg = generator_config(
        "meld", ("C", "N", "O", "S", "N+", "O-"), np.array([2, 3, 3, 5]), max_atoms=5,
        denoiser=GraphTransformerConfig(d_node=16, d_edge=8, n_layers=1),
        meld=MELDConfig(dim=8), sample_steps=3,
    )  # fmt: skip
    torch.manual_seed(0)
    model = MELDGenerator(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(tmp_path / "m")
    back = MELDGenerator.from_pretrained(tmp_path / "m")
    assert back.config == cfg
    assert np.array_equal(model.sample_rows(8, seed=1)[0], back.sample_rows(8, seed=1)[0])


def test_bad_config_is_refused() -> None:
    with pytest.raises(ValueError, match="denoiser.atom_types: expected 3"):
        GeneratorConfig(atom_types=("C", "N", "O"))
    with pytest.raises(ValueError, match="arm: expected one of"):
        GeneratorConfig(arm="digress")
    with pytest.raises(ValueError, match="denoiser.d_pos: expected 0"):
        GeneratorConfig(arm="vanilla")  # the default denoiser takes MELD's embeddings
    assert GeneratorConfig(count_probs=(0, 0.5, 0.5, *[0] * 7)).denoiser.d_pos == 64


def _error(capsys, args: list[str]) -> str:
    assert main(args) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("meld-diffusion: error:"), errors
    return errors[0]


def test_bad_files(tmp_path: Path, capsys) -> None:
    out = tmp_path / "c"
    base = ["train", "--out", str(out), "--runs", str(tmp_path / "runs"), *TINY]
    err = _error(capsys, [*base, "--data", str(DATA / "bad_smiles.smi")])
    assert "bad_smiles.smi, line 2" in err and "C1CC(" in err
    err = _error(capsys, [*base, "--data", str(DATA / "bad_element.smi")])
    assert "bad_element.smi, line 2 (molecule 2" in err and "[Na+].[Cl-]" in err
    assert "not supported" in err
    err = _error(capsys, [*base, "--data", str(DATA / "no_column.csv")])
    assert "no column 'smiles'" in err
    err = _error(capsys, [*base, "--data", str(DATA / "empty.smi")])
    assert "is empty" in err
    err = _error(capsys, [*base, "--data", str(DATA / "mols.smi"), "--max-atoms", "4"])
    assert "heavy atoms > --max-atoms 4" in err
    assert not out.exists()  # nothing half-written


def test_skip_invalid_counts(tmp_path: Path, capsys) -> None:
    folder = _train(tmp_path, "--skip-invalid", data=DATA / "bad_element.smi")
    printed = capsys.readouterr().out
    assert "2 molecules (2 skipped)" in printed
    assert json.loads((folder / "config.json").read_text())["atom_types"] == ["C", "O"]


def test_another_packages_folder_is_refused(tmp_path: Path, capsys) -> None:
    from shared_core.hub import save_folder

    class Other:
        pass

    folder = tmp_path / "other"
    save_folder(
        folder, lambda tmp, prov: None, owner=Other, config={"a": 1}, distribution="shared-core"
    )
    err = _error(
        capsys, ["sample", "--checkpoint", str(folder), "-n", "2", "--out", str(tmp_path / "s")]
    )
    assert "written by package 'shared-core'" in err
    assert not (tmp_path / "s").exists()
