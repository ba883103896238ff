"""`mesa-layer train` / `sample` on a text file (shared_core.textlm through the package CLI)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mesa_layer.cli import main  # noqa: E402
from mesa_layer.hf import MesaNetForCausalLM  # noqa: E402

from shared_core.testing import assert_text_lm_verbs  # noqa: E402

TINY = [
    "--set", "model.hidden_size=16", "--set", "model.num_heads=2",
    "--set", "model.intermediate_size=32", "--set", "model.chunk_size=8",
]  # fmt: skip


def test_train_sample_from_pretrained_and_bad_input(tmp_path, capsys):
    assert_text_lm_verbs(
        main,
        tmp_path,
        capsys,
        model_class=MesaNetForCausalLM,
        model_type="mesa_layer_mesanet",
        settings=TINY,
        bad_setting="model.num_heads=3",
        bad_error="num_heads: expected a divisor of hidden_size=64",
    )
