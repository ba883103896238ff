"""`free-energy-mixer train` / `sample` on a text file (shared_core.textlm through the package CLI)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from free_energy_mixer.cli import main  # noqa: E402
from free_energy_mixer.hf import FEMForCausalLM  # noqa: E402

from shared_core.testing import assert_text_lm_verbs  # noqa: E402

TINY = [
    "--set", "model.hidden_size=16", "--set", "model.num_heads=2",
    "--set", "model.tdc_hidden=4", "--set", "model.prior=gla",
]  # fmt: skip


def test_train_sample_from_pretrained_and_bad_input(tmp_path, capsys):
    assert_text_lm_verbs(
        main,
        tmp_path,
        capsys,
        model_class=FEMForCausalLM,
        model_type="free_energy_mixer",
        settings=TINY,
        bad_setting="model.prior=ssm",
        bad_error="mixer: expected one of",
    )
