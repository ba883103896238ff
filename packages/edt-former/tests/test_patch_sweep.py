"""The README's (Delta, gamma) sweep: `edt_former.experiments.patch_sweep`."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from edt_former.experiments import patch_sweep
from edt_former.experiments.qa import SCALES


def test_mean_patches_counts_both_rules_by_hand() -> None:
    # molecule 0: peaks at atoms 1 and 3 (prominence 1.0 and 0.5); molecule 1: flat, 3 atoms
    e = torch.tensor([[0.0, 2.0, 1.0, 1.5, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0]])
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    out = patch_sweep.mean_patches(e, mask, deltas=(1, 3), gammas=(0.0, 0.6))
    got = {(r["delta"], r["gamma"]): r["mean_patches"] for r in out["peak"]}
    # both peaks kept: 3 patches; NMS (gap 3) drops atom 3; gamma 0.6 drops it too; flat: 1
    assert got == {(1, 0.0): 2.0, (1, 0.6): 1.5, (3, 0.0): 1.5, (3, 0.6): 1.5}
    # percentile rule: molecule 0's threshold 1.5 -> one rising edge (atom 1): 2 groups; flat: 1
    assert out["percentile"] == pytest.approx(1.5)


def test_main_writes_the_sweep(tmp_path, monkeypatch, capsys) -> None:
    micro = replace(SCALES["micro"], n_entropy_smiles=60, entropy_steps=2)
    monkeypatch.setitem(patch_sweep.SCALES, "tiny", micro)
    path = tmp_path / "sweep.json"
    assert patch_sweep.main(["--json", str(path), "--molecules", "12"]) == 0
    out = json.loads(path.read_text())
    assert out["n_molecules"] == 12 and out["entropy_steps"] == 2
    assert len(out["peak"]) == len(patch_sweep.DELTAS) * len(patch_sweep.GAMMAS)
    assert all(1.0 <= r["mean_patches"] <= out["mean_atoms"] for r in out["peak"])
    # more suppression never adds patches: counts fall along each row and down each column
    table = {(r["delta"], r["gamma"]): r["mean_patches"] for r in out["peak"]}
    for d in patch_sweep.DELTAS:
        row = [table[(d, g)] for g in patch_sweep.GAMMAS]
        assert row == sorted(row, reverse=True), row
    assert "percentile rule" in capsys.readouterr().out


def test_sweep_refuses_a_bad_count() -> None:
    with pytest.raises(ValueError, match="n_molecules"):
        patch_sweep.sweep(SCALES["micro"], 0)
