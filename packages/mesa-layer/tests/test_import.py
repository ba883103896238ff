"""``import mesa_layer`` pulls in neither torch nor JAX."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest


def test_top_level_import_is_framework_free():
    code = (
        "import sys, mesa_layer, mesa_layer.reference, mesa_layer.cli;"
        "bad = [m for m in ('torch', 'jax', 'flax') if m in sys.modules];"
        "print(mesa_layer.__version__); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.strip() == importlib.metadata.version("mesa-layer")


def test_main_api_from_the_top_level():
    pytest.importorskip("torch")
    import mesa_layer
    from mesa_layer.torch import MesaLayer, mesa_chunk

    assert mesa_layer.MesaLayer is MesaLayer and mesa_layer.mesa_chunk is mesa_chunk
    assert "MesaLayer" in dir(mesa_layer)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = mesa_layer.nope
