import dataclasses
import math
from pathlib import Path

import pytest
import torch
from vadd.cli import main
from vadd.experiments.digits import pixel_statistics_error
from vadd.experiments.reproduce import ESTIMATE_S
from vadd.experiments.scales import SCALES, ReproduceConfig, Toy2DConfig
from vadd.experiments.toy2d import evaluate, train_pair
from vadd.likelihood import exact_sample_distribution

from shared_core.testing import (
    assert_bad_scale_is_a_usage_error,
    assert_help_states_the_committed_costs,
    assert_import_is_light,
    run_micro,
)


def test_bad_scale_is_a_usage_error(capsys):
    assert_bad_scale_is_a_usage_error(main, capsys)


def test_scales():
    assert list(SCALES) == ["micro", "tiny", "small", "paper"]
    assert all(isinstance(c, ReproduceConfig) for c in SCALES.values())


def test_costs_are_the_committed_runs():
    """ESTIMATE_S (the ETA's figures) is the committed tiny and small runs' CPU time, and
    `reproduce --help` prints it."""
    assert_help_states_the_committed_costs(
        main,
        ESTIMATE_S,
        Path(__file__).parent,
        [
            f"tiny: ~{ESTIMATE_S['tiny']:.0f} CPU s",
            f"small: ~{ESTIMATE_S['small'] / 60:.0f} CPU minutes",
        ],
        required=("tiny", "small"),
    )


def test_help_does_not_import_torch():
    assert_import_is_light("vadd.cli")


def test_micro_reproduce_end_to_end(tmp_path):
    import json

    run = run_micro(main, "vadd", tmp_path)
    tables = json.loads((run / "metrics.json").read_text())["tables"]
    assert len(tables["results"]) == 4 and len(tables["digits (binarised 8x8)"]) == 4
    assert len(tables["text (char-level Shakespeare)"]) == 4
    assert (run / "text_gen_ppl.png").stat().st_size > 0


def test_toy_experiment_rows_and_one_step_mdm_factorises():
    cfg = dataclasses.replace(
        Toy2DConfig(), bins=8, cells=2, d_model=16, n_layers=1, train_rows=512, train_steps=5,
        batch_size=64, steps=(1, 2), n_latent=8, n_scatter=16,
    )  # fmt: skip
    P, models = train_pair(cfg, seed=0, device="cpu", show_progress=False)
    rows, samples, H = evaluate(P, models, cfg, seed=0)
    assert [(r["model"], r["steps"]) for r in rows] == [
        ("MDM", 1), ("MDM", 2), ("VADD", 1), ("VADD", 2)
    ]  # fmt: skip
    assert all(0.0 <= r["tv"] <= 1.0 and 0.0 <= r["mass_on_support"] <= 1.0 + 1e-6 for r in rows)
    assert samples[("VADD", 2)].shape == (16, 2)
    assert abs(H - math.log(32)) < 1e-5  # 8x8 board, half the cells on
    # one MDM step predicts the two tokens independently: the output is a product distribution
    Q = exact_sample_distribution(models["MDM"], 1).double()
    torch.testing.assert_close(Q, torch.outer(Q.sum(1), Q.sum(0)), atol=1e-6, rtol=0)


def test_pixel_statistics_error_planted():
    g = torch.Generator().manual_seed(0)
    a = (torch.rand(4000, 1, generator=g) < 0.5).long().repeat(1, 4)  # 4 identical pixels
    b = (torch.rand(4000, 4, generator=g) < 0.5).long()  # same means, independent pixels
    mean_err, corr_err = pixel_statistics_error(b, a)
    assert mean_err < 0.02
    assert corr_err == pytest.approx(12 / 16, abs=0.03)  # off-diagonal correlations 1 vs 0
    assert pixel_statistics_error(a, a) == (0.0, 0.0)
    with pytest.raises(ValueError, match="samples"):
        pixel_statistics_error(a[:, :3], a)
